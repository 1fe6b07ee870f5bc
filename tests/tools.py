"""Tools from outside Python that some tests need (node, npm).

On a user's machine a missing tool skips the test with the reason printed; under ``CI=true``
the same absence fails it, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(tool: str, why: str) -> str:
    """The tool's path; a skip (a failure under CI=true) naming the tool and why it is needed."""
    path = shutil.which(tool)
    if path is None:
        reason = f"{tool!r} is not on PATH: {why}"
        if in_ci():
            pytest.fail(reason + " (CI=true: a missing tool fails instead of skipping)", pytrace=False)
        pytest.skip(reason)
    return path

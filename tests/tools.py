"""Tools from outside Python that some tests need (node, npm).

On a user's machine a missing tool skips the test with the reason printed; under ``CI=true``
the same absence fails it, so CI can never pass by skipping.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip, saying why; under CI=true fail instead (CI has everything the tests need)."""
    if in_ci():
        pytest.fail(reason + " (CI=true: a missing tool fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


def require(tool: str, why: str) -> str:
    """The tool's path; a skip (a failure under CI=true) naming the tool and why it is needed."""
    path = shutil.which(tool)
    if path is None:
        unavailable(f"{tool!r} is not on PATH: {why}")
    return path


#: the Node packages the conformance harnesses run (tests/conformance, installed from its lock file)
CONFORMANCE = Path(__file__).resolve().parent / "conformance"


def conformance_node(client: str) -> str:
    """Node.js with tests/conformance/node_modules in place (``npm ci`` when a package is
    missing); ``client`` names what the test runs there, for the skip's reason."""
    node = require("node", f"the conformance test runs {client} on Node.js")
    npm = require("npm", f"the conformance test installs {client} with npm")
    packages = json.loads((CONFORMANCE / "package.json").read_text())["dependencies"]
    # one install at a time: the xdist workers of a fresh checkout reach here together, and two
    # ``npm ci`` in one directory break each other (ENOTDIR); the second finds the first's
    with open(CONFORMANCE / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((CONFORMANCE / "node_modules" / name / "package.json").is_file() for name in packages):
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=CONFORMANCE, capture_output=True, text=True, timeout=300
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci failed in {CONFORMANCE}:\n{done.stdout}\n{done.stderr}", pytrace=False)
    return node

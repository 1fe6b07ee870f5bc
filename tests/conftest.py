"""Fixtures: one test per golden scenario."""

from __future__ import annotations

import pytest

from .corpus import SCENARIOS


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    return request.param


def pytest_configure(config: pytest.Config) -> None:
    """``HYPOTHESIS_PROFILE=deep`` runs the property tests with many more examples. Under
    ``CI=true`` the examples are derandomized: CI judges a change, the same examples every run,
    while local runs keep exploring new ones (a failure found so is a bug to fix, see the notes)."""
    from hypothesis import settings

    settings.register_profile("deep", max_examples=1500, deadline=None)
    settings.register_profile("ci", derandomize=True, database=None)
    import os

    if os.environ.get("HYPOTHESIS_PROFILE") == "deep":
        settings.load_profile("deep")
    elif os.environ.get("CI") == "true":
        settings.load_profile("ci")

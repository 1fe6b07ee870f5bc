"""Fixtures: one test per golden scenario."""

from __future__ import annotations

import pytest

from .corpus import SCENARIOS


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    return request.param


def pytest_configure(config: pytest.Config) -> None:
    """``HYPOTHESIS_PROFILE=deep`` runs the property tests with many more examples."""
    from hypothesis import settings

    settings.register_profile("deep", max_examples=1500, deadline=None)
    import os

    if os.environ.get("HYPOTHESIS_PROFILE") == "deep":
        settings.load_profile("deep")

"""Fixtures: one test per golden scenario."""

from __future__ import annotations

import pytest

from .corpus import SCENARIOS


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    return request.param

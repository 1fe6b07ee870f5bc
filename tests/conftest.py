"""Fixtures: one test per golden scenario; the grouping that lets the suite run on xdist workers."""

from __future__ import annotations

import pytest

from .browser_support import browser  # noqa: F401 - a fixture for every test module
from .corpus import SCENARIOS
from .redis_support import redis_server  # noqa: F401 - a fixture for every test module


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    return request.param


def pytest_configure(config: pytest.Config) -> None:
    """``HYPOTHESIS_PROFILE=deep`` runs the property tests with many more examples. Under
    ``CI=true`` the examples are derandomized: CI judges a change, the same examples every run,
    while local runs keep exploring new ones (a failure found so is a bug to fix, see the notes)."""
    from hypothesis import core, settings
    from hypothesis.database import InMemoryExampleDatabase

    settings.register_profile("deep", max_examples=1500, deadline=None)
    # Derandomized by a fixed seed (what ``--hypothesis-seed 0`` sets), not by ``derandomize``:
    # that implies ``database=None``, and hypothesis (6.155 to 6.170 at least) then re-reads the
    # database through a settings chain that grows with each parametrized case, overflowing the
    # stack after ~950 cases of one test. An in-memory database keeps nothing between runs.
    settings.register_profile("ci", database=InMemoryExampleDatabase())
    import os

    if os.environ.get("HYPOTHESIS_PROFILE") == "deep":
        settings.load_profile("deep")
    elif os.environ.get("CI") == "true":
        settings.load_profile("ci")
        core.global_force_seed = 0


#: fixtures that start an outside process: the tests using one run on one worker, in turn
#: (``--dist loadgroup``), so two of them never race for a free port or the machine's memory
SHARED_TOOLS = ("redis_server", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group every test that starts Redis or Chromium, in any test file (no file needs a mark)."""
    for item in items:
        used = [name for name in SHARED_TOOLS if name in getattr(item, "fixturenames", ())]
        if used:
            item.add_marker(pytest.mark.xdist_group(used[0]))

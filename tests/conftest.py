"""Fixtures: one test per golden scenario; the grouping that lets the suite run on xdist workers."""

from __future__ import annotations

import os

import pytest

from .browser_support import browser  # noqa: F401 - a fixture for every test module
from .corpus import SCENARIOS
from .redis_support import redis_server  # noqa: F401 - a fixture for every test module


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    return request.param


def _compile_the_package(config: pytest.Config) -> None:
    """Byte-compile streambridge once, before the workers start: the many ``python -m
    streambridge`` subprocesses of the CLI tests then load it compiled, even where
    ``PYTHONDONTWRITEBYTECODE`` is set (CI's environment sets it, so each subprocess compiled
    every module it imported again). A read-only install is left as it is."""
    if hasattr(config, "workerinput"):
        return  # (the controller compiled it)
    import compileall
    from pathlib import Path

    import streambridge

    for root in streambridge.__path__:
        if os.access(root, os.W_OK):
            compileall.compile_dir(Path(root), quiet=2)


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
    _compile_the_package(config)
    if os.environ.get("HYPOTHESIS_PROFILE") == "deep":
        settings.load_profile("deep")
    elif os.environ.get("CI") == "true":
        settings.load_profile("ci")
        core.global_force_seed = 0


#: fixtures that start an outside process: the tests using one run on one worker, in turn
#: (``--dist loadgroup``), so two of them never race for a free port or the machine's memory
SHARED_TOOLS = ("redis_server", "browser")


def _group(item: pytest.Item) -> str | None:
    """Where a test must run with others: with the tests that start the same outside tool, or
    with the tests sharing a module- or session-scoped fixture of this suite (a Node.js batch
    run, a server), which every worker would otherwise build again for itself."""
    names = getattr(item, "fixturenames", ())
    for tool in SHARED_TOOLS:
        if tool in names:
            return tool
    info = getattr(item, "_fixtureinfo", None)
    for name in names:
        defs = info.name2fixturedefs.get(name) if info is not None else None
        fixture = defs[-1] if defs else None
        if (
            fixture is not None
            and fixture.scope in ("module", "session")
            and fixture.func.__module__.startswith("tests")
        ):
            return fixture.func.__module__
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group tests on xdist workers by what they share, in any test file (no file needs a mark)."""
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))

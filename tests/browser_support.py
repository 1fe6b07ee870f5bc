"""A real headless Chromium for the inspector's page tests, driven by Playwright's Python API.

Playwright drives the system's Chromium (Debian's ``chromium``, which ``.ci/run`` installs; or
the browser named by ``STREAMBRIDGE_CHROMIUM``), so no browser is downloaded. A missing browser
skips its tests with the reason printed, and fails them under ``CI=true``. Screenshots go to
``test-artifacts/inspector/`` (or ``$STREAMBRIDGE_ARTIFACTS/inspector/``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from .tools import in_ci

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("STREAMBRIDGE_ARTIFACTS", ROOT / "test-artifacts")) / "inspector"
#: flags for a sandboxed, offline machine: no GPU, no calls home (refused on a closed network)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing(reason: str) -> None:
    if in_ci():
        pytest.fail(reason + " (CI=true: a missing tool fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str:
    """The Chromium to drive; a skip (a failure under CI=true) naming what is missing."""
    named = os.environ.get("STREAMBRIDGE_CHROMIUM")
    found = named or next(
        (path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))), None
    )
    if not found or not os.access(found, os.X_OK):
        _missing(
            "no Chromium found (chromium, chromium-browser, google-chrome or $STREAMBRIDGE_CHROMIUM): the inspector's page tests run it headless"
        )
    return str(found)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """A headless Chromium (Playwright's async API, on the test's event loop)."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _missing("the Python package 'playwright' is not installed (pip install -e '.[test]'): it drives Chromium")
    executable = chromium_path()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


async def screenshot(page: Any, name: str) -> Path:
    """Save a screenshot as a test artifact; its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=False)
    return path

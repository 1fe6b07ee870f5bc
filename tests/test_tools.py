"""The rule for outside tools: skipped with the reason on a user's machine, failed under CI=true."""

from __future__ import annotations

import pytest

from .tools import require

MISSING = "streambridge-no-such-tool"


def test_a_missing_tool_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{MISSING}.*is not on PATH: needed here"):
        require(MISSING, "needed here")


def test_a_missing_tool_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require(MISSING, "needed here")


def test_a_present_tool_gives_its_path() -> None:
    assert require("python3", "always here").endswith("python3")

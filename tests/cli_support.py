"""Helpers the CLI tests share (no tests here): running the app and checking user errors."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner, Result

from streambridge import Translator
from streambridge.cli import app

from .corpus import CAPTURES, GOLDEN

__all__ = ["CAPTURES", "GOLDEN", "copy_golden", "invoke", "translated", "user_error"]

_runner = CliRunner()


def invoke(*args: object, input: bytes | str | None = None) -> Result:
    return _runner.invoke(app, [str(a) for a in args], input=input)


def user_error(result: Result, *fragments: str) -> str:
    """A user error: exit 2 and exactly one ``streambridge: error:`` line on stderr naming what is wrong."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("streambridge: error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def translated(source: str, target: str, data: bytes, **options: object) -> bytes:
    """What the core makes of ``data`` (the CLI must add nothing of its own)."""
    translator = Translator(source, target, **options)  # type: ignore[arg-type]
    return translator.feed(data) + translator.close()


def copy_golden(tmp_path: Path, *scenarios: str) -> Path:
    root = tmp_path / "in"
    for scenario in scenarios:
        shutil.copytree(GOLDEN / scenario, root / scenario)
    return root

"""``serve --help`` fits a terminal (issue 29, defect 7): at 80 columns no cell is cut off, the
options are grouped in panels, and the whole help is at most 90 lines, with every option listed."""

from __future__ import annotations

import os
import subprocess
import sys

import typer

from streambridge.cli import serve as serve_module

from .corpus import ROOT


def serve_help(columns: int) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns), "TERM": "dumb"}
    env.pop("NO_COLOR", None)
    run = subprocess.run(
        [sys.executable, "-m", "streambridge", "serve", "--help"], env=env, capture_output=True, text=True, check=True
    )
    return run.stdout


def options_of_serve() -> list[str]:
    app = typer.Typer()
    app.command("serve")(serve_module.serve_command)
    app.command("noop")(lambda: None)
    command = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    return [name for param in command.params for name in (*param.opts, *param.secondary_opts)]


def test_serve_help_fits_80_columns_in_panels() -> None:
    out = serve_help(80)
    lines = out.splitlines()
    assert "…" not in out  # no cell cut off
    assert len(lines) <= 90, len(lines)
    assert max(len(line) for line in lines) <= 80
    for panel in ("Options", "Server", "Streams and runs", "Security", "Inspector"):
        assert f"╭─ {panel} ─" in out, panel


def test_serve_help_lists_every_option() -> None:
    out = serve_help(80)
    listed = set(out.replace("│", " ").split())
    missing = [name for name in options_of_serve() if name not in listed]
    assert not missing and "--no-forward-auth" in options_of_serve()

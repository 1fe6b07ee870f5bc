"""Ctrl-C (issue 29, defect 3): at any moment, even while the application is being imported,
the command line exits 130 with at most one short line on stderr, never a traceback.

The moment is made deterministic with a FIFO: ``STREAMBRIDGE_TEST_PAUSE`` makes the CLI wait on
it at the end of importing its application module; the test's open for writing returns only once
the CLI has opened it for reading, i.e. is waiting there. Then the test sends SIGINT."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import BinaryIO

import pytest

from .corpus import ROOT

TIMEOUT = 60


def _open_for_writing(fifo: Path, opened: queue.Queue[BinaryIO]) -> None:
    opened.put(open(fifo, "wb"))  # noqa: SIM115 (closed by the test)


def interrupted_while_importing(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``streambridge *args`` sent SIGINT while it is importing its application."""
    fifo = tmp_path / "pause"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAMBRIDGE_TEST_PAUSE": str(fifo)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streambridge", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    opened: queue.Queue[BinaryIO] = queue.Queue()
    threading.Thread(target=_open_for_writing, args=(fifo, opened), daemon=True).start()
    try:
        writer = opened.get(timeout=TIMEOUT)  # the CLI is waiting on the FIFO now
    except queue.Empty:
        proc.kill()
        pytest.fail(f"the CLI never reached the pause: {proc.communicate()}")
    proc.send_signal(signal.SIGINT)
    writer.close()
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("args", [("--help",), ("protocols",), ("convert", "-", "--to", "oma")], ids=" ".join)
def test_ctrl_c_while_importing_exits_130_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = interrupted_while_importing(tmp_path, *args)
    assert result.returncode == 130, result
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr
    assert len(result.stderr.splitlines()) <= 1, result.stderr
    assert result.stdout == ""


def test_without_the_pause_the_cli_runs_as_ever(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STREAMBRIDGE_TEST_PAUSE", None)
    result = subprocess.run(
        [sys.executable, "-m", "streambridge", "--version"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.startswith("streambridge ")

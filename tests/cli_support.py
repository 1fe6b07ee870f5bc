"""Helpers the CLI tests share (no tests here): running the app and checking user errors."""

from __future__ import annotations

import fcntl
import os
import pty
import queue
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner, Result

from streambridge import Translator
from streambridge.cli import app

from .corpus import CAPTURES, GOLDEN, ROOT

__all__ = [
    "CAPTURES",
    "GOLDEN",
    "Terminal",
    "copy_golden",
    "invoke",
    "on_terminal",
    "translated",
    "user_error",
    "without_reader",
]

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


@dataclass
class Terminal:
    """What a run on a pseudo-terminal left: its exit code, what the terminal showed (stderr,
    and stdout or stdin when they were the terminal too) and what went to a piped stdout."""

    returncode: int
    screen: bytes
    stdout: bytes

    @property
    def text(self) -> str:
        """The screen as text, with the terminal's CRLF line ends back to LF."""
        return self.screen.decode("utf-8", "replace").replace("\r\n", "\n")


#: what a progress bar draws (rich's bar) and a cursor control sequence: neither is data
BAR = "\u2501"
ESCAPE = "\x1b["


def on_terminal(*args: object, cwd: Path, stdout: bool = True, stdin: bool = False) -> Terminal:
    """``python -m streambridge ARGS`` with stderr on a real pseudo-terminal, as a person runs
    it: stdout on the same terminal (or a pipe), stdin on it (or /dev/null). No isatty mocks."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    quiet = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES", "CI")
    env = {k: v for k, v in os.environ.items() if k not in quiet} | {"PYTHONPATH": str(ROOT), "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streambridge", *map(str, args)],
        cwd=cwd,
        env=env,
        stdin=slave if stdin else subprocess.DEVNULL,
        stdout=slave if stdout else subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    try:
        screen, piped = _drain(master, proc.stdout.fileno() if proc.stdout else None)
        return Terminal(proc.wait(60), screen, piped)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def _drain(master: int, piped: int | None) -> tuple[bytes, bytes]:
    """Everything the terminal and the pipe receive until the process has closed both (a pty
    reads EIO once no one holds its other end)."""
    received = {master: b"", **({piped: b""} if piped is not None else {})}
    open_fds = list(received)
    while open_fds:
        ready, _, _ = select.select(open_fds, [], [], 60)
        assert ready, f"no output for 60 s: {received}"
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the terminal is closed
                data = b""
            if data:
                received[fd] += data
            else:
                open_fds.remove(fd)
    return received[master], received.get(piped, b"") if piped is not None else b""


def without_reader(*args: object, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The CLI writing into a pipe nobody reads any more (``… | head`` after head has exited)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "streambridge", *map(str, args)],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)


#: seconds a subprocess has for each step
TIMEOUT = 60


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


class Proc:
    """A ``python -m streambridge`` process whose stderr lines are read as they come."""

    def __init__(self, *args: object, environ: dict[str, str] | None = None) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "streambridge", *map(str, args)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**env(), **(environ or {})},
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (bounded by TIMEOUT per line)."""
        while True:
            line = self._queue.get(timeout=TIMEOUT)
            assert line is not None, f"exited without {pattern!r}: {self.lines}"
            self.lines.append(line)
            if found := re.search(pattern, line):
                return found

    def finish(self) -> int:
        code = self.popen.wait(TIMEOUT)
        while (line := self._queue.get(timeout=TIMEOUT)) is not None:
            self.lines.append(line)
        return code

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        if self.popen.stderr is not None:
            self.popen.stderr.close()

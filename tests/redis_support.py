"""A real ``redis-server`` for the run-log tests: started on a free port in a temporary
directory, nothing persisted (so a restart loses everything, as a crashed Redis may).

A missing binary skips its tests with the reason printed, and fails them under ``CI=true``
(``.ci/run`` installs Debian's ``redis-server``)."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from .tools import require

__all__ = ["RedisServer", "free_port", "redis_server"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it and return once it accepts connections (it says so on stdout)."""
        self.proc = subprocess.Popen(
            [
                *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)),
                *("--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        seen = []
        for line in self.proc.stdout:
            seen.append(line)
            if "Ready to accept connections" in line:
                threading.Thread(target=_drain, args=(self.proc.stdout,), daemon=True).start()
                return
        raise AssertionError("redis-server did not start:\n" + "".join(seen))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def restart(self) -> None:
        """Killed and started again on the same port, empty."""
        self.stop()
        self.start()


def _drain(stream: IO[str]) -> None:
    """Keep reading its log, so a full pipe never blocks it."""
    for _ in stream:
        pass


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    binary = require("redis-server", "the run-log tests run a real Redis (Debian package redis-server)")
    server = RedisServer(binary, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()

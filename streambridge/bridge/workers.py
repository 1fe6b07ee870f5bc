"""``serve --workers N``: N processes serving one port, so one machine's cores are used.

Each worker is a whole proxy (:func:`server.run_app`) whose listening socket sets
``SO_REUSEPORT``: the kernel spreads new connections over the workers, and they share the Redis
run log, so a run started on one is resumed, cancelled and its conversation continued on any
(config.py refuses more than one worker without it). The parent only supervises. It starts the
first worker and waits until it listens (a port that cannot be bound is then one error, not N),
then the others; it forwards SIGTERM / SIGINT to them once (the workers have their own process
group, so a terminal's Ctrl-C reaches the parent alone), and each drains as a single proxy does.
A worker that exits on its own stops the rest: the server ends as one, with that worker's exit
code, for the supervisor above it (systemd, the container runtime) to restart it whole. A worker
whose parent is gone (killed) drains and exits too: it sees the end of a pipe only the parent
holds open.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess

from .config import Config
from .logging import log_event, setup_logging

__all__ = ["Worker", "run_workers"]


@dataclass(frozen=True)
class Worker:
    """What a worker's proxy needs to know of its parent (see :func:`server.run_app`)."""

    #: tells the parent this worker listens (called once its socket is bound)
    ready: Callable[[], None]
    #: a file descriptor that reads the end of the file once the parent is gone
    parent_gone: int


#: what runs one worker's proxy: its exit code (0: drained after a signal)
Serve = Callable[[Config, Worker], int]


class _Fleet:
    """The worker processes and the parent's side of their pipes."""

    def __init__(self, config: Config, serve: Serve) -> None:
        self.config = config
        self.serve = serve
        self.context = multiprocessing.get_context("fork")  # the config (its credentials) goes by memory
        self.ready_in, self.ready_out = self.context.Pipe(duplex=False)
        self.gone_in, self.gone_out = os.pipe()  # only the parent keeps gone_out open
        self.procs: list[BaseProcess] = []
        self.exited: list[BaseProcess] = []
        self.stopping = False

    def start(self) -> None:
        proc = self.context.Process(target=self._child, name=f"streambridge-worker-{len(self.procs) + 1}")
        proc.start()
        self.procs.append(proc)

    def _child(self) -> None:
        """The worker's side of the fork: its own process group, the default signal handlers
        (its proxy installs its own), and only the reading ends of the pipes."""
        os.setpgrp()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        os.close(self.gone_out)
        self.ready_in.close()
        ready_out = self.ready_out

        def ready() -> None:
            ready_out.send(os.getpid())
            ready_out.close()

        sys.exit(self.serve(self.config, Worker(ready=ready, parent_gone=self.gone_in)))

    def live(self) -> list[BaseProcess]:
        """The workers whose exit is not yet seen (and logged)."""
        return [proc for proc in self.procs if proc not in self.exited]

    def stop(self, *_: object) -> None:
        """Forward a stop to every live worker, once (each then drains)."""
        if self.stopping:
            return
        self.stopping = True
        for proc in self.live():
            if proc.pid is not None:
                with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
                    os.kill(proc.pid, signal.SIGTERM)

    def wait_ready(self, count: int) -> int | None:
        """Wait until ``count`` more workers listen; the exit code of one that exited first."""
        while count:
            live = self.live()
            for ready in wait([self.ready_in, *(proc.sentinel for proc in live)]):
                if ready is self.ready_in:
                    self.ready_in.recv()
                    count -= 1
                else:
                    return self._exited(next(proc for proc in live if proc.sentinel == ready))
        return None

    def _exited(self, proc: BaseProcess) -> int:
        proc.join()
        self.exited.append(proc)
        code = proc.exitcode or 0
        log_event(logging.INFO if self.stopping else logging.ERROR, "worker_exited", worker=proc.pid, code=code)
        return code if code >= 0 else 1  # killed by a signal (-N): a failure

    def wait_all(self, failed: int | None) -> int:
        """Wait for every worker to exit (the first to exit unasked stops the rest)."""
        code = failed
        if failed is not None:
            self.stop()
        while live := self.live():
            for ready in wait([proc.sentinel for proc in live]):
                exited = self._exited(next(proc for proc in live if proc.sentinel == ready))
                if not self.stopping:
                    code = exited or 1
                    self.stop()
                elif exited and code is None:
                    code = exited
        return code or 0


def run_workers(config: Config, serve: Serve) -> int:
    """Run ``config.workers`` workers until SIGTERM / SIGINT (forwarded) or until one exits on
    its own; the exit code (0: all drained after a signal)."""
    setup_logging(config.log_json)
    fleet = _Fleet(config, serve)
    previous = {signum: signal.signal(signum, fleet.stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        fleet.start()
        failed = fleet.wait_ready(1)  # the first: a port that cannot be bound is one error
        if failed is None and not fleet.stopping:
            for _ in range(config.workers - 1):
                fleet.start()
            failed = fleet.wait_ready(config.workers - 1)
        if failed is None and not fleet.stopping:
            pids = ",".join(str(proc.pid) for proc in fleet.procs)
            log_event(logging.INFO, "workers", count=config.workers, pids=pids)
        if not fleet.live():
            return failed or 0  # the first worker could not start (or was stopped): nothing else runs
        return fleet.wait_all(failed)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.close(fleet.gone_out)
        os.close(fleet.gone_in)
        fleet.ready_in.close()
        fleet.ready_out.close()

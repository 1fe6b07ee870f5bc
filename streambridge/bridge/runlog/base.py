"""The run log's interface: what a proxied run wrote to its client, readable from a cursor.

A run's owner (the instance that reads its upstream) numbers each write (cursor.py), appends it
and writes it to its client, in that order, so the log is never behind what a client saw. A
reader gets exactly the frames after its cursor, then live ones, then the end: the run's own
terminal, or one written for it when its owner is gone (``run_lost``) or the log is lost
(``run_log_unavailable``), so no reader waits forever.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping

import msgspec

from ... import codecs
from ...codecs.fidelity import Fidelity
from ...codecs.framing import Framing
from ...events import RunStart
from ..faults import terminal_for
from .cursor import Numbering

__all__ = ["Gap", "RunInfo", "RunLog", "RunWriter", "closing_terminal", "identity"]


class RunInfo(msgspec.Struct, frozen=True):
    """What a reader needs to know of a run, stored with its log."""

    run_id: str
    route: str
    owner: str  # a hash of the identity that started the run (see :func:`identity`)
    instance: str  # the proxy instance reading its upstream: where a cancel goes
    target: str  # the client's protocol
    framing: Framing
    skip_named: bool = False
    chat_id: str = ""  # the chat it answers, for protocols that resume by chat id
    fidelity: Fidelity = "exact"  # the route's: a terminal written for the run is written alike
    finished: bool = False  # (as read back: its end is logged)

    def numbering(self) -> Numbering:
        return Numbering(self.framing, skip_named=self.skip_named)


class Gap(Exception):
    """The frames after the reader's cursor are no longer in the log (trimmed or expired)."""


class RunWriter(ABC):
    """The owner's end of one run's log."""

    def __init__(self, info: RunInfo) -> None:
        self.info = info
        self.numbering = info.numbering()

    def append(self, out: bytes) -> bytes:
        """Number ``out`` (whole frames), log it, and give back the bytes to write to the client."""
        data, lo, hi = self.numbering.number(out)
        self._store(lo, hi, data)
        return data

    @abstractmethod
    def _store(self, lo: int, hi: int, data: bytes) -> None: ...

    @abstractmethod
    def finish(self) -> None:
        """The run wrote its terminal: readers end after it."""

    async def room(self) -> bool:
        """Return once the log takes more of a run whose client is gone: the log is then its
        only reader, so the run reads its upstream no faster than this returns. False when
        the log lost the run (no one can read the rest: the run ends)."""
        return True

    async def ended(self) -> None:  # noqa: B027 (in memory the end is logged at once)
        """Return once the end is in the log (the client's response closes after it, so a
        client that saw its stream end finds the run ended)."""


class RunLog(ABC):
    """A store of run logs: in this process (memory.py) or shared by instances (redis.py)."""

    def __init__(self, instance: str) -> None:
        self.instance = instance
        self.on_cancel: Callable[[str], bool] = lambda run_id: False

    async def start(self, on_cancel: Callable[[str], bool]) -> None:
        """Begin serving; ``on_cancel(run_id)`` interrupts a run this instance owns."""
        self.on_cancel = on_cancel

    async def stop(self) -> None:  # noqa: B027 (nothing to release in memory)
        """Flush what is pending and release connections."""

    @abstractmethod
    async def begin(self, info: RunInfo) -> RunWriter:
        """Start a run's log: once this returns, any instance finds the run by its id."""

    @abstractmethod
    async def lookup(self, run_id: str) -> RunInfo | None:
        """The run's info (``finished`` set when its end is logged); None when unknown or expired."""

    @abstractmethod
    async def chat_run(self, route: str, chat_id: str) -> str | None:
        """The id of the latest run answering ``chat_id`` on ``route``."""

    @abstractmethod
    async def check(self, info: RunInfo, after: int) -> None:
        """Raise :class:`Gap` unless every frame after key ``after`` is still in the log."""

    @abstractmethod
    def read(self, info: RunInfo, after: int) -> AsyncIterator[bytes]:
        """The frames after key ``after``, then live ones, up to the end. Raises :class:`Gap`
        when they are no longer all there (at the start, or when a slow reader falls behind)."""

    @abstractmethod
    async def has_readers(self, run_id: str) -> bool:
        """Whether anyone (on any instance) is reading the run now."""

    async def cancel(self, info: RunInfo) -> bool:
        """Cancel a live run wherever its owner is; False when it could not be reached."""
        return self.on_cancel(info.run_id)


def identity(headers: Mapping[str, str], owner_header: str | None) -> str:
    """Who a request comes from: the header a gateway sets, or the client's credentials,
    hashed (a credential is never stored)."""
    if owner_header:
        parts = [owner_header.lower(), headers.get(owner_header, "")]
    else:
        parts = ["auth", headers.get("Authorization", ""), headers.get("Cookie", "")]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def closing_terminal(info: RunInfo, code: str) -> bytes:
    """The terminal for a run whose own end will never be logged, in its client's protocol (a
    fresh encoder after a run start, so it writes the terminal alone)."""
    encoder = codecs.get(info.target).encoder(info.framing, fidelity=info.fidelity)
    encoder.encode([RunStart(run_id=info.run_id)])
    return encoder.encode([terminal_for(code)])

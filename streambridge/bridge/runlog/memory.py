"""The run log in this process: bounded per run and in total, oldest finished runs evicted first.

Readers pull from the log at their own pace (no per-reader buffer): one that falls so far
behind that the frames it needs were trimmed gets :class:`Gap` and is dropped. A run whose
client is gone writes at most half its bound (``replay_limit_bytes``) ahead of its readers
(counted from when its client left), so a reader that keeps up never loses a frame to a trim:
past that, :meth:`_Writer.room` waits until a reader catches up (with none, until the run's
grace ends it), and its upstream is not read.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from itertools import islice

import msgspec

from .base import Gap, RunInfo, RunLog, RunWriter
from .cursor import frames_after

__all__ = ["MemoryRunLog"]


class _Run:
    """One run's writes: their bytes and keys in three deques (no tuple per write: a log of many
    small writes adds nothing for the garbage collector to walk)."""

    __slots__ = (
        *("base", "changed", "chunks", "finished_at", "his", "info", "limit", "los", "readers", "size"),
        *("trimmed_hi", "written", "caught_up", "taken"),
    )

    def __init__(self, info: RunInfo, limit: int) -> None:
        self.info = info
        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.los: deque[int] = deque()
        self.his: deque[int] = deque()
        self.base = 0  # how many chunks were trimmed from the front
        self.trimmed_hi = 0  # the highest key trimmed: a reader before it has a gap
        self.size = 0
        self.finished_at: float | None = None
        self.readers = 0
        self.changed: asyncio.Event | None = None  # set when someone waits for more
        self.written = 0  # bytes ever appended
        self.caught_up = 0  # ``written`` when a reader last had everything
        self.taken: asyncio.Event | None = None  # set when a reader catches up and the writer waits

    def notify(self) -> None:
        if self.changed is not None:
            self.changed.set()
            self.changed = None

    async def wait(self) -> None:
        """A reader that has everything waits for more (the writer, if it waits, goes on)."""
        self.caught_up = self.written
        if self.taken is not None:
            self.taken.set()
            self.taken = None
        if self.changed is None:
            self.changed = asyncio.Event()
        await self.changed.wait()

    async def room(self, since: int) -> None:
        """Wait while the writer is half its bound ahead of every reader, counting from ``since``."""
        while self.written - max(since, self.caught_up) >= self.limit // 2 and self.finished_at is None:
            if self.taken is None:
                self.taken = asyncio.Event()
            await self.taken.wait()

    def trim(self) -> int:
        """Drop the oldest chunk (never the last one); the bytes freed."""
        if len(self.chunks) <= 1:
            return 0
        data = self.chunks.popleft()
        self.los.popleft()
        self.trimmed_hi = self.his.popleft()
        self.base += 1
        self.size -= len(data)
        return len(data)


class _Writer(RunWriter):
    def __init__(self, log: MemoryRunLog, run: _Run) -> None:
        super().__init__(run.info)
        self.log = log
        self.run = run
        self.left: int | None = None  # ``written`` when the run's client was gone (the first wait)

    def _store(self, lo: int, hi: int, data: bytes) -> None:
        run = self.run
        run.chunks.append(data)
        run.los.append(lo)
        run.his.append(hi)
        run.size += len(data)
        run.written += len(data)
        self.log.grew(run, len(data))
        run.notify()

    async def room(self) -> bool:
        """Past its bound ahead of its readers (from when its client left), the run waits."""
        if self.left is None:
            self.left = self.run.written
        await self.run.room(self.left)
        return True

    def finish(self) -> None:
        self.run.finished_at = time.monotonic()
        self.log.finished[self.run.info.run_id] = self.run
        self.run.notify()


class MemoryRunLog(RunLog):
    """``run_bytes`` bounds one run's log (its oldest writes are trimmed past it; ``route_bytes``
    by route), ``total_bytes`` all of them; finished runs are kept ``ttl`` seconds."""

    def __init__(
        self, instance: str, *, run_bytes: int, total_bytes: int, ttl: float, route_bytes: dict[str, int] | None = None
    ) -> None:
        super().__init__(instance)
        self.run_bytes = run_bytes
        self.route_bytes = route_bytes or {}  # a route's own bound (its replay_limit_bytes)
        self.total_bytes = total_bytes
        self.ttl = ttl
        self.total = 0
        self.runs: OrderedDict[str, _Run] = OrderedDict()
        self.finished: OrderedDict[str, _Run] = OrderedDict()  # finished runs, oldest end first
        self.chats: dict[tuple[str, str], str] = {}

    async def begin(self, info: RunInfo) -> RunWriter:
        self._expire()
        run = _Run(info, self.route_bytes.get(info.route, self.run_bytes))
        self._drop(info.run_id)
        self.runs[info.run_id] = run
        if info.chat_id:
            self.chats[(info.route, info.chat_id)] = info.run_id
        return _Writer(self, run)

    def grew(self, run: _Run, size: int) -> None:
        self.total += size
        while run.size > run.limit and run.trim():
            pass
        if self.total <= self.total_bytes:
            return
        while self.total > self.total_bytes and self.finished:  # the oldest finished first
            self._drop(next(iter(self.finished)))
        while self.total > self.total_bytes and run.trim():
            pass

    def _drop(self, run_id: str) -> None:
        run = self.runs.pop(run_id, None)
        self.finished.pop(run_id, None)
        if run is None:
            return
        self.total -= run.size
        key = (run.info.route, run.info.chat_id)
        if run.info.chat_id and self.chats.get(key) == run_id:
            del self.chats[key]

    def _expire(self) -> None:
        now = time.monotonic()
        while self.finished:  # in the order they finished: only the expired ones are looked at
            run_id, run = next(iter(self.finished.items()))
            if run.finished_at is not None and now - run.finished_at <= self.ttl:
                return
            self._drop(run_id)

    async def lookup(self, run_id: str) -> RunInfo | None:
        self._expire()
        run = self.runs.get(run_id)
        if run is None:
            return None
        if run.finished_at is not None:
            return msgspec.structs.replace(run.info, finished=True)
        return run.info

    async def chat_run(self, route: str, chat_id: str) -> str | None:
        return self.chats.get((route, chat_id))

    async def check(self, info: RunInfo, after: int) -> None:
        run = self.runs.get(info.run_id)
        if run is None or after < run.trimmed_hi:
            raise Gap

    async def read(self, info: RunInfo, after: int) -> AsyncIterator[bytes]:
        await self.check(info, after)
        run = self.runs[info.run_id]
        framing = info.framing
        pos = run.base
        run.readers += 1
        try:
            while True:
                if pos < run.base:
                    raise Gap
                end = run.base + len(run.chunks)
                if pos < end:
                    start = pos - run.base
                    new = zip(
                        islice(run.chunks, start, None),
                        islice(run.los, start, None),
                        islice(run.his, start, None),
                        strict=True,
                    )
                    pos = end
                    data = b"".join([frames_after(d, lo, hi, after, framing) for d, lo, hi in new])
                    if data:
                        yield data
                    continue
                if run.finished_at is not None:
                    return
                await run.wait()
        finally:
            run.readers -= 1

    async def has_readers(self, run_id: str) -> bool:
        run = self.runs.get(run_id)
        return run is not None and run.readers > 0

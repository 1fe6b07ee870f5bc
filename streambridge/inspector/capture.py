"""What the inspector keeps of each stream, and the bounded ring of recent streams.

The proxy's whole cost is here: per upstream chunk and per client write, its time appended to
an array of doubles and its bytes (the object the relay made anyway, never copied) to a list,
bounded per stream, and a change signal that does nothing while no inspector page listens. No
container object is made per chunk: tuples would be tracked by the garbage collector, whose
walks over them showed as latency spikes in the run log's first version. Everything else (frames, links,
decoded events) is worked out from these bytes only when a page asks (see :mod:`.analysis`).
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Literal

import orjson

from ..codecs.fidelity import Fidelity

__all__ = [
    "DEFAULT_STREAMS",
    "DEFAULT_STREAM_BYTES",
    "DEFAULT_TOTAL_BYTES",
    "Inspector",
    "Origin",
    "StreamCapture",
    "StreamFacts",
]

#: how many streams the ring keeps by default (live ones and the most recent finished)
DEFAULT_STREAMS = 100
#: the most bytes (both sides) kept per stream by default (beyond it the capture is marked truncated)
DEFAULT_STREAM_BYTES = 2 * 1024 * 1024
#: the most bytes the ring keeps in all by default (the oldest finished streams leave first)
DEFAULT_TOTAL_BYTES = 64 * 1024 * 1024
#: seconds between the change notices a listening page gets (one per changed stream at most)
NOTICE_INTERVAL = 0.2

#: who made a client write: the translation of an upstream chunk, the proxy before any upstream
#: byte (a run start, a heartbeat), the end of the stream (its terminal), or an idle heartbeat
Origin = Literal["relay", "proxy", "end", "heartbeat"]


@dataclass(frozen=True)
class StreamFacts:
    """What a stream is: its route and protocols, and the framings on each side."""

    route: str
    path: str
    source: str
    target: str
    framing: str  # the client's (``sse`` / ``ndjson``)
    transport: str = "http"  # ``http`` or ``ws``
    upstream: str = ""  # the upstream URL without user info or query
    source_framing: str | None = None  # the upstream's, once known (None: detected from its bytes)
    fidelity: Fidelity = "exact"  # what the translation promised the client (codecs/fidelity.py)
    #: the client's name of its conversation, said in the run start instead of the upstream's
    #: own thread id (an upstream that chooses its thread ids: Translator.name_thread)
    conversation: str | None = None


class StreamCapture:
    """One stream's bytes as they passed the proxy: upstream chunks as received, client writes
    as written, with seconds since the stream began; faults; and how it ended."""

    __slots__ = (
        "_clock",
        "_ended",
        "_listeners",
        "_notify",
        "bytes_in",
        "bytes_out",
        "count_events",
        "ended",
        "events_in",
        "facts",
        "faults",
        "finished_view",
        "id",
        "kept",
        "limit",
        "out_data",
        "out_origins",
        "out_times",
        "outcome",
        "recorded",
        "secrets",
        "started",
        "t0",
        "terminal",
        "truncated",
        "up_chunks",
        "up_times",
    )

    def __init__(
        self,
        stream_id: str,
        facts: StreamFacts,
        *,
        secrets: tuple[str, ...] = (),
        limit: int = DEFAULT_STREAM_BYTES,
        notify: Callable[[StreamCapture], None] | None = None,
        listeners: Collection[object] | None = None,
        ended: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        recorded: bool = False,
    ) -> None:
        self.id = stream_id
        self.facts = facts
        #: values never shown (upstream credentials, forwarded credentials): redacted on the way out
        self.secrets = secrets
        self.limit = limit
        self._notify = notify
        #: the pages listening (the inspector's own set): no notice is made while it is empty
        self._listeners: Collection[object] = listeners if listeners is not None else ()
        self._ended = ended
        self._clock = clock
        #: a recorded transcript (``streambridge inspect``): no arrival times
        self.recorded = recorded
        self.started = time.time()
        self.t0 = clock()
        self.up_times = array("d")
        self.up_chunks: list[bytes] = []
        self.out_times = array("d")
        self.out_data: list[bytes] = []
        self.out_origins: list[Origin] = []
        self.faults: list[tuple[float, str, str]] = []
        self.bytes_in = 0
        self.bytes_out = 0
        self.kept = 0
        self.truncated = False
        self.events_in = 0
        #: how many events the stream decoded so far (read for a live stream's summary only)
        self.count_events: Callable[[], int] | None = None
        self.outcome = "live"
        #: the status of the upstream's own terminal (None: it sent none)
        self.terminal: str | None = None
        self.ended: float | None = None
        #: the worked-out view of a finished stream (it cannot change any more), once a page asked
        self.finished_view: bytes | None = None

    # -- what the relay calls (the hot path: a few additions and appends) -------------------
    # ``now`` is the relay's own clock reading (the event loop's: ``time.monotonic``), so a
    # capture adds no clock call to a write. Bytes are kept while fewer than ``limit`` are
    # (so at most one chunk over), then only counted.

    def upstream_chunk(self, chunk: bytes, now: float | None = None) -> None:
        size = len(chunk)
        self.bytes_in += size
        if self.kept < self.limit:
            self.kept += size
            self.up_times.append(self._clock() if now is None else now)
            self.up_chunks.append(chunk)
        else:
            self.truncated = True
        if self._listeners and self._notify is not None:
            self._notify(self)

    def client_write(self, data: bytes, now: float | None = None, origin: Origin = "relay") -> None:
        size = len(data)
        self.bytes_out += size
        if self.kept < self.limit:
            self.kept += size
            self.out_times.append(self._clock() if now is None else now)
            self.out_data.append(data)
            self.out_origins.append(origin)
        else:
            self.truncated = True
        if self._listeners and self._notify is not None:
            self._notify(self)

    def fault(self, code: str, detail: str = "") -> None:
        self.faults.append((self._clock() - self.t0, code, detail))
        if self._notify is not None:
            self._notify(self)

    def end(self, outcome: str, events_in: int, source_framing: str | None, terminal: str | None = None) -> None:
        self.outcome = outcome
        self.terminal = terminal
        self.events_in = events_in
        self.ended = self._clock() - self.t0
        if source_framing is not None and self.facts.source_framing != source_framing:
            self.facts = replace(self.facts, source_framing=source_framing)
        if self._notify is not None:
            self._notify(self)
        if self._ended is not None:
            self._ended()

    # -- what a page sees ------------------------------------------------------------------

    def snapshot(self) -> StreamCapture:
        """A copy that later writes do not change (worked out off the event loop)."""
        copy = StreamCapture.__new__(StreamCapture)
        for name in StreamCapture.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.up_times, copy.up_chunks = array("d", self.up_times), list(self.up_chunks)
        copy.out_times, copy.out_data, copy.out_origins = (
            array("d", self.out_times),
            list(self.out_data),
            list(self.out_origins),
        )
        copy.faults = list(self.faults)
        copy._notify = copy._ended = None
        frozen = self._clock()
        copy._clock = lambda: frozen
        return copy

    @property
    def upstream(self) -> list[tuple[float, bytes]]:
        """The upstream chunks kept, each with its arrival time (seconds since the start)."""
        t0 = self.t0
        return [(t - t0, chunk) for t, chunk in zip(self.up_times, self.up_chunks, strict=True)]

    @property
    def client(self) -> list[tuple[float, bytes, Origin]]:
        """The client writes kept, each with its time (seconds since the start) and who made it."""
        t0 = self.t0
        return [
            (t - t0, data, origin)
            for t, data, origin in zip(self.out_times, self.out_data, self.out_origins, strict=True)
        ]

    @property
    def ttfb(self) -> float | None:
        """Seconds from the start to the first upstream byte."""
        return self.up_times[0] - self.t0 if self.up_times else None

    def elapsed(self) -> float:
        """Seconds from the stream's start to its end (to now while it is live)."""
        return self.ended if self.ended is not None else self._clock() - self.t0

    @property
    def live(self) -> bool:
        return self.ended is None

    def summary(self) -> dict[str, object]:
        """One row of the stream list."""
        facts = self.facts
        sep = b"\n\n" if facts.framing == "sse" else b"\n"
        now = self.elapsed()
        return {
            "id": self.id,
            "route": facts.route,
            "path": facts.path,
            "source": facts.source,
            "target": facts.target,
            "transport": facts.transport,
            "started": self.started,
            "status": self.outcome,
            "terminal": self.terminal,
            "live": self.live,
            "duration_ms": round(now * 1000),
            "ttfb_ms": None if self.ttfb is None or self.recorded else round(self.ttfb * 1000),
            "chunks_in": len(self.up_chunks),
            "writes_out": len(self.out_data),
            "frames_out": sum(
                data.count(sep)
                for data, origin in zip(self.out_data, self.out_origins, strict=True)
                if origin != "heartbeat"
            ),
            "events_in": self.events_in if not self.live or self.count_events is None else self.count_events(),
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "faults": [code for _, code, _ in self.faults],
            "truncated": self.truncated,
            "recorded": self.recorded,
        }


class Inspector:
    """The ring of recent streams (``keep`` of them, and at most ``total_bytes`` kept in all: the
    oldest finished leave first) and the pages listening for changes (each gets a queue of change
    notices, at most one per stream every :data:`NOTICE_INTERVAL` seconds)."""

    def __init__(
        self,
        keep: int = DEFAULT_STREAMS,
        stream_bytes: int = DEFAULT_STREAM_BYTES,
        token: str | None = None,
        total_bytes: int = DEFAULT_TOTAL_BYTES,
    ) -> None:
        if keep < 1:
            raise ValueError("the inspector keeps at least one stream")
        self.keep = keep
        self.stream_bytes = stream_bytes
        self.total_bytes = total_bytes
        #: with a token the inspector answers any address that presents it; without, loopback only
        self.token = token
        self.streams: OrderedDict[str, StreamCapture] = OrderedDict()
        self._listeners: set[asyncio.Queue[bytes | None]] = set()
        self._changed: dict[str, StreamCapture] = {}
        self._flush: asyncio.TimerHandle | None = None

    def open(self, stream_id: str, facts: StreamFacts, secrets: tuple[str, ...] = ()) -> StreamCapture:
        """A new stream's capture, in the ring from now on."""
        capture = StreamCapture(
            stream_id,
            facts,
            secrets=secrets,
            limit=self.stream_bytes,
            notify=self.changed,
            listeners=self._listeners,
            ended=self._trim,
        )
        self.add(capture)
        return capture

    def add(self, capture: StreamCapture) -> None:
        self.streams[capture.id] = capture
        self.streams.move_to_end(capture.id)
        self._trim()
        self.changed(capture)

    def _trim(self) -> None:
        """Drop the oldest streams, finished ones first, while the ring holds too many or (of the
        finished) too many bytes (run at a stream's start and end, never per chunk)."""
        while len(self.streams) > self.keep:
            oldest = next((key for key, c in self.streams.items() if not c.live), next(iter(self.streams)))
            del self.streams[oldest]
        kept = sum(c.kept for c in self.streams.values())
        for key in [key for key, c in self.streams.items() if not c.live]:
            if kept <= self.total_bytes:
                break
            kept -= self.streams.pop(key).kept

    def get(self, stream_id: str) -> StreamCapture | None:
        return self.streams.get(stream_id)

    def summaries(self) -> list[dict[str, object]]:
        """The list, newest first."""
        return [capture.summary() for capture in reversed(self.streams.values())]

    # -- change notices ----------------------------------------------------------------------

    def changed(self, capture: StreamCapture) -> None:
        if not self._listeners:
            return
        self._changed[capture.id] = capture
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(NOTICE_INTERVAL, self._send)

    def _send(self) -> None:
        self._flush = None
        changed, self._changed = self._changed, {}
        notices = [orjson.dumps(capture.summary()) for capture in changed.values()]
        for queue in list(self._listeners):
            for notice in notices:
                if queue.full():  # a page that stopped reading: let it go (it reconnects)
                    self._listeners.discard(queue)
                    while not queue.empty():
                        queue.get_nowait()
                    queue.put_nowait(None)
                    break
                queue.put_nowait(notice)

    def listen(self) -> asyncio.Queue[bytes | None]:
        """A queue of change notices (summaries, JSON); None when the listener was dropped."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=1024)
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[bytes | None]) -> None:
        self._listeners.discard(queue)

    def close(self) -> None:
        """End every live feed (the server is shutting down)."""
        for queue in self._listeners:
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(None)
        self._listeners.clear()

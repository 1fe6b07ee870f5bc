"""Prometheus metrics, in a registry of the app's own (two apps in one process never collide).

Counters are updated per stream in batches (see :class:`StreamCounts`): a prometheus-client
``inc`` takes a lock, and a proxy that flushes every received chunk pays for it on every frame.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["CONTENT_TYPE_LATEST", "BridgeMetrics", "StreamCounts"]

_TTFB_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class BridgeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.open_streams = Gauge("streambridge_open_streams", "Streams open now", ["route"], registry=r)
        self.streams = Counter("streambridge_streams", "Streams handled, by outcome", ["route", "outcome"], registry=r)
        self.frames_in = Counter("streambridge_frames_in", "Events decoded from the upstream", ["route"], registry=r)
        self.frames_out = Counter("streambridge_frames_out", "Frames written to clients", ["route"], registry=r)
        self.translation_errors = Counter(
            "streambridge_translation_errors",
            "Upstream frames that could not be translated",
            ["route", "code"],
            registry=r,
        )
        self.faults = Counter("streambridge_faults", "Streams ended by a fault, by code", ["route", "code"], registry=r)
        self.heartbeats = Counter("streambridge_heartbeats", "Heartbeat comments written", ["route"], registry=r)
        self.trailing_frames = Counter(
            "streambridge_trailing_frames", "Upstream frames after the terminal event (ignored)", ["route"], registry=r
        )
        self.upstream_connections = Gauge(
            "streambridge_upstream_connections",
            "Upstream streams open now (bounded by max_upstream_connections)",
            registry=r,
        )
        self.connection_limit_refusals = Counter(
            "streambridge_connection_limit_refusals",
            "Streams refused because the upstream connection limit stayed full for the connect timeout",
            ["route"],
            registry=r,
        )
        self.followers_dropped = Counter(
            "streambridge_followers_dropped",
            "Re-attached readers dropped for falling behind their run",
            ["route"],
            registry=r,
        )
        self.ttfb = Histogram(
            "streambridge_upstream_ttfb_seconds",
            "Time from the upstream request to its first body byte",
            ["route"],
            buckets=_TTFB_BUCKETS,
            registry=r,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class StreamCounts:
    """Frame counts of one stream, flushed to the shared counters every ``every`` chunks and at the end."""

    __slots__ = ("_chunks", "_in", "_in_counter", "_out", "_out_counter", "every")

    def __init__(self, metrics: BridgeMetrics, route: str, every: int = 64) -> None:
        self._in_counter = metrics.frames_in.labels(route)
        self._out_counter = metrics.frames_out.labels(route)
        self._in = 0
        self._out = 0
        self._chunks = 0
        self.every = every

    def add(self, frames_in: int, frames_out: int) -> None:
        self._in += frames_in
        self._out += frames_out
        self._chunks += 1
        if self._chunks >= self.every:
            self.flush()

    def flush(self) -> None:
        if self._in:
            self._in_counter.inc(self._in)
        if self._out:
            self._out_counter.inc(self._out)
        self._in = self._out = self._chunks = 0

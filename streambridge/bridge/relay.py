"""The per-stream pump: upstream chunks → ``Translator.feed`` → one client write per chunk.

Everything a received chunk holds is translated together and written once (a write costs more
than the JSON work). The translator's encoder writes exactly one terminal: the upstream's, or
the one for the fault that ended the stream (see faults.py). Heartbeat comments go out only
between writes, and only while the client's transport has nothing pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .. import Translator
from ..codecs import StreamError
from ..codecs.framing import Framing
from ..events import Terminal
from .asks import Pending, Resumer
from .faults import FAULTS, UpstreamFault, fault_from_stream_error, terminal_for
from .logging import log_event
from .metrics import StreamCounts
from .runlog import RunWriter
from .upstream import Upstream

if TYPE_CHECKING:
    from aiohttp import web

    from ..inspector import StreamCapture
    from ..inspector.capture import Origin
    from .config import Route
    from .state import BridgeState

__all__ = ["PING", "ClientGone", "HttpSink", "Relay", "Watchdog", "WsSink", "end_response"]

PING = b": ping\n\n"
#: the ends of a run the proxy cut short: an upstream with runs is told to stop the run too
CUT_SHORT = frozenset({"cancelled", "shutting_down", "run_too_large", "run_too_long", "run_log_unavailable"})


def framing_of(content_type: str) -> Framing | None:
    """The framing an upstream declared in its Content-Type, if it is one streambridge reads."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "text/event-stream":
        return "sse"
    if media in ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/jsonlines"):
        return "ndjson"
    return None


class ClientGone(Exception):
    """The client disconnected."""


#: a sink's write: waits while the client is backed up
Write = Callable[[bytes], Coroutine[Any, Any, None]]


class Sink:
    """Where translated bytes go. ``heartbeat`` is the idle comment, or None when not SSE.
    ``write`` may be the transport's own (no wrapper per write)."""

    heartbeat: bytes | None = None
    sep = b"\n\n"
    write: Write

    def quiet(self) -> bool:
        """True when nothing is pending on the client's transport (a heartbeat cannot interleave)."""
        return False

    def abort(self) -> None:
        """Drop the client connection (it stopped reading)."""


class HttpSink(Sink):
    def __init__(self, request: web.Request, resp: web.StreamResponse, framing: Framing) -> None:
        self.request = request
        self.resp = resp
        self.heartbeat = PING if framing == "sse" else None
        self.sep = b"\n\n" if framing == "sse" else b"\n"
        self.write = resp.write

    def quiet(self) -> bool:
        transport = self.request.transport
        return transport is not None and not transport.is_closing() and transport.get_write_buffer_size() == 0

    def abort(self) -> None:
        transport = self.request.transport
        if transport is not None:
            transport.abort()


async def end_response(resp: web.StreamResponse, sink: HttpSink, stall_timeout: float) -> bool:
    """Write the response's end and wait until the client's transport has handed every byte to
    the kernel, for at most ``stall_timeout``: a client that does not take the end of its answer
    is dropped (False) as one that stops reading mid-stream, so no finished stream keeps its
    connection and its buffers."""
    transport = sink.request.transport
    if not isinstance(transport, asyncio.WriteTransport) or transport.is_closing():
        return True
    low, high = transport.get_write_buffer_limits()
    transport.set_write_buffer_limits(high=0)  # the end's drain: until nothing is left unsent
    try:
        async with asyncio.timeout(stall_timeout):
            await resp.write_eof()
    except TimeoutError:
        sink.abort()
        return False
    except ConnectionError:
        return True
    if not transport.is_closing():  # (a kept-alive connection's next answers drain as before)
        transport.set_write_buffer_limits(high=high, low=low)
    return True


class WsSink(Sink):
    """One event per WebSocket text message (the target writes NDJSON: one event per line)."""

    sep = b"\n"

    def __init__(self, request: web.Request, ws: web.WebSocketResponse) -> None:
        self.request = request
        self.ws = ws

    async def write(self, data: bytes) -> None:
        if self.ws.closed:
            raise ClientGone("client disconnected")
        try:
            for line in data.split(b"\n"):
                if line:
                    await self.ws.send_str(line.decode("utf-8"))
        except ConnectionError:
            raise ClientGone("client disconnected") from None

    def abort(self) -> None:
        transport = self.request.transport
        if transport is not None:
            transport.abort()


class Watchdog:
    """One task per stream: heartbeats after ``interval`` idle seconds (between writes only, never
    while the transport is backed up), and the stall guard that drops a client whose pending write
    has not drained for a stall timeout. Costs two clock reads per write, no timer per write."""

    def __init__(
        self,
        sink: Sink,
        interval: float,
        stall_timeout: float,
        on_ping: Callable[[], None],
        on_stall: Callable[[], None],
    ) -> None:
        self.sink = sink
        self.interval = interval if sink.heartbeat is not None and interval > 0 else 0.0
        self.stall_timeout = stall_timeout
        self.on_ping = on_ping
        self.on_stall = on_stall
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.writing_since: float | None = None

    def begin(self) -> None:
        self.writing_since = self.loop.time()

    def end(self) -> None:
        self.writing_since = None
        self.last = self.loop.time()

    async def write(self, data: bytes) -> None:
        self.begin()
        try:
            await self.sink.write(data)
        finally:
            self.end()

    async def beat(self) -> bool:
        """Write one heartbeat if the stream is idle and the transport is drained."""
        if self.writing_since is not None or not self.sink.quiet():
            self.last = self.loop.time()  # backed up or mid-write: look again one interval later
            return False
        assert self.sink.heartbeat is not None
        await self.write(self.sink.heartbeat)
        self.on_ping()
        return True

    def _next(self, now: float) -> float:
        """Seconds until something may be due (a write that starts while this sleeps is looked
        at within one stall timeout, so a stall is caught after one to two stall timeouts)."""
        if self.writing_since is not None:
            return self.writing_since + self.stall_timeout - now
        if self.interval:
            return min(self.last + self.interval - now, self.stall_timeout)
        return self.stall_timeout

    async def run(self) -> None:
        with contextlib.suppress(ClientGone, ConnectionError):
            while True:
                now = self.loop.time()
                delay = self._next(now)
                if delay > 0:
                    await asyncio.sleep(delay)
                    continue
                if self.writing_since is not None:
                    self.on_stall()
                    return
                if self.interval:
                    await self.beat()


class _Gone(Sink):
    """Where a run's output goes once its client is gone: nowhere (it is in the run log)."""

    async def write(self, data: bytes) -> None:
        pass


class Relay:
    """One proxied stream. ``interrupt`` ends it early with a cancelled or shutdown terminal.

    With a run log (``log``) every write is numbered and logged before the client gets it. With
    ``grace`` too, the run outlives its client: when the client goes, the run goes on into the
    log, and is cancelled only after ``grace`` seconds in which no one reads it."""

    def __init__(
        self,
        state: BridgeState,
        route: Route,
        translator: Translator,
        sink: Sink,
        *,
        stream_id: str,
        log: RunWriter | None = None,
        grace: float | None = None,
        resumer: Resumer | None = None,
    ) -> None:
        self.state = state
        self.resumer = resumer
        self._pending = self._new_pending()  # what the current upstream run asked (with a resumer)
        self._asks_seen = 0
        self.route = route
        self.translator = translator
        self.sink = sink
        self.stream_id = stream_id
        self.log = log
        self.grace = grace
        self.client_lost = False
        self._grace_task: asyncio.Task[None] | None = None
        self._dog_task: asyncio.Task[None] | None = None
        self.upstream: Upstream | None = None
        self.outcome = "open"
        self._stop: str | None = None
        self._interruptible = False  # in an upstream call (or a wait for the log) an interrupt cancels
        self.received = 0  # upstream bytes of the run
        self._max_bytes = route.max_run_bytes or float("inf")
        self._task: asyncio.Task[object] | None = None
        self._fault: UpstreamFault | None = None
        self._bad_frame = ""  # what was wrong with the frame that ended the stream (for the inspector)
        self._watchdog: Watchdog | None = None
        self._stalled = False
        self._sep = sink.sep
        self.last_write = b""  # the last bytes written to the client: the terminal's, at the end
        #: the inspector's capture of this stream (None: the inspector is off, and costs nothing)
        self.tap: StreamCapture | None = None

    # -- control -------------------------------------------------------------------------

    def interrupt(self, reason: str) -> None:
        """End the stream now: ``cancelled`` (a protocol cancel), ``shutting_down``,
        ``client_gone`` or ``run_too_long``."""
        if self._stop is not None:
            return
        self._stop = reason
        if self.upstream is not None and reason != "shutting_down":
            self.upstream.abort()
        if self._interruptible and self._task is not None:
            self._task.cancel()

    # -- the pump ------------------------------------------------------------------------

    async def run(self, upstream: Upstream, preamble: bytes = b"") -> None:
        self._task = asyncio.current_task()
        self.upstream = upstream
        metrics = self.state.metrics
        counts = StreamCounts(metrics, self.route.name)
        metrics.open_streams.labels(self.route.name).inc()
        self.state.opened(self)
        loop = asyncio.get_running_loop()
        started = loop.time()
        dog_task = self._dog_task = asyncio.create_task(self._start_watchdog().run())
        limit = self.route.max_run_seconds
        too_long = loop.call_later(limit, self.interrupt, "run_too_long") if limit else None
        try:
            await self._stream(upstream, preamble, counts)
        except asyncio.CancelledError:
            self._client_gone("client_disconnected")
            raise
        except (ClientGone, ConnectionError):
            self._client_gone("client_disconnected")
        finally:
            if too_long is not None:
                too_long.cancel()
            dog_task.cancel()
            self._ended(counts, started)

    def _start_watchdog(self) -> Watchdog:
        heartbeats = self.state.metrics.heartbeats.labels(self.route.name).inc
        watchdog = self._watchdog = Watchdog(
            self.sink,
            self.route.heartbeat,
            self.route.client_stall_timeout,
            self._on_ping(heartbeats),
            self._on_stall,
        )
        return watchdog

    async def _stream(self, upstream: Upstream, preamble: bytes, counts: StreamCounts) -> None:
        """The preamble, the upstream's run(s) translated, then the end: the upstream's terminal
        or the fault's (nothing more for a client that is gone)."""
        assert self._watchdog is not None
        if self._watchdog.interval:
            preamble += PING  # one before the first upstream byte
        if preamble:
            await self._write(preamble, log=False, origin="proxy")
        fault = await self._pumped(upstream, counts)
        if fault == "client_gone":
            self._client_gone("client_disconnected")
            return
        tail = self._finish(fault)
        if tail:
            await self._write(tail, origin="end")
            counts.add(0, tail.count(self._sep))

    async def _pumped(self, upstream: Upstream, counts: StreamCounts) -> str | None:
        """:meth:`_pump`, its upstream closed after it (dropped when the client is gone); a bug
        in it is the ``proxy_error`` fault, so the client still gets a proper terminal."""
        try:
            return await self._pump(upstream, counts)
        except (asyncio.CancelledError, ClientGone, ConnectionError):
            upstream.abort()  # the client is gone: no polite close upstream
            raise
        except Exception as exc:
            log_event(
                logging.ERROR,
                "proxy_error",
                exc_info=True,
                route=self.route.name,
                stream=self.stream_id,
                error=type(exc).__name__,
            )
            return "proxy_error"
        finally:
            if self.upstream is not None:  # (a resume run's, by now)
                await self.upstream.close()

    def _ended(self, counts: StreamCounts, started: float) -> None:
        """Whatever way the stream ended: its counts, its place in the state, its log and capture."""
        if self._grace_task is not None:
            self._grace_task.cancel()
        counts.flush()
        metrics, name = self.state.metrics, self.route.name
        metrics.open_streams.labels(name).dec()
        metrics.streams.labels(name, self.outcome).inc()
        self.state.closed(self)
        if self.resumer is not None:
            self._forget_asks()
        if self.log is not None:
            self.log.finish()
        if self.tap is not None:
            self._tap_end(self.tap)
        log_event(
            logging.INFO,
            "stream_end",
            route=name,
            stream=self.stream_id,
            outcome=self.outcome,
            duration_ms=round((asyncio.get_running_loop().time() - started) * 1000),
            events_in=self.translator.events_in,
        )

    async def _upstream_call(self, call: Callable[[], Awaitable[bytes]]) -> bytes | str:
        """One upstream read (or the open): its bytes, or the code of the fault / interrupt that
        ended it (``run_too_large`` for bytes past ``max_run_bytes``: they are not translated)."""
        self._interruptible = True
        try:
            data = await call()
            self.received += len(data)
            return "run_too_large" if self.received > self._max_bytes else data
        except asyncio.CancelledError:
            if self._stop is not None and self._task is not None and self._task.uncancel() == 0:
                return self._stop
            raise
        except UpstreamFault as fault:
            self._fault = fault
            return self._stop or fault.code
        except Exception as exc:
            named = self.upstream.fault(exc) if self.upstream is not None else None
            if named is None:
                raise
            self._fault = named
            return self._stop or named.code
        finally:
            self._interruptible = False

    async def _pump(self, upstream: Upstream, counts: StreamCounts) -> str | None:
        """Relay until the upstream ends (None) or a fault / interrupt ends the stream (its
        code); a run that ended to ask goes on in its resume run (see asks.py)."""
        if self._stop is not None:
            return self._stop
        chunk = await self._upstream_call(upstream.open)
        if isinstance(chunk, str):
            return chunk
        self._first_chunk()
        while True:
            fault = await self._relay(chunk, counts)
            if fault is not None or self.translator.held is None:
                return fault
            chunk = await self._upstream_call(self._resume)
            if isinstance(chunk, str):
                return chunk

    async def _resume(self) -> bytes:
        """Wait for the answers to what the held run asked, then open its resume run upstream
        (its first bytes): the client's stream goes on with it."""
        resumer = self.resumer
        held = self.upstream
        assert resumer is not None and held is not None
        pending = self._pending
        log_event(logging.INFO, "run_asks", route=self.route.name, stream=self.stream_id, asks=len(pending.interrupts))
        entries = await pending.entries(resumer.timeout)
        self._forget_asks()
        await held.close()
        upstream = self.upstream = resumer.reopen(entries)
        self.translator.go_on()
        log_event(logging.INFO, "run_resumed", route=self.route.name, stream=self.stream_id, answers=len(entries))
        return await upstream.open()

    def _register_asks(self) -> None:
        """Make the run's new asks answerable on the control route (before the client sees them)."""
        assert self.resumer is not None
        pending, pending_of = self._pending, self.state.pending
        asks = self.translator.asks
        for ask in asks[self._asks_seen :]:
            pending.add(ask.call_id, self.resumer.interrupt_id(ask))
            pending_of[(self.route.name, ask.call_id)] = pending
        self._asks_seen = len(asks)

    def _forget_asks(self) -> None:
        pending, pending_of = self._pending, self.state.pending
        for call_id in pending.interrupts:
            if pending_of.get((self.route.name, call_id)) is pending:
                del pending_of[(self.route.name, call_id)]
        self._pending = self._new_pending()
        self._asks_seen = 0

    def _new_pending(self) -> Pending:
        return Pending(self.resumer.owner if self.resumer is not None else "")

    async def _relay(self, chunk: bytes, counts: StreamCounts) -> str | None:
        """Translate one upstream run from its first chunk on (the hot loop: one read, one
        ``Translator.feed``, one write per received chunk)."""
        upstream = self.upstream
        assert upstream is not None
        translator = self.translator
        feed = translator.feed
        write = self.sink.write
        dog = self._watchdog
        assert dog is not None
        clock = dog.loop.time
        log = self.log
        sep = self._sep
        events_seen = translator.events_in  # (a resume run adds to the first run's count)
        holding = self.resumer is not None
        tap = self.tap
        while chunk:
            if tap is not None:
                tap.upstream_chunk(chunk, clock())
            try:
                out = feed(chunk)
            except StreamError as exc:
                return await self._bad_frame_in(exc, counts, events_seen)
            if holding and len(translator.asks) != self._asks_seen:
                self._register_asks()
            if out:
                if log is not None:
                    out = log.append(out)  # numbered and logged before the client has it
                dog.writing_since = clock()
                self.last_write = out
                if tap is not None:
                    tap.client_write(out, dog.writing_since)
                try:
                    await write(out)
                except (ClientGone, ConnectionError) as exc:
                    write = self._lost_mid_write(exc)
                dog.writing_since = None
                dog.last = clock()
                counts.add(translator.events_in - events_seen, out.count(sep))
                events_seen = translator.events_in
            if translator.terminated or (holding and translator.held is not None):
                return None
            if self._stop is not None:
                return self._stop
            read = await self._upstream_call(self._reader(upstream))
            if isinstance(read, str):
                return read
            chunk = read
        return None

    def _reader(self, upstream: Upstream) -> Callable[[], Awaitable[bytes]]:
        """The next read: the upstream's own, or, once the client is gone, paced by the run log."""
        return self._read_into_log if self.client_lost else upstream.read

    async def _read_into_log(self) -> bytes:
        """The next upstream chunk of a run whose client is gone, once its log takes more: the
        log is then its reader, so the upstream waits as it would for a slow client."""
        assert self.log is not None and self.upstream is not None
        if not await self.log.room():
            raise UpstreamFault("run_log_unavailable", detail="the run's log was lost while no client read it")
        return await self.upstream.read()

    async def _bad_frame_in(self, exc: StreamError, counts: StreamCounts, events_seen: int) -> str | None:
        """A chunk with a frame the decoder refused: what the read held before the bad frame
        reaches the client first (its terminal too, when the upstream sent one before trailing
        bytes, which then end nothing); otherwise the frame's fault ends the stream."""
        translator = self.translator
        if exc.output:
            await self._write(exc.output)
            counts.add(translator.events_in - events_seen, exc.output.count(self._sep))
        if translator.terminated:
            self._trailing(exc)
            return None
        self._log_stream_error(exc)
        return fault_from_stream_error(exc)

    def _lost_mid_write(self, exc: ClientGone | ConnectionError) -> Write:
        """The client went away during a write: a run that outlives its client goes on into its
        log (the write to use from now on); any other ends (``exc`` raised again)."""
        if self.grace is None:
            raise exc
        return self.lose_client()

    def _first_chunk(self) -> None:
        """Record the time to first byte; follow the upstream's declared framing unless configured
        (when its Content-Type says neither SSE nor NDJSON, the decoder detects it)."""
        upstream = self.upstream
        if upstream is None:
            return
        if upstream.ttfb is not None:
            self.state.metrics.ttfb.labels(self.route.name).observe(upstream.ttfb)
        framing = framing_of(upstream.content_type)
        if self.route.source_framing is None and framing is not None and framing != self.translator.decoder.framing:
            self.translator.use_source_framing(framing)

    async def _write(self, data: bytes, *, log: bool = True, origin: Origin = "relay") -> None:
        assert self._watchdog is not None
        if log and self.log is not None:
            data = self.log.append(data)
        self.last_write = data
        if self.tap is not None:
            self.tap.client_write(data, origin=origin)
        try:
            await self._watchdog.write(data)
        except (ClientGone, ConnectionError) as exc:
            self._lost_mid_write(exc)

    # -- a run that outlives its client --------------------------------------------------

    def lose_client(self) -> Write:
        """The client is gone: the run goes on into its log while someone may come back to it
        (cancelled after ``grace`` seconds with no reader), reading its upstream no faster than
        the log takes it (:meth:`_read_into_log`). The write to use from now on."""
        if self.client_lost:
            return self.sink.write
        self.client_lost = True
        self.sink = _Gone()
        if self._watchdog is not None:
            self._watchdog.sink = self.sink
            self._watchdog.interval = 0.0
        if self._dog_task is not None:
            self._dog_task.cancel()
        log_event(logging.INFO, "client_lost", route=self.route.name, stream=self.stream_id, grace=self.grace)
        if self._stop is None:
            self._grace_task = asyncio.get_running_loop().create_task(self._grace_period())
        return self.sink.write

    async def _grace_period(self) -> None:
        """Cancel the run once it has had no reader for ``grace`` seconds."""
        runlog = self.state.runlog
        grace = self.grace or 0.0
        loop = asyncio.get_running_loop()
        unread_since = loop.time()
        step = min(max(grace / 4, 0.05), 1.0)
        while grace > 0:
            await asyncio.sleep(step)
            if runlog is not None and await runlog.has_readers(self.stream_id):
                unread_since = loop.time()
            elif loop.time() - unread_since >= grace:
                break
        log_event(logging.INFO, "grace_over", route=self.route.name, stream=self.stream_id)
        self.interrupt("client_gone")

    def _finish(self, fault: str | None) -> bytes:
        """The end of the output: the upstream's terminal, or the fault's."""
        translator = self.translator
        before = b""  # what the end of input held before a fault in it
        if fault is None:
            try:
                tail = translator.close()
                self.outcome = "completed"
                return tail
            except StreamError as exc:
                before = exc.output
                if translator.terminated:
                    self.outcome = "completed"
                    return before
                self._log_stream_error(exc)
                fault = fault_from_stream_error(exc)
        if translator.terminated:
            self.outcome = "completed"
            return before
        self.outcome = fault
        info = self._fault
        terminal = terminal_for(
            fault,
            retry_after=info.retry_after if info is not None else None,
            exposed=info.exposed if info is not None else "",
        )
        if fault != "cancelled":
            self._count_fault(fault, info)
        if fault in CUT_SHORT:  # a run with a run id goes on upstream unless told
            self.state.cancel_upstream(self.route, self.upstream)
        return before + translator.abort(terminal)

    def _tap_end(self, tap: StreamCapture) -> None:
        translator = self.translator
        terminal = translator.terminal
        status = terminal.status if terminal is not None else None
        tap.end(self.outcome, translator.events_in, translator.decoder.framing, status)

    def _on_ping(self, count: Callable[[], None]) -> Callable[[], None]:
        """What a heartbeat does: counted, and shown to the inspector when it is on."""
        tap = self.tap
        if tap is None:
            return count

        def pinged() -> None:
            count()
            tap.client_write(PING, origin="heartbeat")

        return pinged

    def _on_stall(self) -> None:
        """The client has not taken a write for the stall timeout: drop it (the handler then ends)."""
        self._stalled = True
        self.sink.abort()

    def stalled_at_end(self) -> None:
        """The client did not take the end of its answer in time and was dropped (end_response)."""
        self._count_fault("client_stalled", None)

    def _client_gone(self, outcome: str) -> None:
        """The client is gone: cancel the upstream now and give followers a cancelled terminal."""
        if self._stalled:
            outcome = "client_stalled"
            self._count_fault("client_stalled", None)
        self.outcome = outcome
        if self.upstream is not None:
            self.upstream.abort()
        tail = self.translator.abort(Terminal(status="cancelled"))
        if self.log is not None and tail:
            self.log.append(tail)
        self.state.cancel_upstream(self.route, self.upstream)

    def _count_fault(self, code: str, info: UpstreamFault | None) -> None:
        metrics = self.state.metrics
        metrics.faults.labels(self.route.name, code).inc()
        fault = FAULTS.get(code)
        if fault is not None and fault.translation:
            metrics.translation_errors.labels(self.route.name, code).inc()
        if self.tap is not None:
            self.tap.fault(code, info.detail if info is not None else self._bad_frame)
        log_event(
            logging.WARNING,
            "stream_fault",
            route=self.route.name,
            stream=self.stream_id,
            code=code,
            http_status=info.http_status if info is not None else None,
            detail=info.detail if info is not None else "",
        )

    def _trailing(self, exc: StreamError) -> None:
        """Bytes after the upstream's terminal end nothing: counted and logged (an OpenAI-style
        ``[DONE]`` sentinel only at debug level)."""
        self.state.metrics.trailing_frames.labels(self.route.name).inc()
        level = logging.DEBUG if exc.raw.strip() == b"[DONE]" else logging.INFO
        log_event(
            level,
            "upstream_trailing_bytes",
            route=self.route.name,
            stream=self.stream_id,
            frame=exc.frame,
            offset=exc.offset,
        )

    def _log_stream_error(self, exc: StreamError) -> None:
        if self.tap is not None:  # (the page redacts; the log line never carries the frame's text)
            self._bad_frame = str(exc)
        log_event(
            logging.WARNING,
            "upstream_frame_error",
            route=self.route.name,
            stream=self.stream_id,
            codec=exc.codec,
            frame=exc.frame,
            offset=exc.offset,
        )

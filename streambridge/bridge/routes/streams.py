"""What a chat over HTTP and one over WebSocket share: the translator, the run's log, the
upstream stream, the relay and running it, and remembering what the run ended asking."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from ... import Translator, codecs
from ...codecs.framing import Framing
from ...codecs.requests import ResumeEntry
from ...inspector import StreamFacts
from ..asks import Resumer
from ..config import safe_url
from ..logging import log_event
from ..relay import Relay, Sink
from ..runlog import RunInfo, RunWriter, identity
from ..runlog.threads import ThreadKey, ThreadMapUnavailable
from ..state import BridgeState
from ..surfaces import secret_values, upstream_headers
from ..upstream import Upstream, open_upstream
from .mounted import Mounted
from .requests import chat_key
from .upstream_request import Prepared, Threads

__all__ = ["THREAD_MAP_UNAVAILABLE", "StreamRoute", "ThreadMapUnavailable"]

_ACCEPT = {"sse": "text/event-stream", "ndjson": "application/x-ndjson"}
#: what a client is told when the upstream's thread of its conversation cannot be looked up
THREAD_MAP_UNAVAILABLE = "The proxy cannot reach its conversation store. Please try again."


class StreamRoute(Mounted):
    """The base of the routes that start a stream: a client's request in, the relay running."""

    def _translator(self, framing: Framing) -> Translator:
        route = self.route
        source_framing = route.source_framing
        if source_framing is None and route.upstream.startswith(("ws://", "wss://")):
            source_framing = "ndjson"
        translator = Translator(
            route.source,
            route.target,
            source_framing=source_framing,
            target_framing=framing,
            strict=True,
            max_event_size=route.max_frame_bytes,
            fidelity=route.fidelity,
        )
        if self._asks_by_ending():  # what the run asks is kept; held when the client answers in the stream
            translator.collect_asks(hold=not self.surface.answers_in_next_request)
        return translator

    def _asks_by_ending(self) -> bool:
        """The upstream's runs end to ask and the client speaks another protocol: the proxy
        carries the answers between the two (asks.py)."""
        return self.source.interrupt_id is not None and self.route.source != self.route.target

    def _threads(self, state: BridgeState, request: web.Request) -> Threads | None:
        """Where this client's conversations find the upstream's own threads (None: the
        upstream takes the client's conversation ids as they are)."""
        if state.threads is None or not self.source.server_threads:
            return None
        return Threads(state.threads, identity(request.headers, state.config.owner_header))

    def _watch_thread(
        self, state: BridgeState, request: web.Request, translator: Translator, prepared: Prepared
    ) -> None:
        """Remember the thread the upstream's run start names as the conversation's (a
        conversation the client did not name is then known by that id), and tell the client
        its own conversation id there."""
        threads = self._threads(state, request)
        if threads is None:
            return
        route = self.route.name

        def seen(thread: str) -> None:
            if thread == prepared.upstream_thread:
                return
            key = prepared.conversation or ThreadKey(route, threads.owner, thread)
            task = asyncio.get_running_loop().create_task(threads.map.put(key, thread))
            state.background.add(task)
            task.add_done_callback(state.background.discard)
            prepared.remembering.append(task)

        translator.name_thread(prepared.thread_id, seen)

    def _log_thread_map_unavailable(self, exc: ThreadMapUnavailable) -> None:
        log_event(logging.WARNING, "thread_map_unavailable", route=self.route.name, error=str(exc))

    def _asked(self, state: BridgeState) -> Callable[[str], dict[str, str]] | None:
        """What a thread's last run asked of a client, in the upstream's interrupt ids by tool call."""
        if self.source.interrupt_id is None:
            return None
        return lambda thread: state.upstream_asks.get((self.route.name, thread), {})

    async def _begin_log(
        self, state: BridgeState, request: web.Request, run_id: str, framing: Framing, thread_id: str | None
    ) -> RunWriter | None:
        """The run's log (None without one): its output, numbered, for readers on any instance."""
        if state.runlog is None:
            return None
        owner = identity(request.headers, state.config.owner_header)
        info = RunInfo(
            run_id=run_id,
            route=self.route.name,
            owner=owner,
            instance=state.runlog.instance,
            target=self.route.target,
            framing=framing,
            skip_named=framing == "sse" and self.surface.unnumbered_named_frames,
            chat_id=chat_key(owner, thread_id or "") if self.surface.resume_path is not None else "",
            fidelity=self.route.fidelity,
        )
        return await state.runlog.begin(info)

    def _upstream(self, state: BridgeState, request: web.Request, prepared: Prepared) -> Upstream:
        route = self.route
        source_framing = route.source_framing or codecs.get(route.source).default_framing
        headers = upstream_headers(
            request.headers,
            route.headers,
            accept=_ACCEPT[source_framing],
            forward_auth=route.forward_auth,
            content_type=prepared.content_type,
            forward=route.forward_headers,
        )
        assert state.session is not None
        url = self.source.upstream_chat_url(route.upstream)
        return open_upstream(state.session, route, url, prepared.body, headers, state.limit, self.source.run_id_header)

    def _relay(
        self,
        state: BridgeState,
        request: web.Request,
        prepared: Prepared,
        translator: Translator,
        sink: Sink,
        stream_id: str,
        log: RunWriter | None,
    ) -> Relay:
        """The stream's relay, registered as live (what a cancel by run id interrupts)."""
        grace = self.route.resume_grace if log is not None and self.route.resume_grace > 0 else None
        resumer = self._resumer(state, request, prepared, translator)
        relay = Relay(state, self.route, translator, sink, stream_id=stream_id, log=log, grace=grace, resumer=resumer)
        state.live[stream_id] = relay
        return relay

    def _resumer(
        self, state: BridgeState, request: web.Request, prepared: Prepared, translator: Translator
    ) -> Resumer | None:
        """How a run that ends to ask goes on in this client's stream (None when it need not)."""
        interrupt_id, source = self.source.interrupt_id, self.source
        if interrupt_id is None or not translator.holds_asks:
            return None

        def reopen(entries: list[ResumeEntry]) -> Upstream:
            req = source.parse_request(prepared.body)
            req.resume = entries
            body = source.build_request(req)
            return self._upstream(state, request, Prepared(body, "application/json", prepared.thread_id))

        owner = identity(request.headers, state.config.owner_header)
        return Resumer(interrupt_id, reopen, self.route.approval_timeout, owner)

    def _inspect(
        self, state: BridgeState, request: web.Request, relay: Relay, framing: Framing, transport: str
    ) -> None:
        """With the inspector on, the stream is captured for it (never a credential: the values
        of the route's upstream headers and the client's credential-like ones are redacted)."""
        if state.inspector is None:
            return
        route = self.route
        facts = StreamFacts(
            route=route.name,
            path=request.path,
            source=route.source,
            target=route.target,
            framing=framing,
            transport=transport,
            upstream=safe_url(route.upstream),
            source_framing=route.source_framing,
            fidelity=route.fidelity,
            conversation=relay.translator.thread_name,
        )
        relay.tap = state.inspector.open(relay.stream_id, facts, secret_values(route.headers, request.headers))
        relay.tap.count_events = lambda: relay.translator.events_in

    async def _relayed(
        self, state: BridgeState, relay: Relay, upstream: Upstream, preamble: bytes, prepared: Prepared
    ) -> None:
        """Relay the run; its client's response ends only once its log's end and the upstream's
        thread of its conversation are stored (a client that saw its end finds both)."""
        try:
            await relay.run(upstream, preamble)
            if prepared.remembering:
                await asyncio.gather(*prepared.remembering)
            if relay.log is not None:
                await relay.log.ended()
        finally:
            self._remember_asks(state, prepared.thread_id, relay)
            if state.live.get(relay.stream_id) is relay:
                del state.live[relay.stream_id]

    @staticmethod
    async def _run(state: BridgeState, relay: Relay, work: Coroutine[Any, Any, None]) -> None:
        """Relay in the handler; a run that outlives its client in a task of its own, which the
        handler's cancellation (its client went away) does not reach."""
        if relay.grace is None:
            await work
            return
        task = asyncio.get_running_loop().create_task(work)
        state.background.add(task)
        task.add_done_callback(state.background.discard)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            relay.lose_client()
            raise

    def _remember_asks(self, state: BridgeState, thread_id: str | None, relay: Relay) -> None:
        """What the thread's run ended asking: in the client's interrupt ids (the client's next
        resume must answer them all) and in the upstream's (a client answering by call)."""
        if not thread_id:
            return
        asked = self.surface.asked_interrupts
        if asked is not None:  # (a run cut short asked nothing)
            state.asked(self.route.name, thread_id, asked(relay.last_write))
        interrupt_id = self.source.interrupt_id
        if interrupt_id is not None and relay.resumer is None:
            asks = relay.translator.asks if relay.translator.terminal is not None else []
            state.upstream_asked(self.route.name, thread_id, {ask.call_id: interrupt_id(ask) for ask in asks})

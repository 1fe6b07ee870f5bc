"""The aiohttp application: per-route downstream surfaces (SSE, NDJSON, WebSocket), health, metrics.

Run it with ``handler_cancellation=True`` (``serve`` and the tests do): a client that goes away
then cancels its handler at once, and with it the upstream request. Shutdown stops accepting,
lets open streams finish for ``drain_timeout`` seconds, then ends the rest with a terminal event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec
from aiohttp import WSCloseCode, WSMsgType, web

from .. import Translator, codecs
from ..codecs.framing import Framing
from ..codecs.http import HttpSurface
from ..codecs.requests import BadRequest, ChatRequest, ResumeEntry, check_depth, check_id, decision_entry
from ..events import UNSET, RunStart
from ..inspector import Inspector, StreamFacts
from ..inspector.web import mount
from .asks import Resumer
from .buffers import bound_client
from .config import Config, Route, safe_url
from .faults import FAULTS, fault_for_status
from .logging import log_event, setup_logging
from .metrics import CONTENT_TYPE_LATEST
from .relay import PING, ClientGone, HttpSink, Relay, Sink, Watchdog, WsSink
from .runlog import Gap, RunInfo, RunWriter, after_key, identity, open_run_log
from .state import STATE, BridgeState
from .surfaces import secret_values, upstream_headers
from .upstream import ConnectionLimit, Upstream, make_session, open_upstream

__all__ = ["STATE", "BindError", "BridgeState", "create_app", "run_app"]

_CONTROL_BODY_LIMIT = 64 * 1024
_WS_REQUEST_TIMEOUT = 30.0
_ACCEPT = {"sse": "text/event-stream", "ndjson": "application/x-ndjson"}
#: the response header naming a stream's run on a proxy with a run log (for ``runs/<id>/stream``)
RUN_ID_HEADER = "X-Streambridge-Run-Id"


def _valid_id(value: str) -> bool:
    """A path id goes into logs and replies: printable and bounded (see surfaces.check_id)."""
    try:
        check_id(value, "runId")
    except BadRequest:
        return False
    return True


# -- helpers -------------------------------------------------------------------------------


def _owner(state: BridgeState, request: web.Request, info: RunInfo) -> bool:
    """Whether the request comes from the identity that started the run."""
    return secrets.compare_digest(info.owner, identity(request.headers, state.config.owner_header))


class _TooLarge(Exception):
    pass


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes without reading them all."""
    if request.content_length is not None and request.content_length > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        parts.append(chunk)
    return b"".join(parts)


def json_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = msgspec.json.encode({"statusCode": status, "code": code, "message": message})
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)


def cors_headers(route: Route, request: web.Request) -> dict[str, str]:
    origin = request.headers.get("Origin")
    if not origin or not route.cors_origins:
        return {}
    if "*" in route.cors_origins:
        allowed = "*"
    elif origin in route.cors_origins:
        allowed = origin
    else:
        return {}
    return {
        "Access-Control-Allow-Origin": allowed,
        "Vary": "Origin",
        "Access-Control-Expose-Headers": f"X-Agent-Run-Id, X-Agent-Thread-Id, {RUN_ID_HEADER}",
    }


def stream_headers(route: Route, request: web.Request, framing: Framing) -> dict[str, str]:
    headers = codecs.get(route.target).stream_headers(framing)
    headers.update(cors_headers(route, request))
    return headers


def negotiate_framing(route: Route, accept: str | None) -> Framing:
    """The route's framing, else what the client accepts, else the target protocol's default."""
    if route.target_framing:
        return route.target_framing
    accept = (accept or "").lower()
    if "text/event-stream" in accept:
        return "sse"
    if "ndjson" in accept:
        return "ndjson"
    return codecs.get(route.target).default_framing


@dataclass
class Prepared:
    body: bytes
    content_type: str
    thread_id: str | None


def prepare_request(
    route: Route, body: bytes, content_type: str, asked: Callable[[str], dict[str, str]] | None = None
) -> Prepared:
    """The upstream request body for a client request (translated unless passthrough or same
    protocol). A client whose protocol has runs is told a thread id: minted when it gave none.
    ``asked(thread)`` gives the upstream interrupt ids of what the thread's last run asked, by
    tool call: answers the client gave by call (AI SDK approval responses) are sent by them."""
    check_depth(body)  # forwarded unchanged or not, nothing deeper goes on
    client, upstream = codecs.get(route.target).http, codecs.get(route.source).http
    mint_thread = client.runs is not None
    if route.request_mode == "passthrough" or route.source == route.target:
        thread = client.peek_thread_id(body)
        if thread is None and mint_thread:
            thread = "thr-" + uuid.uuid4().hex[:12]
        return Prepared(body, content_type or "application/json", thread)
    req = client.parse_request(body)
    if req.thread_id is None and mint_thread:
        req.thread_id = "thr-" + uuid.uuid4().hex[:12]
    if req.resume and asked is not None and req.thread_id:
        answer_by_call(req, asked(req.thread_id))
    return Prepared(upstream.build_request(req), "application/json", req.thread_id)


def answer_by_call(req: ChatRequest, interrupts: dict[str, str]) -> None:
    """Answers a client gave by tool call (AI SDK approval responses) sent as answers to the
    upstream's interrupts: by their ids, and every interrupt the client left unanswered (one its
    protocol cannot answer, such as an elicitation) cancelled, as a resume list covers them all."""
    for entry in req.resume:
        if entry.tool_call_id in interrupts:
            entry.interrupt_id = interrupts[entry.tool_call_id]
    answered = {entry.interrupt_id for entry in req.resume}
    for call_id, interrupt in interrupts.items():
        if interrupt not in answered:
            req.resume.append(decision_entry(interrupt, False, "not answered by the client", tool_call_id=call_id))


def make_translator(route: Route, framing: Framing) -> Translator:
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
    )
    if asks_by_ending(route):  # what the run asks is kept; held when the client answers in the stream
        translator.collect_asks(hold=not codecs.get(route.target).http.answers_in_next_request)
    return translator


def asks_by_ending(route: Route) -> bool:
    """The upstream's runs end to ask (AG-UI interrupts) and the client speaks another protocol:
    the proxy carries the answers between the two (asks.py)."""
    return codecs.get(route.source).http.interrupt_id is not None and route.source != route.target


# -- per-route handlers --------------------------------------------------------------------


class RouteHandlers:
    """The routes of one mounted translation: the client protocol's HTTP surface, served."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.surface: HttpSurface = codecs.get(route.target).http

    def register(self, router: web.UrlDispatcher) -> None:
        p, surface = self.route.path, self.surface
        router.add_post(p + surface.chat_path, self.chat)
        if not surface.chat_path and p != "/":
            router.add_post(p.rstrip("/"), self.chat)
        if surface.runs is not None:
            router.add_get(p + surface.runs.stream_path, self.attach)
            router.add_post(p + surface.runs.cancel_path, self.cancel)
        router.add_get(p + "runs/{run_id}/stream", self.attach)
        router.add_post(p + "runs/{run_id}/cancel", self.cancel)
        if surface.resume_path is not None:
            router.add_get(p + surface.resume_path, self.resume)
            router.add_delete(p + surface.resume_path, self.stop_chat)
        router.add_post(p + surface.control_path.replace("{decision}", "{decision:approve|reject}"), self.decide)
        router.add_get(p + "ws", self.websocket)
        if self.route.cors_origins:
            router.add_route("OPTIONS", p + "{tail:.*}", self.preflight)

    # -- chat over HTTP ----------------------------------------------------------------------

    async def chat(self, request: web.Request) -> web.StreamResponse:
        state = request.app[STATE]
        route = self.route
        cors = cors_headers(route, request)
        if state.draining:
            return json_error(503, "shutting_down", FAULTS["shutting_down"].message, cors)
        try:
            body = await read_body(request, route.max_request_bytes)
            prepared = prepare_request(route, body, request.headers.get("Content-Type", ""), self._asked(state))
            self._check_answers(state, body, prepared.thread_id)
        except _TooLarge:
            return json_error(413, "request_too_large", "The request body is larger than this route accepts.", cors)
        except BadRequest as exc:
            return json_error(400, "bad_request", str(exc)[:300], cors)
        framing = negotiate_framing(route, request.headers.get("Accept"))
        translator = make_translator(route, framing)
        headers = stream_headers(route, request, framing)
        preamble = b""
        stream_id = secrets.token_hex(6)
        runs = self.surface.runs
        if runs is not None:  # the proxy's run: its ids in headers and a run start before anything else
            stream_id = str(uuid.uuid4())
            headers[runs.run_id_header] = stream_id
            headers[runs.thread_id_header] = prepared.thread_id or ""
            preamble = translator.feed_events([RunStart(run_id=stream_id, thread_id=prepared.thread_id or "")])
        elif state.runlog is not None:
            stream_id = str(uuid.uuid4())
        log = await self._begin_log(state, request, stream_id, framing, prepared.thread_id)
        if log is not None:
            headers[RUN_ID_HEADER] = stream_id
        resp = web.StreamResponse(status=self.surface.chat_status, headers=headers)
        await resp.prepare(request)
        bound_client(request.transport, route.stream_buffer_bytes)
        upstream = self._upstream(state, request, prepared)
        sink = HttpSink(request, resp, framing)
        resumer = self._resumer(state, request, prepared, translator)
        relay = self._relay(state, translator, sink, stream_id, log, resumer)
        self._inspect(state, request, relay, framing, "http")
        log_event(logging.INFO, "stream_start", route=route.name, stream=stream_id, upstream=safe_url(route.upstream))
        await self._run(state, relay, self._relayed(state, relay, upstream, preamble, prepared.thread_id))
        if not relay.client_lost:
            with contextlib.suppress(ConnectionError):
                await resp.write_eof()
        return resp

    async def _begin_log(
        self, state: BridgeState, request: web.Request, run_id: str, framing: Framing, thread_id: str | None
    ) -> RunWriter | None:
        """The run's log (None without one): its output, numbered, for readers on any instance."""
        if state.runlog is None:
            return None
        chat_id = thread_id or "" if self.surface.resume_path is not None else ""
        info = RunInfo(
            run_id=run_id,
            route=self.route.name,
            owner=identity(request.headers, state.config.owner_header),
            instance=state.runlog.instance,
            target=self.route.target,
            framing=framing,
            skip_named=framing == "sse" and self.surface.unnumbered_named_frames,
            chat_id=chat_id,
        )
        return await state.runlog.begin(info)

    def _relay(
        self,
        state: BridgeState,
        translator: Translator,
        sink: Sink,
        stream_id: str,
        log: RunWriter | None,
        resumer: Resumer | None,
    ) -> Relay:
        grace = self.route.resume_grace if log is not None and self.route.resume_grace > 0 else None
        relay = Relay(state, self.route, translator, sink, stream_id=stream_id, log=log, grace=grace, resumer=resumer)
        state.live[stream_id] = relay
        return relay

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
        )
        relay.tap = state.inspector.open(relay.stream_id, facts, secret_values(route.headers, request.headers))
        relay.tap.count_events = lambda: relay.translator.events_in

    async def _relayed(
        self, state: BridgeState, relay: Relay, upstream: Upstream, preamble: bytes, thread_id: str | None
    ) -> None:
        try:
            await relay.run(upstream, preamble)
            if relay.log is not None:
                await relay.log.ended()
        finally:
            self._remember_asks(state, thread_id, relay)
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
        """What the thread's run ended asking: in the client's interrupt ids (an AG-UI client's
        next resume must answer them all) and in the upstream's (a client answering by call)."""
        if not thread_id:
            return
        asked = self.surface.asked_interrupts
        if asked is not None:  # (a run cut short asked nothing)
            state.asked(self.route.name, thread_id, asked(relay.last_write))
        interrupt_id = codecs.get(self.route.source).http.interrupt_id
        if interrupt_id is not None and relay.resumer is None:
            asks = relay.translator.asks if relay.translator.terminal is not None else []
            state.upstream_asked(self.route.name, thread_id, {ask.call_id: interrupt_id(ask) for ask in asks})

    def _asked(self, state: BridgeState) -> Callable[[str], dict[str, str]] | None:
        if codecs.get(self.route.source).http.interrupt_id is None:
            return None
        return lambda thread: state.upstream_asks.get((self.route.name, thread), {})

    def _resumer(
        self, state: BridgeState, request: web.Request, prepared: Prepared, translator: Translator
    ) -> Resumer | None:
        """How a run that ends to ask goes on in this client's stream (None when it need not)."""
        interrupt_id = codecs.get(self.route.source).http.interrupt_id
        if interrupt_id is None or not translator.holds_asks:
            return None
        source = codecs.get(self.route.source).http

        def reopen(entries: list[ResumeEntry]) -> Upstream:
            req = source.parse_request(prepared.body)
            req.resume = entries
            body = source.build_request(req)
            return self._upstream(state, request, Prepared(body, "application/json", prepared.thread_id))

        return Resumer(interrupt_id, reopen, self.route.approval_timeout)

    def _check_answers(self, state: BridgeState, body: bytes, thread_id: str | None) -> None:
        """A request that resumes a thread whose last run ended asking (AG-UI interrupts) must
        answer every interrupt: an incomplete resume list is refused before anything goes upstream."""
        if self.surface.asked_interrupts is None or not thread_id:
            return
        if not state.interrupts.get((self.route.name, thread_id)):
            return
        resume = self.surface.parse_request(body).resume
        if not resume:
            return  # a new message, not an answer
        missing = state.unanswered(self.route.name, thread_id, {entry.interrupt_id for entry in resume})
        if missing:
            raise BadRequest(
                "resume: every interrupt of the thread's last run must be answered; missing " + ", ".join(missing)[:200]
            )

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
        url = codecs.get(route.source).http.upstream_chat_url(route.upstream)
        return open_upstream(state.session, route, url, prepared.body, headers, state.limit)

    # -- runs (re-attach, cancel); approve / reject ----------------------------------------------

    async def attach(self, request: web.Request) -> web.StreamResponse:
        """``GET …/runs/<runId>/stream`` (and nest's ``chat/<runId>/stream``): the run's frames
        after the client's cursor (``?after=`` or ``Last-Event-ID``; from the start without one),
        then live ones, then its end."""
        state = request.app[STATE]
        cors = cors_headers(self.route, request)
        run_id = request.match_info["run_id"]
        if not _valid_id(run_id):
            return json_error(400, "bad_request", "runId: expected a printable id of at most 256 characters", cors)
        try:
            after = after_key(request.query.get("after", request.headers.get("Last-Event-ID")))
        except ValueError:
            return json_error(400, "bad_request", "after / Last-Event-ID: expected a non-negative integer", cors)
        info = await self._owned_run(state, request, run_id)
        if info is None:
            return json_error(404, "not_found", f"no run {run_id[:80]}", cors)
        head = b""
        headers = stream_headers(self.route, request, info.framing)
        headers[RUN_ID_HEADER] = run_id
        runs = self.surface.runs
        if runs is not None:  # a run start again, naming only the run (as nest's re-attach does)
            headers[runs.run_id_header] = run_id
            start = RunStart(run_id=run_id, resumed=True)
            head = codecs.get(self.route.target).encoder(info.framing).encode([start])
        return await self._follow(request, info, after, headers, head)

    async def resume(self, request: web.Request) -> web.StreamResponse:
        """``GET <chat>/<chatId>/stream``: the chat's live run again, from its start; ``204`` when
        none is active (finished, never started, or its log expired)."""
        state, cors, chat_id = request.app[STATE], cors_headers(self.route, request), request.match_info["chat_id"]
        run_id = await self._chat_run(state, chat_id)
        if isinstance(run_id, web.Response):
            return run_id
        info = await state.runlog.lookup(run_id) if state.runlog is not None and run_id else None
        if info is None or info.finished:
            return web.Response(status=204, headers=cors)
        if not _owner(state, request, info):
            return json_error(404, "not_found", f"no chat {chat_id[:80]}", cors)
        headers = stream_headers(self.route, request, info.framing)
        headers[RUN_ID_HEADER] = info.run_id
        return await self._follow(request, info, 0, headers, b"")

    async def _chat_run(self, state: BridgeState, chat_id: str) -> str | web.Response | None:
        """The latest run of a chat (None: none logged), or the 400 for an id that cannot be one."""
        if not _valid_id(chat_id):
            return json_error(400, "bad_request", "chatId: expected a printable id of at most 256 characters")
        return await state.runlog.chat_run(self.route.name, chat_id) if state.runlog is not None else None

    async def _owned_run(self, state: BridgeState, request: web.Request, run_id: str) -> RunInfo | None:
        """The run's info, when it is logged on this route and the request comes from its owner."""
        if state.runlog is None:
            return None
        info = await state.runlog.lookup(run_id)
        if info is None or info.route != self.route.name:
            return None
        if not _owner(state, request, info):
            return None  # another identity's run: as if there were none
        return info

    async def _follow(
        self, request: web.Request, info: RunInfo, after: int, headers: dict[str, str], head: bytes
    ) -> web.StreamResponse:
        """Stream a logged run to one more reader: ``head``, the frames after key ``after``, live
        ones, the end. A reader that falls behind what the log keeps is cut off (it may resume)."""
        state = request.app[STATE]
        route = self.route
        runlog = state.runlog
        assert runlog is not None
        try:
            await runlog.check(info, after)
        except Gap:
            return json_error(404, "not_found", "the run's frames after this cursor are no longer kept")
        resp = web.StreamResponse(status=200, headers=headers)
        sink = HttpSink(request, resp, info.framing)
        watchdog = Watchdog(
            sink,
            route.heartbeat,
            route.client_stall_timeout,
            state.metrics.heartbeats.labels(route.name).inc,
            sink.abort,
        )
        dog_task = asyncio.create_task(watchdog.run())
        state.metrics.open_streams.labels(route.name).inc()
        try:
            await resp.prepare(request)
            bound_client(request.transport, route.stream_buffer_bytes)
            await watchdog.write(head + (PING if watchdog.interval else b""))
            async for data in runlog.read(info, after):
                await watchdog.write(data)
            with contextlib.suppress(ConnectionError):
                await resp.write_eof()
        except Gap:  # it fell behind what the log keeps: cut it off (it may resume)
            state.metrics.followers_dropped.labels(route.name).inc()
            log_event(logging.INFO, "follower_dropped", route=route.name, stream=info.run_id)
            sink.abort()
        except (ClientGone, ConnectionError):  # the reader went away: the run goes on
            log_event(logging.INFO, "attach_end", route=route.name, stream=info.run_id)
        finally:
            dog_task.cancel()
            state.metrics.open_streams.labels(route.name).dec()
        return resp

    async def cancel(self, request: web.Request) -> web.Response:
        """``POST …/runs/<runId>/cancel`` (and nest's ``chat/<runId>/cancel``), on any instance."""
        state = request.app[STATE]
        run_id = request.match_info["run_id"]
        cors = cors_headers(self.route, request)
        if not _valid_id(run_id):
            return json_error(400, "bad_request", "runId: expected a printable id of at most 256 characters", cors)
        if not await self._cancel(state, request, run_id):
            return json_error(404, "not_found", f"no active run {run_id[:80]}", cors)
        log_event(logging.INFO, "stream_cancel", route=self.route.name, stream=run_id)
        runs = self.surface.runs
        if runs is None:
            return web.json_response({"cancelled": True}, headers=cors)
        return web.json_response(runs.cancel_answer, status=runs.cancel_status, headers=cors)

    async def stop_chat(self, request: web.Request) -> web.Response:
        """``DELETE <chat>/<chatId>/stream``: stop the chat's live run (an AI SDK client's stop,
        which a dropped connection no longer means), on any instance."""
        state, cors, chat_id = request.app[STATE], cors_headers(self.route, request), request.match_info["chat_id"]
        run_id = await self._chat_run(state, chat_id)
        if isinstance(run_id, web.Response):
            return run_id
        if run_id is None or not await self._cancel(state, request, run_id):
            return json_error(404, "not_found", f"no active chat {chat_id[:80]}", cors)
        log_event(logging.INFO, "stream_cancel", route=self.route.name, stream=run_id)
        return web.Response(status=204, headers=cors)

    async def _cancel(self, state: BridgeState, request: web.Request, run_id: str) -> bool:
        """Cancel a live run of this route's: here, or on the instance that owns it."""
        if state.runlog is None:  # no log: only this instance's runs, owned by no one
            relay = state.live.get(run_id)
            return relay is not None and relay.route is self.route and state.cancel_live(run_id)
        info = await self._owned_run(state, request, run_id)
        if info is None or info.finished:
            return False
        return await state.runlog.cancel(info)

    async def decide(self, request: web.Request) -> web.Response:
        """``tool-call/approve|reject {toolCallId, reason?}``, forwarded to the upstream's control route."""
        state = request.app[STATE]
        route = self.route
        decision = request.match_info["decision"]
        cors = cors_headers(route, request)
        try:
            body = await read_body(request, _CONTROL_BODY_LIMIT)
            check_depth(body, "decision")
            decoded = msgspec.json.decode(body)
            if not isinstance(decoded, dict) or not isinstance(decoded.get("toolCallId"), str):
                raise BadRequest("toolCallId (a string) is required.")
            check_id(decoded["toolCallId"], "toolCallId")
        except _TooLarge:
            return json_error(413, "request_too_large", "The request body is too large.", cors)
        except msgspec.DecodeError:
            return json_error(400, "bad_request", "The body is not JSON.", cors)
        except BadRequest as exc:
            return json_error(400, "bad_request", str(exc)[:300], cors)
        pending = state.pending.get((route.name, decoded["toolCallId"]))
        if pending is not None:  # a held run's question: answered into its resume run
            reason, payload = decoded.get("reason"), decoded.get("payload")
            pending.answer(
                decoded["toolCallId"], decision == "approve", reason if isinstance(reason, str) else None, payload
            )
            log_event(logging.INFO, "control", route=route.name, decision=decision, status="answered")
            return web.json_response({"ok": True}, status=self.surface.control_status, headers=cors)
        source = codecs.get(route.source).http
        if source.interrupt_id is not None:
            return json_error(404, "not_found", "No open run asks about this toolCallId.", cors)
        url = source.control_url(route.upstream, route.control_url, decision)
        if url is None:
            return json_error(501, "not_supported", "This route has no control endpoint upstream.", cors)
        headers = upstream_headers(
            request.headers,
            route.headers,
            accept="application/json",
            forward_auth=route.forward_auth,
            forward=route.forward_headers,
        )
        assert state.session is not None
        try:
            timeout = aiohttp.ClientTimeout(total=route.connect_timeout + route.first_byte_timeout)
            async with state.session.post(url, data=body, headers=headers, timeout=timeout) as resp:
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            log_event(logging.WARNING, "control_failed", route=route.name, decision=decision, error=type(exc).__name__)
            return json_error(502, "upstream_unavailable", FAULTS["upstream_unavailable"].message, cors)
        log_event(logging.INFO, "control", route=route.name, decision=decision, status=status)
        if 200 <= status < 300:
            return web.json_response({"ok": True}, status=self.surface.control_status, headers=cors)
        code = fault_for_status(status)
        return json_error(status if 400 <= status < 500 else 502, code, FAULTS[code].message, cors)

    async def preflight(self, request: web.Request) -> web.Response:
        headers = cors_headers(self.route, request)
        if not headers:
            return web.Response(status=403)
        asked = request.headers.get("Access-Control-Request-Headers", "content-type, accept")
        headers.update(
            {
                "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
                "Access-Control-Allow-Headers": ", ".join(h.strip() for h in asked.split(",") if h.strip().isascii()),
                "Access-Control-Max-Age": "600",
            }
        )
        return web.Response(status=204, headers=headers)

    # -- WebSocket -----------------------------------------------------------------------------

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        """The client's request is the first message; then one event per text message, then a close."""
        state = request.app[STATE]
        route = self.route
        if state.draining:
            return json_error(503, "shutting_down", FAULTS["shutting_down"].message)
        ws = web.WebSocketResponse(heartbeat=route.heartbeat or None, max_msg_size=route.max_request_bytes)
        run_id = str(uuid.uuid4())  # named in the handshake: a client that lost the socket resumes by it
        if state.runlog is not None:
            ws.headers[RUN_ID_HEADER] = run_id
        await ws.prepare(request)
        bound_client(request.transport, route.stream_buffer_bytes)
        try:
            async with asyncio.timeout(_WS_REQUEST_TIMEOUT):
                msg = await ws.receive()
        except TimeoutError:
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"no request")
            return ws
        if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
            await ws.close()
            return ws
        body = msg.data.encode() if msg.type == WSMsgType.TEXT else msg.data
        try:
            prepared = prepare_request(route, body, "application/json", self._asked(state))
        except BadRequest as exc:
            await ws.close(code=WSCloseCode.INVALID_TEXT, message=str(exc)[:120].encode())
            return ws
        translator = make_translator(route, "ndjson")
        preamble = b""
        stream_id = run_id if self.surface.runs is not None or state.runlog is not None else secrets.token_hex(6)
        if self.surface.runs is not None:
            preamble = translator.feed_events([RunStart(run_id=stream_id, thread_id=prepared.thread_id or UNSET)])
        log = await self._begin_log(state, request, stream_id, "ndjson", prepared.thread_id)
        resumer = self._resumer(state, request, prepared, translator)
        relay = self._relay(state, translator, WsSink(request, ws), stream_id, log, resumer)
        self._inspect(state, request, relay, "ndjson", "ws")
        watcher = asyncio.create_task(self._watch(ws, relay))
        upstream = self._upstream(state, request, prepared)
        try:
            await self._run(state, relay, self._relayed(state, relay, upstream, preamble, prepared.thread_id))
        finally:
            watcher.cancel()
        if not ws.closed and not relay.client_lost:
            code = WSCloseCode.GOING_AWAY if relay.outcome == "shutting_down" else WSCloseCode.OK
            await ws.close(code=code)
        return ws

    @staticmethod
    async def _watch(ws: web.WebSocketResponse, relay: Relay) -> None:
        """Client messages after the request: ``{"type":"cancel"}`` cancels; a close ends the
        stream, or, for a run that outlives its client, leaves it to its readers."""
        async for msg in ws:
            if msg.type == WSMsgType.TEXT and '"cancel"' in msg.data:
                with contextlib.suppress(msgspec.DecodeError):
                    if msgspec.json.decode(msg.data) == {"type": "cancel"}:
                        relay.interrupt("cancelled")
        if relay.grace is None:
            relay.interrupt("client_gone")
        else:
            relay.lose_client()


# -- app -----------------------------------------------------------------------------------


async def healthz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = {"status": "draining" if state.draining else "ok", "openStreams": len(state.relays)}
    return web.json_response(body, status=503 if state.draining else 200)


async def metrics_handler(request: web.Request) -> web.Response:
    body = request.app[STATE].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _session_ctx(app: web.Application) -> AsyncIterator[None]:
    state = app[STATE]
    config = state.config
    state.runlog = open_run_log(
        config.run_log,
        state.instance,
        run_bytes=max(r.replay_limit_bytes for r in config.routes),
        route_bytes={r.name: r.replay_limit_bytes for r in config.routes},
        total_bytes=config.run_log_bytes,
        ttl=config.run_log_ttl,
        lease=config.run_log_lease,
        maxlen=config.run_log_maxlen,
    )
    if state.runlog is not None:
        await state.runlog.start(state.cancel_live)
    state.session = make_session(state.config.upstream_keepalive)
    metrics = state.metrics
    state.limit = ConnectionLimit(
        state.config.max_upstream_connections, metrics.upstream_connections, metrics.connection_limit_refusals
    )
    yield
    await state.session.close()
    if state.runlog is not None:
        await state.runlog.stop()


async def _drain(app: web.Application) -> None:
    """Stop taking streams, let open ones finish for ``drain_timeout``, then end them with a terminal.

    Run while the listener is still open (see :func:`run_app`), so ``/healthz`` answers 503 and
    new streams are refused with 503 during the drain; a second call does nothing."""
    state = app[STATE]
    if state.draining:
        return
    state.draining = True
    if state.never_listened:
        return
    log_event(logging.INFO, "draining", open_streams=len(state.relays))
    await _wait_idle(state, state.config.drain_timeout)
    for relay in list(state.relays):
        relay.interrupt("shutting_down")
    await _wait_idle(state, 5.0)
    if state.background:
        await asyncio.wait(list(state.background), timeout=5.0)


async def _wait_idle(state: BridgeState, timeout: float) -> None:
    if not state.relays:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await state.idle.wait()


def create_app(config: Config) -> web.Application:
    """The proxy as an aiohttp app. Serve it with ``handler_cancellation=True`` (see :func:`run_app`)."""
    limit = max(r.max_request_bytes for r in config.routes)
    app = web.Application(client_max_size=limit + 1024)
    app[STATE] = BridgeState(config)
    app.cleanup_ctx.append(_session_ctx)
    app.on_shutdown.append(_drain)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_handler)
    for route in config.routes:
        RouteHandlers(route).register(app.router)
    if config.inspect:
        state = app[STATE]
        state.inspector = Inspector(
            config.inspect_streams, config.inspect_stream_bytes, config.inspect_token, config.inspect_bytes
        )
        mount(app, state.inspector)
    return app


class BindError(Exception):
    """The listening socket could not be bound (address in use, no permission, unknown host)."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {error}")
        self.host = host
        self.port = port
        self.error = error


def run_app(config: Config) -> None:
    """Serve until SIGINT / SIGTERM, then drain (blocking). Raises :class:`BindError` when the
    address cannot be bound; the routes and ``listening`` are logged only once it is."""
    setup_logging(config.log_json)
    app = create_app(config)
    with asyncio.Runner() as loop:
        runner = loop.run(_start(app, config))
        try:
            loop.run(_forever())
        except (web.GracefulExit, KeyboardInterrupt):  # SIGTERM, SIGINT
            pass
        finally:
            loop.run(_drain(app))  # still listening: /healthz says 503 while open streams finish
            loop.run(runner.cleanup())  # then stop listening (the drain is done: nothing waits)


async def _start(app: web.Application, config: Config) -> web.AppRunner:
    """What ``web.run_app`` starts, for one TCP site, announced once its socket is bound."""
    runner = web.AppRunner(app, handle_signals=True, handler_cancellation=True, shutdown_timeout=5.0, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, config.host, config.port).start()
    except OSError as exc:
        app[STATE].never_listened = True
        await runner.cleanup()
        raise BindError(config.host, config.port, exc) from None
    _announce(config, runner.addresses[0])
    return runner


async def _forever() -> None:
    await asyncio.Event().wait()


def _announce(config: Config, address: tuple[Any, ...]) -> None:
    for route in config.routes:
        log_event(
            logging.INFO,
            "route",
            name=route.name,
            path=route.path,
            upstream=safe_url(route.upstream),
            source=route.source,
            target=route.target,
            mode=route.request_mode,
        )
    log_event(logging.INFO, "run_log", backend=safe_url(config.run_log) if "://" in config.run_log else config.run_log)
    if config.inspect:
        host = f"[{address[0]}]" if ":" in str(address[0]) else address[0]
        access = "token" if config.inspect_token else "loopback only"
        log_event(logging.INFO, "inspector", url=f"http://{host}:{address[1]}/_inspect/", access=access)
    log_event(logging.INFO, "listening", host=address[0], port=address[1])

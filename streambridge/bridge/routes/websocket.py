"""A chat over WebSocket (``<path>ws``): the client's request is the first message; then one
event per text message, then a close. ``{"type":"cancel"}`` from the client cancels the run."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid

import msgspec
from aiohttp import WSCloseCode, WSMsgType, web

from ... import Translator
from ...codecs.requests import BadRequest
from ...events import UNSET, RunStart
from ..buffers import bound_client
from ..faults import FAULTS
from ..relay import Relay, WsSink
from ..state import STATE, BridgeState
from .mounted import RUN_ID_HEADER
from .requests import json_error
from .streams import THREAD_MAP_UNAVAILABLE, StreamRoute, ThreadMapUnavailable
from .upstream_request import prepare_request

__all__ = ["WebSocketRoute"]

_REQUEST_TIMEOUT = 30.0


class WebSocketRoute(StreamRoute):
    """The route's WebSocket: the same translation as its chat route, one event per message."""

    async def websocket(self, request: web.Request) -> web.StreamResponse:
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
        body = await self._first_message(ws)
        if body is None:
            return ws
        try:
            prepared = await prepare_request(
                route, body, "application/json", self._asked(state), self._threads(state, request)
            )
        except BadRequest as exc:
            await ws.close(code=WSCloseCode.INVALID_TEXT, message=str(exc)[:120].encode())
            return ws
        except ThreadMapUnavailable as exc:
            self._log_thread_map_unavailable(exc)
            await ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=THREAD_MAP_UNAVAILABLE[:120].encode())
            return ws
        translator = self._translator("ndjson")
        self._watch_thread(state, request, translator, prepared)
        stream_id, preamble = self._open_run(state, translator, run_id, prepared.thread_id)
        log = await self._begin_log(state, request, stream_id, "ndjson", prepared.thread_id)
        relay = self._relay(state, request, prepared, translator, WsSink(request, ws), stream_id, log)
        self._inspect(state, request, relay, "ndjson", "ws")
        watcher = asyncio.create_task(self._watch(ws, relay))
        upstream = self._upstream(state, request, prepared)
        try:
            await self._run(state, relay, self._relayed(state, relay, upstream, preamble, prepared))
        finally:
            watcher.cancel()
        if not ws.closed and not relay.client_lost:
            code = WSCloseCode.GOING_AWAY if relay.outcome == "shutting_down" else WSCloseCode.OK
            await ws.close(code=code)
        return ws

    def _open_run(
        self, state: BridgeState, translator: Translator, run_id: str, thread_id: str | None
    ) -> tuple[str, bytes]:
        """The stream's id (the handshake's run id when it can be re-attached or the client's
        protocol has runs) and, for such a client, the run start that goes before anything else."""
        if self.surface.runs is None:
            return (run_id if state.runlog is not None else secrets.token_hex(6)), b""
        return run_id, translator.feed_events([RunStart(run_id=run_id, thread_id=thread_id or UNSET)])

    @staticmethod
    async def _first_message(ws: web.WebSocketResponse) -> bytes | None:
        """The client's request (None: the socket was closed, or no request came in time)."""
        try:
            async with asyncio.timeout(_REQUEST_TIMEOUT):
                msg = await ws.receive()
        except TimeoutError:
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"no request")
            return None
        if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
            await ws.close()
            return None
        return msg.data.encode() if msg.type == WSMsgType.TEXT else msg.data

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

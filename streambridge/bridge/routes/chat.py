"""``POST`` a chat over HTTP: the client's request goes upstream in the upstream's protocol, and
the upstream's stream comes back translated, in the framing the client accepts."""

from __future__ import annotations

import logging
import secrets
import uuid

from aiohttp import web

from ... import Translator, codecs
from ...codecs.framing import Framing
from ...codecs.requests import BadRequest
from ...events import RunStart
from ..buffers import bound_client
from ..config import Route, safe_url
from ..faults import FAULTS
from ..logging import log_event
from ..relay import HttpSink, end_response
from ..state import STATE, BridgeState
from .mounted import RUN_ID_HEADER
from .requests import TooLarge, json_error, read_body
from .streams import THREAD_MAP_UNAVAILABLE, StreamRoute, ThreadMapUnavailable
from .upstream_request import Prepared, check_answers, prepare_request

__all__ = ["ChatRoute", "negotiate_framing"]


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


class ChatRoute(StreamRoute):
    """The chat route of the client's surface (``chat_path``)."""

    async def chat(self, request: web.Request) -> web.StreamResponse:
        state = request.app[STATE]
        if state.draining:
            return json_error(503, "shutting_down", FAULTS["shutting_down"].message, self.cors.headers(request))
        prepared = await self._prepare(state, request)
        if isinstance(prepared, web.Response):
            return prepared
        framing = negotiate_framing(self.route, request.headers.get("Accept"))
        translator = self._translator(framing)
        self._watch_thread(state, request, translator, prepared)
        headers = self.stream_headers(request, framing)
        stream_id, preamble = self._open_run(state, translator, headers, prepared.thread_id)
        log = await self._begin_log(state, request, stream_id, framing, prepared.thread_id)
        if log is not None:
            headers[RUN_ID_HEADER] = stream_id
        resp = web.StreamResponse(status=self.surface.chat_status, headers=headers)
        await resp.prepare(request)
        bound_client(request.transport, self.route.stream_buffer_bytes)
        sink = HttpSink(request, resp, framing)
        relay = self._relay(state, request, prepared, translator, sink, stream_id, log)
        self._inspect(state, request, relay, framing, "http")
        upstream = self._upstream(state, request, prepared)
        log_event(
            logging.INFO,
            "stream_start",
            route=self.route.name,
            stream=stream_id,
            upstream=safe_url(self.route.upstream),
        )
        await self._run(state, relay, self._relayed(state, relay, upstream, preamble, prepared))
        if not relay.client_lost and not await end_response(resp, sink, self.route.client_stall_timeout):
            relay.stalled_at_end()
        return resp

    async def _prepare(self, state: BridgeState, request: web.Request) -> Prepared | web.Response:
        """The upstream's request, or the error answer to a client request that cannot be one."""
        cors = self.cors.headers(request)
        try:
            body = await read_body(request, self.route.max_request_bytes)
            content_type = request.headers.get("Content-Type", "")
            threads = self._threads(state, request)
            prepared = await prepare_request(self.route, body, content_type, self._asked(state), threads)
            check_answers(state, self.route, body, prepared.thread_id)
        except TooLarge:
            return json_error(413, "request_too_large", "The request body is larger than this route accepts.", cors)
        except BadRequest as exc:
            return json_error(400, "bad_request", str(exc)[:300], cors)
        except ThreadMapUnavailable as exc:
            self._log_thread_map_unavailable(exc)
            return json_error(503, "thread_map_unavailable", THREAD_MAP_UNAVAILABLE, cors)
        return prepared

    def _open_run(
        self, state: BridgeState, translator: Translator, headers: dict[str, str], thread_id: str | None
    ) -> tuple[str, bytes]:
        """The stream's id and what goes before the upstream's output. A client whose protocol has
        runs gets the proxy's run: its ids in its id headers and a run start before anything else."""
        runs = self.surface.runs
        if runs is None:
            return (str(uuid.uuid4()) if state.runlog is not None else secrets.token_hex(6)), b""
        stream_id = str(uuid.uuid4())
        headers[runs.run_id_header] = stream_id
        headers[runs.thread_id_header] = thread_id or ""
        return stream_id, translator.feed_events([RunStart(run_id=stream_id, thread_id=thread_id or "")])

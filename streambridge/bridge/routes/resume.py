"""Reading a logged run again: re-attach to a run by its id (from a cursor), or resume a chat's
live run by the chat's id, on any instance that shares the run log."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from ... import codecs
from ...events import RunStart
from ..buffers import bound_client
from ..logging import log_event
from ..relay import PING, ClientGone, HttpSink, Watchdog, end_response
from ..runlog import Gap, RunInfo, after_key
from ..state import STATE
from .mounted import RUN_ID_HEADER, Mounted
from .requests import chat_run, is_owner, json_error, owned_run, valid_id

__all__ = ["ResumeRoutes"]


class ResumeRoutes(Mounted):
    """``runs/<runId>/stream`` (and the surface's own re-attach route) and the surface's resume route."""

    async def attach(self, request: web.Request) -> web.StreamResponse:
        """``GET …/runs/<runId>/stream`` (and the surface's ``runs.stream_path``): the run's frames
        after the client's cursor (``?after=`` or ``Last-Event-ID``; from the start without one),
        then live ones, then its end."""
        state = request.app[STATE]
        cors = self.cors.headers(request)
        run_id = request.match_info["run_id"]
        if not valid_id(run_id):
            return json_error(400, "bad_request", "runId: expected a printable id of at most 256 characters", cors)
        try:
            after = after_key(request.query.get("after", request.headers.get("Last-Event-ID")))
        except ValueError:
            return json_error(400, "bad_request", "after / Last-Event-ID: expected a non-negative integer", cors)
        info = await owned_run(state, request, self.route, run_id)
        if info is None:
            return json_error(404, "not_found", f"no run {run_id[:80]}", cors)
        headers = self.stream_headers(request, info.framing)
        headers[RUN_ID_HEADER] = run_id
        return await self._follow(request, info, after, headers, self._reattached(info, headers))

    def _reattached(self, info: RunInfo, headers: dict[str, str]) -> bytes:
        """For a client whose protocol has runs: the run's id header, and a run start again that
        names only the run (as such a server says it to a reader joining a run under way)."""
        runs = self.surface.runs
        if runs is None:
            return b""
        headers[runs.run_id_header] = info.run_id
        start = RunStart(run_id=info.run_id, resumed=True)
        return codecs.get(self.route.target).encoder(info.framing).encode([start])

    async def resume(self, request: web.Request) -> web.StreamResponse:
        """``GET <chat>/<chatId>/stream``: the chat's live run again, from its start; ``204`` when
        none is active (finished, never started, or its log expired) and, alike, for another
        identity's chat (no answer tells that a chat exists)."""
        state, cors, chat_id = request.app[STATE], self.cors.headers(request), request.match_info["chat_id"]
        run_id = await chat_run(state, request, self.route, chat_id)
        if isinstance(run_id, web.Response):
            return run_id
        info = await state.runlog.lookup(run_id) if state.runlog is not None and run_id else None
        if info is None or info.finished or not is_owner(state, request, info):
            return web.Response(status=204, headers=cors)
        headers = self.stream_headers(request, info.framing)
        headers[RUN_ID_HEADER] = info.run_id
        return await self._follow(request, info, 0, headers, b"")

    async def _follow(
        self, request: web.Request, info: RunInfo, after: int, headers: dict[str, str], head: bytes
    ) -> web.StreamResponse:
        """Stream a logged run to one more reader: ``head``, the frames after key ``after``, live
        ones, the end (heartbeats and the stall guard as for any stream)."""
        state = request.app[STATE]
        assert state.runlog is not None
        try:
            await state.runlog.check(info, after)
        except Gap:
            return json_error(404, "not_found", "the run's frames after this cursor are no longer kept")
        route = self.route
        resp = web.StreamResponse(status=200, headers=headers)
        sink = HttpSink(request, resp, info.framing)
        heartbeats = state.metrics.heartbeats.labels(route.name).inc
        watchdog = Watchdog(sink, route.heartbeat, route.client_stall_timeout, heartbeats, sink.abort)
        dog_task = asyncio.create_task(watchdog.run())
        open_streams = state.metrics.open_streams.labels(route.name)
        open_streams.inc()
        try:
            await self._read_out(request, resp, watchdog, info, after, head)
        finally:
            dog_task.cancel()
            open_streams.dec()
        return resp

    async def _read_out(
        self, request: web.Request, resp: web.StreamResponse, watchdog: Watchdog, info: RunInfo, after: int, head: bytes
    ) -> None:
        """Write the run's log to the reader until its end. A reader that falls behind what the
        log keeps is cut off (it may resume); one that goes away leaves the run going on."""
        state = request.app[STATE]
        assert state.runlog is not None
        try:
            await resp.prepare(request)
            bound_client(request.transport, self.route.stream_buffer_bytes)
            await watchdog.write(head + (PING if watchdog.interval else b""))
            async for data in state.runlog.read(info, after):
                await watchdog.write(data)
            assert isinstance(watchdog.sink, HttpSink)
            await end_response(resp, watchdog.sink, self.route.client_stall_timeout)
        except Gap:
            state.metrics.followers_dropped.labels(self.route.name).inc()
            log_event(logging.INFO, "follower_dropped", route=self.route.name, stream=info.run_id)
            watchdog.sink.abort()
        except (ClientGone, ConnectionError):
            log_event(logging.INFO, "attach_end", route=self.route.name, stream=info.run_id)

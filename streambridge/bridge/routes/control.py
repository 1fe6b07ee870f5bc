"""Control requests: cancel a run (by its id) or stop a chat's run (by the chat's id), on any
instance; approve or reject a tool call, answered into a held run or sent to the upstream's
control route. Never queued behind streams (see upstream.make_session)."""

from __future__ import annotations

import logging

import aiohttp
from aiohttp import web

from ...codecs.http import Decision
from ...codecs.requests import BadRequest, check_depth
from ..faults import FAULTS, fault_for_status
from ..logging import log_event
from ..runlog import identity
from ..state import STATE, BridgeState
from ..surfaces import upstream_headers
from .mounted import Mounted
from .requests import TooLarge, chat_run, json_error, owned_run, read_body, valid_id

__all__ = ["ControlRoutes"]

_BODY_LIMIT = 64 * 1024


class ControlRoutes(Mounted):
    """``runs/<runId>/cancel`` (and the surface's own), the resume route's ``DELETE``, and the
    surface's control route (``tool-call/approve|reject``)."""

    async def cancel(self, request: web.Request) -> web.Response:
        """``POST …/runs/<runId>/cancel`` (and the surface's ``runs.cancel_path``), on any instance."""
        state = request.app[STATE]
        run_id = request.match_info["run_id"]
        cors = self.cors.headers(request)
        if not valid_id(run_id):
            return json_error(400, "bad_request", "runId: expected a printable id of at most 256 characters", cors)
        if not await self._cancel(state, request, run_id):
            return json_error(404, "not_found", f"no active run {run_id[:80]}", cors)
        log_event(logging.INFO, "stream_cancel", route=self.route.name, stream=run_id)
        runs = self.surface.runs
        if runs is None:
            return web.json_response({"cancelled": True}, headers=cors)
        return web.json_response(runs.cancel_answer, status=runs.cancel_status, headers=cors)

    async def stop_chat(self, request: web.Request) -> web.Response:
        """``DELETE <chat>/<chatId>/stream``: stop the chat's live run (a client's stop, which a
        dropped connection no longer means where chats resume), on any instance."""
        state, cors, chat_id = request.app[STATE], self.cors.headers(request), request.match_info["chat_id"]
        run_id = await chat_run(state, request, self.route, chat_id)
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
        info = await owned_run(state, request, self.route, run_id)
        if info is None or info.finished:
            return False
        return await state.runlog.cancel(info)

    async def decide(self, request: web.Request) -> web.Response:
        """``<control path>/approve|reject``: the client's decision, read by its surface, answers a
        held run's question, or goes to the upstream's control route in the upstream's body."""
        state = request.app[STATE]
        word = request.match_info["decision"]
        cors = self.cors.headers(request)
        try:
            body = await read_body(request, _BODY_LIMIT)
            check_depth(body, "decision")
            decision = self.surface.decisions.parse(body, word == "approve")
        except TooLarge:
            return json_error(413, "request_too_large", "The request body is too large.", cors)
        except BadRequest as exc:
            return json_error(400, "bad_request", str(exc)[:300], cors)
        pending = state.pending.get((self.route.name, decision.call_id))
        if pending is not None and pending.owner != identity(request.headers, state.config.owner_header):
            pending = None  # another identity's question: as if none asked it (no existence oracle)
        if pending is not None:  # a held run's question: answered into its resume run
            pending.answer(decision.call_id, decision.approved, decision.reason, decision.payload)
            log_event(logging.INFO, "control", route=self.route.name, decision=word, status="answered")
            return web.json_response({"ok": True}, status=self.surface.control_status, headers=cors)
        if self.source.interrupt_id is not None:
            what = self.surface.decisions.call_id_field
            return json_error(404, "not_found", f"No open run asks about this {what}.", cors)
        return await self._forward(state, request, word, self._upstream_body(body, decision), cors)

    def _upstream_body(self, body: bytes, decision: Decision) -> bytes:
        """The decision in the upstream's body: the client's own bytes when both say it alike
        (or the route forwards requests unchanged), else built by the upstream's surface."""
        if self.route.request_mode == "passthrough" or self.source.decisions is self.surface.decisions:
            return body
        return self.source.decisions.build(decision)

    async def _forward(
        self, state: BridgeState, request: web.Request, word: str, body: bytes, cors: dict[str, str]
    ) -> web.Response:
        """Send the decision to the upstream's control route; the client is told whether it took it."""
        route = self.route
        url = self.source.control_url(route.upstream, route.control_url, word)
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
            post = state.session.post(url, data=body, headers=headers, timeout=timeout, allow_redirects=False)
            async with post as resp:
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            log_event(logging.WARNING, "control_failed", route=route.name, decision=word, error=type(exc).__name__)
            return json_error(502, "upstream_unavailable", FAULTS["upstream_unavailable"].message, cors)
        log_event(logging.INFO, "control", route=route.name, decision=word, status=status)
        if 200 <= status < 300:
            return web.json_response({"ok": True}, status=self.surface.control_status, headers=cors)
        code = fault_for_status(status)
        return json_error(status if 400 <= status < 500 else 502, code, FAULTS[code].message, cors)

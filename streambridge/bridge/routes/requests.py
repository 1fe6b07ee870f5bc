"""What every route does with a client's request: read its body within a bound, check the ids
in its path, find the run it names for the identity that started it, and answer errors as JSON."""

from __future__ import annotations

import secrets

import msgspec
from aiohttp import web

from ...codecs.requests import BadRequest, check_id
from ..config import Route
from ..runlog import RunInfo, identity
from ..state import BridgeState

__all__ = ["TooLarge", "chat_key", "chat_run", "is_owner", "json_error", "owned_run", "read_body", "valid_id"]


class TooLarge(Exception):
    """The request body is larger than the route accepts."""


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes without reading them all."""
    if request.content_length is not None and request.content_length > limit:
        raise TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
    return b"".join(parts)


def json_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = msgspec.json.encode({"statusCode": status, "code": code, "message": message})
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)


def valid_id(value: str) -> bool:
    """A path id goes into logs and replies: printable and bounded (see codecs.requests.check_id)."""
    try:
        check_id(value, "runId")
    except BadRequest:
        return False
    return True


def is_owner(state: BridgeState, request: web.Request, info: RunInfo) -> bool:
    """Whether the request comes from the identity that started the run."""
    return secrets.compare_digest(info.owner, identity(request.headers, state.config.owner_header))


async def owned_run(state: BridgeState, request: web.Request, route: Route, run_id: str) -> RunInfo | None:
    """The run's info, when it is logged on ``route`` and the request comes from its owner
    (another identity's run is as if there were none)."""
    if state.runlog is None:
        return None
    info = await state.runlog.lookup(run_id)
    if info is None or info.route != route.name or not is_owner(state, request, info):
        return None
    return info


def chat_key(owner: str, chat_id: str) -> str:
    """A chat as its runs are logged: by its owner and its id, so a chat id another identity
    reuses (chosen by clients) is another chat and never hides or reveals the first one's run."""
    return f"{owner}/{chat_id}" if chat_id else ""


async def chat_run(state: BridgeState, request: web.Request, route: Route, chat_id: str) -> str | web.Response | None:
    """The latest run of the requester's chat (None: none logged), or the 400 for an id that cannot be one."""
    if not valid_id(chat_id):
        return json_error(400, "bad_request", "chatId: expected a printable id of at most 256 characters")
    if state.runlog is None:
        return None
    return await state.runlog.chat_run(
        route.name, chat_key(identity(request.headers, state.config.owner_header), chat_id)
    )

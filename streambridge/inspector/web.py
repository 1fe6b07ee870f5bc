"""The inspector's HTTP side: the page (``static/``), the stream list and its live changes over
SSE, one stream's view, and either side as a transcript file. Mounted at ``/_inspect`` on the
proxy (``serve --inspect``) or on an app of its own (``streambridge inspect FILE``).

Access: with a token configured, any address that presents it (``?token=`` or the
``X-Inspect-Token`` header, compared in constant time); without one, loopback addresses only.
Nothing served holds a secret: stream bodies are redacted of the stream's credentials, and
request headers are never shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
from aiohttp import web

from .analysis import analyse, transcript
from .capture import Inspector

__all__ = ["INSPECTOR", "PREFIX", "create_inspect_app", "mount"]

PREFIX = "/_inspect"
INSPECTOR = web.AppKey("streambridge_inspector", Inspector)
STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
#: seconds between comments on an idle live feed (keeps intermediaries from closing it)
LIVE_PING = 15.0
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the page's URL may hold the access token
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def allowed(request: web.Request, token: str | None) -> bool:
    """Whether this request may see the inspector (see the module's docstring)."""
    if token:
        presented = request.query.get("token") or request.headers.get("X-Inspect-Token") or ""
        return secrets.compare_digest(presented.encode(), token.encode())
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if not peer:
        return False
    try:
        return ipaddress.ip_address(str(peer[0]).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _guarded(handler: Handler) -> Handler:
    async def guarded(request: web.Request) -> web.StreamResponse:
        if not allowed(request, request.app[INSPECTOR].token):
            return web.json_response(
                {"error": "forbidden", "message": "the inspector answers loopback addresses, or a configured token"},
                status=403,
                headers=HEADERS,
            )
        return await handler(request)

    return guarded


async def _index(request: web.Request) -> web.StreamResponse:
    body = (STATIC / "index.html").read_bytes()
    return web.Response(body=body, content_type="text/html", charset="utf-8", headers=HEADERS)


async def _asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in ASSETS:
        raise web.HTTPNotFound()
    return web.Response(body=(STATIC / name).read_bytes(), headers={**HEADERS, "Content-Type": ASSETS[name]})


async def _streams(request: web.Request) -> web.StreamResponse:
    body = orjson.dumps({"streams": request.app[INSPECTOR].summaries()})
    return web.Response(body=body, content_type="application/json", headers=HEADERS)


async def _stream(request: web.Request) -> web.StreamResponse:
    capture = request.app[INSPECTOR].get(request.match_info["stream_id"])
    if capture is None:
        return web.json_response(
            {"error": "not_found", "message": "no such stream (it may have left the ring)"}, status=404, headers=HEADERS
        )
    body = capture.finished_view
    if body is None:
        live = capture.live
        body = await asyncio.to_thread(analyse, capture.snapshot())  # a big stream must not stall the proxy
        if not live:
            capture.finished_view = body
    return web.Response(body=body, content_type="application/json", headers=HEADERS)


async def _download(request: web.Request) -> web.StreamResponse:
    capture = request.app[INSPECTOR].get(request.match_info["stream_id"])
    if capture is None:
        raise web.HTTPNotFound()
    body, name = transcript(capture.snapshot(), request.match_info["side"])
    headers = {**HEADERS, "Content-Disposition": f'attachment; filename="{name}"'}
    return web.Response(body=body, content_type="application/octet-stream", headers=headers)


async def _live(request: web.Request) -> web.StreamResponse:
    """The list, then one ``stream`` event per changed stream (its summary), as they change."""
    inspector = request.app[INSPECTOR]
    resp = web.StreamResponse(headers={**HEADERS, "Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    queue = inspector.listen()
    try:
        await resp.write(b"event: streams\ndata: " + orjson.dumps(inspector.summaries()) + b"\n\n")
        while True:
            try:
                async with asyncio.timeout(LIVE_PING):
                    notice = await queue.get()
            except TimeoutError:
                await resp.write(b": ping\n\n")
                continue
            if notice is None:
                break
            await resp.write(b"event: stream\ndata: " + notice + b"\n\n")
    except ConnectionError:
        pass
    finally:
        inspector.unlisten(queue)
    with contextlib.suppress(ConnectionError):
        await resp.write_eof()
    return resp


async def _redirect(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound(PREFIX + "/" + (f"?{request.query_string}" if request.query_string else ""))


async def _closing(app: web.Application) -> None:
    app[INSPECTOR].close()


def mount(app: web.Application, inspector: Inspector) -> None:
    """Serve the inspector at :data:`PREFIX` on ``app``."""
    app[INSPECTOR] = inspector
    add = app.router.add_get
    add(PREFIX, _guarded(_redirect))
    add(PREFIX + "/", _guarded(_index))
    add(PREFIX + "/static/{name}", _guarded(_asset))
    add(PREFIX + "/api/streams", _guarded(_streams))
    add(PREFIX + "/api/live", _guarded(_live))
    add(PREFIX + "/api/streams/{stream_id}", _guarded(_stream))
    add(PREFIX + "/api/streams/{stream_id}/{side:upstream|client}", _guarded(_download))
    app.on_shutdown.append(_closing)


def create_inspect_app(inspector: Inspector) -> web.Application:
    """An app serving only the inspector (``streambridge inspect FILE``)."""
    app = web.Application()
    mount(app, inspector)
    return app

"""Mounts a configured route: each kind of route's handlers at the paths of its client's
:class:`~streambridge.codecs.http.HttpSurface` (below the route's path), the proxy's own run
routes, and the CORS preflight, each behind the route's browser boundary (boundary.py: Origin,
JSON bodies, the owner). Which routes exist is the surface's to say: nothing here names a
protocol."""

from __future__ import annotations

from aiohttp import web

from .boundary import RouteGate
from .config import Route
from .routes import ChatRoute, ControlRoutes, ResumeRoutes, WebSocketRoute

__all__ = ["mount_route"]


def mount_route(
    router: web.UrlDispatcher, route: Route, owner_header: str | None = None, require_identity: bool = False
) -> None:
    """Every handler of ``route`` (the preflight's catch-all pattern last), behind its gate: the
    route's CORS policy, the server's owner header and whether an identity is required."""
    chat, resume, control = ChatRoute(route), ResumeRoutes(route), ControlRoutes(route)
    gate = RouteGate(chat.cors, owner_header, require_identity)
    http, base, surface = gate.http, route.path, chat.surface
    router.add_post(base + surface.chat_path, http(chat.chat, body=True))
    if not surface.chat_path and base != "/":
        router.add_post(base.rstrip("/"), http(chat.chat, body=True))
    if surface.runs is not None:
        router.add_get(base + surface.runs.stream_path, http(resume.attach))
        router.add_post(base + surface.runs.cancel_path, http(control.cancel, body=True))
    router.add_get(base + "runs/{run_id}/stream", http(resume.attach))
    router.add_post(base + "runs/{run_id}/cancel", http(control.cancel, body=True))
    if surface.resume_path is not None:
        router.add_get(base + surface.resume_path, http(resume.resume))
        router.add_delete(base + surface.resume_path, http(control.stop_chat))
    decide = base + surface.control_path.replace("{decision}", "{decision:approve|reject}")
    router.add_post(decide, http(control.decide, body=True))
    router.add_get(base + "ws", gate.websocket(WebSocketRoute(route).websocket))
    if route.cors_origins:
        router.add_route("OPTIONS", base + "{tail:.*}", chat.cors.preflight)

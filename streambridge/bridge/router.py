"""Mounts a configured route: each kind of route's handlers at the paths of its client's
:class:`~streambridge.codecs.http.HttpSurface` (below the route's path), the proxy's own run
routes, and the CORS preflight. Which routes exist is the surface's to say: nothing here names a
protocol."""

from __future__ import annotations

from aiohttp import web

from .config import Route
from .routes import ChatRoute, ControlRoutes, ResumeRoutes, WebSocketRoute

__all__ = ["mount_route"]


def mount_route(router: web.UrlDispatcher, route: Route) -> None:
    """Every handler of ``route`` (the preflight's catch-all pattern last)."""
    chat, resume, control = ChatRoute(route), ResumeRoutes(route), ControlRoutes(route)
    base, surface = route.path, chat.surface
    router.add_post(base + surface.chat_path, chat.chat)
    if not surface.chat_path and base != "/":
        router.add_post(base.rstrip("/"), chat.chat)
    if surface.runs is not None:
        router.add_get(base + surface.runs.stream_path, resume.attach)
        router.add_post(base + surface.runs.cancel_path, control.cancel)
    router.add_get(base + "runs/{run_id}/stream", resume.attach)
    router.add_post(base + "runs/{run_id}/cancel", control.cancel)
    if surface.resume_path is not None:
        router.add_get(base + surface.resume_path, resume.resume)
        router.add_delete(base + surface.resume_path, control.stop_chat)
    router.add_post(base + surface.control_path.replace("{decision}", "{decision:approve|reject}"), control.decide)
    router.add_get(base + "ws", WebSocketRoute(route).websocket)
    if route.cors_origins:
        router.add_route("OPTIONS", base + "{tail:.*}", chat.cors.preflight)

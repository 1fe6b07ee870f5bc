"""CORS for every HTTP server streambridge runs (the proxy's routes and ``replay --serve``): which
browser origins may call, which response headers their scripts may read, and the preflight answer.

The headers a browser may read are the served protocol's (its surface's ``exposed_headers``),
so no server here names a protocol's headers.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler

__all__ = ["Cors"]

_METHODS = "GET, POST, DELETE, OPTIONS"
_MAX_AGE = "600"


@dataclass(frozen=True)
class Cors:
    """One server's (or route's) CORS policy: ``origins`` may call (``*``: any), and their
    scripts may read the ``exposed`` response headers. No origins: no CORS at all."""

    origins: tuple[str, ...]
    exposed: tuple[str, ...] = ()

    def allowed(self, origin: str | None) -> str | None:
        """The ``Access-Control-Allow-Origin`` answer to a request from ``origin`` (None: none).
        A request without an Origin (not a browser's cross-origin call) is told the one origin
        the policy allows, when it allows exactly one."""
        if "*" in self.origins:
            return "*"
        if origin is None:
            return self.origins[0] if len(self.origins) == 1 else None
        return origin if origin in self.origins else None

    def headers(self, request: web.BaseRequest) -> dict[str, str]:
        """The CORS headers of an answer to ``request`` (none for an origin not allowed)."""
        allowed = self.allowed(request.headers.get("Origin"))
        if allowed is None:
            return {}
        headers = {"Access-Control-Allow-Origin": allowed, "Vary": "Origin"}
        if self.exposed:
            headers["Access-Control-Expose-Headers"] = ", ".join(dict.fromkeys(self.exposed))
        return headers

    async def preflight(self, request: web.Request) -> web.Response:
        """``OPTIONS``: ``204`` allowing the methods and the headers the browser asked for
        (printable ones), ``403`` for an origin not allowed."""
        headers = self.headers(request)
        if not headers:
            return web.Response(status=403)
        asked = request.headers.get("Access-Control-Request-Headers", "content-type, accept")
        headers["Access-Control-Allow-Methods"] = _METHODS
        headers["Access-Control-Allow-Headers"] = ", ".join(h.strip() for h in asked.split(",") if h.strip().isascii())
        headers["Access-Control-Max-Age"] = _MAX_AGE
        return web.Response(status=204, headers=headers)

    def install(self, app: web.Application) -> None:
        """Apply the policy to a whole app (one served surface, as ``replay --serve``): every
        ``OPTIONS`` is a preflight, and every answer carries the headers."""

        @web.middleware
        async def preflight(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await (self.preflight if request.method == "OPTIONS" else handler)(request)

        async def add_headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
            for key, value in self.headers(request).items():
                response.headers.setdefault(key, value)

        app.middlewares.append(preflight)
        app.on_response_prepare.append(add_headers)

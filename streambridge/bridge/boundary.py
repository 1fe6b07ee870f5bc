"""The browser boundary, for every HTTP server streambridge runs (the proxy, ``replay --serve``,
``inspect``): binding to 127.0.0.1 does not keep a local browser out.

- **Host.** A page of another site reaches a loopback server by DNS rebinding: its own name,
  re-resolved to 127.0.0.1. Its requests then carry that name in ``Host``, so only the names
  the server is known by are answered: ``localhost``, any IP address (a browser sends one only
  to a page loaded from that very address, which DNS cannot rebind) and the configured
  ``allowed_hosts`` (``.example.com``: the name and its subdomains; ``*``: any).
- **Origin.** A browser names the page behind every cross-site request (and every WebSocket).
  A route answers a request that names an origin only when the route's CORS policy allows it,
  or when it is the server's own (its host and port are the request's ``Host``); a WebSocket
  from another origin is closed with 1008 before anything is read from it.
- **Bodies.** A request body must be JSON (``application/json`` or ``application/…+json``): a
  cross-site page can send ``text/plain`` or a form without asking first, never JSON.
- **Identity.** The owner header is taken once (two are a 400); with ``require_identity`` a
  request with none (no owner header, or without one no ``Authorization`` / ``Cookie``) is a 401.
- **Bad requests aiohttp refuses itself** (a header over 8 KiB…) are logged without the
  exception, whose text quotes the start of the offending header: maybe a credential.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aiohttp import WSCloseCode, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler, Middleware
from yarl import URL

from .cors import Cors
from .logging import log_event

__all__ = ["HostCheck", "Refusal", "RouteGate", "guard_server_log", "has_identity", "host_name", "same_origin"]

#: the one name (besides IP addresses) a server answers to when no others are configured
LOCAL_NAME = "localhost"
_JSON = "application/json"


@dataclass(frozen=True)
class Refusal:
    """Why a request is not taken: its status, code and message (a JSON error, or a WebSocket's
    close reason)."""

    status: int
    code: str
    message: str

    def response(self, headers: Mapping[str, str] | None = None) -> web.Response:
        body = {"statusCode": self.status, "code": self.code, "message": self.message}
        return web.json_response(body, status=self.status, headers=headers)


def host_name(host: str) -> tuple[str, int | None] | None:
    """A ``Host`` header's name (lower case, an IPv6 address without brackets) and port; None
    when it is not one."""
    value = host.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or not _is_ip(name):
            return None
        port = rest[1:] if rest.startswith(":") else rest
    else:
        name, _, port = value.partition(":")
    if not name or (port and not port.isdigit()):
        return None
    return name, int(port) if port else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheck:
    """Which ``Host`` names a server answers (see the module's docstring)."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        names = [name.strip().lower() for name in allowed if name.strip()]
        self.any = "*" in names
        self.names = frozenset(name for name in names if not name.startswith("."))
        self.domains = tuple(name for name in names if name.startswith("."))

    def allows(self, host: str | None) -> bool:
        if self.any:
            return True
        parsed = host_name(host) if host else None
        if parsed is None:
            return False
        name = parsed[0]
        if name == LOCAL_NAME or name in self.names or _is_ip(name):
            return True
        return any(name.endswith(domain) or name == domain[1:] for domain in self.domains)

    def middleware(self) -> Middleware:
        """Refuse every request to another name with ``421`` (before any route sees it)."""

        @web.middleware
        async def check_host(request: web.Request, handler: Handler) -> web.StreamResponse:
            if self.allows(request.headers.get("Host")):
                return await handler(request)
            log_event(logging.WARNING, "request_refused", reason="host_not_allowed", method=request.method)
            return _HOST_REFUSED.response()

        return check_host


_HOST_REFUSED = Refusal(
    421,
    "host_not_allowed",
    "This server does not answer to the host name in the request. An operator adds names with "
    "--allowed-host (allowed_hosts in routes.toml).",
)


def same_origin(origin: str, host: str | None) -> bool:
    """Whether ``origin`` is the server's own: its host and port are the request's ``Host``."""
    parsed = host_name(host) if host else None
    try:
        url = URL(origin)
    except ValueError:
        return False
    if parsed is None or url.scheme not in ("http", "https") or not url.host:
        return False
    name, port = parsed
    return url.host.lower() == name and (url.port == port if port is not None else url.is_default_port())


def origin_allowed(request: web.BaseRequest, cors: Cors) -> bool:
    """A request naming no origin (not a browser's cross-site call), one the CORS policy allows,
    or the server's own."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    return cors.allowed(origin) is not None or same_origin(origin, request.headers.get("Host"))


def _json_body(request: web.BaseRequest) -> bool:
    """The body is JSON, or there is none (a body-less ``POST``, such as a cancel, may say any type)."""
    if not request.body_exists:
        return True
    mime = request.headers.get("Content-Type", "").partition(";")[0].strip().lower()
    return mime == _JSON or (mime.startswith("application/") and mime.endswith("+json"))


def has_identity(headers: Mapping[str, str], owner_header: str | None) -> bool:
    """Whether a request says who it comes from (what a run's owner is made of: runlog.identity)."""
    if owner_header:
        return bool(headers.get(owner_header, "").strip())
    return bool(headers.get("Authorization") or headers.get("Cookie"))


class RouteGate:
    """What a route's handlers are wrapped in: the Origin, owner and body checks (the Host
    check is the whole app's)."""

    def __init__(self, cors: Cors, owner_header: str | None = None, require_identity: bool = False) -> None:
        self.cors = cors
        self.owner_header = owner_header
        self.require_identity = require_identity

    def _refused(self, request: web.Request, body: bool) -> Refusal | None:
        """Why the route must not take the request (None: it may)."""
        if not origin_allowed(request, self.cors):
            return Refusal(403, "origin_not_allowed", "This route does not take requests from the page's origin.")
        owner = self.owner_header
        if owner and len(request.headers.getall(owner, ())) > 1:
            return Refusal(400, "bad_request", f"{owner}: the owner header must be given once")
        if self.require_identity and not has_identity(request.headers, owner):
            who = f"the {owner} header" if owner else "an Authorization or Cookie header"
            return Refusal(401, "identity_required", f"This route needs {who} saying who the request is from.")
        if body and not _json_body(request):
            return Refusal(415, "unsupported_media_type", "The request body must be JSON (application/json).")
        return None

    def http(self, handler: Handler, *, body: bool = False) -> Handler:
        """``handler`` behind the checks; ``body``: the route reads a JSON body."""

        async def gated(request: web.Request) -> web.StreamResponse:
            refused = self._refused(request, body)
            if refused is None:
                return await handler(request)
            log_event(logging.INFO, "request_refused", reason=refused.code, method=request.method)
            return refused.response(self.cors.headers(request) if refused.status != 403 else None)

        return gated

    def websocket(self, handler: Handler) -> Handler:
        """``handler`` behind the checks; a socket refused is opened and closed at once with 1008
        and the code as its reason (a browser's script sees that close, where a refused handshake
        shows it only 1006), before anything is read from it."""

        async def gated(request: web.Request) -> web.StreamResponse:
            refused = self._refused(request, False)
            if refused is None:
                return await handler(request)
            log_event(logging.INFO, "request_refused", reason=refused.code, method="WS")
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=refused.code.encode())
            return ws

        return gated

    def middleware(self) -> Middleware:
        """The checks for a whole app serving one surface (``replay --serve``): a ``POST`` reads
        a JSON body; a preflight (``OPTIONS``) is the CORS policy's to answer."""

        @web.middleware
        async def gated(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.method == "OPTIONS":
                return await handler(request)
            return await self.http(handler, body=request.method == "POST")(request)

        return gated


class _BadRequestLog(logging.Filter):
    """aiohttp's record of a request it could not parse, without the exception (whose text quotes
    the offending header) and at warning level: a client's mistake, not the server's error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = "bad request refused: %s (HTTP %s)"
            record.args = (type(exc).__name__, exc.code)
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def guard_server_log() -> None:
    """Keep header values out of aiohttp's server log (once per process)."""
    log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _BadRequestLog) for f in log.filters):
        log.addFilter(_BadRequestLog())

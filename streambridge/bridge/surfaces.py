"""Header rules for requests the proxy sends upstream: an allow-list of the client's headers,
hop-by-hop and credential stripping, then the route's own headers.

What each protocol's requests, routes and upstream URLs look like is the protocol's own
(``codecs.<protocol>_http``, through ``codecs.get(name).http``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from multidict import CIMultiDict

__all__ = ["FORWARDED", "HOP_BY_HOP", "credential_like", "never_forwarded", "secret_values", "upstream_headers"]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "proxy-connection",
    }
)
#: set by the proxy itself, or meaningless upstream.
_MANAGED = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "accept-encoding",
        "content-encoding",
        "expect",
        "origin",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "last-event-id",
        "forwarded",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-real-ip",
        "via",
        "x-original-url",
        "x-rewrite-url",
        "set-cookie",
        "set-cookie2",
    }
)
#: whole families that never go: forwarding facts (a gateway's to set) and proxy headers
_NEVER_PREFIXES = ("x-forwarded-", "proxy-")
_CREDENTIALS = frozenset({"authorization", "cookie"})
#: client headers forwarded by default: content negotiation, language, user agent, tracing, request id
FORWARDED = frozenset(
    {
        "accept-language",
        "accept-charset",
        "user-agent",
        "traceparent",
        "tracestate",
        "baggage",
        "x-request-id",
        "request-id",
        "x-correlation-id",
    }
)
_SECRET_WORDS = ("auth", "key", "token", "secret", "password", "session", "cookie", "credential")


def never_forwarded(name: str) -> bool:
    """A client header that never goes upstream, even when a route names it: hop-by-hop, proxy
    and forwarding headers (``Via``, ``X-Forwarded-*``, ``X-Original-URL``…), a response's
    ``Set-Cookie``, and what the proxy sets itself."""
    low = name.strip().lower()
    return low in HOP_BY_HOP or low in _MANAGED or low.startswith(_NEVER_PREFIXES)


def credential_like(name: str) -> bool:
    """A header that may carry a credential (``X-Api-Key``, ``X-Auth-Token``…): it goes upstream
    only when the route forwards credentials."""
    low = name.lower()
    return low in _CREDENTIALS or any(word in low for word in _SECRET_WORDS)


def upstream_headers(
    client: Mapping[str, str] | Iterable[tuple[str, str]],
    route_headers: Mapping[str, str],
    *,
    accept: str,
    forward_auth: bool,
    content_type: str = "application/json",
    forward: Iterable[str] = (),
) -> CIMultiDict[str]:
    """Headers for the upstream request: an allow-list of the client's, then the route's own.

    The client's headers go on only when they are on :data:`FORWARDED` or named by the route
    (``forward``); a credential-like one (``Authorization``, ``Cookie``, ``X-Api-Key``…) only
    when the route forwards credentials, and (beyond ``Authorization`` and ``Cookie``) names it.
    Hop-by-hop headers (and any named in the client's ``Connection``) never go; the route's
    configured headers (credentials) replace any client header of the same name.
    """
    allowed = FORWARDED | {name.lower() for name in forward}
    items = list(client.items()) if isinstance(client, Mapping) else list(client)
    named = {
        token.strip().lower() for name, value in items if name.lower() == "connection" for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in items:
        low = name.lower()
        if never_forwarded(low) or low in named:
            continue
        if credential_like(low):
            if not forward_auth or (low not in _CREDENTIALS and low not in allowed):
                continue
        elif low not in allowed:
            continue
        out.add(name, value)
    for name in route_headers:
        out.popall(name, None)
    out.update(route_headers)
    out["Content-Type"] = content_type
    out["Accept"] = accept
    out["Accept-Encoding"] = "identity"
    return out


#: the shortest secret value redacted (shorter ones would blank out ordinary text)
_SHORTEST_SECRET = 4


def secret_values(route_headers: Mapping[str, str], client: Mapping[str, str]) -> tuple[str, ...]:
    """What the inspector must never show of a stream: the route's upstream header values and
    the client's credential-like header values, each whole and as its parts (the credential after
    an auth scheme, each cookie's value); longest first, so a whole goes before its parts."""
    found: set[str] = set()
    for value in [*route_headers.values(), *(v for k, v in client.items() if credential_like(k))]:
        found.add(value.strip())
        found.add(value.partition(" ")[2].strip())
        found.update(part.partition("=")[2].strip() for part in value.split(";"))
    return tuple(sorted((v for v in found if len(v) >= _SHORTEST_SECRET), key=len, reverse=True))

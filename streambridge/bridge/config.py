"""Proxy configuration: routes from CLI flags, a ``routes.toml`` file, and ``STREAMBRIDGE_*`` variables.

Upstream credentials never appear in a flag's value: a header is given as ``NAME=env:VAR`` and its
value is read from the environment once, at startup. A missing variable is a startup error that
names the variable, never a value. The upstream URL comes only from here, never from a request.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from yarl import URL

from .. import codecs
from ..codecs.fidelity import FIDELITIES, Fidelity
from ..codecs.framing import Framing
from .surfaces import never_forwarded

__all__ = [
    "DEFAULTS",
    "Config",
    "ConfigError",
    "Route",
    "build_config",
    "load_routes_toml",
    "parse_header",
    "route_defaults_from_env",
]

RequestMode = Literal["translate", "passthrough"]
ENV_PREFIX = "STREAMBRIDGE_"
MIN_STREAM_BUFFER = 4096


class ConfigError(ValueError):
    """A configuration problem, worded so it can be shown to the operator (never holds a secret)."""


@dataclass(frozen=True)
class Route:
    """One mounted translation: clients of ``target`` at ``path``, an upstream of ``source`` at ``upstream``."""

    path: str
    upstream: str
    source: str  # the upstream's protocol (``--from``)
    target: str  # the client's protocol (``--to``)
    name: str = ""
    source_framing: Framing | None = None
    target_framing: Framing | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # resolved; may hold secrets
    request_mode: RequestMode = "translate"
    forward_auth: bool = False  # forward the client's Authorization and Cookie headers
    control_url: str | None = None  # base of the upstream's tool-call/approve|reject (default: its surface's)
    connect_timeout: float = 10.0
    first_byte_timeout: float = 60.0
    idle_timeout: float = 300.0
    #: how long a run that ended to ask (an upstream whose runs end at interrupts) waits for a client that
    #: answers on the control route; then the unanswered interrupts are cancelled
    approval_timeout: float = 600.0
    heartbeat: float = 15.0
    max_request_bytes: int = 1024 * 1024
    max_frame_bytes: int = 8 * 1024 * 1024
    #: the most of one run's output the memory run log keeps (its oldest writes are trimmed past it)
    replay_limit_bytes: int = 8 * 1024 * 1024
    #: the most one run's upstream may send (bytes received, a run that resumes after asking
    #: counted whole); past it the run ends with ``run_too_large`` (0: no bound, only if set so)
    max_run_bytes: int = 64 * 1024 * 1024
    #: the longest one run may last, from its request; then it ends with ``run_too_long`` (0: no bound)
    max_run_seconds: float = 3600.0
    #: with a run log, how long a run whose client disconnected goes on with no one reading it
    #: (0: cancelled at once, as on a proxy without a run log)
    resume_grace: float = 30.0
    #: what a stream may hold at each buffer between the upstream and a slow client (buffers.py)
    stream_buffer_bytes: int = 64 * 1024
    client_stall_timeout: float = 60.0
    cors_origins: tuple[str, ...] = ()
    #: client headers forwarded upstream beyond the default allow-list (lower-case names); a
    #: credential-like one goes only with ``forward_auth`` too
    forward_headers: tuple[str, ...] = ()
    expose_upstream_errors: bool = False
    #: what the client gets: ``client``, what a native backend of its protocol would send, or
    #: ``exact``, every event of the upstream kept for a streambridge reader (codecs/fidelity.py)
    fidelity: Fidelity = "client"

    def __repr__(self) -> str:  # headers may hold credentials: show names only
        return (
            f"Route(name={self.name!r}, path={self.path!r}, upstream={safe_url(self.upstream)!r}, "
            f"from={self.source!r}, to={self.target!r}, headers={sorted(self.headers)!r})"
        )

    __str__ = __repr__


@dataclass(frozen=True)
class Config:
    routes: tuple[Route, ...]
    host: str = "127.0.0.1"
    port: int = 8787
    log_json: bool = False
    drain_timeout: float = 10.0
    max_upstream_connections: int = 1000
    #: seconds an idle upstream connection is kept for the next stream (0: closed at once)
    upstream_keepalive: float = 15.0
    #: where runs are logged for resume: ``memory`` (this process), ``redis://…`` (shared) or ``off``
    run_log: str = "memory"
    #: seconds a run's log is kept after its last write
    run_log_ttl: float = 600.0
    #: the most the memory run log holds in all (oldest finished runs evicted first)
    run_log_bytes: int = 256 * 1024 * 1024
    #: seconds an instance's claim on its runs lasts unrenewed (Redis): then another ends them
    run_log_lease: float = 5.0
    #: entries kept per run in Redis (approximately: ``XADD … MAXLEN ~``)
    run_log_maxlen: int = 100_000
    #: seconds the upstream's own thread of a client conversation is remembered after its last
    #: message (an upstream that chooses its thread ids: runlog/threads.py)
    thread_ttl: float = 30 * 86400.0
    #: seconds a Redis command on the request path may take (a hung Redis fails as one that is down)
    run_log_timeout: float = 1.0
    #: the request header naming the identity that owns a run (set by a gateway); without it,
    #: a hash of the client's Authorization and Cookie headers
    owner_header: str | None = None
    #: serve the live stream inspector at ``/_inspect`` (see docs/inspector.md)
    inspect: bool = False
    #: how many streams the inspector keeps (live and recent)
    inspect_streams: int = 100
    #: the most bytes the inspector keeps of one stream (both sides together)
    inspect_stream_bytes: int = 2 * 1024 * 1024
    #: the most bytes the inspector keeps in all (the oldest finished streams leave first)
    inspect_bytes: int = 64 * 1024 * 1024
    #: the inspector's access token (from ``STREAMBRIDGE_INSPECT_TOKEN``): any address that
    #: presents it may look; without one, loopback only
    inspect_token: str | None = field(default=None, repr=False)
    #: the host names the server answers to besides ``localhost`` and IP addresses (``.example.com``:
    #: it and its subdomains; ``*``: any), against DNS rebinding (boundary.py)
    allowed_hosts: tuple[str, ...] = ()
    #: refuse (401) a request that says nothing of who it is from (no owner header, or without
    #: one no Authorization / Cookie): otherwise every such client is one shared identity
    require_identity: bool = False
    #: processes serving the port together (SO_REUSEPORT; more than one needs a Redis run log)
    workers: int = 1


#: route settings that may also come from ``STREAMBRIDGE_<NAME>`` and ``[defaults]`` in routes.toml.
DEFAULTS: dict[str, Any] = {
    f.name: f.default
    for f in fields(Route)
    if f.name not in ("path", "upstream", "source", "target", "name", "headers")
}

_HOP_NAMES = {"connection", "keep-alive", "transfer-encoding", "upgrade", "te", "trailer", "host", "content-length"}


def safe_url(url: str) -> str:
    """The URL without user info or query: safe to log."""
    try:
        u = URL(url)
        return str(u.with_user(None).with_password(None).with_query(None).with_fragment(None))
    except (ValueError, TypeError):
        return "<invalid url>"


def parse_header(spec: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """``NAME=env:VAR`` (value from the environment) or ``NAME=value``."""
    name, sep, value = spec.partition("=")
    name = name.strip()
    if not sep or not name or any(c in name for c in " :\r\n"):
        raise ConfigError(f"upstream header {name or spec[:20]!r}: expected NAME=env:VAR")
    if name.lower() in _HOP_NAMES:
        raise ConfigError(f"upstream header {name!r} is managed by the proxy")
    if value.startswith("env:"):
        var = value[4:]
        if var not in environ:
            raise ConfigError(f"upstream header {name!r}: environment variable {var!r} is not set")
        value = environ[var]
    if "\r" in value or "\n" in value:
        raise ConfigError(f"upstream header {name!r}: the value contains a line break")
    return name, value


def normalise_path(path: str) -> str:
    path = "/" + path.strip().strip("/")
    return path if path == "/" else path + "/"


def _coerce(name: str, value: Any) -> Any:
    """A setting's value from TOML or an environment string, typed as the Route field is."""
    default = DEFAULTS[name]
    if name in ("cors_origins", "forward_headers"):
        if isinstance(value, str):
            value = [v for v in value.replace(",", " ").split() if v]
        values = tuple(str(v) for v in value)
        return tuple(v.lower() for v in values) if name == "forward_headers" else values
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, int):
        return int(value)
    if value in ("", None):
        return None
    return str(value)


def route_defaults_from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Route settings given as ``STREAMBRIDGE_<SETTING>`` (e.g. ``STREAMBRIDGE_HEARTBEAT=5``)."""
    out: dict[str, Any] = {}
    for name in DEFAULTS:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None:
            try:
                out[name] = _coerce(name, raw)
            except ValueError:
                raise ConfigError(f"{ENV_PREFIX}{name.upper()}: not a valid value") from None
    return out


def _route(
    *,
    path: str,
    upstream: str,
    source: str,
    target: str,
    name: str,
    header_specs: Iterable[str],
    settings: Mapping[str, Any],
    environ: Mapping[str, str],
) -> Route:
    resolved = {}
    for label, proto in (("from", source), ("to", target)):
        try:
            resolved[label] = codecs.resolve(proto)
        except codecs.UnknownProtocol as exc:
            raise ConfigError(f"route {name!r}: --{label}: {exc}") from None
    url = _parsed(upstream)
    if url is None or url.scheme not in ("http", "https", "ws", "wss") or not url.host:
        raise ConfigError(f"route {name!r}: upstream must be an absolute http(s):// or ws(s):// URL")
    headers = dict(parse_header(spec, environ) for spec in header_specs)
    typed = {}
    for key, value in settings.items():
        if key not in DEFAULTS:
            raise ConfigError(f"route {name!r}: unknown setting {key!r}")
        try:
            typed[key] = _coerce(key, value)
        except (TypeError, ValueError):
            raise ConfigError(f"route {name!r}: setting {key!r} is not valid") from None
    _check_settings(name, typed)
    return Route(
        path=normalise_path(path),
        upstream=upstream,
        source=resolved["from"],
        target=resolved["to"],
        name=name,
        headers=headers,
        **typed,
    )


def _check_settings(name: str, typed: Mapping[str, Any]) -> None:
    """Settings whose values are refused whatever their source (named with the route)."""
    if typed.get("request_mode", "translate") not in ("translate", "passthrough"):
        raise ConfigError(f"route {name!r}: request_mode must be 'translate' or 'passthrough'")
    for key in ("source_framing", "target_framing"):
        if typed.get(key) not in (None, "sse", "ndjson"):
            raise ConfigError(f"route {name!r}: {key} must be 'sse' or 'ndjson'")
    if typed.get("fidelity", "client") not in FIDELITIES:
        raise ConfigError(f"route {name!r}: fidelity must be 'exact' or 'client'")
    _check_bounds(name, typed)
    _check_forwarded(name, typed.get("forward_headers", ()))
    _check_origins(name, typed.get("cors_origins", ()))
    control_url = typed.get("control_url")
    if control_url is not None and not _is_http_url(control_url):
        raise ConfigError(f"route {name!r}: control_url must be an absolute http(s):// URL")


#: route settings in seconds: a negative one is refused
_SECONDS = (
    "connect_timeout",
    "first_byte_timeout",
    "idle_timeout",
    "approval_timeout",
    "heartbeat",
    "client_stall_timeout",
    "resume_grace",
)
#: route settings in bytes that bound a buffer: at least one byte
_SIZES = ("max_request_bytes", "max_frame_bytes", "replay_limit_bytes")


def _check_bounds(name: str, typed: Mapping[str, Any]) -> None:
    """Bounds that cannot mean anything: a negative time, an empty buffer (a TOML file or a
    variable can say what the flags' own minimums refuse)."""
    for key in _SECONDS:
        if typed.get(key, 0) < 0:
            raise ConfigError(f"route {name!r}: {key} must not be negative (seconds)")
    for key in ("max_run_bytes", "max_run_seconds"):
        if typed.get(key, 0) < 0:
            raise ConfigError(f"route {name!r}: {key} must not be negative (0: no bound)")
    for key in _SIZES:
        if typed.get(key, 1) < 1:
            raise ConfigError(f"route {name!r}: {key} must be at least 1 byte")
    if typed.get("stream_buffer_bytes", MIN_STREAM_BUFFER) < MIN_STREAM_BUFFER:
        raise ConfigError(f"route {name!r}: stream_buffer_bytes must be at least {MIN_STREAM_BUFFER}")


def _check_origins(route: str, origins: Iterable[str]) -> None:
    """A CORS origin is what a browser sends: ``scheme://host[:port]``, no path (a trailing
    slash would never match, and the route would refuse the page it was meant for); ``null`` is
    what a file or a sandboxed frame sends."""
    for origin in origins:
        url = _parsed(origin)
        if origin in ("*", "null") or (url is not None and url.host and url.scheme and origin == str(url.origin())):
            continue
        hint = f" (a browser sends {str(url.origin())!r})" if url is not None and url.host and url.scheme else ""
        raise ConfigError(f"route {route!r}: cors origin {origin[:80]!r} is not scheme://host[:port]{hint}")


def _parsed(value: str) -> URL | None:
    try:
        return URL(value)
    except (ValueError, TypeError):
        return None


def _is_http_url(value: str) -> bool:
    url = _parsed(value)
    return url is not None and url.scheme in ("http", "https") and bool(url.host)


def _check_forwarded(route: str, names: Iterable[str]) -> None:
    """A header the proxy never sends upstream cannot be named to forward (it would not go)."""
    for header in names:
        if never_forwarded(header):
            raise ConfigError(
                f"route {route!r}: forward_headers: {header!r} never goes upstream "
                "(hop-by-hop, proxy, forwarding or response headers, and those the proxy sets itself)"
            )


def load_routes_toml(
    path: str | Path, environ: Mapping[str, str], defaults: Mapping[str, Any] | None = None
) -> tuple[list[Route], dict[str, Any]]:
    """Routes from a TOML file, and its ``[server]`` table.

    ```toml
    [server]            # host, port, log_json, drain_timeout, max_upstream_connections, upstream_keepalive,
                        # run_log, run_log_ttl, run_log_bytes, run_log_lease, run_log_maxlen, run_log_timeout,
                        # thread_ttl, owner_header, inspect, inspect_streams, inspect_stream_bytes,
                        # inspect_bytes, allowed_hosts, require_identity, workers
    [defaults]          # any route setting, for every route
    [[routes]]
    name = "support"
    path = "/support/"
    upstream = "https://agents.internal/agent"
    from = "nest"
    to = "agentkit"
    headers = { Authorization = "env:SUPPORT_TOKEN" }
    heartbeat = 10
    ```
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    base = {**data.get("defaults", {}), **(defaults or {})}  # the file's [defaults] < env and flags
    routes = []
    for i, table in enumerate(data.get("routes", [])):
        table = dict(table)
        name = str(table.pop("name", f"route{i + 1}"))
        try:
            path_ = table.pop("path")
            upstream = table.pop("upstream")
            source = table.pop("from")
            target = table.pop("to")
        except KeyError as exc:
            raise ConfigError(f"route {name!r}: missing {exc.args[0]!r}") from None
        headers = table.pop("headers", {})
        specs = [f"{k}={v}" for k, v in headers.items()]
        routes.append(
            _route(
                path=path_,
                upstream=upstream,
                source=source,
                target=target,
                name=name,
                header_specs=specs,
                settings={**base, **table},
                environ=environ,
            )
        )
    return routes, dict(data.get("server", {}))


def build_config(
    *,
    upstream: str | None = None,
    source: str | None = None,
    target: str | None = None,
    host: str | None = None,
    port: int | None = None,
    path: str = "/",
    upstream_headers: Iterable[str] = (),
    config_file: str | Path | None = None,
    log_json: bool | None = None,
    run_log: str | None = None,
    owner_header: str | None = None,
    inspect: bool | None = None,
    inspect_streams: int | None = None,
    allowed_hosts: Iterable[str] | None = None,
    require_identity: bool | None = None,
    workers: int | None = None,
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """The whole configuration: the file's routes plus the one given by flags, if any.

    Route settings, most specific first: a route's own table in the file, explicit ``settings``
    (flags), ``STREAMBRIDGE_<SETTING>`` variables, the file's ``[defaults]``, the built-in defaults.
    """
    env = os.environ if environ is None else environ
    defaults = route_defaults_from_env(env)
    explicit = {k: v for k, v in (settings or {}).items() if v is not None}
    routes: list[Route] = []
    server: dict[str, Any] = {}
    if config_file:
        routes, server = load_routes_toml(config_file, env, {**defaults, **explicit})
    if upstream or source or target:
        if not (upstream and source and target):
            raise ConfigError("a route needs --upstream, --from and --to together")
        routes.append(
            _route(
                path=path,
                upstream=upstream,
                source=source,
                target=target,
                name="default",
                header_specs=upstream_headers,
                settings={**defaults, **explicit},
                environ=env,
            )
        )
    if not routes:
        raise ConfigError("no route: give --upstream, --from and --to, or --config routes.toml")
    _check_unique(routes)
    config = Config(
        routes=tuple(routes),
        host=host if host is not None else str(server.get("host", "127.0.0.1")),
        port=_port(port if port is not None else server.get("port", 8787)),
        log_json=bool(log_json if log_json is not None else server.get("log_json", False)),
        drain_timeout=_seconds(
            "drain_timeout", server.get("drain_timeout", env.get(ENV_PREFIX + "DRAIN_TIMEOUT", 10.0))
        ),
        max_upstream_connections=int(_positive(server, env, "max_upstream_connections", 1000)),
        upstream_keepalive=_seconds(
            "upstream_keepalive", server.get("upstream_keepalive", env.get(ENV_PREFIX + "UPSTREAM_KEEPALIVE", 15.0))
        ),
        run_log=_run_log(run_log or server.get("run_log") or env.get(ENV_PREFIX + "RUN_LOG") or "memory"),
        run_log_ttl=_positive(server, env, "run_log_ttl", 600.0),
        run_log_bytes=int(_positive(server, env, "run_log_bytes", 256 * 1024 * 1024)),
        run_log_lease=_positive(server, env, "run_log_lease", 5.0),
        run_log_maxlen=int(_positive(server, env, "run_log_maxlen", 100_000)),
        thread_ttl=_positive(server, env, "thread_ttl", 30 * 86400.0),
        run_log_timeout=_positive(server, env, "run_log_timeout", 1.0),
        owner_header=owner_header or server.get("owner_header") or env.get(ENV_PREFIX + "OWNER_HEADER") or None,
        inspect=bool(inspect if inspect is not None else server.get("inspect", False)),
        inspect_streams=int(inspect_streams or _positive(server, env, "inspect_streams", 100)),
        inspect_stream_bytes=int(_positive(server, env, "inspect_stream_bytes", 2 * 1024 * 1024)),
        inspect_bytes=int(_positive(server, env, "inspect_bytes", 64 * 1024 * 1024)),
        inspect_token=env.get(ENV_PREFIX + "INSPECT_TOKEN") or None,
        allowed_hosts=_allowed_hosts(allowed_hosts, server, env),
        require_identity=_flag(require_identity, server, env, "require_identity"),
        workers=int(workers or _positive(server, env, "workers", 1)),
    )
    _check_workers(config)
    return config


def _check_workers(config: Config) -> None:
    """Several workers are several processes on one port: what a client does next may reach any
    of them, so they must share the run log, and the port must be one they all bind."""
    if config.workers == 1:
        return
    count = f"{config.workers} workers"
    if not config.run_log.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(
            f"{count} need the Redis run log (--run-log redis://…, not {config.run_log!r}): a client's "
            "resume, cancel or next message may reach any worker, and only Redis is shared by them"
        )
    if config.port == 0:
        raise ConfigError(f"{count} need a fixed --port: with port 0 each would listen on a port of its own")
    if config.inspect:
        raise ConfigError(f"--inspect shows one process's streams: use it with one worker, not {count}")


def _allowed_hosts(given: Iterable[str] | None, server: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, ...]:
    """``--allowed-host`` names, else ``allowed_hosts`` in ``[server]``, else the variable."""
    value: Any = given or server.get("allowed_hosts") or env.get(ENV_PREFIX + "ALLOWED_HOSTS") or ()
    names = value.replace(",", " ").split() if isinstance(value, str) else [str(name) for name in value]
    for name in names:
        if name != "*" and (not name.strip(".") or any(c in name for c in "/[]@ ") or not name.isprintable()):
            raise ConfigError(f"allowed host {name[:60]!r}: expected a host name, .domain or *")
    return tuple(names)


def _flag(given: bool | None, server: Mapping[str, Any], env: Mapping[str, str], name: str) -> bool:
    if given is not None:
        return given
    if name in server:
        return bool(server[name])
    return env.get(ENV_PREFIX + name.upper(), "").strip().lower() in ("1", "true", "yes", "on")


def _run_log(value: str) -> str:
    value = str(value).strip()
    if value in ("memory", "off") or value.startswith(("redis://", "rediss://", "unix://")):
        return value
    raise ConfigError(f"run_log {safe_url(value)!r}: expected memory, off or a redis:// URL")


def _positive(server: Mapping[str, Any], env: Mapping[str, str], name: str, default: float) -> float:
    value = server.get(name, env.get(ENV_PREFIX + name.upper(), default))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} {value!r} is not a number") from None
    if number <= 0:
        raise ConfigError(f"{name} must be positive")
    return number


def _seconds(name: str, value: Any) -> float:
    """A server setting in seconds, 0 allowed."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} {value!r} is not a number of seconds") from None
    if seconds < 0:
        raise ConfigError(f"{name} must not be negative")
    return seconds


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"port {value!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range (0-65535)")
    return port


def _check_unique(routes: list[Route]) -> None:
    seen: set[str] = set()
    names: set[str] = set()
    for i, route in enumerate(routes):
        if route.path in seen:
            raise ConfigError(f"two routes are mounted at {route.path!r}")
        seen.add(route.path)
        if route.name in names:
            routes[i] = replace(route, name=f"{route.name}{i + 1}")
        names.add(routes[i].name)

"""``serve --check``: a configuration checked as the proxy would start with it, and its run log
reached, with nothing listening. For a deploy pipeline, a container's entrypoint and an operator
who wants to know before a client finds out.

What :func:`build_config` refuses (a protocol not known, an upstream URL that does not parse, a
bound that cannot mean anything, a missing credential variable) is refused the same way here;
this module adds what needs the network (the Redis run log answers ``PING``), what is legal but
almost certainly not meant (warnings), and a summary that names no secret.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from yarl import URL

from .config import Config, Route, safe_url

__all__ = ["CHECK_TIMEOUT", "Checked", "check_config"]

#: seconds the check gives the run log's Redis to answer (connect and ``PING``)
CHECK_TIMEOUT = 5.0


@dataclass
class Checked:
    """What the check found: ``problem`` (None: the proxy would start), a summary, warnings."""

    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problem: str | None = None


def check_config(config: Config, timeout: float = CHECK_TIMEOUT) -> Checked:
    """Check ``config`` (already built, so valid on its own) and reach its run log."""
    checked = Checked(summary=_summary(config))
    for route in config.routes:
        checked.warnings += [f"route {route.name!r}: {w}" for when, w in _ROUTE_WARNINGS if when(route)]
    if config.run_log == "memory" and max(r.replay_limit_bytes for r in config.routes) > config.run_log_bytes:
        checked.warnings.append("run_log_bytes is smaller than a route's replay_limit_bytes: one run can fill the log")
    if "://" in config.run_log:
        checked.problem = asyncio.run(_ping(config.run_log, timeout))
        if checked.problem is None:
            checked.summary.append(f"run log {safe_url(config.run_log)}: reachable (PING answered)")
    return checked


def _summary(config: Config) -> list[str]:
    workers = f", {config.workers} workers" if config.workers > 1 else ""
    lines = [f"listen {config.host}:{config.port}{workers}; run log {_run_log(config)}"]
    for route in config.routes:
        headers = f"; upstream headers {', '.join(sorted(route.headers))}" if route.headers else ""
        lines.append(
            f"route {route.name!r} at {route.path}: {route.target} clients -> {route.source} upstream "
            f"{safe_url(route.upstream)} ({route.request_mode}, fidelity {route.fidelity}{headers})"
        )
    return lines


def _run_log(config: Config) -> str:
    return safe_url(config.run_log) if "://" in config.run_log else config.run_log


#: what a route may say that is legal but almost certainly not meant
_ROUTE_WARNINGS: tuple[tuple[Callable[[Route], bool], str], ...] = (
    (
        lambda r: "*" in r.cors_origins and r.forward_auth,
        "cors_origins '*' with forward_auth: every site's pages may call the upstream with the user's cookies",
    ),
    (
        lambda r: 0 < r.max_run_bytes < r.max_frame_bytes,
        "max_frame_bytes is larger than max_run_bytes: the run bound ends a run before a frame that large",
    ),
    (
        lambda r: 0 < r.max_run_seconds < r.first_byte_timeout,
        "first_byte_timeout is longer than max_run_seconds: a slow upstream ends as run_too_long",
    ),
)


async def _ping(url: str, timeout: float) -> str | None:
    """None when the Redis at ``url`` answers ``PING``; else the problem (without its password)."""
    from redis import asyncio as aioredis
    from redis.exceptions import RedisError

    client = aioredis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        return f"run log {safe_url(url)} is not reachable: {_without_password(str(exc) or type(exc).__name__, url)}"
    finally:
        await client.aclose()
    return None


def _without_password(text: str, url: str) -> str:
    password = URL(url).password
    return text.replace(password, "***") if password else text

"""Run logs: every proxied run's output, kept so a client can resume it from its cursor on any
instance (``--run-log memory|redis://…|off``)."""

from __future__ import annotations

from .base import Gap, RunInfo, RunLog, RunWriter, closing_terminal, identity
from .cursor import FINAL, Numbering, after_key, frames_after

__all__ = [
    "FINAL",
    "Gap",
    "Numbering",
    "RunInfo",
    "RunLog",
    "RunWriter",
    "after_key",
    "closing_terminal",
    "frames_after",
    "identity",
    "open_run_log",
]


def open_run_log(
    spec: str,
    instance: str,
    *,
    run_bytes: int,
    total_bytes: int,
    ttl: float,
    lease: float,
    maxlen: int,
    route_bytes: dict[str, int] | None = None,
    timeout: float = 1.0,
) -> RunLog | None:
    """The run log a ``--run-log`` value names: ``memory``, ``redis://…`` / ``rediss://…`` or ``off``."""
    if spec == "off":
        return None
    if spec == "memory":
        from .memory import MemoryRunLog

        return MemoryRunLog(instance, run_bytes=run_bytes, total_bytes=total_bytes, ttl=ttl, route_bytes=route_bytes)
    from .redis import RedisRunLog

    return RedisRunLog(instance, spec, ttl=ttl, lease=lease, maxlen=maxlen, timeout=timeout)

"""Structured logs: an event name plus fields, as ``key=value`` text or one JSON object per line.

Callers pass only safe fields (route names, codes, counts, URLs without user info or query);
request and upstream headers are never logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

__all__ = ["CLIENT_GONE", "JsonFormatter", "TextFormatter", "access_log", "log_event", "logger", "setup_logging"]

logger = logging.getLogger("streambridge.bridge")
#: the status an access log gives a request whose client left before its answer ended (as nginx does)
CLIENT_GONE = 499


def log_event(level: int, event: str, *, exc_info: bool = False, **fields: Any) -> None:
    """Log ``event`` with structured ``fields`` (kept on the record as ``record.fields``);
    ``exc_info`` adds the exception being handled, traceback included (server side only)."""
    if logger.isEnabledFor(level):
        logger.log(level, event, exc_info=exc_info, extra={"fields": fields})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", {})
        tail = " ".join(f"{k}={v}" for k, v in fields.items())
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        line = f"{stamp} {record.levelname.lower():7} {record.name}: {record.getMessage()}" + (
            f" {tail}" if tail else ""
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(json_logs: bool = False, tags: dict[str, Any] | None = None, level: int = logging.INFO) -> None:
    """Route the ``streambridge`` and ``aiohttp`` loggers to stderr in the chosen format; ``tags``
    end every line (a worker's process id, so interleaved workers' lines can be told apart)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_logs else TextFormatter())
    if tags:
        handler.addFilter(_Tagged(tags))
    for name in ("streambridge", "aiohttp"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level)
        log.propagate = False
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


class _Tagged(logging.Filter):
    """Adds the same fields to every record it passes."""

    def __init__(self, tags: dict[str, Any]) -> None:
        super().__init__()
        self.tags = tags

    def filter(self, record: logging.LogRecord) -> bool:
        record.fields = {**getattr(record, "fields", {}), **self.tags}
        return True


def access_log(log: logging.Logger) -> Middleware:
    """A middleware that logs one ``request`` line per request on ``log``: method, path (with
    its query), status and duration, in the format of the proxy's own lines."""

    @web.middleware
    async def logged(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            status = CLIENT_GONE
            raise
        finally:
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            fields = {"method": request.method, "path": request.path_qs, "status": status, "duration_ms": duration_ms}
            log.info("request", extra={"fields": fields})

    return logged

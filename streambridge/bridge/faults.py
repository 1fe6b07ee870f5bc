"""Every way a proxied stream can break, and the terminal event the client gets for it.

A fault never reaches the client as a stack trace, an upstream body or a hung connection: it
becomes a :class:`~streambridge.events.Terminal` with a fixed, safe message and a stable code,
encoded by the target protocol's encoder (which guarantees one terminal per stream).
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

from ..codecs import StreamError
from ..events import Failure, RunStatus, Terminal

__all__ = [
    "FAULTS",
    "Fault",
    "UpstreamFault",
    "fault_for_status",
    "fault_from_stream_error",
    "retry_after_ms",
    "terminal_for",
]


@dataclass(frozen=True)
class Fault:
    """A kind of failure: the code clients see, a safe message, and whether retrying may help."""

    code: str
    message: str
    status: RunStatus = "error"
    recoverable: bool = True
    translation: bool = False  # counted as a translation error (bad upstream frames)


FAULTS: dict[str, Fault] = {
    f.code: f
    for f in (
        Fault("upstream_unavailable", "The agent service could not be reached."),
        Fault("upstream_unauthorized", "The agent service did not accept the proxy's credentials.", recoverable=False),
        Fault("upstream_forbidden", "The agent service refused this request.", recoverable=False),
        Fault("upstream_not_found", "The agent service was not found at its configured address.", recoverable=False),
        Fault("upstream_rejected", "The agent service rejected the request.", recoverable=False),
        Fault(
            "upstream_redirected",
            "The agent service answered with a redirect, which the proxy does not follow.",
            recoverable=False,
        ),
        Fault("rate_limited", "The agent service is busy. Please try again later."),
        Fault("upstream_error", "The agent service failed to answer."),
        Fault("bad_gateway", "The agent service's gateway failed."),
        Fault("not_provisioned", "The assistant is not set up in this environment.", "notProvisioned", False),
        Fault("upstream_timeout", "The agent service did not start answering in time."),
        Fault("connection_limit", "The proxy is at its limit of connections to the agent service. Please try again."),
        Fault("upstream_idle", "The agent service stopped sending in the middle of the answer."),
        Fault("upstream_disconnected", "The agent service closed the connection in the middle of the answer."),
        Fault("truncated", "The agent service ended the answer without finishing it.", translation=True),
        Fault("upstream_malformed", "The agent service sent a frame that could not be read.", translation=True),
        Fault("upstream_invalid_utf8", "The agent service sent text that is not valid UTF-8.", translation=True),
        Fault("frame_too_large", "The agent service sent a frame larger than the proxy accepts.", translation=True),
        Fault("run_too_large", "The answer is larger than the proxy allows.", recoverable=False),
        Fault("run_too_long", "The answer took longer than the proxy allows.", recoverable=False),
        Fault("shutting_down", "The proxy is restarting. Please try again."),
        Fault("client_stalled", "The client stopped reading the stream."),
        Fault("proxy_error", "The proxy failed while relaying the answer."),
        Fault("run_lost", "The proxy instance that was relaying this answer stopped. Please try again."),
        Fault("run_log_unavailable", "The proxy lost the log of this answer. Please try again."),
    )
}

_STATUS_FAULTS = {
    401: "upstream_unauthorized",
    403: "upstream_forbidden",
    404: "upstream_not_found",
    429: "rate_limited",
    500: "upstream_error",
    502: "bad_gateway",
    503: "not_provisioned",
}


class UpstreamFault(Exception):
    """Raised by the upstream layer; ``code`` is a key of :data:`FAULTS`.

    ``detail`` is for logs only (never sent to a client unless the route exposes upstream errors);
    ``exposed`` is upstream text the route chose to expose.
    """

    def __init__(
        self,
        code: str,
        *,
        http_status: int | None = None,
        retry_after: int | None = None,
        detail: str = "",
        exposed: str = "",
    ) -> None:
        super().__init__(code)
        self.code = code
        self.http_status = http_status
        self.retry_after = retry_after
        self.detail = detail
        self.exposed = exposed


def fault_for_status(status: int) -> str:
    """The fault code of a non-2xx upstream answer."""
    if status in _STATUS_FAULTS:
        return _STATUS_FAULTS[status]
    if 300 <= status < 400:  # never followed: a redirect could carry the route's credentials elsewhere
        return "upstream_redirected"
    return "upstream_error" if status >= 500 else "upstream_rejected"


def retry_after_ms(header: str | None, now: float | None = None) -> int | None:
    """``Retry-After`` (delay seconds or an HTTP date) in milliseconds; None when absent or invalid."""
    if not header:
        return None
    header = header.strip()
    if header.isdigit():
        return int(header) * 1000
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    delay = when.timestamp() - (time.time() if now is None else now)
    return max(0, round(delay * 1000))


_FAULT_OF_PROBLEM = {
    "oversize": "frame_too_large",
    "truncated": "truncated",
    "encoding": "upstream_invalid_utf8",
}


def fault_from_stream_error(exc: StreamError) -> str:
    """Classify a strict decoder's complaint about upstream bytes."""
    return _FAULT_OF_PROBLEM.get(exc.kind, "upstream_malformed")


def terminal_for(code: str, *, retry_after: int | None = None, exposed: str = "") -> Terminal:
    """The terminal event a client gets for a fault (``cancelled`` is not a fault: no failure)."""
    if code == "cancelled":
        return Terminal(status="cancelled")
    fault = FAULTS.get(code, FAULTS["proxy_error"])
    message = fault.message if not exposed else f"{fault.message} ({exposed})"
    failure = Failure(status=fault.status, message=message, code=fault.code, recoverable=fault.recoverable)
    if retry_after is not None:
        failure.retry_after_ms = retry_after
    return Terminal(status=fault.status, failure=failure)

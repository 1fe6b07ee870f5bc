"""The terminal and status table every protocol shares: run statuses and failure codes, their
default messages, and the one truncation terminal an input without a terminal ends with."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ..events import (
    Failure,
    RunStatus,
    Terminal,
)

__all__ = [
    "CODE_STATUSES",
    "DEFAULT_MESSAGES",
    "STATUS_CODES",
    "TRUNCATED_CODE",
    "TRUNCATED_MESSAGE",
    "canonical_failure",
    "default_failure",
    "read_terminal",
    "says_only_outcome",
    "status_for_code",
    "truncation_terminal",
    "wire_terminal",
]

#: what a terminal may hold beyond its status, failure and answer text
_TERMINAL_EXTRAS = ("usage", "provider", "model", "guarded", "correlation_id", "turn_id", "result", "error_info")

TRUNCATED_MESSAGE = "The stream ended without a terminal event."
TRUNCATED_CODE = "truncated"


def says_only_outcome(e: Terminal, assembled: str, written: tuple[str, ...] = ()) -> bool:
    """Whether a terminal holds nothing beyond its status, failure and answer text (the text the
    stream assembled) but the members its protocol's terminal frame writes (``written``): when a
    plain terminal frame says all of it."""
    if e.text is not UNSET and e.text != assembled:
        return False
    return all(getattr(e, name) is UNSET for name in _TERMINAL_EXTRAS if name not in written)


def _truncated() -> Failure:
    return Failure(status="error", message=TRUNCATED_MESSAGE, code=TRUNCATED_CODE, recoverable=True)


def truncation_terminal() -> Terminal:
    """The error terminal for input that ended without one (synthetic: streambridge's own)."""
    return Terminal(synthetic=True, status="error", failure=_truncated())


def _is_truncation(failure: Failure) -> bool:
    return failure.code == TRUNCATED_CODE and failure.message == TRUNCATED_MESSAGE and failure.status == "error"


def wire_terminal(event: Terminal) -> Terminal:
    """What an encoder writes for streambridge's truncation terminal: a plain error terminal
    with its code and message, which every decoder reads back as the synthetic one (so no
    carrier ever describes it)."""
    failure = event.failure
    if not event.synthetic or failure is UNSET or event.status != "error" or not _is_truncation(failure):
        return event
    if failure.recoverable is True and failure.retry_after_ms is UNSET and failure.correlation_id is UNSET:
        failure = msgspec.structs.replace(failure, recoverable=UNSET)
        return msgspec.structs.replace(event, synthetic=False, failure=failure)
    return event


def read_terminal(event: Terminal) -> None:
    """The inverse of :func:`wire_terminal`, for every decoder (one canonical form)."""
    failure = event.failure
    if event.synthetic or event.status != "error" or failure is UNSET or not _is_truncation(failure):
        return
    if failure.recoverable is UNSET and failure.retry_after_ms is UNSET and failure.correlation_id is UNSET:
        event.failure = _truncated()
        event.synthetic = True


# -- the terminal ladder shared by every codec ---------------------------------------------

#: status → the failure code used when a protocol only has ``code`` to say it.
STATUS_CODES: dict[str, str] = {
    "error": "run_failed",
    "blocked": "content_filter",
    "refused": "refused",
    "notProvisioned": "not_provisioned",
    "cancelled": "cancelled",
}
#: failure code → status, for protocols whose failures are one ``error`` with a code.
CODE_STATUSES: dict[str, RunStatus] = {
    "content_filter": "blocked",
    "output_rejected": "blocked",
    "refused": "refused",
    "not_provisioned": "notProvisioned",
}
DEFAULT_MESSAGES: dict[str, str] = {
    "error": "The run failed.",
    "blocked": "The answer was blocked by a content filter.",
    "refused": "The model declined to answer.",
    "notProvisioned": "The assistant is not set up in this environment.",
    "cancelled": "The run was cancelled.",
}


def default_failure(status: RunStatus) -> Failure:
    """The failure an encoder attaches when a non-success terminal came without one."""
    return Failure(status=status, message=DEFAULT_MESSAGES[status], code=STATUS_CODES[status])


def canonical_failure(status: RunStatus, failure: Failure | UnsetType) -> Failure | UnsetType:
    """A failure equal to the default one for its status is the same as none (one canonical form)."""
    if failure is not UNSET and status != "succeeded" and failure == default_failure(status):
        return UNSET
    return failure


def status_for_code(code: str | None) -> RunStatus:
    return CODE_STATUSES.get(code or "", "error")

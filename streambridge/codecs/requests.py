"""The neutral chat request every protocol's request shape is parsed into and built from.

Requests go hub and spoke like streams: a client's body is parsed by its protocol into one
:class:`ChatRequest` (message text, thread id, history, attachments, host context), and the
upstream's body is built from it by the upstream's protocol. Each protocol's shapes and its
``parse`` / ``build`` live in its own module; the checks every request gets live here.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, Struct

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "WIRE",
    "Attachment",
    "BadRequest",
    "ChatRequest",
    "HistoryMessage",
    "ResumeEntry",
    "check_depth",
    "check_id",
    "decision_entry",
    "decode_request",
    "encode_request",
    "optional",
    "or_unset",
    "request_dropped",
]

log = logging.getLogger("streambridge.codecs")
_Shape = TypeVar("_Shape", bound=Struct)


class BadRequest(ValueError):
    """A client request that cannot be forwarded; the message is safe to send back."""


#: how deep a request body's JSON may nest (a real chat request is a few levels deep)
MAX_JSON_DEPTH = 64
#: how long an id taken from a request may be
MAX_ID_LENGTH = 256
#: msgspec options of every request shape: camelCase on the wire, absent fields left out
WIRE: dict[str, Any] = {"kw_only": True, "omit_defaults": True, "rename": "camel"}

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[^\[\]{}]+")
_DEPTH_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


@dataclass
class Attachment:
    name: str
    media_type: str
    id: str | None = None
    url: str | None = None
    data: str | None = None  # base64, inline
    size: int | None = None


@dataclass
class HistoryMessage:
    role: str
    text: str
    id: str | None = None


@dataclass
class ResumeEntry:
    """An answer to an interrupt the thread's last run ended with (AG-UI's ``resume``):
    ``status`` is ``resolved`` or ``cancelled``; ``payload`` (the answer) and ``metadata`` are
    None when absent (AG-UI never sends them as null)."""

    interrupt_id: str
    status: str
    payload: Any = None
    metadata: dict[str, Any] | None = None
    #: the tool call the answer is about, when the client named the call rather than the
    #: interrupt (an AI SDK approval response): the proxy finds the interrupt by it
    tool_call_id: str | None = None


def decision_entry(
    interrupt_id: str, approved: bool, reason: str | None = None, payload: Any = None, tool_call_id: str | None = None
) -> ResumeEntry:
    """An approve / reject as the resume entry that answers its interrupt: approved is
    ``resolved`` with the answer (``payload``, else ``{"approved": true}``); rejected is
    ``cancelled`` with ``{"approved": false, "reason"?}``."""
    if approved:
        answer = payload if payload is not None else {"approved": True}
        return ResumeEntry(interrupt_id, "resolved", answer, tool_call_id=tool_call_id)
    refusal: dict[str, Any] = {"approved": False}
    if reason:
        refusal["reason"] = reason
    return ResumeEntry(interrupt_id, "cancelled", refusal, tool_call_id=tool_call_id)


@dataclass
class ChatRequest:
    text: str
    thread_id: str | None = None
    history: list[HistoryMessage] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    context: dict[str, Any] | None = None
    agent: str | None = None
    #: answers to the interrupts of the thread's last run (only AG-UI says them)
    resume: list[ResumeEntry] = field(default_factory=list)


def check_depth(body: bytes, what: str = "request") -> None:
    """A :class:`BadRequest` for JSON nested deeper than :data:`MAX_JSON_DEPTH` (a parser would
    recurse on it); brackets inside strings do not count."""
    brackets = _BRACKETS.sub(b"", _JSON_STRING.sub(b"", body))
    if len(brackets) <= 2 * MAX_JSON_DEPTH:
        return
    steps = brackets.translate(_DEPTH_STEPS)  # an opening bracket is 2, a closing one 0
    if max(itertools.accumulate(b - 1 for b in steps)) > MAX_JSON_DEPTH:
        raise BadRequest(f"invalid {what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")


def check_id(value: str | None, field_name: str) -> str | None:
    """An id taken from a request goes into headers, URLs and logs: printable and bounded, or a
    :class:`BadRequest` naming the field."""
    if value is None:
        return None
    if not value or len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise BadRequest(f"{field_name}: expected a printable id of 1 to {MAX_ID_LENGTH} characters")
    return value


def decode_request(body: bytes, shape: type[_Shape], what: str) -> _Shape:
    """A request body as its protocol's shape, or a :class:`BadRequest` saying what is wrong."""
    check_depth(body, what)
    try:
        return msgspec.json.decode(body, type=shape)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"invalid {what}: {exc}") from None
    except msgspec.DecodeError:
        raise BadRequest(f"invalid {what}: the body is not JSON") from None


encode_request = msgspec.json.Encoder().encode


def optional(value: Any) -> Any:
    """A wire field's value, None when absent."""
    return None if value is UNSET else value


def or_unset(value: Any) -> Any:
    """A neutral field's value for a wire shape: absent when None."""
    return UNSET if value is None else value


def request_dropped(protocol: str, what: str, reason: str) -> None:
    """Part of a request the upstream's protocol cannot take is left out: said in the log."""
    log.warning("request_part_dropped", extra={"fields": {"protocol": protocol, "part": what, "reason": reason}})

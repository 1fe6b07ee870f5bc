"""Events streambridge invents, in their one canonical form: a run start with a derived id, a tool
announcement for an outcome without one. A decoder reads the plain forms back as invented, so no
carrier ever describes a synthetic event."""

from __future__ import annotations

import hashlib
from typing import TypeVar

import msgspec
from msgspec import UNSET, Raw

from ..events import (
    Event,
    RunStart,
    ToolCall,
    ToolInputStart,
    encode_event,
)

__all__ = [
    "UNKNOWN_TOOL",
    "announcement",
    "derived_id",
    "invented_call",
    "invented_start",
    "is_derived",
    "read_call",
    "rederived_start",
]

_C = TypeVar("_C", ToolCall, ToolInputStart)


def derived_id(prefix: str, first: Event) -> str:
    """A deterministic id for something the source lacks: same input, same id."""
    return prefix + hashlib.sha1(encode_event(first)).hexdigest()[:12]


_HEX = frozenset("0123456789abcdef")


def is_derived(prefix: str, value: str) -> bool:
    """Whether an id has the form :func:`derived_id` gives it."""
    return len(value) == len(prefix) + 12 and value.startswith(prefix) and _HEX.issuperset(value[len(prefix) :])


_INVENTED_START = RunStart(synthetic=True)
#: the name of a tool call an encoder announces for an outcome (or input) whose call the source
#: never announced: every protocol needs calls announced first
UNKNOWN_TOOL = "unknown"
_INVENTED_CALLS: dict[type, Event] = {
    ToolCall: ToolCall(name=UNKNOWN_TOOL, synthetic=True),
    ToolInputStart: ToolInputStart(name=UNKNOWN_TOOL, synthetic=True),
}
_EMPTY_INPUT = Raw(b"{}")


def announcement(kind: type[ToolCall] | type[ToolInputStart], call_id: str) -> Event:
    """The tool call (or input start) an encoder invents to announce ``call_id``."""
    return kind(call_id=call_id, name=UNKNOWN_TOOL, synthetic=True)


def invented_call(event: Event) -> bool:
    """Whether a tool call (or input start) is an invented announcement: targets write it as
    a plain call of that name with an empty input, which :func:`read_call` reads back."""
    template = _INVENTED_CALLS.get(type(event))
    return template is not None and event.synthetic and msgspec.structs.replace(event, call_id="") == template


def read_call(event: _C) -> _C:
    """For every decoder: a call of the invented shape is the invented announcement."""
    if event.name != UNKNOWN_TOOL or event.synthetic:
        return event
    probe = msgspec.structs.replace(event, call_id="", synthetic=True)
    if type(probe) is ToolCall:
        if probe.input == _EMPTY_INPUT:
            probe.input = UNSET
        if probe.arguments_json == "":
            probe.arguments_json = UNSET
    if probe == _INVENTED_CALLS[type(event)]:
        event.synthetic = True
        if type(event) is ToolCall:
            event.input = event.arguments_json = UNSET
    return event


def rederived_start(event: RunStart) -> bool:
    """An invented start whose run id was derived from the invented start itself: every encoder
    that derives a run id derives that one again, so a target without run ids need not carry it."""
    run_id = event.run_id
    return (
        invented_start(event)
        and isinstance(run_id, str)
        and len(run_id) > 12
        and run_id == derived_id(run_id[:-12], _INVENTED_START)
    )


def invented_start(event: RunStart) -> bool:
    """A run start an encoder made up for a source without one (at most a derived run id).

    Targets that need a run start write it as a plain one with that id, and their decoders
    read an id of the derived form back as this invented start: no carrier describes it."""
    return event.synthetic and msgspec.structs.replace(event, run_id=UNSET) == _INVENTED_START

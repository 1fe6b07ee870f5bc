"""The carrier: a data part in a protocol's escape hatch that holds a whole event (streambridge's
own JSON) and how many of the following frames render it, so the same protocol's decoder restores
the event exactly (the cross-trip law). See docs/design.md."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw

from ..events import (
    EVENT_TYPES,
    DataPart,
    Event,
    StepStart,
    Terminal,
    TextDelta,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    encode_event,
)
from .envelope import envelope_decoder, json_encode

__all__ = [
    "BARE_STRUCTURE",
    "NEEDS_CARE",
    "TOOL_EVENTS",
    "Payload",
    "as_received",
    "carrier_body",
    "carrier_decoder",
    "carrier_name",
    "is_id_line",
    "late_decoder",
    "rider_decoder",
    "verbatim_payloads",
]

#: what an encoder hands to ``_put``: an unnamed frame's payload, or ``(event name, payload)``.
Payload = bytes | tuple[str, bytes]


class _Carrier(msgspec.Struct):
    event: Raw
    covers: int = 0
    #: a terminal whose answer came whole (no delta streamed it): the covered frames start with
    #: that text, written for readers that need text frames
    whole: bool = False
    #: the events of the bare frames just before it that had no slot (codecs/riding.py, "late")
    late: list[Raw] = []


carrier_decoder = msgspec.json.Decoder(_Carrier)


class _Rider(msgspec.Struct):
    """A carrier riding on a frame (codecs/riding.py): the events riding forward on it (the first
    ``ahead`` of them came before the step brackets a reader holds), and whether the frame's own
    event rides there too (then the carrier's ``event``, else empty)."""

    before: list[Raw] = []
    event: Raw = Raw()
    ahead: int = 0
    late: list[Raw] = []


rider_decoder = msgspec.json.Decoder(_Rider)


class _Late(msgspec.Struct):
    """A frame of its own saying the late events (when no frame with a slot came next)."""

    late: list[Raw]


late_decoder = msgspec.json.Decoder(_Late)


def as_received(part: DataPart) -> bool:
    """Whether writing a data part's ``data`` (its origin's own frame) says all of it: the frame
    has no place for the part's ``id``, ``transient`` or unknown fields."""
    return part.id is UNSET and part.transient is UNSET and part.extra is UNSET


def is_id_line(event_id: str) -> bool:
    """Whether an id can stand on an SSE ``id:`` line and be read back the same."""
    return bool(event_id) and "\n" not in event_id and "\r" not in event_id and "\x00" not in event_id


def verbatim_payloads(payloads: list[Payload], members: dict[str, Raw]) -> list[Payload]:
    """The payloads with the event's frame (the first unnamed one) saying ``members`` as
    received, in place of this codec's encoding of them; ``members`` holding every member of
    the frame (the whole frame as received: see ``Decoder._read_in_order``) in their order."""
    out = list(payloads)
    for i, payload in enumerate(out):
        if type(payload) is bytes:
            frame = envelope_decoder.decode(payload)
            if members.keys() >= frame.keys():
                frame = members
            else:
                frame.update(members)
            out[i] = json_encode(frame)
            break
    return out


#: the events ``_event`` does something for before the codec sees them
NEEDS_CARE = frozenset((TextDelta, Terminal, ToolInputDelta, ToolOutput, ToolError, ToolDenied))
#: the events of a tool call's life: text and reasoning parts an encoder opened close before them
TOOL_EVENTS = frozenset(
    (
        ToolInputStart,
        ToolInputDelta,
        ToolCall,
        ToolApprovalRequest,
        ToolApprovalSettled,
        ToolOutput,
        ToolError,
        ToolDenied,
    )
)


def carrier_body(event: Event, covers: int, *, keep_id: bool = True, whole: bool = False) -> bytes:
    """The shared members of a carrier: ``"covers":N,"whole":true,"event":{...}`` (covers left
    out when 0, whole when false).

    The event's ``event_id`` is left out when the frame's own ``id:`` line says it."""
    if not keep_id and event.event_id is not UNSET:
        event = msgspec.structs.replace(event, event_id=UNSET)
    body = b'"event":' + encode_event(event)
    if whole:
        body = b'"whole":true,' + body
    if covers:
        return b'"covers":' + str(covers).encode() + b"," + body
    return body


def carrier_name(event: Event) -> bytes:
    """``"data-<name>"`` as JSON: the data part's own name, or the event's type."""
    if type(event) is DataPart and event.name:
        return json_encode("data-" + event.name)
    return _CARRIER_NAMES[type(event)]


_CARRIER_NAMES: dict[type, bytes] = {cls: json_encode("data-" + tag) for tag, cls in EVENT_TYPES.items()}
BARE_STRUCTURE: dict[tuple[type, bool], Event] = {
    (StepStart, False): StepStart(),  # (synthetic brackets are never carried)
}

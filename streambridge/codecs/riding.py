"""A carrier riding on the frame it describes, in a slot its protocol keeps for foreign detail.

At ``exact`` fidelity an event its frame cannot say whole (an AG-UI event's timestamp, a field
the target has no member for) needs its carrier. Where the frame has a member meant for what a
producer translated it from (AI SDK chunks' ``providerMetadata``, AG-UI events' ``rawEvent``),
or a member its published client is shown to pass over (nest's), the carrier goes there, under
``streambridge``, instead of in a frame of its own: the stream has no extra frame. It is always
the frame's last member, so the frame as it stood without it is the bytes before it, and its
protocol's decoder reads the carrier back from there.

An event with no frame of its own (a step bracket AG-UI has no frame for, an AI SDK message's
metadata in AG-UI) rides *forward*: on the next frame that has the slot, in a ``before`` list
that its decoder reads before that frame's own event (see ``Encoder._board``).

An event whose frame has no slot (AI SDK's ``tool-input-delta`` and ``tool-approval-request``
are strict objects) rides *late*: its bare frame goes out, and its carrier follows on the next
frame that has the slot, or in the next carrier, in a ``late`` list with one entry per such
frame (``null`` where the frame said its event whole). A decoder holds those bare frames' events
until the next frame: then each is replaced by its entry, or let out as read. Only frames of a
tool call whose start came with a carrier ride late (both sides know which), so a native
producer's stream is never held (see ``Encoder._put_late`` and ``Decoder._held_late``)."""

from __future__ import annotations

__all__ = [
    "AG_UI_SLOT",
    "AI_SDK_SLOT",
    "NEST_SLOT",
    "before_members",
    "late_members",
    "ridden",
    "ride",
    "ride_more",
    "rides_on",
]

#: how a riding carrier's member starts in each protocol; the carrier's members follow, then
#: one ``}`` per brace the slot opened and the frame's own
AI_SDK_SLOT = b',"providerMetadata":{"streambridge":{'
AG_UI_SLOT = b',"rawEvent":{"streambridge":{'
#: nest has no member for foreign detail; its published client reads the members it knows of
#: each kind and passes over the rest (tests/test_conformance_nest.py), so the carrier is one
NEST_SLOT = b',"streambridge":{'


def _closing(slot: bytes) -> bytes:
    return b"}" * (slot.count(b"{") + 1)


def ride(frame: bytes, carrier_members: bytes, slot: bytes) -> bytes:
    """``frame`` (a JSON object without the slot's member) carrying a carrier's members."""
    return frame[:-1] + slot + carrier_members + _closing(slot)


def ridden(data: bytes, slot: bytes) -> tuple[bytes, bytes] | None:
    """A frame that carries a carrier: (the carrier as a JSON object, the frame without it)."""
    closing = _closing(slot)
    if not data.endswith(closing):
        return None
    at = data.rfind(slot)
    if at == -1:
        return None
    return b"{" + data[at + len(slot) : -len(closing)] + b"}", data[:at] + b"}"


def rides_on(frame: bytes, slot: bytes) -> bool:
    """Whether a carrier may ride on ``frame``: a JSON object with its tag first, whose source
    said no member of the slot's name itself (that member stays as the source wrote it)."""
    return frame.startswith((b'{"type":"', b'{"kind":"')) and slot[1 : slot.index(b":")] not in frame


def before_members(events: list[bytes]) -> bytes:
    """The members of a carrier that say the events (JSON each) riding forward on its frame."""
    return b'"before":[' + b",".join(events) + b"]"


def late_members(entries: list[bytes]) -> bytes:
    """The members of a carrier that say the events of the bare frames before its frame."""
    return b'"late":[' + b",".join(entries) + b"]"


def ride_more(frame: bytes, members: bytes, slot: bytes) -> bytes | None:
    """``frame`` with carrier ``members`` added: in the carrier riding on it, else in a new one;
    None when it can take none (its source said the slot's member itself)."""
    closing = _closing(slot)
    if frame.endswith(closing) and frame.rfind(slot) != -1:
        return frame[: -len(closing)] + b"," + members + closing
    if rides_on(frame, slot):
        return ride(frame, members, slot)
    return None

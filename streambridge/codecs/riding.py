"""A carrier riding on the frame it describes, in a slot its protocol keeps for foreign detail.

At ``exact`` fidelity an event its frame cannot say whole (an AG-UI event's timestamp, a field
the target has no member for) needs its carrier. Where the frame has a member meant for what a
producer translated it from (AI SDK chunks' ``providerMetadata``, AG-UI events' ``rawEvent``),
the carrier goes there, under ``streambridge``, instead of in a frame of its own: the stream has
no extra frame. It is always the frame's last member, so the frame as it stood without it is
the bytes before it, and its protocol's decoder reads the carrier back from there."""

from __future__ import annotations

__all__ = ["AG_UI_SLOT", "AI_SDK_SLOT", "ridden", "ride"]

#: how a riding carrier's member starts in each protocol; the carrier's members follow, then ``}}}``
AI_SDK_SLOT = b',"providerMetadata":{"streambridge":{'
AG_UI_SLOT = b',"rawEvent":{"streambridge":{'


def ride(frame: bytes, carrier_members: bytes, slot: bytes) -> bytes:
    """``frame`` (a JSON object without the slot's member) carrying a carrier's members."""
    return frame[:-1] + slot + carrier_members + b"}}}"


def ridden(data: bytes, slot: bytes) -> tuple[bytes, bytes] | None:
    """A frame that carries a carrier: (the carrier as a JSON object, the frame without it)."""
    if not data.endswith(b"}}}"):
        return None
    at = data.rfind(slot)
    if at == -1:
        return None
    return b"{" + data[at + len(slot) : -3] + b"}", data[:at] + b"}"


def rides_on(frame: bytes, slot: bytes) -> bool:
    """Whether a carrier may ride on ``frame``: a JSON object with a type, whose source said no
    member of the slot's name itself (that member stays as the source wrote it)."""
    return frame.startswith(b'{"type":"') and slot[1 : slot.index(b":")] not in frame

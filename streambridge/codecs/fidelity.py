"""Fidelity: what an encoder promises its reader.

``exact`` (the library's and ``convert``'s default) keeps the cross-trip law: whatever the
target cannot say travels in a carrier, so the source's codec gets every event back, byte for
byte. ``client`` (the proxy's default) writes what a native backend of the target would send to
a live client: transport detail with no meaning to the target's users (a frame's timestamp, ids
of the source, the carriers' bookkeeping) is dropped, and what has meaning but no frame in the
target reaches the client as a data part (marked transient where the target can say so, unless
it belongs to the answer). See docs/design.md.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..events import (
    ArtifactPresented,
    ArtifactRefused,
    Citation,
    DataPart,
    Elicitation,
    Event,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    Sources,
    StepFinish,
    StepStart,
    TextEnd,
    TextStart,
    ToolInputDelta,
    ToolInputStart,
    UiComponent,
    encode_event,
)
from .envelope import envelope_decoder, json_encode

__all__ = ["ANSWER", "FIDELITIES", "STRUCTURE", "Fidelity", "client_data", "parse_fidelity"]

Fidelity = Literal["exact", "client"]
#: every fidelity, the default first
FIDELITIES: tuple[Fidelity, ...] = ("exact", "client")

#: events that only shape a stream: at ``client`` fidelity, where the target has no frame for
#: one, it is left out (the target's client shapes its message without it)
STRUCTURE: frozenset[type[Event]] = frozenset(
    (
        RunStart,
        StepStart,
        StepFinish,
        TextStart,
        TextEnd,
        ReasoningStart,
        ReasoningEnd,
        ToolInputStart,
        ToolInputDelta,
    )
)

#: events that belong to the answer a user keeps: their data parts are never transient
ANSWER: frozenset[type[Event]] = frozenset(
    (ArtifactPresented, ArtifactRefused, Sources, Citation, UiComponent, Elicitation, DataPart)
)


def parse_fidelity(value: str) -> Fidelity:
    """A fidelity name from outside (a flag, a config file) checked into :data:`Fidelity`."""
    for fidelity in FIDELITIES:
        if value == fidelity:
            return fidelity
    raise ValueError(f"unknown fidelity {value!r}: expected 'exact' or 'client'")


#: members of every event that are transport, not meaning: a client is not shown them
_TRANSPORT = frozenset(
    (
        "type",
        *(
            f.encode_name
            for f in msgspec.structs.fields(Event)
            if f.name in ("synthetic", "event_id", "verbatim", "extra")
        ),
    )
)


def client_data(event: Event) -> bytes:
    """An event's meaningful members as a JSON object, for the data part a client gets at
    ``client`` fidelity: its fields without the transport ones, so nothing in it reads as a
    carrier."""
    members = envelope_decoder.decode(encode_event(event))
    return json_encode({name: raw for name, raw in members.items() if name not in _TRANSPORT})

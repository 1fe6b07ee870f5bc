"""agentfootprint's own part of ``streambridge validate``.

The SSE event name of every frame is its envelope type, and the bus has about 60 types in some
two dozen domains (doc §4): a name is the protocol's when it has the ``agentfootprint.`` prefix
(or is streambridge's carrier), and an unmapped type is one the protocol defines when its
domain is one of the bus's. A type of an unknown domain is reported as an unknown kind."""

from __future__ import annotations

import msgspec

from ..codec import Rules
from ..framing import Frame
from .mapping import DECODERS, PAYLOADS
from .wire import CARRIER_TYPE, PREFIX

__all__ = ["AgentFootprintRules"]


class _Payload(msgspec.Struct):
    payload: msgspec.Raw


#: the bus's event domains (``agentfootprint.<domain>.<event>``)
DOMAINS = frozenset(
    [
        "composition",
        "agent",
        "stream",
        "context",
        "memory",
        "tools",
        "skill",
        "map",
        "integrity",
        "validation",
        "permission",
        "credential",
        "risk",
        "fallback",
        "cost",
        "eval",
        "error",
        "reliability",
        "resilience",
        "pause",
        "checkin",
        "middleware",
        "embedding",
        "artifacts",
    ]
)


class AgentFootprintRules(Rules):
    event_names = (*(PREFIX + name for name in PAYLOADS), CARRIER_TYPE)
    kept_members = frozenset({"meta", "payload"})  # kept with their event; unknown fields: see frame()

    def frame(self, frame: Frame, name: str, data: bytes) -> None:
        """A mapped payload with members agentfootprint does not define (a newer release's)."""
        decoder = DECODERS.get(name)
        if decoder is None:
            return
        try:
            decoder.decode(msgspec.json.decode(data, type=_Payload).payload)
        except msgspec.ValidationError as exc:
            if "unknown field" in str(exc):
                self.check.add("SB007", f"unknown field(s) in the payload of {name}: {exc}")
        except msgspec.DecodeError:
            return  # the decoder reports a frame it cannot read

    def known_name(self, name: str) -> bool:
        return name.startswith(PREFIX) or name == CARRIER_TYPE

    def known_kind(self, kind: str) -> bool:
        return kind.startswith(PREFIX) and kind[len(PREFIX) :].split(".", 1)[0] in DOMAINS

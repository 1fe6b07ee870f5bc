"""The codec registry: one sans-IO decoder and encoder per protocol, all through one event model.

``codecs`` lives inside the package: a top-level ``codecs`` would shadow Python's own module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import EVENT_TYPES
from . import agentkit_http, nest_http, oma_http
from .agentkit import AgentkitDecoder, AgentkitEncoder
from .decoder import Decoder
from .encoder import Encoder
from .errors import StreamError
from .framing import DEFAULT_MAX_EVENT_SIZE, Framing
from .http import HttpSurface
from .nest import NestDecoder, NestEncoder
from .oma import OmaDecoder, OmaEncoder

__all__ = ["REGISTRY", "Codec", "StreamError", "get", "names"]


@dataclass(frozen=True)
class Codec:
    """A protocol: its decoder and encoder, framings, which event types it says natively, and its
    HTTP surface (requests, routes, run semantics, upstream URL rules).

    Every other event type travels through the protocol as a data part (see docs/mapping.md).
    """

    name: str
    title: str
    decoder_class: type[Decoder]
    encoder_class: type[Encoder]
    default_framing: Framing
    native: frozenset[str]
    http: HttpSurface
    aliases: tuple[str, ...] = ()
    framings: tuple[Framing, ...] = ("sse", "ndjson")
    content_types: dict[str, str] = field(
        default_factory=lambda: {"sse": "text/event-stream", "ndjson": "application/x-ndjson"}
    )

    def decoder(
        self, framing: Framing | None = None, *, strict: bool = False, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    ) -> Decoder:
        """A decoder; with no ``framing`` it detects SSE or NDJSON from the input's first bytes."""
        return self.decoder_class(framing, strict=strict, max_event_size=max_event_size)

    def encoder(self, framing: Framing | None = None, **options: object) -> Encoder:
        return self.encoder_class(framing or self.default_framing, **options)

    @property
    def carried(self) -> frozenset[str]:
        """Event types this protocol carries as data parts."""
        return frozenset(EVENT_TYPES) - self.native


_COMMON = {"text", "tool-call", "tool-output", "tool-error", "terminal", "reasoning"}

REGISTRY: dict[str, Codec] = {
    c.name: c
    for c in (
        Codec(
            "agentkit",
            "@dataverse-kit/agent-kit AgentEvent",
            AgentkitDecoder,
            AgentkitEncoder,
            "sse",
            frozenset(_COMMON | {"run-start", "tool-denied", "sources", "citation", "suggestions", "status"}),
            agentkit_http.SURFACE,
        ),
        Codec(
            "nest",
            "@dudousxd/nestjs-agent chat SSE (and its AdonisJS copy)",
            NestDecoder,
            NestEncoder,
            "sse",
            frozenset(
                _COMMON
                | {
                    "run-start",
                    "step-start",
                    "step-finish",
                    "tool-input-start",
                    "tool-input-delta",
                    "tool-denied",
                    "tool-approval-request",
                    "tool-approval-settled",
                    "ui",
                    "title",
                    "elicitation",
                    "queue",
                    "message-metadata",
                }
            ),
            nest_http.SURFACE,
            aliases=("adonis",),
        ),
        Codec(
            "oma",
            "open-multi-agent StreamEvent",
            OmaDecoder,
            OmaEncoder,
            "ndjson",
            frozenset(_COMMON),
            oma_http.SURFACE,
        ),
    )
}
_ALIASES = {alias: c.name for c in REGISTRY.values() for alias in c.aliases}


def names() -> list[str]:
    """Codec ids, aliases excluded."""
    return list(REGISTRY)


def get(name: str) -> Codec:
    """A codec by id or alias; ``KeyError`` names the known ones."""
    key = _ALIASES.get(name, name)
    try:
        return REGISTRY[key]
    except KeyError:
        known = ", ".join([*REGISTRY, *_ALIASES])
        raise KeyError(f"unknown protocol {name!r}: expected one of {known}") from None

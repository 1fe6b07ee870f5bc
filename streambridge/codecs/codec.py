"""The declared codec interface: what a protocol package gives the registry.

A protocol is one package under ``streambridge/codecs/`` whose ``__init__`` defines ``CODEC``,
a :class:`Codec`: its decoder and encoder classes (subclasses of
:class:`~streambridge.codecs.decoder.Decoder` and :class:`~streambridge.codecs.encoder.Encoder`,
whose hooks are documented there), its framings, the event types it says natively, and its
HTTP surface (:class:`~streambridge.codecs.http.HttpSurface`). The registry
(``streambridge.codecs``) lists the packages; the proxy, the CLI and the law tests loop over it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import EVENT_TYPES
from .decoder import Decoder
from .encoder import Encoder
from .framing import DEFAULT_MAX_EVENT_SIZE, Framing
from .http import HttpSurface

__all__ = ["COMMON_NATIVE", "Codec"]

#: the event types every protocol says natively
COMMON_NATIVE = frozenset({"text", "tool-call", "tool-output", "tool-error", "terminal", "reasoning"})


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
        self,
        framing: Framing | None = None,
        *,
        strict: bool = False,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        hot_path: bool = True,
    ) -> Decoder:
        """A decoder; with no ``framing`` it detects SSE or NDJSON from the input's first bytes.
        ``hot_path=False`` sends every frame the full way (tests compare the two)."""
        return self.decoder_class(framing, strict=strict, max_event_size=max_event_size, hot_path=hot_path)

    def encoder(self, framing: Framing | None = None, **options: object) -> Encoder:
        return self.encoder_class(framing or self.default_framing, **options)

    @property
    def carried(self) -> frozenset[str]:
        """Event types this protocol carries as data parts."""
        return frozenset(EVENT_TYPES) - self.native

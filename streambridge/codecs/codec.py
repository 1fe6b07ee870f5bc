"""The declared codec interface: what a protocol package gives the registry.

A protocol is one package under ``streambridge/codecs/`` whose ``__init__`` defines ``CODEC``,
a :class:`Codec`: its decoder and encoder classes (subclasses of
:class:`~streambridge.codecs.decoder.Decoder` and :class:`~streambridge.codecs.encoder.Encoder`,
whose hooks are documented there), its framings, the event types it says natively, and its
HTTP surface (:class:`~streambridge.codecs.http.HttpSurface`). The registry
(``streambridge.codecs``) lists the packages; the proxy, the CLI and the law tests loop over it.

Two hooks let the CLI name no protocol (each has a default, so a protocol gives only what it has):
``sniff`` says how strongly a frame looks like the protocol (``streambridge`` picks the best of
every registered codec), and ``rules`` is the protocol's own part of ``streambridge validate`` (a
:class:`Rules` subclass). Both stay sans-IO.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Protocol

from ..events import EVENT_TYPES, Event, RunStart, Terminal
from .decoder import Decoder
from .encoder import Encoder
from .fidelity import Fidelity, parse_fidelity
from .framing import DEFAULT_MAX_EVENT_SIZE, Frame, Framing
from .http import HttpSurface

__all__ = ["ARTIFACTS", "COMMON_NATIVE", "Codec", "Likeness", "RuleContext", "Rules"]

#: the event types every protocol says natively
COMMON_NATIVE = frozenset({"text", "tool-call", "tool-output", "tool-error", "terminal", "reasoning"})
#: what a protocol says natively when its encoder sets ``artifact_parts`` (a ``data-artifact`` part)
ARTIFACTS = frozenset({"artifact-presented", "artifact-refused"})


class Likeness(IntEnum):
    """How strongly one frame looks like a protocol (what :attr:`Codec.sniff` answers). Sniffing
    asks every registered codec about each first frame and takes the highest (the first registered
    on a tie), so the steps say how much a protocol's evidence outweighs another's."""

    NONE = 0  # not this protocol, or the frame does not tell
    SHAPE = 1  # the frame has the protocol's shape, which another protocol may share
    NAMES = 2  # the frame uses names (fields, kinds) this protocol defines
    MARKER = 3  # a marker only this protocol writes


def _unlike(frame: Frame) -> int:
    return Likeness.NONE


class RuleContext(Protocol):
    """What a protocol's :class:`Rules` see of the validation in progress (``streambridge validate``
    implements it): the framing, the capture's headers, and where findings go."""

    @property
    def framing(self) -> Framing: ...

    def add(self, rule: str, message: str) -> None:
        """A finding of ``rule`` (an id of the shared catalogue or of the protocol's own) at the current frame."""

    def header(self, name: str) -> str | None:
        """A response header of the capture being validated (None without a capture or header)."""

    def start(self) -> None:
        """Count one run start (a second one is a finding: exactly one per stream)."""


class Rules:
    """A protocol's own validation rules, beside the generic ones of ``streambridge validate``.

    One instance checks one transcript (it may keep state). The validator calls, in this order:
    :meth:`named` and :meth:`frame` for each frame (after checking the frame's event name against
    :attr:`event_names`), then for each decoded event :meth:`first_event` (the first only), then
    :meth:`run_start` or :meth:`terminal` by kind, then :meth:`event`; :meth:`end` after the last.
    The defaults describe a protocol with unnamed frames, one run start per stream and nothing more.
    """

    #: the SSE event names the protocol uses (any other is a finding); none by default
    event_names: ClassVar[tuple[str, ...]] = ()
    #: kinds the decoder keeps as passthroughs although the protocol defines them (no finding)
    known_passthrough: ClassVar[frozenset[str]] = frozenset()
    #: members the decoder keeps with an event on purpose (agentfootprint's ``meta``, and its
    #: ``payload`` when it says more than the mapping writes): no finding of their own
    kept_members: ClassVar[frozenset[str]] = frozenset()
    #: a tool call announced again replaces the earlier one (no finding for the repeat)
    repeated_call_replaces: ClassVar[bool] = False
    #: the rules only this protocol checks, beside the shared catalogue
    #: (:mod:`streambridge.validate.rules`): id → (name, severity ``error`` / ``warning``,
    #: description). A new id takes a prefix of the protocol's own (not ``SB``: nest's and
    #: agentkit's ``SB`` ids predate catalogues); ids are never reused or renumbered
    catalogue: ClassVar[dict[str, tuple[str, str, str]]] = {}

    def __init__(self, check: RuleContext) -> None:
        self.check = check

    def known_name(self, name: str) -> bool:
        """Whether the protocol uses this SSE event name (by default: one of :attr:`event_names`)."""
        return name in self.event_names

    def known_kind(self, kind: str) -> bool:
        """Whether a kind kept as a passthrough is one the protocol defines (no finding)."""
        return kind in self.known_passthrough

    def named(self, frame: Frame) -> tuple[str, bytes]:
        """The frame's event name and data (a protocol may carry names inside NDJSON lines)."""
        return frame.event, frame.data

    def frame(self, frame: Frame, name: str, data: bytes) -> None:
        """Rules on one frame as written, before it is decoded."""

    def first_event(self, event: Event) -> None:
        """Rules on the first decoded event (what a stream must open with)."""

    def run_start(self, event: RunStart) -> None:
        """A decoded run start: it counts toward exactly one per stream."""
        self.check.start()

    def terminal(self, end: Terminal) -> None:
        """Rules on the terminal event the stream wrote (not one the decoder made up)."""

    def event(self, event: Event) -> None:
        """Rules on every decoded event, in order (after the generic per-kind rules)."""

    def end(self) -> None:
        """Rules on the whole stream, after its last event."""


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
    #: how strongly one frame looks like this protocol (:class:`Likeness`); sniffing reads the first frames
    sniff: Callable[[Frame], int] = _unlike
    #: the protocol's own rules for ``streambridge validate`` (see :class:`Rules`)
    rules: type[Rules] = Rules
    #: response headers its clients expect on a stream (the proxy sends them; names in lower case)
    response_headers: dict[str, str] = field(default_factory=dict)
    #: kinds its decoder keeps whole (as data parts) that only bracket other events, a span's
    #: start and end: at ``client`` fidelity another protocol's client is not sent them
    spans: frozenset[str] = frozenset()

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

    def encoder(self, framing: Framing | None = None, *, fidelity: Fidelity = "exact", **options: object) -> Encoder:
        """An encoder writing ``framing`` (the protocol's own by default) at ``fidelity``."""
        encoder = self.encoder_class(framing or self.default_framing, **options)
        encoder.fidelity = parse_fidelity(fidelity)
        return encoder

    def stream_headers(self, framing: Framing) -> dict[str, str]:
        """The headers of a streamed answer in ``framing``: its content type, no caching or proxy
        buffering, and in the default framing exactly the headers the protocol's clients expect."""
        headers = {
            "Content-Type": self.content_types[framing],
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
        if framing == self.default_framing:
            own = {name.lower() for name in self.response_headers}
            headers = {k: v for k, v in headers.items() if k.lower() not in own}
            headers.update(self.response_headers)
        return headers

    @property
    def carried(self) -> frozenset[str]:
        """Event types this protocol carries as data parts."""
        return frozenset(EVENT_TYPES) - self.native

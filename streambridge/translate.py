"""Streaming translation: chunks of one protocol in, chunks of another out.

:class:`Translator` is the sans-IO core (``feed`` bytes, get bytes; ``close`` at the end); the
proxy and the CLI use it directly. :func:`translate` wraps it for iterables and async iterables:
each input chunk gives at most one output chunk, produced before the next input is read.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, overload

import msgspec

from .codecs import StreamError, get
from .codecs.encoder import EncodingSink
from .codecs.errors import Diagnostic
from .codecs.fidelity import Fidelity
from .codecs.framing import DEFAULT_MAX_EVENT_SIZE, Framing
from .events import Elicitation, Event, RunStart, Terminal, ToolApprovalRequest

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing.TypeIs is Python 3.13

__all__ = ["Translator", "translate"]


class _AskingSink(EncodingSink):
    """An encoding sink for the proxy's needs beyond translation. It keeps what the source asked
    (approval requests, elicitations) when ``collecting``, and, when ``hold`` is on, withholds
    the successful terminal of a run that asked: the run ended to ask (AG-UI) while the client's
    protocol waits for the answer in the same stream. With ``thread_seen`` set, the source's
    run start tells it the source's own thread id, and names the client's ``conversation``
    instead (an upstream that chooses its thread ids: the client knows its conversation by its
    own id)."""

    __slots__ = ("asks", "collecting", "conversation", "held", "hold", "skip_start", "thread_seen")

    def __init__(self, sink: EncodingSink, hold: bool) -> None:
        super().__init__(sink.encoder, sink.parts)
        self.count = sink.count
        self.terminal = sink.terminal
        self.asks: list[ToolApprovalRequest | Elicitation] = []
        self.collecting = False
        self.hold = hold
        self.held: Terminal | None = None
        self.skip_start = False
        self.conversation: str | None = None
        self.thread_seen: Callable[[str], None] | None = None

    def append(self, event: Event) -> None:
        if type(event) is ToolApprovalRequest or type(event) is Elicitation:
            if self.collecting:
                self.asks.append(event)
        elif type(event) is Terminal and self.hold and self.asks and self.terminal is None:
            if event.status == "succeeded":
                self.count += 1
                self.held = event
                return
        elif type(event) is RunStart:
            if self.skip_start:
                self.skip_start = False  # the resumed run's start: the client's run goes on
                self.count += 1
                return
            if self.thread_seen is not None:
                event = self._named(event, self.thread_seen)
        super().append(event)

    def _named(self, start: RunStart, seen: Callable[[str], None]) -> RunStart:
        """The source's first run start: its thread id told, the client's conversation named."""
        self.thread_seen = None
        if isinstance(start.thread_id, str) and start.thread_id:
            seen(start.thread_id)
        if self.conversation is None:
            return start
        return msgspec.structs.replace(start, thread_id=self.conversation)


class Translator:
    """Decode ``source`` and encode ``target`` in one step per received chunk."""

    def __init__(
        self,
        source: str,
        target: str,
        *,
        source_framing: Framing | None = None,
        target_framing: Framing | None = None,
        strict: bool = False,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        fidelity: Fidelity = "exact",
        **encoder_options: object,
    ) -> None:
        self.source = get(source)
        self.target = get(target)
        self.decoder = self.source.decoder(source_framing, strict=strict, max_event_size=max_event_size)
        self.encoder = self.target.encoder(target_framing, fidelity=fidelity, **encoder_options)
        self.encoder.share_text(self.decoder.answer)  # every event reaches it as soon as it is decoded
        self._sink = self.encoder.sink([])  # what the decoder writes into, for every chunk
        self._fed = False
        self._closed = False
        #: the conversation a source's run start is said as (see :meth:`name_thread`)
        self.thread_name: str | None = None

    @property
    def events_in(self) -> int:
        """Events decoded so far."""
        return self._sink.count

    @property
    def terminal(self) -> Terminal | None:
        """The source's terminal event, once decoded (a terminal is always an input's last event)."""
        return self._sink.terminal

    def feed(self, data: bytes) -> bytes:
        """Translate one received chunk: every event is encoded as it is decoded.

        In strict mode a bad frame raises :class:`~streambridge.codecs.StreamError`; what the
        chunk held before it is translated all the same and travels on the error as
        ``exc.output`` (write it, then end the stream: nothing decoded is lost)."""
        self._fed = True
        parts: list[bytes]
        self._sink.parts = parts = []
        try:
            self.decoder.feed(data, self._sink)
        except StreamError as exc:
            exc.output = b"".join(parts)
            parts.clear()
            raise
        out = b"".join(parts)
        parts.clear()  # the sink keeps the list: not its pieces while the output is written
        return out

    def take_diagnostics(self) -> list[Diagnostic]:
        """What the decoder and the encoder went on from since the last call (bad frames
        forwarded as data parts, a missing terminal, events after the terminal): codecs log
        nothing, their caller says these (the proxy logs them, the CLI warns)."""
        decoder, encoder = self.decoder, self.encoder
        if not decoder.diagnostics and not encoder.diagnostics:
            return []
        return decoder.take_diagnostics() + encoder.take_diagnostics()

    def feed_events(self, events: Iterable[Event]) -> bytes:
        return self.encoder.encode(events)

    def collect_asks(self, *, hold: bool) -> None:
        """Keep the approval requests and elicitations decoded (:attr:`asks`); with ``hold``,
        withhold the successful terminal of a run that asked (:attr:`held`) until the run goes on
        (:meth:`go_on`) or is let end (:meth:`release`)."""
        sink = self._proxy_sink()
        sink.collecting, sink.hold = True, hold

    def name_thread(self, conversation: str | None, seen: Callable[[str], None]) -> None:
        """Tell ``seen`` the thread id the source's run start names (an upstream's own thread),
        and say ``conversation`` there instead when given (what the client calls it)."""
        sink = self._proxy_sink()
        sink.conversation, sink.thread_seen = conversation, seen
        self.thread_name = conversation

    def _proxy_sink(self) -> _AskingSink:
        if not isinstance(self._sink, _AskingSink):
            self._sink = _AskingSink(self._sink, hold=False)
        return self._sink

    @property
    def asks(self) -> list[ToolApprovalRequest | Elicitation]:
        """What the source asked so far (with :meth:`collect_asks`; otherwise nothing)."""
        return self._sink.asks if isinstance(self._sink, _AskingSink) else []  # (empty unless collected)

    @property
    def holds_asks(self) -> bool:
        """Whether a run that ends to ask is held (see :meth:`collect_asks`)."""
        return isinstance(self._sink, _AskingSink) and self._sink.hold

    @property
    def held(self) -> Terminal | None:
        """The terminal withheld from a run that ended to ask (see :meth:`collect_asks`)."""
        return self._sink.held if isinstance(self._sink, _AskingSink) else None

    def go_on(self) -> None:
        """The held run goes on in a new source run (resumed upstream): decoded by a fresh
        decoder that adds to the answer so far, its run start dropped, its terminal the one."""
        sink = self._sink
        if not isinstance(sink, _AskingSink) or sink.held is None:
            raise RuntimeError("no run is held")
        previous = self.decoder
        self.decoder = self.source.decoder(
            previous.framing, strict=previous.strict, max_event_size=previous.max_event_size
        )
        self.decoder.continues(previous)
        self.decoder.diagnostics = previous.take_diagnostics()
        self.encoder.share_text(self.decoder.answer)
        sink.held, sink.skip_start = None, True
        sink.asks.clear()

    def release(self) -> bytes:
        """Let a held run end as its source ended it: the held terminal, encoded."""
        sink = self._sink
        if not isinstance(sink, _AskingSink) or sink.held is None:
            return b""
        held, sink.held = sink.held, None
        self._closed = True
        return self.encoder.encode([held])

    def use_source_framing(self, framing: Framing) -> None:
        """Read the source in another framing (say, as the upstream's Content-Type declares).

        Only before the first byte was fed: framing cannot change inside a stream."""
        if self._fed:
            raise RuntimeError("the source framing cannot change after input was fed")
        decoder = self.decoder
        self.decoder = self.source.decoder(framing, strict=decoder.strict, max_event_size=decoder.max_event_size)
        self.encoder.share_text(self.decoder.answer)

    def abort(self, terminal: Terminal) -> bytes:
        """End the output now with this terminal (a fault the caller saw), unless one was written.

        The input is abandoned: nothing more is decoded, and :meth:`close` returns nothing."""
        self._closed = True
        return b"" if self.encoder.terminated else self.encoder.encode([terminal])

    def close(self) -> bytes:
        """End of input: whatever remains, ending with exactly one terminal."""
        if self._closed:
            return b""
        self._closed = True
        parts: list[bytes]
        self._sink.parts = parts = []
        try:
            self.decoder.close(self._sink)
        except StreamError as exc:  # as in feed: what came before the fault travels on it
            exc.output = b"".join(parts)
            parts.clear()
            raise
        out = b"".join(parts)
        parts.clear()  # the sink keeps the list: not its pieces while the output is written
        return out + self.encoder.close()

    @property
    def terminated(self) -> bool:
        return self.encoder.terminated


@overload
def translate(chunks: Iterable[bytes], source: str, target: str, **options: object) -> Iterator[bytes]: ...
@overload
def translate(chunks: AsyncIterable[bytes], source: str, target: str, **options: object) -> AsyncIterator[bytes]: ...
def translate(
    chunks: Iterable[bytes] | AsyncIterable[bytes], source: str, target: str, **options: Any
) -> Iterator[bytes] | AsyncIterator[bytes]:
    """Translate a stream of ``source`` bytes into ``target`` bytes, chunk by chunk.

    ``options``: ``source_framing`` / ``target_framing`` (``"sse"`` or ``"ndjson"``; an unset
    source framing is detected from the first bytes, an unset target one is the target's own), ``strict``
    (raise :class:`~streambridge.codecs.StreamError` on bad input instead of forwarding it),
    ``max_event_size``, ``fidelity`` (``"exact"``, the default: every byte comes back from a
    translation back; ``"client"``: what a native backend of the target would send a live
    client, see :mod:`streambridge.codecs.fidelity`), and encoder options (nest: ``sequence_ids``).
    """
    translator = Translator(source, target, **options)
    if _is_async(chunks):
        return _translate_async(chunks, translator)
    return _translate_sync(chunks, translator)


def _is_async(chunks: Iterable[bytes] | AsyncIterable[bytes]) -> TypeIs[AsyncIterable[bytes]]:
    return hasattr(chunks, "__aiter__")


def _translate_sync(chunks: Iterable[bytes], translator: Translator) -> Iterator[bytes]:
    for chunk in chunks:
        out = translator.feed(chunk)
        if out:
            yield out
    tail = translator.close()
    if tail:
        yield tail


async def _translate_async(chunks: AsyncIterable[bytes], translator: Translator) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        out = translator.feed(chunk)
        if out:
            yield out
    tail = translator.close()
    if tail:
        yield tail

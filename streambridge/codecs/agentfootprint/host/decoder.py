"""The hosting dialect's decoder: ``encodeSSE`` frames in, events out.

``chunk`` is a text delta, ``complete``, ``error`` and ``awaiting`` are the terminal, ``artifact``
an artifact presented (the frame kept as received), and every other name (``sessions``, a name
from a newer host) is a data part kept whole, byte for byte. Unknown members of a known frame travel in the event's ``extra``. The dialect has no
run start: the first frame brings a synthetic one (unless it is the carrier of a real one). A
``complete`` with no ``chunk`` before it is a non-streamed answer: a synthetic delta carries its
text, as for agentkit's non-streaming turns. ``: ping`` heartbeats never reach the decoder (the
SSE parser drops comments).

Deltas are handed on in runs (what the other codecs' hot paths do), so a translation writes
them with its encoder's fast path; the frames themselves take the general path (they are named).
"""

from __future__ import annotations

from typing import Unpack

import msgspec
from msgspec import Raw

from ....events import (
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    RunStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
)
from ...decoder import Decoder, DecoderOptions, Members, reads, with_extra
from ...envelope import decode_envelope, envelope_decoder, raw_str
from ...errors import FrameProblem
from ...framing import Frame, Framing
from ...sinks import EventSink
from ...synthetic import announcement
from ...terminals import canonical_failure
from .wire import CARRIER_EVENT, KNOWN, NAME, Awaiting, Chunk, Complete, ErrorW, read_artifact, read_known, read_line

__all__ = ["HostDecoder"]

_json_decoder = msgspec.json.Decoder(Raw)
#: a delta with every field but its text at the default: handed on in a run
_PLAIN = tuple(f.default for f in msgspec.structs.fields(TextDelta) if f.name != "text")
_DELTAS = (TextDelta, ReasoningDelta)
_OUTCOMES = (ToolOutput, ToolError, ToolDenied)


class HostDecoder(Decoder):
    codec = NAME
    default_framing = "sse"
    tag_field = "event name"
    terminal_words = "event: complete, error or awaiting"

    wire_types = Chunk | Complete | ErrorW | Awaiting

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._runs = options.get("hot_path", True)  # plain deltas handed on in runs (off: one event each)
        self._run: list[str] = []
        self._run_reasoning = False
        self._opened = False  # a frame was decoded (the run start is settled)
        self._data = b""  # the data of the frame being read (an NDJSON line's inner data)

    # -- runs of deltas --------------------------------------------------------------------

    def _chunk_done(self) -> None:
        self._flush()

    def _push(self, event: Event, out: EventSink) -> None:
        if (
            isinstance(event, _DELTAS)
            and self._runs
            and not self._terminated
            and not self._early
            and msgspec.structs.astuple(event)[1:] == _PLAIN
        ):
            reasoning = type(event) is ReasoningDelta
            if self._run and reasoning != self._run_reasoning:
                self._flush()
            self._run_reasoning = reasoning
            self._run.append(event.text)
            self._begun = True
            return
        self._flush()
        if isinstance(event, _OUTCOMES) and not self._terminated and event.call_id not in self._calls:
            # the dialect says no tool calls: the announcement an encoder invented (and dropped)
            # for an outcome whose call it never saw is invented here again
            super()._push(announcement(ToolCall, event.call_id), out)
        super()._push(event, out)

    def _flush(self) -> None:
        """Hand the pending run of deltas on (before any other event, and at the end of a chunk)."""
        if self._run:
            run, self._run = self._run, []
            self._take_deltas(run, self._run_reasoning, None, 0)

    # -- frames ----------------------------------------------------------------------------

    def _decode(self, frame: Frame) -> list[Event]:
        name, data = read_line(frame.data) if self.framing == "ndjson" else (frame.event, frame.data)
        events = self._read_frame(name, data, frame)
        if not self._opened:
            self._opened = True
            if type(events[0]) is not RunStart:  # (a carrier may restore a real one)
                self._push(RunStart(synthetic=True), self._out)
        return events

    def _read_frame(self, name: str, data: bytes, frame: Frame) -> list[Event]:
        if name == CARRIER_EVENT:
            members = decode_envelope(data, frame)
            if "event" not in members:
                part = raw_str(members.pop("name", None))
                artifact = self._artifact_part(part or "", members)
                if artifact is not None:
                    return [artifact]
            return [self._carrier(data)]
        try:
            if name in KNOWN:
                read = read_known(name, data)
                if read is not None:
                    self._data = data
                    return self._read_wire(*read)
            elif name == "artifact":
                artifact = read_artifact(data)
                if artifact is not None:
                    return [artifact]
            else:
                _json_decoder.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:  # (nesting deeper than msgspec reads)
            what = f"a {name!r} frame" if name else "a frame without an event name"
            raise FrameProblem(f"JSON data in {what} ({exc})") from None
        return [DataPart(name=name, origin=self.codec, data=Raw(data))]  # kept whole, byte for byte

    # -- readers, one per known frame ------------------------------------------------------

    @reads(Chunk)
    def _on_chunk(self, w: Chunk, extra: Members) -> list[Event]:
        return with_extra(TextDelta(text=w.text), extra)

    @reads(Complete)
    def _on_complete(self, w: Complete, extra: Members) -> list[Event]:
        self._flush()  # the text so far decides
        end = Terminal(status="succeeded")
        if not self._text and w.output:  # no chunk came: a non-streamed answer
            return [TextDelta(text=w.output, synthetic=True), *with_extra(end, extra)]
        if w.output != self._pieces.text():
            end.text = w.output
        return with_extra(end, extra)

    @reads(ErrorW)
    def _on_error(self, w: ErrorW, extra: Members) -> list[Event]:
        failure = Failure(status="error", message=w.error, code=w.code)
        return with_extra(Terminal(status="error", failure=canonical_failure("error", failure)), extra)

    @reads(Awaiting)
    def _on_awaiting(self, w: Awaiting, extra: Members) -> list[Event]:
        """The whole frame is the terminal's extra (the PendingAsk kept as received)."""
        said = envelope_decoder.decode(self._data) if extra else {"awaiting": w.awaiting}
        return with_extra(Terminal(status="succeeded"), said)

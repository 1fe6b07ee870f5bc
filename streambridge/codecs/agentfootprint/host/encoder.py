"""The hosting dialect's encoder: events in, ``encodeSSE`` frames out.

Text deltas of the primary message are ``chunk`` frames and the terminal is ``complete``,
``error`` or (a success whose ``extra`` holds ``awaiting``) ``awaiting``; the dialect's own data
parts are written back as the frames they came in. Everything else travels in carriers (``event:
streambridge.carrier``, which a host client ignores). A frame is native only when the decoder
reads it back as the same event (:mod:`.wire` holds the reading both sides use). A run start is
never a frame: an invented one is dropped (the decoder invents it again), a real one is carried.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec import UNSET, UnsetType
from msgspec.json import Encoder as JsonEncoder

from ....events import (
    ArtifactPresented,
    ArtifactRefused,
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
    ToolProgress,
)
from ...carrier import as_received
from ...encoder import ARTIFACT_FIELDS, Encoder, field_defaults, handles
from ...envelope import input_of, json_encode, splice_extra
from ...framing import Framing
from ...synthetic import invented_call, invented_start
from ...terminals import canonical_failure, default_failure
from .wire import CARRIER_EVENT, NAME, ErrorW, is_json, ndjson_line, read_artifact, read_line, reads_whole

__all__ = ["HostEncoder"]

_encode = JsonEncoder().encode
_START_FIELDS = tuple(field_defaults(RunStart))
_TERMINAL_FIELDS = tuple(field_defaults(Terminal))
_CALL_FIELDS = tuple(field_defaults(ToolCall))
#: what SSE cannot say on an ``event:`` line or read back from ``data:`` lines exactly
_SSE_NAME_BREAKS = (b"\n", b"\r", b"\x00")


class HostEncoder(Encoder):
    codec = NAME
    default_framing = "sse"
    _terminal_says_text = True  # complete.output: a non-streamed answer needs no chunk
    #: a host streams its answer's text only: how it was reached stays on the server
    unsaid = frozenset((ReasoningDelta, ToolCall, ToolOutput, ToolProgress, ToolError, ToolDenied))

    def __init__(self, framing: Framing | None = None) -> None:
        super().__init__(framing)
        self._carrying = False  # the frame being emitted is a carrier
        self._whole = False  # a synthetic delta (an answer that came whole) was dropped
        if self._sse:
            self._text_head = b'event: chunk\ndata: {"text":'
            self._text_tail = b"}\n\n"
        else:
            self._text_head = b'{"event":"chunk","data":{"text":'
            self._text_tail = b"}}\n"

    def write_deltas(
        self,
        parts: list[bytes],
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> bool:
        """Runs of reasoning deltas (carriers here) and numbered deltas (whose ``id:`` line goes
        after the ``event:`` line) are written one event at a time."""
        return not reasoning and ids is None and super().write_deltas(parts, texts, reasoning, ids, part_id)

    # -- framing -----------------------------------------------------------------------------

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return b'{"name":' + name + b"," + body + b"}"

    artifact_parts = True  # a data-artifact part in the carrier's frame: {"name", "id", "data"}

    @handles(ArtifactPresented, ArtifactRefused, writes=ARTIFACT_FIELDS)
    def _artifact(self, e: ArtifactPresented | ArtifactRefused, parts: list[bytes]) -> None:
        """A host's own ``artifact`` frame goes back as it came; any other artifact is a
        ``data-artifact`` part in a carrier's frame (the dialect's frame says no ``as``)."""
        if type(e) is ArtifactPresented and e.verbatim is not UNSET and e.verbatim.origin == self.codec:
            payload = json_encode(e.verbatim.members)
            native = read_artifact(payload) == msgspec.structs.replace(e, event_id=UNSET)
            self._put(parts, e, [("artifact", payload)], native)
            return
        self._carrying = True  # (named as a carrier is)
        try:
            super()._artifact(e, parts)
        finally:
            self._carrying = False

    def _carry(self, event: Event, covers: int = 0, line_id: str = "", *, whole: bool = False) -> bytes:
        self._carrying = True
        try:
            return super()._carry(event, covers, line_id, whole=whole)
        finally:
            self._carrying = False

    def _emit(self, payload: bytes, name: str, event_id: str = "") -> bytes:
        """Every frame named (a carrier ``streambridge.carrier``); in NDJSON a named frame, or an
        unnamed one that would read as named, is ``{"event":…,"data":…}``."""
        if self._carrying:
            name = CARRIER_EVENT
        if self._sse:
            return super()._emit(payload, name, event_id)
        if name or read_line(payload) != ("", payload):
            return ndjson_line(name, payload) + b"\n"
        return payload + b"\n"

    def _writable(self, name: str, data: bytes) -> bool:
        """Whether a frame with this name and data reads back exactly, and reads without a fault
        (under a carrier too): JSON data, not named as a carrier; SSE: the name on one ``event:``
        line, no CR in the data; NDJSON: the data on one line."""
        if name == CARRIER_EVENT or not is_json(data):
            return False
        if self._sse:
            return not any(c in name.encode() for c in _SSE_NAME_BREAKS) and b"\r" not in data
        return b"\n" not in data and b"\r" not in data

    # -- events ------------------------------------------------------------------------------

    @handles(TextDelta, writes=("text", "part_id", "message_id", "synthetic", "extra"))
    def _delta(self, e: TextDelta, parts: list[bytes]) -> None:
        if e.synthetic:  # made from a whole answer by a decoder: the terminal says it again
            self._whole = self._whole or e.message_id is UNSET
            return
        extra = e.extra if e.extra is not UNSET else {}
        kept = {k: v for k, v in extra.items() if k != "text"}
        payload = splice_extra(b'{"text":' + json_encode(e.text) + b"}", kept)
        native = e.message_id is UNSET and e.part_id is UNSET and len(kept) == len(extra)
        self._put(parts, e, [("chunk", payload)], native)

    @handles(RunStart, writes=_START_FIELDS)
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        """The dialect has no run start: an invented one is dropped, any other carried."""
        if not invented_start(e):
            self._put(parts, e, [], False)

    @handles(ToolCall, writes=_CALL_FIELDS)
    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        """Carried in one spelling whichever way the call came (agentkit's argument text or a
        parsed input): JSON argument text is the input itself, as a protocol with JSON inputs
        reads it; other text stays text. An invented announcement is dropped (the decoder
        invents it again before the outcome)."""
        if not invented_call(e):
            self._put(parts, _as_read(e), [], False)

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient", "message_id", "extra"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        data = bytes(e.data)
        if e.origin != self.codec or not self._writable(e.name, data):
            self._put(parts, e, [], False)
            return
        native = e.message_id is UNSET and as_received(e) and reads_whole(e.name, data)
        self._put(parts, e, [(e.name, data)], native)

    @handles(Terminal, writes=_TERMINAL_FIELDS)
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        assembled = self._assembled()
        text = e.text if isinstance(e.text, str) else assembled  # (another message's: unset)
        extra = dict(e.extra) if e.extra is not UNSET else {}
        whole, self._whole = self._whole, False
        native = (
            not e.synthetic
            and e.message_id is UNSET
            and e.usage is UNSET
            and e.provider is UNSET
            and e.model is UNSET
            and e.guarded is UNSET
            and e.correlation_id is UNSET
            and e.turn_id is UNSET
            and e.result is UNSET
            and e.error_info is UNSET
        )
        if e.status == "succeeded" and "awaiting" in extra and "output" not in extra:
            name, payload = "awaiting", splice_extra(b"{}", extra)  # PendingAsk and the rest, as received
            native = native and e.failure is UNSET and text == assembled and not whole
        elif e.status == "succeeded":
            kept = {k: v for k, v in extra.items() if k not in ("output", "awaiting")}
            name, payload = "complete", splice_extra(b'{"output":' + json_encode(text) + b"}", kept)
            native = native and e.failure is UNSET and len(kept) == len(extra)
            # whole: no chunk was written, and the decoder makes the delta from the output again;
            # else an output no chunk streamed would read back as a non-streamed answer
            chunks_say_it = text == assembled if whole else not (text and not self._text)
            native = native and chunks_say_it
        else:
            failure = e.failure if e.failure is not UNSET else default_failure(e.status)
            kept = {k: v for k, v in extra.items() if k not in ("error", "code")}
            name, payload = "error", splice_extra(_encode(ErrorW(error=failure.message, code=failure.code)), kept)
            native = (
                native
                and e.status == "error"
                and not whole
                and text == assembled
                and len(kept) == len(extra)
                and _plain_failure(failure)
                and canonical_failure(e.status, e.failure) is e.failure  # the default one decodes to none
            )
        if whole and not native:
            # the carrier restores the answer as a synthetic delta ("whole"); host clients read the
            # text from the frames it covers: the output, or a chunk before an error or awaiting
            covered = [] if name == "complete" else [self._emit(b'{"text":' + json_encode(text) + b"}", "chunk")]
            self._covered = [*covered, self._emit(payload, name)]
            self._put(parts, e, [], False)
            return
        self._put(parts, e, [(name, payload)], native)


def _as_read(call: ToolCall) -> ToolCall:
    """The call with JSON argument text (and no input) as its input, byte for byte."""
    raw, native, carried = input_of(call, True)
    if native and call.arguments_json is not UNSET:
        return msgspec.structs.replace(call, input=raw, arguments_json=UNSET)
    return carried


def _plain_failure(failure: Failure) -> bool:
    """A failure the ``error`` frame says all of (its message and code)."""
    return (
        failure.status == "error"
        and failure.recoverable is UNSET
        and failure.retry_after_ms is UNSET
        and failure.correlation_id is UNSET
    )

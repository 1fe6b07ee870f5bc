"""agentfootprint's decoder: the ``toSSE`` envelope stream in, events out.

Each frame is one envelope ``{type, payload, meta}``. A mapped type becomes its event; what the
mapping would not write back byte for byte stays with the event: the payload as its verbatim
member, a meta other than the default one (zeros, empty paths, the run's ids) and any unknown
envelope member in ``extra``. Every other type is a data part kept whole. ``: ping`` comments
never reach the decoder (the SSE parser drops comments)."""

from __future__ import annotations

from typing import Unpack

import msgspec
from msgspec import UNSET, Raw

from ...events import Elicitation, Event, RunStart, TextDelta, ToolCall
from ..decoder import Decoder, DecoderOptions, Members
from ..envelope import decode_envelope, decode_lenient, json_encode, raw_str
from ..errors import FrameProblem
from ..framing import Frame, Framing
from ..synthetic import announcement, is_derived
from .mapping import DECODERS, PAYLOADS, Tally, from_payload, to_payload
from .wire import CARRIER_TYPE, PREFIX, Envelope, EventMeta, TokenEnvelope
from .wire import TOKEN_CONTENT as _TOKEN_CONTENT
from .wire import TOKEN_HEAD as _TOKEN_HEAD
from .wire import TOKEN_INDEX as _TOKEN_INDEX

__all__ = ["AgentFootprintDecoder"]

_envelope_decoder = msgspec.json.Decoder(Envelope)
_token_decoder = msgspec.json.Decoder(TokenEnvelope)
_TOKEN = PREFIX + "stream.token"
_meta_decoder = msgspec.json.Decoder(EventMeta)
_ENVELOPE_KEYS = frozenset({"type", "payload", "meta"})


class AgentFootprintDecoder(Decoder):
    codec = "agentfootprint"
    default_framing = "sse"
    tag_field = "type"
    start_words = "event: agentfootprint.agent.turn_start"
    terminal_words = "event: agentfootprint.agent.turn_end or agentfootprint.error.fatal"

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._tally = Tally()

    def _decode(self, frame: Frame) -> list[Event]:
        if frame.event == _TOKEN:
            token = self._plain_token(frame.data)
            if token is not None:
                return [token]
        env, extra = self._envelope(frame)
        if env.type == CARRIER_TYPE:
            carried = self._carrier(bytes(env.payload))
            self._tally.observe(carried)  # what the encoder counted; its covered frames count nothing
            return [carried]
        name = frame.event or env.type
        wire = self._payload(env) if name == env.type else None
        if wire is None:  # a type this codec does not map, or a payload of another shape
            return [self._unknown(name, frame)]
        event = self._mapped(env, wire, extra)
        if type(event) is Elicitation:  # a pause asks about no tool call: the model's needs one
            return [announcement(ToolCall, event.call_id), event]
        return [event]

    def _envelope(self, frame: Frame) -> tuple[Envelope, Members]:
        try:
            return _envelope_decoder.decode(frame.data), {}
        except msgspec.ValidationError:
            return self._loose(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON envelope {{type, payload, meta}} ({exc})") from None

    @staticmethod
    def _payload(env: Envelope) -> msgspec.Struct | None:
        """The payload of a mapped type, read for what this codec knows (None: kept whole)."""
        payload_decoder = DECODERS.get(env.type)
        if payload_decoder is None:
            return None
        try:
            return payload_decoder.decode(env.payload)
        except msgspec.ValidationError:
            try:  # members this codec does not know: read for what it knows, the payload kept verbatim
                return decode_lenient(PAYLOADS[env.type[len(PREFIX) :]], env.payload)
            except msgspec.ValidationError:
                return None
        except msgspec.DecodeError:
            return None

    def _mapped(self, env: Envelope, wire: msgspec.Struct, extra: Members) -> Event:
        """The payload's event; what the mapping would not write back the same stays with it."""
        event = from_payload(wire, self._tally)
        if type(event) is RunStart:
            self._run_start(event, env.meta)
        said = to_payload(event, self._tally)
        self._tally.observe(event)
        if said is None or said[1] != bytes(env.payload):
            self._with_verbatim([event], {"payload": env.payload})
        if env.meta is not UNSET and bytes(env.meta) != self._tally.meta:
            extra = {"meta": env.meta, **extra}
        if extra:
            event.extra = extra
        return event

    def _plain_token(self, data: bytes) -> TextDelta | None:
        """A token envelope exactly as the encoder writes a plain one (the tally's counters, the
        default meta, no other member): its delta, read with one decode and one comparison."""
        try:
            env = _token_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        tally, p = self._tally, env.payload
        if p.iteration != tally.iteration or p.token_index != tally.tokens or not tally.meta:
            return None
        said = b"%s%d,%s%d,%s" % (_TOKEN_HEAD, p.iteration, _TOKEN_INDEX, p.token_index, _TOKEN_CONTENT)
        if data != said + json_encode(p.content) + b'},"meta":' + tally.meta + b"}":
            return None
        tally.tokens += 1
        tally.primary_token(p.content)
        return TextDelta(text=p.content)

    def _decode_covered(self, frame: Frame) -> None:
        """Nothing to do: the tally follows the carried event (see the carrier branch above)."""

    def _loose(self, frame: Frame) -> tuple[Envelope, dict[str, Raw]]:
        """An envelope with members beyond the three: those travel in ``extra``, in order."""
        members = decode_envelope(frame.data, frame)
        kind = raw_str(members.get("type"))
        payload = members.get("payload")
        if kind is None or payload is None:
            raise FrameProblem("an envelope with a string type and a payload")
        extra = {k: v for k, v in members.items() if k not in _ENVELOPE_KEYS}
        return Envelope(type=kind, payload=payload, meta=members.get("meta", UNSET)), extra

    def _run_start(self, event: RunStart, meta: Raw | msgspec.UnsetType) -> None:
        """The run's ids stand in the turn start's meta; they make the default meta too."""
        if meta is UNSET:
            return
        try:
            m = _meta_decoder.decode(meta)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return  # kept whole in extra, ids unread
        event.run_id = m.run_id
        event.synthetic = is_derived("run-", m.run_id) and m.session_id is UNSET
        event.thread_id = m.session_id
        self._tally.start(m.run_id, m.session_id)

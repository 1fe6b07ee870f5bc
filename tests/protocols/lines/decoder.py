"""``lines`` decoder: wire bytes in, events out."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from streambridge.codecs.decoder import Decoder
from streambridge.codecs.errors import FrameProblem
from streambridge.codecs.framing import Frame
from streambridge.events import Event, Terminal, TextDelta

from .wire import LineFrame

__all__ = ["LinesDecoder"]

_decode_frame = msgspec.json.Decoder(LineFrame).decode
_decode_any = msgspec.json.Decoder(dict).decode


class LinesDecoder(Decoder):
    codec = "lines"
    default_framing = "ndjson"
    tag_field = "line"
    terminal_words = '{"end": …}'

    def _decode(self, frame: Frame) -> list[Event]:
        if frame.data.startswith(b'{"carry":'):
            return [self._carrier(frame.data)]
        try:
            wire = _decode_frame(frame.data)
        except msgspec.ValidationError:
            return [self._kept(frame)]
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON object per line ({exc})") from None
        if wire.line is not UNSET and wire.end is UNSET:
            return [TextDelta(text=wire.line)]
        if wire.end is not UNSET and wire.line is UNSET:
            return [Terminal(status=wire.end)]
        return [self._kept(frame)]

    def _kept(self, frame: Frame) -> Event:
        """An object of another kind: kept whole, as every protocol keeps what it does not know."""
        try:
            _decode_any(frame.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"one JSON object per line ({exc})") from None
        return self._unknown("object", frame)

"""``lines`` decoder: wire bytes in, events out, one typed reader per frame kind."""

from __future__ import annotations

import msgspec

from streambridge.codecs.decoder import Decoder, Members, reads, reads_one, with_extra
from streambridge.codecs.errors import FrameProblem
from streambridge.codecs.framing import Frame
from streambridge.events import Event, Terminal, TextDelta

from .wire import EndW, LinesFrame, LineW

__all__ = ["LinesDecoder"]

_decode_frame = msgspec.json.Decoder(LinesFrame).decode
_decode_any = msgspec.json.Decoder(dict).decode


class LinesDecoder(Decoder):
    codec = "lines"
    default_framing = "ndjson"
    tag_field = "type"
    terminal_words = '{"type":"end", …}'
    wire_types = LinesFrame

    def _decode(self, frame: Frame) -> list[Event]:
        if frame.data.startswith(b'{"carry":'):
            return [self._carrier(frame.data)]
        try:
            wire = _decode_frame(frame.data)
        except msgspec.ValidationError:
            return [self._kept(frame)]
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON object per line ({exc})") from None
        return self._read_wire(wire, {})

    @reads_one(LineW)
    def _on_line(self, w: LineW) -> TextDelta:
        return TextDelta(text=w.text)

    @reads(EndW)
    def _on_end(self, w: EndW, extra: Members) -> list[Event]:
        return with_extra(Terminal(status=w.status), extra)

    def _kept(self, frame: Frame) -> Event:
        """An object of another kind: kept whole, as every protocol keeps what it does not know."""
        try:
            _decode_any(frame.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"one JSON object per line ({exc})") from None
        return self._unknown("object", frame)

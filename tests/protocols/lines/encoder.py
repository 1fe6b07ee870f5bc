"""``lines`` encoder: events in, wire bytes out. Two handlers; every other event is carried."""

from __future__ import annotations

from msgspec import UNSET

from streambridge.codecs.carrier import as_received
from streambridge.codecs.encoder import Encoder, handles
from streambridge.codecs.envelope import json_encode
from streambridge.events import DataPart, Event, Terminal, TextDelta

__all__ = ["LinesEncoder"]


class LinesEncoder(Encoder):
    codec = "lines"
    default_framing = "ndjson"

    @handles(TextDelta, writes=("text",))
    def _delta(self, e: TextDelta, parts: list[bytes]) -> None:
        self._put(parts, e, [b'{"type":"line","text":' + json_encode(e.text) + b"}"], True)

    @handles(Terminal, writes=("status", "text"))
    def _end(self, e: Terminal, parts: list[bytes]) -> None:
        # the text is the answer its deltas said; a terminal saying another one is carried
        native = e.text is UNSET or e.text == self._assembled()
        self._put(parts, e, [b'{"type":"end","status":' + json_encode(e.status) + b"}"], native)

    @handles(DataPart, writes=("name", "origin", "data"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        mine = e.origin == self.codec and e.name == "object"
        self._put(parts, e, [bytes(e.data)] if mine else [], mine and as_received(e))

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return b'{"carry":' + name + b"," + body + b"}"

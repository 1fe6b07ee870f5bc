"""``runlines`` frames are ``lines``'s: its decoder and encoder under its own name."""

from __future__ import annotations

from ..lines.decoder import LinesDecoder
from ..lines.encoder import LinesEncoder

__all__ = ["RunLinesDecoder", "RunLinesEncoder"]


class RunLinesDecoder(LinesDecoder):
    codec = "runlines"


class RunLinesEncoder(LinesEncoder):
    codec = "runlines"

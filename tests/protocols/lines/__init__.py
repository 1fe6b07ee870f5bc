"""``lines``: a protocol made for the tests, as small as a protocol can be. It proves that a new
protocol is one package: registered (``STREAMBRIDGE_PROTOCOLS=tests.protocols.lines`` or
:func:`streambridge.codecs.register`), it goes through the laws, ``convert``, ``validate``,
``replay --serve`` and the proxy with no other file edited (tests/test_adding_a_protocol.py).

NDJSON, one JSON object per line, tagged by ``type``: ``{"type":"line","text":…}`` is a text
delta, ``{"type":"end","status":…}`` the terminal. Everything else a source says travels in
carriers (``{"carry": …}``). Its decoder reads each frame kind with a typed reader
(``@reads``), its encoder writes each event type with a declared handler (``@handles``).
"""

from __future__ import annotations

from streambridge.codecs.codec import Codec

from .decoder import LinesDecoder
from .encoder import LinesEncoder
from .http import SURFACE
from .rules import LinesRules
from .sniff import sniff

__all__ = ["CODEC"]

CODEC = Codec(
    "lines",
    "a test protocol: one line of text per frame",
    LinesDecoder,
    LinesEncoder,
    "ndjson",
    frozenset({"text", "terminal"}),
    SURFACE,
    sniff=sniff,
    rules=LinesRules,
)

"""``runlines``: ``lines`` (tests/protocols/lines) served the way a protocol with runs serves it,
for the tests that prove the proxy and ``replay --serve`` take everything HTTP from a protocol's
surface (tests/test_proxy_surface_data.py): its own run id headers, a response header of its own
for browser clients, re-attach and cancel routes, and a control body of its own.

The frames are ``lines``'s; a run start travels in a carrier as every event ``lines`` does not say.
"""

from __future__ import annotations

from streambridge.codecs.codec import Codec

from .codec import RunLinesDecoder, RunLinesEncoder
from .http import SURFACE

__all__ = ["CODEC"]

CODEC = Codec(
    "runlines",
    "a test protocol: lines, with runs and a control body of its own",
    RunLinesDecoder,
    RunLinesEncoder,
    "ndjson",
    frozenset({"text", "terminal"}),
    SURFACE,
)

"""``nest`` (alias ``adonis``): the kind-framed chat SSE of @dudousxd/nestjs-agent.

``event: meta`` first, one unnamed ``data:`` frame per ``{kind: …}`` event, then ``event: done``
(``{}``) or ``event: error`` (``{code, message}``), LF only, optional ``id:`` sequence numbers
(newer generation). The encoder keeps the published React transport 0.5.5 happy: every tool
call is announced before its outcome, steps are bracketed, and text that resumes after tool
calls opens a new step. See docs/mapping.md.

The package: ``wire`` (the wire shapes, msgspec Structs, and what both directions share),
``decoder``, ``encoder``, ``http`` (requests, routes and upstream URL rules), ``steps`` (the judge of implied step
brackets, shared by both directions), ``frames`` (its frames read as written: named events, the
opening meta's ids), ``sniff`` (how a frame shows nest) and ``rules`` (its own rules for
``streambridge validate``).
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import NestDecoder
from .encoder import NestEncoder
from .http import SURFACE
from .rules import NestRules
from .sniff import sniff
from .wire import REJECTED, NestFrame

__all__ = ["CODEC", "REJECTED", "SURFACE", "NestDecoder", "NestEncoder", "NestFrame"]

CODEC = Codec(
    "nest",
    "@dudousxd/nestjs-agent chat SSE (and its AdonisJS copy)",
    NestDecoder,
    NestEncoder,
    "sse",
    COMMON_NATIVE
    | ARTIFACTS
    | {
        "run-start",
        "step-start",
        "step-finish",
        "tool-input-start",
        "tool-input-delta",
        "tool-denied",
        "tool-approval-request",
        "tool-approval-settled",
        "ui",
        "title",
        "elicitation",
        "queue",
        "message-metadata",
    },
    SURFACE,
    aliases=("adonis",),
    sniff=sniff,
    rules=NestRules,
)

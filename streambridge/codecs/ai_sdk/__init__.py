"""``ai-sdk``: the Vercel AI SDK UI message stream (``x-vercel-ai-ui-message-stream: v1``), as
``useChat`` / ``DefaultChatTransport`` read it, ai 5, 6 and 7.

One chunk per SSE event (``data: <JSON>``, no event names, no ids), then ``data: [DONE]``. Three
codecs share this package, one per target client: ``ai-sdk`` (ai 7, the default), ``ai-sdk@6``
and ``ai-sdk@5``. Each writes only the chunk types and fields its client's schema accepts
(:mod:`.profiles`; chunk objects were strict before 5.0.217 / 6.0.231 / 7.0.32, and unknown
types are always rejected) and puts the rest in streambridge carriers, on the chunk's own
``providerMetadata`` where its type has one (codecs/riding.py), else in transient ``data-*``
parts, so a trip through any of them comes back whole. Decoding is the same for all three.

Mapped (docs/mapping.md): ``start`` ↔ run start (``messageId``), ``start-step`` /
``finish-step`` ↔ steps, ``text-*`` / ``reasoning-*`` ↔ text and reasoning (part ids kept),
``tool-input-start`` / ``-delta`` / ``-available`` ↔ input start, input delta, tool call,
``tool-input-error`` ↔ a call with status ``failed`` and its error, ``tool-output-available`` /
``-error`` / ``-denied`` ↔ output, error, denial, ``tool-approval-request`` / ``-response``
↔ approval request / settled, ``source-url`` ↔ sources, ``message-metadata`` ↔ message
metadata, ``data-<name>`` ↔ data part (name, id, transient), ``data-artifact`` ↔ artifacts,
``finish`` / ``abort`` / ``error`` ↔ terminal (``finishReason`` and other members kept as the
terminal's unknown fields). ``file``, ``source-document``, ``reasoning-file``, ``custom``,
``reset-step`` and ``steering-message`` are kept whole (data parts of this codec).

Re-checked against the ``uiMessageChunkSchema`` of the published ``ai`` 7.0.173 bundle (the
protocol notes stop at 7.0.77): every chunk type of the notes' table is there, all
``looseObject``; new since 7.0.77: a ``steering-message`` chunk type (``{id, parts: [text |
file]}``, pushed as a message part by the reducer: a real chunk type, kept whole here),
``citations`` on ``text-end``, ``inputEncoding`` on ``tool-input-start``,
``approvalDescriptor``, ``inputSchemaInput`` and ``reason`` on ``tool-approval-request``, and
``interrupted`` among the finish reasons. In that bundle ``finish-step`` no longer forgets
open text ids (only ``reset-step`` does); the encoder closes parts before ``finish-step``
anyway, as older clients need. None of these is emitted natively (the v7 profile is pinned to
7.0.0).

The package: ``wire`` (chunk Structs), ``profiles`` (what each target accepts), ``decoder``
(with nest's judge of implied step brackets, ``codecs/nest/steps.py``), ``encoder``, ``http`` (the chat request, the
response headers), ``sniff``, ``rules``.
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import AiSdkDecoder
from .encoder import AiSdkEncoder
from .http import HEADERS, SURFACE
from .profiles import V5, V6, V7, Profile
from .rules import AiSdkRules
from .sniff import sniff

__all__ = ["CODEC", "CODECS", "CODEC_V5", "CODEC_V6", "AiSdkDecoder", "AiSdkEncoder"]

_NATIVE = (
    COMMON_NATIVE
    | ARTIFACTS
    | {"run-start", "step-start", "step-finish", "tool-input-start", "tool-input-delta", "tool-denied"}
    | {"sources", "message-metadata"}
)
_APPROVALS = {"tool-approval-request"}


def _codec(profile: Profile, native: frozenset[str], title: str) -> Codec:
    decoder = type(f"AiSdkDecoder_{profile.version[0]}", (AiSdkDecoder,), {"codec": profile.codec})
    encoder = type(f"AiSdkEncoder_{profile.version[0]}", (AiSdkEncoder,), {"codec": profile.codec, "profile": profile})
    return Codec(
        profile.codec,
        title,
        decoder,
        encoder,
        "sse",
        native,
        SURFACE,
        sniff=sniff if profile is V7 else _no_sniff,
        rules=AiSdkRules,
        response_headers=HEADERS,
        aliases=("ai-sdk@7",) if profile is V7 else (),
    )


def _no_sniff(frame: object) -> int:
    return 0  # the same wire as ai-sdk: sniffing names the default profile


CODEC = _codec(V7, _NATIVE | _APPROVALS | {"tool-approval-settled"}, "Vercel AI SDK UI message stream (ai 7)")
CODEC_V6 = _codec(V6, _NATIVE | _APPROVALS, "Vercel AI SDK UI message stream (ai 6)")
CODEC_V5 = _codec(V5, _NATIVE - {"tool-denied"}, "Vercel AI SDK UI message stream (ai 5)")
CODECS = (CODEC, CODEC_V6, CODEC_V5)

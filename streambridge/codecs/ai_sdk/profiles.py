"""What each target version of the AI SDK client accepts: chunk types and optional fields, each
with the first ``ai`` version whose schema lists it (the protocol notes' chunk table and cut-offs).

Chunk objects were strict (any unknown member rejected) in ai 5.0.0 to 5.0.216, 6.0.0 to 6.0.230 and
7.0.0 to 7.0.31, and unknown chunk types are rejected by every version. A profile is pinned to the
first release of its major (5.0.0, 6.0.0, 7.0.0): what it writes every client of that major
accepts. The encoder writes a chunk type or field only when the profile allows it; the rest goes
into ``data-*`` parts (streambridge carriers), so nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHUNK_TYPES", "FEATURES", "FIELDS", "PROFILES", "V5", "V6", "V7", "Profile"]

Version = tuple[int, int, int]

#: every chunk type of the union and its first version (``data-*`` aside); ``steering-message``
#: is in the 7.0.173 schema (after the notes' last check, 7.0.77)
CHUNK_TYPES: dict[str, Version] = {
    "start": (5, 0, 0),
    "start-step": (5, 0, 0),
    "finish-step": (5, 0, 0),
    "text-start": (5, 0, 0),
    "text-delta": (5, 0, 0),
    "text-end": (5, 0, 0),
    "reasoning-start": (5, 0, 0),
    "reasoning-delta": (5, 0, 0),
    "reasoning-end": (5, 0, 0),
    "tool-input-start": (5, 0, 0),
    "tool-input-delta": (5, 0, 0),
    "tool-input-available": (5, 0, 0),
    "tool-input-error": (5, 0, 7),
    "tool-approval-request": (6, 0, 0),
    "tool-approval-response": (7, 0, 0),
    "tool-output-available": (5, 0, 0),
    "tool-output-error": (5, 0, 0),
    "tool-output-denied": (6, 0, 0),
    "source-url": (5, 0, 0),
    "source-document": (5, 0, 0),
    "file": (5, 0, 0),
    "reasoning-file": (7, 0, 0),
    "custom": (7, 0, 0),
    "message-metadata": (5, 0, 0),
    "error": (5, 0, 0),
    "abort": (5, 0, 0),
    "finish": (5, 0, 0),
    "reset-step": (7, 0, 70),
    "steering-message": (7, 0, 173),
}

_TOOL_INPUT = {
    "providerExecuted": (5, 0, 0),
    "dynamic": (5, 0, 0),
    "title": (6, 0, 0),
    "providerMetadata": (6, 0, 39),
    "toolMetadata": (6, 0, 176),
}
_META = {"providerMetadata": (5, 0, 0)}
#: the optional members beside the ones streambridge models, per chunk type, with their first version
FIELDS: dict[str, dict[str, Version]] = {
    "start": {"messageMetadata": (5, 0, 0)},
    "text-start": _META,
    "text-delta": _META,
    "text-end": _META,
    "reasoning-start": _META,
    "reasoning-delta": _META,
    "reasoning-end": _META,
    "tool-input-start": _TOOL_INPUT,
    "tool-input-available": {**_TOOL_INPUT, "providerMetadata": (5, 0, 0)},
    "tool-input-error": {**_TOOL_INPUT, "providerMetadata": (5, 0, 7)},
    "tool-approval-request": {"signature": (6, 0, 202), "isAutomatic": (7, 0, 0)},
    "tool-approval-response": {"providerExecuted": (7, 0, 0), "providerMetadata": (7, 0, 0)},
    "tool-output-available": {
        "providerExecuted": (5, 0, 0),
        "dynamic": (5, 0, 0),
        "preliminary": (5, 0, 11),
        "providerMetadata": (6, 0, 120),
        "toolMetadata": (6, 0, 176),
    },
    "tool-output-error": {
        "providerExecuted": (5, 0, 0),
        "dynamic": (5, 0, 0),
        "providerMetadata": (6, 0, 120),
        "toolMetadata": (6, 0, 176),
    },
    "source-url": {"providerMetadata": (5, 0, 0)},
    "finish": {"finishReason": (5, 0, 92), "messageMetadata": (5, 0, 0)},
    "abort": {"reason": (6, 0, 15)},
}
#: features the encoder decides about, with their first version
FEATURES: dict[str, Version] = {
    "tool-input-error": (5, 0, 7),
    "finishReason": (5, 0, 92),
    "approvals": (6, 0, 0),
    "tool-output-denied": (6, 0, 0),
    "tool-approval-response": (7, 0, 0),
}


@dataclass(frozen=True)
class Profile:
    """A target client version: what the encoder may write for it."""

    codec: str
    version: Version

    def allows(self, feature: str) -> bool:
        return self.version >= FEATURES[feature]

    def field(self, chunk: str, name: str) -> bool:
        """Whether a chunk of this type may carry the optional member ``name``."""
        first = FIELDS.get(chunk, {}).get(name)
        return first is not None and self.version >= first

    def chunk(self, chunk: str) -> bool:
        first = CHUNK_TYPES.get(chunk)
        return first is not None and self.version >= first


V5 = Profile("ai-sdk@5", (5, 0, 0))
V6 = Profile("ai-sdk@6", (6, 0, 0))
V7 = Profile("ai-sdk", (7, 0, 0))
PROFILES = (V7, V6, V5)

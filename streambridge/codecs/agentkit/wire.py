"""agentkit's wire shapes (msgspec Structs) and the vocabulary both directions share."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType

__all__ = [
    "DEFAULT_PROVIDER",
    "AgentCitation",
    "AgentFailure",
    "AgentFrame",
    "AgentSource",
    "AgentToolCall",
    "AgentTurnResult",
    "AgentUsage",
    "CitationW",
    "SourcesW",
    "StatusW",
    "SuggestionsW",
    "TextDeltaW",
    "ThinkingDeltaW",
    "ToolCallStatus",
    "ToolCallW",
    "ToolResultW",
    "TurnEndW",
    "TurnStartW",
    "default_status",
    "encode",
    "str_encode",
]

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}
DEFAULT_PROVIDER = "streambridge"

ToolCallStatus = Literal["proposed", "running", "succeeded", "failed", "denied"]


class AgentUsage(Struct, **_W):
    input_tokens: int | UnsetType = UNSET
    output_tokens: int | UnsetType = UNSET
    cached_tokens: int | UnsetType = UNSET
    cost_usd: int | float | UnsetType = UNSET
    duration_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class AgentFailure(Struct, **_W):
    status: Literal["blocked", "refused", "error", "notProvisioned", "cancelled"]
    message: str
    code: str | UnsetType = UNSET
    recoverable: bool | UnsetType = UNSET
    retry_after_ms: int | float | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class AgentSource(Struct, **_W):
    id: str
    title: str
    kind: str
    url: str | UnsetType = UNSET
    snippet: str | UnsetType = UNSET
    entity_logical_name: str | UnsetType = UNSET
    record_id: str | UnsetType = UNSET
    score: int | float | UnsetType = UNSET


class AgentCitation(Struct, **_W):
    marker: str
    source_id: str
    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET


class AgentToolCall(Struct, **_W):
    id: str
    name: str
    arguments_json: str
    status: ToolCallStatus
    started_at: int | float | UnsetType = UNSET
    ended_at: int | float | UnsetType = UNSET
    result_text: str | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET
    requires_approval: bool | UnsetType = UNSET


class AgentTurnResult(Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=True, gc=False):
    # _W spelled out: mypy sees kw_only (a required field follows optional ones) only as a literal keyword
    status: Literal["succeeded", "blocked", "refused", "error", "notProvisioned", "cancelled"]
    text: str
    guarded: bool | UnsetType = UNSET
    provider: str
    model: str | UnsetType = UNSET
    usage: AgentUsage | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class _T(Struct, tag_field="type", **_W):
    pass


class TurnStartW(_T, tag="turn_start"):
    turn_id: str
    message_id: str
    model: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class TextDeltaW(_T, tag="text_delta"):
    message_id: str
    text: str


class ThinkingDeltaW(_T, tag="thinking_delta"):
    message_id: str
    text: str


class ToolCallW(_T, tag="tool_call"):
    message_id: str
    call: AgentToolCall


class ToolResultW(_T, tag="tool_result"):
    message_id: str
    call_id: str
    status: ToolCallStatus
    result_text: str | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET


class SourcesW(_T, tag="sources"):
    message_id: str
    sources: list[AgentSource]


class CitationW(_T, tag="citation"):
    message_id: str
    citation: AgentCitation


class SuggestionsW(_T, tag="suggestions"):
    message_id: str
    prompts: list[str]


class StatusW(_T, tag="status"):
    message_id: str
    label: str


class TurnEndW(_T, tag="turn_end"):
    turn_id: str
    message_id: str
    result: AgentTurnResult


AgentFrame = (
    TurnStartW
    | TextDeltaW
    | ThinkingDeltaW
    | ToolCallW
    | ToolResultW
    | SourcesW
    | CitationW
    | SuggestionsW
    | StatusW
    | TurnEndW
)
encode = msgspec.json.Encoder().encode
str_encode = msgspec.json.Encoder().encode


def default_status(tool_kind: str | UnsetType) -> ToolCallStatus:
    return "proposed" if tool_kind == "action" else "running"

"""agentfootprint's wire shapes: the ``toSSE`` envelope ``{type, payload, meta}`` and the payloads
of the event types the codec maps (``src/events/payloads.ts``; see
the agentfootprint notes §2 and §4, from the 9.62.0 sources). Fields are in the order the doc gives them,
which is the order ``JSON.stringify`` writes them, so decode → encode gives the same bytes."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

__all__ = [
    "PREFIX",
    "TOKEN_CONTENT",
    "TOKEN_HEAD",
    "TOKEN_INDEX",
    "AfUsage",
    "Envelope",
    "EventMeta",
    "FatalP",
    "LlmEndP",
    "LlmStartP",
    "TokenEnvelope",
    "TokenP",
    "ToolEndP",
    "ToolStartP",
    "TurnEndP",
    "TurnStartP",
]

#: every agentfootprint event type starts with it
PREFIX = "agentfootprint."
#: the type of streambridge's own escape hatch (a carrier: a whole event in streambridge JSON)
CARRIER_TYPE = "streambridge.carrier"

_W = {"kw_only": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}


class Envelope(Struct, forbid_unknown_fields=True, gc=False):
    """One frame's data: the whole event envelope."""

    type: str
    payload: Raw
    meta: Raw | UnsetType = UNSET


class EventMeta(Struct, **_W):
    """``EventMeta``, in the doc's order. The encoder writes it with zeros and empty paths for an
    event that came without one (the decoder reads exactly that form back as no meta)."""

    wall_clock_ms: int | float = 0
    run_offset_ms: int | float = 0
    runtime_stage_id: str = ""
    subflow_path: list[str] = []
    composition_path: list[str] = []
    turn_index: int | UnsetType = UNSET
    iter_index: int | UnsetType = UNSET
    trace_id: str | UnsetType = UNSET
    span_id: str | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET
    run_id: str = ""
    session_id: str | UnsetType = UNSET
    principal: Raw | UnsetType = UNSET
    tenant: Raw | UnsetType = UNSET


class TurnStartP(Struct, **_W):
    turn_index: int
    user_prompt: str


class LlmStartP(Struct, **_W):
    iteration: int
    provider: str
    model: str
    system_prompt_chars: int
    messages_count: int
    tools_count: int
    tools: Raw | UnsetType = UNSET


class TokenP(Struct, **_W):
    """``stream.token``: ``content`` is a delta of the answer."""

    iteration: int
    token_index: int
    content: str


class ThinkingP(TokenP):
    """``stream.thinking_delta``: the same shape, a delta of the reasoning."""


class AfUsage(Struct, **_W):
    input: int
    output: int
    cache_read: int | UnsetType = UNSET
    cache_write: int | UnsetType = UNSET
    thinking: int | UnsetType = UNSET


class LlmEndP(Struct, **_W):
    iteration: int
    content: str
    tool_call_count: int
    usage: AfUsage
    stop_reason: str
    duration_ms: int | float


class ToolStartP(Struct, **_W):
    """``args`` is already parsed (a JSON value, kept byte for byte)."""

    tool_name: str
    tool_call_id: str
    args: Raw
    parallel_count: int | UnsetType = UNSET
    protocol: Raw | UnsetType = UNSET


class ToolEndP(Struct, **_W):
    tool_call_id: str
    result: Raw
    error: bool | UnsetType = UNSET
    duration_ms: int | float = 0
    status: str | UnsetType = UNSET


class TurnEndP(Struct, **_W):
    turn_index: int
    final_content: str
    total_input_tokens: int
    total_output_tokens: int
    iteration_count: int
    duration_ms: int | float
    stopped_early: Raw | UnsetType = UNSET


class FatalP(Struct, **_W):
    """``error.fatal``: the error is already a string; ``stage`` and ``scope`` are kept as JSON
    (the doc does not give their types)."""

    error: str
    stage: Raw = Raw(b'""')
    scope: Raw = Raw(b'""')


class ToolProgressP(Struct, **_W):
    tool_call_id: str
    tool_name: str
    iteration: int
    payload: Raw


class BudgetP(Struct, **_W):
    """``agent.budget_exhausted``; ``limit`` and ``pendingToolCalls`` kept as JSON (the doc
    does not give their types)."""

    reason: str
    iteration: int
    limit: Raw | UnsetType = UNSET
    pending_tool_calls: Raw = Raw(b"0")
    action: str = "wrapped-up"


class PauseP(Struct, **_W):
    reason: str
    question_payload: Raw


class SnapshotP(Struct, **_W):
    kind: str
    media_type: str
    bytes: int
    label: str | UnsetType = UNSET


class PresentedP(Struct, **_W):
    """``artifacts.presented``: metadata only, never the artifact's content."""

    ref: str
    as_: str = msgspec.field(name="as")
    snapshot: SnapshotP
    tool_call_id: str
    iteration: int


class RefusedP(Struct, **_W):
    op: str
    reason: str
    ref: str | UnsetType = UNSET
    detail: str | UnsetType = UNSET
    tool: str | UnsetType = UNSET


class TokenEnvelope(Struct, gc=False):
    """A ``stream.token`` envelope read whole: the decoder's quick way for plain tokens."""

    type: str
    payload: TokenP
    meta: Raw


#: the bytes of a token envelope up to each counter and the content (encoder and decoder share them)
TOKEN_HEAD = b'{"type":"' + PREFIX.encode() + b'stream.token","payload":{"iteration":'
TOKEN_INDEX = b'"tokenIndex":'
TOKEN_CONTENT = b'"content":'

"""nest's wire shapes (msgspec Structs) and the vocabulary both directions share."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Raw, Struct, UnsetType

__all__ = [
    "REJECTED",
    "ApprovalRequestedW",
    "ApprovalSettledW",
    "CancelledW",
    "ElicitationW",
    "ErrorW",
    "MessageMetadataW",
    "MetaW",
    "NdjsonNamed",
    "NestFrame",
    "NestUsage",
    "QueueW",
    "ReasoningW",
    "StepFinishW",
    "StepStartW",
    "TextW",
    "TitleW",
    "ToolInputAvailableW",
    "ToolInputDeltaW",
    "ToolInputStartW",
    "ToolOutputDeniedW",
    "ToolOutputErrorW",
    "ToolOutputW",
    "UiW",
]

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}


class NestUsage(Struct, **_W):
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int | UnsetType = UNSET
    cache_read_tokens: int | UnsetType = UNSET
    reasoning_tokens: int | UnsetType = UNSET


class _K(Struct, tag_field="kind", **_W):
    pass


class StepStartW(_K, tag="step-start"):
    pass


class StepFinishW(_K, tag="step-finish"):
    usage: NestUsage | UnsetType = UNSET
    cost_usd: int | float | UnsetType | None = UNSET
    reasoning_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class TextW(_K, tag="text"):
    text: str


class ReasoningW(_K, tag="reasoning"):
    text: str


class ToolInputStartW(_K, tag="tool-input-start"):
    id: str
    name: str
    tool_kind: Literal["read", "action"]
    parent_id: str | UnsetType = UNSET


class ToolInputDeltaW(_K, tag="tool-input-delta"):
    id: str
    delta: str


class ToolInputAvailableW(_K, tag="tool-input-available"):
    id: str
    name: str
    input: Raw
    tool_kind: Literal["read", "action"]
    parent_id: str | UnsetType = UNSET


class ToolOutputW(_K, tag="tool-output"):
    id: str
    output: Raw


class ToolOutputErrorW(_K, tag="tool-output-error"):
    id: str
    error: str


class ToolOutputDeniedW(_K, tag="tool-output-denied"):
    id: str
    reason: str | UnsetType = UNSET


class ElicitationW(_K, tag="elicitation"):
    id: str
    request: Raw


class ApprovalRequestedW(_K, tag="approval-requested"):
    id: str
    approver: str
    expires_at: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    confirmation: Raw | UnsetType = UNSET
    target: Raw | UnsetType = UNSET


class ApprovalSettledW(_K, tag="approval-settled"):
    id: str
    status: str
    approver: str | UnsetType = UNSET
    decided_by: str | UnsetType = UNSET
    decided_via: str | UnsetType = UNSET
    remember: bool | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class UiW(_K, tag="ui"):
    id: str
    component: str
    props: Raw
    version: int | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    fallback_text: str | UnsetType = UNSET
    component_versions: Raw | UnsetType = UNSET
    partial: bool | UnsetType = UNSET


class TitleW(_K, tag="title"):
    title: str


class MessageMetadataW(_K, tag="message-metadata"):
    metadata: Raw


class CancelledW(_K, tag="cancelled"):
    pass


class QueueW(_K, tag="queue"):
    queue: Raw
    started: Raw | UnsetType = UNSET


class MetaW(Struct, **_W):
    run_id: str | UnsetType = UNSET
    thread_id: str | UnsetType = UNSET


class ErrorW(Struct, **_W):
    code: str
    message: str


NestFrame = (
    StepStartW
    | StepFinishW
    | TextW
    | ReasoningW
    | ToolInputStartW
    | ToolInputDeltaW
    | ToolInputAvailableW
    | ToolOutputW
    | ToolOutputErrorW
    | ToolOutputDeniedW
    | ElicitationW
    | ApprovalRequestedW
    | ApprovalSettledW
    | UiW
    | TitleW
    | MessageMetadataW
    | CancelledW
    | QueueW
)
#: what the published server writes as a tool's error when a person rejected the call
REJECTED = "rejected"
_CARRIER_KIND = b'{"kind":"'


class NdjsonNamed(Struct):
    event: str
    data: Raw

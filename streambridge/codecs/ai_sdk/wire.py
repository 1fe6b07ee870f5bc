"""The AI SDK UI message stream chunks (msgspec Structs tagged by ``type``), members in the order
the SDK's own writers set them. Only the chunk types streambridge maps have a Struct; ``data-*``
parts are read apart (any name), and the other chunk types are kept whole."""

from __future__ import annotations

from msgspec import UNSET, Raw, Struct, UnsetType

__all__ = ["PREFIX", "AiSdkChunk", "Chunk", "DataPartW", "ErrorW", "FinishW"]

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}

#: the id prefix of the text and reasoning parts an encoder opens for text that had none
PREFIX = "sb-"


class Chunk(Struct, tag_field="type", **_W):
    pass


class StartW(Chunk, tag="start"):
    message_id: str | UnsetType = UNSET


class StartStepW(Chunk, tag="start-step"):
    pass


class FinishStepW(Chunk, tag="finish-step"):
    pass


class TextStartW(Chunk, tag="text-start"):
    id: str


class TextDeltaW(Chunk, tag="text-delta"):
    id: str
    delta: str


class TextEndW(Chunk, tag="text-end"):
    id: str


class ReasoningStartW(Chunk, tag="reasoning-start"):
    id: str


class ReasoningDeltaW(Chunk, tag="reasoning-delta"):
    id: str
    delta: str


class ReasoningEndW(Chunk, tag="reasoning-end"):
    id: str


class ToolInputStartW(Chunk, tag="tool-input-start"):
    tool_call_id: str
    tool_name: str


class ToolInputDeltaW(Chunk, tag="tool-input-delta"):
    tool_call_id: str
    input_text_delta: str


class ToolInputAvailableW(Chunk, tag="tool-input-available"):
    tool_call_id: str
    tool_name: str
    input: Raw


class ToolInputErrorW(Chunk, tag="tool-input-error"):
    tool_call_id: str
    tool_name: str
    input: Raw
    error_text: str


class ToolApprovalRequestW(Chunk, tag="tool-approval-request"):
    approval_id: str
    tool_call_id: str


class ToolApprovalResponseW(Chunk, tag="tool-approval-response"):
    approval_id: str
    approved: bool
    reason: str | UnsetType = UNSET


class ToolOutputAvailableW(Chunk, tag="tool-output-available"):
    tool_call_id: str
    output: Raw


class ToolOutputErrorW(Chunk, tag="tool-output-error"):
    tool_call_id: str
    error_text: str


class ToolOutputDeniedW(Chunk, tag="tool-output-denied"):
    tool_call_id: str


class SourceUrlW(Chunk, tag="source-url"):
    source_id: str
    url: str
    title: str | UnsetType = UNSET


class MessageMetadataW(Chunk, tag="message-metadata"):
    message_metadata: Raw


class ErrorW(Chunk, tag="error"):
    error_text: str


class AbortW(Chunk, tag="abort"):
    pass


class FinishW(Chunk, tag="finish"):
    pass


AiSdkChunk = (
    StartW
    | StartStepW
    | FinishStepW
    | TextStartW
    | TextDeltaW
    | TextEndW
    | ReasoningStartW
    | ReasoningDeltaW
    | ReasoningEndW
    | ToolInputStartW
    | ToolInputDeltaW
    | ToolInputAvailableW
    | ToolInputErrorW
    | ToolApprovalRequestW
    | ToolApprovalResponseW
    | ToolOutputAvailableW
    | ToolOutputErrorW
    | ToolOutputDeniedW
    | SourceUrlW
    | MessageMetadataW
    | ErrorW
    | AbortW
    | FinishW
)
CHUNKS: dict[str, type[Chunk]] = {c.__struct_config__.tag: c for c in AiSdkChunk.__args__}
FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(("type", *cls.__struct_encode_fields__)) for kind, cls in CHUNKS.items()
}


class DataPartW(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, gc=False):
    """A ``data-<name>`` part as the SDK writes it: ``{type, id?, data, transient?}``."""

    type: str
    id: str | UnsetType = UNSET
    data: Raw
    transient: bool | UnsetType = UNSET

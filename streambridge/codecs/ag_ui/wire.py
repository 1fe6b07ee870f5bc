"""AG-UI 1.0 events as msgspec Structs, tagged by ``type``, members in the order the reference
SDKs write them (``BaseEvent`` first, then the event's own fields). Only the events streambridge
maps have a Struct; the others (state, messages snapshot, activity, subagents, reasoning spans,
encrypted values, ``RAW``) are kept whole, and unknown types too.

The members an event may carry beside these (``timestamp``, ``rawEvent``, ``metadata``, a text
message's ``name``, a result's ``role``…) are the event's unknown fields: kept in order and
written back after the known ones."""

from __future__ import annotations

from msgspec import UNSET, Raw, Struct, UnsetType

__all__ = ["CARRIER_NAME", "EVENTS", "FIELDS", "KEPT", "KEPT_WHOLE", "PREFIX", "SPANS", "AgUiEvent", "AgUiWire", "kept"]

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}

#: the id prefix of what an encoder invents (text and reasoning messages, result messages, steps)
PREFIX = "sb-"
#: the prefix of the unknown-field keys under which the decoder keeps AG-UI members the model has
#: no field for (a result's ``messageId``, a step's ``stepName``, a start's ``role``…): written back
#: in place by this codec, spliced by others under a name that no protocol's field has
KEPT = "ag-ui."


def kept(member: str) -> str:
    """The unknown-field key of an AG-UI member kept with its event."""
    return KEPT + member


#: the ``CUSTOM`` name of streambridge's carriers (vendor-prefixed, as the spec asks)
CARRIER_NAME = "streambridge.carrier"


class AgUiWire(Struct, tag_field="type", **_W):
    pass


class RunStartedW(AgUiWire, tag="RUN_STARTED"):
    thread_id: str
    run_id: str


class RunFinishedW(AgUiWire, tag="RUN_FINISHED"):
    thread_id: str
    run_id: str
    result: Raw | UnsetType = UNSET
    #: ``null`` is tolerated (senders that wrote it before 1.0's null-omission rule) as absent
    outcome: Raw | UnsetType = UNSET


class RunErrorW(AgUiWire, tag="RUN_ERROR"):
    message: str
    code: str | UnsetType = UNSET


class StepStartedW(AgUiWire, tag="STEP_STARTED"):
    step_name: str


class StepFinishedW(AgUiWire, tag="STEP_FINISHED"):
    step_name: str


class TextMessageStartW(AgUiWire, tag="TEXT_MESSAGE_START"):
    message_id: str
    role: str | UnsetType = UNSET


class TextMessageContentW(AgUiWire, tag="TEXT_MESSAGE_CONTENT"):
    message_id: str
    delta: str


class TextMessageEndW(AgUiWire, tag="TEXT_MESSAGE_END"):
    message_id: str


class TextMessageChunkW(AgUiWire, tag="TEXT_MESSAGE_CHUNK"):
    message_id: str | UnsetType = UNSET
    role: str | UnsetType = UNSET
    delta: str | UnsetType = UNSET


class ToolCallStartW(AgUiWire, tag="TOOL_CALL_START"):
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | UnsetType | None = UNSET  # null tolerated as absent


class ToolCallArgsW(AgUiWire, tag="TOOL_CALL_ARGS"):
    tool_call_id: str
    delta: str


class ToolCallEndW(AgUiWire, tag="TOOL_CALL_END"):
    tool_call_id: str


class ToolCallChunkW(AgUiWire, tag="TOOL_CALL_CHUNK"):
    tool_call_id: str | UnsetType = UNSET
    tool_call_name: str | UnsetType = UNSET
    parent_message_id: str | UnsetType | None = UNSET  # null tolerated as absent
    delta: str | UnsetType = UNSET


class ToolCallResultW(AgUiWire, tag="TOOL_CALL_RESULT"):
    message_id: str
    tool_call_id: str
    #: a string (0.x and 1.x) or a list of content parts (1.x), kept as received
    content: Raw


class ToolCallResultRoleW(AgUiWire, tag="TOOL_CALL_RESULT"):
    """``TOOL_CALL_RESULT`` as the decoder's hot path reads it: with the ``role`` AG-UI's SDKs
    write last (an unknown member to the model, kept as the full way keeps it)."""

    message_id: str
    tool_call_id: str
    content: Raw
    role: Raw | UnsetType = UNSET


class ReasoningMessageStartW(AgUiWire, tag="REASONING_MESSAGE_START"):
    message_id: str
    role: str


class ReasoningMessageContentW(AgUiWire, tag="REASONING_MESSAGE_CONTENT"):
    message_id: str
    delta: str


class ReasoningMessageEndW(AgUiWire, tag="REASONING_MESSAGE_END"):
    message_id: str


class ReasoningMessageChunkW(AgUiWire, tag="REASONING_MESSAGE_CHUNK"):
    message_id: str | UnsetType = UNSET
    delta: str | UnsetType = UNSET


class ThinkingTextMessageStartW(AgUiWire, tag="THINKING_TEXT_MESSAGE_START"):
    pass


class ThinkingTextMessageContentW(AgUiWire, tag="THINKING_TEXT_MESSAGE_CONTENT"):
    delta: str


class ThinkingTextMessageEndW(AgUiWire, tag="THINKING_TEXT_MESSAGE_END"):
    pass


class CustomW(AgUiWire, tag="CUSTOM"):
    name: str
    value: Raw


AgUiEvent = (
    RunStartedW
    | RunFinishedW
    | RunErrorW
    | StepStartedW
    | StepFinishedW
    | TextMessageStartW
    | TextMessageContentW
    | TextMessageEndW
    | TextMessageChunkW
    | ToolCallStartW
    | ToolCallArgsW
    | ToolCallEndW
    | ToolCallChunkW
    | ToolCallResultW
    | ReasoningMessageStartW
    | ReasoningMessageContentW
    | ReasoningMessageEndW
    | ReasoningMessageChunkW
    | ThinkingTextMessageStartW
    | ThinkingTextMessageContentW
    | ThinkingTextMessageEndW
    | CustomW
)
#: the events the decoder's hot path reads (a result with its ``role`` as one of them)
HotEvent = (
    RunStartedW
    | RunFinishedW
    | RunErrorW
    | StepStartedW
    | StepFinishedW
    | TextMessageStartW
    | TextMessageContentW
    | TextMessageEndW
    | TextMessageChunkW
    | ToolCallStartW
    | ToolCallArgsW
    | ToolCallEndW
    | ToolCallChunkW
    | ToolCallResultRoleW
    | ReasoningMessageStartW
    | ReasoningMessageContentW
    | ReasoningMessageEndW
    | ReasoningMessageChunkW
    | ThinkingTextMessageStartW
    | ThinkingTextMessageContentW
    | ThinkingTextMessageEndW
    | CustomW
)
EVENTS: dict[str, type[AgUiWire]] = {c.__struct_config__.tag: c for c in AgUiEvent.__args__}
FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(("type", *cls.__struct_encode_fields__)) for kind, cls in EVENTS.items()
}
#: AG-UI events with no meaning in streambridge's model: decoded as data parts holding the whole
#: event, written back byte for byte (other protocols carry them)
KEPT_WHOLE = frozenset(
    {
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
        "RAW",
        "REASONING_START",
        "REASONING_END",
        "REASONING_ENCRYPTED_VALUE",
        "THINKING_START",
        "THINKING_END",
    }
)
#: the kept-whole kinds that only bracket other events (a reasoning span around its messages)
SPANS = frozenset({"REASONING_START", "REASONING_END", "THINKING_START", "THINKING_END"})
#: every event type of AG-UI 1.x and the 0.x ``THINKING_*`` ones
EVENT_TYPES = frozenset(EVENTS) | KEPT_WHOLE

"""The one event model every codec decodes into and encodes from (hub and spoke).

Events hold meanings, not wire shapes. Three conventions keep translation lossless:

* ``UNSET`` means "the source did not say"; ``None`` is a real JSON ``null`` (nest's unpriced
  ``costUsd``). Values that a protocol implies by default (nest's ``toolKind: "read"``, the
  turn's own ``messageId``) are decoded to ``UNSET`` so every codec sees one canonical form.
* ``message_id`` is ``UNSET`` for the run's primary message; only other messages (agentkit's
  second agent in one stream) carry an id. ``RunStart.message_id`` names the primary one.
* ``synthetic`` marks structure a codec invented (a step bracket, a delta made from a
  non-streaming answer, the terminal of a truncated stream). Targets without that structure
  drop synthetic events instead of carrying them.

JSON payloads whose shape streambridge does not interpret (tool inputs and outputs, UI props)
are kept as ``msgspec.Raw``: the exact bytes received, written back unchanged.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

__all__ = [
    "RUN_STATUSES",
    "UNSET",
    "ArtifactPresented",
    "ArtifactRefused",
    "ArtifactSnapshot",
    "BudgetExhausted",
    "Citation",
    "DataPart",
    "Elicitation",
    "Event",
    "Failure",
    "Malformed",
    "MessageMetadata",
    "Queue",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "RunStart",
    "Source",
    "Sources",
    "Status",
    "StepFinish",
    "StepStart",
    "Suggestions",
    "Terminal",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "Title",
    "ToolApprovalRequest",
    "ToolApprovalSettled",
    "ToolCall",
    "ToolDenied",
    "ToolError",
    "ToolInputDelta",
    "ToolInputStart",
    "ToolOutput",
    "ToolProgress",
    "UiComponent",
    "Usage",
    "Verbatim",
    "decode_event",
    "encode_event",
]

RunStatus = Literal["succeeded", "blocked", "refused", "error", "notProvisioned", "cancelled"]
RUN_STATUSES: tuple[str, ...] = ("succeeded", "blocked", "refused", "error", "notProvisioned", "cancelled")
ToolKind = Literal["read", "action"]
ToolCallStatus = Literal["proposed", "running", "succeeded", "failed", "denied"]

_CONFIG = {"kw_only": True, "omit_defaults": True, "rename": "camel", "gc": False}


class Usage(Struct, **_CONFIG):
    """Token and cost accounting; every field optional (absent = not reported)."""

    input_tokens: int | UnsetType = UNSET
    output_tokens: int | UnsetType = UNSET
    cached_tokens: int | UnsetType = UNSET
    cache_write_tokens: int | UnsetType = UNSET
    cache_read_tokens: int | UnsetType = UNSET
    reasoning_tokens: int | UnsetType = UNSET
    cost_usd: int | float | UnsetType | None = UNSET
    duration_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class Failure(Struct, **_CONFIG):
    """The one failure shape (agentkit's ``AgentFailure`` plus oma's error details)."""

    status: RunStatus
    message: str
    code: str | UnsetType = UNSET
    recoverable: bool | UnsetType = UNSET
    retry_after_ms: int | float | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class Source(Struct, **_CONFIG):
    id: str
    title: str
    kind: str
    url: str | UnsetType = UNSET
    snippet: str | UnsetType = UNSET
    entity_logical_name: str | UnsetType = UNSET
    record_id: str | UnsetType = UNSET
    score: int | float | UnsetType = UNSET


class Verbatim(Struct, **_CONFIG):
    """Top-level members of a source frame kept byte for byte because fields nested in them are
    unknown to the codec (a newer ``usage`` member, say): the event says what is known, and the
    ``origin`` codec's encoder writes these members back instead of its own encoding of them.
    Other codecs carry the event whole, so the members come back on the cross trip too."""

    origin: str
    members: dict[str, Raw]


class Event(Struct, tag_field="type", **_CONFIG):
    """Fields every event has. ``extra`` keeps unknown wire fields in their received order,
    ``verbatim`` the known ones that hold unknown fields."""

    message_id: str | UnsetType = UNSET
    synthetic: bool = False
    extra: dict[str, Raw] | UnsetType = UNSET
    verbatim: Verbatim | UnsetType = UNSET
    #: the SSE ``id:`` of the frame the event came in, as received (newer nest numbers every
    #: event: the client's resume cursor, ``Last-Event-ID``); written back on the event's frame
    event_id: str | UnsetType = UNSET


class RunStart(Event, tag="run-start"):
    """Opens a run. ``thread_id`` is the conversation (nest thread, agentkit session).

    ``resumed``: the stream joins a run already under way (a client re-attaching to it), so it
    names the run but no conversation (nest's re-attach ``meta`` carries only ``runId``)."""

    run_id: str | UnsetType = UNSET
    resumed: bool | UnsetType = UNSET
    thread_id: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class StepStart(Event, tag="step-start"):
    pass


class StepFinish(Event, tag="step-finish"):
    usage: Usage | UnsetType = UNSET
    cost_usd: int | float | UnsetType | None = UNSET
    reasoning_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class TextStart(Event, tag="text-start"):
    part_id: str | UnsetType = UNSET


class TextDelta(Event, tag="text"):
    text: str = ""
    part_id: str | UnsetType = UNSET


class TextEnd(Event, tag="text-end"):
    part_id: str | UnsetType = UNSET


class ReasoningStart(Event, tag="reasoning-start"):
    part_id: str | UnsetType = UNSET


class ReasoningDelta(Event, tag="reasoning"):
    text: str = ""
    part_id: str | UnsetType = UNSET


class ReasoningEnd(Event, tag="reasoning-end"):
    part_id: str | UnsetType = UNSET


class ToolInputStart(Event, tag="tool-input-start"):
    call_id: str = ""
    name: str = ""
    tool_kind: ToolKind | UnsetType = UNSET
    parent_id: str | UnsetType = UNSET


class ToolInputDelta(Event, tag="tool-input-delta"):
    call_id: str = ""
    delta: str = ""


class ToolCall(Event, tag="tool-call"):
    """A tool call whose input is complete. ``arguments_json`` is the raw text as sent."""

    call_id: str = ""
    name: str = ""
    input: Raw | UnsetType = UNSET
    arguments_json: str | UnsetType = UNSET
    tool_kind: ToolKind | UnsetType = UNSET
    parent_id: str | UnsetType = UNSET
    status: ToolCallStatus | UnsetType = UNSET
    started_at: int | float | UnsetType = UNSET
    ended_at: int | float | UnsetType = UNSET
    result_text: str | UnsetType = UNSET
    failure: Failure | UnsetType = UNSET
    signature: str | UnsetType = UNSET


class ToolApprovalRequest(Event, tag="tool-approval-request"):
    call_id: str = ""
    approver: str | UnsetType = UNSET
    expires_at: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    confirmation: Raw | UnsetType = UNSET
    target: Raw | UnsetType = UNSET


class ToolApprovalSettled(Event, tag="tool-approval-settled"):
    call_id: str = ""
    status: str = "approved"
    approver: str | UnsetType = UNSET
    decided_by: str | UnsetType = UNSET
    decided_via: str | UnsetType = UNSET
    remember: bool | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class ToolOutput(Event, tag="tool-output"):
    """A tool's result. ``output`` is a JSON value (a JSON string for text results).

    ``is_error`` is only ever ``False``: a source that said so explicitly (oma ``is_error``).
    """

    call_id: str = ""
    output: Raw = Raw(b"null")
    is_error: bool | UnsetType = UNSET


class ToolProgress(Event, tag="tool-progress"):
    """A running tool reports progress (agentfootprint's ``stream.tool_progress``); ``data`` is
    the tool's own payload, verbatim."""

    call_id: str = ""
    name: str | UnsetType = UNSET
    data: Raw = Raw(b"null")


class ToolError(Event, tag="tool-error"):
    """A tool failed (its effects are unknown). ``output`` keeps a structured error payload."""

    call_id: str = ""
    error: str = ""
    failure: Failure | UnsetType = UNSET
    output: Raw | UnsetType = UNSET


class ToolDenied(Event, tag="tool-denied"):
    """A person said no (or the approval lapsed): nothing ran."""

    call_id: str = ""
    reason: str | UnsetType = UNSET
    failure: Failure | UnsetType = UNSET


class BudgetExhausted(Event, tag="budget-exhausted"):
    """The agent ran out of budget (agentfootprint's ``agent.budget_exhausted``): ``reason`` is
    what ran out, ``action`` whether the turn was ``wrapped-up`` or ``cut-short``. Not terminal:
    the turn still ends with its own terminal event."""

    reason: str = ""
    action: str | UnsetType = UNSET
    limit: Raw | UnsetType = UNSET
    pending_tool_calls: Raw | UnsetType = UNSET


class Sources(Event, tag="sources"):
    sources: list[Source] = []


class Citation(Event, tag="citation"):
    marker: str = ""
    source_id: str = ""
    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET


class Suggestions(Event, tag="suggestions"):
    prompts: list[str] = []


class Status(Event, tag="status"):
    """Passing UI text ("Searching…"), never message content."""

    label: str = ""


class Title(Event, tag="title"):
    title: str = ""


class UiComponent(Event, tag="ui"):
    """Generative UI; a second component with the same ``ui_id`` replaces the first."""

    ui_id: str = ""
    component: str = ""
    props: Raw = Raw(b"{}")
    version: int | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    fallback_text: str | UnsetType = UNSET
    component_versions: Raw | UnsetType = UNSET
    partial: bool | UnsetType = UNSET


class ArtifactSnapshot(Struct, frozen=True, **_CONFIG):
    """What a presented artifact is, never its content (agentfootprint's ``PresentSnapshot``):
    enough for an honest placeholder when the artifact itself is gone."""

    kind: str
    media_type: str
    bytes: int
    label: str | UnsetType = UNSET


class ArtifactPresented(Event, tag="artifact-presented"):
    """An artifact handed to the screen by reference (agentfootprint's ``present``): ``ref`` is
    the ticket, ``as_`` how to render it (the caller's vocabulary, never validated). Decoders
    also derive it, marked ``synthetic``, from any tool output that is a ``present`` result."""

    ref: str = ""
    as_: str = msgspec.field(default="", name="as")
    snapshot: ArtifactSnapshot = ArtifactSnapshot(kind="", media_type="", bytes=0)
    tool_call_id: str | UnsetType = UNSET
    iteration: int | UnsetType = UNSET


class ArtifactRefused(Event, tag="artifact-refused"):
    """An artifact operation refused (agentfootprint's ``artifacts.refused``): a ``present`` of
    an expired ref, say. ``reason`` is the host's code (``missing-or-expired``, …)."""

    reason: str = ""
    op: str | UnsetType = UNSET
    ref: str | UnsetType = UNSET
    detail: str | UnsetType = UNSET
    tool: str | UnsetType = UNSET


class Elicitation(Event, tag="elicitation"):
    call_id: str = ""
    request: Raw = Raw(b"{}")


class Queue(Event, tag="queue"):
    queue: Raw = Raw(b"{}")
    started: Raw | UnsetType = UNSET


class MessageMetadata(Event, tag="message-metadata"):
    metadata: Raw = Raw(b"{}")


class DataPart(Event, tag="data"):
    """Anything without a meaning in this model: ``data`` is the original object, verbatim."""

    name: str = ""
    origin: str = ""
    data: Raw = Raw(b"null")
    id: str | UnsetType = UNSET
    transient: bool | UnsetType = UNSET


class Malformed(Event, tag="malformed"):
    """A frame that could not be decoded, forwarded instead of dropped."""

    raw: str = ""
    error: str = ""
    frame: int = 0
    offset: int = 0


class Terminal(Event, tag="terminal"):
    """The one end of a run. ``text`` is the full assembled answer of the primary message.

    ``result`` / ``error_info`` keep a source's own terminal payload (oma's ``done`` data, its
    ``errorInfo``) so the same protocol re-emits it as received.
    """

    status: RunStatus = "succeeded"
    text: str | UnsetType = UNSET
    usage: Usage | UnsetType = UNSET
    failure: Failure | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    guarded: bool | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET
    turn_id: str | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error_info: Raw | UnsetType = UNSET


AnyEvent = (
    RunStart
    | StepStart
    | StepFinish
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolCall
    | ToolApprovalRequest
    | ToolApprovalSettled
    | ToolOutput
    | ToolProgress
    | ToolError
    | ToolDenied
    | BudgetExhausted
    | Sources
    | Citation
    | Suggestions
    | Status
    | Title
    | UiComponent
    | ArtifactPresented
    | ArtifactRefused
    | Elicitation
    | Queue
    | MessageMetadata
    | DataPart
    | Malformed
    | Terminal
)

EVENT_TYPES: dict[str, type[Event]] = {cls.__struct_config__.tag: cls for cls in AnyEvent.__args__}

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyEvent)


def encode_event(event: Event) -> bytes:
    """The event as streambridge's own JSON (what carriers embed)."""
    return _encoder.encode(event)


def decode_event(data: bytes | str) -> Event:
    """Inverse of :func:`encode_event`; raises ``msgspec.ValidationError`` on bad input."""
    return _decoder.decode(data)

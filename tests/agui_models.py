"""AG-UI streams judged, and written, by the real Python SDK (PyPI ``ag-ui-protocol`` 1.x).

:func:`problems` checks every event of an SSE body against ``ag_ui.core``'s pydantic models (the
``Event`` discriminated union, validated strictly: no coercion); :func:`producer_streams` writes
realistic runs with ``ag_ui.encoder.EventEncoder``, the SDK's own SSE writer, from the SDK's model
classes, the way a Python agent server does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ag_ui.core import (
    CustomEvent,
    Event,
    EventType,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import BaseEvent
from ag_ui.encoder import EventEncoder
from pydantic import BaseModel, TypeAdapter, ValidationError

EVENT: TypeAdapter[Event] = TypeAdapter(Event)

#: the models that are open by design (RFC 6902 operations keep members they do not define)
OPEN_MODELS = ("AddOperation", "RemoveOperation", "ReplaceOperation", "MoveOperation", "CopyOperation", "TestOperation")


# -- reading -------------------------------------------------------------------------------


def sse_payloads(body: bytes) -> list[str]:
    """The ``data`` payloads of an SSE body, read as the AG-UI client reads them: events end at a
    blank line, ``data:`` lines join with ``\\n``, every other line is ignored."""
    payloads = []
    for block in body.decode().split("\n\n"):
        lines = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if lines:
            payloads.append("\n".join(lines))
    return payloads


def _unknown(value: object, path: str) -> Iterator[str]:
    """Paths of members no model declares (the SDK keeps them as ``model_extra``)."""
    if isinstance(value, BaseModel):
        if type(value).__name__ not in OPEN_MODELS:
            yield from (f"{path}/{key}" for key in value.model_extra or {})
        for name in type(value).model_fields:
            yield from _unknown(getattr(value, name), f"{path}/{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _unknown(item, f"{path}/{i}")


def event_problems(payload: str) -> list[str]:
    """What the Python SDK objects to in one event's JSON: a schema error, a member it does not
    know, or a value it does not read back as sent (a ``null`` where absence is meant, say)."""
    try:
        event = EVENT.validate_json(payload, strict=True)
    except ValidationError as error:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
    found = [f"unknown member {path}" for path in _unknown(event, "")]
    if json.loads(event.model_dump_json(by_alias=True)) != json.loads(payload):
        found.append(f"read back differently: {event.model_dump_json(by_alias=True)}")
    return found


def problems(body: bytes) -> list[tuple[int, str]]:
    """Every event of the body the SDK's models object to, as (index, problem)."""
    return [(i, p) for i, payload in enumerate(sse_payloads(body)) for p in event_problems(payload)]


# -- writing -------------------------------------------------------------------------------


THREAD = {"thread_id": "thread-producer", "run_id": "run-1"}


def _text(message_id: str, *deltas: str) -> list[BaseEvent]:
    return [
        TextMessageStartEvent(message_id=message_id, role="assistant"),
        *(TextMessageContentEvent(message_id=message_id, delta=d) for d in deltas),
        TextMessageEndEvent(message_id=message_id),
    ]


def _runs() -> dict[str, list[BaseEvent]]:
    start, finish = RunStartedEvent(**THREAD), RunFinishedEvent(**THREAD)
    call = [
        ToolCallStartEvent(tool_call_id="call-1", tool_call_name="getWeather", parent_message_id="msg-1"),
        ToolCallArgsEvent(tool_call_id="call-1", delta='{"city":'),
        ToolCallArgsEvent(tool_call_id="call-1", delta='"Paris"}'),
        ToolCallEndEvent(tool_call_id="call-1"),
    ]
    return {
        "text": [start, *_text("msg-1", "Hello", ", wörld ", "☀️ — done."), finish],
        "tool-call": [
            start,
            *_text("msg-1", "Let me check the weather."),
            *call,
            ToolCallResultEvent(message_id="tool-msg-1", tool_call_id="call-1", content='{"tempC":21}', role="tool"),
            *_text("msg-2", "It is 21 °C in Paris."),
            RunFinishedEvent(**THREAD, result={"answered": True}),
        ],
        "reasoning": [
            start,
            ReasoningStartEvent(message_id="reason-1"),
            ReasoningMessageStartEvent(message_id="reason-msg-1", role="reasoning"),
            ReasoningMessageContentEvent(message_id="reason-msg-1", delta="The user wants a haiku; "),
            ReasoningMessageContentEvent(message_id="reason-msg-1", delta="five, seven, five."),
            ReasoningMessageEndEvent(message_id="reason-msg-1"),
            ReasoningEndEvent(message_id="reason-1"),
            *_text("msg-1", "Old pond, a frog jumps."),
            finish,
        ],
        "state-and-steps": [
            start,
            StepStartedEvent(step_name="plan"),
            StateSnapshotEvent(snapshot={"todos": [], "status": "planning"}),
            StateDeltaEvent(
                delta=[
                    {"op": "add", "path": "/todos/-", "value": {"title": "Buy milk", "done": False}},
                    {"op": "replace", "path": "/status", "value": "ready"},
                ]
            ),
            StepFinishedEvent(step_name="plan"),
            *_text("msg-1", "Added one todo."),
            finish,
        ],
        "run-error": [
            start,
            TextMessageStartEvent(message_id="msg-1", role="assistant"),
            TextMessageContentEvent(message_id="msg-1", delta="Half an ans"),
            RunErrorEvent(message="The model provider timed out.", code="provider_timeout"),
        ],
        "interrupt": [
            start,
            *_text("msg-1", "I need your approval to call the tool."),
            *call,
            RunFinishedEvent(
                **THREAD,
                outcome=RunFinishedInterruptOutcome(
                    interrupts=[Interrupt(id="int-1", reason="tool_approval", message="Run it?", tool_call_id="call-1")]
                ),
            ),
        ],
        "custom": [
            start,
            CustomEvent(name="acme.progress", value={"percent": 40, "label": "indexing"}),
            *_text("msg-1", "Indexed."),
            CustomEvent(name="acme.done", value=None),
            finish,
        ],
        "cancelled": [
            start,
            *_text("msg-1", "Stopping here."),
            RunFinishedEvent(**THREAD, outcome=RunFinishedCancelledOutcome()),
        ],
        "frontend-tool": [
            start,
            *call,
            RunFinishedEvent(**THREAD, outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=["call-1"])),
        ],
        "timestamps-and-metadata": [
            RunStartedEvent(**THREAD, timestamp=1767225600000),
            TextMessageStartEvent(message_id="msg-1", role="assistant", timestamp=1767225600001),
            TextMessageContentEvent(message_id="msg-1", delta="Hi.", metadata={"acme.trace": "t-1"}),
            TextMessageEndEvent(message_id="msg-1", timestamp=1767225600002),
            RunFinishedEvent(
                **THREAD,
                timestamp=1767225600003,
                usage=[
                    TokenUsage(provider="openai", model="gpt-4.1", input_tokens=12, output_tokens=3, total_tokens=15)
                ],
            ),
        ],
        "chunks": [
            start,
            TextMessageChunkEvent(message_id="msg-1", role="assistant", delta="Checking "),
            TextMessageChunkEvent(delta="the time."),
            ToolCallChunkEvent(
                tool_call_id="call-1", tool_call_name="getTime", parent_message_id="msg-1", delta='{"tz":'
            ),
            ToolCallChunkEvent(delta='"UTC"}'),
            ToolCallResultEvent(message_id="tool-msg-1", tool_call_id="call-1", content="10:00", role="tool"),
            TextMessageChunkEvent(message_id="msg-2", delta="It is 10:00 UTC."),
            finish,
        ],
    }


def producer_streams() -> dict[str, bytes]:
    """Realistic runs, each written event by event with the SDK's ``EventEncoder``."""
    encoder = EventEncoder()
    return {name: "".join(encoder.encode(e) for e in events).encode() for name, events in _runs().items()}


__all__ = ["EventType", "event_problems", "problems", "producer_streams", "sse_payloads"]

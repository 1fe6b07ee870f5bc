"""The ag-ui codec's own facts (the laws over the registry cover the rest): every AG-UI event
type decoded, chunks and 0.x thinking read, the encoder's repairs checked against a port of the
TypeScript client's ``verifyEvents`` (AG-UI 1.0 §4.4), interrupts, cancellation and failures,
kept-whole events through every protocol, ``RunAgentInput``, and the ``AGUI`` validate rules."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from msgspec import UNSET, Raw

from streambridge import StreamError, translate
from streambridge.codecs import get
from streambridge.codecs.ag_ui.http import asked_interrupts, build_request, parse_request
from streambridge.codecs.codec import Likeness
from streambridge.codecs.framing import Frame, make_parser
from streambridge.codecs.requests import BadRequest, ChatRequest, HistoryMessage, ResumeEntry
from streambridge.events import (
    DataPart,
    Elicitation,
    Failure,
    Malformed,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)

from .cli_support import invoke
from .corpus import CODECS, CORPUS, SCENARIOS, Findings, canonical, convert, decode, encode, golden, golden_name


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"data: " + json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n" for e in events
    )


def frames(data: bytes) -> list[dict[str, Any]]:
    out = []
    for block in data.split(b"\n\n"):
        lines = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
        if lines:
            out.append(json.loads(b"\n".join(lines)))
    return out


def types(data: bytes) -> list[str]:
    return [f["type"] if f["type"] != "CUSTOM" else f"CUSTOM {f['name']}" for f in frames(data)]


def verify_events(data: bytes) -> None:
    """A port of ``verifyEvents`` (AG-UI 1.0 §4.4): raises AssertionError where the client
    throws ``AGUIError``."""
    run, messages, calls, steps = "none", set(), set(), set()
    for i, e in enumerate(frames(data)):
        t = e["type"]
        assert i or t in ("RUN_STARTED", "RUN_ERROR"), f"first event {t}"
        assert run != "errored", f"{t} after RUN_ERROR"
        assert run != "finished" or t in ("RUN_STARTED", "RUN_ERROR"), f"{t} after RUN_FINISHED"
        if t == "RUN_STARTED":
            assert run != "active", "RUN_STARTED while a run is active"
            run, messages, calls, steps = "active", set(), set(), set()
        elif t == "RUN_FINISHED":
            assert not (messages or calls or steps), f"RUN_FINISHED with {messages | calls | steps} open"
            run = "finished"
        elif t == "RUN_ERROR":
            run = "errored"
        elif t == "TEXT_MESSAGE_START":
            assert e["messageId"] not in messages, f"message {e['messageId']} started twice"
            messages.add(e["messageId"])
        elif t in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert e["messageId"] in messages, f"{t} for {e['messageId']}, not active"
            if t == "TEXT_MESSAGE_END":
                messages.discard(e["messageId"])
        elif t == "TOOL_CALL_START":
            assert e["toolCallId"] not in calls, f"tool call {e['toolCallId']} started twice"
            calls.add(e["toolCallId"])
        elif t in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert e["toolCallId"] in calls, f"{t} for {e['toolCallId']}, not active"
            if t == "TOOL_CALL_END":
                calls.discard(e["toolCallId"])
        elif t == "STEP_STARTED":
            assert e["stepName"] not in steps, f"step {e['stepName']} started twice"
            steps.add(e["stepName"])
        elif t == "STEP_FINISHED":
            assert e["stepName"] in steps, f"step {e['stepName']} never started"
            steps.discard(e["stepName"])
        assert None not in e.values(), f"{t} with a null member"
        if t in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            assert e["delta"], f"{t} with an empty delta (0.x clients reject it)"
    assert run in ("finished", "errored"), "the stream ends without RUN_FINISHED or RUN_ERROR"


START = RunStart(run_id="r1", thread_id="t1")
RUN_STARTED = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RUN_FINISHED = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


# -- what the encoder writes ------------------------------------------------------------------


@pytest.mark.parametrize("source", CODECS)
def test_every_golden_in_ag_ui_passes_verify_events(source: str) -> None:
    """One test per source walks every golden, failing once naming each failing file."""
    findings = Findings(f"goldens of {source} in ag-ui pass verify_events")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, source)):
            verify_events(CORPUS.converted(scenario, source, "ag-ui"))
    findings.check()


def test_a_source_without_a_run_start_gets_one_with_derived_ids_first() -> None:
    out = encode("ag-ui", [TextDelta(text="Hi"), Terminal()])
    first = frames(out)[0]
    assert first["type"] == "RUN_STARTED" and first["runId"].startswith("run-")
    assert first["threadId"] == "thr-" + first["runId"]
    assert frames(out)[-1] == {"type": "RUN_FINISHED", "threadId": first["threadId"], "runId": first["runId"]}
    assert decode("ag-ui", out)[0].synthetic  # read back as invented: no carrier describes it
    assert b"streambridge.carrier" not in out


def test_content_of_a_message_never_started_gets_its_start() -> None:
    events = [START, TextDelta(text="a", part_id="p1"), TextDelta(text="b", part_id="p1"), Terminal()]
    out = encode("ag-ui", events)
    verify_events(out)
    assert types(out) == [
        "RUN_STARTED",
        "CUSTOM streambridge.carrier",  # the first delta's: the start it needed is covered by it
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "CUSTOM streambridge.carrier",  # the terminal's: it covers the end it needed
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert canonical(decode("ag-ui", out)) == canonical(decode("ag-ui", encode("ag-ui", decode("ag-ui", out))))
    assert [type(e) for e in decode("ag-ui", out)] == [RunStart, TextDelta, TextDelta, Terminal]


def test_messages_calls_and_steps_left_open_are_closed_before_run_finished() -> None:
    plan = StepStart(extra={"ag-ui.stepName": Raw(b'"plan"')})
    events = [START, plan, TextStart(part_id="p1"), ToolInputStart(call_id="c1", name="search"), Terminal()]
    out = encode("ag-ui", events)
    verify_events(out)
    assert types(out)[-4:] == ["TEXT_MESSAGE_END", "TOOL_CALL_END", "STEP_FINISHED", "RUN_FINISHED"]
    assert canonical(decode("ag-ui", out)) == canonical([*events[:-1], Terminal(text="")])


def test_a_step_the_source_named_none_rides_forward_on_the_next_event_and_comes_back() -> None:
    """AG-UI steps are labels: a model call's unnamed bracket gets no frame with a name this
    encoder would invent; at exact it rides in the next event's rawEvent and is read back."""
    text = [TextStart(part_id="p1"), TextDelta(text="hi", part_id="p1"), TextEnd(part_id="p1")]
    events = [START, StepStart(), *text, StepFinish(), Terminal()]
    out = encode("ag-ui", events)
    verify_events(out)
    assert types(out) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert frames(out)[1]["rawEvent"] == {"streambridge": {"before": [{"type": "step-start"}]}}
    assert frames(out)[4]["rawEvent"] == {"streambridge": {"before": [{"type": "step-finish"}]}}
    assert canonical(decode("ag-ui", out)) == canonical([*events[:-1], Terminal(text="hi")])


def test_a_failed_run_needs_nothing_closed() -> None:
    failure = Failure(status="error", message="boom", code="stream_failed")
    out = encode("ag-ui", [START, TextStart(part_id="p1"), Terminal(status="error", failure=failure)])
    verify_events(out)
    assert frames(out)[-1] == {"type": "RUN_ERROR", "message": "boom", "code": "stream_failed"}
    assert b"TEXT_MESSAGE_END" not in out


def test_deltas_and_outcomes_of_calls_never_announced_get_an_invented_announcement() -> None:
    out = encode(
        "ag-ui",
        [START, ToolInputDelta(call_id="c1", delta="{}"), ToolOutput(call_id="c2", output=Raw(b'"x"')), Terminal()],
    )
    verify_events(out)
    assert [f for f in frames(out) if f["type"] == "TOOL_CALL_START"] == [
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "unknown"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "unknown"},
    ]
    back = decode("ag-ui", out)
    assert [type(e) for e in back] == [RunStart, ToolInputStart, ToolInputDelta, ToolCall, ToolOutput, Terminal]
    assert back[1].synthetic and back[3].synthetic and back[3].call_id == "c2"
    # both announcements read back as invented: the one carrier is the terminal's, which covers
    # the end of c1 (left open by the source)
    assert [f["value"]["event"]["type"] for f in frames(out) if f["type"] == "CUSTOM"] == ["terminal"]


def test_repeated_ids_and_arguments_after_the_end_go_in_carriers_only() -> None:
    events = [
        START,
        ToolInputStart(call_id="c1", name="search"),
        ToolInputStart(call_id="c1", name="search"),  # a second start of an open call
        ToolCall(call_id="c1", name="search", input=Raw(b"{}")),
        ToolInputDelta(call_id="c1", delta="late"),  # arguments after the end
        ToolCall(call_id="c1", name="search", input=Raw(b"{}")),  # a second end
        TextStart(part_id="p1"),
        TextStart(part_id="p1"),  # a message that is open
        TextEnd(part_id="p1"),
        TextEnd(part_id="p1"),  # an end of a message that is not open
        StepFinish(),  # a step that is not open
        Terminal(),
    ]
    out = encode("ag-ui", events)
    verify_events(out)
    assert types(out).count("TOOL_CALL_START") == 1 and types(out).count("TOOL_CALL_END") == 1
    assert types(out).count("TEXT_MESSAGE_START") == 1 and "STEP_FINISHED" not in types(out)
    assert canonical(decode("ag-ui", out)) == canonical([*events[:-1], Terminal(text="")])


def test_nothing_follows_the_terminal() -> None:
    encoder = get("ag-ui").encoder()
    out = encoder.encode([START, Terminal(), TextDelta(text="late")]) + encoder.close()
    assert frames(out)[-1]["type"] == "RUN_FINISHED" and encoder.dropped == 1


def test_input_that_breaks_off_ends_with_one_run_error() -> None:
    data = golden("tool-streamed-args", "nest")[:300]
    out = b"".join(translate([data], source="nest", target="ag-ui"))
    verify_events(out)
    assert frames(out)[-1] == {
        "type": "RUN_ERROR",
        "message": "The stream ended without a terminal event.",
        "code": "truncated",
    }
    assert types(out).count("RUN_ERROR") == 1 and "RUN_FINISHED" not in types(out)


def test_empty_deltas_are_said_by_their_carrier_alone() -> None:
    out = encode("ag-ui", [START, TextDelta(text=""), ReasoningDelta(text=""), Terminal()])
    verify_events(out)
    assert b"_CONTENT" not in out
    assert [type(e) for e in decode("ag-ui", out)] == [RunStart, TextDelta, ReasoningDelta, Terminal]


# -- decoding --------------------------------------------------------------------------------------


REAL = sse(
    {**RUN_STARTED, "timestamp": 1},
    {"type": "STEP_STARTED", "stepName": "plan"},
    {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "think"},
    {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "tm1", "toolCallId": "c1", "content": "found", "role": "tool"},
    {"type": "STEP_FINISHED", "stepName": "plan"},
    {**RUN_FINISHED, "result": {"ok": True}},
)


def test_a_real_stream_decodes_to_its_meaning_and_comes_back_byte_for_byte() -> None:
    events = decode("ag-ui", REAL, strict=True)
    assert canonical(events) == canonical(
        [
            RunStart(run_id="r1", thread_id="t1", extra={"timestamp": Raw(b"1")}),
            StepStart(extra={"ag-ui.stepName": Raw(b'"plan"')}),
            ReasoningStart(part_id="rm1"),
            ReasoningDelta(text="think", part_id="rm1"),
            ReasoningEnd(part_id="rm1"),
            TextStart(part_id="m1"),
            TextDelta(text="Hi", part_id="m1"),
            TextEnd(part_id="m1"),
            ToolInputStart(call_id="c1", name="search", extra={"ag-ui.parentMessageId": Raw(b'"m1"')}),
            ToolInputDelta(call_id="c1", delta='{"q":'),
            ToolInputDelta(call_id="c1", delta="1}"),
            ToolCall(call_id="c1", name="search", input=Raw(b'{"q":1}')),
            ToolOutput(
                call_id="c1", output=Raw(b'"found"'), extra={"ag-ui.messageId": Raw(b'"tm1"'), "role": Raw(b'"tool"')}
            ),
            StepFinish(),
            Terminal(result=Raw(b'{"ok":true}'), text="Hi"),
        ]
    )
    assert encode("ag-ui", events) == REAL
    for via in CODECS:  # and through every protocol
        assert convert(via, "ag-ui", convert("ag-ui", via, REAL)) == REAL, via


def test_argument_text_that_is_no_json_is_kept_as_text() -> None:
    data = sse(
        RUN_STARTED,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{half"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        RUN_FINISHED,
    )
    call = next(e for e in decode("ag-ui", data) if isinstance(e, ToolCall))
    assert call.arguments_json == "{half" and call.input is UNSET


KEPT_WHOLE = [
    {"type": "STATE_SNAPSHOT", "snapshot": {"cart": [], "total": 0}},
    {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "add", "path": "/cart/-", "value": {"sku": "A1"}, "x-note": "kept"},
            {"op": "replace", "path": "/total", "value": 9.5},
            {"op": "remove", "path": "/draft"},
        ],
    },
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "PLAN", "content": {"steps": ["a"]}},
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "a1",
        "activityType": "PLAN",
        "patch": [{"op": "add", "path": "/steps/-", "value": "b"}],
    },
    {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher", "parentToolCallId": "c9"},
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "success"}},
    {"type": "SUBAGENT_ERROR", "subagentRunId": "s2", "message": "lost", "code": "x"},
    {"type": "RAW", "event": {"provider": "native", "n": 1}, "source": "openai"},
    {"type": "REASONING_START", "messageId": "span1"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "m1", "encryptedValue": "abc=="},
    {"type": "REASONING_END", "messageId": "span1"},
    {"type": "CUSTOM", "name": "acme.poll", "value": {"question": "Lunch?", "options": ["yes", "no"]}},
    {"type": "FUTURE_EVENT", "something": 1},
]


def test_events_the_model_has_no_meaning_for_come_back_through_every_protocol() -> None:
    data = sse(RUN_STARTED, *KEPT_WHOLE, RUN_FINISHED)
    events = decode("ag-ui", data, strict=True)
    parts = [e for e in events if isinstance(e, DataPart)]
    assert [p.name for p in parts] == [e["type"] for e in KEPT_WHOLE[:-2]] + ["acme.poll", "FUTURE_EVENT"]
    assert bytes(parts[1].data) == json.dumps(KEPT_WHOLE[1], separators=(",", ":")).encode()  # the patch as sent
    assert bytes(parts[-2].data) == b'{"question":"Lunch?","options":["yes","no"]}'  # CUSTOM: its value
    assert encode("ag-ui", events) == data
    for via in CODECS:
        assert convert(via, "ag-ui", convert("ag-ui", via, data)) == data, via


def test_chunks_expand_into_start_content_and_end() -> None:
    data = sse(
        RUN_STARTED,
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "He"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "llo"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": None, "delta": "{}"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r1", "delta": "hm"},
        {"type": "RAW", "event": {}},  # (RAW ends no chunked item)
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r2", "delta": "ok"},  # another item in the lane
        RUN_FINISHED,
    )
    events = decode("ag-ui", data, strict=True)
    assert [(type(e).__name__, getattr(e, "part_id", getattr(e, "call_id", None))) for e in events] == [
        ("RunStart", None),
        ("TextStart", "m1"),
        ("TextDelta", "m1"),
        ("TextDelta", "m1"),
        ("TextEnd", "m1"),  # a tool call chunk ends the text lane's item
        ("ToolInputStart", "c1"),
        ("ToolInputDelta", "c1"),
        ("ToolCall", "c1"),  # the reasoning chunk ends the tool lane's item
        ("ReasoningStart", "r1"),
        ("ReasoningDelta", "r1"),
        ("DataPart", None),
        ("ReasoningEnd", "r1"),
        ("ReasoningStart", "r2"),
        ("ReasoningDelta", "r2"),
        ("ReasoningEnd", "r2"),  # RUN_FINISHED ends the last one
        ("Terminal", None),
    ]
    verify_events(encode("ag-ui", events))  # written back in the long form


@pytest.mark.parametrize(
    ("chunk", "expected"),
    [
        ({"type": "TEXT_MESSAGE_CHUNK", "delta": "x"}, "the first TEXT_MESSAGE_CHUNK of an item with its messageId"),
        ({"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "delta": "x"}, "toolCallId and toolCallName"),
    ],
)
def test_a_first_chunk_without_its_opener_fields_is_malformed(chunk: dict[str, Any], expected: str) -> None:
    with pytest.raises(StreamError, match=expected):
        decode("ag-ui", sse(RUN_STARTED, chunk, RUN_FINISHED), strict=True)


def test_a_chunk_that_contradicts_its_item_is_fatal() -> None:
    data = sse(
        RUN_STARTED,
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TOOL_CALL_CHUNK", "toolCallName": "g", "delta": "{}"},
        RUN_FINISHED,
    )
    with pytest.raises(StreamError, match="toolCallName 'f'"):
        decode("ag-ui", data, strict=True)
    assert any(isinstance(e, Malformed) for e in decode("ag-ui", data))  # lenient: kept, not dropped


def test_thinking_events_of_0x_are_read_as_reasoning() -> None:
    data = sse(
        RUN_STARTED,
        {"type": "THINKING_START", "title": "Plan"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "first"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        RUN_FINISHED,
    )
    events = decode("ag-ui", data, strict=True)
    assert [type(e) for e in events] == [RunStart, DataPart, ReasoningDelta, ReasoningEnd, DataPart, Terminal]
    assert events[2].text == "first" and events[3].synthetic
    out = encode("ag-ui", events)
    assert types(out)[2:5] == ["REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"]
    assert b'{"type":"THINKING_START","title":"Plan"}' in out  # the span as it came
    assert (
        "".join(e.text for e in decode("nest", convert("ag-ui", "nest", data)) if isinstance(e, ReasoningDelta))
        == "first"
    )


def test_nulls_are_tolerated_on_the_three_fields_of_the_fixture_and_written_as_absent() -> None:
    data = sse(
        RUN_STARTED,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": None},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c2", "toolCallName": "g", "parentMessageId": None},
        {**RUN_FINISHED, "outcome": None},
    )
    events = decode("ag-ui", data, strict=True)
    assert isinstance(events[-1], Terminal) and events[-1].status == "succeeded" and events[-1].extra is UNSET
    out = encode("ag-ui", events)
    assert b"null" not in out
    verify_events(out)


def test_a_null_anywhere_else_is_malformed() -> None:
    data = sse(RUN_STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": None}, RUN_FINISHED)
    with pytest.raises(StreamError, match="TEXT_MESSAGE_START"):
        decode("ag-ui", data, strict=True)


def test_ndjson_is_read_and_written_too() -> None:
    events = [START, TextDelta(text="Hi"), Terminal()]
    out = encode("ag-ui", events, framing="ndjson")
    assert out.splitlines()[0] == b'{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}'
    assert canonical(decode("ag-ui", out)) == canonical(decode("ag-ui", encode("ag-ui", events)))


# -- stops: interrupts, cancellation, failures ----------------------------------------------------------


def test_an_approval_still_waiting_at_the_end_is_an_interrupt() -> None:
    events = [
        START,
        ToolCall(call_id="c1", name="refund", input=Raw(b'{"amount":5}')),
        ToolApprovalRequest(call_id="c1", reason="Moves money.", expires_at="2026-12-02T00:00:00Z"),
        Terminal(),
    ]
    out = encode("ag-ui", events)
    verify_events(out)
    assert frames(out)[-1]["outcome"] == {
        "type": "interrupt",
        "interrupts": [
            {
                "id": "approval-c1",
                "reason": "tool_approval",
                "message": "Moves money.",
                "toolCallId": "c1",
                "expiresAt": "2026-12-02T00:00:00Z",
            }
        ],
    }
    assert asked_interrupts(out) == ["approval-c1"]
    assert b"data-tool-approval-request" not in out  # right before the end, the interrupt says it all
    assert canonical(decode("ag-ui", out)) == canonical([*events[:-1], Terminal(text="")])


def test_an_approval_with_something_after_it_is_carried_where_it_happened() -> None:
    events = [START, ToolCall(call_id="c1", name="refund", input=Raw(b"{}")), ToolApprovalRequest(call_id="c1")]
    events += [TextDelta(text="Waiting for you."), Terminal()]
    out = encode("ag-ui", events)
    carried = [f["value"]["name"] for f in frames(out) if f["type"] == "CUSTOM"]
    assert "data-tool-approval-request" in carried and asked_interrupts(out) == ["approval-c1"]
    assert canonical(decode("ag-ui", out)) == canonical([*events[:-1], Terminal(text="Waiting for you.")])


def test_an_approval_settled_in_the_run_is_no_interrupt() -> None:
    events = [
        START,
        ToolCall(call_id="c1", name="refund", input=Raw(b"{}")),
        ToolApprovalRequest(call_id="c1"),
        ToolApprovalSettled(call_id="c1", status="approved"),
        Terminal(),
    ]
    out = encode("ag-ui", events)
    assert "outcome" not in frames(out)[-1] and asked_interrupts(out) == []


def test_an_elicitation_still_waiting_is_an_interrupt_with_its_request() -> None:
    request = b'{"message":"Which day?","questions":[{"id":"d"}]}'
    out = encode(
        "ag-ui",
        [
            START,
            ToolCall(call_id="c2", name="ask", input=Raw(b"{}")),
            Elicitation(call_id="c2", request=Raw(request)),
            Terminal(),
        ],
    )
    (interrupt,) = frames(out)[-1]["outcome"]["interrupts"]
    assert interrupt == {
        "id": "elicitation-c2",
        "reason": "input_required",
        "message": "Which day?",
        "toolCallId": "c2",
        "metadata": {"request": json.loads(request)},
    }


def test_interrupts_of_a_real_stream_become_events_and_come_back_as_they_were() -> None:
    outcome = {
        "type": "interrupt",
        "interrupts": [
            {"id": "int-1", "reason": "tool_approval", "message": "OK?", "toolCallId": "c1"},
            {"id": "int-2", "reason": "confirm_plan", "message": "Go?", "responseSchema": {"type": "boolean"}},
        ],
    }
    data = sse(RUN_STARTED, {**RUN_FINISHED, "outcome": outcome})
    events = decode("ag-ui", data, strict=True)
    assert [type(e) for e in events] == [RunStart, ToolApprovalRequest, Elicitation, Terminal]
    assert events[1].call_id == "c1" and events[1].reason == "OK?" and events[3].status == "succeeded"
    assert json.loads(bytes(events[2].request)) == outcome["interrupts"][1]
    assert asked_interrupts(data) == ["int-1", "int-2"]
    assert encode("ag-ui", events) == data  # the outcome alone says them: no carriers
    for via in ("nest", "ai-sdk", "agentkit"):
        back = convert(via, "ag-ui", convert("ag-ui", via, data))
        assert frames(back)[-1]["outcome"] == outcome, via
        assert asked_interrupts(back) == ["int-1", "int-2"]


def test_an_interrupt_about_a_tool_call_is_an_approval_a_use_chat_user_can_click() -> None:
    """``reason`` is an open string: an interrupt naming a call and asking no answer of its own
    shape is an approval request whatever it says (agents write ``tool_call``); one with a
    ``responseSchema`` asks for a form and stays an elicitation."""
    about_call = {"id": "int-1", "reason": "tool_call", "message": "Refund 40 EUR?", "toolCallId": "c1"}
    form = {"id": "int-2", "reason": "tool_call", "toolCallId": "c2", "responseSchema": {"type": "object"}}
    data = sse(RUN_STARTED, {**RUN_FINISHED, "outcome": {"type": "interrupt", "interrupts": [about_call, form]}})
    events = decode("ag-ui", data, strict=True)
    assert [type(e) for e in events] == [RunStart, ToolApprovalRequest, Elicitation, Terminal]
    assert events[1].call_id == "c1" and events[1].reason == "Refund 40 EUR?"
    assert encode("ag-ui", events) == data  # the interrupt kept whole: back as it came
    chunks = [json.loads(f.data) for f in make_parser("sse").feed(convert("ag-ui", "ai-sdk", data))[:-1]]
    asked = [c for c in chunks if c["type"] == "tool-approval-request"]
    assert [c["toolCallId"] for c in asked] == ["c1"]


def test_cancelled_is_an_outcome_not_an_error() -> None:
    out = encode("ag-ui", [START, TextDelta(text="Hal"), Terminal(status="cancelled")])
    verify_events(out)
    assert frames(out)[-1] == {**RUN_FINISHED, "outcome": {"type": "cancelled"}}
    assert decode("ag-ui", out)[-1].status == "cancelled"
    assert decode("ai-sdk", convert("ag-ui", "ai-sdk", out))[-1].status == "cancelled"


@pytest.mark.parametrize(
    ("status", "failure", "frame"),
    [
        ("error", None, {"type": "RUN_ERROR", "message": "The run failed.", "code": "run_failed"}),
        ("error", Failure(status="error", message="Quota"), {"type": "RUN_ERROR", "message": "Quota"}),
        (
            "blocked",
            Failure(status="blocked", message="Filtered", code="content_filter"),
            {"type": "RUN_ERROR", "message": "Filtered", "code": "content_filter"},
        ),
        ("refused", None, {"type": "RUN_ERROR", "message": "The model declined to answer.", "code": "refused"}),
        (
            "notProvisioned",
            None,
            {
                "type": "RUN_ERROR",
                "message": "The assistant is not set up in this environment.",
                "code": "not_provisioned",
            },
        ),
    ],
)
def test_failures_are_run_errors_whose_code_says_the_status(
    status: str, failure: Failure | None, frame: dict[str, str]
) -> None:
    end = Terminal(status=status, failure=failure if failure is not None else UNSET)  # type: ignore[arg-type]
    out = encode("ag-ui", [START, end])
    assert frames(out)[-1] == frame and b"streambridge.carrier" not in out
    back = decode("ag-ui", out)[-1]
    assert back.status == status and back.failure == end.failure


# -- unknown kinds and CUSTOM ---------------------------------------------------------------------


def test_another_protocols_unknown_kind_travels_as_custom_and_comes_back() -> None:
    nest = golden("unknown-kinds", "nest")
    out = convert("nest", "ag-ui", nest)
    carried = [f for f in frames(out) if f["type"] == "CUSTOM"]
    assert {f["value"]["name"] for f in carried} >= {"data-reaction", "data-presence"}
    assert all(f["name"] == "streambridge.carrier" for f in carried)
    assert convert("ag-ui", "nest", out) == nest


# -- HTTP: RunAgentInput -------------------------------------------------------------------------------


BODY = {
    "threadId": "thr-9",
    "runId": "run-9",
    "messages": [
        {"id": "u1", "role": "user", "content": "Hello"},
        {"id": "a1", "role": "assistant", "content": "Hi, how can I help?"},
        {
            "id": "u2",
            "role": "user",
            "content": [
                {"type": "text", "text": "Refund this"},
                {"type": "binary", "mimeType": "image/png", "url": "https://x.test/r.png", "filename": "r.png"},
            ],
        },
    ],
    "tools": [{"name": "search", "description": "Search", "parameters": {"type": "object"}}],
    "context": [{"description": "page", "value": "/orders"}],
    "state": {"cart": []},
    "forwardedProps": {"tenant": "acme"},
    "resume": [{"interruptId": "approval-c1", "status": "resolved", "payload": {"approved": True}}],
}


def test_run_agent_input_parses_into_a_chat_request() -> None:
    req = parse_request(json.dumps(BODY).encode())
    assert req.text == "Refund this" and req.thread_id == "thr-9"
    assert [(h.role, h.text, h.id) for h in req.history] == [
        ("user", "Hello", "u1"),
        ("assistant", "Hi, how can I help?", "a1"),
    ]
    assert [(a.media_type, a.url, a.name) for a in req.attachments] == [("image/png", "https://x.test/r.png", "r.png")]
    assert req.context == {k: BODY[k] for k in ("state", "forwardedProps", "tools", "context")}
    assert req.resume == [ResumeEntry(interrupt_id="approval-c1", status="resolved", payload={"approved": True})]


def test_run_agent_input_builds_from_a_chat_request_and_parses_back() -> None:
    req = parse_request(json.dumps(BODY).encode())
    built = json.loads(build_request(req))
    assert built["threadId"] == "thr-9" and built["runId"].startswith("run-")
    assert built["resume"] == BODY["resume"]
    assert {k: built[k] for k in ("tools", "context", "state", "forwardedProps")} == {
        k: BODY[k] for k in ("tools", "context", "state", "forwardedProps")
    }
    assert parse_request(build_request(req)) == req
    assert build_request(req) == build_request(req)  # the same request, the same run id


def test_another_protocols_context_is_forwarded_props() -> None:
    req = ChatRequest(text="Hi", thread_id="t", history=[HistoryMessage(role="user", text="a")], context={"page": "/x"})
    built = json.loads(build_request(req))
    assert built["forwardedProps"] == {"page": "/x"} and built["messages"][-1]["content"] == "Hi"
    assert all(isinstance(m["id"], str) and m["id"] for m in built["messages"])


def test_a_resume_alone_is_a_request_and_no_user_message_without_one_is_not() -> None:
    resume_only = {"threadId": "t", "runId": "r", "messages": [], "resume": BODY["resume"]}
    assert parse_request(json.dumps(resume_only).encode()).resume[0].interrupt_id == "approval-c1"
    with pytest.raises(BadRequest, match="no user message"):
        parse_request(b'{"threadId":"t","runId":"r","messages":[]}')
    with pytest.raises(BadRequest, match="RunAgentInput"):
        parse_request(b'{"threadId":"t"}')


def test_the_surface_is_the_mount_path_answered_200_with_sse() -> None:
    codec = get("ag-ui")
    assert codec.http.chat_path == "" and codec.http.chat_status == 200
    assert codec.content_types["sse"] == "text/event-stream" and codec.default_framing == "sse"


# -- sniffing and rules --------------------------------------------------------------------------------


def test_sniffing_knows_ag_ui_by_its_event_names() -> None:
    sniff = get("ag-ui").sniff
    assert sniff(Frame(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}')) == Likeness.MARKER
    assert sniff(Frame(b'{"type":"SOMETHING_NEW"}')) == Likeness.SHAPE
    assert sniff(Frame(b'{"type":"text-delta","id":"0","delta":"x"}')) == Likeness.NONE
    result = invoke("convert", "-", "--to", "nest", input=golden("plain-text", "ag-ui"))
    assert result.exit_code == 0 and "detected ag-ui" in result.stderr


BROKEN = sse(
    {"type": "STEP_FINISHED", "stepName": "x"},  # not RUN_STARTED first; a step never started
    RUN_STARTED,
    RUN_STARTED,  # while the run is active
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m9", "delta": "a"},  # not open
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},  # open
    {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "a"},
    {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "b"},  # the same id
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "name": None},  # null
    {"type": "NEW_THING"},  # unknown type
    RUN_FINISHED,  # c1 and m1 open
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},  # after RUN_FINISHED
)


def test_validate_reports_each_ordering_rule_by_its_id() -> None:
    result = invoke("validate", "-", "--protocol", "ag-ui", "--json", input=BROKEN)
    assert result.exit_code == 1
    found = {f["rule"] for f in json.loads(result.stdout)["findings"]}
    assert {f"AGUI{n:03d}" for n in range(1, 11)} <= found
    severities = {f["rule"]: f["severity"] for f in json.loads(result.stdout)["findings"]}
    assert severities["AGUI009"] == "warning" and severities["AGUI008"] == "warning"
    assert severities["AGUI004"] == "error"


def test_what_the_encoder_writes_validates_clean() -> None:
    events = [START, StepStart(), TextDelta(text="a"), ToolInputDelta(call_id="c1", delta="{}")]
    events += [ToolOutput(call_id="c1", output=Raw(b'"ok"')), Terminal()]
    out = encode("ag-ui", events)
    result = invoke("validate", "-", "--protocol", "ag-ui", "--json", input=out)
    assert json.loads(result.stdout)["findings"] == [] and result.exit_code == 0


def test_the_codec_is_registered_after_the_ai_sdk_codecs() -> None:
    names = list(CODECS)
    assert names.index("ag-ui") > names.index("ai-sdk@5")
    assert msgspec.json.decode(golden("plain-text", "ag-ui").split(b"\n", 1)[0][6:])["type"] == "RUN_STARTED"


def test_a_terminals_sse_id_stays_on_its_own_frame_after_invented_ends() -> None:
    """The ends of invented messages read back as nothing: an id on one of them would be lost."""
    events = [START, TextDelta(text="a"), ReasoningDelta(text="b"), Terminal(event_id="7")]
    out = encode("ag-ui", events)
    assert b'id: 7\ndata: {"type":"RUN_FINISHED"' in out
    assert decode("ag-ui", out)[-1].event_id == "7"

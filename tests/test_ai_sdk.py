"""The ai-sdk codecs (Vercel AI SDK UI message stream): mapping rows, ordering repair, terminals
and ``[DONE]``, profile folding, data parts, strict errors, the HTTP surface."""

from __future__ import annotations

import json

import msgspec
import pytest
from msgspec import UNSET, Raw

from streambridge import StreamError, translate
from streambridge.codecs import get
from streambridge.codecs.ai_sdk.http import HEADERS, build_request, parse_request
from streambridge.codecs.requests import ChatRequest, HistoryMessage
from streambridge.codecs.terminals import TRUNCATED_CODE
from streambridge.events import (
    DataPart,
    Failure,
    MessageMetadata,
    ReasoningDelta,
    RunStart,
    Sources,
    Status,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    Title,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)

from .corpus import canonical, convert, decode, encode

PROFILES = ("ai-sdk", "ai-sdk@6", "ai-sdk@5")
START = RunStart(message_id="m1")  # what a start chunk says: no data part beside it


def filled(events: list) -> list:
    """The events as a decoder gives them back: real ones, the terminal with the answer text."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.message_id is UNSET)
    out = [e for e in events if not e.synthetic]
    if isinstance(out[-1], Terminal) and out[-1].text is UNSET:
        out[-1] = msgspec.structs.replace(out[-1], text=text)
    return out


def real(events: list) -> list:
    return [e for e in events if not e.synthetic]


def chunks(data: bytes) -> list[object]:
    """The stream's chunks as JSON (``[DONE]`` as the string)."""
    out: list[object] = []
    for block in data.split(b"\n\n"):
        if block.startswith(b"data: "):
            payload = block[6:]
            out.append("[DONE]" if payload == b"[DONE]" else json.loads(payload))
    return out


def types(data: bytes) -> list[str]:
    return [c if isinstance(c, str) else c["type"] for c in chunks(data)]  # type: ignore[index]


def sse(*objs: object) -> bytes:
    return b"".join(
        b"data: "
        + (o if isinstance(o, bytes) else json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode())
        + b"\n\n"
        for o in objs
    )


# -- decoding real chunks --------------------------------------------------------------------


REAL = sse(
    {"type": "start", "messageId": "m1"},
    {"type": "start-step"},
    {"type": "reasoning-start", "id": "r0"},
    {"type": "reasoning-delta", "id": "r0", "delta": "hmm"},
    {"type": "reasoning-end", "id": "r0"},
    {"type": "text-start", "id": "0"},
    {"type": "text-delta", "id": "0", "delta": "Hi"},
    {"type": "text-end", "id": "0"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"q":1}'},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "search", "input": {"q": 1}},
    {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"},
    {"type": "tool-approval-response", "approvalId": "a1", "approved": True},
    {"type": "tool-output-available", "toolCallId": "c1", "output": "ok"},
    {"type": "source-url", "sourceId": "s1", "url": "https://x", "title": "X"},
    {"type": "message-metadata", "messageMetadata": {"k": 1}},
    {"type": "data-weather", "id": "w1", "data": {"t": 20}},
    {"type": "data-progress", "data": 0.5, "transient": True},
    {"type": "file", "url": "https://f", "mediaType": "image/png"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
    b"[DONE]",
)


def test_every_mapped_chunk_decodes_to_its_event() -> None:
    events = decode("ai-sdk", REAL, strict=True)
    kinds = [type(e) for e in events]
    assert kinds[:2] == [RunStart, StepStart]
    assert events[0].message_id == "m1" and not events[0].synthetic
    assert [e.part_id for e in events if isinstance(e, TextStart | TextEnd)] == ["0", "0"]
    text = next(e for e in events if isinstance(e, TextDelta))
    assert (text.text, text.part_id) == ("Hi", "0")
    assert next(e for e in events if isinstance(e, ReasoningDelta)).text == "hmm"
    assert next(e for e in events if isinstance(e, ToolInputStart)).name == "search"
    assert next(e for e in events if isinstance(e, ToolInputDelta)).delta == '{"q":1}'
    call = next(e for e in events if isinstance(e, ToolCall))
    assert (call.call_id, bytes(call.input)) == ("c1", b'{"q":1}')  # type: ignore[arg-type]
    request = next(e for e in events if isinstance(e, ToolApprovalRequest))
    assert request.extra == {"approvalId": Raw(b'"a1"')}  # not the derived approval id
    settled = next(e for e in events if isinstance(e, ToolApprovalSettled))
    assert (settled.call_id, settled.status) == ("c1", "approved")
    assert bytes(next(e for e in events if isinstance(e, ToolOutput)).output) == b'"ok"'
    source = next(e for e in events if isinstance(e, Sources)).sources[0]
    assert (source.id, source.url, source.title, source.kind) == ("s1", "https://x", "X", "url")
    assert bytes(next(e for e in events if isinstance(e, MessageMetadata)).metadata) == b'{"k":1}'
    parts = [e for e in events if isinstance(e, DataPart)]
    assert [(p.name, p.id, p.transient) for p in parts[:2]] == [("weather", "w1", UNSET), ("progress", UNSET, True)]
    assert parts[2].name == "file" and bytes(parts[2].data).startswith(b'{"type":"file"')  # kept whole
    assert isinstance(events[-2], StepFinish)
    end = events[-1]
    assert isinstance(end, Terminal) and end.status == "succeeded"
    assert end.extra == {"finishReason": Raw(b'"stop"')}
    assert end.text == "Hi"


@pytest.mark.parametrize("codec", PROFILES)
def test_a_real_stream_round_trips_byte_for_byte(codec: str) -> None:
    data = REAL
    events = decode(codec, data, strict=True)
    if codec == "ai-sdk":
        assert encode(codec, events) == data
    # every profile: what it writes comes back as what it was decoded from
    assert canonical(decode(codec, encode(codec, events), strict=True)) == canonical(events)


def test_tool_input_error_is_a_failed_call() -> None:
    data = sse(
        {"type": "start"},
        {"type": "tool-input-error", "toolCallId": "c1", "toolName": "t", "input": "x", "errorText": "bad"},
        {"type": "finish"},
    )
    call = decode("ai-sdk", data)[1]
    assert isinstance(call, ToolCall)
    assert call.status == "failed" and call.failure == Failure(status="error", message="bad")
    assert types(encode("ai-sdk", decode("ai-sdk", data)))[1:] == ["start-step", "tool-input-error", "finish", "[DONE]"]


# -- ordering repair -------------------------------------------------------------------------------


def test_a_delta_without_a_start_gets_a_fresh_part() -> None:
    out = encode("ai-sdk", [START, TextDelta(text="a"), TextDelta(text="b"), Terminal()])
    body = [c for c in chunks(out) if not (isinstance(c, dict) and c["type"].startswith("data-"))]
    assert body[1:] == [
        {"type": "start-step"},
        {"type": "text-start", "id": "sb-text-1"},
        {"type": "text-delta", "id": "sb-text-1", "delta": "a"},
        {"type": "text-delta", "id": "sb-text-1", "delta": "b"},
        {"type": "text-end", "id": "sb-text-1"},
        {"type": "finish"},
        "[DONE]",
    ]
    back = decode("ai-sdk", out, strict=True)
    assert [type(e) for e in back] == [RunStart, StepStart, TextDelta, TextDelta, Terminal]
    assert back[1].synthetic  # the invented step reads back as invented
    assert all(e.part_id is UNSET for e in back if isinstance(e, TextDelta))


def test_text_after_a_tool_call_goes_to_a_new_step_with_a_fresh_id() -> None:
    events = [
        START,
        TextDelta(text="look"),
        ToolCall(call_id="c1", name="s", input=Raw(b"{}")),
        ToolOutput(call_id="c1", output=Raw(b"1")),
        TextDelta(text="done"),
        Terminal(),
    ]
    out = encode("ai-sdk", events)
    t = types(out)
    assert t == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish",
        "[DONE]",
    ]
    ids = [c["id"] for c in chunks(out) if isinstance(c, dict) and c["type"] == "text-start"]
    assert ids == ["sb-text-1", "sb-text-2"]
    back = [e for e in decode("ai-sdk", out, strict=True) if not e.synthetic]
    assert canonical(back) == canonical(filled(events))


def test_an_outcome_without_a_call_announces_one() -> None:
    out = encode("ai-sdk", [START, ToolOutput(call_id="c9", output=Raw(b"1")), Terminal()])
    c = chunks(out)
    assert {"type": "tool-input-available", "toolCallId": "c9", "toolName": "unknown", "input": {}} in c
    back = decode("ai-sdk", out, strict=True)
    call = next(e for e in back if isinstance(e, ToolCall))
    assert call.synthetic  # read back as the invented announcement
    assert b'"synthetic":true' not in out


def test_an_input_delta_without_a_start_gets_one() -> None:
    out = encode("ai-sdk", [START, ToolInputDelta(call_id="c1", delta="{"), Terminal()])
    assert types(out)[1:4] == ["start-step", "tool-input-start", "tool-input-delta"]


def test_open_parts_are_closed_before_the_terminal() -> None:
    events = [START, ReasoningDelta(text="r"), TextDelta(text="t", part_id="p0"), Terminal(status="cancelled")]
    out = encode("ai-sdk", events)
    t = types(out)
    assert t.index("reasoning-end") < t.index("abort") and t.index("text-end") < t.index("abort")
    assert t[-1] == "[DONE]"
    # the source's own part was closed under the terminal's data part: it comes back as it was
    assert canonical(real(decode("ai-sdk", out, strict=True))) == canonical(filled(events))


def test_a_failure_right_after_a_step_is_written_in_ais_own_order() -> None:
    """As ai's servers write a failed stream: `error` inside the step, then `finish-step`, then
    `finish`; this encoder's own part is closed first, the source's part stays as it was."""
    events = [
        START,
        TextDelta(text="half"),
        TextStart(part_id="t9"),
        TextDelta(text=" an answer", part_id="t9"),
        StepFinish(),
        Terminal(status="error", failure=Failure(status="error", message="provider exploded")),
    ]
    out = encode("ai-sdk", events)
    assert types(out)[1:] == [
        "start-step",
        "text-start",
        "text-delta",
        "text-start",
        "text-delta",
        "text-end",  # sb-text-1, this encoder's own; t9 stays open, as the source left it
        "error",
        "finish-step",
        "finish",
        "[DONE]",
    ]
    assert b'"type":"data-' not in out  # all of it said natively
    assert canonical(real(decode("ai-sdk", out, strict=True))) == canonical(filled(events))
    coded = [*events[:-1], Terminal(status="error", failure=Failure(status="error", message="x", code="quota"))]
    t = types(encode("ai-sdk", coded))
    assert t.index("finish-step") < t.index("error")  # a code needs the terminal's data part: no ai order


def test_a_source_part_id_reused_after_finish_step_is_opened_again() -> None:
    events = [
        START,
        TextStart(part_id="0"),
        TextDelta(text="a", part_id="0"),
        StepFinish(),
        TextDelta(text="b", part_id="0"),
        Terminal(),
    ]
    out = encode("ai-sdk", events)
    c = [x for x in chunks(out) if isinstance(x, dict) and not x["type"].startswith("data-")]
    finish_step = next(i for i, x in enumerate(c) if x["type"] == "finish-step")
    assert c[finish_step - 1] == {"type": "text-end", "id": "0"}  # closed before the step ends
    assert c[finish_step + 1 : finish_step + 4] == [
        {"type": "start-step"},
        {"type": "text-start", "id": "0"},  # opened again: the client forgot it
        {"type": "text-delta", "id": "0", "delta": "b"},
    ]
    assert canonical(real(decode("ai-sdk", out, strict=True))) == canonical(filled(events))


def test_nothing_is_written_after_the_terminal() -> None:
    encoder = get("ai-sdk").encoder()
    out = encoder.encode([START, Terminal(), TextDelta(text="late")]) + encoder.close()
    assert types(out)[-2:] == ["finish", "[DONE]"] and encoder.dropped == 1


# -- terminals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", PROFILES)
@pytest.mark.parametrize("status", ["succeeded", "cancelled", "error", "blocked", "refused", "notProvisioned"])
def test_every_status_ends_with_its_chunks_and_done(codec: str, status: str) -> None:
    failure = Failure(status=status, message="no", code="x_code") if status not in ("succeeded", "cancelled") else UNSET
    end = Terminal(status=status, failure=failure)  # type: ignore[arg-type]
    out = encode(codec, [START, end])
    t = [x for x in types(out) if not x.startswith("data-")]
    if status == "succeeded":
        assert t[-2:] == ["finish", "[DONE]"]
    elif status == "cancelled":
        assert t[-2:] == ["abort", "[DONE]"]
    else:
        assert t[-3:] == ["error", "finish", "[DONE]"]
        error = next(c for c in chunks(out) if isinstance(c, dict) and c["type"] == "error")
        assert error == {"type": "error", "errorText": "no"}
        finish = next(c for c in chunks(out) if isinstance(c, dict) and c["type"] == "finish")
        assert finish == ({"type": "finish"} if codec == "ai-sdk@5" else {"type": "finish", "finishReason": "error"})
    back = decode(codec, out, strict=True)[-1]
    assert back == msgspec.structs.replace(
        end, text=""
    )  # status, message and code come back (the code in the data part)


def test_a_truncated_stream_ends_with_the_truncation_terminal() -> None:
    out = encode("ai-sdk", [START, TextDelta(text="a")])  # close() adds the terminal
    assert types(out)[-3:] == ["error", "finish", "[DONE]"]
    end = decode("ai-sdk", out, strict=True)[-1]
    assert isinstance(end, Terminal) and end.synthetic and end.failure.code == TRUNCATED_CODE  # type: ignore[union-attr]
    assert b'"data-terminal"' not in out  # plain, no data part describes it


def test_done_is_the_end_marker_and_optional_after_the_terminal() -> None:
    with_done = sse({"type": "start"}, {"type": "finish"}, b"[DONE]")
    without = sse({"type": "start"}, {"type": "finish"})
    assert canonical(decode("ai-sdk", with_done, strict=True)) == canonical(decode("ai-sdk", without, strict=True))
    assert not any(isinstance(e, DataPart) for e in decode("ai-sdk", with_done))


def test_an_error_not_followed_by_finish_is_a_passing_one() -> None:
    events = decode("ai-sdk", sse({"type": "start"}, {"type": "error", "errorText": "hiccup"}, {"type": "finish"}))
    assert events[-1] == Terminal(status="error", failure=Failure(status="error", message="hiccup"), text="")
    passing = decode(
        "ai-sdk",
        sse({"type": "start"}, {"type": "error", "errorText": "x"}, {"type": "start-step"}, {"type": "finish"}),
    )
    assert isinstance(passing[1], DataPart) and passing[1].name == "error"
    assert passing[-1].status == "succeeded"  # type: ignore[attr-defined]
    alone = decode("ai-sdk", sse({"type": "start"}, {"type": "error", "errorText": "x"}), strict=True)
    assert alone[-1].status == "error"  # type: ignore[attr-defined]


# -- profiles ------------------------------------------------------------------------------------------


APPROVAL = [
    START,
    ToolCall(call_id="c1", name="pay", input=Raw(b"{}")),
    ToolApprovalRequest(call_id="c1"),
    ToolApprovalSettled(call_id="c1", status="denied"),
    ToolDenied(call_id="c1"),
    Terminal(),
]


def test_ai_5_gets_no_approval_chunks_and_the_approval_comes_back() -> None:
    out = encode("ai-sdk@5", APPROVAL)
    t = types(out)
    assert "tool-approval-request" not in t and "tool-output-denied" not in t
    assert "data-tool-approval-request" in t and "data-tool-approval-settled" in t
    assert "tool-output-error" in t  # the v5 client still settles the call
    assert canonical(real(decode("ai-sdk@5", out, strict=True))) == canonical(filled(APPROVAL))


def test_ai_6_has_approval_requests_but_no_responses() -> None:
    t = types(encode("ai-sdk@6", APPROVAL))
    assert "tool-approval-request" in t and "tool-output-denied" in t
    assert "tool-approval-response" not in t and "data-tool-approval-settled" in t


def test_ai_7_says_all_of_it() -> None:
    out = encode("ai-sdk", APPROVAL)
    assert [x for x in types(out) if x.startswith("data-")] == []
    response = next(c for c in chunks(out) if isinstance(c, dict) and c["type"] == "tool-approval-response")
    assert response == {"type": "tool-approval-response", "approvalId": "approval-c1", "approved": False}


def test_fields_a_profile_does_not_list_travel_in_a_data_part() -> None:
    end = Terminal(extra={"finishReason": Raw(b'"stop"')})
    assert {"type": "finish", "finishReason": "stop"} in chunks(encode("ai-sdk", [START, end]))
    out5 = encode("ai-sdk@5", [START, end])
    assert {"type": "finish"} in chunks(out5)  # ai 5.0.0 rejects finishReason
    assert decode("ai-sdk@5", out5, strict=True)[-1].extra == end.extra


# -- data parts ----------------------------------------------------------------------------------------


def test_ephemeral_events_are_transient_data_parts() -> None:
    out = encode("ai-sdk", [START, Status(label="Searching"), Title(title="T"), Terminal()])
    parts = [c for c in chunks(out) if isinstance(c, dict) and c["type"] in ("data-status", "data-title")]
    assert [p["transient"] for p in parts] == [True, True]  # type: ignore[index]
    assert [type(e) for e in decode("ai-sdk", out, strict=True)][1:3] == [Status, Title]


def test_a_foreign_data_part_keeps_its_id_for_reconciliation() -> None:
    part = DataPart(name="reaction", origin="nest", data=Raw(b'{"kind":"reaction"}'), id="r1")
    out = encode("ai-sdk", [START, part, Terminal()])
    carrier = next(c for c in chunks(out) if isinstance(c, dict) and c["type"] == "data-reaction")
    assert carrier["id"] == "r1"  # type: ignore[index]
    assert decode("ai-sdk", out, strict=True)[1] == part


def test_bad_json_in_strict_mode_names_the_frame() -> None:
    data = sse({"type": "start"}) + b"data: {not json\n\n"
    with pytest.raises(StreamError) as err:
        decode("ai-sdk", data, strict=True)
    assert "frame 2" in str(err.value) and "ai-sdk" in str(err.value)


# -- HTTP -------------------------------------------------------------------------------------------------


def test_a_chat_request_and_back() -> None:
    body = json.dumps(
        {
            "id": "chat-1",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
                {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hello"}]},
                {
                    "id": "u2",
                    "role": "user",
                    "parts": [{"type": "text", "text": "refund "}, {"type": "text", "text": "me"}],
                },
            ],
            "trigger": "submit-message",
            "messageId": None,
        }
    ).encode()
    req = parse_request(body)
    assert req.text == "refund me" and req.thread_id == "chat-1"
    assert [(h.role, h.text, h.id) for h in req.history] == [("user", "hi", "u1"), ("assistant", "hello", "a1")]
    again = parse_request(build_request(ChatRequest(text="x", thread_id="t", history=[HistoryMessage("user", "y")])))
    assert (again.text, again.thread_id, [h.text for h in again.history]) == ("x", "t", ["y"])


def test_the_stream_headers_are_the_sdks() -> None:
    assert get("ai-sdk").response_headers == HEADERS
    assert HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert get("ai-sdk").http.chat_status == 200


def test_sniffing_names_the_default_profile() -> None:
    from streambridge.codecs.framing import Frame

    assert get("ai-sdk").sniff(Frame(b'{"type":"text-delta","id":"0","delta":"x"}')) > 0
    assert get("ai-sdk").sniff(Frame(b'{"type":"text","text":"x"}')) == 0


def test_a_real_step_left_open_by_a_truncated_stream_comes_back_real() -> None:
    """An error that ends a stream inside a step: the reader meets the step's finish before the
    error's terminal, so the encoder judges the open bracket by that (found by hypothesis)."""
    agentkit = encode("agentkit", [RunStart(), StepStart(), StepFinish()])
    assert convert("ai-sdk", "agentkit", convert("agentkit", "ai-sdk", agentkit)) == agentkit


AG_UI_RUN = b"".join(
    b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"
    for event in (
        {"type": "RUN_STARTED", "timestamp": 1, "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "timestamp": 2, "toolCallId": "c1", "toolCallName": "s"},
        {"type": "TOOL_CALL_END", "timestamp": 3, "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "timestamp": 4, "messageId": "m2", "toolCallId": "c1", "content": "1"},
        {"type": "TEXT_MESSAGE_START", "timestamp": 5, "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "timestamp": 6, "messageId": "m1", "delta": "done"},
        {"type": "TEXT_MESSAGE_END", "timestamp": 7, "messageId": "m1"},
        {"type": "RUN_FINISHED", "timestamp": 8, "threadId": "t", "runId": "r"},
    )
)


def test_a_part_that_starts_after_a_tool_call_starts_in_a_new_step_and_is_never_reopened() -> None:
    """A source's own text part after a tool call: the new step opens before its ``text-start``
    (the step judge takes a part's start for its content), so the part is written once, its
    carrier riding on it, and the stream comes back byte for byte."""
    out = convert("ag-ui", "ai-sdk", AG_UI_RUN)
    frames = [c["type"] for c in chunks(out) if isinstance(c, dict)]
    assert frames[frames.index("tool-output-available") :] == [
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "data-terminal",
        "finish",
    ]
    assert convert("ai-sdk", "ag-ui", out) == AG_UI_RUN


def test_riders_pass_the_step_bracket_a_reader_holds_back() -> None:
    """The run start has no frame in ai-sdk: it rides forward past the implied ``start-step``
    onto the first frame with ``providerMetadata``, marked as ahead of the bracket, instead of a
    ``data-run-start`` frame; the reader puts it back before the bracket."""
    out = convert("ag-ui", "ai-sdk", AG_UI_RUN)
    parsed = [c for c in chunks(out) if isinstance(c, dict)]
    assert [c["type"] for c in parsed[:3]] == ["start", "start-step", "tool-input-start"]
    riding = parsed[2]["providerMetadata"]["streambridge"]
    assert riding["ahead"] == 1 and [e["type"] for e in riding["before"]] == ["run-start"]
    assert not any(c["type"] == "data-run-start" for c in parsed)
    events = decode("ai-sdk", out, strict=True)
    assert [type(e).__name__ for e in events[:3]] == ["RunStart", "StepStart", "ToolInputStart"]
    assert events[0].run_id == "r" and events[1].synthetic


def _ag_ui(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in events)


#: an AG-UI call whose every event has a timestamp: none of it fits ai-sdk's strict chunks
AG_UI_ARGS = (
    {"type": "RUN_STARTED", "timestamp": 1, "threadId": "t", "runId": "r"},
    {"type": "TOOL_CALL_START", "timestamp": 2, "toolCallId": "c1", "toolCallName": "s"},
    {"type": "TOOL_CALL_ARGS", "timestamp": 3, "toolCallId": "c1", "delta": '{"q":'},
    {"type": "TOOL_CALL_ARGS", "timestamp": 4, "toolCallId": "c1", "delta": "1}"},
)


def test_a_slotless_chunks_carrier_rides_late_on_the_next_chunk_with_a_slot() -> None:
    """``tool-input-delta`` is a strict object: its carrier follows it in the next chunk's
    ``providerMetadata`` (a ``late`` list, one entry per bare chunk) instead of taking a frame
    of its own; the decoder holds the bare deltas until that chunk and gives back the source."""
    source = _ag_ui(
        *AG_UI_ARGS,
        {"type": "TOOL_CALL_END", "timestamp": 5, "toolCallId": "c1"},
        {"type": "RUN_FINISHED", "timestamp": 6, "threadId": "t", "runId": "r"},
    )
    out = convert("ag-ui", "ai-sdk", source)
    parsed = [c for c in chunks(out) if isinstance(c, dict)]
    kinds = [c["type"] for c in parsed]
    assert kinds[:5] == ["start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-delta"]
    assert "data-tool-input-delta" not in kinds
    available = parsed[kinds.index("tool-input-available")]
    late = available["providerMetadata"]["streambridge"]["late"]
    assert [(e["type"], e["extra"]["timestamp"]) for e in late] == [("tool-input-delta", 3), ("tool-input-delta", 4)]
    assert convert("ai-sdk", "ag-ui", out) == source
    for size in (1, 7, 64):  # held and let out alike however the bytes come
        pieces = [out[i : i + size] for i in range(0, len(out), size)]
        assert b"".join(translate(pieces, "ai-sdk", "ag-ui")) == source


def test_late_entries_take_a_frame_of_their_own_when_no_slot_follows() -> None:
    """A chunk with no slot follows the deltas (here ``finish-step``, the step closing before a
    new text part): the late entries go in one transient ``data-late`` part (``useChat`` keeps
    no transient part) before it, and read back as the deltas' carriers."""
    text = {"type": "TEXT_MESSAGE_START", "messageId": "m9", "role": "assistant"}
    out = convert("ag-ui", "ai-sdk", _ag_ui(*AG_UI_ARGS, text))
    parsed = [c for c in chunks(out) if isinstance(c, dict)]
    kinds = [c["type"] for c in parsed]
    assert kinds[3:6] == ["tool-input-delta", "tool-input-delta", "data-late"]
    late = parsed[5]
    assert late["transient"] is True and [e["extra"]["timestamp"] for e in late["data"]["late"]] == [3, 4]
    events = decode("ai-sdk", out, strict=True)
    deltas = [e for e in events if isinstance(e, ToolInputDelta)]
    assert [(d.delta, d.extra) for d in deltas] == [
        ('{"q":', {"timestamp": Raw(b"3")}),
        ("1}", {"timestamp": Raw(b"4")}),
    ]
    assert not any(isinstance(e, DataPart) for e in events)
    assert encode("ai-sdk", events) == out


def test_a_native_producers_deltas_are_never_held() -> None:
    """Only a call whose start came with a carrier may have late entries: a native stream's
    ``tool-input-delta`` is an event as soon as its chunk is read."""
    decoder = get("ai-sdk").decoder()
    decoder.feed(
        sse(
            {"type": "start"}, {"type": "start-step"}, {"type": "tool-input-start", "toolCallId": "c1", "toolName": "s"}
        )
    )
    events = decoder.feed(sse({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{"}))
    assert events == [ToolInputDelta(call_id="c1", delta="{")]


def test_a_late_list_that_does_not_match_the_held_frames_loses_nothing() -> None:
    """A ``late`` list with more entries than bare chunks held says nothing of them: the chunk
    is the data part it looks like, after the held delta, which goes out as read."""
    carried_start = {
        "type": "tool-input-start",
        "toolCallId": "c1",
        "toolName": "s",
        "providerMetadata": {
            "streambridge": {"event": {"type": "tool-input-start", "callId": "c1", "name": "s", "extra": {"x": 1}}}
        },
    }
    bad_late = {"type": "data-late", "data": {"late": [None, None]}, "transient": True}
    stream = sse(
        {"type": "start"},
        {"type": "start-step"},
        carried_start,
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{}"},
        bad_late,
        {"type": "finish"},
    )
    events = decode("ai-sdk", stream)
    names = [type(e).__name__ for e in events]
    assert names[names.index("ToolInputStart") + 1 :][:2] == ["ToolInputDelta", "DataPart"]
    assert events[names.index("ToolInputDelta")] == ToolInputDelta(call_id="c1", delta="{}")
    part = events[names.index("DataPart")]
    assert part.name == "late" and json.loads(bytes(part.data)) == {"late": [None, None]}


def test_a_held_chunk_goes_out_when_the_next_frame_comes_or_the_input_ends() -> None:
    """A carried call's bare delta waits for the frame after it (which may say it late): no
    later than that frame, or the end of the input."""

    def start(call: str) -> dict:
        carrier = {"event": {"type": "tool-input-start", "callId": call, "name": "s", "extra": {"x": 1}}}
        return {
            "type": "tool-input-start",
            "toolCallId": call,
            "toolName": "s",
            "providerMetadata": {"streambridge": carrier},
        }

    decoder = get("ai-sdk").decoder()
    decoder.feed(sse({"type": "start"}, {"type": "start-step"}, start("c1")))
    assert decoder.feed(sse({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{"})) == []
    available = {"type": "tool-input-available", "toolCallId": "c1", "toolName": "s", "input": {}}
    out = decoder.feed(sse({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "}"}, available))
    assert [type(e).__name__ for e in out] == ["ToolInputDelta", "ToolInputDelta", "ToolCall"]
    decoder.feed(sse(start("c2")))
    assert decoder.feed(sse({"type": "tool-input-delta", "toolCallId": "c2", "inputTextDelta": "{}"})) == []
    assert [type(e).__name__ for e in decoder.close()][:1] == ["ToolInputDelta"]

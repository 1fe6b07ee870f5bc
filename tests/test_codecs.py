"""Codec behaviour the laws do not pin down: wire details, bad input, ids, the terminal table."""

from __future__ import annotations

import json
import logging

import pytest
from msgspec import UNSET, Raw

from streambridge import StreamError, Translator, codecs, translate
from streambridge.events import (
    DataPart,
    Failure,
    Malformed,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolOutput,
)

from .corpus import CODECS, SCENARIOS, canonical, convert, decode, encode, golden


def frames(data: bytes) -> list[bytes]:
    return [f for f in data.split(b"\n\n") if f]


def json_frames(data: bytes) -> list[dict]:
    out = []
    for frame in frames(data):
        for line in frame.split(b"\n"):
            if line.startswith(b"data: "):
                out.append(json.loads(line[6:]))
    return out


# -- registry and API --------------------------------------------------------------------


def test_registry_resolves_aliases_and_names_unknown_protocols() -> None:
    assert codecs.get("adonis") is codecs.get("nest")
    assert codecs.names()[:4] == ["agentkit", "nest", "oma", "agentfootprint"]
    with pytest.raises(codecs.UnknownProtocol, match=r"unknown protocol 'vercel'.*agentkit"):
        codecs.get("vercel")


def test_capabilities_split_every_event_type_into_native_or_carried() -> None:
    nest = codecs.get("nest")
    assert {"title", "ui", "step-start"} <= nest.native
    assert {"sources", "status", "suggestions"} <= nest.carried
    assert "sources" in codecs.get("agentkit").native
    assert "title" in codecs.get("agentkit").carried


def test_translate_accepts_any_iterable_of_chunks() -> None:
    data = golden("plain-text", "nest")
    out = b"".join(translate(iter([data[:50], data[50:]]), source="adonis", target="oma"))
    assert out.endswith(b"\n") and b'"type":"done"' in out


def test_every_codec_reads_and_writes_both_framings() -> None:
    for codec in CODECS:
        events = decode(codec, golden("tool-streamed-args", codec))
        for framing in ("sse", "ndjson"):
            data = encode(codec, events, framing=framing)
            assert encode(codec, decode(codec, data, framing=framing), framing=framing) == data


# -- nest wire ---------------------------------------------------------------------------


def test_nest_output_starts_with_meta_and_ends_with_done() -> None:
    out = convert("agentkit", "nest", golden("plain-text", "agentkit"))
    first, last = frames(out)[0], frames(out)[-1]
    meta = json.loads(first.split(b"data: ")[1])
    assert first.startswith(b"event: meta\n") and set(meta) == {"runId", "threadId"}
    assert meta["runId"] == "turn_01"
    assert last == b"event: done\ndata: {}"
    assert b"\r" not in out


def test_nest_error_terminal_has_code_and_message_and_no_done() -> None:
    out = convert("agentkit", "nest", golden("run-failed", "agentkit"))
    assert frames(out)[-1] == b'event: error\ndata: {"code":"run_failed","message":"provider exploded"}'
    assert b"event: done" not in out


def test_nest_cancel_is_cancelled_then_done() -> None:
    out = convert("agentkit", "nest", golden("cancelled", "agentkit"))
    tail = frames(out)[-2:]
    assert tail[0].endswith(b'{"kind":"cancelled"}') and tail[1] == b"event: done\ndata: {}"
    assert decode("nest", out)[-1].status == "cancelled"


def test_nest_announces_tools_before_outcomes_for_sources_that_do_not() -> None:
    events = [ToolOutput(call_id="c9", output=b'"x"'), Terminal(status="succeeded")]  # type: ignore[arg-type]
    kinds = [f.get("kind") for f in json_frames(encode("nest", events))]
    assert kinds.index("tool-input-available") < kinds.index("tool-output")


def test_nest_sequence_ids_number_a_source_without_ids() -> None:
    events = decode("agentkit", golden("plain-text", "agentkit"))
    out = encode("nest", events, sequence_ids=True)
    ids = [int(line[4:]) for line in out.split(b"\n") if line.startswith(b"id: ")]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 3
    for frame in frames(out):
        if frame.startswith(b"event: "):
            assert b"\nid: " not in frame, "meta, done and error carry no id"
    # the ids are read back as the events' ids, and written back as received
    read = [e.event_id for e in decode("nest", out) if e.event_id is not UNSET]
    assert read == [str(i) for i in ids]
    assert encode("nest", decode("nest", out)) == out
    assert encode("nest", decode("nest", out), sequence_ids=True) == out


NUMBERED = (
    b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\n'
    b'id: 7\ndata: {"kind":"step-start"}\n\n'
    b'id: 9\ndata: {"kind":"text","text":"a"}\n\n'
    b'id: 10\ndata: {"kind":"text","text":"b"}\n\n'
    b'id: x-11\ndata: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":2}}\n\n'
    b"event: done\ndata: {}\n\n"
)


@pytest.mark.parametrize("framing", ["sse", "ndjson"])
@pytest.mark.parametrize("via", ["agentkit", "oma"])
def test_nest_source_ids_are_written_back_as_received(via: str, framing: str) -> None:
    """Gaps and ids that are no numbers included: they are the client's resume cursor."""
    events = decode("nest", NUMBERED)
    assert [e.event_id for e in events] == [UNSET, "7", "9", "10", "x-11", UNSET]
    assert encode("nest", events) == NUMBERED
    assert encode("nest", events, sequence_ids=True) == NUMBERED  # positional only where none came
    there = encode(via, events, framing=framing)
    assert encode("nest", decode(via, there, framing=framing)) == NUMBERED
    if framing == "sse":  # every SSE output says the ids on its own id: lines
        assert b"id: 9\n" in there and b"id: x-11\n" in there


def test_positional_numbers_continue_after_the_source_ids() -> None:
    events = decode("nest", NUMBERED)
    events.insert(4, TextDelta(text="c"))  # one event without an id
    events[-1].text = UNSET  # the terminal's text is the streamed text again
    out = encode("nest", events, sequence_ids=True)
    assert [line for line in out.split(b"\n") if line.startswith(b"id: ")] == [
        b"id: 7",
        b"id: 9",
        b"id: 10",
        b"id: 11",
        b"id: x-11",
    ]


def test_nest_ids_that_are_not_ascii_numbers_are_kept_too() -> None:
    data = 'event: meta\ndata: {"runId":"r"}\n\nid: ²\ndata: {"kind":"step-start"}\n\nevent: done\ndata: {}\n\n'
    events = decode("nest", data.encode(), strict=True)
    assert [type(e).__name__ for e in events] == ["RunStart", "StepStart", "Terminal"]
    assert events[1].event_id == "²"
    assert encode("nest", events) == data.encode()


def test_a_reattach_stream_gets_no_invented_thread() -> None:
    data = b'event: meta\ndata: {"runId":"r-1"}\n\ndata: {"kind":"step-start"}\n\nevent: done\ndata: {}\n\n'
    events = decode("nest", data)
    assert events[0] == RunStart(run_id="r-1", resumed=True)
    assert encode("nest", events) == data
    for via in ("agentkit", "oma"):
        assert convert(via, "nest", convert("nest", via, data)) == data
    # a run start without ids from another protocol still gets both, as the published client needs
    meta = encode("nest", [RunStart(), Terminal()]).split(b"\n\n")[0]
    assert b'"runId":"run-' in meta and b'"threadId":"thr-run-' in meta


def test_a_run_ending_with_its_step_open_comes_back_as_it_was() -> None:
    data = (
        b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\ndata: {"kind":"step-start"}\n\n'
        b'data: {"kind":"tool-input-available","id":"c1","name":"purge","input":{},"toolKind":"action"}\n\n'
        b"event: done\ndata: {}\n\n"
    )
    out = encode("nest", decode("nest", data))
    assert out == data
    assert b"data-" not in out and b"step-finish" not in out


def test_nest_brackets_written_for_a_source_without_steps_are_plain_and_implied() -> None:
    events = decode("agentkit", golden("text-after-tool", "agentkit"))
    out = encode("nest", events)
    assert b'"synthetic"' not in out and b"data-step" not in out
    back = decode("nest", out)
    brackets = [e for e in back if isinstance(e, StepStart | StepFinish)]
    assert brackets and all(e.synthetic for e in brackets)
    # a bracket nest would not write by itself is a real one
    lone = decode(
        "nest",
        b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\ndata: {"kind":"step-start"}\n\n'
        b'data: {"kind":"step-finish"}\n\nevent: done\ndata: {}\n\n',
    )
    assert [e.synthetic for e in lone if isinstance(e, StepStart | StepFinish)] == [True, False]


def test_nest_frames_without_kind_and_legacy_deltas_are_kept() -> None:
    data = b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\ndata: {"delta":"old"}\n\nevent: done\ndata: {}\n\n'
    events = decode("nest", data)
    assert isinstance(events[1], DataPart) and bytes(events[1].data) == b'{"delta":"old"}'
    assert encode("nest", events) == data


def test_nest_resume_meta_without_thread_id() -> None:
    data = b'event: meta\ndata: {"runId":"r"}\n\ndata: {"kind":"text","text":"hi"}\n\nevent: done\ndata: {}\n\n'
    assert isinstance(decode("nest", data)[0], RunStart)


# -- agentkit wire -----------------------------------------------------------------------


@pytest.mark.parametrize("source", ["nest", "oma"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_agentkit_output_has_message_id_everywhere_and_one_turn_end(source: str, name: str) -> None:
    out = json_frames(convert(source, "agentkit", golden(name, source)))
    assert out[0]["type"] == "turn_start"
    assert all(isinstance(f.get("messageId"), str) for f in out)
    assert [f["type"] for f in out].count("turn_end") == 1 and out[-1]["type"] == "turn_end"


def test_agentkit_turn_end_text_is_the_full_answer() -> None:
    out = json_frames(convert("nest", "agentkit", golden("tool-streamed-args", "nest")))
    deltas = "".join(f["text"] for f in out if f["type"] == "text_delta")
    assert out[-1]["result"]["text"] == deltas and deltas


def test_agentkit_interleaved_messages_stay_apart() -> None:
    events = decode("agentkit", golden("interleaved-messages", "agentkit"))
    ids = {e.message_id for e in events if isinstance(e, TextDelta)}
    assert len(ids) == 2  # the primary message (UNSET) and the second one
    back = json_frames(
        convert("nest", "agentkit", convert("agentkit", "nest", golden("interleaved-messages", "agentkit")))
    )
    assert {f["messageId"] for f in back if f["type"] == "text_delta"} == {"m1", "m2"}


def test_agentkit_non_streaming_turn_still_gives_deltas_to_other_targets() -> None:
    data = golden("non-streaming", "agentkit")
    texts = [f["text"] for f in json_frames(convert("agentkit", "nest", data)) if f.get("kind") == "text"]
    assert texts == [json_frames(data)[-1]["result"]["text"]]
    assert convert("agentkit", "agentkit", data) == data  # no faked deltas back in agentkit


def test_agentkit_failure_status_matches_the_terminal_status() -> None:
    for name in ("quota-exceeded", "blocked", "refused", "not-provisioned", "cancelled"):
        end = json_frames(convert("nest", "agentkit", golden(name, "nest")))[-1]["result"]
        assert end["failure"]["status"] == end["status"] != "succeeded"


# -- oma wire ----------------------------------------------------------------------------


def test_oma_error_is_explicit_never_an_empty_object() -> None:
    line = json.loads(convert("nest", "oma", golden("run-failed", "nest")).splitlines()[-1])
    assert line["type"] == "error"
    assert line["data"] == {"name": "Error", "message": "provider exploded", "code": "run_failed"}
    assert line["errorInfo"]["message"] == "provider exploded" and line["errorInfo"]["kind"]


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("oma-done-llmresponse", "succeeded"),
        ("oma-done-runresult", "succeeded"),
        ("oma-done-agentrunresult", "succeeded"),
        ("cancelled", "cancelled"),
    ],
)
def test_oma_done_layers_are_told_apart_and_re_emitted_as_received(name: str, status: str) -> None:
    data = golden(name, "oma")
    end = decode("oma", data)[-1]
    assert isinstance(end, Terminal) and end.status == status
    assert (
        bytes(end.result)
        == json.dumps(json.loads(data.splitlines()[-1])["data"], separators=(",", ":"), ensure_ascii=False).encode()
    )
    assert convert("oma", "oma", data) == data


def test_oma_done_with_a_status_that_is_no_agent_status_is_kept_as_received() -> None:
    """``success`` + ``status`` is an AgentRunResult only when the status is ``{code, message?}``;
    another payload with those members is kept like any other (it used to raise out of the
    decoder, even in lenient mode)."""
    data = b'{"type":"done","data":{"success":true,"status":"ok"}}\n'
    end = decode("oma", data, strict=True)[-1]
    assert (
        isinstance(end, Terminal)
        and end.status == "succeeded"
        and bytes(end.result) == b'{"success":true,"status":"ok"}'
    )
    assert convert("oma", "oma", data) == data


def test_oma_loop_and_budget_events_survive_other_protocols() -> None:
    data = golden("oma-loop-budget", "oma")
    for via in ("nest", "agentkit"):
        middle = convert("oma", via, data)
        assert b"data-loop_detected" in middle and b"data-budget_exceeded" in middle
        assert convert(via, "oma", middle) == data


# -- unknown kinds and fields ------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_an_empty_extra_writes_valid_frames(codec: str) -> None:
    """``extra={}`` says what UNSET says; it used to leave a trailing comma in the frame."""
    events = [RunStart(run_id="r1", extra={}), TextDelta(text="a", extra={}), Terminal(extra={})]
    data = encode(codec, events)
    assert encode(codec, decode(codec, data, strict=True)) == data


@pytest.mark.parametrize("source", CODECS)
def test_unknown_kinds_and_fields_come_back_intact(source: str) -> None:
    data = golden("unknown-kinds", source)
    for via in CODECS:
        assert convert(via, source, convert(source, via, data)) == data


def test_unknown_kind_travels_as_a_data_part_named_after_it() -> None:
    out = json_frames(convert("nest", "agentkit", golden("unknown-kinds", "nest")))
    part = next(f for f in out if f["type"] == "data-reaction")
    assert part["event"]["data"] == {"kind": "reaction", "emoji": "👍", "id": "r1"}
    assert part["messageId"]


# -- bad input ---------------------------------------------------------------------------


BROKEN = b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\ndata: {"kind":"text","text":"a"}\n\ndata: {"kind":"text",tex}\n\nevent: done\ndata: {}\n\n'


def test_strict_mode_names_frame_byte_and_expectation() -> None:
    with pytest.raises(StreamError) as err:
        decode("nest", BROKEN, strict=True)
    assert err.value.frame == 3 and err.value.offset == BROKEN.index(b'data: {"kind":"text",tex')
    assert "nest: frame 3 at byte" in str(err.value) and "JSON" in str(err.value)


def test_lenient_mode_forwards_a_malformed_frame_as_a_data_part_and_keeps_a_diagnostic(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decoder = codecs.get("nest").decoder()
    with caplog.at_level(logging.DEBUG):
        events = decoder.feed(BROKEN) + decoder.close()
    bad = [e for e in events if isinstance(e, Malformed)]
    assert bad and bad[0].raw == '{"kind":"text",tex}' and bad[0].frame == 3
    said = decoder.take_diagnostics()
    assert [(d.kind, d.frame, d.offset) for d in said] == [("malformed", 3, BROKEN.index(b'data: {"kind":"text",tex'))]
    assert said[0].line().startswith("nest: frame 3 at byte ") and "expected a JSON object" in said[0].line()
    assert decoder.take_diagnostics() == []  # taken once
    assert not caplog.records  # sans-IO: the codec logs nothing, its caller says what it kept
    out = json_frames(encode("agentkit", events))
    carried = next(f for f in out if f["type"] == "data-malformed")
    assert carried["event"]["raw"] == '{"kind":"text",tex}'
    assert out[-1]["result"]["status"] == "succeeded"


def test_invalid_field_values_are_malformed_not_crashes() -> None:
    data = b'data: {"type":"text_delta","messageId":3,"text":"x"}\n\n'
    assert isinstance(decode("agentkit", data)[0], Malformed)
    with pytest.raises(StreamError, match="text_delta"):
        decode("agentkit", data, strict=True)


def test_strict_mode_rejects_anything_after_the_terminal() -> None:
    data = golden("plain-text", "agentkit") + b'data: {"type":"text_delta","messageId":"m","text":"late"}\n\n'
    with pytest.raises(StreamError, match="after the terminal"):
        decode("agentkit", data, strict=True)
    assert isinstance(decode("agentkit", data)[-1], Terminal)


def test_truncated_input_gets_an_error_terminal_that_says_so() -> None:
    end = decode("oma", golden("truncated", "oma"))[-1]
    assert end.status == "error" and end.synthetic
    assert end.failure == Failure(
        status="error", message="The stream ended without a terminal event.", code="truncated", recoverable=True
    )
    with pytest.raises(StreamError, match="terminal event before the end of input"):
        decode("oma", golden("truncated", "oma"), strict=True)


def test_a_frame_cut_at_eof_is_reported_not_lost() -> None:
    data = golden("plain-text", "nest")[:-30]
    events = decode("nest", data)
    assert isinstance(events[-2], Malformed) and "ended inside the event" in events[-2].error


# -- ids ---------------------------------------------------------------------------------


def test_generated_ids_are_deterministic_and_input_dependent() -> None:
    first = convert("oma", "nest", golden("plain-text", "oma"))
    assert first == convert("oma", "nest", golden("plain-text", "oma"))
    other = convert("oma", "nest", golden("tool-error", "oma"))
    run_id = lambda out: json.loads(frames(out)[0].split(b"data: ")[1])["runId"]  # noqa: E731
    assert run_id(first) != run_id(other)


def test_tool_arguments_are_kept_exactly_as_sent() -> None:
    raw = '{"q": "half'  # an argument text that is not (yet) valid JSON
    events = [RunStart(run_id="r"), ToolCall(call_id="c", name="s", arguments_json=raw), Terminal(status="succeeded")]
    for via in ("nest", "oma"):
        back = decode("agentkit", convert(via, "agentkit", encode(via, decode("agentkit", encode("agentkit", events)))))
        assert next(e for e in back if isinstance(e, ToolCall)).arguments_json == raw


# -- the terminal table ------------------------------------------------------------------

TERMINALS = [
    ("succeeded", b"event: done", '"type":"done"'),
    ("cancelled", b'{"kind":"cancelled"}', '"code":"cancelled"'),
    ("error", b'"code":"run_failed"', '"code":"run_failed"'),
    ("blocked", b'"code":"content_filter"', '"code":"content_filter"'),
    ("refused", b'"code":"refused"', '"code":"refused"'),
    ("notProvisioned", b'"code":"not_provisioned"', '"code":"not_provisioned"'),
]


@pytest.mark.parametrize(("status", "nest_marker", "oma_marker"), TERMINALS)
def test_terminal_table(status: str, nest_marker: bytes, oma_marker: str) -> None:
    events = [RunStart(run_id="r"), TextDelta(text="x"), Terminal(status=status)]  # type: ignore[arg-type]
    nest_out = encode("nest", events)
    oma_out = encode("oma", events)
    assert nest_marker in nest_out
    assert oma_marker in oma_out.decode()
    for codec, out in (("nest", nest_out), ("oma", oma_out)):
        assert decode(codec, out)[-1].status == status


NESTED_UNKNOWN = {
    "nest": (
        b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\ndata: {"kind":"step-start"}\n\n'
        b'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":2,"futureTokens":3},"costUsd":null}\n\n'
        b"event: done\ndata: {}\n\n",
        StepFinish,
    ),
    "agentkit": (
        b'data: {"type":"turn_start","turnId":"r","messageId":"msg-r"}\n\n'
        b'data: {"type":"tool_call","messageId":"msg-r","call":{"id":"c1","name":"lookup",'
        b'"argumentsJson":"{\\"q\\":1}","status":"running","sandbox":{"id":7}}}\n\n'
        b'data: {"type":"turn_end","turnId":"r","messageId":"msg-r","result":{"status":"succeeded","text":"",'
        b'"provider":"streambridge","trace":"t-1"}}\n\n',
        ToolCall,
    ),
    "oma": (
        b'{"type":"tool_use","data":{"type":"tool_use","id":"c1","name":"lookup","input":{"q":1},'
        b'"cache_control":{"type":"ephemeral"}}}\n'
        b'{"type":"done","data":{"success":true,"status":{"code":"ok"},"output":"","messages":[],'
        b'"tokenUsage":{"input_tokens":0,"output_tokens":0},"toolCalls":[{"toolName":"lookup","input":{"q":1},'
        b'"output":"","duration":0}]}}\n',
        ToolCall,
    ),
}


NESTED_UNKNOWN["agentfootprint"] = (
    b"event: agentfootprint.agent.turn_start\n"
    b'data: {"type":"agentfootprint.agent.turn_start","payload":{"turnIndex":0,"userPrompt":""},'
    b'"meta":{"wallClockMs":0,"runOffsetMs":0,"runtimeStageId":"","subflowPath":[],"compositionPath":[],"runId":"r"}}\n\n'
    b"event: agentfootprint.stream.tool_start\n"
    b'data: {"type":"agentfootprint.stream.tool_start","payload":{"toolName":"lookup","toolCallId":"c1",'
    b'"args":{"q":1},"sandbox":{"id":7}},'
    b'"meta":{"wallClockMs":0,"runOffsetMs":0,"runtimeStageId":"","subflowPath":[],"compositionPath":[],"runId":"r"}}\n\n'
    b"event: agentfootprint.agent.turn_end\n"
    b'data: {"type":"agentfootprint.agent.turn_end","payload":{"turnIndex":0,"finalContent":"",'
    b'"totalInputTokens":0,"totalOutputTokens":0,"iterationCount":0,"durationMs":0},'
    b'"meta":{"wallClockMs":0,"runOffsetMs":0,"runtimeStageId":"","subflowPath":[],"compositionPath":[],"runId":"r"}}\n\n',
    ToolCall,
)


TOOL_CALL_FRAMES = {
    "agentfootprint:host": b'"name":"data-tool-call"',  # the dialect has no tool frames: its carrier
    "agentfootprint": b'"type":"agentfootprint.stream.tool_start"',
    "nest": b'{"kind":"tool-input-available"',
    "agentkit": b'{"type":"tool_call"',
    "oma": b'{"type":"tool_use"',
    **dict.fromkeys(("ai-sdk", "ai-sdk@6", "ai-sdk@5"), b'{"type":"tool-input-available"'),
    "ag-ui": b'{"type":"TOOL_CALL_START"',
}


# (the host dialect's frames and ai-sdk's chunks nest no known member with fields of its own)
@pytest.mark.parametrize("codec", sorted(NESTED_UNKNOWN))
def test_unknown_fields_nested_in_a_known_frame_survive(codec: str) -> None:
    """A known frame with fields unknown deeper down is understood for what is known (its
    event is the known one in every target) and comes back byte for byte."""
    data, kind = NESTED_UNKNOWN[codec]
    events = decode(codec, data, strict=True)
    event = next(e for e in events if type(e) is kind)
    assert event.verbatim is not UNSET and event.verbatim.origin == codec
    assert encode(codec, events) == data  # round trip
    for via in CODECS:
        if via == codec:
            continue
        if kind is ToolCall:  # a client of the other protocol sees the call
            assert TOOL_CALL_FRAMES[via] in encode(via, events)
        assert canonical(decode(codec, convert(via, codec, encode(via, events)))) == canonical(events)
        assert convert(via, codec, encode(via, events)) == data  # cross trip, byte for byte


def test_translator_reports_the_terminal_and_what_came_after_it() -> None:
    translator = Translator("agentkit", "nest")
    translator.feed(golden("refused", "agentkit") + b'data: {"type":"status","messageId":"m","label":"late"}\n\n')
    translator.close()
    assert translator.terminal is not None and translator.terminal.status == "refused"
    assert translator.decoder.ignored_after_terminal == 1


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'data: {"kind":"text",tex}\n\n', "malformed"),
        (b'data: {"kind":"text","text":"\xff"}\n\n', "encoding"),
        (b'data: {"kind":"text","text":"' + b"x" * 100 + b'"}\n\n', "oversize"),
        (b'data: {"kind":"text","text":"cut', "truncated"),
        (b'event: done\ndata: {}\n\ndata: {"kind":"text","text":"late"}\n\n', "after-terminal"),
    ],
)
def test_stream_errors_say_what_kind_of_problem(data: bytes, kind: str) -> None:
    decoder = codecs.get("nest").decoder(strict=True, max_event_size=64)
    with pytest.raises(StreamError) as err:
        decoder.feed(data)
        decoder.close()
    assert err.value.kind == kind


def test_translator_abort_ends_with_the_callers_terminal_once() -> None:
    translator = Translator("nest", "agentkit", strict=True)
    out = translator.feed(golden("plain-text", "nest")[:120])
    out += translator.abort(
        Terminal(status="error", failure=Failure(status="error", message="upstream timed out", code="upstream_timeout"))
    )
    out += translator.close()  # nothing more, and no complaint about the missing input terminal
    end = json_frames(out)[-1]
    assert end["type"] == "turn_end" and end["result"]["failure"]["code"] == "upstream_timeout"
    assert translator.abort(Terminal(status="cancelled")) == b""


def test_translator_source_framing_can_follow_the_content_type_until_input_arrives() -> None:
    translator = Translator("oma", "nest")
    translator.use_source_framing("sse")
    out = translator.feed(b'data: {"type":"text","data":"hi"}\n\n') + translator.close()
    assert b'"text":"hi"' in out
    with pytest.raises(RuntimeError):
        translator.use_source_framing("ndjson")


def test_long_answers_are_compacted_without_changing_any_output() -> None:
    """Over 4,096 deltas per turn the text pieces are joined in chunks: text, the terminal's
    full text and oma's last-turn ``output`` must not notice, however the input is chunked."""
    events = [RunStart(run_id="r"), *(TextDelta(text=f"a{i} ") for i in range(5000))]
    events += [ToolCall(call_id="c", name="n", input=b'{"q":1}'), ToolOutput(call_id="c", output=b'"ok"')]  # type: ignore[arg-type]
    events += [*(TextDelta(text=f"b{i} ") for i in range(9000)), Terminal(status="succeeded")]
    full = "".join(e.text for e in events if isinstance(e, TextDelta))
    for codec in CODECS:
        data = encode(codec, events)
        decoded = decode(codec, data)  # once, not once per target
        assert decoded[-1].text == full
        pieces = [data[i : i + 4000] for i in range(0, len(data), 4000)]
        for target in CODECS:
            assert b"".join(translate(pieces, source=codec, target=target)) == encode(target, decoded)
    done = json.loads(encode("oma", events).splitlines()[-1])["data"]
    assert done["output"] == "".join(f"b{i} " for i in range(9000))
    assert decode("oma", encode("oma", events))[-1].result is UNSET  # recognised as streambridge's own


class _DeltaRuns(list):
    """A decoder target that records the delta runs the hot path hands over."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[bool, list[str]]] = []

    def deltas(self, texts: list[str], reasoning: bool = False, seqs: list[str] | None = None) -> None:
        self.runs.append((reasoning, list(texts)))
        self.extend((ReasoningDelta if reasoning else TextDelta)(text=t) for t in texts)


#: codecs whose decoder has a hot path (agentfootprint has none: every token's envelope carries
#: a meta and counters the full way checks)
HOT = [c for c in CODECS if codecs.get(c).decoder_class._hot_decoder is not None]


@pytest.mark.parametrize("framing", ["sse", "ndjson"])
@pytest.mark.parametrize("codec", HOT)
def test_delta_runs_reach_the_output_in_one_call_and_stop_at_other_frames(codec: str, framing: str) -> None:
    a_run, b_run = [f"a{i}" for i in range(5)], [f"b{i}" for i in range(3)]
    thoughts = [f"r{i}" for i in range(4)]
    tag = b"kind" if codec == "nest" else b"type"
    data = encode(
        codec,
        [
            RunStart(run_id="r"),
            *(TextDelta(text=t) for t in a_run),
            *(ReasoningDelta(text=t) for t in thoughts),
            ToolCall(call_id="c", name="n", input=Raw(b"{}")),
            DataPart(name="future-kind", origin=codec, data=b'{"%s":"future-kind","x":1}' % tag),  # type: ignore[arg-type]
            *(TextDelta(text=t) for t in b_run),
        ],
        framing=framing,
    )
    end = b"\n\n" if framing == "sse" else b"\n"
    frames = [f + end for f in data.split(end) if f]
    # the preamble and the first text frame go the full way (a run start is held until the
    # frame after it, which may be a carrier amending it); the rest is one chunk
    split = next(i for i, f in enumerate(frames) if b'"a0"' in f) + 1
    decoder = codecs.get(codec).decoder(framing)  # type: ignore[arg-type]
    for frame in frames[:split]:
        decoder.feed(frame)
    out = _DeltaRuns()
    decoder.feed(b"".join(frames[split:]), out)
    assert out.runs[:2] == [(False, a_run[1:]), (True, thoughts)]  # one call for each whole run
    assert [e.text for e in out if isinstance(e, TextDelta)] == a_run[1:] + b_run
    assert [e.text for e in out if isinstance(e, ReasoningDelta)] == thoughts
    assert any(isinstance(e, DataPart) and e.name == "future-kind" for e in out)


@pytest.mark.parametrize("codec", CODECS)
def test_a_last_line_without_newline_is_returned_by_close(codec: str) -> None:
    decoder = codecs.get(codec).decoder("ndjson")
    lines = codecs.get(codec).encoder("ndjson").encode([RunStart(run_id="r"), TextDelta(text="a"), TextDelta(text="b")])
    events = decoder.feed(lines[:-1])  # no terminal, and the last line without its newline
    first = [e.text for e in events if isinstance(e, TextDelta)]  # consumed before close, as a stream does
    rest = [e.text for e in decoder.close() if isinstance(e, TextDelta)]
    assert first + rest == ["a", "b"]


def test_every_codec_with_nested_members_has_a_nested_unknown_case() -> None:
    # the host dialect's frames (and AG-UI's events) hold only strings and raw JSON: nothing nested to be unknown in
    assert set(CODECS) - set(NESTED_UNKNOWN) == {"agentfootprint:host", "ai-sdk", "ai-sdk@6", "ai-sdk@5", "ag-ui"}


def test_two_translations_in_one_process_keep_their_own_diagnostics() -> None:
    """Diagnostics are data on each decoder, not records on a shared logger: two translations
    interleaved in one process (threads, tasks) never see each other's problems."""
    broken, clean = Translator("nest", "agentkit"), Translator("nest", "agentkit")
    plain = golden("plain-text", "nest")
    for a, b in zip(BROKEN.splitlines(keepends=True), plain.splitlines(keepends=True), strict=False):
        broken.feed(a)
        clean.feed(b)
    broken.close()
    clean.feed(plain[len(b"".join(plain.splitlines(keepends=True)[: len(BROKEN.splitlines())])) :])
    clean.close()
    assert [d.frame for d in broken.take_diagnostics()] == [3]
    assert clean.take_diagnostics() == []


def test_an_oversize_frame_and_a_missing_terminal_are_diagnostics_in_stream_order() -> None:
    t = Translator("oma", "nest", max_event_size=64, source_framing="ndjson")
    t.feed(b'{"type":"text","data":"' + b"x" * 100 + b'"}\n')
    t.close()
    kinds = [d.kind for d in t.take_diagnostics()]
    assert kinds == ["oversize", "truncated"]

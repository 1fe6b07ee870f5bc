"""agentfootprint:host, the hosting SSE dialect (``POST /invoke`` answered with ``encodeSSE``
frames): each row of its mapping, what it keeps byte for byte, its bad input, and its sniffing.

The law tests (round trip, golden matrix, cross trips, one terminal, chunking) run for it with
every other codec through the registry; these pin the dialect's own facts."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from msgspec import UNSET, Raw

from streambridge import StreamError, Translator
from streambridge.cli import demo
from streambridge.codecs import get
from streambridge.codecs.codec import Likeness
from streambridge.codecs.framing import Frame
from streambridge.codecs.terminals import TRUNCATED_CODE
from streambridge.events import (
    ArtifactPresented,
    ArtifactSnapshot,
    DataPart,
    Failure,
    Malformed,
    ReasoningDelta,
    RunStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolOutput,
    Usage,
)
from streambridge.transcripts import sniff

from .cli_support import invoke
from .corpus import FILES, GOLDEN, SCENARIOS, canonical, convert, decode, encode, golden
from .proxy_support import Upstream, proxy_config, start_proxy, url_of, without_comments, write_stream

HOST = "agentfootprint:host"
CODEC = get(HOST)
OTHERS = [c for c in FILES if c != HOST]


def sse(*frames: tuple[str, str]) -> bytes:
    """Frames as ``encodeSSE`` writes them: ``event: <name>`` and one ``data:`` line each."""
    return b"".join(f"event: {name}\ndata: {data}\n\n".encode() for name, data in frames)


def frames(data: bytes) -> list[tuple[str, object]]:
    """The (event name, parsed data) of each frame of an SSE output."""
    out = []
    for block in data.decode().split("\n\n"):
        if block:
            lines = dict(line.split(": ", 1) for line in block.split("\n") if not line.startswith("id:"))
            out.append((lines.get("event", ""), json.loads(lines["data"])))
    return out


def back(events: list, framing: str = "sse") -> list:
    """The events after writing them in the dialect and reading them again (strictly)."""
    return decode(HOST, encode(HOST, events, framing=framing), framing=framing, strict=True)


# -- the registry, the goldens ------------------------------------------------------------------


def test_the_codec_is_registered_with_the_hosting_surface() -> None:
    assert CODEC.name == HOST and CODEC.default_framing == "sse"
    assert CODEC.native == {"text", "terminal"}
    assert CODEC.http.chat_path == "invoke"
    request = CODEC.http.parse_request(b'{"input":"hi","sessionId":"s-1"}')
    assert (request.text, request.thread_id) == ("hi", "s-1")


def test_golden_files_name_the_codec_with_a_dash_for_the_colon() -> None:
    assert FILES[HOST] == "agentfootprint-host.sse"
    assert demo.golden_file(CODEC) == "agentfootprint-host.sse"
    assert all((GOLDEN / s / "agentfootprint-host.sse").is_file() for s in SCENARIOS)
    assert not list(GOLDEN.glob("*/*:*"))  # a colon in a file name breaks Windows checkouts
    assert all("agentfootprint:host" in (GOLDEN / s / "README.md").read_text() for s in SCENARIOS)


@pytest.mark.parametrize("scenario", ["plain-text", "unicode-split", "run-failed", "quota-exceeded", "non-streaming"])
def test_goldens_the_dialect_says_natively_have_no_carriers(scenario: str) -> None:
    data = golden(scenario, HOST)
    assert b"streambridge.carrier" not in data
    assert {name for name, _ in frames(data)} <= {"chunk", "complete", "error"}


# -- chunk: a text delta ---------------------------------------------------------------------------


def test_chunk_is_a_text_delta_of_the_primary_message() -> None:
    events = decode(
        HOST, sse(("chunk", '{"text":"Hel"}'), ("chunk", '{"text":"lo"}'), ("complete", '{"output":"Hello"}'))
    )
    assert [type(e) for e in events] == [RunStart, TextDelta, TextDelta, Terminal]
    assert [e.text for e in events if type(e) is TextDelta] == ["Hel", "lo"]
    assert all(e.message_id is UNSET for e in events)
    assert encode(HOST, [RunStart(synthetic=True), TextDelta(text="é ✓"), Terminal()]) == sse(
        ("chunk", '{"text":"é ✓"}'), ("complete", '{"output":"é ✓"}')
    )


def test_another_messages_text_is_a_chunk_under_a_carrier() -> None:
    events = [RunStart(synthetic=True), TextDelta(text="ops", message_id="m-2"), Terminal()]
    out = encode(HOST, events)
    names = [name for name, _ in frames(out)]
    assert names == ["streambridge.carrier", "chunk", "complete"]
    assert frames(out)[0][1]["covers"] == 1
    assert canonical(back(events)) == canonical(decode(HOST, out))
    assert back(events)[1].message_id == "m-2"


# -- the run start ----------------------------------------------------------------------------------


def test_the_decoder_invents_the_run_start_the_dialect_lacks() -> None:
    events = decode(HOST, sse(("chunk", '{"text":"a"}'), ("complete", '{"output":"a"}')))
    assert events[0] == RunStart(synthetic=True)
    assert sum(type(e) is RunStart for e in events) == 1


def test_an_invented_run_start_writes_no_frame_and_a_real_one_is_carried() -> None:
    plain = encode(HOST, [RunStart(synthetic=True), TextDelta(text="a"), Terminal()])
    assert plain == sse(("chunk", '{"text":"a"}'), ("complete", '{"output":"a"}'))
    start = RunStart(run_id="run-7", thread_id="thr-7", model="m")
    out = encode(HOST, [start, TextDelta(text="a"), Terminal()])
    name, data = frames(out)[0]
    assert name == "streambridge.carrier"
    assert data == {
        "name": "data-run-start",
        "event": {"type": "run-start", "runId": "run-7", "threadId": "thr-7", "model": "m"},
    }
    assert back([start, TextDelta(text="a"), Terminal()])[0] == start  # not a second, invented one
    assert encode(HOST, [RunStart(), Terminal()]).startswith(b"event: streambridge.carrier\n")  # real, if bare


def test_no_run_start_is_invented_for_an_input_with_no_frame() -> None:
    events = decode(HOST, b"")
    assert len(events) == 1 and events[0].failure.code == TRUNCATED_CODE


# -- complete: the succeeded terminal -----------------------------------------------------------------


def test_complete_with_the_streamed_text_says_nothing_more() -> None:
    decoder = CODEC.decoder(strict=True)
    events = decoder.feed(sse(("chunk", '{"text":"Hi "}'), ("chunk", '{"text":"there"}')))
    events += decoder.feed(sse(("complete", '{"output":"Hi there"}')))
    end = events[-1]
    assert end == Terminal(status="succeeded", text="Hi there")  # filled from the deltas, as every decoder does
    assert end.extra is UNSET and end.failure is UNSET


def test_complete_with_another_output_keeps_it_in_text() -> None:
    data = sse(("chunk", '{"text":"draft"}'), ("complete", '{"output":"final answer"}'))
    end = decode(HOST, data, strict=True)[-1]
    assert end.text == "final answer"
    assert encode(HOST, decode(HOST, data)) == data


def test_a_complete_without_chunks_is_a_non_streamed_answer() -> None:
    data = sse(("complete", '{"output":"All at once."}'))
    events = decode(HOST, data, strict=True)
    assert events[1] == TextDelta(text="All at once.", synthetic=True)
    assert events[2].text == "All at once."
    assert encode(HOST, events) == data  # the synthetic delta is not written: the output says it
    for via in OTHERS:  # other protocols show the text, and give the same events back
        assert b"All at once." in convert(HOST, via, data)
        assert canonical(decode(HOST, convert(via, HOST, convert(HOST, via, data)))) == canonical(events)


def test_a_non_streamed_answer_under_a_carried_terminal_keeps_its_synthetic_delta() -> None:
    events = [RunStart(synthetic=True), TextDelta(text="Whole.", synthetic=True), Terminal(text="Whole.", model="m")]
    out = encode(HOST, events)
    carrier = frames(out)[0][1]
    assert carrier["whole"] is True and carrier["covers"] == 1
    assert frames(out)[1] == ("complete", {"output": "Whole."})
    assert canonical(decode(HOST, out, strict=True)) == canonical(events)


def test_a_terminal_text_no_chunk_streamed_is_carried() -> None:
    events = [RunStart(synthetic=True), Terminal(text="said only at the end")]
    out = encode(HOST, events)
    assert [name for name, _ in frames(out)] == ["streambridge.carrier", "complete"]
    assert canonical(decode(HOST, out, strict=True)) == canonical(events)  # no synthetic delta added


# -- error: the failed terminal ------------------------------------------------------------------------


def test_error_with_a_code() -> None:
    data = sse(("chunk", '{"text":"partial"}'), ("error", '{"error":"Host is closing","code":"ERR_HOST_CLOSED"}'))
    end = decode(HOST, data, strict=True)[-1]
    assert end.status == "error" and end.text == "partial"
    assert end.failure == Failure(status="error", message="Host is closing", code="ERR_HOST_CLOSED")
    assert encode(HOST, decode(HOST, data)) == data


def test_error_without_a_code() -> None:
    data = sse(("error", '{"error":"provider exploded"}'))
    end = decode(HOST, data, strict=True)[-1]
    assert end.failure == Failure(status="error", message="provider exploded")
    assert end.failure.code is UNSET
    assert encode(HOST, decode(HOST, data)) == data
    nest = convert(HOST, "nest", data)
    assert b'"message":"provider exploded"' in nest
    assert convert("nest", HOST, nest) == data


def test_the_default_failure_is_the_canonical_none() -> None:
    out = encode(HOST, [RunStart(synthetic=True), Terminal(status="error")])
    assert out == sse(("error", '{"error":"The run failed.","code":"run_failed"}'))
    assert decode(HOST, out)[-1].failure is UNSET


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("blocked", "content_filter"),
        ("refused", "refused"),
        ("notProvisioned", "not_provisioned"),
        ("cancelled", "cancelled"),
    ],
)
def test_other_failure_statuses_are_an_error_frame_under_a_carrier(status: str, code: str) -> None:
    events = [RunStart(synthetic=True), TextDelta(text="x"), Terminal(status=status)]  # type: ignore[arg-type]
    out = encode(HOST, events)
    assert [name for name, _ in frames(out)] == ["chunk", "streambridge.carrier", "error"]
    assert frames(out)[2][1]["code"] == code  # a host client sees a failure with the status's code
    expected = [RunStart(synthetic=True), TextDelta(text="x"), Terminal(status=status, text="x")]  # type: ignore[arg-type]
    assert canonical(decode(HOST, out, strict=True)) == canonical(expected)  # the status comes back exactly


def test_a_failure_the_error_frame_cannot_say_is_carried() -> None:
    failure = Failure(status="error", message="busy", code="ERR_CONCURRENT_RUN", recoverable=True, retry_after_ms=500)
    events = [RunStart(synthetic=True), Terminal(status="error", failure=failure)]
    out = encode(HOST, events)
    assert frames(out)[1] == ("error", {"error": "busy", "code": "ERR_CONCURRENT_RUN"})
    assert decode(HOST, out, strict=True)[-1].failure == failure


def test_the_truncation_terminal_is_a_plain_error_read_back_as_streambridges_own() -> None:
    data = sse(("chunk", '{"text":"cut"}'))
    out = encode(HOST, decode(HOST, data))
    assert out == data + sse(("error", '{"error":"The stream ended without a terminal event.","code":"truncated"}'))
    end = decode(HOST, out, strict=True)[-1]
    assert end.synthetic and end.failure.code == TRUNCATED_CODE


# -- awaiting: the agent waits for a decision -------------------------------------------------------------

PENDING = '{"awaiting":{"kind":"approval","toolCallId":"call_1","prompt":"Refund €49.90?"}}'


def test_awaiting_is_a_succeeded_terminal_holding_the_pending_ask() -> None:
    data = sse(("chunk", '{"text":"I need your OK."}'), ("awaiting", PENDING))
    end = decode(HOST, data, strict=True)[-1]
    assert end.status == "succeeded" and end.failure is UNSET and end.text == "I need your OK."
    assert list(end.extra) == ["awaiting"]
    assert (
        bytes(end.extra["awaiting"])
        == b'{"kind":"approval","toolCallId":"call_1","prompt":"Refund \xe2\x82\xac49.90?"}'
    )
    assert encode(HOST, decode(HOST, data)) == data


@pytest.mark.parametrize("via", ["nest", "agentkit", "oma"])
def test_awaiting_goes_through_another_protocol_and_back(via: str) -> None:
    data = sse(("chunk", '{"text":"I need your OK."}'), ("awaiting", PENDING))
    there = convert(HOST, via, data)
    assert b'"awaiting":{"kind":"approval"' in there  # spliced into the terminal or carried
    assert convert(via, HOST, there) == data


def test_awaiting_through_nest_ends_the_nest_stream_as_a_success() -> None:
    there = convert(HOST, "nest", sse(("awaiting", PENDING)))
    assert there.endswith(b"event: done\ndata: {}\n\n")
    assert decode("nest", there)[-1].extra["awaiting"] is not UNSET


def test_awaiting_members_beside_the_pending_ask_are_kept_in_order() -> None:
    data = sse(("awaiting", '{"sessionId":"s-1","awaiting":{"kind":"ask"}}'))
    end = decode(HOST, data, strict=True)[-1]
    assert list(end.extra) == ["sessionId", "awaiting"]
    assert encode(HOST, decode(HOST, data)) == data


@pytest.mark.parametrize(
    ("name", "data"),
    [("complete", '{"output":"a","awaiting":{}}'), ("awaiting", '{"awaiting":{},"output":"a"}')],
)
def test_a_frame_saying_two_ends_is_kept_whole(name: str, data: str) -> None:
    raw = sse((name, data))
    events = decode(HOST, raw)
    part = events[1]
    assert type(part) is DataPart and part.name == name and bytes(part.data) == data.encode()
    assert encode(HOST, events).startswith(raw)


# -- artifact: an artifact presented ------------------------------------------------------------------------

#: what artifactWireBody writes for a head: the ref and the whole ArtifactMeta
ARTIFACT = (
    '{"artifact":{"ref":"art_9mTw","meta":{"ref":"art_9mTw","kind":"chart/spec","mediaType":"application/json",'
    '"bytes":41210,"label":"Q3 sales by region","digest":"sha-256:ab","createdAt":1733400000000}}}'
)
#: the snapshot the placeholder is drawn from (the frame says no ``as``)
SNAPSHOT = ArtifactSnapshot(kind="chart/spec", media_type="application/json", bytes=41210, label="Q3 sales by region")


def test_an_artifact_frame_is_an_artifact_presented_and_comes_back_byte_for_byte() -> None:
    raw = sse(("chunk", '{"text":"a"}'), ("artifact", ARTIFACT), ("complete", '{"output":"a"}'))
    events = decode(HOST, raw, strict=True)
    presented = events[2]
    assert type(presented) is ArtifactPresented
    assert (presented.ref, presented.as_, presented.snapshot) == ("art_9mTw", "", SNAPSHOT)
    assert encode(HOST, events) == raw
    for via in OTHERS:  # every other protocol carries what it cannot say: the same bytes back
        assert convert(via, HOST, convert(HOST, via, raw)) == raw, via


def test_a_nest_client_gets_an_artifact_frame_as_its_ui_frame_with_the_placeholder() -> None:
    raw = sse(("chunk", '{"text":"Here it is."}'), ("artifact", ARTIFACT), ("complete", '{"output":"Here it is."}'))
    translator = Translator(HOST, "nest", fidelity="client")
    out = translator.feed(raw) + translator.close()
    [ui] = [json.loads(line[6:]) for line in out.decode().split("\n") if '"kind":"ui"' in line]
    assert ui == {
        "kind": "ui",
        "id": "art_9mTw",
        "component": "",
        "props": {
            "ref": "art_9mTw",
            "as": "",
            "snapshot": {
                "kind": "chart/spec",
                "mediaType": "application/json",
                "bytes": 41210,
                "label": "Q3 sales by region",
            },
        },
        "fallbackText": "Chart — 'Q3 sales by region' (41 KB)",
    }
    assert b"streambridge" not in out  # a live client gets no carrier


@pytest.mark.parametrize(
    "data",
    [
        '{"artifact":{"ref":"art_1","meta":{"kind":"chart/spec"}}}',  # no mediaType or bytes: no snapshot
        '{"artifact":{"ref":7,"meta":{"kind":"k","mediaType":"m","bytes":1}}}',
        '{"artifacts":[]}',
    ],
)
def test_an_artifact_frame_of_another_shape_is_kept_whole(data: str) -> None:
    raw = sse(("artifact", data), ("complete", '{"output":""}'))
    events = decode(HOST, raw, strict=True)
    assert events[1] == DataPart(name="artifact", origin=HOST, data=Raw(data.encode()))
    assert encode(HOST, events) == raw


# -- sessions and unknown names: kept whole ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("sessions", '{"sessions":[{"id":"s-1","open":true}]}'),
        ("handoff", '{ "to" : "billing",  "why":"refund\\u00e9" }'),  # spacing and escapes as received
        ("sessions", "[1,2]"),  # not even an object
    ],
)
def test_other_event_names_are_data_parts_kept_byte_for_byte(name: str, data: str) -> None:
    raw = sse(("chunk", '{"text":"a"}'), (name, data), ("complete", '{"output":"a"}'))
    events = decode(HOST, raw, strict=True)
    part = events[2]
    assert part == DataPart(name=name, origin=HOST, data=Raw(data.encode()))
    assert encode(HOST, events) == raw
    for via in OTHERS:  # a data part in every other protocol, and the same bytes back
        assert convert(via, HOST, convert(HOST, via, raw)) == raw


def test_an_unnamed_frame_is_kept_whole_too() -> None:
    raw = b'data: {"note":"no event line"}\n\n' + sse(("complete", '{"output":""}'))
    events = decode(HOST, raw, strict=True)
    assert events[1] == DataPart(name="", origin=HOST, data=Raw(b'{"note":"no event line"}'))
    assert encode(HOST, events) == raw


def test_a_known_name_with_data_of_another_shape_is_kept_whole() -> None:
    raw = sse(("chunk", '{"delta":"a"}'), ("complete", '{"output":""}'))
    events = decode(HOST, raw, strict=True)
    assert events[1] == DataPart(name="chunk", origin=HOST, data=Raw(b'{"delta":"a"}'))
    assert encode(HOST, events) == raw


def test_another_codecs_data_part_is_carried() -> None:
    part = DataPart(name="reaction", origin="nest", data=Raw(b'{"kind":"reaction"}'))
    out = encode(HOST, [RunStart(synthetic=True), part, Terminal()])
    assert frames(out)[0] == (
        "streambridge.carrier",
        {
            "name": "data-reaction",
            "event": {"type": "data", "name": "reaction", "origin": "nest", "data": {"kind": "reaction"}},
        },
    )
    assert decode(HOST, out, strict=True)[1] == part


# -- unknown members of a known frame ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("chunk", '{"text":"Hi ","lang":"en"}'),
        ("complete", '{"output":"","usage":{"input":3}}'),
        ("error", '{"error":"no","code":"ERR_X","retryAfterMs":50}'),
    ],
)
def test_unknown_members_of_a_known_frame_are_kept_in_the_frame(name: str, data: str) -> None:
    raw = sse((name, data), *([("complete", '{"output":"Hi "}')] if name == "chunk" else []))
    events = decode(HOST, raw, strict=True)
    event = next(e for e in events if e.extra is not UNSET)
    assert type(event) is (TextDelta if name == "chunk" else Terminal)
    assert encode(HOST, events).startswith(raw)  # in the same frame, not in a carrier
    for via in OTHERS:
        assert convert(via, HOST, convert(HOST, via, raw)).startswith(raw)


# -- what the dialect cannot say travels in carriers ----------------------------------------------------------


def test_everything_else_travels_in_carriers_a_host_client_ignores() -> None:
    events = [
        RunStart(run_id="r1", thread_id="t1"),
        ReasoningDelta(text="thinking"),
        ToolCall(call_id="c1", name="lookup", input=Raw(b'{"q":1}')),
        ToolOutput(call_id="c1", output=Raw(b'"ok"')),
        TextDelta(text="Done."),
        Terminal(text="Done.", usage=Usage(input_tokens=3, output_tokens=2)),
    ]
    out = encode(HOST, events)
    names = [name for name, _ in frames(out)]
    assert names == ["streambridge.carrier"] * 4 + ["chunk", "streambridge.carrier", "complete"]
    carried = [data["event"]["type"] for name, data in frames(out) if name == "streambridge.carrier"]
    assert carried == ["run-start", "reasoning", "tool-call", "tool-output", "terminal"]
    assert canonical(decode(HOST, out, strict=True)) == canonical(events)


def test_a_call_is_carried_in_one_spelling_whichever_way_it_came() -> None:
    as_text = ToolCall(call_id="c1", name="lookup", arguments_json='{"q":1}')
    as_input = ToolCall(call_id="c1", name="lookup", input=Raw(b'{"q":1}'))
    for call in (as_text, as_input):
        assert decode(HOST, encode(HOST, [RunStart(synthetic=True), call, Terminal()]))[1] == as_input
    not_json = ToolCall(call_id="c1", name="lookup", arguments_json='{"q":')
    assert decode(HOST, encode(HOST, [RunStart(synthetic=True), not_json, Terminal()]))[1] == not_json


def test_an_outcome_for_a_call_never_announced_gets_the_invented_announcement() -> None:
    out = encode(HOST, [RunStart(synthetic=True), ToolDenied(call_id="c9"), Terminal()])
    assert b'"synthetic":true' not in out and b'"tool-call"' not in out
    events = decode(HOST, out, strict=True)
    assert events[1] == ToolCall(call_id="c9", name="unknown", synthetic=True)
    assert type(events[2]) is ToolDenied


# -- framing ----------------------------------------------------------------------------------------------------


def test_a_heartbeat_comment_is_ignored() -> None:
    plain = sse(("chunk", '{"text":"a"}'), ("complete", '{"output":"a"}'))
    with_pings = b": ping\n\n" + plain.replace(b"\n\nevent: complete", b"\n\n: ping\n\n:\n\nevent: complete")
    assert canonical(decode(HOST, with_pings, strict=True)) == canonical(decode(HOST, plain, strict=True))
    assert encode(HOST, decode(HOST, with_pings)) == plain


def test_ndjson_lines_name_their_event() -> None:
    events = decode(HOST, golden("unknown-kinds", HOST))
    lines = encode(HOST, events, framing="ndjson")
    assert lines.splitlines()[0] == b'{"event":"chunk","data":{"text":"Hi! ","lang":"en"}}'
    assert b'{"event":"reaction","data":{"emoji":"\xf0\x9f\x91\x8d","id":"r1"}}' in lines
    assert canonical(decode(HOST, lines, framing="ndjson", strict=True)) == canonical(events)
    assert sniff(lines) == (HOST, "ndjson")


def test_runs_of_deltas_reach_the_output_in_one_call() -> None:
    class Runs(list):
        def __init__(self) -> None:
            super().__init__()
            self.runs: list[tuple[bool, list[str]]] = []

        def deltas(self, texts: list[str], reasoning: bool = False, ids: object = None) -> None:
            self.runs.append((reasoning, list(texts)))
            self.extend((ReasoningDelta if reasoning else TextDelta)(text=t) for t in texts)

    data = encode(
        HOST, [RunStart(synthetic=True), *(TextDelta(text=f"a{i}") for i in range(4)), ReasoningDelta(text="r")]
    )
    out = Runs()
    CODEC.decoder().feed(data, out)
    assert out.runs == [(False, ["a0", "a1", "a2", "a3"]), (True, ["r"])]
    whole = CODEC.decoder(hot_path=False)
    assert canonical(out) == canonical(whole.feed(data))


# -- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["chunk", "complete", "artifact", "future"])
def test_bad_json_in_strict_mode_names_the_frame(name: str) -> None:
    good = sse(("chunk", '{"text":"a"}'))
    bad = f"event: {name}\ndata: {{oops\n\n".encode()
    with pytest.raises(StreamError) as caught:
        decode(HOST, good + bad, strict=True)
    error = caught.value
    assert (error.codec, error.frame, error.offset, error.kind) == (HOST, 2, len(good), "malformed")
    assert f"JSON data in a {name!r} frame" in str(error)


def test_bad_json_in_lenient_mode_is_forwarded_as_malformed() -> None:
    events = decode(
        HOST, sse(("chunk", '{"text":"a"}')) + b"event: chunk\ndata: {oops\n\n" + sse(("complete", '{"output":"a"}'))
    )
    bad = next(e for e in events if type(e) is Malformed)
    assert bad.raw == "{oops" and "'chunk' frame" in bad.error
    assert events[-1].status == "succeeded"


def test_a_translation_with_a_fault_keeps_the_deltas_before_it() -> None:
    translator = Translator(HOST, "nest", strict=True)
    data = sse(("chunk", '{"text":"kept "}'), ("chunk", '{"text":"too"}')) + b"event: chunk\ndata: {oops\n\n"
    with pytest.raises(StreamError) as caught:
        translator.feed(data)
    assert b'"text":"kept "' in caught.value.output and b'"text":"too"' in caught.value.output


# -- sniffing and validate ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sniffing_tells_every_golden_apart(scenario: str) -> None:
    for codec, file in FILES.items():
        named = codec.split("@")[0]  # an ai-sdk profile writes ai-sdk's wire: sniffing names the codec
        assert sniff((GOLDEN / scenario / file).read_bytes()) == (named, get(codec).default_framing), (scenario, codec)


def test_a_host_error_outranks_nest_only_in_its_own_shape() -> None:
    host = Frame(b'{"error":"Daily token quota exceeded","code":"quota_exceeded"}', event="error")
    nest_error = Frame(b'{"code":"run_failed","message":"provider exploded"}', event="error")
    assert CODEC.sniff(host) == Likeness.MARKER
    assert CODEC.sniff(nest_error) == Likeness.NONE
    assert sniff(b"event: error\n" + b"data: " + host.data + b"\n\n") == (HOST, "sse")
    assert sniff(b"event: error\n" + b"data: " + nest_error.data + b"\n\n") == ("nest", "sse")
    assert CODEC.sniff(Frame(b'{"text":"a"}', event="chunk")) == Likeness.NAMES
    assert CODEC.sniff(Frame(b'{"awaiting":{}}', event="awaiting")) == Likeness.NAMES
    assert CODEC.sniff(Frame(ARTIFACT.encode(), event="artifact")) == Likeness.NAMES
    assert CODEC.sniff(Frame(b'{"delta":"a"}', event="chunk")) == Likeness.NONE


def test_validate_knows_the_dialects_names_and_flags_a_misshapen_frame(tmp_path) -> None:
    clean = tmp_path / "clean.sse"
    clean.write_bytes(sse(("chunk", '{"text":"a"}'), ("artifact", ARTIFACT), ("complete", '{"output":"a"}')))
    result = invoke("validate", clean, "--json")
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["protocol"] == HOST
    flawed = tmp_path / "flawed.sse"
    flawed.write_bytes(sse(("chunk", '{"text":"a"}'), ("chunk", '{"txt":"b"}'), ("complete", '{"output":"a"}')))
    found = json.loads(invoke("validate", flawed, "--json").stdout)["findings"]
    assert [(f["rule"], f["frame"]) for f in found] == [("AFH001", 2)]
    assert "'chunk' frame whose data is not {text}" in found[0]["message"]


async def test_a_nest_client_behind_the_proxy_gets_a_hosts_artifact_as_its_ui_frame(
    aiohttp_server, aiohttp_client
) -> None:
    backend = Upstream()

    async def invoke(request: web.Request) -> web.StreamResponse:
        await backend.record(request)
        parts = [sse(("chunk", '{"text":"Here it is."}')), sse(("artifact", ARTIFACT))]
        return await write_stream(request, [*parts, sse(("complete", '{"output":"Here it is."}'))])

    app = web.Application()
    app.router.add_post("/host/invoke", invoke)
    server = await aiohttp_server(app)
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/host"), HOST, "nest"))
    resp = await client.post("/agent/chat", json={"message": "Chart Q3 sales by region"})
    body = without_comments(await resp.read())
    assert resp.status == 201
    [ui] = [json.loads(f[6:]) for f in body.decode().split("\n\n") if f.startswith('data: {"kind":"ui"')]
    assert (ui["id"], ui["fallbackText"]) == ("art_9mTw", "Chart — 'Q3 sales by region' (41 KB)")
    assert b"streambridge" not in body and b"createdAt" not in body  # a live client: no carrier

"""The delta fast path of protocols whose deltas name their part (ai-sdk's ``text-delta {id}``,
AG-UI's ``TEXT_MESSAGE_CONTENT {messageId}``): the hot path decodes and writes exactly what the
full path does, byte for byte, and is taken where it should be (issue 28)."""

from __future__ import annotations

import pytest
from msgspec import UNSET

from streambridge import translate
from streambridge.codecs import get
from streambridge.codecs.encoder import Encoder
from streambridge.events import (
    Event,
    ReasoningDelta,
    ReasoningStart,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextStart,
    ToolCall,
    ToolOutput,
    Usage,
)

from .corpus import CODECS, canonical, encode, frame_groups, golden

PART_CODECS = ("ai-sdk", "ag-ui")


def _hot_and_full(codec: str, data: bytes, framing: str, chunks: list[bytes]) -> tuple[list[Event], list[Event], int]:
    full = get(codec).decoder(framing, hot_path=False)  # type: ignore[arg-type]  # every frame the full way
    expected = full.feed(data) + full.close()
    hot = get(codec).decoder(framing)  # type: ignore[arg-type]
    events: list[Event] = []
    for chunk in chunks:
        hot.feed(chunk, events)
    return hot.close(events), expected, hot.hot_frames


def _assert_both_paths_agree(codec: str, data: bytes, framing: str, size: int) -> int:
    """Decoded events and every target's bytes the same both ways; how many frames went hot."""
    chunks = frame_groups(data, framing, size)
    events, expected, hot_frames = _hot_and_full(codec, data, framing, chunks)
    assert canonical(events) == canonical(expected)
    for target in CODECS:  # a translation's runs write what event-by-event encoding writes
        translated = b"".join(translate(chunks, source=codec, target=target, source_framing=framing))
        assert translated == encode(target, expected), target
    return hot_frames


# (every golden of every codec, frame by frame and four frames a read, both framings: the hot
# path law in test_laws.py, which walks them with its other reads)


@pytest.mark.parametrize("codec", PART_CODECS)
def test_ai_sdk_and_ag_ui_frames_take_the_hot_path(codec: str) -> None:
    hot_frames = _assert_both_paths_agree(codec, golden("plain-text", codec), "sse", 1)
    assert hot_frames >= 3  # its three deltas at least (the frame after the run start waits for it)


# -- natural streams: what the SDKs write, parts named by the source -----------------------------


def _ai_sdk_natural(cycles: int) -> bytes:
    """What ``streamText(...).toUIMessageStreamResponse()`` writes for a tool-using agent."""
    frames = [b'{"type":"start","messageId":"m1"}']
    for i in range(cycles):
        s = b"%d" % i
        frames += [b'{"type":"start-step"}', b'{"type":"reasoning-start","id":"r' + s + b'"}']
        frames += [b'{"type":"reasoning-delta","id":"r' + s + b'","delta":"thinking %d"}' % k for k in range(3)]
        frames += [b'{"type":"reasoning-end","id":"r' + s + b'"}', b'{"type":"text-start","id":"t' + s + b'"}']
        frames += [b'{"type":"text-delta","id":"t%s","delta":"w%d \\u00e9"}' % (s, k) for k in range(5)]
        frames += [b'{"type":"text-delta","id":"t%s","delta":"caf\xc3\xa9 %d"}' % (s, k) for k in range(5)]
        frames.append(b'{"type":"text-end","id":"t' + s + b'"}')
        frames.append(b'{"type":"tool-input-start","toolCallId":"c%s","toolName":"lookup"}' % s)
        frames.append(b'{"type":"tool-input-delta","toolCallId":"c%s","inputTextDelta":"{\\"q\\":1}"}' % s)
        frames.append(b'{"type":"tool-input-available","toolCallId":"c%s","toolName":"lookup","input":{"q":1}}' % s)
        frames.append(b'{"type":"tool-output-available","toolCallId":"c%s","output":{"rows":3}}' % s)
        frames.append(b'{"type":"finish-step"}')
    frames += [b'{"type":"finish"}', b"[DONE]"]
    return b"".join(b"data: " + frame + b"\n\n" for frame in frames)


def _ag_ui_natural(cycles: int) -> bytes:
    """What an AG-UI agent (ag-ui-protocol's EventEncoder) writes for a tool-using run."""
    frames = [b'{"type":"RUN_STARTED","threadId":"thr-1","runId":"run-1"}']
    for i in range(cycles):
        s = b"%d" % i
        frames.append(b'{"type":"REASONING_MESSAGE_START","messageId":"r%s","role":"reasoning"}' % s)
        frames += [b'{"type":"REASONING_MESSAGE_CONTENT","messageId":"r%s","delta":"hm %d"}' % (s, k) for k in range(3)]
        frames.append(b'{"type":"REASONING_MESSAGE_END","messageId":"r%s"}' % s)
        frames.append(b'{"type":"TEXT_MESSAGE_START","messageId":"m%s","role":"assistant"}' % s)
        frames += [b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m%s","delta":"w%d "}' % (s, k) for k in range(8)]
        frames.append(b'{"type":"TEXT_MESSAGE_END","messageId":"m%s"}' % s)
        frames.append(b'{"type":"TOOL_CALL_START","toolCallId":"c%s","toolCallName":"lookup"}' % s)
        frames.append(b'{"type":"TOOL_CALL_ARGS","toolCallId":"c%s","delta":"{\\"q\\":1}"}' % s)
        frames.append(b'{"type":"TOOL_CALL_END","toolCallId":"c%s"}' % s)
        frames.append(
            b'{"type":"TOOL_CALL_RESULT","messageId":"x%s","toolCallId":"c%s","content":"3","role":"tool"}' % (s, s)
        )
    frames.append(b'{"type":"RUN_FINISHED","threadId":"thr-1","runId":"run-1"}')
    return b"".join(b"data: " + frame + b"\n\n" for frame in frames)


NATURAL = {"ai-sdk": _ai_sdk_natural(6), "ag-ui": _ag_ui_natural(6)}


@pytest.mark.parametrize("size", [1, 3, 16])
@pytest.mark.parametrize("codec", PART_CODECS)
def test_natural_streams_take_the_hot_path_both_ways(codec: str, size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[bool] = []
    write_deltas = Encoder.write_deltas

    def counted(self: Encoder, *args: object) -> bool:
        written.append(write_deltas(self, *args))  # type: ignore[arg-type]
        return written[-1]

    monkeypatch.setattr(Encoder, "write_deltas", counted)
    data = NATURAL[codec]
    hot_frames = _assert_both_paths_agree(codec, data, "sse", size)
    frames = frame_groups(data, "sse", 1)
    escaped = sum(b"\\u00e9" in frame for frame in frames)  # written otherwise than msgspec writes them
    if size == 1:  # every frame but the run start, the two after it (they wait: a step bracket held
        # back keeps the run start held for the riders that may amend it), the end and those escaped
        assert hot_frames >= len(frames) - 5 - escaped
    written.clear()
    translated = b"".join(translate(frame_groups(data, "sse", size), source=codec, target=codec))
    assert translated == data  # (a native stream comes back byte for byte)
    assert any(written)  # runs of deltas were written as runs
    assert written.count(True) >= written.count(False)


def test_a_frame_written_otherwise_takes_the_full_way() -> None:
    """pydantic-ai's adapter writes ``delta`` before ``id``: kept as received, on both paths."""
    data = (
        b'data: {"type":"start"}\n\ndata: {"type":"start-step"}\n\n'
        b'data: {"type":"text-start","id":"t"}\n\n'
        b'data: {"type":"text-delta","id":"t","delta":"a"}\n\n'
        b'data: {"type":"text-delta","delta":"b","id":"t"}\n\n'
        b'data: {"type":"text-delta","id":"t","delta":"c"}\n\n'
        b'data: {"type":"text-end","id":"t"}\n\ndata: {"type":"finish-step"}\n\ndata: {"type":"finish"}\n\n'
        b"data: [DONE]\n\n"
    )
    events, expected, _ = _hot_and_full("ai-sdk", data, "sse", frame_groups(data, "sse", 1))
    assert canonical(events) == canonical(expected)
    assert [e.verbatim is not UNSET for e in events if type(e) is TextDelta] == [False, True, False]
    assert b"".join(translate(frame_groups(data, "sse", 3), source="ai-sdk", target="ai-sdk")) == data


# -- the encoder's side: a delta of the open part, by its part id ------------------------------


def _after(codec: str, events: list[Event], fidelity: str = "exact") -> tuple[Encoder, list[bytes]]:
    encoder = get(codec).encoder()
    encoder.fidelity = fidelity  # type: ignore[assignment]
    parts: list[bytes] = []
    sink = encoder.sink(parts)
    for event in events:
        sink.append(event)
    return encoder, parts


def _run_both_ways(
    codec: str,
    before: list[Event],
    texts: list[str],
    *,
    reasoning: bool = False,
    part_id: str | None = None,
    fidelity: str = "exact",
) -> bool:
    """A run of deltas written through the sink's run and as events: the same bytes. Whether
    the run took the fast path (``write_deltas``)."""
    make = ReasoningDelta if reasoning else TextDelta
    fast, fast_parts = _after(codec, before, fidelity)
    taken = fast.write_deltas(fast_parts, list(texts), reasoning, None, *([part_id] if part_id is not None else []))
    if not taken:
        fast.sink(fast_parts).deltas(list(texts), reasoning, None, *([part_id] if part_id is not None else []))
    slow, slow_parts = _after(codec, before, fidelity)
    for text in texts:
        event = make(text=text) if part_id is None else make(text=text, part_id=part_id)
        slow.write_event(event, slow_parts)
    assert b"".join(fast_parts) == b"".join(slow_parts)
    assert b"".join(fast_parts) + fast.close() == b"".join(slow_parts) + slow.close()
    return taken


OPEN_TEXT = [RunStart(run_id="r"), TextStart(part_id="t0"), TextDelta(text="a", part_id="t0")]


@pytest.mark.parametrize("codec", PART_CODECS)
def test_a_delta_of_the_sources_open_part_is_written_from_its_head(codec: str) -> None:
    assert _run_both_ways(codec, OPEN_TEXT, ["b", "c é", ""] if codec == "ai-sdk" else ["b", "c é"], part_id="t0")
    encoder, parts = _after(codec, OPEN_TEXT)
    fast = encoder._fast_text(TextDelta(text="d", part_id="t0"))
    assert fast is not None
    encoder.write_event(TextDelta(text="d", part_id="t0"), parts)
    assert parts[-1] == fast


@pytest.mark.parametrize("codec", PART_CODECS)
def test_a_delta_of_this_encoders_own_part_is_written_from_its_head(codec: str) -> None:
    before: list[Event] = [RunStart(run_id="r"), TextDelta(text="a")]
    assert _run_both_ways(codec, before, ["b", "c"])
    reasoning: list[Event] = [RunStart(run_id="r"), ReasoningDelta(text="a")]
    assert _run_both_ways(codec, reasoning, ["b", "c"], reasoning=True)


@pytest.mark.parametrize("codec", PART_CODECS)
def test_a_delta_of_another_part_takes_its_event(codec: str) -> None:
    assert not _run_both_ways(codec, OPEN_TEXT, ["b"], part_id="t1")  # not open: it opens it
    assert not _run_both_ways(codec, OPEN_TEXT, ["b"], reasoning=True, part_id="t0")  # not a reasoning part
    assert _run_both_ways(codec, OPEN_TEXT, ["b"])  # no part of the encoder's own: the run opens one
    opened = [*OPEN_TEXT, ReasoningStart(part_id="r0"), ReasoningDelta(text="x", part_id="r0")]
    assert _run_both_ways(codec, opened, ["y"], reasoning=True, part_id="r0")
    assert _run_both_ways(codec, opened, ["b"], part_id="t0")
    after_tool = [*OPEN_TEXT, ToolCall(call_id="c", name="n")]
    # ai-sdk: a step to close, its parts forgotten; an AG-UI message stays open across a call
    assert _run_both_ways(codec, after_tool, ["b"], part_id="t0") == (codec == "ag-ui")


#: (a run start with nothing to carry: no rider waits after it in either protocol)
_BEGUN: list[Event] = [RunStart(synthetic=True)]
_SAID: list[Event] = [*_BEGUN, TextDelta(text="a")]
_TOOL: list[Event] = [*_SAID, ToolCall(call_id="c", name="n"), ToolOutput(call_id="c")]
#: before a run of plain deltas with no part of the encoder's own open: (events, reasoning, and
#: whether ai-sdk and AG-UI write the run as a run)
_OPENINGS: dict[str, tuple[list[Event], bool, bool, bool]] = {
    "the stream's first text": (_BEGUN, False, True, True),
    "the stream's first reasoning": (_BEGUN, True, True, True),
    "text after reasoning": ([*_BEGUN, ReasoningDelta(text="hm")], False, True, True),
    "reasoning after text": (_SAID, True, True, True),
    "a step implied around it": ([*_SAID, StepFinish(synthetic=True), StepStart(synthetic=True)], False, True, True),
    # ai-sdk: the step whose end came, and the next one, are decided by the delta's event
    "after a step's end": ([*_TOOL, StepFinish(usage=Usage(input_tokens=1))], False, False, False),
    "after a step's end, a step implied": (
        [*_TOOL, StepFinish(usage=Usage(input_tokens=1)), StepStart(synthetic=True)],
        True,
        True,
        False,  # (AG-UI: the step end rides forward on the next frame, the delta's event's)
    ),
    "after a real step's start": ([*_SAID, StepFinish(), StepStart()], False, False, False),
    # ai-sdk: text after a call in a step starts a new step (its event's way)
    "after a tool call": (_TOOL, False, False, True),
    "with a rider waiting": ([*_SAID, RunStart(run_id="again")], False, False, False),
    "after the terminal": ([*_SAID, Terminal()], False, False, False),
}


@pytest.mark.parametrize("fidelity", ["exact", "client"])
@pytest.mark.parametrize("codec", PART_CODECS)
@pytest.mark.parametrize("case", list(_OPENINGS))
def test_a_run_opens_this_encoders_own_part(case: str, codec: str, fidelity: str) -> None:
    """A run of plain deltas with no part of the encoder's own open writes what its first
    delta's handler writes before it (the step, the other kind's end, the part's start), then
    the run, where its state lets it (issue 28: a step's first deltas cost no event); the same
    bytes either way, taken or not."""
    before, reasoning, ai_sdk, ag_ui = _OPENINGS[case]
    taken = _run_both_ways(codec, before, ["a", "b c"], reasoning=reasoning, fidelity=fidelity)
    if fidelity == "exact":
        assert taken == (ai_sdk if codec == "ai-sdk" else ag_ui)


@pytest.mark.parametrize("codec", PART_CODECS)
def test_no_delta_passes_an_event_riding_forward(codec: str) -> None:
    """A second run start (no frame of its own here) rides on the next frame with the slot:
    the next delta's, so no run may be written before it is on board."""
    riding = [*OPEN_TEXT, RunStart(run_id="again")]
    assert not _run_both_ways(codec, riding, ["b", "c"], part_id="t0")
    encoder, parts = _after(codec, riding)
    assert encoder._riders
    assert encoder._fast_text(TextDelta(text="b", part_id="t0")) is None
    encoder.write_event(TextDelta(text="b", part_id="t0"), parts)
    assert b"streambridge" in parts[-1]  # the step rode on it
    assert encoder._fast_text(TextDelta(text="c", part_id="t0")) is not None  # and then the way is free


def test_an_empty_ag_ui_delta_goes_in_its_carrier_only() -> None:
    assert not _run_both_ways("ag-ui", OPEN_TEXT, ["b", ""], part_id="t0")

"""The laws every codec obeys, checked on the whole golden corpus and the real nest captures.

Round trip (byte for byte), the golden matrix (a conversion says what the target's own golden
says), cross trip (A → B → A gives A back), exactly one terminal with nothing orphaned, and
output independent of how the input was chunked.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest
from msgspec import Raw

from streambridge import translate
from streambridge.codecs import get
from streambridge.codecs.terminals import TRUNCATED_CODE
from streambridge.events import (
    ArtifactPresented,
    ArtifactRefused,
    Event,
    ReasoningDelta,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    encode_event,
)

from .corpus import (
    CODECS,
    CORPUS,
    SCENARIOS,
    Corpus,
    Findings,
    canonical,
    capture_body,
    capture_paths,
    convert,
    decode,
    encode,
    frame_groups,
    golden,
    golden_name,
    same,
)

# Each law is one test per source protocol that walks every golden scenario (and every target)
# itself and fails once, naming every failing file and where it first differs (tests/corpus.py,
# Findings): ~40 tests instead of ~15,000 parametrized cases, the same checks. The checkers take
# the corpus as an argument, so test_a_broken_codec_is_named_by_every_law can feed them a broken one.


def _others(source: str) -> list[str]:
    return [c for c in CODECS if c != source]


# -- round trip --------------------------------------------------------------------------


def check_round_trip(corpus: Corpus, codec: str) -> Findings:
    findings = Findings(f"round trip of {codec}")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, codec)):
            data = corpus.golden(scenario, codec)
            out = corpus.converted(scenario, codec, codec)
            if scenario == "truncated":
                # the input had no terminal: the output is the input plus exactly one error terminal
                same(out[: len(data)], data)
                events = decode(codec, out, strict=True)  # (strict: bytes after a terminal are an error)
                tail = events[-1]
                assert isinstance(tail, Terminal) and tail.failure.code == TRUNCATED_CODE, tail
            else:
                same(out, data)
    return findings


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_is_byte_exact(codec: str) -> None:
    check_round_trip(CORPUS, codec).check()


def test_real_nest_captures_round_trip() -> None:
    findings = Findings("round trip of the real nest captures")
    for path in capture_paths():
        with findings.case(path.name):
            body = capture_body(path)
            same(encode("nest", decode("nest", body)), body)
    findings.check()


# -- golden matrix -----------------------------------------------------------------------


def _input_of(call: ToolCall) -> object:
    if isinstance(call.input, Raw):
        return json.loads(bytes(call.input))
    return json.loads(call.arguments_json) if isinstance(call.arguments_json, str) else None


def project(events: list[Event]) -> dict[str, object]:
    """What every one of the three protocols says natively about a conversation."""
    tools, outcomes = [], []
    artifacts: dict[str, object] = {}  # by ref: a later frame for the same ref replaces it
    for e in events:
        if isinstance(e, ArtifactPresented):
            artifacts[e.ref] = ("presented", e.as_, e.snapshot, e.tool_call_id)
        elif isinstance(e, ArtifactRefused):
            artifacts[e.ref or ""] = ("refused", e.reason)
        if isinstance(e, ToolCall) and not e.synthetic:
            tools.append((e.call_id, e.name, _input_of(e)))
        elif isinstance(e, ToolOutput):
            outcomes.append((e.call_id, "ok"))
        elif isinstance(e, ToolError | ToolDenied):
            outcomes.append((e.call_id, "failed"))
    end = events[-1]
    assert isinstance(end, Terminal)
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    whole = end.text if isinstance(end.text, str) else ""
    return {
        "text": streamed or whole,  # an answer that came whole comes with the terminal
        "reasoning": "".join(e.text for e in events if isinstance(e, ReasoningDelta)),
        "tools": tools,
        "outcomes": outcomes,
        "status": end.status,
        "artifacts": artifacts,
    }


def check_golden_matrix(corpus: Corpus, source: str) -> Findings:
    findings = Findings(f"golden matrix from {source}")
    for scenario in SCENARIOS:
        for target in _others(source):
            with findings.case(f"{golden_name(scenario, source)} → {target}"):
                converted = decode(target, corpus.converted(scenario, source, target))
                expected = project(list(corpus.events(scenario, target)))
                got = project(converted)
                if "oma" in (source, target) and not (expected["reasoning"] and got["reasoning"]):
                    # oma's runner layer cannot say reasoning at all; compare it where both sides have it
                    expected.pop("reasoning")
                    got.pop("reasoning")
                for key in expected:
                    assert got.get(key) == expected[key], (
                        f"{key}: got {got.get(key)!r:.200}, expected {expected[key]!r:.200}"
                    )
    return findings


@pytest.mark.parametrize("source", CODECS)
def test_golden_matrix(source: str) -> None:
    """A conversion says what the target's own golden of the same scenario says."""
    check_golden_matrix(CORPUS, source).check()


# -- cross trip --------------------------------------------------------------------------


def _cross(source: str, via: str, data: bytes) -> tuple[list[bytes], list[bytes]]:
    original = decode(source, data)
    back = decode(source, convert(via, source, convert(source, via, data)))
    return canonical(original), canonical(back)


def check_cross_trip(corpus: Corpus, source: str) -> Findings:
    findings = Findings(f"cross trip from {source}")
    for scenario in SCENARIOS:
        original = canonical(list(corpus.events(scenario, source)))
        for via in _others(source):
            with findings.case(f"{golden_name(scenario, source)} → {via} → {source}"):
                there = corpus.converted(scenario, source, via)
                back = decode(source, corpus.encode(source, decode(via, there)))
                same(canonical(back), original)
    return findings


@pytest.mark.parametrize("source", CODECS)
def test_cross_trip_returns_the_source_events(source: str) -> None:
    """A → B → A gives A's events back, for every B."""
    check_cross_trip(CORPUS, source).check()


def test_real_nest_captures_cross_trip() -> None:
    findings = Findings("cross trip of the real nest captures")
    for path in capture_paths():
        body = capture_body(path)
        for via in ("agentkit", "oma"):
            with findings.case(f"{path.name} → {via} → nest"):
                original, back = _cross("nest", via, body)
                same(back, original)
                # and the bytes come back exactly
                same(convert(via, "nest", convert("nest", via, body)), body)
    findings.check()


# -- terminals and ordering --------------------------------------------------------------


def assert_well_ordered(codec: str, events: list[Event]) -> None:
    terminals = [i for i, e in enumerate(events) if isinstance(e, Terminal)]
    assert terminals == [len(events) - 1], (
        f"exactly one terminal, and it is last: terminals at {terminals} of {len(events)}"
    )
    announced: set[str] = set()
    step_open = False
    for e in events:
        if isinstance(e, ToolInputStart | ToolCall):
            announced.add(e.call_id)
        elif isinstance(e, ToolInputDelta | ToolOutput | ToolError | ToolDenied):
            assert e.call_id in announced, f"{type(e).__name__} for unannounced call {e.call_id}"
        if codec == "nest":
            if isinstance(e, StepStart):
                step_open = True
            elif isinstance(e, StepFinish):
                assert step_open, "step-finish without step-start"
                step_open = False
            elif isinstance(e, TextDelta | ReasoningDelta | ToolInputStart | ToolCall) and not e.synthetic:
                # (an answer that came whole is restored from its terminal's data part, whose
                # covered frames, what a client reads, hold the step)
                assert step_open, f"{type(e).__name__} outside a step"


def check_no_synthetic_carrier(corpus: Corpus, source: str) -> Findings:
    findings = Findings(f"no carrier describes a synthetic event, from {source}")
    for scenario in SCENARIOS:
        for target in CODECS:
            with findings.case(f"{golden_name(scenario, source)} → {target}"):
                out = corpus.converted(scenario, source, target)
                at = out.find(b'"synthetic":true')
                assert at < 0, f"a carrier says synthetic at byte {at}: {out[max(0, at - 60) : at + 40]!r}"
    return findings


@pytest.mark.parametrize("source", CODECS)
def test_no_carrier_describes_a_synthetic_event(source: str) -> None:
    """Invented structure is written where a target needs it, plainly, and read back as
    invented: carriers describe only what a source said."""
    check_no_synthetic_carrier(CORPUS, source).check()


def check_one_terminal(corpus: Corpus, source: str) -> Findings:
    findings = Findings(f"one terminal and nothing orphaned, from {source}")
    for scenario in SCENARIOS:
        for target in CODECS:
            with findings.case(f"{golden_name(scenario, source)} → {target}"):
                assert_well_ordered(target, decode(target, corpus.converted(scenario, source, target), strict=True))
    return findings


@pytest.mark.parametrize("source", CODECS)
def test_every_output_has_one_terminal_and_nothing_orphaned(source: str) -> None:
    check_one_terminal(CORPUS, source).check()


def test_nest_text_after_tools_opens_a_new_step() -> None:
    out = convert("agentkit", "nest", golden("text-after-tool", "agentkit"))
    kinds = [type(e).__name__ for e in decode("nest", out)]
    last_tool = max(i for i, k in enumerate(kinds) if k.startswith("Tool"))
    later_text = kinds.index("TextDelta", last_tool)
    assert "StepStart" in kinds[last_tool:later_text]
    assert "StepFinish" in kinds[last_tool:later_text]


def test_input_broken_off_mid_frame_still_gets_one_terminal() -> None:
    findings = Findings("input broken off mid-frame")
    for cut in (10, 40, 200):
        data = golden("tool-streamed-args", "nest")[:cut]
        for target in CODECS:
            with findings.case(f"{golden_name('tool-streamed-args', 'nest')}[:{cut}] → {target}"):
                out = b"".join(translate([data], source="nest", target=target))
                events = decode(target, out, strict=True)
                assert_well_ordered(target, events)
                assert events[-1].status == "error", events[-1]
    findings.check()


# -- chunking invariance -----------------------------------------------------------------


def _split_random(data: bytes, seed: int, largest: int = 97) -> list[bytes]:
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(data):
        n = rng.randint(1, largest)
        pieces.append(data[i : i + n])
        i += n
    return pieces


#: the 1 MB scenario: every other one is fed byte by byte (and in random pieces up to 97 bytes),
#: which proves the decoders' chunk handling; this one proves that long frames split anywhere
#: across large reads come out the same, so it is fed in large irregular pieces (feeding it
#: 7 bytes at a time through every pair cost a third of the laws' CPU and proved nothing more)
LARGE = "large-tool-output"


PER_BYTE = "per byte"


def _chunkings(data: bytes, scenario: str) -> dict[str, list[bytes]]:
    if scenario == LARGE:
        return {
            "random up to 64 KiB, seed 1": _split_random(data, 1, 65536),
            "random up to 64 KiB, seed 2": _split_random(data, 2, 65536),
            "random up to 997 bytes": _split_random(data, 3, 997),
        }
    return {
        PER_BYTE: [data[i : i + 1] for i in range(len(data))],
        "random up to 97 bytes, seed 1": _split_random(data, 1),
        "random up to 97 bytes, seed 2": _split_random(data, 2),
    }


def _first_frame_apart(data: bytes, framing: str) -> list[bytes]:
    """The first frame, then the rest in one chunk: the rest then reaches the decoder's hot
    path as long runs of plain frames (the first frame of a stream is seldom plain)."""
    end = data.index(b"\n\n" if framing == "sse" else b"\n") + (2 if framing == "sse" else 1)
    return [data[:end], data[end:]]


def check_hot_path(codec: str) -> Findings:
    """The hot path decodes what the full path decodes, and a translation's text runs write what
    event-by-event encoding writes, whatever reads the frames come in: the first frame apart
    (the rest reaches the hot path as long runs of plain frames), a frame a read, four a read
    (each read reaches it afresh; this took in test_part_fast_path's frame-by-frame cases)."""
    findings = Findings(f"hot path of {codec}")
    for scenario in SCENARIOS:
        for framing in ("sse", "ndjson"):
            data = encode(codec, list(CORPUS.events(scenario, codec)), framing=framing)
            full = get(codec).decoder(framing, hot_path=False)  # type: ignore[arg-type]  # every frame the full way
            expected = full.feed(data) + full.close()
            written = {target: encode(target, expected) for target in CODECS}
            reads = {
                "first frame apart": _first_frame_apart(data, framing),
                "a frame a read": frame_groups(data, framing, 1),
                "four frames a read": frame_groups(data, framing, 4),
            }
            for name, chunks in reads.items():
                with findings.case(f"{golden_name(scenario, codec)} as {framing}, {name}"):
                    hot = get(codec).decoder(framing)  # type: ignore[arg-type]
                    events: list[Event] = []
                    for chunk in chunks:
                        hot.feed(chunk, events)
                    same(canonical(hot.close(events)), canonical(expected), "decoded")
                    for target in CODECS:
                        translated = b"".join(translate(chunks, source=codec, target=target, source_framing=framing))
                        same(translated, written[target], f"→ {target}")
    return findings


@pytest.mark.parametrize("codec", CODECS)
def test_the_hot_path_decodes_what_the_full_path_decodes(codec: str) -> None:
    check_hot_path(codec).check()


def test_the_hot_path_keeps_nest_sequence_numbers() -> None:
    """Numbered nest frames (``id:`` on every event) take the hot path too, seq included."""
    findings = Findings("hot path of numbered nest frames")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, "nest")):
            _check_numbered_nest_frames(scenario)
    findings.check()


def _check_numbered_nest_frames(scenario: str) -> None:
    data = encode("nest", list(CORPUS.events(scenario, "nest")), sequence_ids=True)
    full = get("nest").decoder(hot_path=False)
    expected = full.feed(data) + full.close()
    # the run start and the frame after it alone (a run start is held until the next frame),
    # then each run of numbered frames in one chunk, the others alone
    frames = [f + b"\n\n" for f in data.split(b"\n\n") if f]
    chunks: list[bytes] = frames[:2]
    for frame in frames[2:]:
        if frame.startswith(b"id: ") and len(chunks) > 2 and chunks[-1].startswith(b"id: "):
            chunks[-1] += frame
        else:
            chunks.append(frame)
    hot = get("nest").decoder()
    events: list[Event] = []
    for chunk in chunks:
        hot.feed(chunk, events)
    same([encode_event(e) for e in hot.close(events)], [encode_event(e) for e in expected])
    if scenario == "plain-text":  # the hot path took every numbered frame after the first
        assert hot.hot_frames == sum(f.startswith(b"id: ") for f in frames[2:]) > 0


def check_chunking(corpus: Corpus, source: str) -> Findings:
    """Every golden of ``source`` into every target, whole and in random pieces; byte by byte
    (the costliest: every boundary, a decoder call per byte) into one target in turn, so each
    target meets it on several goldens and each golden is fed byte by byte once."""
    findings = Findings(f"output independent of chunking, from {source}")
    for index, scenario in enumerate(SCENARIOS):
        data = corpus.golden(scenario, source)
        chunkings = _chunkings(data, scenario)
        per_byte = CODECS[(CODECS.index(source) + index) % len(CODECS)]
        for target in CODECS:
            with findings.case(f"{golden_name(scenario, source)} → {target}"):
                whole = b"".join(translate([data], source=source, target=target))
                # the streaming path says what decode + encode says
                same(whole, corpus.converted(scenario, source, target), "whole")
                for name, pieces in chunkings.items():
                    if name != PER_BYTE or target == per_byte:
                        same(b"".join(translate(pieces, source=source, target=target)), whole, name)
    return findings


@pytest.mark.parametrize("source", CODECS)
def test_output_does_not_depend_on_chunking(source: str) -> None:
    check_chunking(CORPUS, source).check()


async def test_async_translate_streams_before_the_input_ends() -> None:
    frames = golden("plain-text", "nest").split(b"\n\n")
    consumed = []

    async def source():
        for frame in frames:
            consumed.append(frame)
            yield frame + b"\n\n"

    stream = translate(source(), source="nest", target="agentkit")
    first = await anext(stream)
    assert b"turn_start" in first
    assert len(consumed) < len(frames), "the first output came before the input ended"
    rest = [chunk async for chunk in stream]
    assert b"turn_end" in rest[-1]


def test_real_nest_captures_convert_to_every_codec() -> None:
    findings = Findings("real nest captures to every codec")
    for path in capture_paths():
        body = capture_body(path)
        source = project(decode("nest", body))
        expected_status = "error" if "failed" in path.stem else "succeeded"
        for target in CODECS:
            with findings.case(f"{path.name} → {target}"):
                events = decode(target, convert("nest", target, body), strict=True)
                assert_well_ordered(target, events)
                assert project(events) == source, "what the capture says natively changed"
                assert events[-1].status == expected_status, events[-1]
    findings.check()


# -- the law tests can fail ----------------------------------------------------------------


class _BrokenOma(Corpus):
    """A deliberately broken codec: oma's encoder loses the event before the terminal and
    writes its last line (the terminal) twice."""

    def encode(self, codec: str, events: Sequence[Event]) -> bytes:
        if codec != "oma":
            return super().encode(codec, events)
        out = super().encode(codec, [*events[:-2], events[-1]])
        return out + out.rstrip(b"\n").rsplit(b"\n", 1)[-1] + b"\n"


class _ApprovalNestCutShort(Corpus):
    """A deliberately broken golden: approval/nest.sse without its last 30 bytes."""

    def golden(self, scenario: str, codec: str) -> bytes:
        data = super().golden(scenario, codec)
        return data[:-30] if (scenario, codec) == ("approval", "nest") else data


def test_a_broken_codec_is_named_by_every_law() -> None:
    """The checkers above, fed a broken encoder, fail and name every file it broke."""
    broken = _BrokenOma()
    reports = {
        "round trip": check_round_trip(broken, "oma"),
        "cross trip": check_cross_trip(broken, "nest"),
        "one terminal": check_one_terminal(broken, "nest"),
        "chunking": check_chunking(broken, "nest"),
    }
    for law, findings in reports.items():
        report = findings.report()
        for scenario in SCENARIOS:
            assert golden_name(scenario, "oma" if law == "round trip" else "nest") in report, (law, scenario)
        assert findings.failures, law
    assert "first difference at byte" in reports["round trip"].report()
    assert "terminal" in reports["one terminal"].report()


def test_a_broken_golden_is_named_alone() -> None:
    findings = check_round_trip(_ApprovalNestCutShort(), "nest")
    assert len(findings.failures) == 1 and findings.failures[0].startswith(
        "approval/nest.sse: first difference at byte"
    )
    with pytest.raises(pytest.fail.Exception, match=r"round trip of nest: 1 of \d+ cases fail\n  approval/nest.sse"):
        findings.check()

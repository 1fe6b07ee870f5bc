"""Property tests: events generated from the model obey the laws; random bytes never break a decoder.

The conversations and events come from ``tests/model_strategies.py``, which builds them by
introspecting ``streambridge.events``: a field added to the model is generated (and checked
here) with no edit to these tests."""

from __future__ import annotations

import contextlib
import os

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from msgspec import Raw

from streambridge import StreamError, translate
from streambridge.codecs import get
from streambridge.codecs.terminals import default_failure
from streambridge.events import (
    EVENT_TYPES,
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextStart,
    ToolApprovalRequest,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
    Usage,
)

from .corpus import CODECS, SCENARIOS, canonical, convert, decode, encode, golden
from .model_strategies import EXCLUDED, alone, conversations, event_strategy, field_paths, is_set
from .test_laws import assert_well_ordered

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
FRAMINGS = ("sse", "ndjson")


# -- the generator covers the model ------------------------------------------------------------


#: draws until the condition holds: generation only (no shrinking), the same draws every run
FIND = settings(max_examples=1000, phases=[Phase.generate], database=None, derandomize=True, deadline=None)


def test_the_generator_sets_every_field_of_the_model() -> None:
    """Every field of every event type (and of the Structs nested in it), but the excluded ones,
    is set in some drawn event: a field added to the model is generated, or this fails."""
    unseen = {cls: dict(field_paths(cls)) for cls in EVENT_TYPES.values()}  # path → default
    defaults = {cls: {f.name: f.default for f in msgspec.structs.fields(cls)} for cls in EVENT_TYPES.values()}

    def sets_the_rest(events: tuple[Event, ...]) -> bool:
        for event in events:
            cls = type(event)
            for name in EXCLUDED:
                assert getattr(event, name) == defaults[cls][name], f"{cls.__name__}.{name} is generated"
            paths = unseen[cls]
            for path, default in list(paths.items()):
                if is_set(event, path, default):
                    del paths[path]
        return not any(unseen.values())

    try:
        find(st.tuples(*map(event_strategy, EVENT_TYPES.values())), sets_the_rest, settings=FIND)
    except NoSuchExample:
        missing = [f"{cls.__name__}.{'.'.join(p)}" for cls, paths in unseen.items() for p in paths]
        pytest.fail(f"never generated: {missing}")


def test_conversations_hold_every_event_type() -> None:
    unseen = set(EVENT_TYPES.values())

    def holds_the_rest(events: list[Event]) -> bool:
        assert type(events[0]) is RunStart
        assert all(type(e) is not RunStart for e in events[1:])
        assert all(type(e) is not Terminal for e in events[1:-1])
        unseen.difference_update(type(e) for e in events)
        return not unseen

    try:
        find(conversations(), holds_the_rest, settings=FIND)
    except NoSuchExample:
        pytest.fail(f"never generated: {sorted(c.__name__ for c in unseen)}")


# -- the laws on random conversations --------------------------------------------------------------


def assert_fixpoint(events: list[Event]) -> None:
    """Every codec, both framings: what an encoder writes decodes (strictly) to events that it
    writes again as the same bytes."""
    for codec in CODECS:
        for framing in FRAMINGS:
            first = encode(codec, events, framing=framing)
            again = encode(codec, decode(codec, first, framing=framing, strict=True), framing=framing)
            assert again == first, f"{codec} {framing}"


def assert_cross_trips(events: list[Event]) -> None:
    """Every pair: A → B → A decodes to what A decoded, B's output is well ordered, and no
    carrier in it describes an invented (synthetic) event."""
    for source in CODECS:
        data = encode(source, events)
        original = canonical(decode(source, data))
        for via in CODECS:
            there = convert(source, via, data)
            assert canonical(decode(source, convert(via, source, there))) == original, f"{source} → {via} → {source}"
            assert_well_ordered(via, decode(via, there, strict=True))
            assert b'"synthetic":true' not in there, f"{source} → {via}"


@SETTINGS
@given(conversations())
def test_encoding_is_a_fixpoint(events: list[Event]) -> None:
    assert_fixpoint(events)


#: random conversations crossing every pair of protocols: 40 in the default run (each crosses
#: all 81 pairs: 100 made it the suite's costliest test, 20 CPU seconds), the profile's in the deep one
CROSSINGS = settings().max_examples if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 40


@settings(SETTINGS, max_examples=CROSSINGS)
@given(conversations())
def test_random_conversations_cross_trip(events: list[Event]) -> None:
    assert_cross_trips(events)


#: examples per field: one in the default run (270 fields, each example crosses every pair of
#: protocols: five made this the suite's costliest test, 90 CPU seconds), 75 in the deep profile
PER_FIELD = settings().max_examples // 20 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 1
FIELD_PATHS = [(cls, path) for cls in EVENT_TYPES.values() for path, _ in field_paths(cls)]


@pytest.mark.parametrize(
    ("cls", "path"), FIELD_PATHS, ids=[f"{cls.__name__}.{'.'.join(path)}" for cls, path in FIELD_PATHS]
)
@settings(SETTINGS, max_examples=PER_FIELD)
@given(data=st.data())
def test_every_field_alone_obeys_the_laws(cls: type[Event], path: tuple[str, ...], data: st.DataObject) -> None:
    """Each field of the model set on its own (nested ones too): no other field makes a codec
    carry the event and hide a field its native path drops."""
    events = data.draw(alone(cls, path))
    assert_fixpoint(events)
    assert_cross_trips(events)


#: the codec bugs the tests above found (and three canonical forms found beside them, which
#: random values hardly hit), each in its smallest form, kept so they stay fixed
START = RunStart(run_id="run-1")
FOUND: dict[str, list[Event]] = {
    "agentkit: a failure with status succeeded": [
        START,
        ToolDenied(call_id="c1", failure=Failure(status="succeeded", message="")),
    ],
    "every codec: a data part of its own with transient": [
        START,
        DataPart(name="x_", origin="nest", data=Raw(b'{"kind":"x_"}'), transient=False),
    ],
    "agentkit: a terminal naming the turn's model and id": [
        RunStart(run_id="run-1", model="m"),
        Terminal(model="m", turn_id="run-1"),
    ],
    "agentkit: a terminal's text no delta streamed": [START, Terminal(text="0")],
    "agentkit: a tool call's status its kind implies": [
        START,
        ToolCall(call_id="c1", name="search", arguments_json="{}", status="running"),
    ],
    "agentkit: another message's terminal without text": [START, Terminal(message_id="m-2")],
    "oma: a kept payload saying another status": [
        START,
        Terminal(status="blocked", result=Raw(b"{}"), error_info=Raw(b"{}")),
    ],
    "nest, oma: argument text with whitespace around the JSON": [
        START,
        ToolCall(call_id="c1", name="search", arguments_json=" {}"),
    ],
    "nest -> agentkit -> nest: a carried call with an input": [
        START,
        ToolCall(call_id="c1", name="search", input=Raw(b"null"), status="proposed"),
    ],
    "agentkit -> nest -> agentkit: a carried call with argument text": [
        START,
        ToolCall(call_id="c1", name="search", arguments_json="{}", parent_id="p"),
    ],
    "oma: a usage with one token count": [START, Terminal(usage=Usage(output_tokens=1))],
    "oma: a succeeded terminal with a failure": [START, Terminal(failure=Failure(status="succeeded", message=""))],
    "nest: a terminal with unknown fields": [START, Terminal(extra={"x_": Raw(b"null")})],
    "agentkit: a tool error with the bare failure of its text": [
        START,
        ToolError(call_id="c1", error="", failure=Failure(status="error", message="")),
    ],
    "agentkit: a string output escaped otherwise than msgspec escapes it": [
        START,
        ToolOutput(call_id="c1", output=Raw(b'"\\u00e9"')),
    ],
    "every codec: a carried terminal with its status's default failure": [
        START,
        Terminal(status="error", failure=default_failure("error"), provider="p"),
    ],
    "nest: a run start naming the derived thread id": [RunStart(run_id="run-1", thread_id="thr-run-1")],
    "agentkit: a run start naming the derived message id": [RunStart(run_id="run-1", message_id="msg-run-1")],
    "ai-sdk: a step's end with no step open, then the input breaks off": [RunStart(), StepFinish()],
    "-> ai-sdk ->: a terminal's id after the end of a part ai-sdk invented": [
        RunStart(),
        TextStart(),
        Terminal(event_id="0"),
    ],
    "-> ai-sdk ->: an error terminal's id after the end of a part ai-sdk invented": [
        RunStart(),
        ReasoningDelta(text="hm"),
        Terminal(status="error", event_id="7"),
    ],
}


@pytest.mark.parametrize("events", FOUND.values(), ids=FOUND.keys())
def test_what_the_generator_found_stays_fixed(events: list[Event]) -> None:
    assert_fixpoint(events)
    assert_cross_trips(events)


@SETTINGS
@given(conversations(), st.sampled_from(CODECS), st.lists(st.integers(1, 40), min_size=1))
def test_random_conversations_are_chunking_invariant(events: list[Event], source: str, sizes: list[int]) -> None:
    data = encode(source, events)
    pieces, i, k = [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        pieces.append(data[i : i + n])
        i, k = i + n, k + 1
    for target in CODECS:
        whole = b"".join(translate([data], source=source, target=target))
        assert whole == convert(source, target, data)
        assert b"".join(translate(pieces, source=source, target=target)) == whole, target


@SETTINGS
@given(
    conversations(),
    st.sampled_from(CODECS),
    st.sampled_from(FRAMINGS),
    st.lists(st.integers(1, 12), min_size=1),
)
def test_the_hot_path_decodes_what_the_full_path_decodes(
    events: list[Event], codec: str, framing: str, groups: list[int]
) -> None:
    """Chunks of whole frames in random groups: the parser hands runs of them to the hot path."""
    data = encode(codec, events, framing=framing)
    end = b"\n\n" if framing == "sse" else b"\n"
    frames = [f + end for f in data.split(end) if f]
    chunks, i, k = [], 0, 0
    while i < len(frames):
        n = groups[k % len(groups)]
        chunks.append(b"".join(frames[i : i + n]))
        i, k = i + n, k + 1
    full = get(codec).decoder(framing, hot_path=False)  # type: ignore[arg-type]  # every frame the full way
    expected = full.feed(data) + full.close()
    hot = get(codec).decoder(framing)  # type: ignore[arg-type]
    out: list = []
    for chunk in chunks:
        hot.feed(chunk, out)
    assert canonical(hot.close(out)) == canonical(expected)
    for target in CODECS:
        translated = b"".join(translate(chunks, source=codec, target=target, source_framing=framing))
        assert translated == encode(target, expected)


@settings(deadline=None)
@given(st.binary(max_size=400), st.sampled_from(CODECS), st.sampled_from(["sse", "ndjson"]))
def test_random_bytes_never_raise_in_lenient_mode(data: bytes, codec: str, framing: str) -> None:
    events = decode(codec, data, framing=framing)
    assert isinstance(events[-1], Terminal)
    for target in CODECS:
        assert_well_ordered(target, decode(target, encode(target, events), strict=True))


@settings(deadline=None)
@given(st.binary(max_size=400), st.sampled_from(CODECS), st.sampled_from(["sse", "ndjson"]))
def test_random_bytes_raise_only_stream_error_in_strict_mode(data: bytes, codec: str, framing: str) -> None:
    with contextlib.suppress(StreamError):
        decode(codec, data, framing=framing, strict=True)


@settings(deadline=None)
@given(st.sampled_from(SCENARIOS), st.sampled_from(CODECS), st.data())
def test_corrupted_goldens_are_survived(scenario: str, codec: str, data: st.DataObject) -> None:
    raw = bytearray(golden(scenario, codec)[:4000])
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    events = decode(codec, bytes(raw))
    for target in CODECS:
        assert_well_ordered(target, decode(target, encode(target, events), strict=True))


def test_a_call_carried_for_its_event_id_keeps_its_input_spelling() -> None:
    """Found by the random conversations above: a tool call that oma can say but for its event
    id, arriving from agentkit (which reads its input as argument text), is carried in the
    spelling oma's decoder reads (the input), not as argument text."""
    call = ToolCall(call_id="c1", input=Raw(b'""'), event_id="0")
    assert_cross_trips([RunStart(), StepStart(), call, ToolApprovalRequest(call_id="c1")])

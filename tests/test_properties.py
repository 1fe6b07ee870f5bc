"""Property tests: random valid event sequences obey the laws; random bytes never break a decoder."""

from __future__ import annotations

import contextlib

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambridge import StreamError, translate
from streambridge.codecs import get
from streambridge.events import (
    Citation,
    Failure,
    ReasoningDelta,
    RunStart,
    Source,
    Sources,
    Status,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    Title,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
    Usage,
)

from .corpus import CODECS, SCENARIOS, canonical, convert, decode, encode, golden
from .test_laws import assert_well_ordered

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
raw_json = json_values.map(lambda v: msgspec.Raw(msgspec.json.encode(v)))
raw_object = st.dictionaries(st.text(max_size=5), json_values, max_size=3).map(
    lambda v: msgspec.Raw(msgspec.json.encode(v))
)
ids = st.sampled_from(["c1", "c2", "c3"])
text = st.text(max_size=12)
failures = st.builds(
    lambda status, message, code: Failure(status=status, message=message, code=code),
    st.sampled_from(["error", "blocked", "refused", "notProvisioned"]),
    text,
    st.sampled_from(["run_failed", "quota_exceeded", "content_filter", "refused", "not_provisioned"]),
)


def _call(call_id: str) -> st.SearchStrategy:
    return st.builds(ToolCall, call_id=st.just(call_id), name=st.sampled_from(["search", "lookup"]), input=raw_object)


body_events = st.one_of(
    st.builds(TextDelta, text=text),
    st.builds(ReasoningDelta, text=text),
    ids.flatmap(_call),
    st.builds(ToolOutput, call_id=ids, output=raw_json),
    st.builds(ToolError, call_id=ids, error=text),
    st.builds(ToolDenied, call_id=ids, reason=text),
    st.builds(Status, label=text),
    st.builds(Title, title=text),
    st.builds(Citation, marker=st.just("1"), source_id=st.just("s1")),
    st.builds(Sources, sources=st.lists(st.builds(Source, id=ids, title=text, kind=st.just("web")), max_size=2)),
    st.just(StepStart()),
    st.builds(StepFinish, usage=st.builds(Usage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99)), cost_usd=st.none()),
)
terminals = st.one_of(
    st.just(Terminal(status="succeeded")),
    st.just(Terminal(status="cancelled")),
    failures.map(lambda f: Terminal(status=f.status, failure=f)),
)


@st.composite
def conversations(draw: st.DrawFn) -> list:
    events = [RunStart(run_id=draw(st.sampled_from(["r1", "run-2"])))]
    events += draw(st.lists(body_events, max_size=14))
    if draw(st.booleans()):
        events.append(draw(terminals))
    return events


@SETTINGS
@given(conversations(), st.sampled_from(CODECS))
def test_encoding_is_a_fixpoint(events: list, codec: str) -> None:
    first = encode(codec, events)
    assert encode(codec, decode(codec, first, strict=True)) == first


@SETTINGS
@given(conversations(), st.sampled_from(CODECS), st.sampled_from(CODECS))
def test_random_conversations_cross_trip(events: list, source: str, via: str) -> None:
    data = encode(source, events)
    original = decode(source, data)
    assert canonical(decode(source, convert(via, source, convert(source, via, data)))) == canonical(original)
    assert_well_ordered(via, decode(via, convert(source, via, data), strict=True))


@SETTINGS
@given(conversations(), st.sampled_from(CODECS), st.sampled_from(CODECS), st.lists(st.integers(1, 40), min_size=1))
def test_random_conversations_are_chunking_invariant(events: list, source: str, target: str, sizes: list[int]) -> None:
    data = encode(source, events)
    pieces, i, k = [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        pieces.append(data[i : i + n])
        i, k = i + n, k + 1
    whole = b"".join(translate([data], source=source, target=target))
    assert whole == convert(source, target, data)
    assert b"".join(translate(pieces, source=source, target=target)) == whole


@SETTINGS
@given(
    conversations(),
    st.sampled_from(CODECS),
    st.sampled_from(["sse", "ndjson"]),
    st.lists(st.integers(1, 12), min_size=1),
)
def test_the_hot_path_decodes_what_the_full_path_decodes(events: list, codec: str, framing: str, groups: list[int]) -> None:
    """Chunks of whole frames in random groups: the parser hands runs of them to the hot path."""
    data = encode(codec, events, framing=framing)
    end = b"\n\n" if framing == "sse" else b"\n"
    frames = [f + end for f in data.split(end) if f]
    chunks, i, k = [], 0, 0
    while i < len(frames):
        n = groups[k % len(groups)]
        chunks.append(b"".join(frames[i : i + n]))
        i, k = i + n, k + 1
    full = get(codec).decoder(framing)  # type: ignore[arg-type]
    full._hot_decoder = None  # every frame the full way
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

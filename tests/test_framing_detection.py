"""Framing detection: with no framing given, decoders read SSE or NDJSON from the first
significant bytes (``detect_framing``); an explicit framing wins; offsets count from the start."""

from __future__ import annotations

import functools

import pytest

from streambridge import StreamError, Translator, translate
from streambridge.codecs import get
from streambridge.codecs.framing import FRAMINGS, NDJSONParser, SSEParser, detect_framing, parse_framing
from streambridge.codecs.terminals import TRUNCATED_CODE
from streambridge.events import Malformed, Terminal

from .corpus import CODECS, SCENARIOS, Findings, canonical, golden, golden_name, same

BOM = b"\xef\xbb\xbf"
#: a frame no codec understands, in each framing (the decoders report it with its offset)
BAD = {"sse": b"data: {oops\n\n", "ndjson": b"{oops\n"}


@functools.cache
def in_framing(codec: str, scenario: str, framing: str) -> bytes:
    """A golden in the given framing (oma's goldens are NDJSON, the others' SSE)."""
    translator = Translator(codec, codec, source_framing=get(codec).default_framing, target_framing=framing)
    return translator.feed(golden(scenario, codec)) + translator.close()


def translated(chunks: list[bytes], source: str, target: str, **options: object) -> bytes:
    return b"".join(translate(chunks, source=source, target=target, **options))


def decoded(codec: str, chunks: list[bytes], framing: str | None = None, **options: object) -> list:
    decoder = get(codec).decoder(framing, **options)  # type: ignore[arg-type]
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.close()


def chunkings(body: bytes) -> dict[str, list[bytes]]:
    """The same bytes cut the ways that test an incremental detector."""
    lead = BOM + b"\n\n \n"
    data = lead + body
    return {
        "whole": [data],
        "bom-in-pieces": [b"\xef", b"", b"\xbb", b"\xbf", b"\n", b"\n \n", body],
        "blank-lines-apart": [BOM + b"\n\n", b" \n", body[:1], body[1:]],
        "one-byte": [data[i : i + 1] for i in range(len(data))],
        "seven-bytes": [data[i : i + 7] for i in range(0, len(data), 7)],
    }


# -- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "framing"),
    [
        (b"", None),
        (b"\xef", None),
        (b"\xef\xbb", None),
        (BOM, None),
        (BOM + b" \r\n\t", None),
        (b"\n\n", None),
        (b"{", "ndjson"),
        (b"[", "ndjson"),
        (BOM + b"\n {", "ndjson"),
        (b"data: {}", "sse"),
        (b"event:", "sse"),
        (b"id: 1", "sse"),
        (b"retry: 5", "sse"),
        (b": ping", "sse"),
        (b"\n\nd", "sse"),
        (b"\xefx", "sse"),
        (BOM + BOM + b"{", "sse"),
        (b"hello", "sse"),
    ],
)
def test_the_rule_reads_the_first_significant_byte(head: bytes, framing: str | None) -> None:
    assert detect_framing(head) == framing


# -- translate without a framing --------------------------------------------------------------


# (one test per target walks every golden, failing once with each failing file named)


@pytest.mark.parametrize("target", CODECS)
def test_oma_as_sse_translates_as_with_sse_given(target: str) -> None:
    findings = Findings(f"oma as SSE → {target}")
    for scenario in SCENARIOS:
        with findings.case(f"{golden_name(scenario, 'oma')} as SSE"):
            body = in_framing("oma", scenario, "sse")
            want = translated([body], "oma", target, source_framing="sse")
            same(translated([body], "oma", target), want)
            assert not [e for e in decoded("oma", [body]) if type(e) is Malformed]  # as it was before detection
    findings.check()


@pytest.mark.parametrize("source", ["agentkit", "nest"])
@pytest.mark.parametrize("target", CODECS)
def test_agentkit_and_nest_as_ndjson_translate_as_with_ndjson_given(source: str, target: str) -> None:
    findings = Findings(f"{source} as NDJSON → {target}")
    for scenario in SCENARIOS:
        with findings.case(f"{golden_name(scenario, source)} as NDJSON"):
            body = in_framing(source, scenario, "ndjson")
            same(translated([body], source, target), translated([body], source, target, source_framing="ndjson"))
    findings.check()


@pytest.mark.parametrize("codec", CODECS)
def test_the_default_framing_reads_as_before(codec: str) -> None:
    body = golden("approval", codec)
    decoder = get(codec).decoder()
    assert decoder.framing is None  # not known before the first significant byte
    events = decoder.feed(body) + decoder.close()
    assert decoder.framing == get(codec).default_framing
    assert canonical(events) == canonical(decoded(codec, [body], get(codec).default_framing))


# -- chunking, offsets, explicit framing ------------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("codec", CODECS)
def test_detection_is_chunking_invariant_and_offsets_count_from_the_start(codec: str, framing: str) -> None:
    body = in_framing(codec, "tool-error", framing)
    sep = b"\n\n" if framing == "sse" else b"\n"
    second = body.index(sep) + len(sep)
    body = body[:second] + BAD[framing] + body[second:]  # a bad frame after the first
    cuts = chunkings(body)
    want = decoded(codec, cuts["whole"], framing)
    stream = cuts["whole"][0]
    bad = [e for e in want if type(e) is Malformed]
    assert [e.offset for e in bad] == [stream.index(BAD[framing])]
    for name, chunks in cuts.items():
        assert b"".join(chunks) == stream, name
        assert decoded(codec, chunks) == want, name


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("codec", CODECS)
def test_strict_errors_name_the_offset_in_the_stream(codec: str, framing: str) -> None:
    stream = BOM + b"\n\n" + BAD[framing]
    with pytest.raises(StreamError) as caught:
        decoded(codec, [stream[i : i + 1] for i in range(len(stream))], strict=True)
    assert (caught.value.frame, caught.value.offset) == (1, len(BOM) + 2)


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("codec", CODECS)
def test_an_explicit_framing_wins_over_what_the_bytes_look_like(codec: str, framing: str) -> None:
    other = "ndjson" if framing == "sse" else "sse"
    body = in_framing(codec, "plain-text", other)
    decoder = get(codec).decoder(framing)  # type: ignore[arg-type]
    events = decoder.feed(body) + decoder.close()
    assert decoder.framing == framing
    assert canonical(events) != canonical(decoded(codec, [body]))
    assert type(events[-1]) is Terminal and events[-1].status == "error"


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("codec", CODECS)
def test_after_detection_the_decoder_runs_its_plain_parser(codec: str, framing: str) -> None:
    """The hot path must not pay for detection: the detector hands over and is gone."""
    body = in_framing(codec, "plain-text", framing)
    decoder = get(codec).decoder()
    decoder.feed(BOM + b"\n")
    assert decoder.framing is None
    decoder.feed(body[:1])
    assert decoder.framing == framing
    assert type(decoder._parser) is {"sse": SSEParser, "ndjson": NDJSONParser}[framing]


@pytest.mark.parametrize("codec", CODECS)
def test_a_long_blank_start_stops_being_held_at_the_size_limit(codec: str) -> None:
    decoder = get(codec).decoder(max_event_size=64)
    decoder.feed(b"\n" * 64)
    assert decoder.framing is None
    decoder.feed(b"\n")
    assert decoder.framing == get(codec).default_framing


# -- nothing significant ----------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [[], [b""], [BOM], [b"\xef", b"\xbb\xbf"], [b"\n\n", b"\r\n"]], ids=repr)
@pytest.mark.parametrize("source", CODECS)
def test_an_input_with_nothing_significant_ends_with_the_one_truncation_terminal(
    source: str, chunks: list[bytes]
) -> None:
    events = decoded(source, chunks)
    assert len(events) == 1
    end = events[0]
    assert type(end) is Terminal and end.synthetic and end.failure.code == TRUNCATED_CODE
    for target in CODECS:
        out = translated(chunks, source, target)
        assert out == translated([], source, target, source_framing=get(source).default_framing)
        ends = [e for e in decoded(target, [out]) if type(e) is Terminal]
        assert len(ends) == 1 and ends[0].failure.code == TRUNCATED_CODE


def test_a_framing_name_from_outside_is_checked_into_its_type() -> None:
    assert [parse_framing(name) for name in FRAMINGS] == ["sse", "ndjson"]
    with pytest.raises(ValueError, match="unknown framing 'json': expected 'sse' or 'ndjson'"):
        parse_framing("json")

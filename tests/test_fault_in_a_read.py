"""A bad frame in the same read as good ones loses nothing (strict decoding, as the proxy reads).

Every frame decoded before the fault reaches the output (``StreamError.output``), then exactly
one terminal: the upstream's own when it came before the fault (bytes after a terminal end
nothing), else the fault's. Checked for every pair, every fault kind, the bad frame first, in
the middle or last in the read, with and without the terminal in the same read, in one read and
in a read per frame.
"""

from __future__ import annotations

import pytest

from streambridge import StreamError, Translator
from streambridge.events import Failure, Terminal

from .corpus import CODECS, Findings, canonical, decode, encode, same
from .test_laws import assert_well_ordered

#: bad frames, as each framing carries them
BAD = {
    "malformed JSON": b"{not json",
    "invalid UTF-8": b'{"x":"caf\xe9"}',
    "too deeply nested": b"[" * 2000 + b"]" * 2000,
}
FAULT = Terminal(status="error", failure=Failure(status="error", message="upstream fault", code="upstream_malformed"))


def frames_of(codec: str) -> list[bytes]:
    """A short conversation in ``codec`` as SSE frames: run start, text, a tool call, terminal."""
    from msgspec import Raw

    from streambridge.events import RunStart, TextDelta, ToolCall, ToolOutput

    events = [
        RunStart(run_id="r1"),
        TextDelta(text="Hello "),
        ToolCall(call_id="c1", name="lookup", input=Raw(b'{"q":1}')),
        ToolOutput(call_id="c1", output=Raw(b'"ok"')),
        TextDelta(text="world"),
        Terminal(status="succeeded"),
    ]
    data = encode(codec, events, framing="sse")
    # (an end marker after the terminal, such as ai-sdk's ``[DONE]``, is no frame of the run)
    return [f + b"\n\n" for f in data.split(b"\n\n") if f and f != b"data: " + DONE]


DONE = b"[DONE]"


def ends_with_marker(codec: str) -> bool:
    """Whether ``[DONE]`` after the terminal is the protocol's own end marker (no fault)."""
    try:
        decode(codec, b"".join(frames_of(codec)) + b"data: " + DONE + b"\n\n", strict=True)
    except StreamError:
        return False
    return True


def run(source: str, target: str, reads: list[bytes]) -> tuple[bytes, StreamError | None]:
    """What a proxy writes: each read's output, then on a fault what came before it and the end."""
    translator = Translator(source, target, source_framing="sse", strict=True)
    written = []
    for chunk in reads:
        try:
            written.append(translator.feed(chunk))
        except StreamError as exc:
            written.append(exc.output)
            written.append(translator.abort(FAULT))
            return b"".join(written), exc
        if translator.terminated:
            break
    written.append(translator.close())
    return b"".join(written), None


def reads_of(frames: list[bytes], one_read: bool) -> list[bytes]:
    return [b"".join(frames)] if one_read else frames


READS = {"one read": True, "a read per frame": False}
TRAILING = (b"data: [DONE]\n\n", b"data: {not json\n\n", b'data: {"kind":"text","text":"late"}\n\n')

# One test per source protocol walks every target and every case and fails once naming each
# failing one (tests/corpus.py, Findings): 27 tests instead of 2,025 parametrized ones.


@pytest.mark.parametrize("source", CODECS)
def test_every_frame_before_a_bad_one_reaches_the_client(source: str) -> None:
    findings = Findings(f"frames before a bad one, from {source}")
    for target in CODECS:
        for kind in sorted(BAD):
            for position in ("first", "middle", "last"):
                for reads, one_read in READS.items():
                    with findings.case(f"{source} → {target}, {kind}, {position}, {reads}"):
                        _check_frames_before_a_bad_one(source, target, kind, position, one_read)
    findings.check()


def _check_frames_before_a_bad_one(source: str, target: str, kind: str, position: str, one_read: bool) -> None:
    good = frames_of(source)[:-1]  # no terminal: the bad frame is the fault that ends the stream
    bad = b"data: " + BAD[kind] + b"\n\n"
    at = {"first": 1, "middle": len(good) // 2, "last": len(good)}[position]  # (the run start stays first)
    before = good[:at]
    out, exc = run(source, target, reads_of([*before, bad, *good[at:]], one_read))
    assert exc is not None and exc.kind in ("malformed", "encoding"), exc
    events = decode(target, out, strict=True)
    assert_well_ordered(target, events)
    assert events[-1].failure.code == "upstream_malformed"
    # everything the good frames before the fault said is there, in order
    expected = decode(target, encode(target, decode(source, b"".join(before))[:-1]))[:-1]
    same(canonical(events[: len(expected)]), canonical(expected))


@pytest.mark.parametrize("source", CODECS)
def test_bytes_after_the_terminal_end_nothing(source: str) -> None:
    findings = Findings(f"bytes after the terminal, from {source}")
    for target in CODECS:
        for trailing in TRAILING:
            for reads, one_read in READS.items():
                with findings.case(f"{source} → {target}, {trailing!r}, {reads}"):
                    _check_bytes_after_the_terminal(source, target, trailing, one_read)
    findings.check()


def _check_bytes_after_the_terminal(source: str, target: str, trailing: bytes, one_read: bool) -> None:
    frames = frames_of(source)
    out, exc = run(source, target, reads_of([*frames, trailing], one_read))
    clean, _ = run(source, target, [b"".join(frames)])
    same(out, clean)  # the upstream's own terminal, and nothing of what followed it
    if one_read and not (trailing == b"data: " + DONE + b"\n\n" and ends_with_marker(source)):
        assert exc is not None and exc.kind == "after-terminal", exc
    events = decode(target, out, strict=True)
    assert events[-1].status == "succeeded"


@pytest.mark.parametrize("source", CODECS)
def test_what_the_end_of_input_held_before_a_fault_travels_on_it(source: str) -> None:
    """NDJSON's last line without its newline is decoded at close: then the input ends without
    its terminal. The line is translated all the same, on the error."""
    from streambridge.codecs import get
    from streambridge.events import RunStart, TextDelta

    findings = Findings(f"the end of input held before a fault, from {source}")
    data = get(source).encoder("ndjson").encode([RunStart(run_id="r1"), TextDelta(text="Hello ")])  # no terminal
    for target in CODECS:
        with findings.case(f"{source} → {target}"):
            translator = Translator(source, target, source_framing="ndjson", strict=True)
            first = translator.feed(data[:-1])  # the last line's newline never comes
            with pytest.raises(StreamError) as ended:
                translator.close()
            assert ended.value.kind == "truncated"
            out = first + ended.value.output + translator.abort(FAULT)
            events = decode(target, out, strict=True)
            assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello "
            assert events[-1].failure.code == "upstream_malformed"
    findings.check()

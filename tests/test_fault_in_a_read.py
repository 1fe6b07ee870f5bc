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

from .corpus import CODECS, canonical, decode, encode
from .test_laws import assert_well_ordered

PAIRS = [(a, b) for a in CODECS for b in CODECS]
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


@pytest.mark.parametrize("one_read", [True, False], ids=["one read", "a read per frame"])
@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_every_frame_before_a_bad_one_reaches_the_client(
    source: str, target: str, kind: str, position: str, one_read: bool
) -> None:
    good = frames_of(source)[:-1]  # no terminal: the bad frame is the fault that ends the stream
    bad = b"data: " + BAD[kind] + b"\n\n"
    at = {"first": 1, "middle": len(good) // 2, "last": len(good)}[position]  # (the run start stays first)
    before = good[:at]
    out, exc = run(source, target, reads_of([*before, bad, *good[at:]], one_read))
    assert exc is not None and exc.kind in ("malformed", "encoding")
    events = decode(target, out, strict=True)
    assert_well_ordered(target, events)
    assert events[-1].failure.code == "upstream_malformed"
    # everything the good frames before the fault said is there, in order
    expected = decode(target, encode(target, decode(source, b"".join(before))[:-1]))[:-1]
    assert canonical(events[: len(expected)]) == canonical(expected)


@pytest.mark.parametrize("one_read", [True, False], ids=["one read", "a read per frame"])
@pytest.mark.parametrize(
    "trailing", [b"data: [DONE]\n\n", b"data: {not json\n\n", b'data: {"kind":"text","text":"late"}\n\n']
)
@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_bytes_after_the_terminal_end_nothing(source: str, target: str, trailing: bytes, one_read: bool) -> None:
    frames = frames_of(source)
    out, exc = run(source, target, reads_of([*frames, trailing], one_read))
    clean, _ = run(source, target, [b"".join(frames)])
    assert out == clean  # the upstream's own terminal, and nothing of what followed it
    if one_read and not (trailing == b"data: " + DONE + b"\n\n" and ends_with_marker(source)):
        assert exc is not None and exc.kind == "after-terminal"
    events = decode(target, out, strict=True)
    assert events[-1].status == "succeeded"


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_what_the_end_of_input_held_before_a_fault_travels_on_it(source: str, target: str) -> None:
    """NDJSON's last line without its newline is decoded at close: then the input ends without
    its terminal. The line is translated all the same, on the error."""
    from streambridge.codecs import get
    from streambridge.events import RunStart, TextDelta

    data = get(source).encoder("ndjson").encode([RunStart(run_id="r1"), TextDelta(text="Hello ")])  # no terminal
    translator = Translator(source, target, source_framing="ndjson", strict=True)
    first = translator.feed(data[:-1])  # the last line's newline never comes
    with pytest.raises(StreamError) as ended:
        translator.close()
    assert ended.value.kind == "truncated"
    out = first + ended.value.output + translator.abort(FAULT)
    events = decode(target, out, strict=True)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello "
    assert events[-1].failure.code == "upstream_malformed"

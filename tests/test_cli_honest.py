"""Honest validation: true byte offsets, messages that say what was expected, one size limit,
and bad first frames that neither precede the run start nor replace its id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streambridge import translate
from streambridge.codecs import StreamError, get
from streambridge.codecs.framing import SSEParser
from streambridge.events import Event, Malformed
from streambridge.transcripts import FrameCutter

from .cli_support import invoke, user_error

BOM = b"\xef\xbb\xbf"
META = b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n'
STEP = b'data: {"kind":"step-start"}\n\n'
TEXT = b'data: {"kind":"text","text":"hi"}\n\n'
DONE = b"event: done\ndata: {}\n\n"
OMA_TEXT = b'{"type":"text","data":"a"}\n'
OMA_DONE = b'{"type":"done","data":{}}\n'
LIMIT = 64  # a small size limit for the core tests (the CLI ones use the real 16 MiB)


@dataclass(frozen=True)
class Case:
    """A stream with one bad frame: its number, where it starts (the marker) and its kind."""

    codec: str
    data: bytes
    marker: bytes
    frame: int
    kind: str

    @property
    def offset(self) -> int:
        return self.data.index(self.marker)


def cases(limit: int = LIMIT) -> dict[str, Case]:
    big = b"x" * (limit + 10)
    sse_big = b'data: {"kind":"text","text":"' + big + b'"}\n\n'
    ndjson_big = b'{"type":"text","data":"' + big + b'"}\n'
    return {
        "sse-unterminated": Case(
            "nest", META + STEP + b'data: {"kind":"text","text":"hi"}', b'data: {"kind":"text","t', 3, "truncated"
        ),
        "sse-unterminated-after-blanks": Case(
            "nest", META + b"\n\n\n" + b'data: {"kind":"text"}\n', b'data: {"kind":"text"}', 2, "truncated"
        ),
        "sse-unterminated-multiline": Case("nest", META + STEP + b"id: 7\ndata: {\ndata: ", b"id: 7", 3, "truncated"),
        "ndjson-cut-off": Case("oma", OMA_TEXT + b'{"type":"reasoning","da', b'{"type":"reasoning', 2, "truncated"),
        "sse-malformed-middle": Case(
            "nest", META + STEP + b"data: {oops\n\n" + TEXT + DONE, b"data: {oops", 3, "malformed"
        ),
        "ndjson-malformed-middle": Case("oma", OMA_TEXT + b"{oops\n" + OMA_TEXT + OMA_DONE, b"{oops", 2, "malformed"),
        "sse-oversize": Case("nest", META + STEP + sse_big + TEXT + DONE, sse_big, 3, "oversize"),
        "ndjson-oversize": Case("oma", OMA_TEXT + ndjson_big + OMA_TEXT + OMA_DONE, ndjson_big, 2, "oversize"),
    }


CASES = cases()


def variants(case: Case) -> Iterator[tuple[str, Case]]:
    """The case as it is, after a BOM, and with CRLF or CR line ends (offsets count every byte)."""
    yield "plain", case
    yield "bom", Case(case.codec, BOM + case.data, case.marker, case.frame, case.kind)
    if not case.data.startswith(b"{"):  # SSE: CR and CRLF end lines too
        for name, end in (("crlf", b"\r\n"), ("cr", b"\r")):
            yield (
                name,
                Case(case.codec, case.data.replace(b"\n", end), case.marker.replace(b"\n", end), case.frame, case.kind),
            )


def chunkings(data: bytes) -> dict[str, list[bytes]]:
    return {
        "whole": [data],
        "bytes": [data[i : i + 1] for i in range(len(data))],
        "sevens": [data[i : i + 7] for i in range(0, len(data), 7)],
    }


def decoded(codec: str, chunks: list[bytes], strict: bool = False) -> list[Event]:
    decoder = get(codec).decoder(strict=strict, max_event_size=LIMIT)
    events: list[Event] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


# -- 1. offsets --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_frame_is_named_by_its_real_offset_however_chunked(name: str) -> None:
    for variant, case in variants(CASES[name]):
        for how, chunks in chunkings(case.data).items():
            bad = [e for e in decoded(case.codec, chunks) if type(e) is Malformed]
            assert [(e.frame, e.offset) for e in bad] == [(case.frame, case.offset)], (variant, how)
            with pytest.raises(StreamError) as caught:
                decoded(case.codec, chunks, strict=True)
            error = caught.value
            assert (error.frame, error.offset, error.kind) == (case.frame, case.offset, case.kind), (variant, how)
            assert str(error).startswith(f"{case.codec}: frame {case.frame} at byte {case.offset}: expected ")


def test_frames_after_an_oversize_one_keep_their_offsets() -> None:
    case = CASES["sse-oversize"]
    data = case.data.replace(TEXT, b"data: {oops\n\n" + TEXT)
    for how, chunks in chunkings(data).items():
        bad = [(e.frame, e.offset) for e in decoded("nest", chunks) if type(e) is Malformed]
        assert bad == [(3, case.offset), (4, data.index(b"data: {oops"))], how


def test_a_missing_terminal_is_due_at_the_end_of_input() -> None:
    for codec, data in (
        ("nest", META + STEP + TEXT),
        ("nest", (META + STEP + TEXT).replace(b"\n", b"\r\n")),
        ("oma", OMA_TEXT * 3),
    ):
        for how, chunks in chunkings(BOM + data).items():
            with pytest.raises(StreamError) as caught:
                decoded(codec, chunks, strict=True)
            error = caught.value
            assert (error.frame, error.offset, error.kind) == (4, len(BOM + data), "truncated"), how


def test_an_oversize_event_is_skipped_to_its_blank_line_wherever_the_chunks_end() -> None:
    event = b"data: " + b"x" * 100 + b"\nid: 5\ndata: more\n\n"
    for cut in range(len(event)):
        parser = SSEParser(max_event_size=LIMIT)
        frames = parser.feed(event[:cut]) + parser.feed(event[cut:] + b"data: ok\n\n") + parser.close()
        assert [(f.data, f.index, f.offset) for f in frames] == [(b"ok", 2, len(event))], cut
        assert [(p.index, p.offset, p.kind) for p in parser.problems] == [(1, 0, "oversize")], cut


def transcript(tmp_path: Path, case: Case, header: bytes = b"") -> Path:
    path = tmp_path / ("run.http" if header else "run.sse" if case.codec == "nest" else "run.ndjson")
    path.write_bytes(header + case.data)
    return path


def validate_findings(path: Path, codec: str) -> list[dict]:
    result = invoke("validate", path, "--protocol", codec, "--json")
    assert result.exit_code == 1, result.stdout
    return json.loads(result.stdout)["findings"]


RULE = {"truncated": "SB002", "malformed": "SB001"}
CLI_CASES = (
    "sse-unterminated",
    "sse-unterminated-after-blanks",
    "ndjson-cut-off",
    "sse-malformed-middle",
    "ndjson-malformed-middle",
)
CLI_VARIANTS = [(name, variant) for name in CLI_CASES for variant, _ in variants(CASES[name])]


@pytest.mark.parametrize(("name", "variant"), CLI_VARIANTS)
@pytest.mark.parametrize("header", [b"", b"HTTP 200\ncontent-type: text/plain\n\n"], ids=["body", "capture"])
def test_validate_and_convert_name_the_same_byte(tmp_path: Path, name: str, variant: str, header: bytes) -> None:
    """Offsets in the CLI count from the start of the file (a capture's header block included)."""
    case = dict(variants(CASES[name]))[variant]
    path = transcript(tmp_path, case, header)
    at = len(header) + case.offset
    found = [f for f in validate_findings(path, case.codec) if f["rule"] == RULE[case.kind]]
    assert [(f["frame"], f["offset"]) for f in found] == [(case.frame, at)]
    assert found[0]["message"].startswith("expected ")
    user_error(
        invoke("convert", path, "--from", case.codec, "--to", "agentkit", "--strict"),
        f"frame {case.frame} (byte {at}):",
    )
    warned = invoke("convert", path, "--from", case.codec, "--to", "agentkit", "-v")
    assert f"{case.codec}: frame {case.frame} at byte {at}: expected " in warned.stderr


# -- 2. what was expected, in words ----------------------------------------------------------

AK_START = b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'
BAD_INPUTS = {
    "agentkit-json": ("agentkit", AK_START + b"data: {oops\n\n"),
    "agentkit-field": ("agentkit", AK_START + b'data: {"type":"text_delta","messageId":3,"text":"x"}\n\n'),
    "agentkit-utf8": ("agentkit", AK_START + b'data: {"type":"status","messageId":"m1","label":"\xff"}\n\n'),
    "agentkit-carrier": (
        "agentkit",
        AK_START + b'data: {"type":"data-x","messageId":"m1","event":{"type":"nope"}}\n\n',
    ),
    "nest-json": ("nest", META + b"data: [1\n\n"),
    "nest-meta": ("nest", b"event: meta\ndata: {oops\n\n"),
    "nest-field": ("nest", META + b'data: {"kind":"text","text":3}\n\n'),
    "nest-after-terminal": ("nest", META + DONE + TEXT),
    "nest-no-terminal": ("nest", META + TEXT),
    "nest-unterminated": ("nest", META + b'data: {"kind":"text"'),
    "oma-json": ("oma", b"{oops\n"),
    "oma-text": ("oma", b'{"type":"text","data":3}\n'),
    "oma-done": ("oma", b'{"type":"done","data":3}\n'),
    "oma-shape": ("oma", b'{"type":"text","data":"a","errorInfo":3}\n'),
    "oma-oversize": ("oma", b'{"type":"text","data":"' + b"x" * 100 + b'"}\n'),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_strict_error_says_what_was_expected_in_words(name: str) -> None:
    codec, data = BAD_INPUTS[name]
    with pytest.raises(StreamError) as caught:
        decoded(codec, [data], strict=True)
    message = str(caught.value)
    head = f"{codec}: frame {caught.value.frame} at byte {caught.value.offset}: expected "
    assert message.startswith(head), message
    words = message[len(head) :]
    assert words[0].islower() and "expected" not in words and words == caught.value.expected, message


def test_the_unterminated_event_message_names_the_blank_line() -> None:
    data = META + STEP + b'data: {"kind":"text"'
    with pytest.raises(StreamError) as caught:
        decoded("nest", [data], strict=True)
    assert str(caught.value) == (
        f"nest: frame 3 at byte {len(META + STEP)}: expected the blank line that ends an SSE event; "
        "the stream ended inside the event"
    )


def test_the_cli_says_expected_once(tmp_path: Path) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(META + b"data: [1\n\n")
    line = user_error(
        invoke("convert", path, "--to", "oma", "--strict"), f"frame 2 (byte {len(META)}): nest: expected "
    )
    assert line.count(": expected ") == 1 and "expected expected" not in line
    found = validate_findings(path, "nest")
    assert found[0]["message"].startswith("expected one JSON object") and found[0]["message"].count("expected") == 1


# -- 3. one size limit -------------------------------------------------------------------------

MIB16 = 16 * 1024 * 1024
HUGE = b"x" * (MIB16 + 10)
HUGE_SSE = b'data: {"kind":"text","text":"' + HUGE + b'"}\n\n'
HUGE_NDJSON = b'{"type":"text","data":"' + HUGE + b'"}\n'


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Transcripts with a frame over the real limit (16 MiB), written once."""
    root = tmp_path_factory.mktemp("huge")
    files = {
        "nest": (root / "run.sse", META + STEP + HUGE_SSE + TEXT + DONE),
        "oma": (root / "run.ndjson", OMA_TEXT + HUGE_NDJSON + OMA_TEXT + OMA_DONE),
        "first": (root / "first.sse", HUGE_SSE + b"data: {}\n\n"),
        "then-meta": (root / "then-meta.sse", HUGE_SSE + META + DONE),
    }
    for path, data in files.values():
        path.write_bytes(data)
    return {name: path for name, (path, _) in files.items()}


HUGE_AT = {"nest": (3, len(META + STEP)), "oma": (2, len(OMA_TEXT))}


@pytest.mark.parametrize("codec", sorted(HUGE_AT))
def test_validate_reports_an_oversize_frame(huge: dict[str, Path], codec: str) -> None:
    found = validate_findings(huge[codec], codec)
    assert [(f["rule"], f["frame"], f["offset"]) for f in found] == [("SB003", *HUGE_AT[codec])]
    assert "(16 MiB)" in found[0]["message"]


@pytest.mark.parametrize("codec", sorted(HUGE_AT))
def test_convert_forwards_the_head_of_an_oversize_frame_warns_and_exits_1(
    huge: dict[str, Path], codec: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.ndjson"
    result = invoke("convert", huge[codec], "--to", "oma", "-o", out)
    assert result.exit_code == 1, result.stderr
    frame, offset = HUGE_AT[codec]
    assert f"{codec}: frame {frame} at byte {offset}: expected " in result.stderr and "(16 MiB)" in result.stderr
    parts = [json.loads(line) for line in out.read_bytes().splitlines()]
    cut = [p["data"]["event"] for p in parts if p["type"] == "data-malformed"]
    assert [(e["frame"], e["offset"]) for e in cut] == [(frame, offset)] and 0 < len(cut[0]["raw"]) <= 200
    assert parts[-1]["type"] == "done"


def test_each_oversize_frame_gets_its_warning_line(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    path.write_bytes(b"{oops\n" + HUGE_NDJSON + OMA_DONE)
    result = invoke("convert", path, "--from", "oma", "--to", "nest")
    assert result.exit_code == 1
    assert "oma: frame 1 at byte 0: expected one JSON" in result.stderr
    assert "oma: frame 2 at byte 6: expected an NDJSON line within the size limit (16 MiB)" in result.stderr


def test_convert_exits_0_for_a_bad_frame_it_forwards_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(META + b"data: {oops\n\n" + DONE)
    assert invoke("convert", path, "--to", "oma").exit_code == 0


def test_sniffing_says_the_first_frame_is_over_the_limit(huge: dict[str, Path]) -> None:
    user_error(
        invoke("convert", huge["first"], "--to", "oma"),
        "cannot tell the protocol",
        "first frame is larger than the limit (16 MiB)",
    )
    found = validate_findings(huge["first"], "nest")
    assert [(f["rule"], f["frame"], f["offset"]) for f in found][:1] == [("SB003", 1, 0)]


def test_frames_after_an_oversize_first_frame_can_tell_the_protocol(huge: dict[str, Path]) -> None:
    result = invoke("convert", huge["then-meta"], "--to", "oma")
    assert result.exit_code == 1 and "detected nest (sse)" in result.stderr
    assert "nest: frame 1 at byte 0: expected an SSE event within the size limit (16 MiB)" in result.stderr


def test_a_long_first_frame_under_the_limit_is_sniffed(tmp_path: Path) -> None:
    path = tmp_path / "long.sse"
    path.write_bytes(b'data: {"kind":"text","text":"' + b"y" * (2 * 1024 * 1024) + b'"}\n\n' + META + DONE)
    result = invoke("convert", path, "--to", "oma")
    assert "detected nest (sse)" in result.stderr


def test_validate_cuts_an_oversize_frame_into_pieces_as_it_arrives() -> None:
    data = META + b"data: " + b"z" * 1000 + b"\nid: 5\n\n" + TEXT
    for framing, body in (("sse", data), ("ndjson", OMA_TEXT + b"z" * 1000 + b"\n" + OMA_TEXT)):
        cutter = FrameCutter(framing, max_event_size=LIMIT)
        pieces = [p for i in range(0, len(body), 10) for p in cutter.feed(body[i : i + 10])] + cutter.close()
        assert b"".join(p.raw for p in pieces) == body
        assert max(len(p.raw) for p in pieces) <= 2 * LIMIT + 10  # never the whole frame
        assert [(q.index, q.kind) for p in pieces for q in p.problems] == [(2, "oversize")]


def test_a_directory_with_a_cut_frame_converts_every_file_and_exits_1(huge: dict[str, Path], tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "big.sse").write_bytes(huge["nest"].read_bytes())
    (inputs / "small.sse").write_bytes(META + TEXT + DONE)
    result = invoke("convert", inputs, "--to", "oma", "-o", tmp_path / "out")
    assert result.exit_code == 1, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["big.ndjson", "small.ndjson"]
    assert "streambridge: warning: " in result.stderr and "big.sse: nest: frame 3 at byte" in result.stderr


# -- 4. a bad first frame comes after the run start -------------------------------------------

RUN_LIMIT = 160
RUNS = {  # (run start, content, terminal) of each source, its run id R1
    "agentkit": (
        b'data: {"type":"turn_start","turnId":"R1","messageId":"M1"}\n\n',
        b'data: {"type":"text_delta","messageId":"M1","text":"hi"}\n\n',
        b'data: {"type":"turn_end","turnId":"R1","messageId":"M1","result":{"status":"succeeded","text":"hi","provider":"p"}}\n\n',
    ),
    "nest": (b'event: meta\ndata: {"runId":"R1","threadId":"th"}\n\n', STEP + TEXT, DONE),
    "oma": (b'{"type":"data-run-start","data":{"event":{"type":"run-start","runId":"R1"}}}\n', OMA_TEXT, OMA_DONE),
}
BAD_FRAMES = {
    ("malformed", "sse"): b"data: {bad\n\n",
    ("malformed", "ndjson"): b"{bad\n",
    ("oversize", "sse"): b'data: {"kind":"text","text":"' + b"x" * 300 + b'"}\n\n',
    ("oversize", "ndjson"): b'{"type":"text","data":"' + b"x" * 300 + b'"}\n',
}
TERMINALS = {"agentkit": {"turn_end"}, "nest": {"done", "error"}, "oma": {"done", "error"}}


def wire_frames(target: str, data: bytes) -> list[tuple[str, dict]]:
    """A target's output as (SSE event name, JSON payload) pairs."""
    if target == "oma":
        return [("", json.loads(line)) for line in data.splitlines()]
    out = []
    for block in data.split(b"\n\n"):
        fields = dict(line.split(b": ", 1) for line in block.splitlines() if b": " in line)
        if b"data" in fields:
            out.append((fields.get(b"event", b"").decode(), json.loads(fields[b"data"])))
    return out


def run_id_of_start(target: str, name: str, payload: dict) -> str | None:
    """The run id a target's run start says (oma carries it), None if the frame is no run start."""
    if target == "agentkit":
        return payload["turnId"] if payload["type"] == "turn_start" else None
    if target == "nest":
        return payload["runId"] if name == "meta" else None
    return payload["data"]["event"]["runId"] if payload["type"] == "data-run-start" else None


def tag(target: str, name: str, payload: dict) -> str:
    return name or payload.get("kind" if target == "nest" else "type", "")


def carried(target: str, payload: dict) -> dict:
    return payload["data"]["event"] if target == "oma" else payload["event"]


def translated_frames(source: str, target: str, data: bytes, size: int) -> list[tuple[str, dict]]:
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    return wire_frames(target, b"".join(translate(chunks, source, target, max_event_size=RUN_LIMIT)))


@pytest.mark.parametrize("target", sorted(RUNS))
@pytest.mark.parametrize("source", sorted(RUNS))
@pytest.mark.parametrize("bad", ["malformed", "oversize"])
def test_a_bad_frame_before_the_run_start_follows_it(source: str, target: str, bad: str) -> None:
    start, content, end = RUNS[source]
    frame = BAD_FRAMES[bad, "ndjson" if source == "oma" else "sse"]
    for stream, number in ((frame + start + content + end, 1), (start + frame + content + end, 2)):
        for size in (len(stream), 5):
            out = translated_frames(source, target, stream, size)
            assert run_id_of_start(target, *out[0]) == "R1", (stream, size, out[0])
            parts = [carried(target, p) for n, p in out if tag(target, n, p) == "data-malformed"]
            assert [(p["type"], p["frame"]) for p in parts] == [("malformed", number)]
            assert [tag(target, *f) in TERMINALS[target] for f in out].count(True) == 1
            assert tag(target, *out[-1]) in TERMINALS[target]


@pytest.mark.parametrize("source", sorted(RUNS))
def test_a_bad_frame_of_a_run_without_a_start_still_gets_through(source: str) -> None:
    _, content, end = RUNS[source]
    frame = BAD_FRAMES["malformed", "ndjson" if source == "oma" else "sse"]
    for stream in (frame, frame + content, frame + content + end):
        for size in (len(stream), 3):
            out = translated_frames(source, "agentkit", stream, size)
            names = [tag("agentkit", *f) for f in out]
            assert names[0] == "turn_start" and names.count("data-malformed") == 1 and names.count("turn_end") == 1
            assert names.index("data-malformed") == 1  # right after the invented start, before the content


# -- 5. each protocol in its own words ---------------------------------------------------------

OWN_WORDS = {  # a frame that names no kind, one of an unknown kind, and the terminal, in each protocol
    "agentkit": (
        b'data: {"messageId":"M1","text":"x"}\n\n',
        b'data: {"type":"sparkle","messageId":"M1"}\n\n',
        "type",
        "turn_end",
    ),
    "nest": (b'data: {"text":"x"}\n\n', b'data: {"kind":"sparkle"}\n\n', "kind", "event: done or event: error"),
    "oma": (b'{"data":"x"}\n', b'{"type":"sparkle","data":1}\n', "type", "done or error"),
}


@pytest.mark.parametrize("codec", sorted(OWN_WORDS))
def test_validate_names_each_protocols_own_fields(codec: str, tmp_path: Path) -> None:
    nameless, unknown, field, terminal = OWN_WORDS[codec]
    path = tmp_path / "run"
    path.write_bytes(RUNS[codec][0] + nameless + unknown)
    found = [(f["rule"], f["message"]) for f in validate_findings(path, codec) if f["rule"] in ("SB006", "SB010")]
    assert found == [
        ("SB006", f"a frame without a {field}"),
        ("SB006", f"unknown {field} 'sparkle'"),
        ("SB010", f"the stream ends without {terminal}"),
    ]
    with pytest.raises(StreamError) as caught:
        decoded(codec, [RUNS[codec][1]], strict=True)
    assert f"expected a terminal event before the end of input ({terminal}); the input ended" in str(caught.value)


def test_run_start_words_are_the_protocols() -> None:
    assert "a second turn_start" in json.dumps(
        json.loads(invoke("validate", "-", "--protocol", "agentkit", "--json", input=RUNS["agentkit"][0] * 2).stdout)
    )
    found = json.loads(invoke("validate", "-", "--protocol", "agentkit", "--json", input=RUNS["agentkit"][1]).stdout)
    assert "the stream does not open with turn_start" in [f["message"] for f in found["findings"]]

"""The SSE parser against the WHATWG EventSource rules: one test per edge case.

Each case is fed whole, per byte and in two halves: incremental parsing must not change it.
"""

from __future__ import annotations

import pytest

from streambridge.codecs.framing import Frame, NDJSONParser, SSEParser, ndjson_frame, sse_frame


def parse(data: bytes, **kwargs: int) -> list[Frame]:
    """Frames of ``data``, checked to be the same whole, per byte and split in two."""
    results = []
    for pieces in (
        [data],
        [data[i : i + 1] for i in range(len(data))],
        [data[: len(data) // 2], data[len(data) // 2 :]],
    ):
        parser = SSEParser(**kwargs)
        frames = [f for piece in pieces for f in parser.feed(piece)] + parser.close()
        results.append([(f.event, f.data, f.last_id, f.retry) for f in frames])
    assert results[0] == results[1] == results[2]
    parser = SSEParser(**kwargs)
    return parser.feed(data) + parser.close()


def datas(data: bytes) -> list[bytes]:
    return [f.data for f in parse(data)]


def test_bom_at_stream_start_is_skipped() -> None:
    assert datas(b"\xef\xbb\xbfdata: a\n\n") == [b"a"]


def test_bom_split_across_chunks_is_skipped() -> None:
    parser = SSEParser()
    frames = parser.feed(b"\xef") + parser.feed(b"\xbb") + parser.feed(b"\xbfdata: a\n\n")
    assert [f.data for f in frames] == [b"a"]


def test_only_the_first_bom_is_skipped() -> None:
    # a second BOM is part of the first line: the field name is then unknown
    assert datas(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [b"b"]


@pytest.mark.parametrize("data", [b"\n", b"\n\n\n", b"data: a\n\n\n", b"data: a\r\n\r\n\r\n"])
def test_extra_blank_lines_at_the_end_are_no_unterminated_event(data: bytes) -> None:
    parser = SSEParser()
    frames = parser.feed(data) + parser.close()
    assert [f.data for f in frames] == ([b"a"] if b"a" in data else [])
    assert parser.problems == []


def test_cr_only_line_endings() -> None:
    assert datas(b"data: a\r\rdata: b\r\r") == [b"a", b"b"]


def test_crlf_line_endings() -> None:
    assert datas(b"data: a\r\n\r\ndata: b\r\n\r\n") == [b"a", b"b"]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    frames = parser.feed(b"data: a\r") + parser.feed(b"\n\r") + parser.feed(b"\ndata: b\r\n\r\n")
    assert [f.data for f in frames] == [b"a", b"b"]


def test_only_one_space_after_the_colon_is_stripped() -> None:
    assert datas(b"data:  two\n\ndata:none\n\n") == [b" two", b"none"]


def test_data_without_colon_is_an_empty_value() -> None:
    assert datas(b"data\n\n") == [b""]


def test_empty_data_line_still_dispatches() -> None:
    assert datas(b"data:\n\n") == [b""]


def test_no_dispatch_without_a_data_field() -> None:
    assert datas(b"event: x\n\nid: 3\n\n: comment\n\n") == []


def test_several_data_lines_join_with_lf() -> None:
    assert datas(b"data: a\ndata: b\ndata:\n\n") == [b"a\nb\n"]


def test_comments_are_ignored_and_counted() -> None:
    parser = SSEParser()
    frames = parser.feed(b": ping\n\ndata: a\n: mid\n\n")
    assert [f.data for f in frames] == [b"a"]
    assert parser.comments == 2


def test_event_name_applies_to_one_event_only() -> None:
    frames = parse(b"event: meta\ndata: a\n\ndata: b\n\n")
    assert [(f.event, f.data) for f in frames] == [("meta", b"a"), ("", b"b")]


def test_last_event_id_persists_across_events() -> None:
    frames = parse(b"id: 7\ndata: a\n\ndata: b\n\n")
    assert [(f.last_id, f.own_id) for f in frames] == [("7", True), ("7", False)]


def test_event_id_is_committed_only_at_the_blank_line() -> None:
    # the id set inside an event that is never dispatched still becomes the last id
    frames = parse(b"data: a\n\nid: 5\n\ndata: b\n\n")
    assert [f.last_id for f in frames] == ["", "5"]


def test_id_containing_nul_is_ignored() -> None:
    frames = parse(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert [f.last_id for f in frames] == ["1", "1"]


def test_empty_id_resets_the_last_event_id() -> None:
    frames = parse(b"id: 1\ndata: a\n\nid\ndata: b\n\n")
    assert [f.last_id for f in frames] == ["1", ""]


def test_retry_accepts_ascii_digits_only() -> None:
    frames = parse(b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: \xd9\xa3\ndata: c\n\n")
    assert [f.retry for f in frames] == [1500, None, None]


def test_unterminated_event_at_eof_is_not_dispatched_but_reported() -> None:
    parser = SSEParser()
    frames = parser.feed(b"data: a\n\ndata: cut") + parser.close()
    assert [f.data for f in frames] == [b"a"]
    assert len(parser.problems) == 1
    assert parser.problems[0].index == 2
    assert b"cut" in parser.problems[0].raw


def test_invalid_utf8_is_kept_as_bytes_and_decodes_to_replacement() -> None:
    (frame,) = parse(b"event: \xff\ndata: \xfe\n\n")
    assert frame.event == "\ufffd"
    assert frame.data.decode("utf-8", "replace") == "\ufffd"


def test_line_starting_with_a_space_is_an_unknown_field() -> None:
    assert datas(b" data: a\ndata: b\n\n") == [b"b"]


def test_unknown_fields_are_ignored() -> None:
    assert datas(b"foo: bar\ndata: a\n\n") == [b"a"]


def test_field_names_are_case_sensitive() -> None:
    assert datas(b"Data: a\ndata: b\n\n") == [b"b"]


def test_extra_blank_lines_between_events_are_harmless() -> None:
    assert datas(b"\n\n\ndata: a\n\n\n\ndata: b\n\n") == [b"a", b"b"]


def test_event_over_the_size_limit_is_reported_and_skipped() -> None:
    parser = SSEParser(max_event_size=64)
    frames = parser.feed(b"data: " + b"x" * 100 + b"\n\ndata: ok\n\n") + parser.close()
    assert [f.data for f in frames] == [b"ok"]
    assert "larger than the limit" in str(parser.problems[0])


def test_oversize_event_arriving_in_pieces_is_reported_once() -> None:
    parser = SSEParser(max_event_size=64)
    frames = []
    for _ in range(20):
        frames += parser.feed(b"x" * 10)
    frames += parser.feed(b"\n\ndata: ok\n\n") + parser.close()
    assert [f.data for f in frames] == [b"ok"]
    assert len(parser.problems) == 1


def test_no_line_length_cap_below_the_event_limit() -> None:
    big = b"y" * 600_000  # over aiohttp's 512 KiB LineTooLong limit
    assert datas(b"data: " + big + b"\n\n") == [big]


def test_frames_know_their_number_and_offset() -> None:
    frames = parse(b"data: a\n\n: c\n\nevent: e\ndata: b\n\n")
    assert [(f.index, f.offset) for f in frames] == [(1, 0), (2, 14)]


def test_writer_emits_lf_only_and_splits_multiline_data() -> None:
    assert sse_frame(b"{}") == b"data: {}\n\n"
    assert sse_frame(b"{}", "done") == b"event: done\ndata: {}\n\n"
    assert sse_frame(b"{}", "", "4") == b"id: 4\ndata: {}\n\n"
    assert sse_frame(b"a\r\nb") == b"data: a\ndata: b\n\n"
    assert datas(sse_frame(b"a\nb")) == [b"a\nb"]


def test_ndjson_lines_skip_blanks_and_strip_cr() -> None:
    parser = NDJSONParser()
    frames = parser.feed(b'{"a":1}\r\n\n  \n{"b":') + parser.feed(b"2}") + parser.close()
    assert [f.data for f in frames] == [b'{"a":1}', b'{"b":2}']


def test_ndjson_skips_one_bom_at_stream_start_however_split() -> None:
    parser = NDJSONParser()
    frames = (
        parser.feed(b"\xef") + parser.feed(b"\xbb") + parser.feed(b'\xbf{"a":1}\n\xef\xbb\xbf{}\n') + parser.close()
    )
    assert [(f.data, f.offset) for f in frames] == [(b'{"a":1}', 3), (b"\xef\xbb\xbf{}", 11)]


def test_ndjson_writer_wraps_named_events() -> None:
    assert ndjson_frame(b"{}") == b"{}\n"
    assert ndjson_frame(b'{"runId":"r"}', "meta") == b'{"event":"meta","data":{"runId":"r"}}\n'


@pytest.mark.parametrize("size", [10, 1000])
def test_ndjson_oversize_line_is_reported(size: int) -> None:
    parser = NDJSONParser(max_event_size=64)
    frames = parser.feed(b"x" * size) + parser.feed(b'\n{"ok":1}\n') + parser.close()
    assert [f.data for f in frames] == ([b'{"ok":1}'] if size > 64 else [b"x" * size, b'{"ok":1}'])
    assert len(parser.problems) == (1 if size > 64 else 0)


# -- the hot path: runs of plain frames handed to a consumer --------------------------------


def _handed(data: bytes, decline_at: int | None = None) -> tuple[list[tuple[bytes, str]], list[Frame], SSEParser]:
    """What a parser with a consumer hands on, fed whole: the payloads the consumer took (with
    the id each carried), the frames of the rest, and the parser (for its state)."""
    taken: list[tuple[bytes, str]] = []

    def consume(blocks, skip, ids):  # type: ignore[no-untyped-def]
        count = len(blocks) if decline_at is None else min(len(blocks), max(decline_at - len(taken), 0))
        for i in range(count):
            taken.append((blocks[i][skip:], "" if ids is None else ids[i][4:].decode()))
        return count

    parser = SSEParser()
    parser.on_plain = consume
    frames = parser.feed(data)
    return taken, frames, parser


NUMBERED = b"id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 30\ndata: c\n\n"


@pytest.mark.parametrize(
    "data",
    [
        b"data: a\n\ndata: b\n\n",
        NUMBERED,
        NUMBERED + b"event: done\ndata: {}\n\n",
        b"id: x1\ndata: a\n\nid: 2\ndata: b\n\n",  # an id that is not a number
        b"id: \ndata: a\n\n",  # an empty id resets the last event id
        b"id:5\ndata: a\n\n",  # no space after the colon: still the id 5
        b"id: 1id: 2\ndata: a\n\n",
        b"id: 1\n\ndata: a\n\n",  # an id alone, then data under it
        b"id: 1\ndata: a\ndata: b\n\n",
        b"id: 1\ndata: a\n\n\nid: 2\ndata: b\n\n",  # an extra blank line
        b"id: 5id: 6\ndata: a\n\nid: 7\ndata: b\n\n",
        b"id: 1\ndata: a\n\ndata: x\nid: 3\n\n",  # data before id
        b"id: 1\ndata: a\n\n\nid: 2\n\n",
    ],
)
def test_the_hot_path_hands_on_what_the_parser_delivers(data: bytes) -> None:
    """Taken payloads plus the remaining frames are the frames a parser without a consumer
    delivers, with the same ids, and the parser ends in the same state."""
    plain = SSEParser()
    expected = plain.feed(data)
    for decline_at in (None, 0, 1, 2):
        taken, frames, parser = _handed(data, decline_at)
        own = [(f.data, f.last_id if f.own_id else "") for f in expected[: len(taken)]]
        assert taken == own
        rest = [(f.data, f.last_id, f.own_id, f.index, f.offset) for f in expected[len(taken) :]]
        assert [(f.data, f.last_id, f.own_id, f.index, f.offset) for f in frames] == rest
        assert (parser._index, parser._pos, parser._last_id, parser._id_buffer) == (
            plain._index,
            plain._pos,
            plain._last_id,
            plain._id_buffer,
        )


def test_numbered_frames_reach_the_consumer_as_one_run() -> None:
    runs: list[list[str]] = []

    def consume(blocks, skip, ids):  # type: ignore[no-untyped-def]
        runs.append([i[4:].decode() for i in ids] if ids is not None else [])
        return len(blocks)

    parser = SSEParser()
    parser.on_plain = consume
    assert parser.feed(NUMBERED) == []
    assert runs == [["1", "2", "30"]]


@pytest.mark.parametrize(
    "data",
    [
        b'event: agentfootprint.stream.token\ndata: {"a":1}\n\n' * 3,
        b"event: \ndata: x\n\n",  # an empty name
        b"event: a:b\ndata:  two spaces\n\n",  # a colon in the name; one space stripped from the data
        b"id: 7\n\nevent: x\ndata: y\n\n",  # the last event id persists onto a named event
        b"event: x\ndata: y\n\nevent: done\ndata: {}\n\ndata: plain\n\n",
        b"event: x\ndata: caf\xc3\xa9\n\nevent: \xff\ndata: y\n\n",  # UTF-8, and a name that is not
        b"event:x\ndata: y\n\nevent: x\ndata:y\n\n",  # no space after a colon: the line rules
        b"event: x\nevent: z\ndata: y\n\n",  # the last name wins
    ],
)
def test_named_one_line_events_parse_as_the_line_rules_say(data: bytes) -> None:
    """Named one-line events (agentfootprint names every frame) take a quicker way through the
    parser when fed whole; per byte they take the line rules: both deliver the same frames,
    numbered and placed the same."""
    whole = SSEParser().feed(data)
    bytewise = SSEParser()
    frames = [f for i in range(len(data)) for f in bytewise.feed(data[i : i + 1])]
    assert [(f.event, f.data, f.last_id, f.own_id, f.index, f.offset) for f in whole] == [
        (f.event, f.data, f.last_id, f.own_id, f.index, f.offset) for f in frames
    ]
    assert parse(data)  # (and whole, per byte and in halves agree on names, data and ids)

"""``streambridge diff``: semantic comparison, within and across protocols."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path

import pytest

from streambridge import diff, transcripts
from streambridge.diff import normalise

from .cli_support import CAPTURES, GOLDEN, invoke, on_terminal, translated, user_error
from .corpus import FILES, SCENARIOS


def test_a_file_equals_itself() -> None:
    result = invoke("diff", GOLDEN / "approval/nest.sse", GOLDEN / "approval/nest.sse")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "no differences"


@pytest.mark.parametrize("target", sorted(FILES))
@pytest.mark.parametrize("source", sorted(FILES))
def test_a_translation_says_the_same_as_its_source(tmp_path: Path, source: str, target: str) -> None:
    for scenario in ("approval", "tool-denied", "interleaved-messages", "unknown-kinds", "truncated"):
        original = GOLDEN / scenario / FILES[source]
        out = tmp_path / f"{scenario}.{target}"
        out.write_bytes(translated(source, target, original.read_bytes()))
        result = invoke("diff", original, out)
        assert result.exit_code == 0, (scenario, result.stdout)


def test_chunking_and_generated_ids_are_not_differences() -> None:
    # oma says the turn as one text event, nest as three deltas; run ids differ.
    result = invoke("diff", GOLDEN / "plain-text/oma.ndjson", GOLDEN / "plain-text/nest.sse")
    assert result.exit_code == 0, result.stdout
    assert "compared: what both say natively" in result.stdout


def test_call_ids_are_compared_by_position_unless_exact_ids(tmp_path: Path) -> None:
    original = GOLDEN / "two-tools-one-step/nest.sse"
    renamed = tmp_path / "renamed.sse"
    data = original.read_bytes()
    ids = sorted({part.split(b'"')[0] for part in data.split(b'"id":"')[1:]})
    for i, call_id in enumerate(ids):
        data = data.replace(call_id, f"other-{i}".encode())
    renamed.write_bytes(data)
    assert invoke("diff", original, renamed).exit_code == 0
    exact = invoke("diff", original, renamed, "--exact-ids")
    assert exact.exit_code == 1
    assert "other-0" in exact.stdout


def test_a_real_difference_is_shown_with_frames_and_exit_1() -> None:
    result = invoke("diff", GOLDEN / "cancelled/agentkit.sse", GOLDEN / "cancelled/nest.sse")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "@@ event 3 of A (frame 5), event 3 of B (frame 7): replace" in lines
    assert any(line.startswith("- A frame 5: terminal") and "Stopped by user." in line for line in lines)
    assert any(line.startswith("+ B frame 7: terminal") and "The run was cancelled." in line for line in lines)
    assert lines[-1] == "1 difference(s)"


def test_unknown_kinds_count_across_protocols() -> None:
    result = invoke("diff", GOLDEN / "unknown-kinds/agentkit.sse", GOLDEN / "unknown-kinds/nest.sse")
    assert result.exit_code == 1
    assert "'handoff'" not in result.stdout and '"name":"handoff"' in result.stdout


def test_max_limits_the_differences_shown(tmp_path: Path) -> None:
    original = GOLDEN / "approval/nest.sse"
    edited = tmp_path / "edited.sse"
    edited.write_bytes(original.read_bytes().replace(b"damaged", b"broken").replace(b"business days", b"days"))
    assert invoke("diff", original, edited).stdout.count("@@") >= 2
    result = invoke("diff", original, edited, "--max", "1")
    assert result.exit_code == 1
    assert sum(line.startswith("@@") for line in result.stdout.splitlines()) == 1
    assert "more difference(s)" in result.stdout


def test_a_truncated_stream_differs_from_a_complete_one() -> None:
    result = invoke("diff", GOLDEN / "truncated/oma.ndjson", CAPTURES / "01-chat-read-only.http")
    assert result.exit_code == 1
    assert '"code":"truncated"' in result.stdout


def test_diff_bad_inputs_are_user_errors(tmp_path: Path) -> None:
    good = GOLDEN / "plain-text/nest.sse"
    user_error(invoke("diff", good, tmp_path / "none.sse"), "none.sse")
    user_error(invoke("diff", GOLDEN / "plain-text/README.md", good), "README.md", "--protocol-a")
    user_error(invoke("diff", good, GOLDEN / "plain-text/README.md"), "--protocol-b")
    user_error(invoke("diff", good, good, "--protocol-a", "bad"), "--protocol-a", "'bad'")


# -- streaming: frames, windows, early stop, bounded memory ----------------------------------


def _nest(cycles: int, text: bytes = b"more, ") -> list[bytes]:
    """A nest run as a list of frames (frame N is ``frames[N - 1]``): per cycle a step with
    reasoning, three text deltas, a tool call and its output."""
    frames = [b'event: meta\ndata: {"runId":"run-1","threadId":"thr-1"}\n\n']
    for i in range(cycles):
        frames += [
            b'data: {"kind":"step-start"}\n\n',
            b'data: {"kind":"reasoning","text":"thinking %d"}\n\n' % i,
            b'data: {"kind":"text","text":"part %d, "}\n\n' % i,
            b'data: {"kind":"text","text":"%s"}\n\n' % text,
            b'data: {"kind":"text","text":"done. "}\n\n',
            b'data: {"kind":"tool-input-available","id":"call-%d","name":"lookup","input":{"q":%d},"toolKind":"read"}\n\n'
            % (i, i),
            b'data: {"kind":"tool-output","id":"call-%d","output":{"rows":%d}}\n\n' % (i, i),
            b'data: {"kind":"step-finish"}\n\n',
        ]
    frames.append(b"event: done\ndata: {}\n\n")
    return frames


def _frame_of(cycle: int, member: int) -> int:
    """The frame number of a cycle's member (0 step-start ... 5 tool call, 6 its output). Its
    events: the run start, then per cycle reasoning, text, call and output (event 2 + 4 x
    cycle + 0 to 3: nest's plain step brackets are implied ones)."""
    return 2 + 8 * cycle + member


def _write(path: Path, frames: list[bytes]) -> Path:
    path.write_bytes(b"".join(frames))
    return path


def _hunks(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line[:1] in "@-+"]


@pytest.fixture
def small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of 256 bytes: every transcript spans many pieces, so frames are located by the
    second pass and a frame boundary often falls between two reads."""
    monkeypatch.setattr(transcripts, "CHUNK_SIZE", 256)


@pytest.mark.usefixtures("small_reads")
def test_a_changed_event_is_one_replace_with_its_frames(tmp_path: Path) -> None:
    frames = _nest(50)
    edited = list(frames)
    call = _frame_of(20, 5)
    edited[call - 1] = edited[call - 1].replace(b'"q":20', b'"q":"changed"')
    result = invoke("diff", _write(tmp_path / "a.sse", frames), _write(tmp_path / "b.sse", edited))
    assert result.exit_code == 1
    assert _hunks(result.stdout) == [
        f"@@ event 84 of A (frame {call}), event 84 of B (frame {call}): replace",
        f'- A frame {call}: tool-call {{"callId":"call#21","input":{{"q":20}},"name":"lookup"}}',
        f'+ B frame {call}: tool-call {{"callId":"call#21","input":{{"q":"changed"}},"name":"lookup"}}',
    ]  # the output after it still joins the changed call
    assert result.stdout.splitlines()[-1] == "1 difference(s)"


@pytest.mark.usefixtures("small_reads")
def test_a_deleted_event_is_one_delete_with_its_frame(tmp_path: Path) -> None:
    frames = _nest(50)
    output = _frame_of(30, 6)
    edited = frames[: output - 1] + frames[output:]
    result = invoke("diff", _write(tmp_path / "a.sse", frames), _write(tmp_path / "b.sse", edited))
    lines = _hunks(result.stdout)
    assert lines[0].startswith(f"@@ event 125 of A (frame {output}), event 125 of B (") and lines[0].endswith(
        ": delete"
    )
    assert lines[1:] == [f'- A frame {output}: tool-output {{"callId":"call#31","output":{{"rows":30}}}}']


@pytest.mark.usefixtures("small_reads")
def test_inserted_events_are_one_insert_and_later_ids_still_join(tmp_path: Path) -> None:
    frames = _nest(50)
    at = _frame_of(40, 7)  # before the step's finish: a call and its output B has in addition
    extra = [
        b'data: {"kind":"tool-input-available","id":"extra","name":"extra","input":{},"toolKind":"read"}\n\n',
        b'data: {"kind":"tool-output","id":"extra","output":1}\n\n',
        b'data: {"kind":"reaction","emoji":"+1"}\n\n',
    ]
    edited = frames[: at - 1] + extra + frames[at - 1 :]
    result = invoke("diff", _write(tmp_path / "a.sse", frames), _write(tmp_path / "b.sse", edited))
    assert result.exit_code == 1
    lines = _hunks(result.stdout)
    assert lines[0].startswith("@@ event 166 of A (") and lines[0].endswith(f"event 166 of B (frame {at}): insert")
    assert [line.split(":")[0] for line in lines[1:]] == [
        f"+ B frame {at}",
        f"+ B frame {at + 1}",
        f"+ B frame {at + 2}",
    ]
    assert '"callId":"call#42","input":{},"name":"extra"' in lines[1]  # B numbers its own calls
    assert result.stdout.splitlines()[-1] == "1 difference(s)"  # and its call#43 joins A's call#42


@pytest.mark.usefixtures("small_reads")
@pytest.mark.parametrize("codec", ["nest", "oma"])
def test_frames_found_in_two_passes_are_those_read_frame_by_frame(tmp_path: Path, codec: str) -> None:
    """A file is decoded in whole-frame pieces and its reported frames found by a second pass;
    stdin is decoded frame by frame at once: both name the same frames."""
    original = tmp_path / f"a.{codec}"
    original.write_bytes(translated("nest", codec, b"".join(_nest(60))) if codec != "nest" else b"".join(_nest(60)))
    data = original.read_bytes()
    edited = tmp_path / f"b.{codec}"
    edited.write_bytes(
        data.replace(b"thinking 7", b"thinking seven").replace(b"part 33", b"part 3").replace(b"done.", b"done!", 1)
    )
    both = invoke("diff", original, edited)
    a_stdin = invoke("diff", "-", edited, input=data)
    b_stdin = invoke("diff", original, "-", input=edited.read_bytes())
    assert both.exit_code == a_stdin.exit_code == b_stdin.exit_code == 1
    assert len(_hunks(both.stdout)) > 6
    assert _hunks(both.stdout) == _hunks(a_stdin.stdout) == _hunks(b_stdin.stdout)


def test_frames_agree_across_the_golden_corpus() -> None:
    """Golden scenarios against the next one (each pair in one of the protocols): the frames
    of the second pass are those of frame-by-frame reading."""
    pairs = list(itertools.pairwise(SCENARIOS))
    for offset, (codec, name) in enumerate(FILES.items()):
        for first, second in pairs[offset :: len(FILES)]:
            a, b = GOLDEN / first / name, GOLDEN / second / name
            files = "\n".join(diff.diff_files(a, b).lines())
            piped = invoke("diff", "-", b, input=a.read_bytes())
            assert _hunks(files) == _hunks(piped.stdout), (codec, first, second)


def test_max_stops_after_n_differences_and_reads_no_further(tmp_path: Path) -> None:
    frames = _nest(4000)  # 32,002 frames
    edited = [frame.replace(b'"q":1', b'"q":-1') for frame in frames]  # calls 1, 10-19, 100-199, ...
    a, b = _write(tmp_path / "a.sse", frames), _write(tmp_path / "b.sse", edited)
    result = invoke("diff", a, b, "--max", "3")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert sum(line.startswith("@@") for line in lines) == 3
    assert lines[-2:] == [
        "... more difference(s) follow: stopped after 3 (--max shows more)",
        "stopped after 3 difference(s)",
    ]
    assert "stopped at event" in lines[0]
    found = diff.diff_files(a, b, limit=3)
    assert found.stopped and max(found.read) < a.stat().st_size / 4  # the rest is never read
    assert len(diff.diff_files(a, b, limit=10**6).hunks) == 1111  # every one when asked


def test_max_must_be_at_least_one() -> None:
    good = GOLDEN / "plain-text/nest.sse"
    user_error(invoke("diff", good, good, "--max", "0"), "--max", "greater than or equal to 1")


def test_identical_transcripts_cost_one_comparison_per_event(tmp_path: Path) -> None:
    """Linear work: in lockstep each event is compared once, whatever the length."""
    for cycles in (250, 2500):
        path = _write(tmp_path / f"{cycles}.sse", _nest(cycles))
        result = diff.diff_files(path, path)
        assert not result.hunks and result.events == (cycles * 4 + 3, cycles * 4 + 3)
        assert result.comparisons == cycles * 4 + 3
        assert result.frames_located == []  # nothing to locate: no second pass
    assert invoke("diff", path, path).exit_code == 0


def test_each_difference_costs_a_bounded_number_of_comparisons(tmp_path: Path) -> None:
    frames = _nest(2000)
    edited = [frame.replace(b'"q":1', b'"q":-1') for frame in frames]
    result = diff.diff_files(_write(tmp_path / "a.sse", frames), _write(tmp_path / "b.sse", edited), limit=10**6)
    window = (diff.WINDOW + 1) ** 2 * diff.CONFIRM
    assert len(result.hunks) == 1111
    assert result.comparisons <= result.events[0] + len(result.hunks) * window


def _ui_run(cycles: int) -> list[bytes]:
    """A nest run whose decoder keeps nothing that grows (no answer text for a terminal, no
    tool calls): per cycle merged reasoning, a UI component with a new id, and an update of
    the one three cycles before (a join to check)."""
    frames = [b'event: meta\ndata: {"runId":"run-1","threadId":"thr-1"}\n\n']
    for i in range(cycles):
        frames += [
            b'data: {"kind":"step-start"}\n\n',
            b'data: {"kind":"reasoning","text":"thinking %d"}\n\n' % i,
            b'data: {"kind":"reasoning","text":" and more"}\n\n',
            b'data: {"kind":"ui","id":"ui-%d","component":"card","props":{"n":%d}}\n\n' % (i, i),
            b'data: {"kind":"ui","id":"ui-%d","component":"card","props":{"n":%d}}\n\n' % (max(i - 3, 0), i),
            b'data: {"kind":"step-finish"}\n\n',
        ]
    frames.append(b"event: done\ndata: {}\n\n")
    return frames


def test_memory_does_not_grow_with_the_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten times the frames, the same peak: with reads and the id memory made small (so that
    both runs are past their first reads and the id memory is full at a size a test can
    afford), what diff holds is the same however long the input. (What does grow in other
    transcripts is what the decoders keep: the answer text a terminal carries, the ids of
    announced calls.)"""
    monkeypatch.setattr(transcripts, "CHUNK_SIZE", 4096)
    monkeypatch.setattr(normalise, "ID_MEMORY", 64)
    peaks = []
    for cycles in (150, 1500):  # 902 and 9,002 frames
        frames = _ui_run(cycles)
        a = _write(tmp_path / f"{cycles}a.sse", frames)
        b = _write(tmp_path / f"{cycles}b.sse", [*frames[:-3], frames[-3].replace(b"card", b"tile"), *frames[-2:]])
        tracemalloc.start()
        try:
            result = diff.diff_files(a, b)  # the difference at the end: both passes read it all
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert [hunk.tag for hunk in result.hunks] == ["replace"]
        assert result.frames_located == [0, 1]
    assert peaks[1] < 1.2 * peaks[0], peaks


def test_a_long_text_is_compared_by_digest_in_bounded_memory(tmp_path: Path) -> None:
    deltas = [b'data: {"kind":"text","text":"word %d "}\n\n' % i for i in range(20000)]
    run = [
        b'event: meta\ndata: {"runId":"r"}\n\n',
        b'data: {"kind":"step-start"}\n\n',
        *deltas,
        b"event: done\ndata: {}\n\n",
    ]
    a = _write(tmp_path / "a.sse", run)
    rechunked = _write(tmp_path / "b.sse", [*run[:2], b'data: {"kind":"text","text":"word 0 word 1 "}\n\n', *run[4:]])
    changed = _write(tmp_path / "c.sse", [*run[:-3], run[-3].replace(b"word", b"WORD"), run[-2], run[-1]])
    assert invoke("diff", a, rechunked).exit_code == 0  # how the text was chunked is no difference
    result = invoke("diff", a, changed)
    assert result.exit_code == 1
    lines = _hunks(result.stdout)
    assert lines[0] == "@@ event 2 of A (frame 3), event 2 of B (frame 3): replace"
    assert lines[1].startswith('- A frame 3: text {"text":"word 0 word 1 ') and "characters)" in lines[1]
    assert len(lines) == 5  # the text and the terminal's assembled text


def test_a_text_run_keeps_at_most_the_text_limit() -> None:
    run = normalise._TextRun("text", None, {"text": ""}, 1, None)
    for _ in range(10000):
        run.extend(["0123456789"])
        assert sum(map(len, run.parts)) <= normalise.TEXT_LIMIT + 10
    value, shown = run.value()
    assert value["chars"] == 100000 and shown is not None and shown.startswith("0123456789")


def test_no_progress_unless_stderr_is_a_terminal(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.sse", _nest(200))
    other = _write(tmp_path / "b.sse", _nest(200, text=b"other"))
    quiet = invoke("diff", path, other)
    assert quiet.exit_code == 1 and quiet.stderr == ""
    shown = on_terminal("diff", path, other, cwd=tmp_path, stdout=False)  # stderr on a real terminal
    assert shown.returncode == 1 and shown.stdout.decode() == quiet.stdout
    assert b"@@" not in shown.screen  # the bar never shares a line with the report

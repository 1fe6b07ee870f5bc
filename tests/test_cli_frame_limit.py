"""A frame over the size limit is refused, never written (issue 29.2): what streambridge writes
validates clean and comes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambridge.codecs.framing import DEFAULT_MAX_EVENT_SIZE

from .cli_support import invoke

_DELTA = "x" * (64 * 1024)


@pytest.fixture(scope="module")
def big_answer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A nest stream whose answer (text deltas of 64 KiB each) is 1 MiB over the frame limit."""
    deltas = (DEFAULT_MAX_EVENT_SIZE + 1024 * 1024) // len(_DELTA)
    frames = [
        'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n',
        'data: {"kind":"step-start"}\n\n',
        *[f'data: {{"kind":"text","text":"{_DELTA}"}}\n\n' for _ in range(deltas)],
        'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":1}}\n\n',
        "event: done\ndata: {}\n\n",
    ]
    path = tmp_path_factory.mktemp("big") / "big.sse"
    path.write_text("".join(frames))
    return path


@pytest.mark.parametrize(("target", "frame"), [("agentkit", "turn_end"), ("oma", "done")])
def test_convert_refuses_a_frame_over_the_limit_and_leaves_the_output_alone(
    big_answer: Path, tmp_path: Path, target: str, frame: str
) -> None:
    out = tmp_path / "out"
    out.write_bytes(b"previous\n")
    result = invoke("convert", big_answer, "--to", target, "-o", out)
    assert result.exit_code == 1, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("streambridge: error: ")]
    assert f"{target} cannot carry this stream: its {frame} frame would be 17.0 MiB" in line
    assert "over the 16 MiB frame limit" in line
    assert out.read_bytes() == b"previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no part file left


def test_convert_to_a_new_file_leaves_no_file(big_answer: Path, tmp_path: Path) -> None:
    result = invoke("convert", big_answer, "--to", "agentkit", "-o", tmp_path / "new.sse")
    assert result.exit_code == 1, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_replay_refuses_it_too(big_answer: Path) -> None:
    result = invoke("replay", big_answer, "--to", "oma")
    assert result.exit_code == 1, result.stderr
    assert f"{big_answer}: oma cannot carry this stream: its done frame" in result.stderr
    assert result.stdout_bytes == b""


def test_a_protocol_that_streams_the_answer_in_parts_writes_it_and_it_validates(
    big_answer: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.sse"
    assert invoke("convert", big_answer, "--to", "ai-sdk", "-o", out).exit_code == 0
    result = invoke("validate", out)
    assert result.exit_code == 0, result.stdout
    assert "clean" in result.stdout

"""``streambridge convert``: files, stdin/stdout, directories, sniffing, strictness, progress."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from streambridge.cli import convert
from streambridge.cli.transcripts import Source

from .cli_support import CAPTURES, GOLDEN, copy_golden, invoke, translated, user_error
from .corpus import FILES, ROOT, capture_body


@pytest.mark.parametrize("source", sorted(FILES))
@pytest.mark.parametrize("target", sorted(FILES))
def test_a_file_converts_to_stdout_as_the_core_translates_it(source: str, target: str) -> None:
    path = GOLDEN / "approval" / FILES[source]
    result = invoke("convert", path, "--from", source, "--to", target)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated(source, target, path.read_bytes())


@pytest.mark.parametrize("source", sorted(FILES))
def test_the_source_protocol_is_sniffed_and_reported_on_stderr(source: str) -> None:
    path = GOLDEN / "tool-error" / FILES[source]
    result = invoke("convert", path, "--to", "oma")
    assert result.exit_code == 0, result.stderr
    assert f"detected {source}" in result.stderr
    assert result.stdout_bytes == translated(source, "oma", path.read_bytes())
    assert b"detected" not in result.stdout_bytes  # stdout stays clean


def test_sniffing_tells_ndjson_agentkit_and_sse_oma_apart(tmp_path: Path) -> None:
    agentkit_ndjson = translated("agentkit", "agentkit", (GOLDEN / "plain-text/agentkit.sse").read_bytes(), target_framing="ndjson")
    oma_sse = translated("oma", "oma", (GOLDEN / "plain-text/oma.ndjson").read_bytes(), target_framing="sse")
    for data, expected in ((agentkit_ndjson, "agentkit (ndjson)"), (oma_sse, "oma (sse)")):
        result = invoke("convert", "-", "--to", "nest", input=data)
        assert result.exit_code == 0, result.stderr
        assert f"detected {expected}" in result.stderr


@pytest.mark.parametrize("lead", [b"", b"\xef\xbb\xbf\n\n"])
def test_a_named_oma_file_in_sse_converts_without_a_framing_option(tmp_path: Path, lead: bytes) -> None:
    oma_sse = translated("oma", "oma", (GOLDEN / "approval/oma.ndjson").read_bytes(), target_framing="sse")
    path = tmp_path / "oma.sse"
    path.write_bytes(lead + oma_sse)
    result = invoke("convert", path, "--from", "oma", "--to", "nest")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated("oma", "nest", oma_sse, source_framing="sse")
    assert "warning" not in result.stderr


def test_stdin_to_stdout_pipes(tmp_path: Path) -> None:
    data = (GOLDEN / "reasoning-then-text/nest.sse").read_bytes()
    result = invoke("convert", "-", "--from", "nest", "--to", "agentkit", "-o", "-", input=data)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated("nest", "agentkit", data)
    assert invoke("convert", "--to", "agentkit", input=data).stdout_bytes == result.stdout_bytes  # - is the default


def test_a_capture_file_converts_its_body() -> None:
    path = CAPTURES / "01-chat-read-only.http"
    result = invoke("convert", path, "--to", "agentkit")
    assert result.exit_code == 0, result.stderr
    assert "detected nest" in result.stderr
    assert result.stdout_bytes == translated("nest", "agentkit", capture_body(path))


def test_output_file_framing_and_an_output_directory(tmp_path: Path) -> None:
    path = GOLDEN / "text-after-tool/nest.sse"
    out = tmp_path / "deep" / "out.ndjson"
    result = invoke("convert", path, "--to", "agentkit", "--framing", "ndjson", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b""
    assert out.read_bytes() == translated("nest", "agentkit", path.read_bytes(), target_framing="ndjson")
    assert list(out.parent.iterdir()) == [out]  # no temporary file left behind
    result = invoke("convert", path, "--to", "oma", "-o", tmp_path)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "nest.ndjson").read_bytes() == translated("nest", "oma", path.read_bytes())


def test_a_directory_converts_every_transcript(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "approval", "plain-text", "truncated")
    (root / "approval" / "notes.txt").write_text("not a transcript")
    out = tmp_path / "out"
    result = invoke("convert", root, "--to", "nest", "-o", out)
    assert result.exit_code == 0, result.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    expected = sorted(f"{s}/{name}.sse" for s in ("approval", "plain-text", "truncated") for name in ("agentkit", "nest", "oma"))
    assert written == expected
    for rel in expected:
        source = rel.split("/")[1].removesuffix(".sse")
        original = root / rel.split("/")[0] / FILES[source]
        assert (out / rel).read_bytes() == translated(source, "nest", original.read_bytes())
    assert "converted 9 of 9 transcripts" in result.stderr


def test_a_directory_reports_each_bad_file_and_exits_2(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "plain-text")
    (root / "broken.sse").write_bytes(b"hello, not a stream\n")
    result = invoke("convert", root, "--to", "oma", "-o", tmp_path / "out")
    user_error(result, "broken.sse", "cannot tell the protocol")
    assert "converted 3 of 4 transcripts" in result.stderr
    assert (tmp_path / "out" / "plain-text" / "nest.ndjson").exists()


def test_directory_mistakes_are_user_errors(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "plain-text")
    user_error(invoke("convert", root, "--to", "oma"), "needs -o DIRECTORY")
    (tmp_path / "file").write_text("x")
    user_error(invoke("convert", root, "--to", "oma", "-o", tmp_path / "file"), "not a directory")
    (root / "plain-text" / "nest.ndjson").write_bytes((GOLDEN / "plain-text/oma.ndjson").read_bytes())
    user_error(invoke("convert", root, "--to", "oma", "-o", tmp_path / "o"), "would both be written")
    empty = tmp_path / "empty"
    empty.mkdir()
    user_error(invoke("convert", empty, "--to", "oma", "-o", tmp_path / "o2"), "no transcripts")


BAD_AGENTKIT = (
    b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'
    b"data: {not json\n\n"
    b'data: {"type":"turn_end","turnId":"t1","messageId":"m1","result":{"status":"succeeded","text":"","provider":"p"}}\n\n'
)


def test_strict_mode_names_the_file_frame_and_byte_and_leaves_no_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sse"
    bad.write_bytes(BAD_AGENTKIT)
    out = tmp_path / "out.ndjson"
    line = user_error(invoke("convert", bad, "--to", "oma", "--strict", "-o", out), str(bad), "frame 2", "byte 60")
    assert "expected" in line
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_verbose_adds_the_bad_frame_to_the_error() -> None:
    result = invoke("convert", "-", "--from", "agentkit", "--to", "oma", "--strict", "-v", input=BAD_AGENTKIT)
    user_error(result, "<stdin>", "frame 2")
    assert "{not json" in result.stderr
    assert "{not json" not in invoke("convert", "-", "--to", "oma", "--strict", input=BAD_AGENTKIT).stderr


def test_lenient_mode_forwards_bad_frames_with_a_one_line_warning() -> None:
    result = invoke("convert", "-", "--to", "nest", input=BAD_AGENTKIT)
    assert result.exit_code == 0
    assert result.stdout_bytes == translated("agentkit", "nest", BAD_AGENTKIT)
    assert b"data-malformed" in result.stdout_bytes
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "frame 2" in warnings[0]
    verbose = invoke("-v", "convert", "-", "--to", "nest", input=BAD_AGENTKIT)
    assert sum("warning" in line for line in verbose.stderr.splitlines()) >= 1
    assert "-v shows" not in verbose.stderr


def test_bad_inputs_are_one_line_user_errors(tmp_path: Path) -> None:
    user_error(invoke("convert", tmp_path / "missing.sse", "--to", "oma"), "missing.sse", "No such file")
    user_error(invoke("convert", GOLDEN / "plain-text/README.md", "--to", "oma"), "README.md", "--from")
    user_error(invoke("convert", "-", "--to", "oma", input=b""), "<stdin>", "empty")
    user_error(invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "ag-ui"), "--to", "'ag-ui'", "agentkit")
    user_error(invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "--from", "x"), "--from", "'x'")
    user_error(invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "--framing", "xml"), "--framing", "'xml'")
    header_only = tmp_path / "h.http"
    header_only.write_bytes(b"HTTP 201\ncontent-type: text/event-stream\n")
    user_error(invoke("convert", header_only, "--to", "oma"), "h.http", "empty line")


def test_a_missing_option_is_a_usage_error() -> None:
    result = invoke("convert", GOLDEN / "plain-text/nest.sse")
    assert result.exit_code == 2
    assert "--to" in result.stderr


def test_alias_names_the_same_codec() -> None:
    path = GOLDEN / "plain-text/agentkit.sse"
    result = invoke("convert", path, "--to", "adonis")
    assert result.exit_code == 0
    assert result.stdout_bytes == translated("agentkit", "nest", path.read_bytes())


class _Trace(io.BytesIO):
    """A stream that logs its reads and writes in one list, to see they interleave."""

    def __init__(self, data: bytes, log: list[str]) -> None:
        super().__init__(data)
        self.log = log

    def read1(self, size: int = -1) -> bytes:
        data = super().read1(size)
        self.log.append("read")
        return data


class _Sink(io.BytesIO):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.log.append("write")
        return super().write(data)


def test_convert_streams_chunk_by_chunk() -> None:
    """Output is written while input is still being read: memory does not grow with the file."""
    data = (GOLDEN / "large-tool-output/oma.ndjson").read_bytes()
    log: list[str] = []
    source = Source("big.ndjson", _Trace(data, log), len(data), is_file=False)
    sink = _Sink(log)
    convert.pump(source, convert.Translator("oma", "nest"), sink, live=False)
    assert log.count("read") > 10
    assert log.index("write") < len(log) - log[::-1].index("read") - 1  # a write before the last read
    assert sink.getvalue() == translated("oma", "nest", data)


def test_a_progress_bar_goes_to_stderr_only_when_it_is_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    path = GOLDEN / "large-tool-output/nest.sse"
    with path.open("rb") as stream:
        assert not convert.wants_progress(Source(str(path), stream, path.stat().st_size, is_file=True))
    monkeypatch.setattr(convert, "stderr_is_terminal", lambda: True)
    with path.open("rb") as stream:
        assert convert.wants_progress(Source(str(path), stream, path.stat().st_size, is_file=True))
    result = invoke("convert", path, "--to", "oma")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated("nest", "oma", path.read_bytes())  # stdout stays clean
    piped = invoke("convert", "-", "--to", "oma", input=path.read_bytes())
    assert piped.stdout_bytes == result.stdout_bytes


def test_a_live_pipe_is_translated_as_it_arrives(tmp_path: Path) -> None:
    """``curl … | streambridge convert --to oma``: output appears before the input ends."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streambridge", "convert", "--to", "oma"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\ndata: {"kind":"step-start"}\n\n')
        proc.stdin.write(b'data: {"kind":"text","text":"live"}\n\n')
        proc.stdin.flush()
        received = b""
        while b'{"type":"text","data":"live"}' not in received:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no output while the input is still open: {received!r}"
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, "the converter exited early"
            received += chunk
        assert proc.poll() is None  # still running: the input has not ended
        proc.stdin.write(b"event: done\ndata: {}\n\n")
        proc.stdin.close()
        assert proc.wait(30) == 0
        received += proc.stdout.read()
        assert proc.stderr is not None and b"detected nest (sse)" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert received.endswith(b'"toolCalls":[]}}\n')

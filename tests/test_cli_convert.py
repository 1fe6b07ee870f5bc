"""``streambridge convert``: files, stdin/stdout, directories, sniffing, strictness, progress."""

from __future__ import annotations

import io
import logging
import os
import re
import select
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from streambridge.cli import convert
from streambridge.cli.common import open_output
from streambridge.transcripts import Source

from .cli_support import BAR, CAPTURES, ESCAPE, GOLDEN, copy_golden, invoke, on_terminal, translated, user_error
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
    # a variant (``<codec>@<profile>``) writes its codec's wire: sniffing names the codec
    assert f"detected {source.split('@')[0]} " in result.stderr
    assert result.stdout_bytes == translated(source, "oma", path.read_bytes())
    assert b"detected" not in result.stdout_bytes  # stdout stays clean


def test_sniffing_tells_ndjson_agentkit_and_sse_oma_apart(tmp_path: Path) -> None:
    agentkit_ndjson = translated(
        "agentkit", "agentkit", (GOLDEN / "plain-text/agentkit.sse").read_bytes(), target_framing="ndjson"
    )
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
    result = invoke("convert", path, "--to", "agentkit", "--framing", "ndjson", "-o", out, "--parents")
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
    by_stem = {Path(file).stem: codec for codec, file in FILES.items()}  # each golden file's protocol
    expected = sorted(f"{s}/{stem}.sse" for s in ("approval", "plain-text", "truncated") for stem in by_stem)
    assert written == expected
    for rel in expected:
        scenario, stem = rel.split("/")[0], rel.split("/")[1].removesuffix(".sse")
        original = root / scenario / FILES[by_stem[stem]]
        assert (out / rel).read_bytes() == translated(by_stem[stem], "nest", original.read_bytes())
    assert f"converted {len(expected)} of {len(expected)} transcripts" in result.stderr


def test_a_directory_reports_each_bad_file_and_exits_2(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "plain-text")
    (root / "broken.sse").write_bytes(b"hello, not a stream\n")
    result = invoke("convert", root, "--to", "oma", "-o", tmp_path / "out")
    user_error(result, "broken.sse", "cannot tell the protocol")
    assert f"converted {len(FILES)} of {len(FILES) + 1} transcripts" in result.stderr
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


def _python_m_streambridge(*args: object, cwd: Path, **options: object) -> subprocess.CompletedProcess[bytes]:
    """The CLI in its own process, for what needs real file descriptors (stdin and stdout as files)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "streambridge", *map(str, args)]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output="stdout" not in options, timeout=60, check=False, **options
    )  # type: ignore[call-overload]


def _one_error(stderr: bytes, *fragments: str) -> None:
    errors = [line for line in stderr.decode().splitlines() if line.startswith("streambridge: error: ")]
    assert len(errors) == 1 and all(f in errors[0] for f in fragments), stderr


def test_the_output_is_never_the_input_under_any_of_its_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = (GOLDEN / "plain-text/nest.sse").read_bytes()
    src = tmp_path / "x.sse"
    src.write_bytes(original)
    (tmp_path / "hard.sse").hardlink_to(src)
    (tmp_path / "sym.sse").symlink_to(src)
    before = sorted(tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    pairs = [
        ("x.sse", "x.sse"),
        ("x.sse", "./x.sse"),
        ("./x.sse", str(src)),
        ("x.sse", "hard.sse"),
        ("x.sse", "sym.sse"),
        ("sym.sse", "x.sse"),
        ("x.sse", "."),
        (str(src), str(tmp_path)),
    ]  # a directory -o: ./x.sse
    for input, output in pairs:
        user_error(invoke("convert", input, "--to", "nest", "-o", output), "is the input")
        assert src.read_bytes() == original and sorted(tmp_path.iterdir()) == before, (input, output)
    assert invoke("convert", "x.sse", "--to", "nest", "-o", "y.sse").exit_code == 0  # another file is fine


def test_stdin_and_stdout_redirected_to_the_input_are_refused_too(tmp_path: Path) -> None:
    original = (GOLDEN / "plain-text/nest.sse").read_bytes()
    src = tmp_path / "x.sse"
    src.write_bytes(original)
    with src.open("rb") as stdin:  # streambridge convert --to nest -o x.sse < x.sse
        done = _python_m_streambridge("convert", "--to", "nest", "-o", "x.sse", cwd=tmp_path, stdin=stdin)
    assert done.returncode == 2
    _one_error(done.stderr, "-o x.sse is the input stdin")
    with src.open("ab") as stdout:  # streambridge convert x.sse --to nest >> x.sse: it would never end
        done = _python_m_streambridge(
            "convert", "x.sse", "--to", "nest", cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE
        )
    assert done.returncode == 2
    _one_error(done.stderr, "stdout is the input x.sse")
    assert src.read_bytes() == original and sorted(p.name for p in tmp_path.iterdir()) == ["x.sse"]


def test_a_directory_is_never_converted_into_itself_or_onto_its_inputs(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "plain-text")
    (tmp_path / "link").symlink_to(root)
    for output in (root, root / ".", tmp_path / "link"):
        user_error(invoke("convert", root, "--to", "nest", "-o", output), "is the input directory")
    inner = root / "plain-text"  # in/plain-text into in: its plain-text/nest.sse would be written onto nest.sse
    (inner / "plain-text").mkdir()
    (inner / "plain-text" / "nest.sse").write_bytes((GOLDEN / "plain-text/nest.sse").read_bytes())
    user_error(
        invoke("convert", inner, "--to", "nest", "-o", root),
        f"would be written to {inner / 'nest.sse'}, which is the input",
    )
    out = tmp_path / "out" / "plain-text"  # a destination hard-linked to an input
    out.mkdir(parents=True)
    (out / "oma.sse").hardlink_to(inner / "oma.ndjson")
    user_error(invoke("convert", root, "--to", "nest", "-o", tmp_path / "out"), "which is the input", "oma.ndjson")
    assert not list(tmp_path.rglob("*.part")) and not list(root.glob("*.sse"))
    assert sorted(p.name for p in out.iterdir()) == ["oma.sse"]
    converted = tmp_path / "converted"  # an input directory inside the output directory is fine
    shutil.copytree(GOLDEN / "plain-text", converted / "in")
    result = invoke("convert", converted / "in", "--to", "oma", "-o", converted)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in converted.glob("*.ndjson")) == sorted(
        Path(f).stem + ".ndjson" for f in FILES.values()
    )


def test_outputs_honour_the_umask(tmp_path: Path) -> None:
    path = GOLDEN / "plain-text/nest.sse"
    for umask, mode in ((0o027, 0o640), (0o002, 0o664)):
        out = tmp_path / f"out-{umask:o}.ndjson"
        done = _python_m_streambridge("convert", path, "--to", "oma", "-o", out, cwd=tmp_path, umask=umask)
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode, (oct(umask), oct(out.stat().st_mode))


def test_the_part_file_honours_the_umask_before_it_is_renamed(tmp_path: Path) -> None:
    saved = os.umask(0o027)
    try:
        with open_output(tmp_path / "o.sse") as out:
            out.write(b"x")
            (part,) = tmp_path.glob(".o.sse.*.part")
            mode = stat.S_IMODE(part.stat().st_mode)
    finally:
        os.umask(saved)
    assert mode == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["o.sse"]


def test_a_missing_output_directory_is_made_only_with_parents(tmp_path: Path) -> None:
    path = GOLDEN / "plain-text/nest.sse"
    out = tmp_path / "typo" / "deep" / "out.ndjson"
    user_error(invoke("convert", path, "--to", "oma", "-o", out), f"directory {out.parent} does not exist", "--parents")
    assert list(tmp_path.iterdir()) == []
    root = copy_golden(tmp_path, "plain-text")
    user_error(
        invoke("convert", root, "--to", "oma", "-o", tmp_path / "typo" / "out"),
        f"directory {tmp_path / 'typo'} does not exist",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert invoke("convert", path, "--to", "oma", "-o", out, "--parents").exit_code == 0 and out.exists()
    result = invoke("convert", root, "--to", "oma", "-o", tmp_path / "new" / "out", "--parents")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "new" / "out" / "plain-text" / "oma.ndjson").exists()
    (tmp_path / "file").write_text("")
    user_error(
        invoke("convert", path, "--to", "oma", "-o", tmp_path / "file" / "x.ndjson", "--parents"), "is not a directory"
    )


def test_an_unwritable_target_is_named_not_its_temporary_file(tmp_path: Path) -> None:
    """sysfs refuses new files even to root (which may run these tests: chmod would not stop it)."""
    target = "/sys/streambridge-test-output.ndjson"
    result = invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "-o", target)
    line = user_error(result, target, "Permission denied")
    assert ".part" not in result.stderr and line.endswith(f"{target}: Permission denied")


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


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_convert_reports_bad_frames_without_touching_logging() -> None:
    """The core keeps its problems as data: nothing reaches a handler an embedding program put
    on the ``streambridge`` logger, and the CLI swaps no handler of its own in."""
    logger = logging.getLogger("streambridge")
    mine = _Records()
    logger.addHandler(mine)
    try:
        result = invoke("convert", "-", "--to", "nest", input=BAD_AGENTKIT)
        assert logger.handlers[-1] is mine
    finally:
        logger.removeHandler(mine)
    assert result.exit_code == 0 and "frame 2" in result.stderr
    assert mine.records == []


def test_bad_inputs_are_one_line_user_errors(tmp_path: Path) -> None:
    user_error(invoke("convert", tmp_path / "missing.sse", "--to", "oma"), "missing.sse", "No such file")
    user_error(invoke("convert", GOLDEN / "plain-text/README.md", "--to", "oma"), "README.md", "--from")
    user_error(invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "a2a"), "--to", "'a2a'", "agentkit")
    user_error(invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "--from", "x"), "--from", "'x'")
    user_error(
        invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "--framing", "xml"), "--framing", "'xml'"
    )
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


def test_on_one_terminal_the_data_is_never_glued_to_a_progress_bar(tmp_path: Path) -> None:
    """An interactive shell: stdout and stderr are one terminal, so no bar is drawn at all."""
    path = GOLDEN / "large-tool-output/nest.sse"
    shown = on_terminal("convert", path, "--to", "oma", cwd=tmp_path)
    assert shown.returncode == 0, shown.text
    assert BAR not in shown.text and ESCAPE not in shown.text
    assert shown.text.endswith(translated("nest", "oma", path.read_bytes()).decode())


def test_a_progress_bar_is_drawn_on_stderr_when_the_data_goes_elsewhere(tmp_path: Path) -> None:
    path = GOLDEN / "large-tool-output/nest.sse"
    expected = translated("nest", "oma", path.read_bytes())
    piped = on_terminal("convert", path, "--to", "oma", cwd=tmp_path, stdout=False)  # … | jq
    assert piped.returncode == 0, piped.text
    assert BAR in piped.text and piped.stdout == expected
    out = tmp_path / "out.ndjson"
    to_file = on_terminal("convert", path, "--to", "oma", "-o", out, cwd=tmp_path)
    assert to_file.returncode == 0, to_file.text
    assert BAR in to_file.text and out.read_bytes() == expected
    assert BAR not in invoke("convert", path, "--to", "oma", "-o", tmp_path / "o2.ndjson").stderr  # stderr no terminal


def test_warnings_printed_while_the_bar_is_drawn_are_whole_lines_above_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sse"
    start, broken, end = BAD_AGENTKIT.split(b"\n\n")[:3]
    bad.write_bytes(b"\n\n".join([start, *[broken] * 4, end, b""]))
    shown = on_terminal("-v", "convert", bad, "--to", "nest", cwd=tmp_path, stdout=False)
    assert shown.returncode == 0, shown.text
    assert BAR in shown.text
    # each starts where a line starts (or where the bar's line was cleared) and ends the line
    whole = re.findall(
        r"(?:\r|\n|\x1b\[2K)streambridge: warning: [^\x1b\r\n]*frame \d[^\x1b\r\n]*\r\n", shown.screen.decode()
    )
    assert len(whole) == 4, shown.text


def test_a_live_pipe_is_translated_as_it_arrives(tmp_path: Path) -> None:
    """``curl … | streambridge convert --to oma``: output appears before the input ends."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streambridge", "convert", "--to", "oma"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
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


def test_no_input_on_a_terminal_prints_the_usage_instead_of_waiting(tmp_path: Path) -> None:
    shown = on_terminal("convert", "--to", "oma", cwd=tmp_path, stdin=True)  # returns: it did not wait for typing
    assert shown.returncode == 2, shown.text
    errors = [line for line in shown.text.splitlines() if line.startswith("streambridge: error: ")]
    assert len(errors) == 1 and "stdin is a terminal" in errors[0]
    assert "Usage: streambridge convert [INPUT|-] --to PROTOCOL" in shown.text
    assert "streambridge convert run.sse --to oma -o run.ndjson" in shown.text


def _big_nest(path: Path, texts: int = 100_000) -> bytes:
    """A nest transcript whose translation is far larger than any pipe buffer."""
    frames = [b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n', b'data: {"kind":"step-start"}\n\n']
    frames += [b'data: {"kind":"text","text":"word %d "}\n\n' % i for i in range(texts)]
    data = b"".join([*frames, b'data: {"kind":"step-finish"}\n\n', b"event: done\ndata: {}\n\n"])
    path.write_bytes(data)
    return data


def test_a_reader_that_leaves_early_ends_convert_quietly_with_0(tmp_path: Path) -> None:
    """``streambridge convert big.sse --to oma | head -1``: the reader closes the pipe after one line."""
    _big_nest(tmp_path / "big.sse")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streambridge", "convert", "big.sse", "--to", "oma"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline().startswith(b'{"type":"data-run-start"')
        proc.stdout.close()  # 4 MB are still to come: the next write finds no reader
        stderr = proc.stderr.read().decode()
        assert proc.wait(60) == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert stderr == "streambridge: big.sse: detected nest (sse)\n"  # no traceback, no "Exception ignored"

"""The library API of what the CLI does: ``streambridge.validate``, ``streambridge.diff`` and
``streambridge.transcripts``, used as a program would, with no command line and no terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streambridge import codecs, transcripts
from streambridge.diff import DiffInputError, diff_files
from streambridge.transcripts import Capture, ProtocolNotDetected
from streambridge.validate import RULES, all_rules, validate, validate_file

from .corpus import CAPTURES, GOLDEN, ROOT

READ_ONLY = CAPTURES / "01-chat-read-only.http"


def test_a_good_transcript_validates_clean() -> None:
    report = validate_file(GOLDEN / "approval/nest.sse")
    assert report.clean and report.findings == []
    assert (report.protocol, report.framing) == ("nest", "sse")
    assert report.frames > 0 and report.events > 0
    assert validate((GOLDEN / "approval/agentkit.sse").read_bytes(), "agentkit").clean


def test_a_bad_transcript_names_its_rules_and_frames() -> None:
    truncated = validate_file(GOLDEN / "truncated/nest.sse")
    assert [f.rule for f in truncated.findings] == ["SB010"]
    assert not truncated.clean and truncated.errors == 1
    assert truncated.findings[0].frame is None  # about the end of input
    unknown = validate((GOLDEN / "unknown-kinds/oma.ndjson").read_bytes(), name="oma.ndjson")
    assert [(f.rule, f.frame, f.severity) for f in unknown.findings] == [
        ("SB006", 1, "warning"),
        ("SB007", 2, "warning"),
        ("SB006", 3, "warning"),
    ]
    assert unknown.file == "oma.ndjson" and unknown.protocol == "oma" and unknown.errors == 0


def test_a_protocols_own_rule_checks_a_capture() -> None:
    """SB032 is nest's own (its catalogue), checked against the capture's headers: those of a
    capture file, or given with a bare body."""
    wrong = READ_ONLY.read_bytes().replace(b"x-agent-thread-id: thr-1", b"x-agent-thread-id: thr-9")
    assert [f.rule for f in validate(wrong).findings] == ["SB032"]
    assert validate(READ_ONLY.read_bytes()).clean
    body = READ_ONLY.read_bytes().split(b"\n\n", 1)[1]
    capture = Capture(201, [("content-type", "text/event-stream"), ("x-agent-thread-id", "thr-9")])
    found = validate(body, "nest", capture=capture).findings
    assert [f.rule for f in found] == ["SB032"] and "thr-9" in found[0].message
    failed = Capture(500, [("content-type", "application/json")])
    assert [f.rule for f in validate(body, capture=failed).findings] == ["SB050", "SB051"]


def test_the_rule_catalogue_merges_the_shared_rules_and_each_protocols_own() -> None:
    rules = all_rules()
    assert "SB015" in codecs.get("nest").rules.catalogue and "SB015" not in RULES
    assert "SB040" in codecs.get("agentkit").rules.catalogue and "SB040" not in RULES
    assert rules["SB015"][0] == "step-unbalanced" and rules["SB040"][0] == "terminal-text-mismatch"
    assert set(RULES) < set(rules) and "AGUI001" in rules and "AI001" in rules
    shared_ids = sorted(rule for rule in rules if rule.startswith("SB"))
    assert list(rules)[: len(shared_ids)] == shared_ids  # the SB ids first, in order


def test_an_unknown_stream_is_a_transcript_error() -> None:
    with pytest.raises(ProtocolNotDetected, match="cannot tell the protocol"):
        validate(b"hello\n\n", name="junk")
    with pytest.raises(ValueError, match="is a directory"):  # TranscriptError is a ValueError
        validate_file(GOLDEN)


def test_diff_of_two_transcripts_that_say_the_same() -> None:
    """Across protocols: chunking and generated ids are no difference."""
    result = diff_files(GOLDEN / "plain-text/oma.ndjson", GOLDEN / "plain-text/nest.sse")
    assert result.same and result.hunks == [] and not result.stopped
    assert result.codecs == ("oma", "nest") and result.vocabulary is not None
    assert result.lines()[-1] == "no differences"
    assert diff_files(GOLDEN / "approval/nest.sse", GOLDEN / "approval/agentkit.sse").same


def test_diff_of_two_transcripts_that_differ() -> None:
    result = diff_files(GOLDEN / "approval/nest.sse", GOLDEN / "tool-denied/nest.sse")
    assert not result.same and len(result.hunks) == 1
    hunk = result.hunks[0]
    assert hunk.tag == "replace" and hunk.removed and hunk.added
    assert hunk.removed[0].frame == 3  # located frame by frame in the second pass
    assert result.lines()[-1] == "1 difference(s)"


def test_diff_names_the_side_it_cannot_read(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sse"
    junk.write_bytes(b"hello\n\n")
    with pytest.raises(DiffInputError, match=r"junk\.sse: cannot tell the protocol") as caught:
        diff_files(GOLDEN / "approval/nest.sse", junk)
    assert caught.value.side == 1 and isinstance(caught.value.cause, ProtocolNotDetected)
    with pytest.raises(ValueError, match="only one of A and B"):
        diff_files("-", "-")


def test_sniffing_is_a_library_call() -> None:
    assert transcripts.sniff((GOLDEN / "approval/oma.ndjson").read_bytes()) == ("oma", "ndjson")
    with transcripts.Source.from_bytes(READ_ONLY.read_bytes(), "capture") as source:
        detected = transcripts.detect(source)
        assert (detected.codec.name, detected.framing) == ("nest", "sse")
        assert source.capture is not None and source.capture.status == 201
        body = b"".join(source.chunks())
    assert body.startswith(b"event: meta") and len(list(transcripts.cut_frames([body], "sse"))) > 5


def test_the_library_needs_no_command_line_packages() -> None:
    """typer and rich are the CLI's: the library modules pull in neither (even when used)."""
    code = (
        "import sys, streambridge.validate, streambridge.diff, streambridge.transcripts\n"
        "streambridge.validate.validate_file('golden/truncated/nest.sse')\n"
        "streambridge.diff.diff_files('golden/plain-text/oma.ndjson', 'golden/plain-text/nest.sse')\n"
        "assert 'typer' not in sys.modules and 'rich' not in sys.modules, "
        "[m for m in sys.modules if m.split('.')[0] in ('typer', 'rich')]\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_readme_library_examples_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Library") : readme.index("## Command line")]
    examples = [
        b
        for b in re.findall(r"```python\n(.*?)```", section, re.DOTALL)
        if "streambridge.validate" in b or "streambridge.diff" in b
    ]
    assert len(examples) == 2
    monkeypatch.chdir(ROOT)  # the examples name golden/ files
    for example in examples:
        exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "SB010 terminal-missing error None" in printed and "1 difference(s)" in printed

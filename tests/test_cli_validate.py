"""``streambridge validate``: every rule on a real or crafted transcript, text and JSON output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from streambridge.codecs import registered
from streambridge.validate import RULES, all_rules

from .cli_support import BAR, CAPTURES, GOLDEN, invoke, on_terminal, translated, user_error
from .corpus import FILES, ROOT

# goldens that show a flaw on purpose: a cut-off stream, unknown kinds, a call left without an
# outcome (the run parked on its approval was cancelled: SB023, a warning)
FLAWED = {"truncated", "unknown-kinds", "open-step-at-end"}
#: scenarios written in one protocol and translated into the others, whose translations keep that
#: protocol's members it has no field for (``ag-ui.stepName``): clean in their own protocol only
FOREIGN = {"named-steps": "ag-ui"}


def findings(path: Path | str, *args: str, input: bytes | None = None) -> list[dict]:
    result = invoke("validate", path, "--json", *args, input=input)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    report = json.loads(result.stdout)
    assert report["clean"] == (result.exit_code == 0) == (not report["findings"])
    return report["findings"]


def rules(path: Path | str, *args: str, input: bytes | None = None) -> list[str]:
    return [f["rule"] for f in findings(path, *args, input=input)]


@pytest.mark.parametrize("codec", sorted(FILES))
def test_golden_transcripts_are_clean(scenario: str, codec: str) -> None:
    path = GOLDEN / scenario / FILES[codec]
    result = invoke("validate", path)
    if scenario in FLAWED:
        assert result.exit_code == 1
    elif FOREIGN.get(scenario, codec) != codec:
        assert {f["rule"] for f in findings(path)} <= {"SB007"}  # unknown fields, the source's
    else:
        assert result.exit_code == 0, result.stdout
        assert result.stdout.strip().endswith("events)") and ": clean (" in result.stdout


@pytest.mark.parametrize("target", sorted(FILES))
@pytest.mark.parametrize("source", sorted(FILES))
def test_what_streambridge_writes_is_clean(source: str, target: str) -> None:
    for scenario in ("approval", "elicitation", "interleaved-messages", "title-ui-metadata", "truncated", "cancelled"):
        data = translated(source, target, (GOLDEN / scenario / FILES[source]).read_bytes())
        assert rules("-", "--protocol", target, input=data) == [], (scenario, source, target)


def test_real_captures_are_clean() -> None:
    for path in sorted(CAPTURES.glob("*.http")):
        assert rules(path) == [], path


def test_truncated_and_unknown_kinds_are_reported() -> None:
    assert rules(GOLDEN / "truncated/nest.sse") == ["SB010"]
    found = findings(GOLDEN / "unknown-kinds/oma.ndjson")
    assert [(f["rule"], f["frame"]) for f in found] == [("SB006", 1), ("SB007", 2), ("SB006", 3)]
    assert "'checkpoint'" in found[0]["message"] and found[0]["severity"] == "warning"


def test_text_output_names_file_frame_byte_rule_and_message() -> None:
    path = GOLDEN / "unknown-kinds/nest.sse"
    result = invoke("validate", path)
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first == f"{path}: frame 3 (byte 117): SB006 kind-unknown [warning]: unknown kind 'reaction'"
    assert "3 finding(s), 0 error(s)" in result.stdout.splitlines()[-1]


def test_json_report_shape() -> None:
    result = invoke("validate", GOLDEN / "truncated/agentkit.sse", "--json")
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("protocol", "framing", "frames", "clean")} == {
        "protocol": "agentkit",
        "framing": "sse",
        "frames": 4,
        "clean": False,
    }
    assert report["findings"] == [
        {
            "rule": "SB010",
            "name": "terminal-missing",
            "severity": "error",
            "frame": None,
            "offset": None,
            "message": "the stream ends without turn_end",
        },
    ]


def test_ignore_skips_a_rule() -> None:
    assert rules(GOLDEN / "unknown-kinds/agentkit.sse", "--ignore", "SB006", "--ignore", "sb007") == []
    assert (
        invoke("validate", GOLDEN / "unknown-kinds/agentkit.sse", "--ignore", "SB006", "--ignore", "SB007").exit_code
        == 0
    )


def sse(*frames: str) -> bytes:
    return "".join(f + "\n\n" for f in frames).encode()


TURN_START = 'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}'
TURN_END = 'data: {"type":"turn_end","turnId":"t1","messageId":"m1","result":{"status":"succeeded","text":"%s","provider":"p"}}'
TEXT = 'data: {"type":"text_delta","messageId":"m1","text":"hi"}'
META = 'event: meta\ndata: {"runId":"r1","threadId":"t1"}'
DONE = "event: done\ndata: {}"
STEP = 'data: {"kind":"step-start"}'
FINISH = 'data: {"kind":"step-finish"}'
NEST_TEXT = 'data: {"kind":"text","text":"hi"}'

CASES = {
    "SB001": ("agentkit", sse(TURN_START, "data: {oops", TURN_END % "")),
    "SB002": ("agentkit", sse(TURN_START, TURN_END % "")[:-1] + b'data: {"type":"status"'),
    "SB004": ("agentkit", sse(TURN_START, TEXT, TURN_END % "hi").replace(b"\n", b"\r\n")),
    "SB005": ("agentkit", sse(TURN_START, "event: extra\n" + TEXT, TURN_END % "hi")),
    "SB006": ("nest", sse(META, STEP, 'data: {"kind":"sparkle"}', FINISH, DONE)),
    "SB007": ("nest", sse(META, STEP, 'data: {"kind":"text","text":"hi","mood":"ok"}', FINISH, DONE)),
    "SB010": ("nest", sse(META, STEP, NEST_TEXT)),
    "SB011": ("nest", sse(META, STEP, FINISH, DONE, NEST_TEXT)),
    "SB012": ("agentkit", sse(TEXT, TURN_END % "hi")),
    "SB013": ("agentkit", sse(TURN_START, TURN_START, TURN_END % "")),
    "SB015": ("nest", sse(META, STEP, STEP, FINISH, DONE)),
    "SB016": ("nest", sse(META, NEST_TEXT, STEP, FINISH, DONE)),
    "SB020": ("nest", sse(META, STEP, 'data: {"kind":"tool-output","id":"c1","output":1}', FINISH, DONE)),
    "SB021": (
        "oma",
        b'{"type":"tool_use","data":{"type":"tool_use","id":"c1","name":"f","input":{}}}\n'
        b'{"type":"tool_result","data":{"type":"tool_result","tool_use_id":"c1","content":"a"}}\n'
        b'{"type":"tool_result","data":{"type":"tool_result","tool_use_id":"c1","content":"b"}}\n'
        b'{"type":"done","data":{}}\n',
    ),
    "SB022": (
        "oma",
        b'{"type":"tool_use","data":{"type":"tool_use","id":"c1","name":"f","input":{}}}\n'
        b'{"type":"tool_use","data":{"type":"tool_use","id":"c1","name":"f","input":{}}}\n'
        b'{"type":"tool_result","data":{"type":"tool_result","tool_use_id":"c1","content":"a"}}\n'
        b'{"type":"done","data":{}}\n',
    ),
    "SB023": (
        "agentkit",
        sse(
            TURN_START,
            'data: {"type":"tool_call","messageId":"m1","call":{"id":"c1","name":"f","argumentsJson":"{}","status":"running"}}',
            TURN_END % "",
        ),
    ),
    "SB030": ("agentkit", sse(TURN_START, TURN_END.replace('"turnId":"t1"', '"turnId":"t2"') % "")),
    "SB031": ("agentkit", sse(TURN_START, TURN_END.replace('"messageId":"m1"', '"messageId":"m9"') % "")),
    "SB033": ("nest", sse(META, "id: 2\n" + STEP, "id: 1\n" + NEST_TEXT, "id: 3\n" + FINISH, DONE)),
    "SB034": ("nest", sse(META, STEP, FINISH, "id: 4\n" + DONE)),
    "SB040": ("agentkit", sse(TURN_START, TEXT, TURN_END % "hello")),
    "SB041": (
        "agentkit",
        sse(
            TURN_START,
            TURN_END.replace('"provider":"p"', '"provider":"p","failure":{"status":"refused","message":"no"}') % "",
        ),
    ),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_fires_on_a_stream_that_breaks_it(rule: str) -> None:
    codec, data = CASES[rule]
    found = findings("-", "--protocol", codec, input=data)
    assert rule in [f["rule"] for f in found], found
    assert all(f["name"] == all_rules()[f["rule"]][0] for f in found)


def test_unknown_fields_nested_in_a_known_member_are_reported() -> None:
    finish = 'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":2,"futureTokens":3}}'
    found = findings("-", "--protocol", "nest", input=sse(META, STEP, finish, DONE))
    assert [(f["rule"], f["frame"]) for f in found] == [("SB007", 3)]
    assert "inside usage of a step-finish event" in found[0]["message"]


def test_nest_must_open_with_meta_once() -> None:
    assert "SB012" in rules("-", "--protocol", "nest", input=sse(STEP, NEST_TEXT, FINISH, DONE))
    assert "SB013" in rules("-", "--protocol", "nest", input=sse(META, STEP, META, NEST_TEXT, FINISH, DONE))


def test_an_oversize_frame_is_reported() -> None:
    big = sse(META, STEP, 'data: {"kind":"text","text":"' + "x" * (16 * 1024 * 1024) + '"}', FINISH, DONE)
    found = findings("-", "--protocol", "nest", input=big)
    assert [f["rule"] for f in found] == ["SB003"]
    assert found[0]["frame"] == 3


def test_capture_facts_status_content_type_and_run_ids(tmp_path: Path) -> None:
    original = (CAPTURES / "01-chat-read-only.http").read_bytes()
    wrong_ids = tmp_path / "ids.http"
    wrong_ids.write_bytes(original.replace(b"x-agent-thread-id: thr-1", b"x-agent-thread-id: thr-9"))
    found = findings(wrong_ids)
    assert [f["rule"] for f in found] == ["SB032"] and "thr-9" in found[0]["message"]
    failed = tmp_path / "500.http"
    failed.write_bytes(original.replace(b"HTTP 201", b"HTTP 500").replace(b"text/event-stream", b"application/json"))
    assert rules(failed) == ["SB050", "SB051"]
    text = invoke("validate", failed).stdout
    assert f"{failed}: capture header (byte 0): SB050 http-status [error]: the server answered HTTP 500" in text


def test_every_rule_is_documented() -> None:
    """docs/cli.md's table lists every rule of every registered protocol (shared and own), each
    with its name, severity and a description, and no rule that is not one (but retired ids)."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    rules = all_rules()
    for rule, (name, severity, _) in rules.items():
        assert re.search(rf"^\| `{rule}` \| `{name}` \| {severity} \| \S[^|]*\|$", doc, re.MULTILINE), rule
    listed = set(re.findall(r"^\| `([A-Z]+\d{3})` \| `", doc, re.MULTILINE))
    assert listed == set(rules)
    assert len({name for name, _, _ in rules.values()}) == len(rules)  # a name says one rule
    for codec in registered().values():
        assert set(codec.rules.catalogue).isdisjoint(RULES), codec.name  # ids are global


def test_validate_bad_input_is_a_user_error(tmp_path: Path) -> None:
    user_error(invoke("validate", tmp_path / "nope.sse"), "nope.sse")
    user_error(invoke("validate", GOLDEN / "plain-text/README.md"), "README.md", "--protocol")
    user_error(invoke("validate", GOLDEN / "plain-text/nest.sse", "--protocol", "nope"), "--protocol", "'nope'")
    user_error(invoke("validate", GOLDEN), "is a directory")


def test_a_garbage_file_with_a_named_protocol_has_findings() -> None:
    # no JSON at the first significant byte: SSE by the framing rule, lines with no blank line after them
    found = findings("-", "--protocol", "oma", input=b"hello\nworld\n")
    assert [f["rule"] for f in found] == ["SB002", "SB010"]
    found = findings("-", "--protocol", "oma", input=b"{hello\n{world\n")  # NDJSON: two bad lines
    assert [f["rule"] for f in found] == ["SB001", "SB001", "SB010"]


def test_validating_a_file_shows_progress_on_a_terminal_and_then_the_report(tmp_path: Path) -> None:
    path = GOLDEN / "large-tool-output/nest.sse"
    shown = on_terminal("validate", path, cwd=tmp_path)  # stdout and stderr one terminal
    assert shown.returncode == 0, shown.text
    report = f"{path}: clean (nest, sse, 14 frames, 14 events)\n"
    assert BAR in shown.text and re.search(r"(?:\n|\x1b\[2K)" + re.escape(report), shown.text), shown.text
    assert shown.text.rindex(BAR) < shown.text.index(report)  # the bar is gone before the report
    quiet = invoke("validate", path)  # stderr no terminal: no bar
    assert quiet.stdout == report and quiet.stderr == ""

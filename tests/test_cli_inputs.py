"""What an input is, said plainly (issue 29): an empty input, a ``--from`` the bytes contradict."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_support import GOLDEN, invoke, translated, user_error
from .corpus import FILES

PLAIN = GOLDEN / "plain-text"


def _finding(result: object, *fragments: str) -> None:
    """Exit 1 and one ``streambridge: error:`` line naming what is wrong."""
    assert result.exit_code == 1, (result.exit_code, result.stderr)  # type: ignore[attr-defined]
    lines = [line for line in result.stderr.splitlines() if line.startswith("streambridge: error: ")]  # type: ignore[attr-defined]
    assert len(lines) == 1, result.stderr  # type: ignore[attr-defined]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("command", [("convert", "--to", "oma"), ("replay",), ("validate",)])
@pytest.mark.parametrize("named", [(), ("--from", "nest")])
def test_an_empty_file_is_said_to_be_empty(tmp_path: Path, command: tuple[str, ...], named: tuple[str, ...]) -> None:
    empty = tmp_path / "empty.sse"
    empty.touch()
    option = ("--protocol", "nest") if named and command[0] == "validate" else named
    result = invoke(command[0], empty, *command[1:], *option)
    _finding(result, f"empty input: {empty} has no bytes")
    assert result.stdout_bytes == b""


def test_empty_stdin_is_said_to_be_empty() -> None:
    _finding(invoke("convert", "-", "--to", "oma", "--from", "nest", input=b""), "empty input: <stdin> has no bytes")


def test_convert_from_an_empty_file_leaves_the_output_alone(tmp_path: Path) -> None:
    empty, out = tmp_path / "empty.sse", tmp_path / "out.ndjson"
    empty.touch()
    out.write_bytes(b"previous\n")
    _finding(invoke("convert", empty, "--to", "oma", "-o", out), "empty input")
    assert out.read_bytes() == b"previous\n"


MISNAMED = [("nest", "agentkit"), ("agentkit", "nest"), ("ag-ui", "nest"), ("ai-sdk", "agentkit")]


@pytest.mark.parametrize(("actual", "named"), MISNAMED)
def test_convert_from_a_protocol_the_bytes_contradict_is_refused(actual: str, named: str) -> None:
    result = invoke("convert", PLAIN / FILES[actual], "--from", named, "--to", "oma")
    line = user_error(result)
    assert (
        f"this looks like {actual}, not {named} (use --from {actual}, or --force to decode it as {named} anyway)"
        in line
    )
    assert result.stdout_bytes == b""


def test_force_decodes_it_as_named() -> None:
    path = PLAIN / FILES["nest"]
    result = invoke("convert", path, "--from", "agentkit", "--to", "oma", "--force")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated("agentkit", "oma", path.read_bytes())


def test_replay_validate_diff_and_inspect_refuse_it_too() -> None:
    nest, agentkit = PLAIN / FILES["nest"], PLAIN / FILES["agentkit"]
    user_error(invoke("replay", nest, "--from", "agentkit"), "looks like nest, not agentkit", "--from nest")
    user_error(invoke("validate", nest, "--protocol", "agentkit"), "looks like nest", "--protocol nest")
    user_error(invoke("diff", nest, agentkit, "--protocol-b", "nest"), "looks like agentkit", "--protocol-b agentkit")
    user_error(invoke("inspect", nest, "--from", "agentkit", "--port", "0"), "looks like nest, not agentkit")
    assert invoke("replay", nest, "--from", "agentkit", "--force").exit_code == 0
    assert invoke("validate", nest, "--protocol", "agentkit", "--force").exit_code == 1  # findings, not refusal
    assert invoke("diff", nest, agentkit, "--protocol-b", "nest", "--force").exit_code == 1


def test_a_variant_of_the_sniffed_protocol_is_no_contradiction() -> None:
    path = PLAIN / FILES["ai-sdk"]
    result = invoke("convert", path, "--from", "ai-sdk@5", "--to", "oma")
    assert result.exit_code == 0, result.stderr


def test_bad_frames_of_the_named_protocol_are_no_contradiction(tmp_path: Path) -> None:
    """A file the named protocol does not recognise, and no other claims, is decoded as named."""
    broken = tmp_path / "broken.sse"
    broken.write_bytes(b'data: {not json\n\ndata: {"unknown":1}\n\n' + (PLAIN / FILES["agentkit"]).read_bytes())
    result = invoke("convert", broken, "--from", "agentkit", "--to", "oma")
    assert result.exit_code == 0, result.stderr
    assert "looks like" not in result.stderr


def test_record_says_a_url_has_no_scheme(tmp_path: Path) -> None:
    result = invoke("record", "localhost:8788/agent/chat", "-o", tmp_path / "r.http")
    line = user_error(result, "localhost:8788/agent/chat: no scheme (did you mean http://localhost:8788/agent/chat?)")
    assert line.count("localhost:8788/agent/chat") == 2  # the URL, then the suggestion: no echo of an exception
    user_error(invoke("record", "ftp://host/x", "-o", tmp_path / "r.http"), "not an http:// or https:// URL")
    assert not (tmp_path / "r.http").exists()


def test_record_never_repeats_a_header_value(tmp_path: Path) -> None:
    for header in ("Authorization Bearer s3cret", "Authorization=Bearer-s3cret"):
        line = user_error(invoke("record", "http://127.0.0.1:1/x", "-H", header, "-o", tmp_path / "r.http"))
        assert "--header 'Authorization' is not in the form 'Name: value'" in line
        assert "s3cret" not in line
    line = user_error(invoke("record", "http://127.0.0.1:1/x", "-H", "sk-s3cret", "-o", tmp_path / "r.http"))
    assert "s3cret" not in line and "'Name: value'" in line


def test_a_failed_answer_contradicts_nothing(tmp_path: Path) -> None:
    """A non-2xx capture holds an error body, not a stream: decoded as named, never refused."""
    capture = tmp_path / "failed.http"
    body = (PLAIN / FILES["agentkit"]).read_bytes()
    capture.write_bytes(b"HTTP 500\ncontent-type: text/event-stream\n\n" + body)
    result = invoke("convert", capture, "--from", "nest", "--to", "oma")
    assert result.exit_code == 0, result.stderr
    assert "looks like" not in result.stderr

"""The application as a whole: protocols, demo, completion, entry points, errors and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from streambridge import codecs
from streambridge.cli import app, demo
from streambridge.cli.common import complete_protocol, protocol_names

from .cli_support import GOLDEN, invoke, user_error, without_reader
from .corpus import ROOT


def test_protocols_lists_one_line_a_protocol() -> None:
    result = invoke("protocols")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    for name in codecs.names():
        codec = codecs.get(name)
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        assert (", ".join(codec.aliases) or "-") in line
    assert "nest → oma" not in result.stdout and "application/x-ndjson" not in result.stdout
    assert len(lines) < 3 * len(codecs.names())  # short: the details are asked for by name


def test_protocols_names_show_their_details_and_pairs() -> None:
    result = invoke("protocols", "nest", "oma")
    assert result.exit_code == 0, result.stderr
    for word in ("adonis", "ndjson (default)", "application/x-ndjson", "nest → oma", "oma → nest"):
        assert word in result.stdout
    assert "agentkit" not in result.stdout  # only the pairs between the named
    one = invoke("protocols", "adonis").stdout  # an alias names its protocol
    assert "agentkit → nest" in one and "nest → oma" in one and "oma → agentkit" not in one


def test_protocols_pairs_is_the_pairs_table_only() -> None:
    everything = invoke("protocols", "--pairs").stdout
    assert "oma → agentkit" in everything and "framings" not in everything
    assert "nest → oma" in invoke("protocols", "nest", "--pairs").stdout


def test_protocols_json_of_named_protocols() -> None:
    data = json.loads(invoke("protocols", "nest", "oma", "--json").stdout)
    assert [c["name"] for c in data["codecs"]] == ["nest", "oma"]
    assert {(p["from"], p["to"]) for p in data["pairs"]} == {("nest", "oma"), ("oma", "nest")}


def test_protocols_unknown_name_is_a_user_error() -> None:
    user_error(invoke("protocols", "zzz"), "unknown protocol 'zzz'", "nest")


def test_protocols_json_comes_from_the_codec_registry() -> None:
    data = json.loads(invoke("protocols", "--json").stdout)
    assert [c["name"] for c in data["codecs"]] == codecs.names()
    nest = next(c for c in data["codecs"] if c["name"] == "nest")
    assert nest["aliases"] == ["adonis"] and nest["default_framing"] == "sse"
    pairs = {(p["from"], p["to"]): p for p in data["pairs"]}
    n = len(codecs.names())
    assert len(pairs) == n * (n - 1)  # every ordered pair of registered protocols
    nest_to_oma = pairs[("nest", "oma")]
    assert set(nest_to_oma["native"]) == codecs.get("nest").native & codecs.get("oma").native
    assert "step-start" in nest_to_oma["data_parts"] and "data" in nest_to_oma["data_parts"]
    assert set(nest_to_oma["native"]).isdisjoint(nest_to_oma["data_parts"])


def test_demo_serves_translates_and_shows_both_streams() -> None:
    result = invoke("demo", "--delay-ms", "0")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "nest: from the backend, over HTTP" in out and "agentkit: translated live" in out
    assert '"kind":"tool-input-available"' in out and '"type":"tool_call"' in out
    assert "answered HTTP 201" in out and "status 'succeeded'" in out


def test_demo_other_scenarios_and_protocols() -> None:
    result = invoke("demo", "--scenario", "run-failed", "--from", "agentkit", "--to", "oma", "--delay-ms", "0")
    assert result.exit_code == 0, result.stderr
    assert "answered HTTP 200" in result.stdout and "status 'error'" in result.stdout
    user_error(invoke("demo", "--scenario", "nope"), "--scenario", "'nope'", "plain-text")
    user_error(invoke("demo", "--to", "nope"), "--to")


@pytest.mark.parametrize("protocol", [name for name in codecs.names() if name != demo.DEFAULT_SOURCE])
def test_demo_runs_every_protocol_as_backend_and_as_client(protocol: str) -> None:
    """The demo's choices are the registry's: each protocol as the fake backend, and as the client."""
    as_backend = invoke("demo", "--from", protocol, "--to", demo.DEFAULT_SOURCE, "--delay-ms", "0")
    assert as_backend.exit_code == 0, as_backend.stderr
    assert f"a fake {protocol} backend" in as_backend.stdout and "status 'succeeded'" in as_backend.stdout
    as_client = invoke("demo", "--to", protocol, "--delay-ms", "0")
    assert as_client.exit_code == 0, as_client.stderr
    assert f"{protocol}: translated live" in as_client.stdout and "status 'succeeded'" in as_client.stdout


def test_demo_works_without_the_golden_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (GOLDEN / demo.DEFAULT_SCENARIO / "nest.sse").read_bytes() == demo._EMBEDDED_GOLDEN
    monkeypatch.setattr(demo, "golden_dir", lambda: None)
    assert demo.scenarios() == [demo.DEFAULT_SCENARIO]
    result = invoke("demo", "--delay-ms", "0")
    assert result.exit_code == 0, result.stderr
    user_error(invoke("demo", "--scenario", "approval"), "approval")


def test_python_m_streambridge_demo_runs_without_a_terminal(tmp_path: Path) -> None:
    """The README's first command, as CI runs it: no TTY, no stdin, from another directory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "streambridge", "demo", "--delay-ms", "0"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"translated live" in done.stdout
    version = subprocess.run(
        [sys.executable, "-m", "streambridge", "--version"], env=env, capture_output=True, check=False
    )
    assert version.stdout.strip() == b"streambridge 0.1.0"


def test_completion_offers_protocol_names() -> None:
    names = [*codecs.names(), "adonis", "ai-sdk@7"]  # every registered protocol, then the aliases
    assert [name for name, _ in complete_protocol("")] == protocol_names() == names
    assert [name for name, _ in complete_protocol("a")] == [n for n in names if n.startswith("a")]
    assert complete_protocol("z") == []
    assert demo.complete_scenario("tool-d") == ["tool-denied"]


def _complete(words: str) -> str:
    env = {
        "_STREAMBRIDGE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    return CliRunner().invoke(app, [], env=env, prog_name="streambridge").stdout


def test_shell_completion_completes_commands_and_protocols() -> None:
    assert _complete("streambridge con").split() == ["convert"]
    assert _complete("streambridge convert x --to o").split() == ["oma"]
    assert _complete("streambridge validate x --protocol ").split() == protocol_names()
    assert _complete("streambridge diff a b --protocol-b ad").split() == ["adonis"]
    result = CliRunner().invoke(app, ["--show-completion", "bash"], prog_name="streambridge")
    assert "_STREAMBRIDGE_COMPLETE=complete_bash" in result.stdout


def test_help_and_usage_errors() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("convert", "validate", "replay", "record", "diff", "protocols", "demo"):
        assert command in result.stdout
    assert invoke("frobnicate").exit_code == 2
    assert invoke("convert", "--bogus").exit_code == 2
    assert invoke("validate").exit_code == 2  # FILE missing


def test_exceptions_never_show_local_variables() -> None:
    assert app.pretty_exceptions_show_locals is False


def test_user_errors_are_one_line_and_verbose_adds_detail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(b'{"type":"text","data":"a"}\n{"type":"text"\n{"type":"done","data":{}}\n')
    quiet = invoke("convert", bad, "--from", "oma", "--to", "nest", "--strict")
    line = user_error(quiet, str(bad), "frame 2 (byte 27)", "oma")
    assert quiet.stderr.strip() == line
    loud = invoke("-v", "convert", bad, "--to", "nest", "--strict")
    user_error(loud, "frame 2")
    assert '{"type":"text"' in loud.stderr and len(loud.stderr.splitlines()) > 1


def test_the_proxy_serve_command_is_registered_exactly_when_it_imports() -> None:
    try:
        from streambridge.cli.serve import serve_command  # noqa: F401
    except ImportError:  # pragma: no cover - the proxy ships in the same package
        present = False
    else:
        present = True
    assert (invoke("serve", "--help").exit_code == 0) == present


def test_the_cli_docs_describe_every_command() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    for command in ("convert", "validate", "replay", "record", "diff", "protocols", "demo"):
        assert f"streambridge {command}" in doc


def _talk(stderr: str) -> list[str]:
    """stderr without click's usage and help hint (printed above a usage error)."""
    return [line for line in stderr.splitlines() if not line.startswith(("Usage: ", "Try '"))]


def test_every_error_line_has_the_one_prefix(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sse"
    results = [
        invoke("convert", GOLDEN / "plain-text/nest.sse"),  # click: a missing option
        invoke("frobnicate"),  # click: an unknown command
        invoke("convert", GOLDEN / "plain-text/nest.sse", "--to", "oma", "--framing"),
        invoke("convert", missing, "--to", "oma"),
        invoke("validate", missing),
        invoke("diff", missing, GOLDEN / "plain-text/nest.sse"),
        invoke("replay", missing),
        invoke("serve", "--upstream", "http://127.0.0.1:1/", "--from", "nope", "--to", "nest"),
    ]
    for result in results:
        user_error(result)
        assert all(line.startswith("streambridge: ") for line in _talk(result.stderr)), result.stderr
        assert "╭" not in result.stderr  # no boxed click error


def test_every_warning_line_has_the_one_prefix() -> None:
    bad = b'data: {"type":"turn_start","turnId":"t","messageId":"m"}\n\ndata: {nope\n\ndata: {also not\n\n'
    for args in (("convert", "-", "--to", "nest"), ("-v", "convert", "-", "--to", "nest")):
        result = invoke(*args, input=bad)
        assert result.exit_code == 0, result.stderr
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert warnings and all(line.startswith("streambridge: warning: ") for line in warnings), result.stderr


WRITERS = [
    ("convert", GOLDEN / "approval/nest.sse", "--to", "oma"),
    ("validate", GOLDEN / "truncated/nest.sse"),  # findings: exit 1 when the report is read
    ("validate", GOLDEN / "truncated/nest.sse", "--json"),
    ("diff", GOLDEN / "approval/nest.sse", GOLDEN / "plain-text/nest.sse"),  # differences: exit 1 too
    ("protocols",),
    ("protocols", "--json"),
    ("replay", GOLDEN / "approval/nest.sse"),
    ("demo", "--delay-ms", "0"),
]


@pytest.mark.parametrize("args", WRITERS, ids=lambda args: " ".join(str(a).rsplit("/", 2)[-1] for a in args))
def test_a_reader_that_left_ends_every_command_quietly_with_0(args: tuple[object, ...], tmp_path: Path) -> None:
    done = without_reader(*args, cwd=tmp_path)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert not any(word in stderr for word in ("Traceback", "Exception ignored", "error", "Broken pipe")), stderr


def test_the_cli_docs_name_every_option_of_the_file_commands() -> None:
    """Every option of the commands docs/cli.md documents (serve's are docs/proxy.md's) is named
    there, by its long or its short name."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    group = typer.main.get_command(app)
    for name in ("convert", "validate", "replay", "record", "diff", "protocols", "inspect", "demo"):
        for param in group.loaded(name).params:  # type: ignore[attr-defined]
            opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
            if opts and "--help" not in opts:
                assert any(f"`{o}" in doc or f"[{o}" in doc or f" {o} " in doc for o in opts), (name, opts)

"""What starting the command line costs (issue 29): ``import streambridge``, ``--help``,
``protocols``, ``convert`` and shell completion import what they use and nothing more: not
aiohttp, not the proxy, not the replay server, not a protocol the command does not use.

Each case runs in a fresh interpreter (imports are per process) and lists ``sys.modules`` after
the command; the times themselves are measured by hand (docs/cli.md, "Startup")."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest

from streambridge.cli.app import COMMANDS, command_function

from .corpus import GOLDEN, ROOT

HEAVY = ("aiohttp", "redis", "streambridge.bridge.", "streambridge.inspector", "streambridge.cli.replay_server")
#: the proxy's configuration is read without the proxy (``inspect`` names its token variable)
LIGHT = {"streambridge.bridge.config", "streambridge.bridge.surfaces"}
PROTOCOLS = {
    "streambridge.codecs.agentkit",
    "streambridge.codecs.nest",
    "streambridge.codecs.oma",
    "streambridge.codecs.agentfootprint",
    "streambridge.codecs.ai_sdk",
    "streambridge.codecs.ag_ui",
}
PROBE = """
import json, sys
from streambridge.cli import main
sys.argv = ["streambridge", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
with open({out!r}, "w") as f:
    json.dump(sorted(sys.modules), f)
"""


def run_probe(tmp_path, *args: str, env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """The modules a fresh ``streambridge *args`` has imported when it is done, and its stdout."""
    out = tmp_path / "modules.json"
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    code = PROBE.format(out=str(out))
    run = subprocess.run([sys.executable, "-c", code, *args], env=environ, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return set(json.loads(out.read_text())), run.stdout


def modules_after(tmp_path, *args: str) -> set[str]:
    return run_probe(tmp_path, *args)[0]


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(HEAVY) and m not in LIGHT}


def protocols(modules: set[str]) -> set[str]:
    return modules & PROTOCOLS


def test_importing_the_library_imports_no_codec_and_no_server() -> None:
    code = "import sys, streambridge; print(' '.join(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    modules = set(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.split())
    assert "streambridge" in modules
    assert not heavy(modules) and not protocols(modules)
    assert "streambridge.translate" not in modules  # the core comes with its first use


@pytest.mark.parametrize("args", [("--help",), ("convert", "--help"), ("serve", "--help"), ()], ids=" ".join)
def test_help_imports_no_codec_and_no_server(tmp_path, args: tuple[str, ...]) -> None:
    modules = modules_after(tmp_path, *args)
    assert not heavy(modules) and not protocols(modules)


def test_the_protocol_list_imports_no_codec_and_the_pairs_every_codec(tmp_path) -> None:
    """The one-line-each list is the registry's; what travels natively is each codec's."""
    modules = modules_after(tmp_path, "protocols")
    assert not heavy(modules) and not protocols(modules)
    modules = modules_after(tmp_path, "protocols", "--pairs")
    assert not heavy(modules) and protocols(modules) == PROTOCOLS


def test_convert_imports_its_two_codecs_only(tmp_path) -> None:
    golden = str(GOLDEN / "plain-text" / "nest.sse")
    modules = modules_after(tmp_path, "convert", golden, "--from", "nest", "--to", "oma", "-o", str(tmp_path / "o"))
    assert (tmp_path / "o").read_bytes()
    assert not heavy(modules)
    assert protocols(modules) == {"streambridge.codecs.nest", "streambridge.codecs.oma"}


def test_sniffing_stops_at_a_marker_and_imports_no_server(tmp_path) -> None:
    """A nest file's first frame is nest's marker (``event: meta``): no codec registered after
    nest can say more, so none is asked (or imported) but the target."""
    golden = str(GOLDEN / "plain-text" / "nest.sse")
    modules = modules_after(tmp_path, "convert", golden, "--to", "oma", "-o", str(tmp_path / "o"))
    assert not heavy(modules)
    assert protocols(modules) == {"streambridge.codecs.agentkit", "streambridge.codecs.nest", "streambridge.codecs.oma"}


def bash_completion(tmp_path, *words: str) -> tuple[set[str], list[str]]:
    """What bash's completion function gets for a line whose last word is ``words[-1]``: bash
    splits words at ``:`` (``COMP_WORDBREAKS``) and passes them joined by newlines."""
    env = {"_STREAMBRIDGE_COMPLETE": "complete_bash", "COMP_WORDS": "\n".join(words), "COMP_CWORD": str(len(words) - 1)}
    modules, stdout = run_probe(tmp_path, env=env)
    return modules, stdout.splitlines()


def test_bash_completes_a_protocol_after_its_colon_importing_no_codec(tmp_path) -> None:
    line = ("streambridge", "convert", "run.sse", "--to", "agentfootprint", ":", "h")
    modules, replies = bash_completion(tmp_path, *line)
    assert replies == ["host"]  # bash replaces what follows the colon: agentfootprint:host
    assert not heavy(modules) and not protocols(modules)
    assert bash_completion(tmp_path, *line[:-1])[1] == ["host"]  # the line ends at the colon


def test_bash_completes_whole_names_without_a_colon(tmp_path) -> None:
    modules, replies = bash_completion(tmp_path, "streambridge", "convert", "run.sse", "--to", "ai")
    assert replies == ["ai-sdk", "ai-sdk@6", "ai-sdk@5", "ai-sdk@7"]
    assert not heavy(modules) and not protocols(modules)


def test_bash_completes_command_names_importing_no_command(tmp_path) -> None:
    modules, replies = bash_completion(tmp_path, "streambridge", "re")
    assert replies == ["replay", "record"]
    assert not {m for m in modules if m.startswith("streambridge.cli.") and m.endswith(tuple(COMMANDS))}


def test_each_listed_summary_is_its_commands_first_docstring_line() -> None:
    """Help lists commands by the summaries of ``COMMANDS`` (without importing them): they must
    say what the commands' own docstrings say."""
    for name, entry in COMMANDS.items():
        function = command_function(name)
        assert function is not None, name
        assert entry.summary == (inspect.getdoc(function) or "").splitlines()[0], name


def test_completing_a_proxy_option_imports_no_proxy(tmp_path) -> None:
    modules, replies = bash_completion(tmp_path, "streambridge", "serve", "--from", "agentfootprint", ":")
    assert replies == ["host"]
    assert not heavy(modules) and not protocols(modules)


@pytest.mark.parametrize(
    ("command", "option"),
    [("replay", "--to"), ("record", "--protocol"), ("demo", "--to"), ("inspect", "--to"), ("serve", "--to")],
)
def test_completing_a_server_or_client_command_imports_no_server_nor_client(
    tmp_path, command: str, option: str
) -> None:
    """The commands that serve or fetch over HTTP import aiohttp when they run, not when a
    shell completes their options."""
    modules, replies = bash_completion(tmp_path, "streambridge", command, option, "ag-")
    assert replies == ["ag-ui"]
    assert not heavy(modules) and not protocols(modules)

"""The README as a front page: its quickstart is CI's command, its recipes run, its links lead
somewhere, and what its troubleshooting table quotes is what the proxy says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from streambridge.bridge.faults import FAULTS

from .cli_support import invoke
from .corpus import ROOT

README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def blocks(text: str) -> list[str]:
    """The shell blocks (fenced without a language)."""
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    return [body for language, body in fenced if not language]


def commands(block: str) -> list[list[str]]:
    """Each command of a block: continuation lines joined, comments and a trailing ``&`` dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = [re.sub(r"\s+#.*$", "", line).strip().removesuffix("&").strip() for line in joined.splitlines()]
    return [shlex.split(line) for line in lines if line]


def test_the_quickstart_is_two_commands_and_the_second_is_what_ci_runs() -> None:
    (block,) = blocks(section("Quickstart"))
    first, second = block.strip().splitlines()
    assert first == "pip install -e . && python -m streambridge demo"  # the demo needs no extra
    install, tests = second.split(" && ")
    assert install == 'pip install -e ".[test]"'
    ci = (ROOT / ".ci/run").read_text()
    assert 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci
    assert ci.rstrip().splitlines()[-1] == tests  # CI ends with the README's test command
    assert "Python 3.11 or newer" in section("Quickstart")
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()


def test_the_recipes_serve_commands_pass_serve_check() -> None:
    served = [c for b in blocks(section("Recipes: one minute each")) for c in commands(b) if c[1:2] == ["serve"]]
    assert len(served) == 2
    for command in served:
        result = invoke(*command[1:], "--check")
        assert result.exit_code == 0, (command, result.stderr)


def test_the_convert_recipe_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "golden").symlink_to(ROOT / "golden")
    monkeypatch.chdir(tmp_path)
    recipe = next(b for b in blocks(section("Recipes: one minute each")) if "streambridge convert" in b)
    ran = []
    for command in commands(recipe):
        if command[1] == "inspect":  # serves a page until Ctrl-C: its file is checked by validate
            continue
        result = invoke(*command[1:])
        assert result.exit_code == 0, (command, result.stderr)
        ran.append(result.stdout)
    assert len(ran) == 3 and "clean" in ran[1] and "no differences" in ran[2]


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slugs(markdown: str) -> set[str]:
    """GitHub's anchors of a document's headings."""
    titles = re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", t.lower()).replace(" ", "-") for t in titles}


@pytest.mark.parametrize("doc", ["README.md", "docs/deploy.md", "docs/testing.md", "docs/performance.md"])
def test_every_relative_link_leads_somewhere(doc: str) -> None:
    base = (ROOT / doc).parent
    for target in LINK.findall((ROOT / doc).read_text()):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        resolved = (base / path).resolve() if path else ROOT / doc
        assert resolved.exists(), (doc, target)
        if anchor:
            assert anchor in slugs(resolved.read_text()), (doc, target)


def test_what_the_troubleshooting_table_quotes_is_what_the_proxy_says() -> None:
    text = section("Troubleshooting")
    messages = {fault.message for fault in FAULTS.values()}
    quoted = re.findall(r"\*(The [^*]+)\*", text)
    assert len(quoted) == 3 and set(quoted) <= messages
    for code in re.findall(r"`\d{3} (\w+)`", text):
        assert any(code in path.read_text() for path in (ROOT / "streambridge/bridge").rglob("*.py")), code
    unknown = invoke("convert", "x.sse", "--to", "copilotkit")
    assert "--to: unknown protocol 'copilotkit'" in unknown.stderr and unknown.exit_code == 2
    assert "unknown protocol 'copilotkit'" in text

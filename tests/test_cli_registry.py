"""The CLI loops over the codec registry: a protocol registered at run time is sniffed, validated
by its own rules and listed in the help, with no line of the CLI naming it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from streambridge import codecs
from streambridge.codecs import oma
from streambridge.codecs.codec import Likeness
from streambridge.codecs.framing import Frame
from streambridge.events import Event
from streambridge.transcripts import sniff

from .cli_support import GOLDEN, invoke

SHOUT_LINE = b'{"type":"text","data":"HELLO","shout":true}\n'


def shout_sniff(frame: Frame) -> int:
    """A marker only the test protocol writes; oma's ``type`` + ``data`` shape is weaker."""
    return Likeness.MARKER if b'"shout":true' in frame.data else Likeness.NONE


class ShoutRules(oma.OmaRules):
    """oma's rules plus a start rule of its own (the stream must open with a shout)."""

    def first_event(self, event: Event) -> None:
        self.check.add("SB012", "the stream does not open with a shout")


@pytest.fixture
def shout() -> Iterator[codecs.Codec]:
    """oma's classes under a new name, with their own sniff and rules, registered for one test."""
    codec = dataclasses.replace(oma.CODEC, name="shout", title="oma, shouted", sniff=shout_sniff, rules=ShoutRules)
    codecs.register(codec)
    try:
        yield codec
    finally:
        codecs.unregister("shout")


def test_sniffing_asks_every_registered_codec(shout: codecs.Codec) -> None:
    assert sniff(SHOUT_LINE) == ("shout", "ndjson")
    assert sniff((GOLDEN / "plain-text/oma.ndjson").read_bytes()) == ("oma", "ndjson")


def test_sniffing_forgets_an_unregistered_codec() -> None:
    assert sniff(SHOUT_LINE) == ("oma", "ndjson")


def test_validate_applies_the_codecs_own_rules(shout: codecs.Codec, tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    path.write_bytes(SHOUT_LINE + (GOLDEN / "plain-text/oma.ndjson").read_bytes())
    result = invoke("validate", path, "--json")
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["protocol"] == "shout"
    assert report["findings"][0]["rule"] == "SB012"
    assert report["findings"][0]["message"] == "the stream does not open with a shout"


def test_help_lists_a_registered_codec(shout: codecs.Codec) -> None:
    def text(*args: str) -> str:
        return " ".join(invoke(*args, "--help").stdout.replace("│", " ").split())

    listed = [c.name + (f" (alias {', '.join(c.aliases)})" if c.aliases else "") for c in codecs.registered().values()]
    assert f"One of {', '.join(listed)}." in text("convert") and listed[-1] == "shout"
    short = [c.name + "".join("/" + a for a in c.aliases) for c in codecs.registered().values()]
    assert f"({', '.join(short)})" in text()

"""Honest validation: messages that say what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streambridge.codecs import StreamError, get

from .cli_support import invoke, user_error

BOM = b"\xef\xbb\xbf"
META = b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n'
STEP = b'data: {"kind":"step-start"}\n\n'
TEXT = b'data: {"kind":"text","text":"hi"}\n\n'
DONE = b"event: done\ndata: {}\n\n"
OMA_TEXT = b'{"type":"text","data":"a"}\n'
OMA_DONE = b'{"type":"done","data":{}}\n'
LIMIT = 64  # a small size limit for the core tests (the CLI ones use the real 16 MiB)


def decoded(codec: str, chunks: list[bytes], strict: bool = False) -> list:
    decoder = get(codec).decoder(strict=strict, max_event_size=LIMIT)
    events = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


def validate_findings(path: Path, codec: str) -> list[dict]:
    result = invoke("validate", path, "--protocol", codec, "--json")
    assert result.exit_code == 1, result.stdout
    return json.loads(result.stdout)["findings"]


# -- 2. what was expected, in words ----------------------------------------------------------

AK_START = b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'
BAD_INPUTS = {
    "agentkit-json": ("agentkit", AK_START + b"data: {oops\n\n"),
    "agentkit-field": ("agentkit", AK_START + b'data: {"type":"text_delta","messageId":3,"text":"x"}\n\n'),
    "agentkit-utf8": ("agentkit", AK_START + b'data: {"type":"status","messageId":"m1","label":"\xff"}\n\n'),
    "agentkit-carrier": ("agentkit", AK_START + b'data: {"type":"data-x","messageId":"m1","event":{"type":"nope"}}\n\n'),
    "nest-json": ("nest", META + b"data: [1\n\n"),
    "nest-meta": ("nest", b"event: meta\ndata: {oops\n\n"),
    "nest-field": ("nest", META + b'data: {"kind":"text","text":3}\n\n'),
    "nest-after-terminal": ("nest", META + DONE + TEXT),
    "nest-no-terminal": ("nest", META + TEXT),
    "nest-unterminated": ("nest", META + b'data: {"kind":"text"'),
    "oma-json": ("oma", b"{oops\n"),
    "oma-text": ("oma", b'{"type":"text","data":3}\n'),
    "oma-done": ("oma", b'{"type":"done","data":3}\n'),
    "oma-shape": ("oma", b'{"type":"text","data":"a","errorInfo":3}\n'),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_strict_error_says_what_was_expected_in_words(name: str) -> None:
    codec, data = BAD_INPUTS[name]
    with pytest.raises(StreamError) as caught:
        decoded(codec, [data], strict=True)
    message = str(caught.value)
    head = f"{codec}: frame {caught.value.frame} at byte {caught.value.offset}: expected "
    assert message.startswith(head), message
    words = message[len(head) :]
    assert words[0].islower() and "expected" not in words and words == caught.value.expected, message


def test_the_cli_says_expected_once(tmp_path: Path) -> None:
    path = tmp_path / "run.sse"
    path.write_bytes(META + b"data: [1\n\n")
    line = user_error(invoke("convert", path, "--to", "oma", "--strict"), f"frame 2 (byte {len(META)}): nest: expected ")
    assert line.count(": expected ") == 1 and "expected expected" not in line
    found = validate_findings(path, "nest")
    assert found[0]["message"].startswith("expected one JSON object") and found[0]["message"].count("expected") == 1

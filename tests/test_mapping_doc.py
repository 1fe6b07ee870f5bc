"""docs/mapping.md and the code agree, and every row of its event table is exercised by a golden."""

from __future__ import annotations

import re
from functools import cache

import pytest

from streambridge.codecs import get
from streambridge.events import EVENT_TYPES

from .corpus import CODECS, ROOT, SCENARIOS, decode, encode, golden

DOC = (ROOT / "docs" / "mapping.md").read_text()


def event_rows() -> dict[str, dict[str, str]]:
    section = DOC.split("## Events", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == len(CODECS) + 1 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = dict(zip(CODECS, cells[1:], strict=True))
    return rows


ROWS = event_rows()


@cache
def decoded_corpus() -> list[tuple[str, str, list]]:
    return [(s, c, decode(c, golden(s, c))) for s in SCENARIOS for c in CODECS]


def test_the_table_names_real_event_types() -> None:
    assert set(ROWS) <= set(EVENT_TYPES)
    assert len(ROWS) >= 24


@pytest.mark.parametrize("codec", CODECS)
def test_native_cells_match_the_codec_capabilities(codec: str) -> None:
    native = {tag for tag, cells in ROWS.items() if cells[codec] != "data part"}
    assert native == get(codec).native & set(ROWS)


def _marker(codec: str, cell: str, tag: str) -> bytes:
    if cell == "data part":
        return b'"data-'
    name = cell.strip("`")
    if name.startswith("event: "):
        return name.encode()
    return (b'"type":"' if codec != "nest" else b'"kind":"') + name.encode() + b'"'


@pytest.mark.parametrize("tag", sorted(ROWS))
def test_every_row_is_exercised_by_a_golden(tag: str) -> None:
    sources = [
        (s, c, events)
        for s, c, events in decoded_corpus()
        if any(e.__struct_config__.tag == tag and not e.synthetic for e in events)
    ]
    assert sources, f"no golden decodes to a {tag!r} event"
    for codec, cell in ROWS[tag].items():
        marker = _marker(codec, cell, tag)
        outputs = (encode(codec, events) for _, source, events in sources if source != codec or cell != "data part")
        assert any(marker in out for out in outputs), f"{tag} → {codec}: {marker!r} never written"


def test_terminal_table_codes_are_the_codes_the_code_uses() -> None:
    from streambridge.codecs.terminals import STATUS_CODES

    section = DOC.split("## Terminals", 1)[1]
    for status, code in STATUS_CODES.items():
        if status in ("error", "cancelled"):
            continue
        row = next(line for line in section.splitlines() if line.startswith(f"| `{status}`"))
        assert re.search(rf"code `{code}`", row), row

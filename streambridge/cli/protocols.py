"""``streambridge protocols``: the codecs, and for each pair what travels natively.

Read from the codec registry (``Codec.native``, the data docs/mapping.md is written from):
translating A into B, an event type A says natively travels natively when B says it too, and
as one of B's data parts (restored exactly by B's decoder) when B does not.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer
from rich.table import Table

from .. import codecs
from ..codecs import Codec
from .common import DataConsole, VerboseOption, set_verbose

__all__ = ["pair_mapping", "protocols_command", "protocols_data"]


def pair_mapping(source: Codec, target: Codec) -> dict[str, list[str]]:
    """The event types ``source`` says natively (plus ``data``, its unknown kinds), split by
    how ``target`` carries them."""
    produced = source.native | {"data"}
    return {
        "native": sorted(produced & target.native),
        "data_parts": sorted(produced - target.native),
    }


def protocols_data() -> dict[str, object]:
    all_codecs = [codecs.get(name) for name in codecs.names()]
    return {
        "codecs": [
            {
                "name": c.name,
                "title": c.title,
                "aliases": list(c.aliases),
                "framings": list(c.framings),
                "default_framing": c.default_framing,
                "content_types": dict(c.content_types),
                "native": sorted(c.native),
            }
            for c in all_codecs
        ],
        "pairs": [
            {"from": a.name, "to": b.name, **pair_mapping(a, b)} for a in all_codecs for b in all_codecs if a is not b
        ],
    }


def _codec_table(data: dict) -> Table:
    table = Table(title="Codecs", title_justify="left")
    for column in ("id", "aliases", "protocol", "framings (content type)"):
        table.add_column(column, overflow="fold")
    for c in data["codecs"]:
        framings = "\n".join(
            f"{f}{' (default)' if f == c['default_framing'] else ''}: {c['content_types'][f]}" for f in c["framings"]
        )
        table.add_row(c["name"], ", ".join(c["aliases"]) or "-", c["title"], framings)
    return table


def _pair_table(data: dict) -> Table:
    table = Table(title="Translating A → B", title_justify="left")
    for column in ("A → B", "travels natively", "travels as B's data parts"):
        table.add_column(column, overflow="fold")
    for p in data["pairs"]:
        table.add_row(f"{p['from']} → {p['to']}", ", ".join(p["native"]), ", ".join(p["data_parts"]) or "-")
    return table


def protocols_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """List the protocols (aliases, framings) and, per pair, what travels natively."""
    set_verbose(verbose)
    data = protocols_data()
    if json_output:
        typer.echo(msgspec.json.encode(data).decode())
        return
    console = DataConsole()
    console.print(_codec_table(data))
    console.print(_pair_table(data))
    console.print(
        "Every event type has a place: what B cannot say natively rides in B's data parts and comes back exact."
    )

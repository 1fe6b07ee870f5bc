"""``streambridge protocols``: the codecs, and for each pair what travels natively.

Read from the codec registry (``Codec.native``, the data docs/mapping.md is written from):
translating A into B, an event type A says natively travels natively when B says it too, and
as one of B's data parts (restored exactly by B's decoder) when B does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec
import typer
from rich.table import Table

from .. import codecs
from .common import DataConsole, VerboseOption, complete_protocol, resolve_protocol, set_verbose

if TYPE_CHECKING:  # (the short list imports no codec)
    from ..codecs import Codec

__all__ = ["pair_mapping", "protocols_command", "protocols_data"]


def pair_mapping(source: Codec, target: Codec) -> dict[str, list[str]]:
    """The event types ``source`` says natively (plus ``data``, its unknown kinds), split by
    how ``target`` carries them."""
    produced = source.native | {"data"}
    return {
        "native": sorted(produced & target.native),
        "data_parts": sorted(produced - target.native),
    }


def protocols_data(names: list[str] | None = None) -> dict[str, object]:
    """The codecs named (all when ``names`` is None) and the translation pairs among them."""
    all_codecs = [codecs.get(name) for name in codecs.names()]
    chosen = all_codecs if names is None else [codecs.get(name) for name in names]
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
            for c in chosen
        ],
        "pairs": [
            {"from": a.name, "to": b.name, **pair_mapping(a, b)}
            for a in all_codecs
            for b in all_codecs
            if a is not b and _shown_pair(a, b, chosen)
        ],
    }


def _shown_pair(a: Codec, b: Codec, chosen: list[Codec]) -> bool:
    """One protocol named: its pairs both ways; several (or all): the pairs among them."""
    if len(chosen) == 1:
        return chosen[0] in (a, b)
    return a in chosen and b in chosen


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


def _summary_table() -> Table:
    """One line per protocol, from the registry alone: no protocol module is imported."""
    table = Table(box=None, pad_edge=False, show_header=True)
    for column in ("protocol", "aliases", "what it is"):
        table.add_column(column, overflow="fold")
    for name in codecs.names():
        table.add_row(name, ", ".join(codecs.aliases(name)) or "-", codecs.title(name))
    return table


def protocols_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="NAME",
            help="Protocols to show in detail (framings, content types, what travels natively to and from them).",
            autocompletion=complete_protocol,
            show_default=False,
        ),
    ] = None,
    pairs: Annotated[
        bool, typer.Option("--pairs", help="Only the translation pairs table (of the NAMEs given, else all).")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print it as JSON (every protocol and pair unless NAMEs).")
    ] = False,
    verbose: VerboseOption = False,
) -> None:
    """List the protocols, one line each; NAME shows one in detail, --pairs what travels natively."""
    set_verbose(verbose)
    if not (names or pairs or json_output):
        console = DataConsole()
        console.print(_summary_table())
        console.print("streambridge protocols NAME… shows framings and what travels natively; --pairs every pair.")
        return
    chosen = [resolve_protocol(name, "protocols").name for name in names] if names else None
    data = protocols_data(list(dict.fromkeys(chosen)) if chosen else None)
    if json_output:
        typer.echo(msgspec.json.encode(data).decode())
        return
    console = DataConsole()
    if pairs:
        console.print(_pair_table(data))
    else:
        console.print(_codec_table(data))
        console.print(_pair_table(data))
        console.print(
            "What B cannot say natively rides in B's data parts and comes back exact (--pairs: the pairs only)."
        )

"""What the commands' options share: metavars, the choices their help lists, limits, examples.

Choices come from where they live (protocols from the codec registry, framings from the suffix
table), never from a copy, so help, completion and validation always agree.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .. import codecs
from .common import FRAMING_SUFFIX
from .completion import complete_protocol

__all__ = [
    "FRAMING_METAVAR",
    "PROTOCOL_CHOICES",
    "PROTOCOL_NAMES",
    "AsRecordedTarget",
    "ForceOption",
    "SniffedSource",
    "complete_fidelity",
    "examples",
    "fidelity_option",
    "fill_protocols",
    "protocol_choices",
    "protocol_help",
    "protocol_names",
]

PORT_MIN, PORT_MAX = 0, 65535
FRAMING_METAVAR = "[" + "|".join(FRAMING_SUFFIX) + "]"


#: where a help text lists the protocols: filled in from the registry when the help is shown
#: (:func:`fill_protocols`), so a protocol registered after import is listed too
PROTOCOL_CHOICES = "{protocol_choices}"
PROTOCOL_NAMES = "{protocol_names}"


def protocol_choices() -> str:
    """The protocol names for a help text: ``agentkit, nest (alias adonis), oma``."""
    parts = []
    for name in codecs.names():
        aliases = codecs.aliases(name)
        parts.append(f"{name} (alias {', '.join(aliases)})" if aliases else name)
    return ", ".join(parts)


def protocol_names() -> str:
    """The protocols in a sentence: ``agentkit, nest/adonis, oma``."""
    return ", ".join("/".join((name, *codecs.aliases(name))) for name in codecs.names())


def protocol_help(text: str) -> str:
    """``text`` followed by the protocols it accepts (listed when the help is shown)."""
    return f"{text} One of {PROTOCOL_CHOICES}."


def fill_protocols(text: str) -> str:
    """A help text with its protocol lists filled in from the registry as it is now."""
    return text.replace(PROTOCOL_CHOICES, protocol_choices()).replace(PROTOCOL_NAMES, protocol_names())


#: ``--to`` of the commands that show a recording as it was, or translated (replay, inspect)
AsRecordedTarget = Annotated[
    str | None,
    typer.Option(
        "--to",
        "-t",
        metavar="PROTOCOL",
        help=protocol_help("Translate to this protocol (default: as recorded)."),
        autocompletion=complete_protocol,
    ),
]
#: ``--force``: decode as the protocol named even when the bytes clearly are another
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Decode as the protocol named even when the first frames clearly are another one."),
]
#: ``--from`` of the commands that read one recording (replay, inspect)
SniffedSource = Annotated[
    str | None,
    typer.Option(
        "--from",
        "-f",
        metavar="PROTOCOL",
        help="Source protocol (sniffed when left out).",
        autocompletion=complete_protocol,
    ),
]


def examples(*lines: str) -> str:
    """A command's help epilog: ``Examples:`` and one command line each, indented.

    The leading empty line keeps the indentation: help formatters strip the indentation common
    to the lines after the first, and ``Examples:`` then is not the first line.
    """
    return "\n".join(["", "Examples:", *(f"  {line}" for line in lines)])


def complete_fidelity(incomplete: str) -> list[str]:
    from ..codecs.fidelity import FIDELITIES

    return [f for f in FIDELITIES if f.startswith(incomplete)]


def fidelity_option(default: str, short: bool = False) -> Any:
    """``--fidelity`` (see :mod:`streambridge.codecs.fidelity`), whose default says ``default``;
    ``short`` says it in fewer words (a command with many options)."""
    exact, client = (
        ("every event kept", "what a native backend would send")
        if short
        else (
            "every event kept, a translation back gives the input byte for byte",
            "what a native backend of the target protocol would send a live client",
        )
    )
    return typer.Option(
        "--fidelity",
        metavar="exact|client",
        help=f"exact: {exact}; client: {client} (default: {default}).",
        autocompletion=complete_fidelity,
    )

"""What the commands' options share: metavars, the choices their help lists, limits, examples.

Choices come from where they live (protocols from the codec registry, framings from the suffix
table), never from a copy, so help, completion and validation always agree.
"""

from __future__ import annotations

from .. import codecs
from .common import FRAMING_SUFFIX

PORT_MIN, PORT_MAX = 0, 65535
FRAMING_METAVAR = "[" + "|".join(FRAMING_SUFFIX) + "]"


def protocol_choices() -> str:
    """The protocol names for a help text: ``agentkit, nest (alias adonis), oma``."""
    parts = []
    for name in codecs.names():
        aliases = codecs.get(name).aliases
        parts.append(f"{name} (alias {', '.join(aliases)})" if aliases else name)
    return ", ".join(parts)


def protocol_help(text: str) -> str:
    """``text`` followed by the protocols it accepts."""
    return f"{text} One of {protocol_choices()}."


def examples(*lines: str) -> str:
    """A command's help epilog: ``Examples:`` and one command line each, indented.

    The leading empty line keeps the indentation: help formatters strip the indentation common
    to the lines after the first, and ``Examples:`` then is not the first line.
    """
    return "\n".join(["", "Examples:", *(f"  {line}" for line in lines)])

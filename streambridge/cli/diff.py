"""``streambridge diff``: do two transcripts say the same thing? Even in different protocols.

The comparison is the library's (:mod:`streambridge.diff`, where what counts as a difference
is described); this command resolves the protocols it is told, draws a progress bar while the
files are read, prints the result and exits 1 when there are differences.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated

import typer

from ..codecs import Codec
from ..diff import DEFAULT_MAX, DiffInputError, diff_files
from ..transcripts import Source
from .common import (
    EXIT_FINDINGS,
    ProgressBar,
    UserError,
    VerboseOption,
    complete_protocol,
    resolve_protocol,
    set_verbose,
)
from .options import ForceOption, protocol_help
from .transcripts import open_source, refuse_contradiction, refuse_directory, user_error

__all__ = ["diff_command", "progress_for"]

_OPTIONS = ("--protocol-a", "--protocol-b")


@contextlib.contextmanager
def progress_for(sources: Sequence[Source], description: str) -> Iterator[Callable[[], None]]:
    """The shared bar (see :class:`~.common.ProgressBar`) over the bytes of ``sources`` when all
    are files; the report is printed after it is gone, so the two never share a line."""
    if not all(s.is_file and s.size for s in sources):
        yield lambda: None
        return
    with ProgressBar(description, sum(s.size or 0 for s in sources)) as bar:
        yield lambda: bar.update(sum(s.consumed for s in sources))


def _refuse_contradictions(args: tuple[str, str], named: tuple[Codec | None, Codec | None]) -> None:
    """A protocol named for a file its bytes clearly contradict (stdin is read once: the diff's)."""
    for arg, codec, option in zip(args, named, _OPTIONS, strict=True):
        if codec is not None and arg != "-":
            with open_source(arg) as source:
                refuse_contradiction(source, codec, option)


def diff_command(
    a: Annotated[str, typer.Argument(metavar="A", help="First transcript or capture file (- reads stdin).")],
    b: Annotated[str, typer.Argument(metavar="B", help="Second transcript or capture file (- reads stdin).")],
    protocol_a: Annotated[
        str | None,
        typer.Option(
            "--protocol-a",
            metavar="PROTOCOL",
            help=protocol_help("Protocol of A (sniffed when left out)."),
            autocompletion=complete_protocol,
        ),
    ] = None,
    protocol_b: Annotated[
        str | None,
        typer.Option(
            "--protocol-b",
            metavar="PROTOCOL",
            help="Protocol of B (sniffed when left out).",
            autocompletion=complete_protocol,
        ),
    ] = None,
    exact_ids: Annotated[
        bool, typer.Option("--exact-ids", help="Compare id values too (by default generated ids are ignored).")
    ] = False,
    limit: Annotated[
        int, typer.Option("--max", metavar="N", min=1, help="Stop after this many differences (1 or more).")
    ] = DEFAULT_MAX,
    force: ForceOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Compare two transcripts by meaning (even across protocols); exit 1 when they differ."""
    set_verbose(verbose)
    if a == "-" and b == "-":
        raise UserError("only one of A and B can be stdin (-)")
    for arg in (a, b):
        refuse_directory(arg)
    codec_a = None if protocol_a is None else resolve_protocol(protocol_a, _OPTIONS[0])
    codec_b = None if protocol_b is None else resolve_protocol(protocol_b, _OPTIONS[1])
    if not force:
        _refuse_contradictions((a, b), (codec_a, codec_b))
    try:
        result = diff_files(a, b, codec_a, codec_b, exact_ids=exact_ids, limit=limit, progress=progress_for)
    except DiffInputError as exc:
        raise user_error(exc.cause, _OPTIONS[exc.side]) from None
    for line in result.lines("--max shows more"):
        typer.echo(line)
    if result.hunks:
        raise typer.Exit(EXIT_FINDINGS)

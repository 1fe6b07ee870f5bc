"""What every command shares: user errors, verbosity, protocol names, stderr messages, outputs.

The CLI reports a user's mistake (a missing file, a bad frame in ``--strict`` mode, an unknown
protocol) as one line on stderr and exit code 2; ``-v`` adds detail. Nothing here translates:
translation is the core's job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from .. import codecs
from ..codecs import Codec, StreamError

EXIT_FINDINGS = 1
EXIT_USAGE = 2


class UserError(Exception):
    """A problem with what the user asked for or gave us: one line on stderr, exit code 2."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class _State:
    """Process-wide CLI settings (set by the root callback and by each command's ``-v``)."""

    verbose: bool = False


state = _State()


def set_verbose(verbose: bool) -> None:
    state.verbose = state.verbose or verbose


VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show more detail (warnings, error context).")]


def note(message: str) -> None:
    """An informational line on stderr (stdout stays clean for data)."""
    typer.echo(f"streambridge: {message}", err=True)


def detail(message: str) -> None:
    """A line only shown with ``-v``."""
    if state.verbose:
        typer.echo(f"streambridge: {message}", err=True)


def one_line(text: str) -> str:
    return " ".join(text.split())


def print_error(message: str, extra: str = "") -> None:
    """The one line a user error gets on stderr (plus its detail with ``-v``)."""
    typer.echo(f"error: {one_line(message)}", err=True)
    if extra and state.verbose:
        typer.echo(extra, err=True)


def stream_error(name: str, exc: StreamError, body_offset: int = 0) -> UserError:
    """A strict-mode decoding failure as a user error naming the file, frame and byte."""
    raw = exc.raw[:300].decode("utf-8", "replace")
    return UserError(
        f"{name}: frame {exc.frame} (byte {exc.offset + body_offset}): {exc.codec}: expected {exc.expected}",
        f"  frame {exc.frame}: {raw!r}" if raw else "",
    )


# -- protocols -------------------------------------------------------------------------------


def protocol_names() -> list[str]:
    """Codec ids then aliases: everything ``--from/--to/--protocol`` accept."""
    return [*codecs.names(), *(alias for name in codecs.names() for alias in codecs.get(name).aliases)]


def complete_protocol(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion for protocol options: the names that start with what was typed."""
    out = []
    for name in protocol_names():
        if name.startswith(incomplete):
            codec = codecs.get(name)
            help_text = codec.title if name == codec.name else f"alias of {codec.name}"
            out.append((name, help_text))
    return out


def resolve_protocol(name: str, option: str) -> Codec:
    try:
        return codecs.get(name)
    except KeyError:
        known = ", ".join(protocol_names())
        raise UserError(f"{option}: unknown protocol {name!r} (expected one of {known})") from None


def check_framing(codec: Codec, framing: str | None, option: str = "--framing") -> str:
    chosen = framing or codec.default_framing
    if chosen not in codec.framings:
        raise UserError(f"{option}: {codec.name} has no {chosen!r} framing (expected one of {', '.join(codec.framings)})")
    return chosen


FRAMING_SUFFIX = {"sse": ".sse", "ndjson": ".ndjson"}


def complete_framing(incomplete: str) -> list[str]:
    return [f for f in FRAMING_SUFFIX if f.startswith(incomplete)]


# -- decoder warnings ------------------------------------------------------------------------


class _Collector(logging.Handler):
    def __init__(self, echo: bool, body_offset: int = 0) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.echo = echo
        self.body_offset = body_offset

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if self.body_offset and isinstance(args, dict) and "offset" in args:  # a bad frame's byte, in the file
            record.args = {**args, "offset": args["offset"] + self.body_offset}
        self.records.append(record)
        if self.echo:
            typer.echo(f"streambridge: warning: {one_line(record.getMessage())}", err=True)


@contextlib.contextmanager
def collect_warnings(echo: bool | None = None, body_offset: int = 0) -> Iterator[list[logging.LogRecord]]:
    """Collect the core's warnings (bad frames, missing terminals) instead of letting them
    spill onto stderr unformatted; with ``-v`` each one is also printed as it happens.

    A bad frame's byte offset counts from the start of the body in the core; ``body_offset``
    (a capture's header block) makes it the offset in the file, as errors and findings say."""
    logger = logging.getLogger("streambridge")
    handler = _Collector(state.verbose if echo is None else echo, body_offset)
    saved = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.propagate, logger.level = saved[0], saved[1]


def warn_summary(name: str, records: list[logging.LogRecord]) -> None:
    if records and not state.verbose:
        first = one_line(records[0].getMessage())
        more = f" (and {len(records) - 1} more; -v shows them)" if len(records) > 1 else ""
        note(f"{name}: warning: {first}{more}")


# -- outputs ---------------------------------------------------------------------------------


def stdout_binary() -> BinaryIO:
    return typer.get_binary_stream("stdout")


@contextlib.contextmanager
def open_output(target: str | Path | None) -> Iterator[BinaryIO]:
    """stdout for ``None``/``-``; otherwise a file written beside its final name and moved into
    place only when the command succeeds, so a failed run never leaves half a transcript."""
    if target is None or str(target) == "-":
        out = stdout_binary()
        yield out
        out.flush()
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False

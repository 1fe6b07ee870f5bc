"""What every command shares: user errors, verbosity, protocol names, stderr messages, outputs.

The CLI reports a user's mistake (a missing file, a bad frame in ``--strict`` mode, an unknown
protocol) as one line on stderr and exit code 2; ``-v`` adds detail. Nothing here translates:
translation is the core's job.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO, ClassVar, Literal, NoReturn

import typer

from .. import codecs
from .completion import complete_protocol

if TYPE_CHECKING:  # (the core and rich are imported by the commands that use them, not by --help)
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from ..codecs import Codec, StreamError
    from ..codecs.decoder import Decoder
    from ..codecs.errors import Diagnostic
    from ..codecs.fidelity import Fidelity
    from ..codecs.framing import Framing
    from ..translate import Translator

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_USAGE",
    "FRAMING_SUFFIX",
    "PREFIX",
    "DataConsole",
    "InputFinding",
    "ProgressBar",
    "UserError",
    "VerboseOption",
    "Warnings",
    "check_fidelity",
    "check_framing",
    "complete_framing",
    "complete_protocol",
    "detail",
    "ensure_directory",
    "file_identity",
    "findings_exit",
    "is_stdio",
    "note",
    "one_line",
    "open_output",
    "print_error",
    "protocol_names",
    "reader_gone",
    "resolve_protocol",
    "same_directory",
    "say",
    "set_verbose",
    "state",
    "stderr_is_terminal",
    "stdin_is_terminal",
    "stdout_binary",
    "stdout_shares_terminal",
    "stream_error",
    "warn",
]

EXIT_FINDINGS = 1
EXIT_USAGE = 2


class UserError(Exception):
    """A problem with what the user asked for or gave us: one line on stderr, exit code 2."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class InputFinding(Exception):
    """What the input itself rules out (an empty file, a frame the target cannot carry): one
    line on stderr and exit code 1, as findings are (see :func:`findings_exit`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@contextlib.contextmanager
def findings_exit() -> Iterator[None]:
    """An :class:`InputFinding` raised inside as its error line and exit code 1."""
    try:
        yield
    except InputFinding as exc:
        print_error(exc.message)
        raise typer.Exit(EXIT_FINDINGS) from None


class _State:
    """Process-wide CLI settings (set by the root callback and by each command's ``-v``)."""

    verbose: bool = False


state = _State()


def set_verbose(verbose: bool) -> None:
    state.verbose = state.verbose or verbose


VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show more detail (warnings, error context).")]


PREFIX = "streambridge"


def say(text: str) -> None:
    """Text on stderr: the one way the CLI talks, so stdout stays clean for data. While a
    progress bar is drawn the text goes above it, never into it."""
    console = ProgressBar.drawing
    if console is None:
        typer.echo(text, err=True)
    else:
        console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)


def note(message: str) -> None:
    """An informational line on stderr: ``streambridge: …``."""
    say(f"{PREFIX}: {message}")


def detail(message: str) -> None:
    """A line only shown with ``-v``."""
    if state.verbose:
        note(message)


def one_line(text: str) -> str:
    return " ".join(text.split())


def warn(message: str) -> None:
    """A warning line on stderr: ``streambridge: warning: …`` (one line, whatever the message)."""
    say(f"{PREFIX}: warning: {one_line(message)}")


def print_error(message: str, extra: str = "") -> None:
    """The one line a user error gets on stderr, ``streambridge: error: …`` (plus its detail
    with ``-v``): one prefix for every error, whichever command or layer found it."""
    say(f"{PREFIX}: error: {one_line(message)}")
    if extra and state.verbose:
        say(extra)


def stream_error(name: str, exc: StreamError, body_offset: int = 0) -> UserError:
    """A strict-mode decoding failure as a user error naming the file, frame and byte."""
    raw = exc.raw[:300].decode("utf-8", "replace")
    return UserError(
        f"{name}: frame {exc.frame} (byte {exc.offset + body_offset}): {exc.codec}: expected {exc.expected}",
        f"  frame {exc.frame}: {raw!r}" if raw else "",
    )


# -- protocols -------------------------------------------------------------------------------


def protocol_names() -> list[str]:
    """Codec ids then aliases: everything ``--from/--to/--protocol`` accept as written."""
    return [*codecs.names(), *(alias for name in codecs.names() for alias in codecs.aliases(name))]


def resolve_protocol(name: str, option: str) -> Codec:
    """The codec ``option`` names (see :func:`streambridge.codecs.resolve`), or a user error
    in the registry's own words."""
    try:
        return codecs.get(name)
    except codecs.UnknownProtocol as exc:
        raise UserError(f"{option}: {exc}") from None


def check_framing(codec: Codec, framing: str | None, option: str = "--framing") -> Framing:
    chosen = framing or codec.default_framing
    if chosen not in codec.framings:
        raise UserError(
            f"{option}: {codec.name} has no {chosen!r} framing (expected one of {', '.join(codec.framings)})"
        )
    return chosen


def check_fidelity(value: str | None, default: Fidelity) -> Fidelity:
    """``--fidelity`` checked into its type (``default`` when not given)."""
    from ..codecs.fidelity import parse_fidelity

    try:
        return parse_fidelity(value) if value is not None else default
    except ValueError as exc:
        raise UserError(f"--fidelity: {exc}") from None


FRAMING_SUFFIX = {"sse": ".sse", "ndjson": ".ndjson"}


def complete_framing(incomplete: str) -> list[str]:
    return [f for f in FRAMING_SUFFIX if f.startswith(incomplete)]


# -- the core's diagnostics ------------------------------------------------------------------


class Warnings:
    """The core's diagnostics for one input (codecs log nothing; they keep problems as data),
    said as the CLI says warnings: each as it is taken with ``-v``, else one summary line.

    A bad frame's byte offset counts from the start of the body in the core; ``body_offset``
    (a capture's header block) makes it the offset in the file, as errors and findings say."""

    def __init__(self, name: str, body_offset: int = 0, echo: bool | None = None) -> None:
        self.name = name
        self.body_offset = body_offset
        self.echo = state.verbose if echo is None else echo
        self.kept: list[Diagnostic] = []

    def take(self, source: Translator | Decoder) -> None:
        """Take what ``source`` kept since the last call."""
        for diagnostic in source.take_diagnostics():
            self.kept.append(diagnostic)
            if self.echo:
                warn(self.line(diagnostic))

    def line(self, diagnostic: Diagnostic) -> str:
        return diagnostic.line(self.body_offset)

    def summary(self) -> None:
        """One line for them all (without ``-v``, which said each already)."""
        if self.kept and not self.echo:
            first = one_line(self.line(self.kept[0]))
            more = f" (and {len(self.kept) - 1} more; -v shows them)" if len(self.kept) > 1 else ""
            warn(f"{self.name}: {first}{more}")


# -- outputs ---------------------------------------------------------------------------------


def stdout_binary() -> BinaryIO:
    return typer.get_binary_stream("stdout")


def is_stdio(target: str | Path | None) -> bool:
    """``None`` and ``-`` name stdin or stdout."""
    return target is None or str(target) == "-"


def file_identity(target: str | Path | None, stdio: Literal["stdin", "stdout"]) -> tuple[int, int] | None:
    """(device, inode) of the regular file ``target`` names (``stdin``/``stdout`` for ``-``), or
    None (no such file, a terminal, a pipe): what tells two names of one file apart from two files."""
    try:
        st = (
            os.fstat(typer.get_binary_stream(stdio).fileno()) if target is None or is_stdio(target) else os.stat(target)
        )
    except (OSError, ValueError, AttributeError):  # missing, or a stream without a descriptor
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def same_directory(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def ensure_directory(directory: Path, parents: bool, target: Path) -> None:
    """An output's directory must exist: a missing one is more often a typo than a wish, so it
    is made only when asked (``--parents``)."""
    if directory.is_dir():
        return
    if directory.exists():
        raise UserError(f"{target}: {directory} is not a directory")
    if not parents:
        raise UserError(f"{target}: directory {directory} does not exist (--parents creates it)")
    directory.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def open_output(target: str | Path | None, parents: bool = False) -> Iterator[BinaryIO]:
    """stdout for ``None``/``-``; a regular file (or a new one) written beside its final name and
    moved into place only when the command succeeds, so a failed run never leaves half a
    transcript; a symlink's target replaced the same way (the link stays a link); anything else
    (a device, a FIFO, /dev/stdout) written through, never replaced."""
    if target is None or is_stdio(target):
        out = stdout_binary()
        yield out
        out.flush()
        return
    path = Path(target)
    if _writes_through(path):
        with _open_through(path) as through:
            yield through
        return
    path = Path(os.path.realpath(path))  # a symlink stays one: its target is replaced
    ensure_directory(path.parent, parents, path)
    tmp, out = _part_beside(path)
    try:
        with out:
            yield out
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _about(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _writes_through(path: Path) -> bool:
    """Whether ``-o path`` is written into rather than replaced: anything that exists and is not
    a regular file (a device such as /dev/null, a FIFO, a socket), and a name for one of our
    own descriptors (/dev/stdout, /dev/fd/N), whose replacement would not be what the caller
    reads. Only a regular file (or a new one) gets the atomic replace."""
    try:
        st = os.stat(path)  # follows symlinks: what a link names decides
    except OSError:
        return False
    return not stat.S_ISREG(st.st_mode) or _names_a_descriptor(path)


def _names_a_descriptor(path: Path) -> bool:
    """Whether ``path``'s links lead through /proc or /dev/fd (/dev/stdout → /proc/self/fd/1):
    a name for an open descriptor, which may be a file the shell opened to append to."""
    name = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if name.startswith(("/proc/", "/dev/fd/")):
            return True
        try:
            target = os.readlink(name)
        except OSError:
            return False
        name = os.path.normpath(os.path.join(os.path.dirname(name), target))
    return False


def _open_through(path: Path) -> BinaryIO:
    """Opened to append, never truncated: a device or FIFO has nothing to truncate, and
    /dev/stdout onto a file is the shell's redirection, which already truncated it (``>``) or
    asked to add to it (``>>``)."""
    try:
        return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND), "wb")
    except OSError as exc:
        raise _about(path, exc) from None


def _part_beside(path: Path) -> tuple[Path, BinaryIO]:
    """A new ``.<name>.<random>.part`` beside ``path``, created 0666 less the umask as any Unix
    tool creates a file (mkstemp's 0600 would survive the rename and hide the output)."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _about(path, exc) from None
        return tmp, os.fdopen(fd, "wb")
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file beside it", str(path))


def _about(path: Path, exc: OSError) -> OSError:
    """The same failure, naming the file the user asked for rather than our temporary one."""
    return OSError(exc.errno, exc.strerror, str(path))


def reader_gone() -> NoReturn:
    """stdout's reader went away (``… | head -1``): stop quietly with 0, as any Unix filter
    does (1 means findings here). stdout is pointed at /dev/null first, so that Python's last
    flush of what is still buffered cannot complain ("Exception ignored … BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    raise typer.Exit(0)


def _data_console_class() -> type[Console]:
    from rich.console import Console

    class DataConsole(Console):
        """rich on stdout, where a closed pipe is the reader leaving (see :func:`reader_gone`),
        not the exit code 1 rich makes of it."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return DataConsole


if TYPE_CHECKING:
    DataConsole = Console
else:

    def __getattr__(name: str) -> object:
        """``DataConsole`` on first use: rich is imported by the commands that draw with it."""
        if name == "DataConsole":
            globals()["DataConsole"] = _data_console_class()
            return globals()["DataConsole"]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def stdout_shares_terminal() -> bool:
    """stdout is the very terminal stderr draws on: a bar there would be glued into the data."""
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
        if not (os.isatty(out) and os.isatty(err)):
            return False
        a, b = os.fstat(out), os.fstat(err)
    except (AttributeError, ValueError, OSError):
        return False
    return (a.st_dev, a.st_ino, a.st_rdev) == (b.st_dev, b.st_ino, b.st_rdev)


# -- progress --------------------------------------------------------------------------------


class ProgressBar:
    """A transient byte-count bar on stderr for a long input someone is watching::

        with ProgressBar("big.sse", total=size, streams_stdout=True) as bar:
            for chunk in chunks:
                ...
                bar.update(bytes_done)

    It is drawn only when stderr is a terminal and, for a command that writes its data to
    stdout while the bar is up (``streams_stdout``), stdout is not that same terminal: the bar
    would be glued into the data. ``total=None`` (a live stream) shows bytes and speed. Lines
    from :func:`say` (notes, warnings, errors) go above the bar while it is drawn.
    """

    drawing: ClassVar[Console | None] = None  # the console of the bar being drawn, if any

    def __init__(self, label: str, total: int | None, *, streams_stdout: bool = False) -> None:
        self.label = label
        self.total = total
        self.shown = stderr_is_terminal() and not (streams_stdout and stdout_shares_terminal())
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> ProgressBar:
        if self.shown:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
            )
            console = Console(stderr=True)
            self._progress = Progress(
                *columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total)
            ProgressBar.drawing = console
        return self

    def update(self, completed: int) -> None:
        """``completed`` bytes of ``total`` done."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            ProgressBar.drawing = None
            self._progress.stop()
            self._progress = None

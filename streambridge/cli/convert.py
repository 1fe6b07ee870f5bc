"""``streambridge convert``: one protocol's transcript into another's, streaming.

Chunks go straight from the input through a :class:`~streambridge.Translator` to the output,
so memory does not grow with the file. A directory converts every transcript in it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from ..codecs import Codec, StreamError
from ..translate import Translator
from .common import (
    EXIT_FINDINGS,
    FRAMING_SUFFIX,
    UserError,
    VerboseOption,
    check_framing,
    collect_warnings,
    complete_framing,
    complete_protocol,
    note,
    one_line,
    open_output,
    print_error,
    resolve_protocol,
    set_verbose,
    state,
    stderr_is_terminal,
    stream_error,
    warn_summary,
)
from .transcripts import Source, detect, open_source, transcripts_in


def wants_progress(source: Source) -> bool:
    """A progress bar only for a file read while a person watches stderr."""
    return source.is_file and bool(source.size) and stderr_is_terminal()


@contextlib.contextmanager
def progress_for(source: Source) -> Iterator[Callable[[], None]]:
    if not wants_progress(source):
        yield lambda: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(Path(source.name).name, total=source.size)
        yield lambda: progress.update(task, completed=source.consumed)


def pump(source: Source, translator: Translator, out: BinaryIO, live: bool) -> None:
    """Every received chunk translated and written at once (flushed when someone reads live)."""
    with progress_for(source) as tick:
        for chunk in source.chunks():
            data = translator.feed(chunk)
            if data:
                out.write(data)
                if live:
                    out.flush()
            tick()
        out.write(translator.close())


def convert_one(
    source: Source, output: str | Path | None, target: Codec, from_: str | None, framing: str, strict: bool
) -> int:
    """Convert one input; how many frames were over the size limit (forwarded cut short)."""
    detected = detect(source, from_)
    translator = Translator(
        detected.codec.name, target.name, source_framing=detected.framing, target_framing=framing, strict=strict  # type: ignore[arg-type]
    )
    live = output is None or str(output) == "-"
    with collect_warnings(body_offset=source.body_offset) as warnings:
        try:
            with open_output(output) as out:
                pump(source, translator, out, live)
        except StreamError as exc:
            raise stream_error(source.name, exc, source.body_offset) from None
    warn_summary(source.name, warnings)
    return oversize_frames(source.name, warnings)


def oversize_frames(name: str, records: list[logging.LogRecord]) -> int:
    """Frames over the size limit cannot be forwarded whole (their head goes on as a data part):
    each gets its own warning line, whatever the summary showed."""
    cut = [r for r in records if isinstance(r.args, dict) and r.args.get("kind") == "oversize"]
    for record in cut:
        if not state.verbose and record is not records[0]:  # else already on stderr
            note(f"{name}: warning: {one_line(record.getMessage())}")
    return len(cut)


def convert_directory(
    directory: Path, output: str | None, target: Codec, from_: str | None, framing: str, strict: bool
) -> None:
    if output is None or output == "-":
        raise UserError(f"{directory}: converting a directory needs -o DIRECTORY")
    out_dir = Path(output)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"-o {out_dir}: not a directory (the input is a directory)")
    inside = out_dir.resolve()
    files = [f for f in transcripts_in(directory) if not f.resolve().is_relative_to(inside)]
    if not files:
        raise UserError(f"{directory}: no transcripts in it (*.sse, *.ndjson, *.jsonl, *.http)")
    plan = {f: out_dir / f.relative_to(directory).with_suffix(FRAMING_SUFFIX[framing]) for f in files}
    seen: dict[Path, Path] = {}
    for src, dest in plan.items():
        if dest in seen:
            raise UserError(f"{seen[dest]} and {src} would both be written to {dest}")
        seen[dest] = src
    failed = cut = 0
    for src, dest in plan.items():
        try:
            with open_source(src) as source:
                cut += convert_one(source, dest, target, from_, framing, strict)
        except (UserError, OSError) as exc:
            failed += 1
            print_error(exc.message if isinstance(exc, UserError) else _os_message(exc, src))
    note(f"converted {len(plan) - failed} of {len(plan)} transcripts into {out_dir}")
    if failed:
        raise typer.Exit(2)
    if cut:
        raise typer.Exit(EXIT_FINDINGS)


def _os_message(exc: OSError, path: Path) -> str:
    return f"{exc.filename or path}: {exc.strerror or exc}"


def convert_command(
    input: Annotated[str, typer.Argument(help="Transcript file or directory; - reads stdin.", show_default=True)] = "-",
    to: Annotated[str, typer.Option("--to", "-t", help="Target protocol.", autocompletion=complete_protocol)] = ...,  # type: ignore[assignment]
    from_: Annotated[
        str | None,
        typer.Option("--from", "-f", help="Source protocol (sniffed from the first frames when left out).", autocompletion=complete_protocol),
    ] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Output file or directory; - (default) is stdout.")] = None,
    framing: Annotated[
        str | None, typer.Option(help="Output framing: sse or ndjson (default: the target's own).", autocompletion=complete_framing)
    ] = None,
    strict: Annotated[bool, typer.Option(help="Fail on the first bad frame instead of forwarding it.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Convert a transcript from one protocol into another (streaming, constant memory)."""
    set_verbose(verbose)
    target = resolve_protocol(to, "--to")
    out_framing = check_framing(target, framing)
    if from_ is not None:
        resolve_protocol(from_, "--from")
    path = Path(input)
    if input != "-" and path.is_dir():
        convert_directory(path, output, target, from_, out_framing, strict)
        return
    if output is not None and output != "-" and Path(output).is_dir():
        stem = "stdin" if input == "-" else path.stem
        output = str(Path(output) / (stem + FRAMING_SUFFIX[out_framing]))
    with open_source(input) as source:
        cut = convert_one(source, output, target, from_, out_framing, strict)
    if cut:
        raise typer.Exit(EXIT_FINDINGS)

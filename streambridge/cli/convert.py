"""``streambridge convert``: one protocol's transcript into another's, streaming.

Chunks go straight from the input through a :class:`~streambridge.Translator` to the output,
so memory does not grow with the file. A directory converts every transcript in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, BinaryIO, NoReturn

import typer

from ..codecs import Codec, StreamError
from ..codecs.fidelity import Fidelity
from ..codecs.framing import Framing
from ..transcripts import Source, transcripts_in
from ..translate import Translator
from .common import (
    EXIT_FINDINGS,
    EXIT_USAGE,
    FRAMING_SUFFIX,
    InputFinding,
    UserError,
    VerboseOption,
    Warnings,
    check_fidelity,
    check_framing,
    complete_framing,
    complete_protocol,
    ensure_directory,
    file_identity,
    findings_exit,
    is_stdio,
    note,
    open_output,
    print_error,
    resolve_protocol,
    same_directory,
    say,
    set_verbose,
    stdin_is_terminal,
    stream_error,
    warn,
)
from .limits import FrameGuard
from .options import FRAMING_METAVAR, ForceOption, fidelity_option, protocol_help
from .transcripts import detect, open_source, reading

__all__ = [
    "USAGE",
    "convert_command",
    "convert_directory",
    "convert_one",
    "no_input",
    "oversize_frames",
    "plan_directory",
    "pump",
    "refuse_same_file",
]


def pump(
    source: Source,
    translator: Translator,
    out: BinaryIO,
    live: bool,
    warnings: Warnings | None = None,
    guard: FrameGuard | None = None,
) -> None:
    """Every received chunk translated and written at once (flushed when someone reads live);
    the core's diagnostics go to ``warnings`` as they come; ``guard`` refuses a frame over the
    size limit before it is written."""
    warnings = warnings or Warnings(source.name, source.body_offset)
    with reading(source, streams_stdout=live) as chunks:
        for chunk in chunks:
            data = translator.feed(chunk)
            warnings.take(translator)
            if data:
                if guard is not None:
                    guard.check(data)
                out.write(data)
                if live:
                    out.flush()
        data = translator.close()
        if guard is not None:
            guard.check(data)
        out.write(data)
        warnings.take(translator)


def convert_one(
    source: Source,
    output: str | Path | None,
    target: Codec,
    from_: str | None,
    framing: Framing,
    strict: bool,
    parents: bool,
    fidelity: Fidelity = "exact",
    force: bool = False,
) -> int:
    """Convert one input; how many frames were over the size limit (forwarded cut short)."""
    detected = detect(source, from_, force=force)
    translator = Translator(
        detected.codec.name,
        target.name,
        source_framing=detected.framing,
        target_framing=framing,
        strict=strict,
        fidelity=fidelity,
    )
    live = output is None or str(output) == "-"
    warnings = Warnings(source.name, source.body_offset)
    try:
        with open_output(output, parents) as out:
            pump(source, translator, out, live, warnings, FrameGuard(source.name, target.name, framing))
    except StreamError as exc:
        raise stream_error(source.name, exc, source.body_offset) from None
    warnings.summary()
    return oversize_frames(warnings)


def oversize_frames(warnings: Warnings) -> int:
    """Frames over the size limit cannot be forwarded whole (their head goes on as a data part):
    each gets its own warning line, whatever the summary showed."""
    cut = [d for d in warnings.kept if d.kind == "oversize"]
    for diagnostic in cut:
        if not warnings.echo and diagnostic is not warnings.kept[0]:  # else already on stderr
            warn(f"{warnings.name}: {warnings.line(diagnostic)}")
    return len(cut)


def refuse_same_file(input: str, output: str | None) -> None:
    """Writing over the transcript being read destroys it (``-o`` moves the output over it, a
    shell's ``>`` empties it first): refused before anything is written, as ``cat`` does. Two
    names of one file (``./x``, a link) are one file."""
    identity = file_identity(input, "stdin")
    if identity is not None and identity == file_identity(output, "stdout"):
        where = "stdout" if is_stdio(output) else f"-o {output}"
        raise UserError(
            f"{where} is the input {'stdin' if is_stdio(input) else input}: the conversion would overwrite it"
        )


def plan_directory(directory: Path, out_dir: Path, framing: str) -> dict[Path, Path]:
    """Each transcript under ``directory`` and where its conversion goes (checked: no two into
    one file, none into an input)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"-o {out_dir}: not a directory (the input is a directory)")
    if same_directory(directory, out_dir):
        raise UserError(f"-o {out_dir} is the input directory {directory}: convert it into another directory")
    files = transcripts_in(directory)
    inside = out_dir.resolve()
    if not directory.resolve().is_relative_to(inside):  # a converted/ inside the input holds outputs
        files = [f for f in files if not f.resolve().is_relative_to(inside)]
    if not files:
        raise UserError(f"{directory}: no transcripts in it (*.sse, *.ndjson, *.jsonl, *.http)")
    plan = {f: out_dir / f.relative_to(directory).with_suffix(FRAMING_SUFFIX[framing]) for f in files}
    seen: dict[Path, Path] = {}
    inputs = {file_identity(f, "stdin"): f for f in files}
    for src, dest in plan.items():
        if dest in seen:
            raise UserError(f"{seen[dest]} and {src} would both be written to {dest}")
        seen[dest] = src
        if (identity := file_identity(dest, "stdout")) is not None and identity in inputs:
            raise UserError(f"{src} would be written to {dest}, which is the input {inputs[identity]}")
    return plan


def convert_directory(
    directory: Path,
    output: str | None,
    target: Codec,
    from_: str | None,
    framing: Framing,
    strict: bool,
    parents: bool,
    fidelity: Fidelity = "exact",
    force: bool = False,
) -> None:
    if output is None or output == "-":
        raise UserError(f"{directory}: converting a directory needs -o DIRECTORY")
    out_dir = Path(output)
    plan = plan_directory(directory, out_dir, framing)
    ensure_directory(out_dir.parent, parents, out_dir)
    failed = cut = 0
    for src, dest in plan.items():
        try:
            with open_source(src) as source:
                cut += convert_one(
                    source, dest, target, from_, framing, strict, True, fidelity, force
                )  # below -o: ours
        except InputFinding as exc:
            cut += 1
            print_error(exc.message)
        except (UserError, OSError) as exc:
            failed += 1
            print_error(exc.message if isinstance(exc, UserError) else _os_message(exc, src))
    note(f"converted {len(plan) - failed} of {len(plan)} transcripts into {out_dir}")
    if failed:
        raise typer.Exit(2)
    if cut:
        raise typer.Exit(EXIT_FINDINGS)


USAGE = """\
Usage: streambridge convert [INPUT|-] --to PROTOCOL [-o OUTPUT]
Translates an agent chat stream (a transcript file, a directory of them, or a stream piped to
stdin) into another protocol, sniffing the one it is in. For example:
  streambridge convert run.sse --to oma -o run.ndjson
  curl -sN URL | streambridge convert --to oma
streambridge convert -h lists every option."""


def no_input() -> NoReturn:
    """No file named and stdin a terminal: rather than wait silently for typing, say how it is used."""
    print_error("convert: no input: name a transcript file, or pipe one in (stdin is a terminal)")
    say(USAGE)
    raise typer.Exit(EXIT_USAGE)


def _os_message(exc: OSError, path: Path) -> str:
    return f"{exc.filename or path}: {exc.strerror or exc}"


def convert_command(
    ctx: typer.Context,
    to: Annotated[  # (first: a required option has no default, so it goes before those that have one)
        str,
        typer.Option(
            "--to", "-t", metavar="PROTOCOL", help=protocol_help("Target protocol."), autocompletion=complete_protocol
        ),
    ],
    input: Annotated[
        str, typer.Argument(metavar="FILE|DIR", help="Transcript file or directory; - reads stdin.", show_default=True)
    ] = "-",
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            "-f",
            metavar="PROTOCOL",
            help="Source protocol (sniffed from the first frames when left out).",
            autocompletion=complete_protocol,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", metavar="FILE|DIR", help="Output file or directory; - (default) is stdout."),
    ] = None,
    framing: Annotated[
        str | None,
        typer.Option(
            metavar=FRAMING_METAVAR, help="Output framing (default: the target's own).", autocompletion=complete_framing
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on the first bad frame instead of forwarding it.")
    ] = False,
    parents: Annotated[bool, typer.Option("--parents", help="Create -o's missing directories.")] = False,
    fidelity: Annotated[str | None, fidelity_option("exact")] = None,
    force: ForceOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Convert a transcript from one protocol into another (streaming, constant memory)."""
    set_verbose(verbose)
    given = ctx.get_parameter_source("input")
    if given is not None and given.name == "DEFAULT" and stdin_is_terminal():
        no_input()
    target = resolve_protocol(to, "--to")
    out_framing = check_framing(target, framing)
    level = check_fidelity(fidelity, "exact")  # a transcript converted is an archive: exact
    if from_ is not None:
        resolve_protocol(from_, "--from")
    path = Path(input)
    if input != "-" and path.is_dir():
        convert_directory(path, output, target, from_, out_framing, strict, parents, level, force)
        return
    if output is not None and output != "-" and Path(output).is_dir():
        stem = "stdin" if input == "-" else path.stem
        output = str(Path(output) / (stem + FRAMING_SUFFIX[out_framing]))
    refuse_same_file(input, output)
    if output is not None and not is_stdio(output):
        ensure_directory(Path(output).parent, parents, Path(output))
    with open_source(input) as source, findings_exit():
        cut = convert_one(source, output, target, from_, out_framing, strict, parents, level, force)
    if cut:
        raise typer.Exit(EXIT_FINDINGS)

"""``streambridge validate``: check a transcript against its protocol's rules.

The checking is the library's (:mod:`streambridge.validate`); this command reads the file
(with a progress bar), skips the rules ``--ignore`` names, prints the report as text or JSON
and exits 1 when there are findings. Every rule has a stable id documented in docs/cli.md.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import msgspec
import typer

from ..validate import Report, Validator, all_rules
from .common import EXIT_FINDINGS, VerboseOption, complete_protocol, findings_exit, set_verbose
from .options import ForceOption, protocol_help
from .transcripts import detect, open_source, reading

__all__ = ["complete_rule", "known_rules", "validate_command"]


def _print_text(report: Report) -> None:
    for f in report.findings:
        where = {None: "end of input", 0: "capture header"}.get(f.frame, f"frame {f.frame}")
        if f.offset is not None:
            where += f" (byte {f.offset})"
        typer.echo(f"{report.file}: {where}: {f.rule} {f.name} [{f.severity}]: {f.message}")
    counts = f"{report.protocol}, {report.framing}, {report.frames} frames, {report.events} events"
    if report.findings:
        typer.echo(f"{report.file}: {len(report.findings)} finding(s), {report.errors} error(s) ({counts})")
    else:
        typer.echo(f"{report.file}: clean ({counts})")


def known_rules(values: list[str] | None) -> list[str] | None:
    """``--ignore``: rule ids of :func:`~streambridge.validate.all_rules` (any case); an unknown
    id is a usage error, not a no-op."""
    unknown = [value for value in values or () if value.upper() not in all_rules()]
    if unknown:
        raise typer.BadParameter(f"unknown rule {', '.join(map(repr, unknown))} (rules: {', '.join(all_rules())})")
    return values


def complete_rule(incomplete: str) -> list[tuple[str, str]]:
    return [(rule, name) for rule, (name, _, _) in all_rules().items() if rule.startswith(incomplete.upper())]


def validate_command(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript or capture file; - reads stdin.")],
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            "-p",
            metavar="PROTOCOL",
            help=protocol_help("Protocol (sniffed when left out)."),
            autocompletion=complete_protocol,
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="RULE",
            callback=known_rules,
            autocompletion=complete_rule,
            help="A rule id to skip, e.g. SB006 (repeatable; see docs/cli.md for the rules).",
        ),
    ] = None,
    force: ForceOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Check a transcript against its protocol's rules; exit 1 when there are findings."""
    set_verbose(verbose)
    with open_source(file) as source, findings_exit():
        detected = detect(source, protocol, "--protocol", report=False, force=force)
        validator = Validator(detected.codec, detected.framing, source.capture, source.body_offset)
        with reading(source) as chunks:
            validator.run(chunks)
    report = validator.report(source.name)
    skip = {rule.upper() for rule in ignore or ()}
    report.findings = [f for f in report.findings if f.rule not in skip]
    if json_output:
        typer.echo(msgspec.json.encode({**asdict(report), "clean": report.clean}).decode())
    else:
        _print_text(report)
    if report.findings:
        raise typer.Exit(EXIT_FINDINGS)

"""``streambridge validate``: check a transcript against its protocol's rules.

The transcript is cut into frames and each frame is fed to the codec's (lenient) decoder, so
every event is known with the frame that produced it. Rules look at those events plus framing
facts (line endings, SSE event names, ``id:`` lines, the capture's status and headers). Every
rule has a stable id (``SB…``) documented in docs/cli.md.

The rules every protocol shares are here; a protocol's own (its start, its steps, its sequence
numbers, …) live in its package, a :class:`~streambridge.codecs.codec.Rules` its codec names,
which the validator calls at fixed points. The catalogue of ids stays here: ids are global.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Annotated

import msgspec
import typer
from msgspec import UNSET

from .. import codecs
from ..codecs import Codec
from ..codecs.framing import Frame, Framing, FramingError
from ..events import (
    DataPart,
    Elicitation,
    Event,
    Malformed,
    RunStart,
    Terminal,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)
from ..transcripts import Capture, FrameCutter, Piece, Source
from .common import EXIT_FINDINGS, VerboseOption, complete_protocol, one_line, set_verbose
from .options import protocol_help
from .transcripts import detect, open_source, reading

#: rule id → (name, severity, what it checks). Ids are stable: never reuse or renumber one.
#: Retired: SB014 (``done`` while a nest step is open): the real server ends a cancelled run
#: so, and the published client closes the step itself.
RULES: dict[str, tuple[str, str, str]] = {
    "SB001": (
        "frame-malformed",
        "error",
        "a frame that does not decode: bad JSON, missing or ill-typed fields, invalid values",
    ),
    "SB002": ("frame-unterminated", "error", "the input ends inside a frame (SSE: no empty line after the last event)"),
    "SB003": ("frame-oversize", "error", "a frame larger than the size limit (16 MiB)"),
    "SB004": (
        "line-endings",
        "warning",
        "CR or CRLF line endings (LF only: the published nest client finds no frame in CRLF)",
    ),
    "SB005": (
        "event-name-unexpected",
        "warning",
        "an SSE event name the protocol does not use (nest: meta, done, error; others: none)",
    ),
    "SB006": (
        "kind-unknown",
        "warning",
        "a frame of a kind/type the protocol does not define (forwarded as a passthrough)",
    ),
    "SB007": ("field-unknown", "warning", "a known kind with fields the protocol does not define"),
    "SB010": ("terminal-missing", "error", "the stream ends without its terminal event (truncated, never a success)"),
    "SB011": ("after-terminal", "error", "a frame after the terminal event (exactly one terminal, and it is last)"),
    "SB012": (
        "start-not-first",
        "error",
        "the run does not open with its start (agentkit turn_start, nest event: meta)",
    ),
    "SB013": ("start-repeated", "error", "a second run start (turn_start, event: meta) in one stream"),
    "SB015": ("step-unbalanced", "error", "nest: step-finish without an open step, or step-start inside an open step"),
    "SB016": ("content-outside-step", "warning", "nest: text, reasoning or tool frames outside a step"),
    "SB020": (
        "tool-call-unknown",
        "error",
        "a tool outcome, input delta, approval or elicitation for a call not announced before it",
    ),
    "SB021": ("tool-outcome-repeated", "error", "a second outcome for one tool call"),
    "SB022": ("tool-call-repeated", "warning", "nest, oma: the same call id announced twice"),
    "SB023": ("tool-call-unsettled", "warning", "a successful run with tool calls that never got an outcome"),
    "SB030": ("turn-id-mismatch", "error", "agentkit: turn_end.turnId differs from turn_start's"),
    "SB031": ("message-id-mismatch", "error", "agentkit: turn_end.messageId differs from turn_start's"),
    "SB032": (
        "run-id-mismatch",
        "error",
        "nest: the meta runId/threadId differ from the X-Agent-Run-Id/X-Agent-Thread-Id headers",
    ),
    "SB033": (
        "sequence-order",
        "error",
        "nest: id: sequence numbers that are not strictly increasing positive integers",
    ),
    "SB034": ("sequence-on-control", "error", "nest: an id: line on a meta, done or error frame"),
    "SB040": ("terminal-text-mismatch", "warning", "agentkit: result.text differs from the streamed text deltas"),
    "SB041": (
        "failure-status-mismatch",
        "warning",
        "a terminal whose failure.status differs from its status, or a success with a failure",
    ),
    "SB050": ("http-status", "error", "a capture whose HTTP status is not 2xx"),
    "SB051": ("content-type", "warning", "a capture whose content-type does not match the framing"),
}


def all_rules() -> dict[str, tuple[str, str, str]]:
    """The validator's rules and those of every registered protocol's own (its ``Rules.catalogue``)."""
    merged = dict(RULES)
    for codec in codecs.registered().values():
        merged.update(codec.rules.catalogue)
    return merged


_OUTCOMES = (ToolOutput, ToolError, ToolDenied)


@dataclass
class Finding:
    rule: str
    name: str
    severity: str
    frame: int | None
    offset: int | None
    message: str


@dataclass
class Report:
    file: str
    protocol: str
    framing: str
    frames: int
    events: int
    findings: list[Finding]


class Validator:
    """Feeds one transcript frame by frame and applies the generic rules and the codec's own
    (it is their :class:`~streambridge.codecs.codec.RuleContext`)."""

    def __init__(self, codec: Codec, framing: Framing, capture: Capture | None, body_offset: int) -> None:
        self.codec = codec
        self.name = codec.name
        self.framing = framing
        self.capture = capture
        self.body_offset = body_offset
        self.decoder = codec.decoder(framing)
        self.findings: list[Finding] = []
        self.frames = 0
        self.events = 0
        self._frame: tuple[int | None, int | None] = (None, None)
        self._problem_frames: set[int] = set()
        self._crlf_seen = False
        self._starts = 0
        self._first_event = True
        self._terminal_frame: int | None = None
        self._announced: set[str] = set()
        self._called: set[str] = set()
        self._started_input: set[str] = set()
        self._settled: set[str] = set()
        self.rules = codec.rules(self)

    # -- driving -------------------------------------------------------------------------

    def run(self, chunks: Iterable[bytes]) -> None:
        self._capture_rules()
        cutter = FrameCutter(self.framing)
        for chunk in chunks:  # (findings say what the decoder's diagnostics would)
            for piece in cutter.feed(chunk):
                self._piece(piece)
        for piece in cutter.close():
            self._piece(piece)
        self._end()

    def add(self, rule: str, message: str, frame: int | None = None, offset: int | None = None) -> None:
        name, severity, _ = all_rules()[rule]
        if frame is None and offset is None:
            frame, offset = self._frame
        file_offset = None if offset is None else offset + self.body_offset
        self.findings.append(Finding(rule, name, severity, frame, file_offset, one_line(message)))

    def _piece(self, piece: Piece) -> None:
        ignored = self.decoder.ignored_after_terminal
        if not self._crlf_seen and b"\r" in piece.raw:
            self._crlf_seen = True
            first = piece.frames[0] if piece.frames else None
            self.add("SB004", "CR line endings; write LF only", *(self._where(first)))
        for problem in piece.problems:
            self._framing_problem(problem)
        for frame in piece.frames:
            self.frames = max(self.frames, frame.index)
            self._frame = (frame.index, frame.offset)
            self._frame_rules(frame)
        events = self.decoder.feed(piece.raw)
        if self.decoder.ignored_after_terminal > ignored:
            self.add("SB011", f"frame after the terminal event of frame {self._terminal_frame}")
        for event in events:
            self._event(event)

    def _where(self, frame: Frame | None) -> tuple[int | None, int | None]:
        return (frame.index, frame.offset) if frame else self._frame

    def header(self, name: str) -> str | None:
        """A capture header, for the codec's rules (None without a capture)."""
        return self.capture.header(name) if self.capture is not None else None

    def start(self) -> None:
        """One run start, wherever the codec's rules see it (decoded, or a frame as written)."""
        self._starts += 1
        if self._starts > 1:
            self.add("SB013", f"a second {self.decoder.start_words or 'run start'}")

    def _end(self) -> None:
        terminated = self.decoder.terminated
        tail = self.decoder.close()
        self._frame = (None, None)
        for event in tail:
            self._event(event)
        self.rules.end()
        if not terminated:
            self.add("SB010", f"the stream ends without {self.decoder.terminal_words or 'a terminal event'}")

    # -- framing facts -------------------------------------------------------------------

    def _capture_rules(self) -> None:
        if self.capture is None:
            return
        if not 200 <= self.capture.status < 300:
            self.add("SB050", f"the server answered HTTP {self.capture.status}", 0, -self.body_offset)
        content_type = self.capture.header("content-type")
        expected = self.codec.content_types.get(self.framing, "")
        if content_type is not None and content_type.split(";")[0].strip().lower() != expected:
            self.add(
                "SB051",
                f"content-type {content_type!r}, expected {expected!r} for {self.framing}",
                0,
                -self.body_offset,
            )

    def _framing_problem(self, problem: FramingError) -> None:
        self._problem_frames.add(problem.index)
        rule = "SB003" if problem.kind == "oversize" else "SB002"
        self.add(rule, f"expected {problem}", problem.index, problem.offset)

    def _frame_rules(self, frame: Frame) -> None:
        name, data = self.rules.named(frame)
        if name and not self.rules.known_name(name):
            self.add("SB005", f"SSE event name {name!r}: {self._event_names_used()}")
        self.rules.frame(frame, name, data)

    def _event_names_used(self) -> str:
        """``<protocol> frames have none`` or ``<protocol> uses only a, b and c``."""
        names = self.rules.event_names
        if not names:
            return f"{self.name} frames have none"
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"{self.name} uses only {listed}"

    # -- events --------------------------------------------------------------------------

    def _event(self, event: Event) -> None:
        self.events += 1
        kind = type(event)
        if kind is Malformed:
            if event.frame not in self._problem_frames:  # type: ignore[attr-defined]
                self.add("SB001", event.error, event.frame, event.offset)  # type: ignore[attr-defined]
            return
        self._first(event)
        unknown = [] if event.extra is UNSET else [k for k in event.extra if k not in self.rules.kept_members]
        if unknown and event.__struct_config__.tag in self.codec.native:
            self.add("SB007", f"unknown field(s) {', '.join(unknown)} on a {event.__struct_config__.tag} event")
        if event.verbatim is not UNSET and event.verbatim.origin == self.name:
            members = ", ".join(m for m in event.verbatim.members if m not in self.rules.kept_members)
            if members:
                self.add("SB007", f"unknown field(s) inside {members} of a {event.__struct_config__.tag} event")
        if kind is DataPart:
            self._passthrough(event)  # type: ignore[arg-type]
        elif kind is RunStart:
            self.rules.run_start(event)  # type: ignore[arg-type]
        elif kind is Terminal:
            self._terminal(event)  # type: ignore[arg-type]
        self.rules.event(event)
        self._tools(event)

    def _first(self, event: Event) -> None:
        if not self._first_event:
            return
        self._first_event = False
        self.rules.first_event(event)

    def _passthrough(self, part: DataPart) -> None:
        if part.origin != self.name or self.rules.known_kind(part.name):
            return
        tag = self.decoder.tag_field  # each protocol's own word: nest's kind, agentkit's and oma's type
        self.add("SB006", f"unknown {tag} {part.name!r}" if part.name else f"a frame without a {tag}")

    def _terminal(self, end: Terminal) -> None:
        if end.synthetic:
            return
        self._terminal_frame = self._frame[0]
        self.rules.terminal(end)
        failure = end.failure
        if failure is not UNSET and (failure.status != end.status or end.status == "succeeded"):
            self.add("SB041", f"status {end.status!r} with failure.status {failure.status!r}")
        if end.status == "succeeded":
            unsettled = sorted(self._announced - self._settled)
            if unsettled:
                self.add("SB023", f"tool call(s) without an outcome: {', '.join(unsettled)}")

    def _tools(self, event: Event) -> None:
        kind = type(event)
        call_id: str = getattr(event, "call_id", "")
        if kind is ToolInputStart:
            if call_id in self._started_input:
                self.add("SB022", f"tool-input-start for call {call_id!r} again")
            self._started_input.add(call_id)
            self._announced.add(call_id)
        elif kind is ToolCall:
            if call_id in self._called and not self.rules.repeated_call_replaces:
                self.add("SB022", f"call {call_id!r} announced again")
            self._called.add(call_id)
            self._announced.add(call_id)
        elif kind is ToolInputDelta:
            if call_id not in self._announced:
                self.add("SB020", f"input delta for call {call_id!r} before its tool-input-start")
        elif kind in _OUTCOMES:
            if call_id not in self._announced:
                self.add("SB020", f"outcome for call {call_id!r}, which was not announced before it")
            elif call_id in self._settled:
                self.add("SB021", f"a second outcome for call {call_id!r}")
            self._settled.add(call_id)
        elif kind in (ToolApprovalRequest, ToolApprovalSettled, Elicitation) and call_id not in self._announced:
            self.add("SB020", f"{event.__struct_config__.tag} for call {call_id!r}, which was not announced before it")


def validate_source(source: Source, protocol: str | None) -> Report:
    detected = detect(source, protocol, "--protocol", report=False)
    validator = Validator(detected.codec, detected.framing, source.capture, source.body_offset)
    with reading(source) as chunks:
        validator.run(chunks)
    return Report(
        source.name, detected.codec.name, detected.framing, validator.frames, validator.events, validator.findings
    )


def _print_text(report: Report) -> None:
    for f in report.findings:
        where = {None: "end of input", 0: "capture header"}.get(f.frame, f"frame {f.frame}")
        if f.offset is not None:
            where += f" (byte {f.offset})"
        typer.echo(f"{report.file}: {where}: {f.rule} {f.name} [{f.severity}]: {f.message}")
    counts = f"{report.protocol}, {report.framing}, {report.frames} frames, {report.events} events"
    if report.findings:
        errors = sum(1 for f in report.findings if f.severity == "error")
        typer.echo(f"{report.file}: {len(report.findings)} finding(s), {errors} error(s) ({counts})")
    else:
        typer.echo(f"{report.file}: clean ({counts})")


def known_rules(values: list[str] | None) -> list[str] | None:
    """``--ignore``: rule ids from RULES (any case); an unknown id is a usage error, not a no-op."""
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
    verbose: VerboseOption = False,
) -> None:
    """Check a transcript against its protocol's rules; exit 1 when there are findings."""
    set_verbose(verbose)
    with open_source(file) as source:
        report = validate_source(source, protocol)
    skip = {rule.upper() for rule in ignore or ()}
    report.findings = [f for f in report.findings if f.rule not in skip]
    if json_output:
        typer.echo(msgspec.json.encode({**asdict(report), "clean": not report.findings}).decode())
    else:
        _print_text(report)
    if report.findings:
        raise typer.Exit(EXIT_FINDINGS)

"""The validator: one transcript checked frame by frame against the rules, as data.

The transcript is cut into frames and each frame is fed to the codec's (lenient) decoder, so
every event is known with the frame that produced it. Rules look at those events plus framing
facts (line endings, SSE event names, ``id:`` lines, the capture's status and headers). The
rules every protocol shares are checked here; a protocol's own (its start, its steps, its
sequence numbers, …) live in its package, a :class:`~streambridge.codecs.codec.Rules` its codec
names, which the :class:`Validator` calls at fixed points as their
:class:`~streambridge.codecs.codec.RuleContext`. What comes out is a :class:`Report` of
:class:`Finding` objects; printing them is the CLI's business.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from msgspec import UNSET

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
from ..transcripts import Capture, FrameCutter, Piece, Source, detect, open_source
from .rules import all_rules

__all__ = ["Finding", "Report", "Validator", "validate", "validate_file", "validate_source"]

_OUTCOMES = (ToolOutput, ToolError, ToolDenied)
_ANNOUNCED_BY_CALLS = (ToolApprovalRequest, ToolApprovalSettled, Elicitation)


@dataclass
class Finding:
    """One broken rule: its id, name and severity, where (frame number, byte offset in the
    file; None for the end of input, frame 0 for a capture's header), and what was seen."""

    rule: str
    name: str
    severity: str
    frame: int | None
    offset: int | None
    message: str


@dataclass
class Report:
    """What validating one transcript found: its protocol and framing, how many frames and
    events it held, and the findings in the order they were found."""

    file: str
    protocol: str
    framing: str
    frames: int
    events: int
    findings: list[Finding]

    @property
    def clean(self) -> bool:
        """No findings at all (warnings count)."""
        return not self.findings

    @property
    def errors(self) -> int:
        """How many findings are errors (the rest are warnings)."""
        return sum(1 for f in self.findings if f.severity == "error")


def _one_line(text: str) -> str:
    return " ".join(text.split())


class Validator:
    """Feeds one transcript frame by frame and applies the generic rules and the codec's own
    (it is their :class:`~streambridge.codecs.codec.RuleContext`)."""

    def __init__(self, codec: Codec, framing: Framing, capture: Capture | None, body_offset: int = 0) -> None:
        self.codec = codec
        self.name = codec.name
        self.framing = framing
        self.capture = capture
        self.body_offset = body_offset
        self.decoder = codec.decoder(framing)
        self.catalogue = all_rules()
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
        """Check a whole body, given in chunks of any size."""
        self._capture_rules()
        cutter = FrameCutter(self.framing)
        for chunk in chunks:  # (findings say what the decoder's diagnostics would)
            for piece in cutter.feed(chunk):
                self._piece(piece)
        for piece in cutter.close():
            self._piece(piece)
        self._end()

    def report(self, file: str) -> Report:
        """What :meth:`run` found, as a report on ``file``."""
        return Report(file, self.name, self.framing, self.frames, self.events, self.findings)

    def add(self, rule: str, message: str, frame: int | None = None, offset: int | None = None) -> None:
        name, severity, _ = self.catalogue[rule]
        if frame is None and offset is None:
            frame, offset = self._frame
        file_offset = None if offset is None else offset + self.body_offset
        self.findings.append(Finding(rule, name, severity, frame, file_offset, _one_line(message)))

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
            if isinstance(event, Malformed) and event.frame == self.decoder.cut_frame:  # the input ended in it
                self._problem_frames.add(event.frame)
                self.add("SB002", event.error, event.frame, event.offset)
                continue
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
        if isinstance(event, Malformed):
            if event.frame not in self._problem_frames:
                self.add("SB001", event.error, event.frame, event.offset)
            return
        self._first(event)
        self._unknown_fields(event)
        if isinstance(event, DataPart):
            self._passthrough(event)
        elif isinstance(event, RunStart):
            self.rules.run_start(event)
        elif isinstance(event, Terminal):
            self._terminal(event)
        self.rules.event(event)
        self._tools(event)

    def _unknown_fields(self, event: Event) -> None:
        tag = event.__struct_config__.tag
        unknown = [] if event.extra is UNSET else [k for k in event.extra if k not in self.rules.kept_members]
        if unknown and tag in self.codec.native:
            self.add("SB007", f"unknown field(s) {', '.join(unknown)} on a {tag} event")
        if event.verbatim is not UNSET and event.verbatim.origin == self.name:
            members = ", ".join(m for m in event.verbatim.members if m not in self.rules.kept_members)
            if members:
                self.add("SB007", f"unknown field(s) inside {members} of a {tag} event")

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
        call_id: str = getattr(event, "call_id", "")
        if isinstance(event, ToolInputStart):
            if call_id in self._started_input:
                self.add("SB022", f"tool-input-start for call {call_id!r} again")
            self._started_input.add(call_id)
            self._announced.add(call_id)
        elif isinstance(event, ToolCall):
            if call_id in self._called and not self.rules.repeated_call_replaces:
                self.add("SB022", f"call {call_id!r} announced again")
            self._called.add(call_id)
            self._announced.add(call_id)
        elif isinstance(event, ToolInputDelta):
            if call_id not in self._announced:
                self.add("SB020", f"input delta for call {call_id!r} before its tool-input-start")
        elif isinstance(event, _OUTCOMES):
            self._outcome(call_id)
        elif isinstance(event, _ANNOUNCED_BY_CALLS) and call_id not in self._announced:
            tag = event.__struct_config__.tag
            self.add("SB020", f"{tag} for call {call_id!r}, which was not announced before it")

    def _outcome(self, call_id: str) -> None:
        if call_id not in self._announced:
            self.add("SB020", f"outcome for call {call_id!r}, which was not announced before it")
        elif call_id in self._settled:
            self.add("SB021", f"a second outcome for call {call_id!r}")
        self._settled.add(call_id)


# -- the simple API --------------------------------------------------------------------------


def validate_source(source: Source, protocol: str | Codec | None = None) -> Report:
    """Check an open transcript (a :class:`~streambridge.transcripts.Source`) read to its end;
    ``protocol`` names it (a name or a codec) or, None, it is sniffed from the first frames
    (:class:`~streambridge.transcripts.ProtocolNotDetected` when they do not tell)."""
    detected = detect(source, protocol)
    validator = Validator(detected.codec, detected.framing, source.capture, source.body_offset)
    validator.run(source.chunks())
    return validator.report(source.name)


def validate(
    data: bytes, protocol: str | Codec | None = None, *, capture: Capture | None = None, name: str = "<bytes>"
) -> Report:
    """Check a transcript held in memory: a stream body, or a capture file's bytes (status line,
    headers, empty line, body). ``capture`` gives the status and headers of the response a bare
    body came in (the capture rules, SB050 and SB051, and a protocol's header rules use them);
    ``name`` is the report's ``file``."""
    with Source.from_bytes(data, name, capture) as source:
        return validate_source(source, protocol)


def validate_file(path: str | os.PathLike[str], protocol: str | Codec | None = None) -> Report:
    """Check a transcript or capture file (``-`` reads stdin), streaming: constant memory."""
    with open_source(path) as source:
        return validate_source(source, protocol)

"""``streambridge diff``: do two transcripts say the same thing? Even in different protocols.

Both files are decoded to events and normalised before comparing:

* text and reasoning deltas are merged (how a model chunked its text is not its meaning);
* ids that producers generate (run, thread, turn, message, call and UI ids) are replaced by
  their order of appearance (``call#1``), so joins are still checked but not the values;
* structure a codec invented (``synthetic`` steps and run starts) is dropped, and so are
  transport cursors (SSE ``id:`` lines, ``event_id``).

Across protocols only what both say natively is compared: the event types both codecs have,
and for the common ones their core fields (text, tool name and input, outputs as JSON, the
terminal's status and failure). ``--exact-ids`` compares id values as well.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import typer
from msgspec import UNSET

from ..codecs import Codec
from ..codecs.base import default_failure
from ..events import (
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    encode_event,
)
from .common import EXIT_FINDINGS, VerboseOption, collect_warnings, complete_protocol, set_verbose
from .options import protocol_help
from .transcripts import Source, cut_frames, detect, open_source

_STRUCTURE = (RunStart, StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd)
_MERGED = (TextDelta, ReasoningDelta)
_ID_KINDS = {
    "callId": "call",
    "parentId": "call",
    "toolCallId": "call",
    "messageId": "msg",
    "uiId": "ui",
    "runId": "run",
    "threadId": "thread",
    "turnId": "turn",
    "correlationId": "corr",
}
#: across protocols, the fields compared for each event type (others: everything).
_CORE_FIELDS = {
    "text": ("text",),
    "reasoning": ("text",),
    "run-start": (),
    "tool-call": ("callId", "name", "input"),
    "tool-output": ("callId", "output"),
    "tool-error": ("callId", "error"),
    "tool-denied": ("callId", "reason"),
    "terminal": ("status", "failure"),
    "data": ("name", "data"),
    "malformed": ("raw",),
}
_IGNORED = ("synthetic", "eventId")  # invented structure and transport cursors (SSE ids)
_decode_any = msgspec.json.Decoder()


@dataclass
class Item:
    """One normalised event: its comparison key, the frame it came from, a short rendering."""

    key: str
    frame: int | None

    @property
    def shown(self) -> str:
        return self.key if len(self.key) <= 160 else self.key[:157] + "..."


@dataclass
class Side:
    name: str
    codec: Codec
    events: list[tuple[Event, int | None]]


def decode_side(source: Source, protocol: str | None, option: str) -> Side:
    """Every event of a transcript with the frame that produced it."""
    detected = detect(source, protocol, option, report=False)
    decoder = detected.codec.decoder(detected.framing)  # type: ignore[arg-type]
    events: list[tuple[Event, int | None]] = []
    with collect_warnings(echo=False):
        frame: int | None = None
        for piece in cut_frames(source.chunks(), detected.framing):
            if piece.frames:
                frame = piece.frames[-1].index
            events.extend((e, frame) for e in decoder.feed(piece.raw))
        events.extend((e, None) for e in decoder.close())
    return Side(source.name, detected.codec, events)


class _Ids:
    """Generated ids by order of appearance, one counter per kind of id."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], str] = {}

    def __call__(self, field: str, value: str) -> str:
        kind = _ID_KINDS[field]
        key = (kind, value)
        if key not in self.seen:
            count = sum(1 for k in self.seen if k[0] == kind)
            self.seen[key] = f"{kind}#{count + 1}"
        return self.seen[key]


def _as_json(value: Any) -> Any:
    """A JSON string that holds a JSON object or array compares as that value (agentkit's
    ``resultText`` is text where nest's ``output`` is JSON)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _decode_any.decode(value)
        except msgspec.DecodeError:
            return value
    return value


def _core(tag: str, fields: dict[str, Any], event: Event) -> dict[str, Any]:
    keep = _CORE_FIELDS.get(tag)
    if tag == "tool-call" and "input" not in fields and "argumentsJson" in fields:
        fields["input"] = _as_json(fields["argumentsJson"])
    if tag == "tool-output":
        fields["output"] = _as_json(fields.get("output"))
    if tag == "terminal":
        if event.status == "succeeded":  # type: ignore[attr-defined]
            fields.pop("failure", None)
        else:
            _failure(fields, event)  # type: ignore[arg-type]
    if keep is None:
        return {k: v for k, v in fields.items() if k not in ("messageId", "extra")}
    return {k: fields[k] for k in keep if k in fields}


def _failure(fields: dict[str, Any], end: Terminal) -> None:
    failure = end.failure if end.failure is not UNSET else default_failure(end.status)
    fields["failure"] = {"code": failure.code if failure.code is not UNSET else None, "message": failure.message}


def normalise(events: Iterable[tuple[Event, int | None]], vocabulary: frozenset[str] | None, exact_ids: bool) -> list[Item]:
    ids = _Ids()
    items: list[Item] = []
    merged: tuple[str, dict[str, Any], int | None] | None = None
    for event, frame in events:
        tag = event.__struct_config__.tag  # type: ignore[attr-defined]
        if (event.synthetic and isinstance(event, _STRUCTURE)) or (vocabulary is not None and tag not in vocabulary):
            continue
        fields = _decode_any.decode(encode_event(event))
        del fields["type"]
        for name in _IGNORED:
            fields.pop(name, None)
        if vocabulary is not None:
            fields = _core(tag, fields, event)
        if not exact_ids:
            fields = {k: ids(k, v) if k in _ID_KINDS and isinstance(v, str) else v for k, v in fields.items()}
        if isinstance(event, _MERGED):
            same = merged is not None and merged[0] == tag and merged[1].get("messageId") == fields.get("messageId")
            if same:
                merged[1]["text"] = merged[1].get("text", "") + fields.get("text", "")  # type: ignore[index]
                continue
            _flush(merged, items)
            merged = (tag, fields, frame)
            continue
        _flush(merged, items)
        merged = None
        items.append(Item(_key(tag, fields), frame))
    _flush(merged, items)
    return items


def _flush(merged: tuple[str, dict[str, Any], int | None] | None, items: list[Item]) -> None:
    if merged is not None:
        items.append(Item(_key(merged[0], merged[1]), merged[2]))


def _key(tag: str, fields: dict[str, Any]) -> str:
    return f"{tag} {msgspec.json.encode(fields, order='sorted').decode()}"


def vocabulary_for(a: Codec, b: Codec) -> frozenset[str] | None:
    """None (everything) for one protocol; otherwise the event types both say natively, plus
    passthroughs (unknown kinds, bad frames), which every codec forwards verbatim."""
    if a is b:
        return None
    return (a.native & b.native) | {"data", "malformed"}


def _where(item: Item | None) -> str:
    if item is None:
        return "-"
    return "end" if item.frame is None else f"frame {item.frame}"


def report_differences(a: Side, b: Side, left: list[Item], right: list[Item], limit: int) -> int:
    """Print the first ``limit`` differing hunks; return how many hunks differ."""
    matcher = difflib.SequenceMatcher(a=[i.key for i in left], b=[i.key for i in right], autojunk=False)
    hunks = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    for tag, i1, i2, j1, j2 in hunks[:limit]:
        first_a = left[i1] if i1 < len(left) else None
        first_b = right[j1] if j1 < len(right) else None
        typer.echo(f"@@ event {i1 + 1} of A ({_where(first_a)}), event {j1 + 1} of B ({_where(first_b)}): {tag}")
        for item in left[i1:i2]:
            typer.echo(f"- A {_where(item)}: {item.shown}")
        for item in right[j1:j2]:
            typer.echo(f"+ B {_where(item)}: {item.shown}")
    if len(hunks) > limit:
        typer.echo(f"... and {len(hunks) - limit} more difference(s) (--max shows more)")
    return len(hunks)


def diff_command(
    a: Annotated[str, typer.Argument(metavar="A", help="First transcript or capture file.")],
    b: Annotated[str, typer.Argument(metavar="B", help="Second transcript or capture file.")],
    protocol_a: Annotated[
        str | None,
        typer.Option("--protocol-a", metavar="PROTOCOL", help=protocol_help("Protocol of A (sniffed when left out)."),
                     autocompletion=complete_protocol),
    ] = None,
    protocol_b: Annotated[
        str | None,
        typer.Option("--protocol-b", metavar="PROTOCOL", help="Protocol of B (sniffed when left out).", autocompletion=complete_protocol),
    ] = None,
    exact_ids: Annotated[bool, typer.Option("--exact-ids", help="Compare id values too (by default generated ids are ignored).")] = False,
    limit: Annotated[int, typer.Option("--max", metavar="N", min=0, help="Show at most this many differences.")] = 5,
    verbose: VerboseOption = False,
) -> None:
    """Compare two transcripts by meaning (even across protocols); exit 1 when they differ."""
    set_verbose(verbose)
    with open_source(a) as source:
        side_a = decode_side(source, protocol_a, "--protocol-a")
    with open_source(b) as source:
        side_b = decode_side(source, protocol_b, "--protocol-b")
    vocabulary = vocabulary_for(side_a.codec, side_b.codec)
    left = normalise(side_a.events, vocabulary, exact_ids)
    right = normalise(side_b.events, vocabulary, exact_ids)
    typer.echo(f"A: {side_a.name} ({side_a.codec.name}, {len(left)} events)")
    typer.echo(f"B: {side_b.name} ({side_b.codec.name}, {len(right)} events)")
    if vocabulary is not None:
        shown = ", ".join(sorted(vocabulary - {"data", "malformed"}))
        typer.echo(f"compared: what both say natively ({shown}) and passthroughs")
    differences = report_differences(side_a, side_b, left, right, max(limit, 1))
    if differences:
        typer.echo(f"{differences} difference(s)")
        raise typer.Exit(EXIT_FINDINGS)
    typer.echo("no differences")

"""Events made comparable: what two transcripts are compared by, whatever their protocol.

A decoder writes its events into a :class:`Normaliser` (it is the decoder's sink), which turns
each into an :class:`Item`: a comparison key, the labels of its generated ids, how it is shown
and the frames it came from. What is not meaning goes: how a model chunked its text (deltas are
merged, a long text compared by its digest), the values of generated ids (shown and keyed by
their order of appearance, ``call#1``), invented structure and transport cursors; across
protocols only what both say natively (:func:`vocabulary_for`) and its core fields count.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ..codecs import Codec
from ..codecs.terminals import default_failure
from ..events import (
    EVENT_TYPES,
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

__all__ = ["ID_MEMORY", "PREVIEW", "SHOWN", "TEXT_LIMIT", "Item", "Normaliser", "Ref", "vocabulary_for"]

#: characters of a merged text kept as text; a longer one is compared by digest
TEXT_LIMIT = 4096
#: characters of a digested text shown
PREVIEW = 100
#: distinct ids of each kind remembered per side (and twice as many pairs of ids)
ID_MEMORY = 1024
#: characters of an event shown in a hunk
SHOWN = 160
_DIGEST_STEP = 1 << 16  # characters encoded at once into a digest

_STRUCTURE = (RunStart, StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd)
_MERGED = (TextDelta, ReasoningDelta)
_TAGS: dict[type[Event], str] = {cls: tag for tag, cls in EVENT_TYPES.items()}
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
_ID_FIELDS = frozenset(_ID_KINDS)
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

Ref = str  # an id as one side shows it: its kind and order of appearance (``call#3``)


class Item:
    """One normalised event: its comparison key, its ids' labels, how to show it, where it was.

    ``frame`` is the frame it came from (None: the end of input); while ``lo`` is not None the
    event is only known to come from a frame after ``lo`` and up to ``frame``."""

    __slots__ = ("frame", "index", "key", "lo", "refs", "shown_fields", "tag")

    def __init__(
        self,
        tag: str,
        key: str,
        refs: tuple[Ref, ...],
        shown_fields: dict[str, Any],
        where: tuple[int | None, int | None],
        index: int,
    ) -> None:
        self.tag, self.key, self.refs, self.shown_fields = tag, key, refs, shown_fields
        (self.frame, self.lo), self.index = where, index

    @property
    def shown(self) -> str:
        text = _key(self.tag, self.shown_fields)
        return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _key(tag: str, fields: dict[str, Any]) -> str:
    return f"{tag} {msgspec.json.encode(fields, order='sorted').decode()}"


class _Ids:
    """Generated ids by order of appearance, one counter per kind, the last ``ID_MEMORY`` of
    each kind remembered (a bounded memory, whatever the length of the stream)."""

    def __init__(self) -> None:
        self.seen: dict[str, OrderedDict[str, int]] = {}
        self.counts: dict[str, int] = {}

    def label(self, kind: str, value: str) -> int:
        seen = self.seen.setdefault(kind, OrderedDict())
        label = seen.get(value)
        if label is not None:
            seen.move_to_end(value)
            return label
        label = self.counts[kind] = self.counts.get(kind, 0) + 1
        seen[value] = label
        if len(seen) > ID_MEMORY:
            seen.popitem(last=False)
        return label

    def replace(self, fields: dict[str, Any]) -> tuple[tuple[Ref, ...], dict[str, Any]]:
        """Labels put in ``fields`` (for showing); the refs and the fields a key is made of."""
        refs: list[Ref] = []
        keyed: dict[str, str] = {}
        for name in sorted(_ID_FIELDS.intersection(fields)):  # as they stand in the key
            value = fields[name]
            if isinstance(value, str):
                kind = _ID_KINDS[name]
                fields[name] = ref = f"{kind}#{self.label(kind, value)}"
                refs.append(ref)
                keyed[name] = f"{kind}#"
        return tuple(refs), ({**fields, **keyed} if keyed else fields)


class _Digest:
    """A long text as its length, digest and start: constant memory however long it grows."""

    def __init__(self) -> None:
        self.hash = hashlib.blake2b(digest_size=16)
        self.chars = 0
        self.head = ""

    def update(self, text: str) -> None:
        if not self.head:
            self.head = text[:PREVIEW]
        self.chars += len(text)
        for start in range(0, len(text), _DIGEST_STEP):  # a terminal's answer: no whole copy
            self.hash.update(text[start : start + _DIGEST_STEP].encode("utf-8", "surrogatepass"))

    def compared(self) -> dict[str, Any]:
        return {"blake2b": self.hash.hexdigest(), "chars": self.chars}

    def shown(self) -> str:
        return f"{self.head}... ({self.chars:,} characters)"


def _text_value(text: str) -> tuple[Any, str | None]:
    """How a text is compared, and shown when not as itself."""
    if len(text) <= TEXT_LIMIT:
        return text, None
    digest = _Digest()
    digest.update(text)
    return digest.compared(), digest.shown()


class _TextRun:
    """Merged deltas of one kind and message: kept as pieces up to ``TEXT_LIMIT`` characters,
    then digested in batches of that size (the same digest however the text was chunked)."""

    def __init__(self, tag: str, message_id: object, fields: dict[str, Any], frame: int | None, lo: int | None) -> None:
        self.tag, self.message_id, self.fields, self.frame, self.lo = tag, message_id, fields, frame, lo
        self.keyed = "text" in fields  # an empty delta alone has no text member (as received)
        self.parts: list[str] = [fields.pop("text", "")]
        self.size = len(self.parts[0])
        self.digest: _Digest | None = None

    def extend(self, texts: Sequence[str]) -> None:
        self.keyed = True
        self.parts.extend(texts)
        self.size += sum(map(len, texts))
        if self.size > TEXT_LIMIT:
            self._spill()

    def _spill(self) -> None:
        if self.digest is None:
            self.digest = _Digest()
        self.digest.update("".join(self.parts))
        self.parts, self.size = [], 0

    def value(self) -> tuple[Any, str | None]:
        if self.digest is None:
            return "".join(self.parts), None
        self._spill()
        return self.digest.compared(), self.digest.shown()


class Normaliser:
    """The sink a decoder writes into: events in, normalised items out (in ``items``).

    It takes what a decoder hands over, one event (``append``) or a run of plain deltas
    (``deltas``, without making an event per delta), and tags each item with the frames the
    reader says are being fed (``at``)."""

    def __init__(self, vocabulary: frozenset[str] | None, exact_ids: bool) -> None:
        self.vocabulary = vocabulary
        self.ids = None if exact_ids else _Ids()
        self.items: list[Item] = []
        self.count = 0
        self.run: _TextRun | None = None
        self.frame: int | None = None
        self.lo: int | None = None

    def at(self, frame: int | None, lo: int | None = None) -> None:
        self.frame, self.lo = frame, lo

    def take(self) -> list[Item]:
        items, self.items = self.items, []
        return items

    def append(self, event: Event) -> None:
        tag = _TAGS[type(event)]
        if (event.synthetic and isinstance(event, _STRUCTURE)) or (
            self.vocabulary is not None and tag not in self.vocabulary
        ):
            return
        if isinstance(event, _MERGED):
            run = self._continued(tag, event.message_id)
            if run is not None:
                run.extend((event.text,))
                return
            self.finish()
            self.run = _TextRun(tag, event.message_id, self._fields(tag, event)[0], self.frame, self.lo)
            return
        self.finish()
        self._emit(tag, *self._fields(tag, event), self.frame, self.lo)

    def deltas(
        self,
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> None:
        """A run of plain deltas of the primary message (a decoder's hot path), of one part
        where its source names parts; ids, the frames' SSE ``id:`` lines, are transport cursors
        and ignored."""
        tag = "reasoning" if reasoning else "text"
        if not texts or (self.vocabulary is not None and tag not in self.vocabulary):
            return
        run = self._continued(tag, UNSET)
        if run is None:
            self.append((ReasoningDelta if reasoning else TextDelta)(text=texts[0], part_id=part_id))
            texts = texts[1:]
            run = self.run
        if texts and run is not None:
            run.extend(texts)

    def finish(self) -> None:
        """Emit the merged run in progress (before the next item, and at the end)."""
        run, self.run = self.run, None
        if run is not None:
            value, shown = run.value()
            if run.keyed:
                run.fields["text"] = value
            self._emit(run.tag, run.fields, shown, run.frame, run.lo)

    def _continued(self, tag: str, message_id: object) -> _TextRun | None:
        """The merged run a delta of ``tag`` and ``message_id`` continues, if any."""
        run = self.run
        if run is not None and run.tag == tag and (self.vocabulary is not None or run.message_id == message_id):
            return run
        return None

    def _fields(self, tag: str, event: Event) -> tuple[dict[str, Any], str | None]:
        """An event's compared fields, and its text as shown when that is a digest (a
        terminal's assembled answer, compared without copying it into a key)."""
        long_text = shown = None
        if isinstance(event, Terminal) and isinstance(event.text, str) and len(event.text) > TEXT_LIMIT:
            long_text, event = event.text, msgspec.structs.replace(event, text=UNSET)
        fields = _decode_any.decode(encode_event(event))
        del fields["type"]
        for name in _IGNORED:
            fields.pop(name, None)
        if long_text is not None:
            fields["text"], shown = _text_value(long_text)
        if self.vocabulary is not None:
            fields = _core(tag, fields, event)
        return fields, shown

    def _emit(self, tag: str, fields: dict[str, Any], shown: str | None, frame: int | None, lo: int | None) -> None:
        refs: tuple[Ref, ...] = ()
        keyed = fields
        if self.ids is not None:
            refs, keyed = self.ids.replace(fields)
        shown_fields = fields if shown is None else {**fields, "text": shown}
        self.items.append(Item(tag, _key(tag, keyed), refs, shown_fields, (frame, lo), self.count))
        self.count += 1


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
    if isinstance(event, Terminal):
        if event.status == "succeeded":
            fields.pop("failure", None)
        else:
            _failure(fields, event)
    if keep is None:
        return {k: v for k, v in fields.items() if k not in ("messageId", "extra")}
    return {k: fields[k] for k in keep if k in fields}


def _failure(fields: dict[str, Any], end: Terminal) -> None:
    failure = end.failure if end.failure is not UNSET else default_failure(end.status)
    fields["failure"] = {"code": failure.code if failure.code is not UNSET else None, "message": failure.message}


def vocabulary_for(a: Codec, b: Codec) -> frozenset[str] | None:
    """None (everything) for one protocol; otherwise the event types both say natively, plus
    passthroughs (unknown kinds, bad frames), which every codec forwards verbatim."""
    if a is b:
        return None
    return (a.native & b.native) | {"data", "malformed"}

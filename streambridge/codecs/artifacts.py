"""Artifacts handed to the screen by reference (agentfootprint's ``present``), in every protocol.

Three things every codec shares (rules: docs/mapping.md, "Artifacts"):

* recognising a ``present`` result in any tool output, as an object or a JSON string
  (:func:`present_result`): every decoder derives an :class:`ArtifactPresented` from one;
* the honest placeholder text, from the snapshot alone (:func:`placeholder`);
* the data part that says an artifact where a protocol has no native form for it: ``data-artifact``
  (or ``data-artifact-refused``) whose ``id`` is the ref, so a later part for the same ref
  replaces it on the client (:func:`part_body`, :func:`read_part`).
"""

from __future__ import annotations

import re

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..events import ArtifactPresented, ArtifactRefused, ArtifactSnapshot, Event
from .envelope import json_encode

__all__ = [
    "PART_NAMES",
    "PRESENTED_PART",
    "REFUSED_PART",
    "SnapshotShape",
    "part_body",
    "part_name",
    "placeholder",
    "present_json",
    "present_result",
    "read_part",
    "said_as_derived",
    "size_text",
]

PRESENTED_PART = "data-artifact"
REFUSED_PART = "data-artifact-refused"
PART_NAMES = frozenset({PRESENTED_PART, REFUSED_PART})

_UNITS = ("KB", "MB", "GB", "TB", "PB")
_SPACES = re.compile(r"\s+")


def size_text(size: int) -> str:
    """Decimal units rounded half up, the same way every time: ``999 bytes``, ``1 KB``,
    ``41 KB`` (41,210 bytes), ``1 MB`` (999,500 bytes: rounding never writes ``1000 KB``)."""
    if size < 1000:
        return "1 byte" if size == 1 else f"{max(size, 0)} bytes"
    scale = 1000
    for unit in _UNITS:
        rounded = (size + scale // 2) // scale
        if rounded < 1000 or unit == _UNITS[-1]:
            return f"{rounded} {unit}"
        scale *= 1000
    raise AssertionError("unreachable")


def _noun(kind: str) -> str:
    """``chart/spec`` → ``Chart``: the kind's first segment, its first letter capitalised."""
    head = kind.split("/", 1)[0].strip()
    return head[:1].upper() + head[1:] if head else "Artifact"


def placeholder(snapshot: ArtifactSnapshot, as_: str) -> str:
    """``<Kind> — '<label>' (<as>, <size>)``: what a screen shows for an artifact it cannot
    draw, from the snapshot alone. A blank label is left out with its dash; whitespace runs in
    a label become one space (a placeholder is one line); quotes stay as written."""
    text = _noun(snapshot.kind)
    label = _SPACES.sub(" ", snapshot.label).strip() if isinstance(snapshot.label, str) else ""
    if label:
        text += f" — '{label}'"
    size = size_text(snapshot.bytes)
    return f"{text} ({as_}, {size})" if as_ else f"{text} ({size})"


# -- a present result in a tool output -------------------------------------------------------


class SnapshotShape(Struct, rename="camel"):
    """An artifact's snapshot as every protocol writes it (``{kind, mediaType, bytes, label?}``)."""

    kind: str
    media_type: str
    bytes: int
    label: str | UnsetType = UNSET


class _Presented(Struct):
    """agentfootprint's ``PresentedResult``; members beyond these do not stop recognition."""

    presented: bool
    ref: str
    snapshot: SnapshotShape
    as_: str = msgspec.field(name="as")


_presented = msgspec.json.Decoder(_Presented)
_text = msgspec.json.Decoder(str)


def present_result(output: Raw, call_id: str) -> ArtifactPresented | None:
    """The artifact a tool output presents (``{"presented": true, "ref", "as", "snapshot"}``, as an
    object or as the JSON string agentfootprint's history keeps), else ``None``. Derived, so
    marked ``synthetic``: every protocol writes the tool output, which says it again."""
    data = bytes(output)
    if b"presented" not in data:  # the cheap test first: most tool outputs are something else
        return None
    try:
        if data[:1] == b'"':
            data = _text.decode(data).encode()
        result = _presented.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if result.presented is not True:
        return None
    s = result.snapshot
    snapshot = ArtifactSnapshot(kind=s.kind, media_type=s.media_type, bytes=s.bytes, label=s.label)
    return ArtifactPresented(ref=result.ref, as_=result.as_, snapshot=snapshot, tool_call_id=call_id, synthetic=True)


def said_as_derived(e: ArtifactPresented, derived: ArtifactPresented) -> bool:
    """Whether an artifact as a protocol read it says no more than ``derived`` (the one derived
    from its tool output): the same ref, ``as``, snapshot and presenting call, and nothing of
    its own (no iteration, unknown members or members kept as received). Its message is the
    output's or none, as its protocol names messages or not."""
    return (
        e.ref == derived.ref
        and e.as_ == derived.as_
        and e.snapshot == derived.snapshot
        and e.tool_call_id == derived.tool_call_id
        and e.iteration is UNSET
        and e.extra is UNSET
        and e.verbatim is UNSET
        and e.event_id is UNSET
        and e.message_id in (UNSET, derived.message_id)
    )


def present_json(e: ArtifactPresented) -> bytes:
    """The ``PresentedResult`` object in agentfootprint's key order (``presented, ref, as,
    snapshot{kind, mediaType, bytes, label?}``): what a ``present`` tool returns."""
    return (
        b'{"presented":true,"ref":'
        + json_encode(e.ref)
        + b',"as":'
        + json_encode(e.as_)
        + b',"snapshot":'
        + msgspec.json.encode(e.snapshot)
        + b"}"
    )


# -- the data part ---------------------------------------------------------------------------


class _PartData(Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    ref: str
    as_: str = msgspec.field(name="as")
    snapshot: SnapshotShape
    tool_call_id: str | UnsetType = UNSET
    iteration: int | UnsetType = UNSET
    placeholder: str


class _RefusedData(Struct, rename="camel", forbid_unknown_fields=True):
    reason: str
    op: str | UnsetType = UNSET
    ref: str | UnsetType = UNSET
    detail: str | UnsetType = UNSET
    tool: str | UnsetType = UNSET


_part_data = msgspec.json.Decoder(_PartData)
_refused_data = msgspec.json.Decoder(_RefusedData)


def part_name(e: ArtifactPresented | ArtifactRefused) -> bytes:
    """The data part's name as JSON."""
    return json_encode(PRESENTED_PART if type(e) is ArtifactPresented else REFUSED_PART)


def part_body(e: ArtifactPresented | ArtifactRefused) -> bytes:
    """The data part's members ``"id":<ref>,"data":{…}`` (a refusal without a ref has no id).
    A presented part's data holds the placeholder, for clients that draw nothing else."""
    if isinstance(e, ArtifactPresented):
        data = msgspec.json.encode(
            _PartData(
                ref=e.ref,
                snapshot=SnapshotShape(e.snapshot.kind, e.snapshot.media_type, e.snapshot.bytes, e.snapshot.label),
                placeholder=placeholder(e.snapshot, e.as_),
                as_=e.as_,
                tool_call_id=e.tool_call_id,
                iteration=e.iteration,
            )
        )
        return b'"id":' + json_encode(e.ref) + b',"data":' + data
    data = msgspec.json.encode(_RefusedData(reason=e.reason, op=e.op, ref=e.ref, detail=e.detail, tool=e.tool))
    head = b'"id":' + json_encode(e.ref) + b"," if isinstance(e.ref, str) else b""
    return head + b'"data":' + data


def read_part(name: str, members: dict[str, Raw]) -> Event | None:
    """The artifact event a data part named ``name`` says, from its ``id`` and ``data`` members
    (the codec's own members, such as its type, removed); ``None`` unless the part is byte for
    byte what :func:`part_body` writes for that event (otherwise it stays a data part, kept whole)."""
    data = members.get("data")
    if data is None or set(members) - {"id", "data"}:
        return None
    event: Event
    try:
        if name == PRESENTED_PART:
            d = _part_data.decode(data)
            s = d.snapshot
            snapshot = ArtifactSnapshot(kind=s.kind, media_type=s.media_type, bytes=s.bytes, label=s.label)
            event = ArtifactPresented(
                ref=d.ref, as_=d.as_, snapshot=snapshot, tool_call_id=d.tool_call_id, iteration=d.iteration
            )
        else:
            r = _refused_data.decode(data)
            event = ArtifactRefused(reason=r.reason, op=r.op, ref=r.ref, detail=r.detail, tool=r.tool)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    said = b",".join(b'"' + key.encode() + b'":' + bytes(raw) for key, raw in members.items())
    return event if said == part_body(event) else None

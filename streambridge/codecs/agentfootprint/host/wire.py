"""The hosting dialect's wire shapes (msgspec Structs) and what both directions share.

``POST /invoke`` answered as SSE built with ``encodeSSE(name, payload)``: one ``event: <name>``
and one ``data: <JSON>`` line per frame (``src/hosting/httpHost.ts``; see
the hosting dialect of agentfootprint 9.62.0). Fields are in the order the doc gives them, which is
the order ``JSON.stringify`` writes them. In NDJSON (streambridge's choice: the host writes SSE
only) a frame is ``{"event":<name>,"data":<data>}``, as nest's named events are; a line of any
other form is an unnamed frame.

The decoder and the encoder both ask :func:`read_known` how a frame is read, so the encoder
writes a frame natively only when the decoder would read it back the same.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ....events import ArtifactPresented, ArtifactSnapshot, Verbatim
from ...envelope import envelope_decoder, json_encode, split_extra

__all__ = [
    "CARRIER_EVENT",
    "EVENT_NAMES",
    "KNOWN",
    "NAME",
    "Artifact",
    "ArtifactMetaW",
    "ArtifactW",
    "Awaiting",
    "CarrierW",
    "Chunk",
    "Complete",
    "ErrorW",
    "Named",
    "SessionsW",
    "is_json",
    "ndjson_line",
    "read_artifact",
    "read_known",
    "read_line",
    "reads_whole",
]

#: the codec's name (a variant of agentfootprint: its golden files are ``agentfootprint-host.*``)
NAME = "agentfootprint:host"
#: the event name of streambridge's escape hatch (a carrier: a whole event in streambridge JSON);
#: a host client ignores event names it does not know
CARRIER_EVENT = "streambridge.carrier"
#: the SSE event names the dialect defines
EVENT_NAMES = ("chunk", "complete", "error", "awaiting", "artifact", "sessions")

_W = {"forbid_unknown_fields": True, "omit_defaults": True, "gc": False}


class Chunk(Struct, **_W):
    """``event: chunk``: a token delta (``stream.token`` content forwarded)."""

    text: str


class Complete(Struct, **_W):
    """``event: complete``: terminal, success; ``output`` is the whole answer."""

    output: str


class ErrorW(Struct, **_W):
    """``event: error``: terminal, failure; ``code`` (``ERR_…``) only when the host has one."""

    error: str
    code: str | UnsetType = UNSET


class Awaiting(Struct, **_W):
    """``event: awaiting``: terminal for this request, the agent waits for a decision (sent on
    the next ``POST /invoke`` as ``decision``). ``PendingAsk``'s shape is not verified: raw JSON."""

    awaiting: Raw


class ArtifactMetaW(Struct, rename="camel", gc=False):
    """What an artifact's ``ArtifactMeta`` says of it that a placeholder needs (its other
    members, ``ref``, ``digest``, ``createdAt`` …, stay in the frame kept whole)."""

    kind: str
    media_type: str
    bytes: int
    label: str | UnsetType = UNSET


class ArtifactW(Struct, gc=False):
    """An artifact as the host pushes it (``artifactWireBody`` in ``artifactWire.ts``): its
    ticket, its meta, and the payload when it is sent (``artifact-get``)."""

    ref: str
    meta: ArtifactMetaW
    data: Raw | UnsetType = UNSET


class Artifact(Struct, gc=False):
    """``event: artifact``: an artifact handed to the client by reference."""

    artifact: ArtifactW


#: ``event: sessions``: its payload is not verified (doc §7), so it has no shape here: raw JSON,
#: kept whole like ``artifact``
SessionsW = Raw


class Named(Struct, forbid_unknown_fields=True, gc=False):
    """A frame in NDJSON: the SSE event name and the data."""

    event: str
    data: Raw


class CarrierW(Struct, gc=False):
    """The data of an ``event: streambridge.carrier`` frame (the shared carrier reads ``covers``,
    ``whole`` and ``event``; ``name`` is ``data-<event type>`` for people reading the stream)."""

    name: str
    event: Raw
    covers: int = 0
    whole: bool = False


_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "chunk": msgspec.json.Decoder(Chunk),
    "complete": msgspec.json.Decoder(Complete),
    "error": msgspec.json.Decoder(ErrorW),
    "awaiting": msgspec.json.Decoder(Awaiting),
}
#: the frames the decoder maps to events (``artifact`` and ``sessions`` are kept whole)
KNOWN = frozenset(_DECODERS)
_FIELDS = {
    "chunk": frozenset({"text"}),
    "complete": frozenset({"output"}),
    "error": frozenset({"error", "code"}),
    "awaiting": frozenset({"awaiting"}),
}
#: a member that would make a terminal frame say two ends at once: such a frame is kept whole
_CLASH = {"complete": "awaiting", "awaiting": "output"}
_json_decoder = msgspec.json.Decoder(Raw)
_named_decoder = msgspec.json.Decoder(Named)
_artifact_decoder = msgspec.json.Decoder(Artifact)
_NAMED_HEAD = b'{"event":'


def read_known(name: str, data: bytes) -> tuple[Struct, dict[str, Raw]] | None:
    """A frame of a known name (:data:`KNOWN`): its shape and its unknown members (in order), or
    None when its data is JSON of another shape (the frame is then kept whole). Data that is no
    JSON raises ``msgspec.DecodeError`` (``RecursionError`` when nested deeper than msgspec reads)."""
    decoder = _DECODERS[name]
    try:
        return decoder.decode(data), {}
    except msgspec.ValidationError:
        pass  # unknown members, another shape, or no object
    try:
        members = envelope_decoder.decode(data)
    except msgspec.ValidationError:
        return None  # JSON, but no object
    if _CLASH.get(name, "") in members:
        return None
    known, extra = split_extra(members, _FIELDS[name])
    try:
        return decoder.decode(json_encode(known)), extra
    except msgspec.ValidationError:
        return None


def read_artifact(data: bytes) -> ArtifactPresented | None:
    """An ``artifact`` frame's presentation: the ref and the snapshot its meta gives (the frame
    says no ``as``), every member of the frame kept as received (``verbatim``: the frame comes
    back byte for byte, another protocol carries it); None when its data has another shape (the
    frame is kept whole). Data that is no JSON raises ``msgspec.DecodeError``."""
    try:
        shape = _artifact_decoder.decode(data)
    except msgspec.ValidationError:
        return None
    meta = shape.artifact.meta
    snapshot = ArtifactSnapshot(kind=meta.kind, media_type=meta.media_type, bytes=meta.bytes, label=meta.label)
    event = ArtifactPresented(ref=shape.artifact.ref, snapshot=snapshot)
    event.verbatim = Verbatim(origin=NAME, members=envelope_decoder.decode(data))
    return event


def reads_whole(name: str, data: bytes) -> bool:
    """Whether the decoder keeps a frame named ``name`` with ``data`` whole, as a data part (an
    unknown name, ``sessions``, an ``artifact`` or a known name with data of another shape)."""
    try:
        if name in KNOWN:
            return read_known(name, data) is None
        if name == "artifact":
            return read_artifact(data) is None
        _json_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return False  # no JSON (or nested deeper than msgspec reads): a malformed frame
    return name != CARRIER_EVENT


def is_json(data: bytes) -> bool:
    """Whether ``data`` is one JSON value (what every frame's data must be)."""
    try:
        _json_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def ndjson_line(name: str, data: bytes) -> bytes:
    """A named frame as an NDJSON line (without its newline)."""
    return _NAMED_HEAD + json_encode(name) + b',"data":' + data + b"}"


def read_line(line: bytes) -> tuple[str, bytes]:
    """An NDJSON line's event name and data: ``("", line)`` unless the line is exactly what
    :func:`ndjson_line` writes (so reading and writing it again give the same bytes)."""
    if line.startswith(_NAMED_HEAD):
        try:
            named = _named_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return "", line
        data = bytes(named.data)
        if ndjson_line(named.event, data) == line:
            return named.event, data
    return "", line

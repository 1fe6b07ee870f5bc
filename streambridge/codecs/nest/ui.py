"""nest's generative-UI frame as an artifact's native form: a ``ui`` component whose id is the
artifact's ref, whose component is its ``as``, whose props are ``{ref, as, snapshot}`` and whose
fallback text is the honest placeholder (what clients that draw nothing else show)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...events import ArtifactPresented, ArtifactSnapshot
from ..artifacts import SnapshotShape, placeholder
from ..envelope import json_encode

__all__ = ["component_props", "read_component"]


class _Props(Struct, forbid_unknown_fields=True):
    ref: str
    as_: str = msgspec.field(name="as")
    snapshot: SnapshotShape | UnsetType = UNSET


_props = msgspec.json.Decoder(_Props)


def component_props(e: ArtifactPresented) -> bytes:
    """The props of the component that shows an artifact: ``{ref, as, snapshot}``."""
    snapshot = msgspec.json.encode(e.snapshot)
    return b'{"ref":' + json_encode(e.ref) + b',"as":' + json_encode(e.as_) + b',"snapshot":' + snapshot + b"}"


def read_component(
    ui_id: str, component: str, props: Raw, tool_call_id: str | UnsetType, fallback_text: str | UnsetType
) -> ArtifactPresented | None:
    """The artifact a UI component shows when it is exactly what an artifact is written as (id
    the ref, component its ``as``, props ``{ref, as, snapshot}``, the placeholder as its fallback
    text); ``None`` for any other component."""
    if not isinstance(fallback_text, str):
        return None
    try:
        p = _props.decode(props)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if p.snapshot is UNSET or p.ref != ui_id or p.as_ != component:
        return None
    s = p.snapshot
    snapshot = ArtifactSnapshot(kind=s.kind, media_type=s.media_type, bytes=s.bytes, label=s.label)
    event = ArtifactPresented(ref=p.ref, as_=p.as_, snapshot=snapshot, tool_call_id=tool_call_id)
    if bytes(props) != component_props(event) or fallback_text != placeholder(snapshot, component):
        return None
    return event

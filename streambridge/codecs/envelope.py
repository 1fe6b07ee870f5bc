"""JSON envelopes of wire shapes: envelopes with unknown members, tool arguments, lenient decoding
of known shapes, and the encoder every codec writes JSON with."""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..events import ToolCall
from .errors import FrameProblem
from .framing import (
    Frame,
)

__all__ = [
    "decode_envelope",
    "decode_known",
    "decode_lenient",
    "envelope_decoder",
    "input_of",
    "json_encode",
    "json_object",
    "parse_arguments",
    "raw_str",
    "splice_extra",
    "split_extra",
    "verbatim_members",
]

_S = TypeVar("_S", bound=msgspec.Struct)
envelope_decoder = msgspec.json.Decoder(dict[str, Raw])
_str_decoder = msgspec.json.Decoder(str)
_NOT_STRING_STARTS = frozenset(b"{[-0123456789tfn")
json_encode = msgspec.json.Encoder().encode


_object_decoder = msgspec.json.Decoder(dict)


def json_object(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, or None when it is none (the caller says what it expected)."""
    try:
        return _object_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def decode_envelope(data: bytes, frame: Frame) -> dict[str, Raw]:
    """The frame as a mapping of raw members; a :class:`FrameProblem` if it is no JSON object."""
    try:
        return envelope_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FrameProblem(f"one JSON object ({exc})") from None


def raw_str(raw: Raw | None) -> str | None:
    """A raw JSON member as a Python string, or None when it is no JSON string."""
    if raw is None:
        return None
    view = memoryview(raw)
    if view and view[0] in _NOT_STRING_STARTS:
        return None  # an object, array, number or literal: no need to raise and catch
    try:
        return _str_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def splice_extra(payload: bytes, extra: dict[str, Raw]) -> bytes:
    """Append unknown members to an encoded JSON object, in their received order."""
    if not extra:
        return payload  # none: an empty mapping must not leave a trailing comma
    members = b",".join(json_encode(k) + b":" + bytes(v) for k, v in extra.items())
    if payload == b"{}":
        return b"{" + members + b"}"
    return payload[:-1] + b"," + members + b"}"


def split_extra(envelope: dict[str, Raw], known: frozenset[str]) -> tuple[dict[str, Raw], dict[str, Raw]]:
    """The known members and the unknown ones, apart (order kept)."""
    known_part = {k: v for k, v in envelope.items() if k in known}
    extra = {k: v for k, v in envelope.items() if k not in known}
    return known_part, extra


_any_decoder = msgspec.json.Decoder()


def parse_arguments(arguments: str | UnsetType) -> tuple[Raw, bool]:
    """A tool input from raw argument text: the text itself when it is JSON, else ``{}``.

    The flag says whether the text survives (it does when it is JSON, kept byte for byte; not
    whitespace around it, which no JSON member keeps)."""
    if arguments is UNSET:
        return Raw(b"{}"), False
    data = arguments.encode()
    try:
        _any_decoder.decode(data)
    except msgspec.DecodeError:
        return Raw(b"{}"), False
    value = data.strip(b" \t\n\r")
    return Raw(value), value == data


def input_of(call: ToolCall, native: bool) -> tuple[Raw, bool, ToolCall]:
    """For a protocol that writes a tool call's input as JSON: the input to write, whether the
    call is still native, and the call to carry when it is not (in the spelling a decoder of
    such a protocol reads: the input, parsed from argument text)."""
    if call.input is not UNSET:
        return call.input, native and call.arguments_json is UNSET, call
    raw_input, ok = parse_arguments(call.arguments_json)
    if ok:  # carried for any reason (an event id, say), then in the spelling the decoder reads
        return raw_input, native, msgspec.structs.replace(call, input=raw_input, arguments_json=UNSET)
    return raw_input, False, call


def decode_known(cls: type[_S], known: dict[str, Raw], kind: str) -> tuple[_S, dict[str, Raw]]:
    """Decode the known members of a frame whose unknown top-level members were set apart.

    Members holding unknown fields deeper down (a new field inside a known ``usage``) are
    decoded for what is known, and come back as the second value, byte for byte, for the
    event's :class:`~streambridge.events.Verbatim`: nothing is lost.
    """
    data = json_encode(known)
    try:
        return msgspec.json.decode(data, type=cls), {}
    except msgspec.ValidationError:
        pass
    try:
        wire = decode_lenient(cls, data)
    except msgspec.ValidationError as exc:
        raise FrameProblem(f"a valid {kind!r} frame ({exc})") from None
    return wire, verbatim_members(wire, known)


def decode_lenient(cls: type[_S], data: bytes | Raw) -> _S:
    """``data`` as ``cls`` with unknown fields at any depth left out (``ValidationError`` if
    it is not one)."""
    wire = _lenient_decoder(cls).decode(data)
    return msgspec.json.decode(json_encode(wire), type=cls)


def verbatim_members(wire: msgspec.Struct, original: dict[str, Raw]) -> dict[str, Raw]:
    """The original members that the decoded ``wire`` does not say byte for byte."""
    said = envelope_decoder.decode(json_encode(wire))
    return {k: v for k, v in original.items() if k in said and bytes(said[k]) != bytes(v)}


@functools.cache
def _lenient_decoder(cls: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(_lenient_type(cls))


@functools.cache
def _lenient_type(tp: Any) -> Any:
    """The same type with every Struct in it accepting unknown fields, at any depth."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for f in msgspec.structs.fields(tp):
            if f.default is not msgspec.NODEFAULT:
                fields.append((f.name, _lenient_type(f.type), f.default))
            else:
                fields.append((f.name, _lenient_type(f.type)))
        config = tp.__struct_config__
        return msgspec.defstruct(
            tp.__name__,
            fields,
            kw_only=True,
            rename={f.name: f.encode_name for f in msgspec.structs.fields(tp)},
            tag=config.tag,
            tag_field=config.tag_field,
            omit_defaults=config.omit_defaults,
        )
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_lenient_type(a) for a in typing.get_args(tp))]  # noqa: UP007
    if origin is list:
        return types.GenericAlias(list, (_lenient_type(typing.get_args(tp)[0]),))
    return tp

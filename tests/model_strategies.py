"""Hypothesis strategies built from the event model itself (``streambridge.events``).

Every event type in ``EVENT_TYPES`` is drawn with every field set or left ``UNSET`` at random
(a density drawn per Struct: a few optional fields, about half, or all), nested Structs
(``Usage``, ``Failure``, ``Source`` …) filled the same way, by introspecting the msgspec field
types. A field added to the model later is generated with no edit here, so a codec that drops
it fails the property tests; :func:`alone` sets one field (any field path) at a time.

What is hand-written below is only what the model's *meaning* needs, each with its reason:
the excluded fields (:data:`EXCLUDED`), which JSON payloads are objects, id pools (tool calls
and their outcomes meet; the primary message is UNSET), ``extra`` keys that are no protocol's
field names and never an empty ``extra``, a tool output's ``is_error`` only False, a terminal's
failure with the terminal's status, a data part's ``data`` being its origin codec's own frame,
and the shape of a run (a run start first, a terminal only last, an approval request or an
elicitation only about an announced call).
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal

import msgspec
from hypothesis import strategies as st
from msgspec import UNSET, Raw, UnsetType

from streambridge.codecs import agentkit, carrier, nest, oma, terminals
from streambridge.codecs import names as codec_names
from streambridge.events import (
    EVENT_TYPES,
    DataPart,
    Elicitation,
    Event,
    RunStart,
    RunStatus,
    Terminal,
    ToolApprovalRequest,
    ToolCall,
    ToolCallStatus,
    ToolInputStart,
    ToolKind,
    ToolOutput,
)

#: Fields never generated, and why:
EXCLUDED: dict[str, str] = {
    # decoder provenance: members a decoder kept byte for byte because it did not understand
    # fields inside them; only meaningful exactly as a decoder of its ``origin`` produced it
    "verbatim": "decoder provenance",
    # invented structure: targets without that structure drop synthetic events by design, so a
    # synthetic event is not something a cross trip must bring back
    "synthetic": "invented structure, dropped by targets by design",
}

# -- JSON payloads (``msgspec.Raw``) ------------------------------------------------------


def _protocol_keys() -> tuple[str, ...]:
    """Every member name of the codecs' wire shapes: some keys of generated JSON objects are
    these, so payloads a codec looks into (oma's ``done`` data, ``errorInfo``) sometimes say
    things it reads."""
    keys: set[str] = set()
    for module in (agentkit.wire, nest.wire, oma.wire, carrier):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == module.__name__:
                keys.update(f.encode_name for f in msgspec.structs.fields(obj))
    return tuple(sorted(keys))


PROTOCOL_KEYS = _protocol_keys()
#: strings the codecs treat specially (failure codes and the statuses they stand for, default
#: messages, nest's "rejected", agentkit's default provider, the oma status codes that mean a
#: success, the model's literals): some generated strings are these, so the canonical forms
#: keyed on them are exercised
PROTOCOL_STRINGS: tuple[str, ...] = tuple(
    sorted(
        {
            *terminals.STATUS_CODES.values(),
            *terminals.CODE_STATUSES,
            *terminals.DEFAULT_MESSAGES.values(),
            terminals.TRUNCATED_CODE,
            terminals.TRUNCATED_MESSAGE,
            nest.REJECTED,
            agentkit.DEFAULT_PROVIDER,
            "ok",
            "suspended",
            "skipped",
            *(value for tp in (RunStatus, ToolKind, ToolCallStatus) for value in typing.get_args(tp)),
        }
    )
)
strings = st.text(max_size=10) | st.sampled_from(PROTOCOL_STRINGS)
_keys = st.text(max_size=6) | st.sampled_from(PROTOCOL_KEYS)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | strings
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(_keys, json_values, max_size=4)


def _raw(values: st.SearchStrategy) -> st.SearchStrategy[Raw]:
    """Valid compact JSON, as a codec would receive it: as msgspec writes it, or as another
    producer may (Python's ``json.dumps`` escapes non-ASCII and writes ``1e+16``)."""
    return st.tuples(values, st.booleans()).map(_encode_json)


def _encode_json(drawn: tuple[object, bool]) -> Raw:
    value, escaped = drawn
    if escaped:
        return Raw(json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode())
    return Raw(msgspec.json.encode(value))


raw_values = _raw(strings | json_values)  # a string often: most tool outputs are text
raw_objects = _raw(json_objects)

#: Raw fields that hold a JSON object (per the protocols: nest's ``ui`` props and
#: ``componentVersions``, ``ElicitationRequest``, ``confirmation`` / ``target``,
#: ``ChatQueueState`` and ``started``, ``metadata: Record``, oma's ``done`` payload and
#: ``errorInfo``, a data part's original frame). Any other Raw field (a tool input, a tool's
#: output or error payload, and any Raw field added later) is any JSON value.
OBJECT_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("ui", "props"),
        ("ui", "component_versions"),
        ("elicitation", "request"),
        ("tool-approval-request", "confirmation"),
        ("tool-approval-request", "target"),
        ("queue", "queue"),
        ("queue", "started"),
        ("message-metadata", "metadata"),
        ("terminal", "result"),
        ("terminal", "error_info"),
        ("data", "data"),
    }
)

# -- ids ------------------------------------------------------------------------------------

#: tool call ids come from a small pool so that calls, argument deltas, approvals and outcomes
#: of the same call meet in one conversation (random text would make every outcome an orphan)
CALL_IDS = ("c1", "c2", "c3")
ID_FIELDS = frozenset({"call_id", "tool_call_id"})
#: ``message_id`` is UNSET for the run's primary message and names *another* message on every
#: other event (events.py). The primary message's id (``RunStart.message_id``) and the other
#: messages' ids come from disjoint pools: an event naming the primary message explicitly is
#: the non-canonical spelling of UNSET, which the model says never to use.
PRIMARY_MESSAGE_IDS = ("m-primary",)
OTHER_MESSAGE_IDS = ("m-2", "m-3")

#: ``extra`` holds unknown wire fields: their keys must not collide with any protocol's known
#: field names (else they would not be unknown), hence the ``x_`` prefix
EXTRA_KEY_PREFIX = "x_"

# -- generic introspection -------------------------------------------------------------------

#: a field's strategy of *set* values in place of the generic one (None: keep the generic one)
FieldOverride = Callable[[type, msgspec.structs.FieldInfo], "st.SearchStrategy | None"]


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


def is_optional(tp: Any) -> bool:
    """Whether a field of type ``tp`` may be left UNSET (``X | UnsetType``)."""
    return UnsetType in (_union_args(tp) or ())


def type_strategy(tp: Any, owner: type, name: str) -> st.SearchStrategy:
    """A strategy for a set value of type ``tp`` (the field ``name`` of ``owner``): UNSET is
    left out of unions, whether a field is set at all is decided by :func:`struct_strategy`."""
    args = _union_args(tp)
    if args is not None:
        return st.one_of(*(type_strategy(a, owner, name) for a in args if a is not UnsetType))
    if tp is None or tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(10**15), 10**15)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is str:
        return strings
    if tp is Raw:
        tag = getattr(owner.__struct_config__, "tag", None)
        return raw_objects if (tag, name) in OBJECT_FIELDS else raw_values
    if typing.get_origin(tp) is Literal:
        return st.sampled_from(typing.get_args(tp))
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp)
        return st.lists(type_strategy(item, owner, name), max_size=3)
    if typing.get_origin(tp) is dict:
        key, value = typing.get_args(tp)
        assert key is str, f"{owner.__name__}.{name}: only str keys are known JSON object keys"
        keys = st.text(max_size=6).map(lambda k: EXTRA_KEY_PREFIX + k)
        # at least one member: an empty mapping says nothing, which is UNSET's meaning (the
        # model's canonical form: decoders never make an empty ``extra``)
        return st.dictionaries(keys, type_strategy(value, owner, name), min_size=1, max_size=2)
    if _is_struct(tp):
        return struct_strategy(tp)
    raise TypeError(f"{owner.__name__}.{name}: no strategy for the model type {tp!r}; teach model_strategies")


def generated_fields(cls: type[msgspec.Struct]) -> list[msgspec.structs.FieldInfo]:
    """The fields of ``cls`` the strategies draw (all but :data:`EXCLUDED`)."""
    return [f for f in msgspec.structs.fields(cls) if f.name not in EXCLUDED]


def struct_strategy(
    cls: type[msgspec.Struct], override: FieldOverride | None = None, only: tuple[str, ...] = ()
) -> st.SearchStrategy:
    """``cls`` with every generated field drawn from its type; each optional field is set or
    left UNSET at random, with a density drawn per struct: few of them (the events a codec
    says natively, where a dropped field is not hidden by a carrier), half or all of them.
    ``override`` may replace the strategy of a field's set values.

    With ``only`` (a path from :func:`field_paths`), the one optional field it names is set and
    every other optional field is UNSET, down the path into nested Structs."""
    values: dict[str, st.SearchStrategy] = {}
    for f in generated_fields(cls):
        strategy = override(cls, f) if override is not None else None
        if only[1:] and f.name == only[0]:
            strategy = _nested_only(f.type, only[1:])
        values[f.name] = strategy if strategy is not None else type_strategy(f.type, cls, f.name)
    optional = frozenset(f.name for f in generated_fields(cls) if is_optional(f.type))

    @st.composite
    def build(draw: st.DrawFn) -> msgspec.Struct:
        unset_below = draw(_DENSITY) if not only else 0
        kwargs = {}
        for name, strategy in values.items():
            if name in optional and (name != only[0] if only else draw(_DIE) < unset_below):
                continue
            kwargs[name] = draw(strategy)
        return cls(**kwargs)

    return build()


def _nested_only(tp: Any, rest: tuple[str, ...]) -> st.SearchStrategy:
    """A value of ``tp`` (a Struct, a list of them, maybe in a union) setting only ``rest``."""
    for member in _union_args(tp) or (tp,):
        if typing.get_origin(member) is list and _is_struct(typing.get_args(member)[0]):
            return st.lists(struct_strategy(typing.get_args(member)[0], only=rest), min_size=1, max_size=1)
        if _is_struct(member):
            return struct_strategy(member, only=rest)
    raise TypeError(f"no Struct in {tp!r} to follow {'.'.join(rest)} into")


#: how many optional fields an event sets: an optional field is set when a die of eight
#: shows at least this (so about one in eight, half of them, or all)
_DENSITY = st.sampled_from((7, 4, 0))
_DIE = st.integers(0, 7)


# -- events -----------------------------------------------------------------------------------


def _event_override(primary: bool) -> FieldOverride:
    def override(cls: type, f: msgspec.structs.FieldInfo) -> st.SearchStrategy | None:
        if f.name in ID_FIELDS:
            return st.sampled_from(CALL_IDS)
        if cls is ToolOutput and f.name == "is_error":
            # "only ever False" (events.py): a tool output that is an error is a ToolError
            return st.just(False)
        if f.name == "message_id" and issubclass(cls, Event):
            return st.sampled_from(PRIMARY_MESSAGE_IDS if primary else OTHER_MESSAGE_IDS)
        return None

    return override


@functools.cache
def event_strategy(cls: type[Event], only: tuple[str, ...] = ()) -> st.SearchStrategy[Event]:
    """One event of type ``cls``, every field drawn (see the module docstring); with ``only``,
    the one optional field on that path set (see :func:`struct_strategy`)."""
    events = struct_strategy(cls, _event_override(primary=cls is RunStart), only)
    if cls is Terminal:
        events = events.map(_consistent_failure)
    elif cls is DataPart:
        events = st.tuples(events, _data_part_origins).map(_with_origin)
    return events


def _consistent_failure(end: Terminal) -> Terminal:
    """A terminal's failure describes that terminal: its status is the terminal's (the model's
    one failure shape repeats the status so a failure can stand alone, e.g. on a tool call)."""
    if end.failure is not UNSET and end.failure.status != end.status:
        end.failure = msgspec.structs.replace(end.failure, status=end.status)
    return end


#: A data part's ``origin`` names the codec whose own frame ``data`` is (what that codec's
#: decoder made of a kind it does not know), and that codec writes ``data`` back as the frame.
#: So a data part is drawn either with a foreign origin (no codec: every codec carries it) or as
#: the frame of an unknown kind of its origin codec, named ``name`` (``x_``-prefixed, so it is
#: no known kind and no carrier); an arbitrary object claimed by a codec is no data part any
#: decoder could make.
_FOREIGN = st.text(max_size=8).filter(lambda o: o not in codec_names())
_data_part_origins = st.one_of(
    st.tuples(st.just(None), _FOREIGN, st.just({})),
    st.tuples(
        st.sampled_from(codec_names()),
        st.text(max_size=6).map(lambda k: EXTRA_KEY_PREFIX + k),
        st.dictionaries(st.text(max_size=6).map(lambda k: EXTRA_KEY_PREFIX + k), json_values, max_size=2),
    ),
)


def _with_origin(drawn: tuple[DataPart, tuple[str | None, str, dict[str, object]]]) -> DataPart:
    part, (codec, name, members) = drawn
    if codec is None:
        part.origin = name
        return part
    part.origin, part.name = codec, name
    if codec == "nest":
        frame: dict[str, object] = {"kind": name, **members}
    elif codec == "agentkit":
        # agentkit puts the message on every frame; the decoder reads it back from there
        frame = {"type": name}
        if part.message_id is not UNSET:
            frame["messageId"] = part.message_id
        frame.update(members)
    elif codec == "agentfootprint":
        frame = {"type": name, "payload": members}  # an envelope; its SSE event name is the type
    else:
        frame = {"type": name, "data": members, **members}  # unknown members beside data too
    part.data = Raw(msgspec.json.encode(frame))
    return part


#: what may come between a run's start and its end
BODY_TYPES: tuple[type[Event], ...] = tuple(c for c in EVENT_TYPES.values() if c is not RunStart and c is not Terminal)


@functools.cache
def _body_event() -> st.SearchStrategy[Event]:
    return st.one_of([event_strategy(c) for c in BODY_TYPES])


@st.composite
def conversations(draw: st.DrawFn, max_body: int = 10) -> list[Event]:
    """A run: a run start first (it opens the run; every protocol's first frame), any events,
    and (or not: a stream may break off) one terminal, only last (nothing follows the end)."""
    events: list[Event] = [draw(event_strategy(RunStart))]
    announced: set[str] = set()
    for event in draw(st.lists(_body_event(), max_size=max_body)):
        if type(event) in _ANNOUNCING:
            announced.add(event.call_id)  # type: ignore[attr-defined]
        elif type(event) in _ABOUT_A_CALL and event.call_id not in announced:  # type: ignore[attr-defined]
            events.append(draw(event_strategy(ToolCall)))
            events[-1].call_id = event.call_id  # type: ignore[attr-defined]
            announced.add(event.call_id)  # type: ignore[attr-defined]
        events.append(event)
    if draw(st.booleans()):
        events.append(draw(event_strategy(Terminal)))
    return events


def alone(cls: type[Event], path: tuple[str, ...]) -> st.SearchStrategy[list[Event]]:
    """The smallest run around an event of type ``cls`` setting only the field at ``path``
    (see :func:`struct_strategy`): where a codec drops one field on its native path, no other
    field makes it carry the event and hide the loss."""
    event = event_strategy(cls, path)
    start, end = RunStart(run_id="run-1"), Terminal()
    if cls is RunStart:
        return event.map(lambda e: [e, end])
    if cls is Terminal:
        return event.map(lambda e: [start, e])
    if cls in _ABOUT_A_CALL:
        return event.map(lambda e: [start, ToolCall(call_id=e.call_id, name="search"), e, end])  # type: ignore[attr-defined]
    return event.map(lambda e: [start, e, end])


#: what announces a tool call, and what is about a call announced before it (nest's
#: ``approval-requested`` names "the already-announced call id"; an elicitation waits on its
#: call): such an event about a call nobody announced gets a tool call announcing it first.
#: Outcomes and argument deltas need no such help: every encoder announces their calls itself.
_ANNOUNCING = frozenset((ToolCall, ToolInputStart))
_ABOUT_A_CALL = frozenset((ToolApprovalRequest, Elicitation))


# -- coverage -----------------------------------------------------------------------------------


def field_paths(cls: type[msgspec.Struct], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every generated field of ``cls`` and of the Structs nested in it, as attribute paths
    (with the field's default), for checking that the strategies set each of them."""
    for f in generated_fields(cls):
        path = (*prefix, f.name)
        default = f.default
        if default is msgspec.NODEFAULT and f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        yield path, default
        tp = f.type
        for member in _union_args(tp) or (tp,):
            if typing.get_origin(member) is list:
                member = typing.get_args(member)[0]
            if _is_struct(member):
                yield from field_paths(member, path)


def is_set(value: Any, path: tuple[str, ...], default: Any) -> bool:
    """Whether the field at ``path`` says something: not UNSET and not its default (what
    ``omit_defaults`` leaves out); in a list, in some element."""
    if not path:
        return value is not UNSET and (default is msgspec.NODEFAULT or value != default)
    if isinstance(value, list):
        return any(is_set(v, path, default) for v in value)
    if value is UNSET or value is None:
        return False
    return is_set(getattr(value, path[0]), path[1:], default)

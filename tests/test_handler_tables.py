"""Encoders dispatch through handler tables whose handlers declare the model fields they write;
the shared encoder carries an event with a field set that no handler writes, so a field added to
the model later is carried, never dropped."""

from __future__ import annotations

import inspect
import os
import typing

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streambridge.codecs import get, registered
from streambridge.codecs.decoder import Decoder, Members, reads, reads_one, with_extra
from streambridge.codecs.encoder import SHARED_WRITES, Encoder, field_defaults, handles
from streambridge.events import EVENT_TYPES, ArtifactPresented, ArtifactRefused, Event, Terminal, TextDelta

from .model_strategies import alone

#: one example per field in the default run (a field carried is carried: ~1,000 fields, three
#: examples each cost 40 CPU seconds), 25 in the deep profile (HYPOTHESIS_PROFILE=deep)
SETTINGS = settings(deadline=None, max_examples=25 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 1)


def _fields(kind: type[Event]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(kind)}


@pytest.mark.parametrize("codec", list(registered()))
def test_every_handler_declares_fields_of_its_own_event_types(codec: str) -> None:
    encoder = get(codec).encoder_class
    assert encoder.handlers, f"{codec} declares no handlers"
    for kind, names in encoder.writes.items():
        assert names <= _fields(kind), f"{codec}: {kind.__name__} declares {sorted(names - _fields(kind))}"
    assert encoder.writes_everywhere <= _fields(Event)


def _probe(encoder: type[Encoder], kind: type[Event], name: str) -> type[Encoder]:
    """The encoder as if its handler of ``kind`` did not know the field ``name`` (a field added
    to the model after the handler was written): the handler sees the event without it, and its
    declaration does not name it; ``_put`` gets the event as it came (also when the handler held
    the event back and writes it later)."""
    default = field_defaults(kind)[name]

    class Unaware(encoder):  # type: ignore[valid-type, misc]
        def _handle(self, event: Event, parts: list[bytes]) -> None:
            if type(event) is kind and getattr(event, name) != default:
                seen = msgspec.structs.replace(event, **{name: default})
                self.__dict__.setdefault("wholes", {})[id(seen)] = (seen, event)
                event = seen
            super()._handle(event, parts)

        def _put(self, parts: list[bytes], event: Event, payloads: list, native: bool, lead: int = 0) -> None:
            kept = self.__dict__.get("wholes", {}).get(id(event))
            if kept is not None and kept[0] is event:
                event = kept[1]
            super()._put(parts, event, payloads, native, lead)

    # (after the class is made: making it derives ``unwritten`` from the declarations again)
    Unaware.unwritten = {**encoder.unwritten, kind: (*encoder.unwritten.get(kind, ()), (name, default))}
    return Unaware


#: the ids that link events (an outcome to its call): never a field a handler could miss
LINKS = frozenset({"call_id", "tool_call_id"})
WRITTEN = sorted(
    (codec, kind.__name__, name)
    for codec, c in registered().items()
    for kind, names in c.encoder_class.writes.items()
    for name in sorted(names | c.encoder_class.writes_everywhere)
    if name in _fields(kind) and name not in SHARED_WRITES | LINKS and kind in EVENT_TYPES.values()
)


@pytest.mark.parametrize(("codec", "kind", "name"), WRITTEN, ids=[".".join(w) for w in WRITTEN])
@SETTINGS
@given(data=st.data())
def test_a_field_no_handler_writes_is_carried_never_dropped(
    codec: str, kind: str, name: str, data: st.DataObject
) -> None:
    cls = next(t for t in EVENT_TYPES.values() if t.__name__ == kind)
    events = data.draw(alone(cls, (name,)))
    c = get(codec)
    unaware = _probe(c.encoder_class, cls, name)(c.default_framing)
    written = unaware.encode(events) + unaware.close()
    decoder = c.decoder(c.default_framing, strict=True)
    back = decoder.feed(written) + decoder.close()
    original = next(e for e in events if type(e) is cls)
    value = getattr(original, name)
    assert any(type(e) is cls and getattr(e, name) == value for e in back), f"{name}={value!r} lost: {back}"


def test_an_event_type_without_a_handler_is_carried() -> None:
    class Minimal(Encoder):
        codec = "minimal"

        def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
            return b'{"type":' + name + b"," + body + b"}"

    out = Minimal("ndjson").encode([Terminal(status="succeeded", text="hi")])
    assert out == b'{"type":"data-terminal","event":{"type":"terminal","text":"hi"}}\n'


def test_a_handler_cannot_declare_a_field_its_types_lack() -> None:
    with pytest.raises(TypeError, match="lack: \\['nonsense'\\]"):

        class Wrong(Encoder):
            @handles(Terminal, writes=("status", "nonsense"))
            def _end(self, event: Terminal, parts: list[bytes]) -> None:
                pass


def test_a_handler_declares_its_types_and_fields() -> None:
    class Declared(Encoder):
        codec = "declared"

        @handles(Terminal, writes=("status", "text"))
        def _end(self, event: Terminal, parts: list[bytes]) -> None:
            self._put(parts, event, [b"{}"], True)

        def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
            return b'{"type":' + name + b"," + body + b"}"

    # (every encoder inherits the shared artifact handler: a data part whose id is the ref)
    assert Declared.handlers == {Terminal: "_end", ArtifactPresented: "_artifact", ArtifactRefused: "_artifact"}
    assert dict(Declared.unwritten[Terminal])["model"] is msgspec.UNSET
    assert Declared("ndjson").encode([Terminal(status="succeeded")]) == b"{}\n"  # nothing unwritten set
    carried = Declared("ndjson").encode([Terminal(status="succeeded", model="m")])  # model: nobody writes it
    assert carried == b'{"type":"data-terminal","covers":1,"event":{"type":"terminal","text":"","model":"m"}}\n{}\n'


# -- decoders: the mirror (@reads) ------------------------------------------------------------


def test_every_decoder_reads_each_wire_type_of_its_union_with_a_typed_method() -> None:
    """Each decoder's table covers its protocol's wire union (checked when the class is made),
    and every reader is a method of the decoder that names its wire type in its signature."""
    for name in registered():
        decoder = get(name).decoder_class
        members = set(typing.get_args(decoder.wire_types))
        assert members <= set(decoder.readers), name
        for wire, method in decoder.readers.items():
            hints = typing.get_type_hints(getattr(decoder, method))
            assert wire in (typing.get_args(hints["w"]) or (hints["w"],)), (name, method)
            if wire in decoder.one_reads:  # one event, of a type of the model
                assert issubclass(hints["return"], Event) and "extra" not in hints, (name, method)
            else:
                assert hints["return"] == list[Event]
        assert decoder.hot_reads <= set(decoder.readers), name
        for wire in decoder.hot_reads:  # the hot path has no frame: a reader it calls never looks
            assert "_current" not in inspect.getsource(getattr(decoder, decoder.readers[wire])), (name, wire)


def test_a_wire_type_without_a_reader_is_refused_when_the_class_is_made() -> None:
    class A(msgspec.Struct, tag=True):
        text: str

    class B(msgspec.Struct, tag=True):
        pass

    with pytest.raises(TypeError, match="has no reader for B"):

        class Partial(Decoder):
            wire_types = A | B

            @reads(A)
            def _on_a(self, w: A, extra: Members) -> list[Event]:
                return [TextDelta(text=w.text)]


def test_readers_stack_and_only_hot_ones_reach_the_hot_table() -> None:
    class A(msgspec.Struct, tag=True):
        text: str

    class B(msgspec.Struct, tag=True):
        text: str

    class C(msgspec.Struct, tag=True):
        text: str

    class Three(Decoder):
        wire_types = A | B | C

        @reads_one(A, hot=True)
        @reads_one(B)
        def _on_text(self, w: A | B) -> TextDelta:
            return TextDelta(text=w.text)

        @reads(C)
        def _on_two(self, w: C, extra: Members) -> list[Event]:
            return [TextDelta(text=w.text), *with_extra(TextDelta(text=w.text), extra)]

    assert Three.readers == {A: "_on_text", B: "_on_text", C: "_on_two"}
    assert Three.one_reads == {A, B} and Three.hot_reads == {A}
    decoder = Three()
    assert decoder._take_wire(A(text="x")) == TextDelta(text="x")
    assert decoder._take_wire(B(text="x")) is None  # not hot: the full way reads it
    extra = {"more": msgspec.Raw(b"1")}
    # the full way puts a one-event reader's members on its event itself
    assert decoder._read_wire(B(text="y"), extra) == [TextDelta(text="y", extra=extra)]
    assert decoder._read_wire(C(text="z"), extra) == [TextDelta(text="z"), TextDelta(text="z", extra=extra)]


def test_agentfootprint_reads_every_payload_shape_it_maps() -> None:
    from streambridge.codecs.agentfootprint import mapping

    assert set(mapping._READERS) == set(mapping.PAYLOADS.values())

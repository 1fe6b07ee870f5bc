"""The golden corpus, the real nest captures, and codec helpers the tests share."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from streambridge.codecs import get, registered
from streambridge.events import Event, encode_event

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
CAPTURES = ROOT / "tests" / "data" / "captures" / "nest"  # real server bytes, copied unchanged


def golden_stem(name: str) -> str:
    """A protocol's golden file name without its extension: its name with ``:`` as ``-``
    (``agentfootprint:host`` → ``agentfootprint-host``; a colon breaks Windows checkouts)."""
    return name.replace(":", "-")


#: each protocol's golden file: its name and its default framing's extension (protocols
#: registered without goldens, such as the test protocol of test_adding_a_protocol, have none)
FILES = {
    c.name: file
    for c in registered().values()
    if (GOLDEN / "plain-text" / (file := f"{golden_stem(c.name)}.{c.default_framing}")).exists()
}
CODECS = tuple(FILES)
SCENARIOS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


@functools.cache
def golden(scenario: str, codec: str) -> bytes:
    """A golden file's bytes, read once per test process (bytes are immutable)."""
    return (GOLDEN / scenario / FILES[codec]).read_bytes()


def golden_name(scenario: str, codec: str) -> str:
    """How a failure report names a golden file: its path under ``golden/``."""
    return f"{scenario}/{FILES[codec]}"


def frame_groups(data: bytes, framing: str, size: int) -> list[bytes]:
    """Whole frames, ``size`` to a chunk: every chunk reaches a decoder's hot path afresh (a
    stream in one chunk gives it nothing after its run start, which waits for the frame after it)."""
    end = b"\n\n" if framing == "sse" else b"\n"
    frames = [frame + end for frame in data.split(end) if frame]
    return [b"".join(frames[i : i + size]) for i in range(0, len(frames), size)]


def capture_body(path: Path) -> bytes:
    """The body of a capture file: everything after the first empty line."""
    raw = path.read_bytes()
    return raw[raw.index(b"\n\n") + 2 :]


def capture_paths() -> list[Path]:
    """The real nest captures kept in the repository (see tests/data/captures/README.md)."""
    paths = sorted(CAPTURES.glob("*.http"))
    if not paths:
        raise FileNotFoundError(f"no real nest captures in {CAPTURES}: the checkout is incomplete")
    return paths


def decode(codec: str, data: bytes, *, framing: str | None = None, strict: bool = False) -> list[Event]:
    decoder = get(codec).decoder(framing, strict=strict)  # type: ignore[arg-type]
    return decoder.feed(data) + decoder.close()


def encode(codec: str, events: list[Event], *, framing: str | None = None, **options: object) -> bytes:
    encoder = get(codec).encoder(framing, **options)  # type: ignore[arg-type]
    return encoder.encode(events) + encoder.close()


def convert(source: str, target: str, data: bytes) -> bytes:
    return encode(target, decode(source, data))


def canonical(events: list[Event]) -> list[bytes]:
    """Events as comparable bytes (ids included: a source's SSE ids must survive a trip)."""
    return [encode_event(e) for e in events]


class Corpus:
    """The goldens decoded and converted once per test process: the laws read the same
    conversions many times (matrix, cross trip, terminals, carriers, chunking), and decoding
    the same golden again per law and pair proves nothing more. Events are read-only here."""

    def __init__(self) -> None:
        self._events: dict[tuple[str, str], tuple[Event, ...]] = {}
        self._converted: dict[tuple[str, str, str], bytes] = {}

    def golden(self, scenario: str, codec: str) -> bytes:
        return golden(scenario, codec)

    def encode(self, codec: str, events: Sequence[Event]) -> bytes:
        return encode(codec, list(events))

    def events(self, scenario: str, codec: str) -> tuple[Event, ...]:
        key = (scenario, codec)
        if key not in self._events:
            self._events[key] = tuple(decode(codec, self.golden(scenario, codec)))
        return self._events[key]

    def converted(self, scenario: str, source: str, target: str) -> bytes:
        """The golden of ``source`` translated to ``target`` (decode, then encode)."""
        key = (scenario, source, target)
        if key not in self._converted:
            self._converted[key] = self.encode(target, self.events(scenario, source))
        return self._converted[key]


#: the one corpus every test of a process shares
CORPUS = Corpus()


def first_difference(got: bytes | Sequence[object], expected: bytes | Sequence[object]) -> str:
    """Where two outputs part: the byte offset and line, or the frame / event index, with both sides."""
    if isinstance(got, bytes) and isinstance(expected, bytes):
        at = next(
            (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), min(len(got), len(expected))
        )
        line = expected.count(b"\n", 0, at) + 1
        return (
            f"first difference at byte {at} (line {line}; {len(got)} bytes got, {len(expected)} expected): "
            f"got {got[max(0, at - 20) : at + 60]!r}, expected {expected[max(0, at - 20) : at + 60]!r}"
        )
    at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), min(len(got), len(expected)))
    mine = repr(got[at])[:200] if at < len(got) else "nothing"
    theirs = repr(expected[at])[:200] if at < len(expected) else "nothing"
    return f"first difference at frame {at} ({len(got)} got, {len(expected)} expected): got {mine}, expected {theirs}"


def same(got: bytes | Sequence[object], expected: bytes | Sequence[object], what: str = "") -> None:
    """Assert equality, naming the first differing byte or frame (a bare ``==`` on megabytes says nothing)."""
    if got != expected:
        raise AssertionError(f"{what + ': ' if what else ''}{first_difference(got, expected)}")


class Findings:
    """Every failing case of one law, reported at once: a law test walks its whole corpus and
    fails once with a report naming each failing file, instead of one test per file."""

    def __init__(self, law: str) -> None:
        self.law = law
        self.cases = 0
        self.failures: list[str] = []

    @contextmanager
    def case(self, name: str) -> Iterator[None]:
        """One case (a file, a pair): an exception in it is recorded under ``name``, and the walk goes on."""
        self.cases += 1
        try:
            yield
        except Exception as exc:  # an assertion, or a codec raising on a file: both are findings
            message = str(exc).strip() or type(exc).__name__
            self.failures.append(f"{name}: {message.splitlines()[0][:600]}")

    def report(self) -> str:
        lines = [f"{self.law}: {len(self.failures)} of {self.cases} cases fail", *self.failures]
        return "\n  ".join(lines)

    def check(self) -> None:
        """Fail once, naming every failing case; also fail if the walk checked nothing."""
        if not self.cases:
            pytest.fail(f"{self.law}: no case was checked")
        if self.failures:
            pytest.fail(self.report(), pytrace=False)

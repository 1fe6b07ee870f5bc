"""The golden corpus, the real nest captures, and codec helpers the tests share."""

from __future__ import annotations

from pathlib import Path

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


def golden(scenario: str, codec: str) -> bytes:
    return (GOLDEN / scenario / FILES[codec]).read_bytes()


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

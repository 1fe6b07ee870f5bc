"""What a client receives at each fidelity: data parts as a share of its frames, and its frames
and bytes against the target protocol's own golden of the same run.

Every source-client pair over the goldens (every scenario) and the real Nest captures in
tests/data/captures. A frame is a *data part* when the target's own decoder reads it as one
(``DataPart``): a carrier at ``exact`` is read back as the event it carries, so at ``exact``
the carriers are counted by what the frame holds instead. The native reference is the target's
golden of the same scenario (hand-written from each protocol's real streams for agentkit, nest
and oma; made by streambridge's encoders for the others, so for those the ratio says little).
For ai-sdk and AG-UI the second table compares with a real native producer instead: one agent
run streamed natively in both protocols by pydantic-ai's own adapters (tests/native_producers.py,
with the test extras installed), each translated into the other.

    python bench/fidelity_figures.py            # a Markdown table per fidelity
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from streambridge import translate
from streambridge.codecs import get, registered
from streambridge.codecs.fidelity import FIDELITIES
from streambridge.codecs.framing import make_parser
from streambridge.codecs.riding import AG_UI_SLOT, AI_SDK_SLOT
from streambridge.events import DataPart

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden"
CAPTURES = ROOT / "tests" / "data" / "captures" / "nest"
#: how every carrier's body starts inside its protocol's data part (carrier.carrier_body)
CARRIER_MARKS = (b'"event":{"type":', b'"covers":', b'"whole":true,"event"')


def golden_file(scenario: Path, codec: str) -> Path | None:
    default = get(codec).default_framing
    path = scenario / f"{codec.replace(':', '-')}.{default}"
    return path if path.exists() else None


def inputs() -> list[tuple[str, str, bytes]]:
    """(scenario, source, bytes) for every golden, and the real captures as nest."""
    out = []
    for scenario in sorted(p for p in GOLDEN.iterdir() if p.is_dir()):
        for codec in registered():
            path = golden_file(scenario, codec)
            if path is not None:
                out.append((scenario.name, codec, path.read_bytes()))
    for capture in sorted(CAPTURES.glob("*.http")):
        raw = capture.read_bytes()
        out.append((capture.stem, "nest", raw[raw.index(b"\n\n") + 2 :]))
    return out


def rides(frame: bytes) -> bool:
    """A carrier riding on its own frame (codecs/riding.py): no data part of its own."""
    return AI_SDK_SLOT in frame or AG_UI_SLOT in frame


def data_parts(target: str, data: bytes) -> tuple[int, int]:
    """(frames, data-part frames) of a client's stream."""
    frames = make_parser(get(target).default_framing).feed(data)
    decoder = get(target).decoder()
    parts = sum(isinstance(e, DataPart) for e in decoder.feed(data) + decoder.close())
    carriers = sum(any(mark in f.data for mark in CARRIER_MARKS) and not rides(f.data) for f in frames)
    return len(frames), parts + carriers


def figures(fidelity: str) -> dict[tuple[str, str], list[int]]:
    """Per (source, target): frames, data parts, and (where the target has a golden of the same
    run) frames, bytes, native frames, native bytes."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * 6)
    for scenario, source, data in inputs():
        for target in registered():
            out = b"".join(translate([data], source, target, fidelity=fidelity))
            frames, parts = data_parts(target, out)
            row = totals[(source, target)]
            row[0] += frames
            row[1] += parts
            native = golden_file(GOLDEN / scenario, target) if (GOLDEN / scenario).is_dir() else None
            if native is not None:
                body = native.read_bytes()
                row[2] += frames
                row[3] += len(out)
                row[4] += len(make_parser(get(target).default_framing).feed(body))
                row[5] += len(body)
    return totals


def native_rows() -> list[str]:
    """Per native run and direction: our frames and bytes against the native stream's, per fidelity."""
    sys.path.insert(0, str(ROOT))
    try:
        from tests.native_producers import SCENARIOS, native_streams
    except ImportError as exc:  # (pydantic-ai comes with the test extras)
        return [f"(no native producer: {exc})"]
    rows = []
    for scenario in SCENARIOS:
        native = native_streams(scenario)
        for source, target in (("ag-ui", "ai-sdk"), ("ai-sdk", "ag-ui")):
            cells = [f"{scenario}: {source} → {target}"]
            native_frames = data_parts(target, native[target])[0]
            for fidelity in FIDELITIES:
                out = b"".join(translate([native[source]], source, target, fidelity=fidelity))
                frames, parts = data_parts(target, out)
                cells += [f"{frames / native_frames:.2f}", f"{len(out) / len(native[target]):.2f}", str(parts)]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    print("\n### against a native producer (pydantic-ai) of the same run\n")
    print("| run | frames exact | bytes exact | data parts exact | frames client | bytes client | data parts client |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(native_rows()))
    for fidelity in FIDELITIES:
        print(f"\n### {fidelity}\n")
        print("| source → client | frames | data parts | of frames | frames / native | bytes / native |")
        print("|---|---:|---:|---:|---:|---:|")
        for (source, target), row in sorted(figures(fidelity).items()):
            frames, parts, compared, size, native_frames, native_bytes = row
            share = f"{parts / frames:.0%}" if frames else "-"
            by_frames = f"{compared / native_frames:.2f}" if native_frames else "-"
            by_bytes = f"{size / native_bytes:.2f}" if native_bytes else "-"
            print(f"| {source} → {target} | {frames} | {parts} | {share} | {by_frames} | {by_bytes} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

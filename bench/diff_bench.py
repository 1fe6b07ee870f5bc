"""``streambridge diff`` time and memory: a generated nest transcript against itself and against
copies with a few changes.

The transcript is translate_bench's nest stream (40 text deltas, reasoning, a tool call with
its output and step brackets per cycle). Each row runs in its own process, which calls the
library's diff (:func:`streambridge.diff.diff_files`) once per repeat and reports the best
time and its peak RSS growth over its size before the first call (Linux ``VmHWM``). Against
itself at 10 k, 40 k and 2 M frames shows that time is linear; the same two files only
decoded (no diff) show what the decoders themselves keep, the rest is diff's; against a copy
with changes near its start shows the early stop (``--max``: only the start of both files is
read); against a copy with changes spread over the file shows the cost of locating their
frames (a second pass, frame by frame in the pieces that hold them).

    python bench/diff_bench.py                  # 2,000,000 frames, best of 3
    python bench/diff_bench.py --frames 200000 --repeat 1
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from translate_bench import CHUNK, rss_kib, write_transcript

from streambridge.codecs import get
from streambridge.diff import diff_files

CHUNK_SIZE = CHUNK


def edited_copy(path: Path, out: Path, at: list[float]) -> Path:
    """The transcript with the tool input of the call nearest each fraction of it changed."""
    data = bytearray(path.read_bytes())
    for fraction in at:
        start = data.index(b'"input":{"q":"item ', int(len(data) * fraction))
        data[start : start + 19] = b'"input":{"q":"ITEM '
    out.write_bytes(data)
    return out


def measure_one(a: str, b: str, limit: int, repeat: int) -> None:
    """In the child: best time, peak RSS growth and what diff found, on one line."""
    base = rss_kib()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = diff_files(a, b, limit=limit)
        times.append(time.perf_counter() - start)
    read = sum(result.read) / (Path(a).stat().st_size + Path(b).stat().st_size)
    print(min(times), rss_kib() - base, len(result.hunks), int(result.stopped), read, len(result.frames_located))


class _Discard:
    """A decoder sink that keeps nothing (as diff's own keeps nearly nothing)."""

    def append(self, event: object) -> None:
        pass

    def deltas(self, texts: list[str], reasoning: bool = False, ids: object = None) -> None:
        pass


def decode_one(a: str, b: str, repeat: int) -> None:
    """In the child: both files only decoded, both decoders alive to the end (what a decoder
    keeps whatever reads it: the answer text its terminal carries, the ids of tool calls)."""
    base = rss_kib()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        decoders = [get("nest").decoder("sse") for _ in (a, b)]
        for decoder, path in zip(decoders, (a, b), strict=True):
            with open(path, "rb") as stream:
                while chunk := stream.read(CHUNK_SIZE):
                    decoder.feed(chunk, into=_Discard())  # type: ignore[arg-type]
        for decoder in decoders:
            decoder.close(into=_Discard())  # type: ignore[arg-type]
        times.append(time.perf_counter() - start)
        del decoders
    print(min(times), rss_kib() - base, 0, 0, 1.0, 0)


def measure(a: Path, b: Path, limit: int, repeat: int) -> tuple[float, float, int, bool, float, int]:
    args = [sys.executable, __file__, "--one", str(a), str(b), str(limit), str(repeat)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2]), out[3] == "1", float(out[4]), int(out[5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--one", nargs=4, metavar=("A", "B", "MAX", "REPEAT"), help=argparse.SUPPRESS
    )  # MAX 0: decode only
    args = parser.parse_args()
    if args.one:
        a, b, limit, repeat = args.one
        if int(limit) == 0:
            decode_one(a, b, int(repeat))
        else:
            measure_one(a, b, int(limit), int(repeat))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for frames in (10_000, 40_000, args.frames):
            folder = Path(tmp) / str(frames)
            folder.mkdir()
            path, count = write_transcript("nest", frames, folder)
            rows.append((f"{count:,} frames against itself", count, *measure(path, path, 10, args.repeat)))
        rows.append((f"{count:,} frames twice, decoded only (no diff)", count, *measure(path, path, 0, args.repeat)))
        early = edited_copy(path, folder / "early.sse", [0.001, 0.002, 0.003])
        rows.append(
            (f"{count:,} frames, 3 changes in the first 0.3 %, --max 2", count, *measure(path, early, 2, args.repeat))
        )
        spread = edited_copy(path, folder / "spread.sse", [0.1, 0.5, 0.9])
        rows.append((f"{count:,} frames, 3 changes at 10, 50 and 90 %", count, *measure(path, spread, 10, args.repeat)))
    print(f"nest SSE, best of {args.repeat}, Python {sys.version.split()[0]}; frames/s counts the frames of one file")
    print()
    print("| diff | seconds | frames/s | peak RSS growth | differences | read |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, count, seconds, growth, hunks, stopped, read, _located in rows:
        shown = f"{hunks} (stopped)" if stopped else str(hunks)
        rate = "-" if stopped else f"{count / seconds:,.0f}"  # it did not read them all
        print(f"| {name} | {seconds:.2f} | {rate} | {growth:.1f} MiB | {shown} | {read:.1%} |")


if __name__ == "__main__":
    main()

"""Translation throughput: a generated transcript converted SSE→SSE for every pair of codecs.

Next to each result stands a *floor* measured in the same run on the same bytes: split the SSE
frames, msgspec-decode each into its protocol's wire type and encode it back, with no
translation. The ratio says what the event model, the state machines and the framing cost on
top of the unavoidable JSON work. Input is read in 64 KiB chunks from a file, output written
to /dev/null, so memory stays constant whatever the size: each translation runs in a child
process, right after the floor on the same bytes, and reports its own peak RSS growth over its
size before translating (what does grow is the answer text, which a terminal must carry whole,
and what a target's terminal must list). Times are the best of ``--repeat`` runs of each.

    python bench/translate_bench.py            # 1,000,000 events per source
    python bench/translate_bench.py --events 100000
    python bench/translate_bench.py --detect   # the source framing detected, not given
    python bench/translate_bench.py --against ../before   # against a checkout of another commit

With ``--against``, every translation also runs with the ``streambridge`` of that checkout
(``git worktree add ../before <commit>``), interleaved with this one's in the same run, and the
table compares the two.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from streambridge import Translator
from streambridge.codecs import agentkit, nest, oma
from streambridge.codecs.ag_ui import wire as ag_ui_wire
from streambridge.codecs.agentfootprint import wire as af
from streambridge.codecs.agentfootprint.mapping import PAYLOADS as AF_PAYLOADS
from streambridge.codecs.ai_sdk import wire as ai_sdk_wire

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 64 * 1024
CODECS = ("nest", "agentkit", "oma", "agentfootprint", "ai-sdk", "ag-ui")


def _nest_frames(n: int) -> Iterator[bytes]:
    yield b'event: meta\ndata: {"runId":"run-1","threadId":"thr-1"}\n\n'
    i = 0
    while i < n - 2:
        yield b'data: {"kind":"step-start"}\n\n'
        yield b'data: {"kind":"reasoning","text":"thinking about it"}\n\n'
        for k in range(40):
            yield b'data: {"kind":"text","text":"w%d "}\n\n' % k
        cid = b"call-%d" % i
        yield (
            b'data: {"kind":"tool-input-available","id":"%s","name":"lookup","input":{"q":"item %d"},"toolKind":"read"}\n\n'
            % (cid, i)
        )
        yield b'data: {"kind":"tool-output","id":"%s","output":{"rows":3,"ok":true}}\n\n' % cid
        yield b'data: {"kind":"step-finish","usage":{"inputTokens":11,"outputTokens":5},"costUsd":null}\n\n'
        i += 46
    yield b"event: done\ndata: {}\n\n"


def _agentkit_frames(n: int) -> Iterator[bytes]:
    yield b'data: {"type":"turn_start","turnId":"t1","messageId":"m1","provider":"custom"}\n\n'
    i, text = 0, []
    while i < n - 2:
        yield b'data: {"type":"thinking_delta","messageId":"m1","text":"thinking about it"}\n\n'
        for k in range(40):
            yield b'data: {"type":"text_delta","messageId":"m1","text":"w%d "}\n\n' % k
            text.append(f"w{k} ")
        cid = b"call-%d" % i
        yield (
            b'data: {"type":"tool_call","messageId":"m1","call":{"id":"%s","name":"lookup","argumentsJson":"{\\"q\\":\\"item\\"}","status":"running"}}\n\n'
            % cid
        )
        yield (
            b'data: {"type":"tool_result","messageId":"m1","callId":"%s","status":"succeeded","resultText":"3 rows"}\n\n'
            % cid
        )
        i += 43
    result = msgspec.json.encode({"status": "succeeded", "text": "".join(text), "provider": "custom"})
    yield b'data: {"type":"turn_end","turnId":"t1","messageId":"m1","result":' + result + b"}\n\n"


def _oma_frames(n: int) -> Iterator[bytes]:
    i = 0
    while i < n - 1:
        yield b'data: {"type":"reasoning","data":"thinking about it"}\n\n'
        for k in range(40):
            yield b'data: {"type":"text","data":"w%d "}\n\n' % k
        cid = b"call-%d" % i
        yield (
            b'data: {"type":"tool_use","data":{"type":"tool_use","id":"%s","name":"lookup","input":{"q":"item"}}}\n\n'
            % cid
        )
        yield (
            b'data: {"type":"tool_result","data":{"type":"tool_result","tool_use_id":"%s","content":"3 rows"}}\n\n'
            % cid
        )
        i += 43
    yield b'data: {"type":"done","data":{"success":true,"status":{"code":"ok"},"output":"","messages":[],"tokenUsage":{"input_tokens":1,"output_tokens":2},"toolCalls":[]}}\n\n'


def _ai_sdk_frames(n: int) -> Iterator[bytes]:
    """What ``streamText(...).toUIMessageStreamResponse()`` writes for a tool-using agent."""
    yield b'data: {"type":"start","messageId":"m1"}\n\n'
    i = 0
    while i < n - 3:
        s = b"%d" % i
        yield b'data: {"type":"start-step"}\n\n'
        yield b'data: {"type":"reasoning-start","id":"r' + s + b'"}\n\n'
        yield b'data: {"type":"reasoning-delta","id":"r' + s + b'","delta":"thinking about it"}\n\n'
        yield b'data: {"type":"reasoning-end","id":"r' + s + b'"}\n\n'
        yield b'data: {"type":"text-start","id":"t' + s + b'"}\n\n'
        for k in range(40):
            yield b'data: {"type":"text-delta","id":"t%s","delta":"w%d "}\n\n' % (s, k)
        yield b'data: {"type":"text-end","id":"t' + s + b'"}\n\n'
        yield (
            b'data: {"type":"tool-input-available","toolCallId":"call-%s","toolName":"lookup","input":{"q":"item"}}\n\n'
            % s
        )
        yield b'data: {"type":"tool-output-available","toolCallId":"call-%s","output":{"rows":3,"ok":true}}\n\n' % s
        yield b'data: {"type":"finish-step"}\n\n'
        i += 50
    yield b'data: {"type":"finish"}\n\n'
    yield b"data: [DONE]\n\n"


def _ag_ui_frames(n: int) -> Iterator[bytes]:
    """What an AG-UI agent (ag-ui-protocol's EventEncoder) writes for a tool-using run."""
    yield b'data: {"type":"RUN_STARTED","threadId":"thr-1","runId":"run-1"}\n\n'
    i = 0
    while i < n - 2:
        s = b"%d" % i
        yield b'data: {"type":"TEXT_MESSAGE_START","messageId":"m%s","role":"assistant"}\n\n' % s
        for k in range(40):
            yield b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m%s","delta":"w%d "}\n\n' % (s, k)
        yield b'data: {"type":"TEXT_MESSAGE_END","messageId":"m%s"}\n\n' % s
        yield b'data: {"type":"TOOL_CALL_START","toolCallId":"call-%s","toolCallName":"lookup"}\n\n' % s
        yield b'data: {"type":"TOOL_CALL_ARGS","toolCallId":"call-%s","delta":"{\\"q\\":\\"item\\"}"}\n\n' % s
        yield b'data: {"type":"TOOL_CALL_END","toolCallId":"call-%s"}\n\n' % s
        yield (
            b'data: {"type":"TOOL_CALL_RESULT","messageId":"r%s","toolCallId":"call-%s","content":"3 rows","role":"tool"}\n\n'
            % (s, s)
        )
        i += 46
    yield b'data: {"type":"RUN_FINISHED","threadId":"thr-1","runId":"run-1"}\n\n'


_AF_META = (
    b'"meta":{"wallClockMs":0,"runOffsetMs":0,"runtimeStageId":"","subflowPath":[],"compositionPath":[],"runId":"r1"}'
)


def _af(kind: bytes, payload: bytes) -> bytes:
    t = b"agentfootprint." + kind
    return b"event: " + t + b'\ndata: {"type":"' + t + b'","payload":' + payload + b"," + _AF_META + b"}\n\n"


def _agentfootprint_frames(n: int) -> Iterator[bytes]:
    yield _af(b"agent.turn_start", b'{"turnIndex":0,"userPrompt":""}')
    i, it, text = 0, 0, []
    while i < n - 2:
        it += 1
        yield _af(
            b"stream.llm_start",
            b'{"iteration":%d,"provider":"","model":"","systemPromptChars":0,"messagesCount":0,"toolsCount":0}' % it,
        )
        yield _af(b"stream.thinking_delta", b'{"iteration":%d,"tokenIndex":0,"content":"thinking about it"}' % it)
        call = []
        for k in range(40):
            yield _af(b"stream.token", b'{"iteration":%d,"tokenIndex":%d,"content":"w%d "}' % (it, k, k))
            call.append(f"w{k} ")
        text += call
        cid = b"call-%d" % i
        yield _af(b"stream.tool_start", b'{"toolName":"lookup","toolCallId":"%s","args":{"q":"item"}}' % cid)
        yield _af(b"stream.tool_end", b'{"toolCallId":"%s","result":{"rows":3,"ok":true},"durationMs":0}' % cid)
        content = msgspec.json.encode("".join(call))
        yield _af(
            b"stream.llm_end",
            b'{"iteration":%d,"content":%s,"toolCallCount":1,"usage":{"input":11,"output":5},"stopReason":"tool_use","durationMs":0}'
            % (it, content),
        )
        i += 46
    final = msgspec.json.encode("".join(text))
    yield _af(
        b"agent.turn_end",
        b'{"turnIndex":0,"finalContent":%s,"totalInputTokens":%d,"totalOutputTokens":%d,"iterationCount":%d,"durationMs":0}'
        % (final, 11 * it, 5 * it, it),
    )


def _af_envelopes() -> object:
    """The floor's wire type for agentfootprint: each mapped envelope, tagged by its type."""
    kinds = []
    for name, payload in AF_PAYLOADS.items():
        fields = [("payload", payload), ("meta", af.EventMeta)]
        kinds.append(msgspec.defstruct(name, fields, tag_field="type", tag=af.PREFIX + name, rename="camel"))
    return kinds[0] if len(kinds) == 1 else __import__("typing").Union[tuple(kinds)]


GENERATORS = {
    "nest": _nest_frames,
    "agentkit": _agentkit_frames,
    "oma": _oma_frames,
    "agentfootprint": _agentfootprint_frames,
    "ai-sdk": _ai_sdk_frames,
    "ag-ui": _ag_ui_frames,
}
WIRE = {
    "nest": nest.NestFrame,
    "agentkit": agentkit.AgentFrame,
    "oma": oma.OmaEventW,
    "agentfootprint": _af_envelopes(),
    "ai-sdk": ai_sdk_wire.AiSdkChunk,
    "ag-ui": ag_ui_wire.AgUiEvent,
}


def write_transcript(codec: str, n: int, folder: Path) -> tuple[Path, int]:
    path = folder / f"{codec}.sse"
    count = 0
    with path.open("wb") as f:
        buf: list[bytes] = []
        for frame in GENERATORS[codec](n):
            buf.append(frame)
            count += 1
            if len(buf) >= 4096:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))
    return path, count


def chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            yield block


def floor(codec: str, path: Path) -> float:
    """Seconds to split, decode and re-encode every frame with no translation."""
    decoder = msgspec.json.Decoder(WIRE[codec])
    generic = msgspec.json.Decoder()  # nest's meta / done frames are not kind-tagged
    encode = msgspec.json.Encoder().encode
    sink = open(os.devnull, "wb")  # noqa: SIM115
    start = time.perf_counter()
    rest = b""
    for block in chunks(path):
        frames = (rest + block).split(b"\n\n")
        rest = frames.pop()
        out = []
        for frame in frames:
            body = frame[frame.rfind(b"data: ") + 6 :]
            if body == b"[DONE]":  # ai-sdk's end marker: no JSON, passed on as it is
                out.append(frame + b"\n\n")
                continue
            try:
                wire = decoder.decode(body)
            except msgspec.ValidationError:
                wire = generic.decode(body)
            out.append(b"data: " + encode(wire) + b"\n\n")
        sink.write(b"".join(out))
    elapsed = time.perf_counter() - start
    sink.close()
    return elapsed


def translate(source: str, target: str, path: Path, source_framing: str | None = "sse") -> float:
    translator = Translator(source, target, source_framing=source_framing, target_framing="sse")  # type: ignore[arg-type]
    sink = open(os.devnull, "wb")  # noqa: SIM115
    start = time.perf_counter()
    for block in chunks(path):
        sink.write(translator.feed(block))
    sink.write(translator.close())
    elapsed = time.perf_counter() - start
    sink.close()
    return elapsed


def rss_kib() -> int:
    """Peak RSS of this process (KiB). Linux's VmHWM starts afresh at exec, while ``ru_maxrss``
    keeps the parent's peak across fork and exec, which would hide a child's own growth."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure_in_child(
    source: str, target: str, path: Path, detect: bool = False, code: Path = ROOT
) -> tuple[float, float, float]:
    """Seconds of the floor, seconds and peak RSS growth (MiB) of one translation, all in one
    fresh process: floor and translation run back to back, so both see the same machine.
    ``code`` is the checkout whose ``streambridge`` translates."""
    args = [sys.executable, __file__, "--one", source, target, str(path), *(["--detect"] if detect else [])]
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    floor_seconds, seconds, growth = out.stdout.split()
    return float(floor_seconds), float(seconds), int(growth) / 1024


def instructions_in_child(source: str, target: str, path: Path, code: Path) -> int:
    """Instructions one translation executes with ``code``'s ``streambridge`` (callgrind's count
    for the translating process less that of the same process stopping before it translates)."""
    counts = []
    for mode in ("translate", "setup"):
        args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
        args += ["--one", source, target, str(path), "--count", mode]
        env = {**os.environ, "PYTHONPATH": str(code), "PYTHONMALLOC": "malloc"}
        done = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
        counts.append(int(done.stderr.split("Collected :")[1].split()[0]))
    return counts[0] - counts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--detect", action="store_true", help="leave the source framing to detection")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="compare with another checkout's code")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --against: count the instructions each translation executes (valgrind's callgrind), "
        "not its time: deterministic, so a few percent show on a noisy host",
    )
    parser.add_argument("--pairs", help="with --against: only these pairs, as source:target,source:target")
    parser.add_argument("--one", nargs=3, metavar=("SOURCE", "TARGET", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--count", choices=("translate", "setup"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one and args.count:  # under callgrind: the translation, or only what comes before it
        source, target, path = args.one
        Translator(source, target, source_framing="sse", target_framing="sse")
        if args.count == "translate":
            translate(source, target, Path(path))
        return
    if args.one:
        source, target, path = args.one
        floor_seconds = floor(source, Path(path))
        base = rss_kib()
        seconds = translate(source, target, Path(path), None if args.detect else "sse")
        print(floor_seconds, seconds, rss_kib() - base)
        return
    if args.against:
        compare(args)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in CODECS:
            path, count = write_transcript(source, args.events, Path(tmp))
            for target in CODECS:
                runs = [measure_in_child(source, target, path, args.detect) for _ in range(args.repeat)]
                floor_rate = count / min(floor_seconds for floor_seconds, _, _ in runs)
                rate = count / min(seconds for _, seconds, _ in runs)
                rows.append((source, target, count, rate, floor_rate, max(growth for _, _, growth in runs)))
    detected = " (source framing detected)" if args.detect else ""
    print(
        f"{args.events:,} events per source, SSE → SSE{detected}, best of {args.repeat}, Python {sys.version.split()[0]}"
    )
    print()
    print("| source → target | events | events/s | floor events/s | ratio | peak RSS growth |")
    print("|---|---:|---:|---:|---:|---:|")
    for source, target, count, rate, floor_rate, rss in rows:
        print(
            f"| {source} → {target} | {count:,} | {rate:,.0f} | {floor_rate:,.0f} | "
            f"{rate / floor_rate:.2f} | {rss:.1f} MiB |"
        )


def compare(args: argparse.Namespace) -> None:
    """This checkout against another, pair by pair, runs interleaved (best of ``--repeat`` each)."""
    against = args.against.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # what it has too (a codec's package is its name in Python's spelling)
        both = [c for c in CODECS if (against / "streambridge" / "codecs" / c.replace("-", "_")).exists()]
        pairs = args.pairs.split(",") if args.pairs else [f"{s}:{t}" for s in both for t in both]
        for source in both:
            if not any(pair.startswith(source + ":") for pair in pairs):
                continue
            path, count = write_transcript(source, args.events, Path(tmp))
            for target in both:
                if f"{source}:{target}" not in pairs:
                    continue
                if args.instructions:  # (a rate of 1/instructions: the ratio reads as the time one)
                    now_count = instructions_in_child(source, target, path, ROOT)
                    before_count = instructions_in_child(source, target, path, against)
                    rows.append((source, target, 1e9 / now_count, 1e9 / before_count))
                    continue
                now, before = [], []
                for _ in range(args.repeat):
                    now.append(measure_in_child(source, target, path, args.detect)[1])
                    before.append(measure_in_child(source, target, path, args.detect, against)[1])
                rows.append((source, target, count / min(now), count / min(before)))
    if args.instructions:
        print(f"{args.events:,} events per source, SSE → SSE, instructions (callgrind); before: {against}")
        print()
        print("| source → target | instructions before (M) | instructions now (M) | before / now |")
        print("|---|---:|---:|---:|")
        for source, target, rate, old in rows:
            print(f"| {source} → {target} | {1e3 / old:,.0f} | {1e3 / rate:,.0f} | {rate / old:.3f} |")
        return
    print(f"{args.events:,} events per source, SSE → SSE, best of {args.repeat} each, interleaved; before: {against}")
    print()
    print("| source → target | events/s before | events/s now | now / before |")
    print("|---|---:|---:|---:|")
    for source, target, rate, old in rows:
        print(f"| {source} → {target} | {old:,.0f} | {rate:,.0f} | {rate / old:.2f} |")


if __name__ == "__main__":
    main()

"""Proxy benchmark: the same load through a plain byte-forwarding aiohttp proxy and through
``streambridge serve`` (agentkit upstream → nest client), in one run. Not part of the tests.

    python bench/proxy_bench.py            # the full run (about a minute on 2 cores)
    python bench/proxy_bench.py --quick    # a smaller run (under 30 s)
    python bench/proxy_bench.py --pairs    # nest upstream → each client protocol (about a minute)
    python bench/proxy_bench.py --pairs --quick    # (under a minute)

Three processes: the upstream (an aiohttp agentkit server), the proxy under test, and this
driver (the clients). Measured:

* bulk frames/s: upstream text frames per second through each proxy, with the upstream writing
  one frame per write (as agent servers do) and 64 frames per write (proxy-bound); and the proxy
  process's CPU time per frame (from /proc: steadier than wall-clock rates on a busy machine);
* paced streams: N concurrent streams, one frame per interval each; every frame carries its send
  time (CLOCK_MONOTONIC is shared by processes), so the client measures per-frame latency; the
  difference between the two proxies is what translating adds (steady state: each stream's first
  two frames, sent while the other streams are still being set up, are left out);
* memory per open stream: in fresh proxy processes with tracemalloc on, the Python heap (and the
  RSS) while all streams are open, minus before, divided by the number of streams.

Prints a markdown table.

``--pairs`` measures instead, in one run, streambridge's proxy CPU per frame for a nest upstream
translated to each client protocol: nest → agentkit (the baseline), nest → ai-sdk (what a
``useChat`` client gets) and nest → ag-ui, with the upstream writing 1 and 64 frames per write.
The upstream answers ``POST <base>/chat`` as the published nest server does (``201``, its
``X-Agent-*`` headers, the threads it makes), with frames written by streambridge's own nest
encoder at ``client`` fidelity (what a native nest backend sends): step brackets, reasoning,
mostly text deltas and a tool call with its output per step. One proxy process per pair, with the
route ``serve --from nest --to <client>`` builds; the driver sends each client's own request
(agentkit turn, ``useChat`` body, ``RunAgentInput``) and checks that every stream ends with its
protocol's terminal of a succeeded run. CPU per frame = the proxy's user+system CPU / the frames
the upstream wrote. Prints a markdown table with each pair's ratio to nest → agentkit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import msgspec  # noqa: E402
from aiohttp import web  # noqa: E402

if TYPE_CHECKING:
    from streambridge.events import Event

START = b'data: {"type":"turn_start","turnId":"t1","messageId":"m1","provider":"bench"}\n\n'
END = b'data: {"type":"turn_end","turnId":"t1","messageId":"m1","result":{"status":"succeeded","text":"","provider":"bench"}}\n\n'
STAMP = re.compile(rb"t=(\d+)")


def text_frame(text: str) -> bytes:
    return b'data: {"type":"text_delta","messageId":"m1","text":' + msgspec.json.encode(text) + b"}\n\n"


# -- the upstream --------------------------------------------------------------------------


async def upstream_handler(request: web.Request) -> web.StreamResponse:
    """``text`` says the load: ``bulk:<frames>:<per write>`` or ``paced:<frames>:<interval>``."""
    turn = msgspec.json.decode(await request.read())
    kind, count, arg = turn["text"].split(":")
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    await resp.write(START)
    if kind == "bulk":
        per_write = int(arg)
        frame = text_frame("tok ")
        batch = frame * per_write
        for _ in range(int(count) // per_write):
            await resp.write(batch)
    else:
        interval = float(arg)
        await asyncio.sleep(interval * (id(request) % 997) / 997)  # spread the streams
        for _ in range(int(count)):
            await resp.write(text_frame(f"t={time.monotonic_ns()} "))
            await asyncio.sleep(interval)
    await resp.write(END)
    return resp


def run_upstream(port: int) -> None:
    app = web.Application()
    app.router.add_post("/agentkit", upstream_handler)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


# -- the proxies under test ----------------------------------------------------------------


def add_memory_probe(app: web.Application) -> None:
    """``GET /__bench/mem``: the process's traced Python heap and RSS (memory runs only)."""
    if not os.environ.get("BENCH_TRACEMALLOC"):
        return
    import gc
    import tracemalloc

    tracemalloc.start()

    async def mem(request: web.Request) -> web.Response:
        gc.collect()
        return web.json_response({"traced": tracemalloc.get_traced_memory()[0], "rss_kib": rss_kib(os.getpid())})

    app.router.add_get("/__bench/mem", mem)


def run_plain(port: int, upstream: str) -> None:
    """A plain forwarding proxy: the same aiohttp settings, bytes in → bytes out."""
    session: aiohttp.ClientSession | None = None

    async def start(app: web.Application):
        nonlocal session
        connector = aiohttp.TCPConnector(limit=2000)
        session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None, sock_read=300))
        yield
        await session.close()

    async def forward(request: web.Request) -> web.StreamResponse:
        assert session is not None
        body = await request.read()
        async with session.post(upstream, data=body, headers={"Content-Type": "application/json"}) as up:
            resp = web.StreamResponse(
                headers={
                    "Content-Type": up.headers.get("Content-Type", "text/event-stream"),
                    "Cache-Control": "no-cache",
                    "X-Accel-Buffering": "no",
                }
            )
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
        return resp

    app = web.Application()
    app.cleanup_ctx.append(start)
    app.router.add_post("/", forward)
    add_memory_probe(app)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


def run_streambridge(port: int, upstream: str, source: str = "agentkit", target: str = "nest") -> None:
    from streambridge.bridge import build_config, create_app

    config = build_config(upstream=upstream, source=source, target=target, environ={})
    run_log = os.environ.get("BENCH_RUN_LOG", "memory")  # (runlog_bench.py compares the run logs)
    inspect = os.environ.get("BENCH_INSPECT") == "on"  # (inspector_bench.py: the inspector on and off)
    config = replace(config, port=port, max_upstream_connections=2000, run_log=run_log, inspect=inspect)
    if "BENCH_INSPECT_BYTES" in os.environ:  # (what the inspector keeps per stream)
        config = replace(config, inspect_stream_bytes=int(os.environ["BENCH_INSPECT_BYTES"]))
    app = create_app(config)
    add_memory_probe(app)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


# -- the driver ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(
    role: str, port: int, upstream: str = "", traced: bool = False, extra: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    args = [sys.executable, __file__, "--role", role, "--port", str(port), *extra]
    if upstream:
        args += ["--upstream", upstream]
    env = {**os.environ, "BENCH_TRACEMALLOC": "1"} if traced else None
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


async def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def stop_processes(procs: list[subprocess.Popen[bytes]]) -> None:
    """Terminate every process, then wait for each (at most 10 s)."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Target:
    def __init__(self, name: str, url: str, proc: subprocess.Popen[bytes], nest: bool) -> None:
        self.name = name
        self.url = url
        self.proc = proc
        self.nest = nest

    def request(self, text: str) -> tuple[str, dict]:
        if self.nest:
            return self.url + "agent/chat", {"message": text}
        return self.url, {"text": text, "history": []}


async def one_stream(
    session: aiohttp.ClientSession,
    target: Target,
    text: str,
    latencies: list[float] | None = None,
    opened: list | None = None,
    skip: int = 0,
) -> int:
    """One request; stamped frames' latencies go to ``latencies`` (the first ``skip`` dropped)."""
    url, body = target.request(text)
    received = 0
    seen = 0
    async with session.post(url, json=body) as resp:
        assert resp.status in (200, 201), resp.status
        async for chunk in resp.content.iter_any():
            now = time.monotonic_ns()
            received += len(chunk)
            if latencies is None:
                continue
            for stamp in STAMP.findall(chunk):
                seen += 1
                if seen > skip:
                    latencies.append((now - int(stamp)) / 1e6)
                if seen == 1 and opened is not None:
                    opened[0] += 1
                    if opened[0] == opened[1]:
                        opened[2].set()
    return received


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (clock-tick resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bulk(
    session: aiohttp.ClientSession, target: Target, frames: int, per_write: int, streams: int
) -> tuple[float, float]:
    """Frames per wall-clock second through the proxy, and the proxy's CPU microseconds per frame."""
    per_stream = frames // streams
    cpu0 = cpu_seconds(target.proc.pid)
    t0 = time.perf_counter()
    await asyncio.gather(*(one_stream(session, target, f"bulk:{per_stream}:{per_write}", None) for _ in range(streams)))
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(target.proc.pid) - cpu0
    return per_stream * streams / elapsed, cpu * 1e6 / (per_stream * streams)


async def paced(
    session: aiohttp.ClientSession, target: Target, streams: int, frames: int, interval: float
) -> list[float]:
    """Per-frame latencies of ``streams`` concurrent paced streams, in steady state (each stream's
    first two frames, sent while the other streams are still being set up, are left out)."""
    latencies: list[float] = []
    await asyncio.gather(
        *(one_stream(session, target, f"paced:{frames}:{interval}", latencies, skip=2) for _ in range(streams))
    )
    return latencies


async def memory_per_stream(session: aiohttp.ClientSession, target: Target, streams: int) -> tuple[float, float]:
    """Python heap (tracemalloc) and RSS growth of the proxy per open stream, in KiB."""

    async def probe() -> tuple[int, int]:
        async with session.get(target.url + "__bench/mem") as resp:
            data = await resp.json()
        return data["traced"], data["rss_kib"]

    await paced(session, target, 20, 3, 0.01)  # warm: lazily built structures exist before the baseline
    traced0, rss0 = await probe()
    opened = [0, streams, asyncio.Event()]
    tasks = asyncio.gather(*(one_stream(session, target, "paced:4:0.5", [], opened) for _ in range(streams)))
    await asyncio.wait([asyncio.ensure_future(opened[2].wait()), tasks], return_when=asyncio.FIRST_COMPLETED)
    traced1, rss1 = await probe()
    await tasks
    return (traced1 - traced0) / 1024 / streams, max(rss1 - rss0, 0) / streams


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def drive(args: argparse.Namespace) -> None:
    up_port = free_port()
    upstream_url = f"http://127.0.0.1:{up_port}/agentkit"
    upstream = spawn("upstream", up_port)
    procs = [upstream]
    try:
        await wait_listening(up_port, upstream)
        targets = await start_targets(upstream_url, procs, traced=False)
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
            for t in targets:  # warm up both (imports, pools, allocator)
                await bulk(session, t, 2000, 1, 1)
                await paced(session, t, 10, 3, 0.01)
            rows: dict[str, dict[str, float]] = {t.name: {} for t in targets}
            for per_write in (1, 64):
                key = f"bulk{per_write}"
                for _ in range(args.rounds):
                    for t in targets:
                        rate, cpu = await bulk(session, t, args.bulk_frames, per_write, args.bulk_streams)
                        rows[t.name][key] = max(rows[t.name].get(key, 0.0), rate)
                        rows[t.name][key + "cpu"] = min(rows[t.name].get(key + "cpu", float("inf")), cpu)
            lat = {t.name: await paced(session, t, args.streams, args.frames, args.interval) for t in targets}
            for t in targets:  # memory: fresh processes with tracemalloc (too slow for the timing runs)
                t.proc.terminate()
            for t in await start_targets(upstream_url, procs, traced=True):
                rows[t.name]["mem"], rows[t.name]["rss"] = await memory_per_stream(session, t, args.streams)
    finally:
        stop_processes(procs)
    report(rows, lat, args)


async def start_targets(upstream_url: str, procs: list[subprocess.Popen[bytes]], traced: bool) -> list[Target]:
    plain_port, sb_port = free_port(), free_port()
    plain = spawn("plain", plain_port, upstream_url, traced)
    sb = spawn("streambridge", sb_port, upstream_url, traced)
    procs += [plain, sb]
    await wait_listening(plain_port, plain)
    await wait_listening(sb_port, sb)
    return [
        Target("plain proxy", f"http://127.0.0.1:{plain_port}/", plain, nest=False),
        Target("streambridge", f"http://127.0.0.1:{sb_port}/", sb, nest=True),
    ]


def report(rows: dict[str, dict[str, float]], lat: dict[str, list[float]], args: argparse.Namespace) -> None:
    plain, sb = rows["plain proxy"], rows["streambridge"]
    lp, ls = lat["plain proxy"], lat["streambridge"]
    p50p, p50s, p99p, p99s = pct(lp, 50), pct(ls, 50), pct(lp, 99), pct(ls, 99)
    print(
        f"\nstreambridge proxy bench: agentkit upstream → nest client; {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}; bulk {args.bulk_frames} frames over {args.bulk_streams} streams (best of "
        f"{args.rounds}); paced {args.streams} streams x {args.frames} frames every {args.interval}s "
        f"({len(ls)} frames measured)\n"
    )
    print("| metric | plain proxy | streambridge | streambridge vs plain | target |")
    print("|---|---:|---:|---:|---|")
    for key, label in (
        ("bulk1", "upstream writes 1 frame per write"),
        ("bulk64", "upstream writes 64 frames per write"),
    ):
        print(
            f"| bulk frames/s, {label} | {plain[key]:,.0f} | {sb[key]:,.0f} | ratio {sb[key] / plain[key]:.2f} "
            f"| ratio ≥ 0.85 |"
        )
        cp, cs = plain[key + "cpu"], sb[key + "cpu"]
        ratio = f"frames per CPU-second ratio {cp / cs:.2f}" if cp and cs else "below the clock resolution"
        print(f"| proxy CPU per frame, {label} | {cp:.2f} µs | {cs:.2f} µs | {ratio} | |")
    print(f"| paced per-frame latency p50 | {p50p:.3f} ms | {p50s:.3f} ms | {p50s - p50p:+.3f} ms | added < 0.3 ms |")
    print(f"| paced per-frame latency p99 | {p99p:.3f} ms | {p99s:.3f} ms | {p99s - p99p:+.3f} ms | added < 2 ms |")
    print(
        f"| memory per open stream (Python heap, tracemalloc) | {plain['mem']:.1f} KiB | {sb['mem']:.1f} KiB | "
        f"{sb['mem'] - plain['mem']:+.1f} KiB | ≤ 64 KiB |"
    )
    print(
        f"| memory per open stream (process RSS) | {plain['rss']:.1f} KiB | {sb['rss']:.1f} KiB | "
        f"{sb['rss'] - plain['rss']:+.1f} KiB | |"
    )
    print(
        f"| paced latency mean | {statistics.fmean(lp):.3f} ms | {statistics.fmean(ls):.3f} ms | "
        f"{statistics.fmean(ls) - statistics.fmean(lp):+.3f} ms | |"
    )


# -- nest upstream → each client protocol (--pairs) ----------------------------------------

#: the client protocols of ``--pairs``, the baseline first
PAIRS = ("agentkit", "ai-sdk", "ag-ui")
PAIR_TITLES = {"agentkit": "nest → agentkit (baseline)", "ai-sdk": "nest → ai-sdk (useChat)", "ag-ui": "nest → ag-ui"}
#: the issue's target: nest → ai-sdk's CPU per frame at 64 frames per write, over nest → agentkit's
AI_SDK_TARGET = 1.3
#: what the published nest server's run says of a thread it did not make (tests/nest_threads.py)
UNKNOWN_THREAD = (
    b'event: error\ndata: {"code":"run_failed",'
    b'"message":"Cannot read properties of undefined (reading \'messages\')"}\n\n'
)


def nest_events(frames: int) -> Iterator[Event]:
    """A tool-using run of whole steps, about ``frames`` frames in nest: each step is step-start,
    reasoning, 40 text deltas, a tool call with its input, its output, step-finish (45 frames)."""
    from msgspec import Raw

    from streambridge.events import (
        ReasoningDelta,
        RunStart,
        StepFinish,
        StepStart,
        Terminal,
        TextDelta,
        ToolCall,
        ToolOutput,
        Usage,
    )

    yield RunStart(run_id="run-1", thread_id="thr-1")
    text: list[str] = []
    for step in range(max(1, (frames - 2) // 45)):
        yield StepStart()
        yield ReasoningDelta(text="thinking about it")
        for k in range(40):
            text.append(f"w{k} ")
            yield TextDelta(text=text[-1])
        call = f"call-{step}"
        yield ToolCall(call_id=call, name="lookup", input=Raw(b'{"q":"item %d"}' % step), tool_kind="read")
        yield ToolOutput(call_id=call, output=Raw(b'{"rows":3,"ok":true}'))
        yield StepFinish(usage=Usage(input_tokens=11, output_tokens=5), cost_usd=None)
    yield Terminal(status="succeeded", text="".join(text))


def nest_encode(events: Iterable[Event]) -> list[bytes]:
    """Events as streambridge's nest encoder writes them at ``client`` fidelity (what a native
    nest backend sends, no carriers), one frame each."""
    from streambridge import codecs

    body = codecs.get("nest").encoder(fidelity="client").encode(events)
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]


@functools.cache
def nest_answer(frames: int) -> tuple[bytes, ...]:
    """The frames after ``meta`` of a run of about ``frames`` frames (the meta frame names each
    request's own run and thread)."""
    return tuple(nest_encode(nest_events(frames))[1:])


def nest_frames_written(frames: int) -> int:
    """How many frames the nest upstream writes for ``bulk:<frames>:…`` (its meta frame too)."""
    return 1 + len(nest_answer(frames))


class NestServer:
    """The published nest server's chat route as the proxy meets it: ``POST <base>/chat`` with
    ``message`` ``bulk:<frames>:<per write>``, answered ``201`` with ``X-Agent-Run-Id`` and
    ``X-Agent-Thread-Id``; a message without ``threadId`` gets a new thread, and a thread it did
    not make fails its run (tests/nest_threads.py)."""

    def __init__(self) -> None:
        self.threads: set[str] = set()
        self.runs = 0

    async def chat(self, request: web.Request) -> web.StreamResponse:
        from streambridge.events import RunStart

        chat = msgspec.json.decode(await request.read())
        _, count, per_write = chat["message"].split(":")
        self.runs += 1
        run_id, thread = f"run-{self.runs}", chat.get("threadId")
        if thread is None:
            thread = f"thr-{len(self.threads) + 1}"
            self.threads.add(thread)
        frames = nest_encode([RunStart(run_id=run_id, thread_id=thread)])
        frames += nest_answer(int(count)) if thread in self.threads else [UNKNOWN_THREAD]
        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Agent-Run-Id": run_id,
            "X-Agent-Thread-Id": thread,
        }
        resp = web.StreamResponse(status=201, headers=headers)
        await resp.prepare(request)
        step = int(per_write)
        for i in range(0, len(frames), step):
            await resp.write(b"".join(frames[i : i + step]))
        return resp


def run_nest_upstream(port: int) -> None:
    app = web.Application()
    app.router.add_post("/agent/chat", NestServer().chat)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def agentkit_turn(text: str) -> dict[str, Any]:
    return {"text": text, "history": []}


def use_chat_body(text: str) -> dict[str, Any]:
    """What ``useChat``'s DefaultChatTransport posts for a first message (a new chat each)."""
    user = {"id": new_id("msg"), "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": new_id("chat"), "messages": [user], "trigger": "submit-message"}


def run_agent_input(text: str) -> dict[str, Any]:
    """What an AG-UI ``HttpAgent`` posts for a first message (a new thread each)."""
    user = {"id": new_id("msg"), "role": "user", "content": text}
    return {
        "threadId": new_id("thread"),
        "runId": new_id("run"),
        "messages": [user],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def agentkit_ends(last: list[bytes]) -> bool:
    return last[-1].startswith(b'data: {"type":"turn_end"') and b'"result":{"status":"succeeded"' in last[-1]


def ai_sdk_ends(last: list[bytes]) -> bool:
    return last[-1] == b"data: [DONE]" and last[-2].startswith(b'data: {"type":"finish"')


def ag_ui_ends(last: list[bytes]) -> bool:
    return last[-1].startswith(b'data: {"type":"RUN_FINISHED"')


@dataclass(frozen=True)
class Client:
    """How a client of a protocol asks for a run, and how its stream of a succeeded run ends
    (so the bench cannot measure error streams)."""

    path: str
    body: Callable[[str], dict[str, Any]]
    ends: Callable[[list[bytes]], bool]  # the stream's last frames, comments left out
    headers: dict[str, str] = field(default_factory=dict)


CLIENTS = {
    "agentkit": Client("", agentkit_turn, agentkit_ends),
    "ai-sdk": Client("api/chat", use_chat_body, ai_sdk_ends),
    "ag-ui": Client("", run_agent_input, ag_ui_ends, {"Accept": "text/event-stream"}),
}


@dataclass
class Pair:
    """A ``streambridge serve --from nest --to <target>`` process."""

    target: str
    url: str
    proc: subprocess.Popen[bytes]


def data_lines(frames: Iterable[bytes | bytearray]) -> list[bytes]:
    """Each frame's ``data:`` line, without the ``id:`` lines the proxy numbers frames with (for
    resumes) and without comment frames (heartbeats)."""
    lines = (next((line for line in f.split(b"\n") if line.startswith(b"data: ")), None) for f in frames)
    return [bytes(line) for line in lines if line is not None]


async def pair_stream(session: aiohttp.ClientSession, pair: Pair, text: str) -> None:
    """One run through the pair's proxy, read whole; raises unless it ends as a succeeded run."""
    client = CLIENTS[pair.target]
    body = bytearray()
    async with session.post(pair.url + client.path, json=client.body(text), headers=client.headers) as resp:
        async for chunk in resp.content.iter_any():
            body += chunk
        status = resp.status
    last = data_lines(body.rstrip(b"\n").rsplit(b"\n\n", 8)[1:])
    if status != 200 or len(last) < 2 or not client.ends(last):
        raise RuntimeError(f"nest → {pair.target}: {status}, the stream ends {[f[:300] for f in last]!r}")


async def pair_bulk(session: aiohttp.ClientSession, pair: Pair, frames: int, per_write: int, streams: int) -> float:
    """The proxy's CPU microseconds per frame the upstream wrote, ``frames`` over ``streams``."""
    per_stream = frames // streams
    cpu0 = cpu_seconds(pair.proc.pid)
    await asyncio.gather(*(pair_stream(session, pair, f"bulk:{per_stream}:{per_write}") for _ in range(streams)))
    cpu = cpu_seconds(pair.proc.pid) - cpu0
    return cpu * 1e6 / (nest_frames_written(per_stream) * streams)


async def start_pairs(upstream_url: str, procs: list[subprocess.Popen[bytes]]) -> list[Pair]:
    """One proxy process per pair (each one's CPU is the pair's own)."""
    pairs = []
    for target in PAIRS:
        port = free_port()
        proc = spawn("streambridge", port, upstream_url, extra=("--source", "nest", "--target", target))
        procs.append(proc)
        pairs.append(Pair(target, f"http://127.0.0.1:{port}/", proc))
        await wait_listening(port, proc)
    return pairs


async def drive_pairs(args: argparse.Namespace) -> None:
    up_port = free_port()
    upstream = spawn("nest-upstream", up_port)
    procs = [upstream]
    cpu: dict[tuple[str, int], float] = {}
    try:
        await wait_listening(up_port, upstream)
        pairs = await start_pairs(f"http://127.0.0.1:{up_port}/agent", procs)
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
            for pair in pairs:  # warm up (imports, pools, allocator)
                await pair_bulk(session, pair, 2000, 1, 1)
            for per_write in (1, 64):
                for _ in range(args.rounds):  # interleaved, so the machine's load is shared alike
                    for pair in pairs:
                        key = (pair.target, per_write)
                        got = await pair_bulk(session, pair, args.bulk_frames, per_write, args.bulk_streams)
                        cpu[key] = min(cpu.get(key, float("inf")), got)
    finally:
        stop_processes(procs)
    report_pairs(cpu, args)


def report_pairs(cpu: dict[tuple[str, int], float], args: argparse.Namespace) -> None:
    frames = nest_frames_written(args.bulk_frames // args.bulk_streams) * args.bulk_streams
    print(
        f"\nstreambridge proxy bench --pairs: nest upstream → each client (the proxy's default fidelity); "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; bulk {frames} upstream frames over "
        f"{args.bulk_streams} streams (best of {args.rounds}); proxy CPU (user+sys) per upstream frame\n"
    )
    print(
        "| pair | CPU per frame, 1 frame per write | ratio to nest → agentkit "
        "| CPU per frame, 64 frames per write | ratio to nest → agentkit | target |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for target in PAIRS:
        cells = []
        for per_write in (1, 64):
            mine, base = cpu[(target, per_write)], cpu[("agentkit", per_write)]
            cells += [f"{mine:.2f} µs", f"{mine / base:.2f}" if base else "below the clock resolution"]
        goal = f"64 frames per write: ratio ≤ {AI_SDK_TARGET}" if target == "ai-sdk" else ""
        print(f"| {PAIR_TITLES[target]} | {' | '.join(cells)} | {goal} |")
    mine, base = cpu[("ai-sdk", 64)], cpu[("agentkit", 64)]
    ratio = mine / base if base else float("inf")
    verdict = "met" if ratio <= AI_SDK_TARGET else f"NOT met ({ratio / AI_SDK_TARGET - 1:.0%} over)"
    print(
        f"\nnest → ai-sdk, 64 frames per write: {ratio:.2f} times nest → agentkit's CPU per frame; "
        f"target ≤ {AI_SDK_TARGET}: {verdict}"
    )


def add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bulk-frames", type=int)
    parser.add_argument("--bulk-streams", type=int, default=4)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--streams", type=int)
    parser.add_argument("--frames", type=int)
    parser.add_argument("--interval", type=float)


def load_defaults(args: argparse.Namespace, *, rounds: int, streams: int) -> None:
    """The load of a full run, or of a ``--quick`` one, where not given."""
    quick = args.quick
    args.bulk_frames = args.bulk_frames or (40_000 if quick else 200_000)
    args.rounds = args.rounds or (1 if quick else rounds)
    args.streams = args.streams or (100 if quick else streams)
    args.frames = args.frames or (8 if quick else 12)
    args.interval = args.interval or (0.5 if quick else 1.0)


def compare_main(doc: str, drive: Callable[[argparse.Namespace], Awaitable[None]], rounds: int) -> None:
    """The command line of a bench that compares streambridge with itself (run log, inspector):
    ``--quick`` and the load options, then ``drive``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    add_load_options(parser)
    args = parser.parse_args()
    load_defaults(args, rounds=rounds, streams=300)
    asyncio.run(drive(args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (under 30 s)")
    parser.add_argument(
        "--pairs",
        action="store_true",
        help="streambridge's CPU per frame, nest upstream → agentkit, ai-sdk and ag-ui clients (about a minute)",
    )
    parser.add_argument(
        "--role", choices=["upstream", "nest-upstream", "plain", "streambridge"], help=argparse.SUPPRESS
    )
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--source", default="agentkit", help=argparse.SUPPRESS)
    parser.add_argument("--target", default="nest", help=argparse.SUPPRESS)
    add_load_options(parser)
    args = parser.parse_args()
    if args.role == "upstream":
        run_upstream(args.port)
    elif args.role == "nest-upstream":
        run_nest_upstream(args.port)
    elif args.role == "plain":
        run_plain(args.port, args.upstream)
    elif args.role == "streambridge":
        run_streambridge(args.port, args.upstream, args.source, args.target)
    elif args.pairs:  # (more frames than the default mode: CPU per frame is its only figure)
        args.bulk_frames = args.bulk_frames or (200_000 if args.quick else 400_000)
        load_defaults(args, rounds=5, streams=500)
        asyncio.run(drive_pairs(args))
    else:
        load_defaults(args, rounds=2, streams=500)
        asyncio.run(drive(args))


if __name__ == "__main__":
    main()

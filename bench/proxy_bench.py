"""Proxy benchmark: the same load through a plain byte-forwarding aiohttp proxy and through
``streambridge serve`` (agentkit upstream → nest client), in one run. Not part of the tests.

    python bench/proxy_bench.py            # the full run (about a minute on 2 cores)
    python bench/proxy_bench.py --quick    # a smaller run (under 30 s)

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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import msgspec  # noqa: E402
from aiohttp import web  # noqa: E402

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


def run_streambridge(port: int, upstream: str) -> None:
    from streambridge.bridge import build_config, create_app

    config = build_config(upstream=upstream, source="agentkit", target="nest", environ={})
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


def spawn(role: str, port: int, upstream: str = "", traced: bool = False) -> subprocess.Popen[bytes]:
    args = [sys.executable, __file__, "--role", role, "--port", str(port)]
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
    parser.add_argument("--role", choices=["upstream", "plain", "streambridge"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    add_load_options(parser)
    args = parser.parse_args()
    if args.role == "upstream":
        run_upstream(args.port)
        return
    if args.role == "plain":
        run_plain(args.port, args.upstream)
        return
    if args.role == "streambridge":
        run_streambridge(args.port, args.upstream)
        return
    load_defaults(args, rounds=2, streams=500)
    asyncio.run(drive(args))


if __name__ == "__main__":
    main()

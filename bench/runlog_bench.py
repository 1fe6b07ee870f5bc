"""Run-log benchmark: the same load through ``streambridge serve`` (agentkit upstream → nest
client) with the run log off, in memory and on Redis, in one run. Not part of the tests.

    python bench/runlog_bench.py            # the full run (about a minute on 2 cores)
    python bench/runlog_bench.py --quick    # a smaller run

Processes: the upstream, a ``redis-server`` on a free port (nothing persisted), three proxies
(one per run log), and this driver. Measured as in proxy_bench.py: bulk frames per second (the
upstream writing one frame per write, and 64), the proxy's CPU per frame, and the per-frame
latency of paced concurrent streams; each log against the log off, in the same run. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from proxy_bench import (
    Target,
    bulk,
    compare_main,
    free_port,
    paced,
    pct,
    spawn,
    stop_processes,
    wait_listening,
)

LOGS = ("off", "memory", "redis")


def start_redis(directory: str) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH (Debian: apt install redis-server)")
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "", "--appendonly", "no"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), f"redis://127.0.0.1:{port}/0"


def spawn_proxy(port: int, upstream: str, run_log: str) -> subprocess.Popen[bytes]:
    os.environ["BENCH_RUN_LOG"] = run_log  # (read by proxy_bench's streambridge role)
    try:
        return spawn("streambridge", port, upstream)
    finally:
        del os.environ["BENCH_RUN_LOG"]


async def drive(args: argparse.Namespace) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            redis, redis_url = start_redis(tmp)
            procs.append(redis)
            up_port = free_port()
            upstream_url = f"http://127.0.0.1:{up_port}/agentkit"
            procs.append(spawn("upstream", up_port))
            await wait_listening(up_port, procs[-1])
            await wait_listening(int(redis_url.rsplit(":", 1)[1].split("/")[0]), redis)
            targets = []
            for name in LOGS:
                port = free_port()
                proc = spawn_proxy(port, upstream_url, redis_url if name == "redis" else name)
                procs.append(proc)
                await wait_listening(port, proc)
                targets.append(Target(name, f"http://127.0.0.1:{port}/", proc, nest=True))
            rows, lat = await measure(targets, args)
        finally:
            stop_processes(procs)
    report(rows, lat, args)


async def measure(targets: list[Target], args: argparse.Namespace) -> tuple[dict, dict]:
    connector = aiohttp.TCPConnector(limit=0)
    rows: dict[str, dict[str, float]] = {t.name: {} for t in targets}
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        for t in targets:  # warm up (imports, pools, allocator, Redis connections)
            await bulk(session, t, 2000, 1, 1)
            await paced(session, t, 10, 3, 0.01)
        for per_write in (1, 64):
            key = f"bulk{per_write}"
            for _ in range(args.rounds):  # interleaved rounds: a busy moment hits every log alike
                for t in targets:
                    rate, cpu = await bulk(session, t, args.bulk_frames, per_write, args.bulk_streams)
                    rows[t.name][key] = max(rows[t.name].get(key, 0.0), rate)
                    rows[t.name][key + "cpu"] = min(rows[t.name].get(key + "cpu", float("inf")), cpu)
        lat = {t.name: await paced(session, t, args.streams, args.frames, args.interval) for t in targets}
    return rows, lat


def report(rows: dict[str, dict[str, float]], lat: dict[str, list[float]], args: argparse.Namespace) -> None:
    off = rows["off"]
    print(
        f"\nstreambridge run-log bench: agentkit upstream → nest client; {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}; bulk {args.bulk_frames} frames over {args.bulk_streams} streams (best of "
        f"{args.rounds}); paced {args.streams} streams x {args.frames} frames every {args.interval}s\n"
    )
    print("| metric | log off | memory | Redis | memory vs off | Redis vs off | targets |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for key, label in (("bulk1", "1 frame per upstream write"), ("bulk64", "64 frames per upstream write")):
        mem, red = rows["memory"][key], rows["redis"][key]
        print(
            f"| bulk frames/s, {label} | {off[key]:,.0f} | {mem:,.0f} | {red:,.0f} | ratio {mem / off[key]:.2f} "
            f"| ratio {red / off[key]:.2f} | memory ≥ 0.9, Redis ≥ 0.6 |"
        )
        cpus = [rows[name][key + "cpu"] for name in LOGS]
        print(f"| proxy CPU per frame, {label} | " + " | ".join(f"{c:.2f} µs" for c in cpus) + " | | | |")
    for p in (50, 99):
        base = pct(lat["off"], p)
        mem, red = pct(lat["memory"], p), pct(lat["redis"], p)
        target = "added < 3 ms" if p == 99 else ""
        print(
            f"| paced per-frame latency p{p} | {base:.3f} ms | {mem:.3f} ms | {red:.3f} ms | {mem - base:+.3f} ms "
            f"| {red - base:+.3f} ms | {target} |"
        )


if __name__ == "__main__":
    compare_main(__doc__, drive, rounds=3)

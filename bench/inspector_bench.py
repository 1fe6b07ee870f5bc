"""Inspector benchmark: the same load through ``streambridge serve`` (agentkit upstream → nest
client) with ``--inspect`` off and on (no inspector page open), in one run. Not part of the tests.

    python bench/inspector_bench.py            # the full run
    python bench/inspector_bench.py --quick    # a smaller run

Processes: the upstream, two proxies (inspector off, on; both with the run log off, so only the
inspector differs), and this driver. Measured as in proxy_bench.py: bulk frames per second (the
upstream writing one frame per write, and 64) and the proxy's CPU per frame. The rounds are
paired (each runs both proxies, in alternating order) and the ratio is the median of the rounds'
ratios: wall-clock rates on a shared machine swing more between rounds than the inspector costs.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from proxy_bench import Target, bulk, compare_main, free_port, spawn, stop_processes, wait_listening

MODES = ("off", "on")


def spawn_proxy(port: int, upstream: str, inspect: str) -> subprocess.Popen[bytes]:
    os.environ["BENCH_RUN_LOG"] = "off"
    os.environ["BENCH_INSPECT"] = inspect  # (read by proxy_bench's streambridge role)
    try:
        return spawn("streambridge", port, upstream)
    finally:
        del os.environ["BENCH_RUN_LOG"], os.environ["BENCH_INSPECT"]


async def drive(args: argparse.Namespace) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        up_port = free_port()
        upstream_url = f"http://127.0.0.1:{up_port}/agentkit"
        procs.append(spawn("upstream", up_port))
        await wait_listening(up_port, procs[-1])
        targets = []
        for mode in MODES:
            port = free_port()
            proc = spawn_proxy(port, upstream_url, mode)
            procs.append(proc)
            await wait_listening(port, proc)
            targets.append(Target(mode, f"http://127.0.0.1:{port}/", proc, nest=True))
        rows = await measure(targets, args)
    finally:
        stop_processes(procs)
    report(rows, args)


async def measure(targets: list[Target], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Paired rounds (off then on, then on then off: drift hits both alike); per load the median
    of the rounds' on/off throughput ratios, the best rate and the least CPU per frame of each."""
    connector = aiohttp.TCPConnector(limit=0)
    rows: dict[str, dict[str, float]] = {t.name: {} for t in targets}
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        for t in targets:  # warm up (imports, pools, allocator)
            await bulk(session, t, 2000, 1, 1)
        for per_write in (1, 64):
            key = f"bulk{per_write}"
            ratios = []
            for round_ in range(args.rounds):
                rates = {}
                for t in targets if round_ % 2 == 0 else reversed(targets):
                    rate, cpu = await bulk(session, t, args.bulk_frames, per_write, args.bulk_streams)
                    rates[t.name] = rate
                    rows[t.name][key] = max(rows[t.name].get(key, 0.0), rate)
                    rows[t.name][key + "cpu"] = min(rows[t.name].get(key + "cpu", float("inf")), cpu)
                ratios.append(rates["on"] / rates["off"])
            rows["on"][key + "ratio"] = statistics.median(ratios)
            rows["on"][key + "spread"] = max(ratios) - min(ratios)
    return rows


def report(rows: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    off, on = rows["off"], rows["on"]
    print(
        f"\nstreambridge inspector bench: agentkit upstream → nest client, run log off; {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}; bulk {args.bulk_frames} frames over {args.bulk_streams} streams, {args.rounds} "
        f"paired rounds; no inspector page open\n"
    )
    print("| metric | inspector off | inspector on | on vs off | target |")
    print("|---|---:|---:|---:|---|")
    for key, label in (("bulk1", "1 frame per upstream write"), ("bulk64", "64 frames per upstream write")):
        ratio, spread = on[key + "ratio"], on[key + "spread"]
        print(
            f"| bulk frames/s, {label} | {off[key]:,.0f} | {on[key]:,.0f} | median ratio {ratio:.2f} "
            f"(rounds spread {spread:.2f}) | ≥ 0.9 |"
        )
        print(f"| proxy CPU per frame, {label} | {off[key + 'cpu']:.2f} µs | {on[key + 'cpu']:.2f} µs | | |")


if __name__ == "__main__":
    compare_main(__doc__, drive, rounds=7)

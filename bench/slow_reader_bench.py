"""Slow readers: what the proxy holds per stream while its clients read 1 byte a second and the
upstream floods. Not part of the tests.

    python bench/slow_reader_bench.py              # 20 slow readers, about 20 s
    python bench/slow_reader_bench.py --readers 5 --seconds 5

Three processes: an agentkit upstream that writes text frames as fast as each stream lets it
(and counts what it wrote), ``streambridge serve`` (agentkit → nest) with tracemalloc on, and this
driver, whose clients send a request, take the response headers and then read one byte a second
from the socket. Measured once the streams have settled:

* the proxy's Python heap (tracemalloc) and RSS growth per stream, against the same process
  before the streams opened;
* what each upstream stream wrote, and whether it is paused: it wrote nothing over the last
  second (backpressure reached it), as the sum over all streams.

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from aiohttp import web  # noqa: E402
from proxy_bench import (  # noqa: E402
    END,
    START,
    add_memory_probe,
    free_port,
    stop_processes,
    text_frame,
    wait_listening,
)

WRITTEN: dict[int, int] = {}


async def flood(request: web.Request) -> web.StreamResponse:
    """Text frames, 64 per write, until the client (the proxy) goes away."""
    await request.read()
    key = id(request)
    WRITTEN[key] = 0
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    batch = text_frame("flood " * 4) * 64
    try:
        await resp.write(START)
        while True:
            await resp.write(batch)
            WRITTEN[key] += len(batch)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(ConnectionError):
            await resp.write(END)
    return resp


async def written(request: web.Request) -> web.Response:
    return web.json_response(list(WRITTEN.values()))


def run_upstream(port: int) -> None:
    app = web.Application()
    app.router.add_post("/agentkit", flood)
    app.router.add_get("/written", written)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


def run_proxy(port: int, upstream: str) -> None:
    from streambridge.bridge import build_config, create_app

    config = build_config(upstream=upstream, source="agentkit", target="nest", environ={})
    config = replace(config, port=port)
    app = create_app(config)
    add_memory_probe(app)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, handler_cancellation=True)


def spawn(role: str, port: int, upstream: str = "") -> subprocess.Popen[bytes]:
    args = [sys.executable, __file__, "--role", role, "--port", str(port), "--upstream", upstream]
    env = {**os.environ, "BENCH_TRACEMALLOC": "1"}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


async def get_json(port: int, path: str) -> object:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


async def slow_reader(port: int, stop: asyncio.Event) -> int:
    """A client that reads one byte a second from its socket."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)  # a small client: it holds little itself
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    body = b'{"message":"hi"}'
    request = (
        f"POST /agent/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    await loop.sock_sendall(sock, request)
    got = 0
    try:
        while not stop.is_set():
            got += len(await loop.sock_recv(sock, 1))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
    finally:
        sock.close()
    return got


async def drive(args: argparse.Namespace) -> None:
    up_port, proxy_port = free_port(), free_port()
    procs = [spawn("upstream", up_port), spawn("proxy", proxy_port, f"http://127.0.0.1:{up_port}/agentkit")]
    try:
        await wait_listening(up_port, procs[0])
        await wait_listening(proxy_port, procs[1])
        before = await get_json(proxy_port, "/__bench/mem")
        stop = asyncio.Event()
        readers = [asyncio.create_task(slow_reader(proxy_port, stop)) for _ in range(args.readers)]
        await asyncio.sleep(args.seconds)  # let every buffer on the way fill
        first = await get_json(up_port, "/written")
        await asyncio.sleep(1.0)
        second = await get_json(up_port, "/written")
        during = await get_json(proxy_port, "/__bench/mem")
        stop.set()
        await asyncio.gather(*readers)
    finally:
        stop_processes(procs)
    report(args, before, during, first, second)


def report(args: argparse.Namespace, before: dict, during: dict, first: list[int], second: list[int]) -> None:
    n = args.readers
    heap = (during["traced"] - before["traced"]) / 1024 / n
    rss = max(during["rss_kib"] - before["rss_kib"], 0) / n
    paused = sum(1 for a, b in zip(first, second, strict=True) if a == b)
    mean_written = sum(second) / len(second) / 1024
    print(
        f"\nstreambridge slow-reader bench: {n} clients reading 1 byte/s, agentkit upstream flooding, "
        f"measured after {args.seconds:.0f} s\n"
    )
    print("| metric | value | target |")
    print("|---|---:|---|")
    print(f"| proxy memory per slow stream (Python heap, tracemalloc) | {heap:.1f} KiB | bounded (docs/proxy.md) |")
    print(f"| proxy memory per slow stream (process RSS) | {rss:.1f} KiB | |")
    print(f"| upstream streams paused (wrote nothing for 1 s) | {paused} of {len(second)} | all |")
    print(f"| written by the upstream per stream, then paused | {mean_written:.0f} KiB | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--role", choices=["upstream", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "upstream":
        run_upstream(args.port)
    elif args.role == "proxy":
        run_proxy(args.port, args.upstream)
    else:
        started = time.monotonic()
        asyncio.run(drive(args))
        print(f"\n({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()

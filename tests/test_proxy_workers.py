"""``serve --workers N``: N processes on one port sharing the Redis run log, supervised by a
parent that forwards stop signals; and a second stop signal while a proxy drains.

Which worker answered is read from each answer's ``X-Streambridge-Worker`` header, never from
how the kernel spreads connections: a client opens fresh connections until the other worker
answers (bounded)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp

from streambridge.bridge.server import WORKER_HEADER

from .cli_support import Proc
from .proxy_support import url_of
from .redis_support import RedisServer, free_port
from .test_resume_scale import DONE, client_keeps, paced_agent, without_meta
from .tools import unavailable

#: fresh connections tried before giving up on reaching the other worker (each lands on one
#: of two: the chance that 200 all land on the same one is 2^-199)
ATTEMPTS = 200


def parent_of(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


def fresh_session() -> aiohttp.ClientSession:
    """Every request on a new connection, so each may land on any worker."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=True), timeout=aiohttp.ClientTimeout(total=30)
    )


async def resume_on_another_worker(
    session: aiohttp.ClientSession, base: str, run_id: str, cursor: str, not_on: str
) -> aiohttp.ClientResponse:
    """The run's resume from ``cursor``, answered by a worker other than ``not_on``."""
    for _ in range(ATTEMPTS):
        resp = await session.get(f"{base}/agent/chat/{run_id}/stream", headers={"Last-Event-ID": cursor})
        assert resp.status == 200, await resp.text()
        if resp.headers[WORKER_HEADER] != not_on:
            return resp
        resp.close()
    raise AssertionError(f"{ATTEMPTS} connections all reached worker {not_on}")


async def test_two_workers_share_a_port_and_a_run_resumes_live_on_the_other(
    aiohttp_server, redis_server: RedisServer
) -> None:
    if not Path("/proc/self/stat").exists():
        unavailable("/proc is missing: the test reads the workers' parent pids there (Linux)")
    release = asyncio.Event()
    upstream = await aiohttp_server(paced_agent(release))
    port = free_port()
    proc = await asyncio.to_thread(
        Proc,
        *("serve", "--upstream", url_of(upstream, "/up"), "--from", "agentkit", "--to", "nest"),
        *("--port", port, "--workers", 2, "--run-log", redis_server.url, "--heartbeat", 0),
    )
    try:
        found = await asyncio.to_thread(proc.wait_for, r"workers count=2 pids=(\d+),(\d+)")
        pids = set(found.groups())
        assert len(pids) == 2 and {parent_of(int(pid)) for pid in pids} == {proc.popen.pid}
        base = f"http://127.0.0.1:{port}"
        async with fresh_session() as session:
            started = await session.post(base + "/agent/chat", json={"message": "hold", "threadId": "thr-1"})
            first = started.headers[WORKER_HEADER]
            seen = bytearray()
            while seen.count(b"\nid: ") < 5:  # the upstream holds the run after ten frames
                seen.extend(await started.content.readany())
            had, cursor = client_keeps(bytes(seen))
            resumed = await resume_on_another_worker(session, base, started.headers["X-Agent-Run-Id"], cursor, first)
            assert {first, resumed.headers[WORKER_HEADER]} == pids
            await resumed.content.readuntil(b"\n\n")  # its meta: the other worker follows the live run
            release.set()
            rest = without_meta(b"event: meta\n\n" + await resumed.read())
            whole = bytes(seen) + await started.read()
        assert whole.endswith(DONE) and whole.count(b"\nid: ") > 190
        assert rest == whole[len(had) :]  # byte for byte what the first worker's client got after the cursor
        proc.popen.send_signal(signal.SIGTERM)  # forwarded: both drain and exit, and so does the parent
        assert await asyncio.to_thread(proc.finish) == 0
        for pid in pids:
            assert any(f"worker_exited worker={pid} code=0" in line for line in proc.lines), proc.lines
    finally:
        release.set()
        proc.stop()


async def test_a_worker_that_dies_stops_the_server_and_a_killed_parent_stops_its_workers(
    redis_server: RedisServer,
) -> None:
    args = ("serve", "--upstream", "http://127.0.0.1:9/", "--from", "nest", "--to", "oma", "--run-log")
    proc = await asyncio.to_thread(Proc, *args, redis_server.url, "--port", free_port(), "--workers", 2)
    try:
        pids = (await asyncio.to_thread(proc.wait_for, r"workers count=2 pids=(\d+),(\d+)")).groups()
        os.kill(int(pids[0]), signal.SIGKILL)
        assert await asyncio.to_thread(proc.finish) == 1  # the other drained, the parent says it failed
        assert any(f"worker_exited worker={pids[0]} code=-9" in line for line in proc.lines), proc.lines
        assert any(f"worker_exited worker={pids[1]} code=0" in line for line in proc.lines), proc.lines
    finally:
        proc.stop()
    orphaned = await asyncio.to_thread(Proc, *args, redis_server.url, "--port", free_port(), "--workers", 2)
    try:
        pids = (await asyncio.to_thread(orphaned.wait_for, r"workers count=2 pids=(\d+),(\d+)")).groups()
        orphaned.popen.kill()  # the parent dies without a word: its workers see its pipe end
        # its stderr reaches its end only once every worker holding it has exited too
        assert await asyncio.to_thread(orphaned.finish) == -signal.SIGKILL
        for pid in pids:
            assert any(f"draining open_streams=0 worker={pid}" in line for line in orphaned.lines), orphaned.lines
    finally:
        orphaned.stop()


async def test_a_second_stop_signal_while_draining_changes_nothing(aiohttp_server) -> None:
    """A supervisor that signals every process of a group reaches a worker its parent also
    signals; a person presses Ctrl-C twice: the drain goes on and the open stream ends properly."""
    release = asyncio.Event()
    upstream = await aiohttp_server(paced_agent(release))
    port = free_port()
    proc = await asyncio.to_thread(
        Proc,
        *("serve", "--upstream", url_of(upstream, "/up"), "--from", "agentkit", "--to", "nest"),
        *("--port", port, "--heartbeat", 0),
        environ={"STREAMBRIDGE_DRAIN_TIMEOUT": "60"},
    )
    try:
        await asyncio.to_thread(proc.wait_for, "listening")
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            started = await session.post(
                f"http://127.0.0.1:{port}/agent/chat", json={"message": "hold", "threadId": "thr-1"}
            )
            seen = bytearray()
            while seen.count(b"\nid: ") < 5:
                seen.extend(await started.content.readany())
            proc.popen.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait_for, "draining open_streams=1")
            proc.popen.send_signal(signal.SIGINT)
            await asyncio.to_thread(proc.wait_for, "already_draining")
            release.set()
            whole = bytes(seen) + await started.read()
        assert whole.endswith(DONE)  # the run's own end, not a drain cut short
        assert await asyncio.to_thread(proc.finish) == 0
        assert not any("Traceback" in line for line in proc.lines), proc.lines
    finally:
        release.set()
        proc.stop()

"""The proof of resumable runs across processes: proxy processes sharing one Redis (and one
process on the memory log), a client cut at 100 random points of a run on A resumes on B with
``Last-Event-ID``, and the bytes it ends up with are an uncut stream's."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp import web

from .cli_support import Proc
from .proxy_support import PING, stream_app, url_of
from .redis_support import RedisServer, free_port

CUTS = 100
DONE = b"event: done\ndata: {}\n\n"
_ID = re.compile(rb"(?m)^id: (\d+)$")


def agent_stream(deltas: int = 200) -> list[bytes]:
    """An agentkit turn of ``deltas`` text deltas, one frame each."""
    frame = b"data: %s\n\n"
    text = [f"word {i} " for i in range(deltas)]
    start = {"type": "turn_start", "turnId": "t1", "messageId": "m1", "sessionId": "s1"}
    end = {
        "type": "turn_end",
        "turnId": "t1",
        "messageId": "m1",
        "result": {"status": "succeeded", "text": "".join(text), "provider": "custom", "model": "m"},
    }
    body = [{"type": "text_delta", "messageId": "m1", "text": t} for t in text]
    return [frame % msgspec.json.encode(e) for e in (start, *body, end)]


def paced_agent(release: asyncio.Event) -> web.Application:
    """Writes the turn a frame at a time, yielding to the loop every ten frames (so cuts fall
    both in a live run and after its end); a turn whose text is ``hold`` stops after ten frames
    until ``release`` is set (or its client goes)."""
    stream = agent_stream()

    async def handler(request: web.Request) -> web.StreamResponse:
        hold = msgspec.json.decode(await request.read())["text"] == "hold"
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i, frame in enumerate(stream):
            if hold and i == 10:
                await release.wait()
            await resp.write(frame)
            if i % 10 == 9:
                await asyncio.sleep(0.001)
        await resp.write_eof()
        return resp

    return stream_app(handler, "/up")


class Proxies:
    """``instances`` proxy processes in front of one upstream, sharing ``run_log``."""

    release: asyncio.Event  # lets the upstream's held turns go on

    def __init__(self, upstream: str, run_log: str, instances: int, environ: dict[str, str]) -> None:
        self.procs: list[Proc] = []
        self.urls: list[str] = []
        for _ in range(instances):
            port = free_port()
            proc = Proc(
                *("serve", "--upstream", upstream, "--from", "agentkit", "--to", "nest"),
                *("--port", port, "--run-log", run_log, "--heartbeat", "0"),
                environ=environ,
            )
            self.procs.append(proc)
            proc.wait_for(r"listening")
            self.urls.append(f"http://127.0.0.1:{port}")

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()


@pytest.fixture
def proxies(request: pytest.FixtureRequest, aiohttp_server) -> Iterator[Any]:
    started: list[Proxies] = []

    async def make(run_log: str, instances: int, **environ: str) -> Proxies:
        release = asyncio.Event()
        server = await aiohttp_server(paced_agent(release))
        made = await asyncio.to_thread(Proxies, url_of(server, "/up"), run_log, instances, environ)
        made.release = release
        started.append(made)
        return made

    yield make
    for made in started:
        made.stop()


def client_keeps(prefix: bytes) -> tuple[bytes, str]:
    """A client cut after ``prefix`` keeps its whole frames, and the id of the last one."""
    whole = prefix[: prefix.rfind(b"\n\n") + 2] if b"\n\n" in prefix else b""
    ids = _ID.findall(whole)
    return whole, ids[-1].decode() if ids else ""


def without_meta(body: bytes) -> bytes:
    return body.split(b"\n\n", 1)[1] if body.startswith(b"event: meta") else body


async def one_cut(session: aiohttp.ClientSession, a: str, b: str, cut: int) -> bytes:
    async with session.post(a + "/agent/chat", json={"message": "hi", "threadId": "thr-1"}) as resp:
        run_id = resp.headers["X-Agent-Run-Id"]
        got = bytearray()
        while len(got) < cut and (chunk := await resp.content.readany()):
            got.extend(chunk)
        resp.close()  # cut
    whole, cursor = client_keeps(bytes(got[:cut]))
    if whole.endswith(DONE):  # (nest's done is unnumbered, as the real server's): a client that
        return without_meta(whole)  # has its terminal has the whole answer and does not resume
    async with session.get(
        f"{b}/agent/chat/{run_id}/stream", headers={"Last-Event-ID": cursor} if cursor else {}
    ) as again:
        assert again.status == 200, await again.text()
        rest = await again.read()
    assert rest.startswith(b'event: meta\ndata: {"runId":"' + run_id.encode() + b'"}\n\n')
    return without_meta(whole) + without_meta(rest)


@pytest.mark.parametrize("backend", ["redis", "memory"])
async def test_a_client_cut_at_100_random_points_resumes_to_the_uncut_stream(proxies, backend: str, request) -> None:
    if backend == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        fleet = await proxies(redis.url, 2)
        a, b = fleet.urls
    else:
        fleet = await proxies("memory", 1)
        a = b = fleet.urls[0]
    rng = random.Random(f"cuts-{backend}")
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        async with session.post(a + "/agent/chat", json={"message": "hi", "threadId": "thr-1"}) as resp:
            uncut = without_meta((await resp.read()).replace(PING, b""))
        assert uncut.endswith(DONE) and uncut.count(b"\nid: ") > 190
        for _ in range(CUTS):
            cut = rng.randrange(0, len(uncut) + 200)  # (+ the meta and its ping)
            assert await one_cut(session, a, b, cut) == uncut, cut


async def held_run(session: aiohttp.ClientSession, proxy: str) -> tuple[aiohttp.ClientResponse, str, bytearray]:
    """A run the upstream holds after ten frames: its response, its id, and its first numbered frames."""
    started = await session.post(proxy + "/agent/chat", json={"message": "hold", "threadId": "thr-1"})
    seen = bytearray()
    while seen.count(b"\nid: ") < 5:
        seen.extend(await started.content.readany())
    return started, started.headers["X-Agent-Run-Id"], seen


async def test_when_the_instance_running_a_run_dies_a_reader_on_another_ends_with_a_terminal(
    proxies, redis_server
) -> None:
    fleet = await proxies(redis_server.url, 2, STREAMBRIDGE_RUN_LOG_LEASE="0.5")
    a, b = fleet.urls
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        started, run_id, seen = await held_run(session, a)
        _, cursor = client_keeps(bytes(seen))
        async with session.get(f"{b}/agent/chat/{run_id}/stream", headers={"Last-Event-ID": cursor}) as follower:
            assert follower.status == 200
            await follower.content.readuntil(b"\n\n")  # its meta: B is following the run
            fleet.procs[0].popen.kill()  # A dies mid-run, its upstream still open
            rest = await follower.read()  # B's reader ends once A's lease lapsed: no hang
        started.close()
    assert rest.endswith(
        b'event: error\ndata: {"code":"run_lost","message":"The proxy instance that was relaying this answer '
        b'stopped. Please try again."}\n\n'
    )
    assert not set(_ID.findall(rest)) & set(_ID.findall(bytes(seen)))  # nothing it had, again
    assert b"data-terminal" not in rest  # (a client route: the terminal a nest server would send, no carrier)


async def test_a_redis_restart_mid_run_gives_every_client_of_every_process_a_terminal(proxies, redis_server) -> None:
    fleet = await proxies(redis_server.url, 2)
    a, b = fleet.urls
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        started, run_id, seen = await held_run(session, a)
        async with session.get(f"{b}/agent/chat/{run_id}/stream") as follower:
            assert follower.status == 200
            await follower.content.readuntil(b"\n\n")  # its meta: B is following the run
            await asyncio.to_thread(redis_server.restart)  # everything in Redis is lost
            followed = await follower.read()  # B's reader ends: no hang
        assert followed.endswith(
            b'event: error\ndata: {"code":"run_log_unavailable","message":"The proxy lost the log of this answer. '
            b'Please try again."}\n\n'
        )
        fleet.release.set()  # the upstream answers to the end
        rest = await started.read()  # the client on A is not hurt: the run's own end
        assert (bytes(seen) + rest).endswith(b"event: done\ndata: {}\n\n")
        # and the log works again for the next run, on either process
        async with session.post(a + "/agent/chat", json={"message": "hi", "threadId": "thr-2"}) as again:
            body = await again.read()
            next_run = again.headers["X-Agent-Run-Id"]
        assert body.endswith(b"event: done\ndata: {}\n\n")
        async with session.get(f"{b}/agent/chat/{next_run}/stream") as late:
            assert late.status == 200 and (await late.read()).endswith(b"event: done\ndata: {}\n\n")

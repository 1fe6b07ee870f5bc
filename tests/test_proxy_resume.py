"""Resumable runs through the proxy, for every client protocol in the registry, on the memory
log and on Redis: a client cut anywhere resumes from its cursor (``Last-Event-ID`` or
``?after=``) and ends up with exactly the uncut stream's bytes; a run outlives its client for
the grace period and no longer; an explicit cancel is immediate; another identity finds nothing;
with Redis, a client resumes and cancels on another instance, and a Redis restart mid-run ends
every stream with a proper terminal."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import msgspec
import pytest
from aiohttp import web

from streambridge import codecs
from streambridge.bridge.state import STATE
from streambridge.codecs.requests import ChatRequest

from .proxy_support import PING, Upstream, frames, golden, proxy_config, start_proxy, stream_app, url_of, write_stream
from .redis_support import RedisServer

TARGETS = codecs.names()
SCENARIO = "text-after-tool"
_ID = re.compile(rb"(?m)^id: (\d+)$")


def agent(upstream: Upstream, hold_after: int | None = None) -> web.Application:
    """An agentkit upstream writing the scenario one frame per write (held after some when asked)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(
            request, frames(golden(SCENARIO, "agentkit")), upstream=upstream, hold_after=hold_after
        )

    return stream_app(handler, "/up")


@pytest.fixture(params=["memory", "redis"])
def run_log(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory"
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url


async def proxy(aiohttp_server, aiohttp_client, target: str, run_log: str, upstream: Upstream, **settings: Any):
    server = await aiohttp_server(agent(upstream, settings.pop("hold_after", None)))
    config = proxy_config(url_of(server, "/up"), "agentkit", target, run_log=run_log, **settings)
    return await start_proxy(aiohttp_client, config)


def request_body(target: str) -> bytes:
    return codecs.get(target).http.build_request(ChatRequest(text="hi", thread_id="thr-1"))


async def start(client: Any, target: str, headers: dict[str, str] | None = None) -> Any:
    path = "/" + codecs.get(target).http.chat_path
    return await client.post(
        path, data=request_body(target), headers={"Content-Type": "application/json", **(headers or {})}
    )


def sse(resp: Any) -> bool:
    return resp.headers["Content-Type"].startswith("text/event-stream")


def seen_by_client(prefix: bytes, is_sse: bool) -> tuple[bytes, str]:
    """What a client cut after ``prefix`` keeps (its whole frames) and its cursor."""
    if is_sse:
        end = prefix.rfind(b"\n\n")
        whole = prefix[: end + 2] if end >= 0 else b""
        ids = _ID.findall(whole)
        return whole, ids[-1].decode() if ids else ""
    whole = prefix[: prefix.rfind(b"\n") + 1]
    return whole, str(whole.count(b"\n"))


def normal(body: bytes, run_id: str, runs: bool) -> bytes:
    """A body as compared: heartbeats out, this run's id named alike, a run start frame (``meta``,
    which a re-attach writes again naming only the run) left out."""
    body = body.replace(PING, b"").replace(run_id.encode(), b"RUN")
    if runs and body.startswith(b"event: meta\n"):
        body = body[body.index(b"\n\n") + 2 :]
    return body


async def uncut(client: Any, target: str) -> bytes:
    resp = await start(client, target)
    return normal(await resp.read(), resp.headers["X-Streambridge-Run-Id"], codecs.get(target).http.runs is not None)


async def cut_and_resume(client: Any, target: str, cut: int, via: str = "header") -> bytes:
    resp = await start(client, target)
    run_id = resp.headers["X-Streambridge-Run-Id"]
    got = bytearray()
    while len(got) < cut and (chunk := await resp.content.readany()):
        got.extend(chunk)
    resp.close()  # the connection is cut here
    whole, cursor = seen_by_client(bytes(got[:cut]), sse(resp))
    if via == "header":
        resumed = await client.get(f"/runs/{run_id}/stream", headers={"Last-Event-ID": cursor} if cursor else {})
    else:
        resumed = await client.get(f"/runs/{run_id}/stream", params={"after": cursor or "0"})
    assert resumed.status == 200, await resumed.text()
    runs = codecs.get(target).http.runs is not None
    rest = await resumed.read()
    if runs:  # the re-attach's run start, naming the run only
        assert rest.startswith(b'event: meta\ndata: {"runId":"' + run_id.encode() + b'"}\n\n')
    return normal(whole, run_id, runs) + normal(rest, run_id, runs)


@pytest.mark.parametrize("target", TARGETS)
async def test_a_client_cut_anywhere_resumes_from_its_cursor_to_the_uncut_stream(
    aiohttp_server, aiohttp_client, run_log: str, target: str
) -> None:
    client = await proxy(aiohttp_server, aiohttp_client, target, run_log, Upstream())
    want = await uncut(client, target)
    rng = random.Random(target)
    for cut in [0, *sorted(rng.sample(range(1, len(want)), 5))]:
        assert await cut_and_resume(client, target, cut, via=rng.choice(["header", "query"])) == want, cut


async def test_resume_ids_are_sse_ids_that_rise_by_one_and_nest_keeps_its_named_frames_bare(
    aiohttp_server, aiohttp_client
) -> None:
    client = await proxy(aiohttp_server, aiohttp_client, "nest", "memory", Upstream())
    body = await (await start(client, "nest")).read()
    blocks = [b for b in body.split(b"\n\n") if b and b != PING.strip()]
    assert blocks[0].startswith(b"event: meta") and blocks[-1].startswith(b"event: done")
    assert [int(b.split(b"\n")[0][4:]) for b in blocks[1:-1]] == list(range(1, len(blocks) - 1))


# -- a run outlives its client for the grace period -----------------------------------------------


async def test_a_run_goes_on_after_its_client_goes_and_a_resume_gets_the_rest(
    aiohttp_server, aiohttp_client, run_log: str
) -> None:
    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "ai-sdk", run_log, upstream, hold_after=3, resume_grace=30)
    want = await uncut_released(aiohttp_server, aiohttp_client, run_log)
    resp = await start(client, "ai-sdk")
    run_id = resp.headers["X-Streambridge-Run-Id"]
    await asyncio.wait_for(upstream.reached.wait(), 10)
    resp.close()  # the phone drops its connection while the upstream is still answering
    resumed = await client.get(f"/runs/{run_id}/stream")  # (from the start: it kept nothing)
    upstream.release.set()
    assert normal(await resumed.read(), run_id, False) == want
    assert not upstream.cancelled.is_set()  # the upstream answered to the end


async def uncut_released(aiohttp_server, aiohttp_client, run_log: str) -> bytes:
    upstream = Upstream()
    upstream.release.set()
    client = await proxy(aiohttp_server, aiohttp_client, "ai-sdk", run_log, upstream)
    return await uncut(client, "ai-sdk")


async def dropped_mid_run(client: Any, target: str, upstream: Upstream) -> str:
    """Start a run, and drop its client while the upstream is still answering: the run's id."""
    resp = await start(client, target)
    run_id = resp.headers["X-Streambridge-Run-Id"]
    await asyncio.wait_for(upstream.reached.wait(), 10)
    resp.close()
    return run_id


async def test_a_run_nobody_comes_back_to_is_cancelled_after_the_grace_period(
    aiohttp_server, aiohttp_client, run_log: str
) -> None:
    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "nest", run_log, upstream, hold_after=3, resume_grace=0.2)
    run_id = await dropped_mid_run(client, "nest", upstream)
    await asyncio.wait_for(upstream.cancelled.wait(), 10)  # no reader for 0.2 s: cancelled
    late = await client.get(f"/agent/chat/{run_id}/stream")  # its log ends with the cancel
    body = await late.read()
    assert late.status == 200 and body.endswith(b'data: {"kind":"cancelled"}\n\nevent: done\ndata: {}\n\n')


async def test_an_explicit_cancel_ends_a_run_at_once_even_with_its_client_gone(
    aiohttp_server, aiohttp_client, run_log: str
) -> None:
    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "ag-ui", run_log, upstream, hold_after=3, resume_grace=600)
    run_id = await dropped_mid_run(client, "ag-ui", upstream)
    cancel = await client.post(f"/runs/{run_id}/cancel")
    assert cancel.status == 200 and await cancel.json() == {"cancelled": True}
    await asyncio.wait_for(upstream.cancelled.wait(), 10)
    end = (await (await client.get(f"/runs/{run_id}/stream")).read()).rstrip().rsplit(b"\n\n", 1)[-1]
    assert (await client.post(f"/runs/{run_id}/cancel")).status == 404  # over: nothing to cancel
    assert b'"type":"RUN_FINISHED"' in end and b'"outcome":{"type":"cancelled"}' in end


async def test_an_ai_sdk_stop_by_chat_id_cancels_and_a_resume_after_the_end_is_204(
    aiohttp_server, aiohttp_client, run_log: str
) -> None:
    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "ai-sdk", run_log, upstream, hold_after=3)
    resp = await start(client, "ai-sdk")
    await asyncio.wait_for(upstream.reached.wait(), 10)
    stop = await client.delete("/api/chat/thr-1/stream")
    assert stop.status == 204
    await asyncio.wait_for(upstream.cancelled.wait(), 10)
    body = await resp.read()
    assert body.endswith(b"data: [DONE]\n\n") and b'"type":"abort"' in body
    assert (await client.get("/api/chat/thr-1/stream")).status == 204
    assert (await client.delete("/api/chat/thr-1/stream")).status == 404


# -- ownership -----------------------------------------------------------------------------------


@pytest.mark.parametrize("owner_header", [None, "X-User"])
async def test_another_identity_can_neither_resume_nor_cancel_a_run(
    aiohttp_server, aiohttp_client, owner_header: str | None
) -> None:
    upstream = Upstream()
    client = await proxy(
        aiohttp_server, aiohttp_client, "nest", "memory", upstream, hold_after=3, owner_header=owner_header
    )
    name = owner_header or "Authorization"
    resp = await start(client, "nest", {name: "alice"})
    run_id = resp.headers["X-Agent-Run-Id"]
    await asyncio.wait_for(upstream.reached.wait(), 10)
    for who in ({name: "mallory"}, {}):
        assert (await client.get(f"/agent/chat/{run_id}/stream", headers=who)).status == 404
        assert (await client.get(f"/runs/{run_id}/stream", headers=who)).status == 404
        assert (await client.post(f"/agent/chat/{run_id}/cancel", headers=who)).status == 404
    assert not upstream.cancelled.is_set()
    attach = await client.get(f"/agent/chat/{run_id}/stream", headers={name: "alice"})
    assert attach.status == 200
    assert (await client.post(f"/agent/chat/{run_id}/cancel", headers={name: "alice"})).status == 201
    await asyncio.wait_for(upstream.cancelled.wait(), 10)
    assert (await attach.read()).endswith(b"event: done\ndata: {}\n\n")


async def test_a_cursor_that_is_not_a_count_is_a_400_and_an_unknown_run_a_404(aiohttp_server, aiohttp_client) -> None:
    client = await proxy(aiohttp_server, aiohttp_client, "nest", "memory", Upstream())
    assert (await client.get("/runs/nope/stream")).status == 404
    bad = await client.get("/runs/nope/stream", headers={"Last-Event-ID": "x"})
    assert bad.status == 400 and "Last-Event-ID" in (await bad.json())["message"]


async def test_without_a_run_log_nothing_is_numbered_or_resumable(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "nest", "off", upstream)
    resp = await start(client, "nest")
    body = await resp.read()
    assert b"\nid: " not in body and "X-Streambridge-Run-Id" not in resp.headers
    assert (await client.get(f"/agent/chat/{resp.headers['X-Agent-Run-Id']}/stream")).status == 404


# -- two instances, one Redis --------------------------------------------------------------------


async def two_instances(
    aiohttp_server, aiohttp_client, redis: RedisServer, upstream: Upstream, target: str = "nest", **settings: Any
):
    server = await aiohttp_server(agent(upstream, settings.pop("hold_after", None)))
    config = proxy_config(url_of(server, "/up"), "agentkit", target, run_log=redis.url, **settings)
    return await start_proxy(aiohttp_client, config), await start_proxy(aiohttp_client, config)


async def test_a_client_resumes_and_cancels_on_another_instance(aiohttp_server, aiohttp_client, redis_server) -> None:
    upstream = Upstream()
    a, b = await two_instances(aiohttp_server, aiohttp_client, redis_server, upstream, hold_after=4)
    assert a.app[STATE].instance != b.app[STATE].instance
    resp = await start(a, "nest")
    run_id = resp.headers["X-Agent-Run-Id"]
    seen = bytearray()
    while b'"kind":"tool-output"' not in seen:
        seen.extend(await resp.content.readany())
    resp.close()
    whole, cursor = seen_by_client(bytes(seen), True)
    resumed = await b.get(f"/agent/chat/{run_id}/stream", headers={"Last-Event-ID": cursor})
    assert resumed.status == 200
    head = await resumed.content.readuntil(b"\n\n")
    assert head == b'event: meta\ndata: {"runId":"' + run_id.encode() + b'"}\n\n'
    cancel = await b.post(f"/agent/chat/{run_id}/cancel")  # reaches the instance that owns it
    assert cancel.status == 201 and await cancel.json() == {"aborted": True}
    await asyncio.wait_for(upstream.cancelled.wait(), 10)
    rest = await resumed.read()
    assert rest.endswith(b'data: {"kind":"cancelled"}\n\nevent: done\ndata: {}\n\n')
    assert not set(_ID.findall(rest)) & set(_ID.findall(whole))  # nothing twice


async def test_an_ai_sdk_stop_on_another_instance_reaches_the_run(aiohttp_server, aiohttp_client, redis_server) -> None:
    upstream = Upstream()
    a, b = await two_instances(aiohttp_server, aiohttp_client, redis_server, upstream, "ai-sdk", hold_after=3)
    resp = await start(a, "ai-sdk")
    await asyncio.wait_for(upstream.reached.wait(), 10)
    resumed = await b.get("/api/chat/thr-1/stream")  # the same chat, followed on B
    assert resumed.status == 200
    assert (await b.delete("/api/chat/thr-1/stream")).status == 204  # Stop, pressed on B
    await asyncio.wait_for(upstream.cancelled.wait(), 10)  # A's upstream request is gone
    body, followed = await resp.read(), await resumed.read()
    assert b'"type":"abort"' in body and body.endswith(b"data: [DONE]\n\n")
    assert followed.replace(PING, b"") == body.replace(PING, b"")  # B's reader got the same message


async def test_a_redis_restart_mid_run_ends_every_stream_with_a_terminal(
    aiohttp_server, aiohttp_client, redis_server
) -> None:
    upstream = Upstream()
    a, b = await two_instances(aiohttp_server, aiohttp_client, redis_server, upstream, hold_after=4)
    resp = await start(a, "nest")
    run_id = resp.headers["X-Agent-Run-Id"]
    await asyncio.wait_for(upstream.reached.wait(), 10)
    follower = await b.get(f"/agent/chat/{run_id}/stream")
    assert follower.status == 200
    await follower.content.readuntil(b"\n\n")
    redis_server.restart()  # everything in Redis is lost
    async with asyncio.timeout(30):
        followed = await follower.read()
    assert followed.rstrip().endswith(
        b'"code":"run_log_unavailable","message":"The proxy lost the log of this answer. Please try again."}'
    )
    upstream.release.set()
    async with asyncio.timeout(30):
        body = await resp.read()  # the client on the owner is not hurt: the run's own end
    assert body.endswith(b"event: done\ndata: {}\n\n")
    assert (await b.get(f"/agent/chat/{run_id}/stream")).status == 404  # its log is gone
    # and the log works again for the next run
    again = await start(a, "nest")
    again_body = await again.read()
    late = await b.get(f"/agent/chat/{again.headers['X-Agent-Run-Id']}/stream")
    assert late.status == 200 and (await late.read()).endswith(b"event: done\ndata: {}\n\n")
    assert msgspec.json.decode(again_body.split(b"\n\n")[0].split(b"data: ")[1])["threadId"] == "thr-1"


async def test_a_websocket_client_that_lost_its_socket_resumes_by_the_run_named_in_the_handshake(
    aiohttp_server, aiohttp_client, run_log: str
) -> None:
    from websockets.asyncio.client import connect

    upstream = Upstream()
    client = await proxy(aiohttp_server, aiohttp_client, "oma", run_log, upstream, hold_after=3)
    async with connect(f"ws://127.0.0.1:{client.port}/ws", proxy=None) as ws:
        run_id = ws.response.headers["X-Streambridge-Run-Id"]
        await ws.send(request_body("oma").decode())
        got = [await ws.recv(), await ws.recv()]
        await asyncio.wait_for(upstream.reached.wait(), 10)
    # the socket is gone, the run goes on (resume_grace): the rest by NDJSON line count
    resumed = await client.get(f"/runs/{run_id}/stream", params={"after": "2"})
    upstream.release.set()
    rest = await resumed.read()
    assert resumed.headers["Content-Type"].startswith("application/x-ndjson")
    lines = [*got, *rest.decode().splitlines()]
    assert msgspec.json.decode(lines[-1])["type"] == "done" and not upstream.cancelled.is_set()
    uncut_client = await proxy(aiohttp_server, aiohttp_client, "oma", run_log, Upstream())
    async with connect(f"ws://127.0.0.1:{uncut_client.port}/ws", proxy=None) as ws:
        await ws.send(request_body("oma").decode())
        whole = [message async for message in ws]
    assert [normal(line.encode(), run_id, False) for line in lines] == [
        normal(line.encode(), ws.response.headers["X-Streambridge-Run-Id"], False) for line in whole
    ]

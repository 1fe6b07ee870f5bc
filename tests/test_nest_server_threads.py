"""The published nest server (@dudousxd/nestjs-agent 0.11, run by tests/conformance/nest-server.mjs)
and its thread ids: it makes a thread for a message without ``threadId`` and fails the run of
one it did not create, exactly as the suite's nest fake does (tests/nest_threads.py); and a
conversation through the proxy (useChat and AG-UI clients) goes on across messages.

Node.js and npm are required: without them the test is skipped with the reason printed, and
under ``CI=true`` it fails instead (see tests/tools.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import aiohttp
import msgspec
import pytest

from .nest_threads import NestThreads
from .proxy_support import decode, frames, proxy_config, start_proxy, without_comments
from .test_proxy_threads import CLIENTS
from .tools import CONFORMANCE, conformance_node

ACTOR = {"x-actor-id": "u1"}  # the shipped header actor resolver's


@pytest.fixture(scope="module")
def nest_server() -> Iterator[str]:
    """The base URL (``…/agent``) of a real nest server on 127.0.0.1, for the module's tests."""
    node = conformance_node("the published nest server (@dudousxd/nestjs-agent)")
    proc = subprocess.Popen(
        [node, str(CONFORMANCE / "nest-server.mjs")],
        cwd=CONFORMANCE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # it says where it listens, or why it could not start
        if not first.startswith("listening "):
            pytest.fail(f"the nest server did not start: {first}{proc.stdout.read()}", pytrace=False)
        yield f"http://127.0.0.1:{int(first.split()[1])}/agent"
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


async def chat(base: str, body: dict) -> tuple[dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session, session.post(base + "/chat", json=body, headers=ACTOR) as resp:
        assert resp.status == 201
        ids = {k.lower(): v for k, v in resp.headers.items() if k.lower().startswith("x-agent-")}
        return ids, await resp.read()


def with_run(data: bytes, run_id: str) -> bytes:
    return data.replace(run_id.encode(), b"<run>")


async def test_the_fake_answers_thread_ids_as_the_real_server_does(nest_server: str) -> None:
    fake = NestThreads()
    new_ids, new = await chat(nest_server, {"message": "hi"})
    thread = new_ids["x-agent-thread-id"]
    assert new.endswith(b"event: done\ndata: {}\n\n")
    assert fake.thread_of({"message": "hi"}) == "thr-1"  # (the fake's first, as the server's first)

    again_ids, again = await chat(nest_server, {"message": "more", "threadId": thread})
    assert again_ids["x-agent-thread-id"] == thread and again.endswith(b"event: done\ndata: {}\n\n")

    unknown_ids, unknown = await chat(nest_server, {"message": "hi", "threadId": "chat-7"})
    run = unknown_ids["x-agent-run-id"]
    fake_ids, fake_frames = fake.answer({"message": "hi", "threadId": "chat-7"}, {"x-agent-run-id": run}, [])
    assert unknown_ids == fake_ids  # the run starts on the unknown thread …
    assert with_run(unknown, run) == with_run(b"".join(fake_frames), run)  # … and fails, before any step
    assert frames(unknown)[-1].startswith(b'event: error\ndata: {"code":"run_failed"')


@pytest.mark.parametrize("target", sorted(CLIENTS))
async def test_a_conversation_through_the_proxy_goes_on_with_the_real_server(
    nest_server: str, aiohttp_client, target: str
) -> None:
    config = proxy_config(nest_server, "nest", target, headers=["x-actor-id=env:ACTOR"], environ={"ACTOR": "u1"})
    client = await start_proxy(aiohttp_client, config)
    path, message = CLIENTS[target]
    for text in ["hi", "and again"]:
        resp = await client.post(path, json=message("chat-" + target, text))
        body = await resp.read()
        assert resp.status == 200
        end = decode(target, without_comments(body))[-1]
        assert end.status == "succeeded", msgspec.json.encode(end)  # not the run failed on a foreign thread
        assert b"Hello." in body

"""``streambridge replay``: to stdout, and as a live fake backend on each protocol's HTTP surface."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from streambridge.cli import replay_server as replay
from streambridge.cli.common import resolve_protocol

from .cli_support import CAPTURES, GOLDEN, copy_golden, invoke, translated, user_error
from .corpus import FILES, capture_body


def playback(path: Path, to: str | None = None, framing: str | None = None) -> replay.Playback:
    recording = replay.load_recording(path, None)
    return replay.render(recording, resolve_protocol(to, "--to") if to else None, framing)


def test_replay_prints_the_transcript_verbatim() -> None:
    path = GOLDEN / "approval/nest.sse"
    result = invoke("replay", path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == path.read_bytes()
    capture = CAPTURES / "02-chat-action-approved.http"
    assert invoke("replay", capture, "--delay-ms", "0").stdout_bytes == capture_body(capture)


def test_replay_translates_with_to_and_reads_stdin() -> None:
    path = GOLDEN / "tool-streamed-args/agentkit.sse"
    result = invoke("replay", "-", "--to", "oma", "--delay-ms", "1", input=path.read_bytes())
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == translated("agentkit", "oma", path.read_bytes())
    framed = invoke("replay", path, "--to", "nest", "--framing", "ndjson")
    assert framed.stdout_bytes == translated("agentkit", "nest", path.read_bytes(), target_framing="ndjson")


def test_chunks_are_one_per_source_frame() -> None:
    verbatim = playback(GOLDEN / "plain-text/agentkit.sse")
    assert len(verbatim.chunks) == 5 and all(c.endswith(b"\n\n") for c in verbatim.chunks)
    translated_chunks = playback(GOLDEN / "plain-text/agentkit.sse", "oma").chunks
    assert b"".join(translated_chunks) == translated(
        "agentkit", "oma", (GOLDEN / "plain-text/agentkit.sse").read_bytes()
    )
    assert len(translated_chunks) >= 4


def test_pacing_fixed_or_as_recorded() -> None:
    timed = playback(GOLDEN / "plain-text/agentkit.sse")  # turn_end reports durationMs 812
    assert replay.frame_delay(timed, 250, False) == 0.25
    assert replay.frame_delay(timed, None, False) == 0.0
    assert replay.frame_delay(timed, None, True) == pytest.approx(0.812 / len(timed.chunks))
    untimed = playback(GOLDEN / "plain-text/nest.sse")
    assert replay.frame_delay(untimed, None, True) == replay.REALTIME_FRAME_MS / 1000


def test_replay_mistakes_are_user_errors(tmp_path: Path) -> None:
    path = GOLDEN / "plain-text/nest.sse"
    user_error(invoke("replay", path, "--delay-ms", "5", "--realtime"), "--delay-ms", "--realtime")
    user_error(invoke("replay", GOLDEN / "plain-text"), "only be replayed with --serve")
    user_error(invoke("replay", GOLDEN / "plain-text", "--serve"), "several protocols", "--to")
    user_error(invoke("replay", tmp_path / "gone.sse"), "gone.sse")
    user_error(invoke("replay", path, "--to", "x"), "--to")
    (tmp_path / "junk.sse").write_text("junk\n")
    user_error(invoke("replay", tmp_path / "junk.sse"), "junk.sse", "cannot tell the protocol")
    (tmp_path / "empty").mkdir()
    user_error(invoke("replay", tmp_path / "empty", "--serve"), "no transcripts")


# -- the HTTP fake backend -------------------------------------------------------------------


async def test_nest_chat_answers_201_with_run_headers_and_meta_first(aiohttp_client) -> None:
    path = CAPTURES / "01-chat-read-only.http"
    client = await aiohttp_client(replay.make_replay_app([playback(path)]))
    resp = await client.post("/agent/chat", json={"message": "weather?"})
    assert resp.status == 201
    assert resp.headers["Content-Type"] == "text/event-stream"
    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.headers["X-Accel-Buffering"] == "no"
    assert resp.headers["X-Agent-Run-Id"] == "5eb069f9-6c8f-490f-8222-1736f871a646"
    assert resp.headers["X-Agent-Thread-Id"] == "thr-1"
    body = await resp.read()
    assert body == capture_body(path)
    assert body.startswith(b"event: meta\n")


async def test_nest_resume_replays_the_run_with_a_meta_without_thread(aiohttp_client) -> None:
    path = GOLDEN / "approval/nest.sse"
    client = await aiohttp_client(replay.make_replay_app([playback(path)]))
    resp = await client.get("/agent/chat/f0a2c4e6-8b1d-4c3e-9a5f-7b9d1e3f5a26/stream")
    assert resp.status == 200
    assert resp.headers["X-Agent-Run-Id"] == "f0a2c4e6-8b1d-4c3e-9a5f-7b9d1e3f5a26"
    assert "X-Agent-Thread-Id" not in resp.headers
    body = await resp.read()
    original = path.read_bytes()
    meta_end = original.index(b"\n\n") + 2
    assert body == b'event: meta\ndata: {"runId":"f0a2c4e6-8b1d-4c3e-9a5f-7b9d1e3f5a26"}\n\n' + original[meta_end:]
    missing = await client.get("/agent/chat/nope/stream")
    assert missing.status == 404
    assert "no active run nope" in (await missing.json())["message"]


async def test_ai_sdk_chat_then_resume_finds_nothing_active(aiohttp_client) -> None:
    path = GOLDEN / "plain-text/ai-sdk.sse"
    client = await aiohttp_client(replay.make_replay_app([playback(path)]))
    chat = await client.post("/api/chat", json={"id": "c1", "messages": []})
    assert chat.status == 200
    assert chat.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert await chat.read() == path.read_bytes()
    resume = await client.get("/api/chat/c1/stream")
    assert resume.status == 204  # a replay keeps no chat open between requests


async def test_nest_side_routes_answer_like_the_published_server(aiohttp_client) -> None:
    client = await aiohttp_client(replay.make_replay_app([playback(GOLDEN / "approval/nest.sse")]))
    approve = await client.post("/agent/tool-call/approve", json={"toolCallId": "call_rf_1"})
    assert (approve.status, await approve.json()) == (201, {"ok": True})
    reject = await client.post("/agent/tool-call/reject", json={"toolCallId": "call_rf_1"})
    assert reject.status == 201
    cancel = await client.post("/agent/chat/f0a2c4e6-8b1d-4c3e-9a5f-7b9d1e3f5a26/cancel")
    assert (cancel.status, await cancel.json()) == (201, {"aborted": True})


async def test_a_translated_transcript_is_served_in_the_target_protocol(aiohttp_client) -> None:
    path = GOLDEN / "text-after-tool/oma.ndjson"
    client = await aiohttp_client(replay.make_replay_app([playback(path, "nest")]))
    resp = await client.post("/agent/chat", json={"message": "hi"})
    body = await resp.read()
    assert resp.status == 201
    assert body == translated("oma", "nest", path.read_bytes())
    run_id = resp.headers["X-Agent-Run-Id"]
    assert body.startswith(b'event: meta\ndata: {"runId":"' + run_id.encode())


@pytest.mark.parametrize(("to", "content_type"), [("agentkit", "text/event-stream"), ("oma", "application/x-ndjson")])
async def test_agentkit_and_oma_answer_a_post_on_the_base(aiohttp_client, to: str, content_type: str) -> None:
    path = GOLDEN / "tool-error/nest.sse"
    client = await aiohttp_client(replay.make_replay_app([playback(path, to)], base="/api/run"))
    resp = await client.post("/api/run", json={"message": "hi"})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == content_type
    assert resp.headers["X-Accel-Buffering"] == "no"
    assert await resp.read() == translated("nest", to, path.read_bytes())
    assert (await client.post("/")).status == 404


async def test_a_directory_is_served_in_order_or_by_name(aiohttp_client, tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "plain-text", "refused")
    recordings = replay.load_recordings(str(root), None)
    playbacks = [replay.render(r, resolve_protocol("oma", "--to"), None) for r in recordings]
    client = await aiohttp_client(replay.make_replay_app(playbacks))
    names = [r.keys[0] for r in recordings]
    assert names == [f"{s}/{f}" for s in ("plain-text", "refused") for f in sorted(FILES.values())]
    n = len(names)
    bodies = [await (await client.post("/")).read() for _ in range(n + 1)]
    assert bodies[:n] == [b"".join(p.chunks) for p in playbacks]
    assert bodies[n] == bodies[0]  # cycles
    chosen = await client.post("/?transcript=refused/nest")
    assert await chosen.read() == b"".join(playbacks[names.index("refused/nest.sse")].chunks)
    unknown = await client.post("/?transcript=nope")
    assert unknown.status == 404 and "plain-text/agentkit.sse" in (await unknown.json())["message"]


async def test_a_failed_capture_is_served_with_its_status(aiohttp_client, tmp_path: Path) -> None:
    failed = tmp_path / "500.http"
    failed.write_bytes(
        b'HTTP 500\ncontent-type: application/json\n\n{"statusCode":500,"message":"Internal server error"}'
    )
    client = await aiohttp_client(
        replay.make_replay_app([replay.render(replay.load_recording(failed, "nest"), None, None)])
    )
    resp = await client.post("/agent/chat", json={})
    assert resp.status == 500
    assert await resp.json() == {"statusCode": 500, "message": "Internal server error"}


async def test_a_client_that_leaves_early_still_counts_toward_exit_after(aiohttp_client) -> None:
    app = replay.make_replay_app([playback(GOLDEN / "large-tool-output/nest.sse")], delays=[0.001], exit_after=1)
    client = await aiohttp_client(app)
    resp = await client.post("/agent/chat", json={})
    await resp.content.readany()
    resp.close()  # gone after the first bytes
    await app[replay.REPLAY_KEY].finished.wait()
    assert app[replay.REPLAY_KEY].served == 1


async def test_cors_lets_a_browser_frontend_call(aiohttp_client) -> None:
    app = replay.make_replay_app([playback(GOLDEN / "plain-text/nest.sse")], cors="http://localhost:3000")
    client = await aiohttp_client(app)
    preflight = await client.options("/agent/chat", headers={"Origin": "http://localhost:3000"})
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    resp = await client.post("/agent/chat", json={})
    assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "X-Agent-Run-Id" in resp.headers["Access-Control-Expose-Headers"]
    await resp.read()


def test_replay_serve_from_the_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real command: binds 127.0.0.1, serves two streams, then exits by itself."""
    ready = threading.Event()
    urls: list[str] = []

    def announce(url: str) -> None:
        urls.append(url)
        ready.set()

    monkeypatch.setattr(replay, "announce", announce)
    source = tmp_path / "run.sse"
    shutil.copy(GOLDEN / "plain-text/agentkit.sse", source)
    results = []
    thread = threading.Thread(
        target=lambda: results.append(
            invoke("replay", source, "--serve", "--to", "nest", "--port", "0", "--exit-after", "2")
        ),
        daemon=True,  # a failing test must not keep the test run alive
    )
    thread.start()
    assert ready.wait(30)
    assert urls[0].startswith("http://127.0.0.1:")
    request = urllib.request.Request(
        urls[0] + "/agent/chat",
        data=json.dumps({"message": "hi"}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},  # a cross-site form's type is refused (415)
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status == 201
        body = resp.read()
        run_id = resp.headers["X-Agent-Run-Id"]
    assert body == translated("agentkit", "nest", source.read_bytes(), fidelity="client")  # served: a live client
    with urllib.request.urlopen(f"{urls[0]}/agent/chat/{run_id}/stream", timeout=30) as resp:
        assert resp.status == 200
        assert resp.read().endswith(b"event: done\ndata: {}\n\n")
    thread.join(30)
    assert not thread.is_alive()
    assert results[0].exit_code == 0, results[0].stderr
    assert "POST /agent/chat" in results[0].stderr


def test_serving_on_a_taken_port_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke("replay", GOLDEN / "plain-text/nest.sse", "--serve", "--port", port)
    user_error(result, "cannot listen on 127.0.0.1")


async def test_agentfootprint_answers_a_post_on_its_invoke_route(aiohttp_client) -> None:
    path = GOLDEN / "present-with-label/nest.sse"
    client = await aiohttp_client(replay.make_replay_app([playback(path, "agentfootprint")], base="/host"))
    resp = await client.post("/host/invoke", json={"input": "Chart Q3", "sessionId": "s1"})
    assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"
    body = await resp.read()
    assert body == translated("nest", "agentfootprint", path.read_bytes())
    assert b"event: agentfootprint.artifacts.presented\n" in body
    assert (await client.post("/host")).status == 404

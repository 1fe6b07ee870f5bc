"""The inspector without a browser: its analysis of captured streams (frames, links, marks, text)
for every protocol pair, secrets redacted, the ring bounded, the proxy's capture and API, access
rules, transcripts the CLI reads, and ``streambridge inspect FILE``."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from websockets.asyncio.client import connect

from streambridge import Translator
from streambridge.bridge import build_config
from streambridge.bridge.state import STATE
from streambridge.bridge.surfaces import secret_values
from streambridge.codecs.framing import make_parser
from streambridge.inspector import Inspector, StreamCapture, StreamFacts
from streambridge.inspector.analysis import REDACTED, analyse, split_frames, transcript
from streambridge.inspector.web import allowed

from .cli_support import Proc, invoke
from .corpus import CODECS, SCENARIOS, golden
from .inspector_support import (
    ANSWER_FRAMES,
    CHAT,
    CLIENT_SECRET,
    PATIENCE,
    UPSTREAM_SECRET,
    NestBackend,
    chat,
    inspected_proxy,
    until,
)
from .proxy_support import GOLDEN, proxy_config, start_proxy, stream_app, url_of, write_stream
from .test_proxy_ws import ws_url


def captured(
    source: str, target: str, body: bytes, sizes: list[int] | None = None, pause_at: int = -1, **kw: Any
) -> StreamCapture:
    """``body`` through a translator as the proxy relays it: one client write per upstream chunk,
    chunks 10 ms apart (500 ms before chunk ``pause_at``)."""
    fidelity = kw.pop("fidelity", "exact")
    translator = Translator(source, target, fidelity=fidelity)
    framing = translator.encoder.framing
    now = [0.0]
    kw.setdefault("limit", 1 << 40)  # (large-tool-output is over the proxy's default)
    facts = StreamFacts("r", "/", source, target, framing, fidelity=fidelity)
    capture = StreamCapture("s", facts, clock=lambda: now[0], **kw)
    cuts = list(itertools.accumulate(sizes or [len(body)], initial=0))
    chunks = [body[a:b] for a, b in itertools.pairwise(cuts)] + [body[cuts[-1] :]]
    for i, chunk in enumerate(c for c in chunks if c):
        now[0] += 0.5 if i == pause_at else 0.01
        capture.upstream_chunk(chunk)
        out = translator.feed(chunk)
        if out:
            capture.client_write(out)
    capture.client_write(translator.close(), origin="end")
    capture.end("completed", translator.events_in, translator.decoder.framing)
    return capture


def view(capture: StreamCapture) -> dict[str, Any]:
    return json.loads(analyse(capture))


def parsed_frames(body: bytes, framing: str) -> int:
    parser = make_parser(framing)  # type: ignore[arg-type]
    return len(parser.feed(body) + parser.close())


# -- the analysis, for every protocol pair ---------------------------------------------------


def pairings(source: str) -> list[tuple[str, str]]:
    """Every scenario of a source, each to one target in turn: every pair meets several
    scenarios and every scenario several targets, at a ninth of every pair on every scenario
    (the translation itself is the laws' to check; this is the inspector's view of it)."""
    start = CODECS.index(source)
    return [(scenario, CODECS[(start + i) % len(CODECS)]) for i, scenario in enumerate(SCENARIOS)]


def test_the_pairings_meet_every_pair_and_every_scenario() -> None:
    met = {(source, target) for source in CODECS for _, target in pairings(source)}
    assert met == set(itertools.product(CODECS, CODECS)) and len(SCENARIOS) >= 2 * len(CODECS)


@pytest.mark.parametrize("source", CODECS)
def test_every_client_frame_is_traced_to_the_upstream_frame_it_came_from(source: str) -> None:
    for scenario, target in pairings(source):
        body = golden(scenario, source)
        seen = view(captured(source, target, body))
        up, client = seen["upstream"]["frames"], seen["client"]["frames"]
        framing = seen["facts"]["source_framing"]
        assert len([f for f in up if "heartbeat" not in f["marks"]]) == parsed_frames(body, framing), (scenario, target)
        assert "".join(f["raw"] for f in up).encode() == body  # the column is the bytes, cut, nothing lost
        translated = Translator(source, target)
        written = translated.feed(body) + translated.close()
        assert "".join(f["raw"] for f in client).encode() == written
        # every client frame is the translation of an upstream frame or of the end of input
        assert {f["origin"] for f in client} <= {"relay", "end"}, (scenario, target)
        origins = [f["links"][0] for f in client if f["origin"] == "relay"]
        assert origins == sorted(origins)  # in order: the translation never runs ahead of its input
        for frame in up:  # links go both ways
            for i in frame["links"]:
                assert client[i]["links"] == [frame["i"]]
        assert all(f["links"] for f in client if f["origin"] == "relay")


@pytest.mark.parametrize("source", CODECS)
def test_how_the_upstream_was_chunked_changes_only_the_chunk_marks(source: str) -> None:
    """A third of the scenarios per source, in turn: every scenario is cut up for three sources."""
    rng = random.Random(source)
    for scenario in SCENARIOS[CODECS.index(source) % 3 :: 3]:
        body = golden(scenario, source)
        whole = view(captured(source, "ai-sdk", body))
        sizes = [rng.randint(1, 120) for _ in range(len(body))]
        cut = view(captured(source, "ai-sdk", body, sizes))
        for side in ("upstream", "client"):
            strip = [{k: v for k, v in f.items() if k not in ("chunks", "t_ms")} for f in whole[side]["frames"]]
            assert strip == [{k: v for k, v in f.items() if k not in ("chunks", "t_ms")} for f in cut[side]["frames"]]
        assert whole["assembled"] == cut["assembled"]


def test_a_frame_split_over_chunks_names_its_chunks() -> None:
    body = golden("plain-text", "nest")
    first = split_frames(body, "sse")[1]
    seen = view(captured("nest", "ai-sdk", body, [first[0] + 5, 10]))
    assert seen["upstream"]["frames"][1]["chunks"] == [0, 2]
    assert len(seen["upstream"]["chunks"]) == 3


def test_a_client_fidelity_stream_is_linked_frame_by_frame_too() -> None:
    """The inspector re-translates at the stream's own fidelity: every client frame of a
    ``client`` route links to the upstream frame it came from (none looks invented)."""
    for fidelity in ("exact", "client"):
        for scenario in ("suggestions-status", "interleaved-messages"):  # client data parts of their own
            seen = view(captured("agentkit", "ai-sdk", golden(scenario, "agentkit"), fidelity=fidelity))
            frames = seen["client"]["frames"]
            assert [f["raw"] for f in frames if f["origin"] == "proxy"] == [], (fidelity, scenario)
            assert bool([f for f in frames if "carrier" in f["marks"]]) == (fidelity == "exact")


def test_marks_say_what_each_frame_is() -> None:
    seen = view(captured("nest", "ai-sdk", golden("approval", "nest")))
    client = seen["client"]["frames"]
    carriers = [f for f in client if "carrier" in f["marks"]]
    assert carriers and all(f["raw"].startswith('data: {"type":"data-') for f in carriers)
    assert [f["kinds"] for f in client if "terminal" in f["marks"]] == [["terminal"]]
    assert seen["assembled"]["text"].startswith("I'm sorry it arrived damaged.")
    assert "terminal" in seen["kinds"] and "text" in seen["kinds"]


def test_an_unknown_kind_is_marked_as_a_data_part_on_both_sides() -> None:
    body = b'data: {"kind":"weather","temp":21}\n\n' + golden("plain-text", "nest")
    seen = view(captured("nest", "ai-sdk", body))
    first = seen["upstream"]["frames"][0]
    assert "data-part" in first["marks"]
    assert any("data-part" in seen["client"]["frames"][i]["marks"] for i in first["links"])


def test_text_is_assembled_as_the_client_shows_it() -> None:
    for target in ("ai-sdk", "ag-ui", "oma"):
        seen = view(captured("agentkit", target, golden("plain-text", "agentkit")))
        expected = [e for e in seen["upstream"]["frames"] for e in e["events"] if e["type"] == "text"]
        assert seen["assembled"]["text"] == "".join(e["text"] for e in expected)


def test_the_timeline_counts_text_deltas_and_names_the_longest_gaps() -> None:
    body = golden("plain-text", "agentkit")
    seen = view(captured("agentkit", "nest", body, [len(f) for f in _cut(body)], pause_at=3))
    line = seen["timeline"]
    deltas = [f["t_ms"] for f in seen["upstream"]["frames"] for e in f["events"] if e["type"] == "text"]
    assert sum(b["text"] for b in line["buckets"]) == len(deltas) > 1
    assert line["gaps"][0] == {"at_ms": 30, "ms": 500}  # chunk 4 came 500 ms after chunk 3 (at 30 ms)
    assert all(g["ms"] == 10 for g in line["gaps"][1:])
    assert line["deltas_per_s"] == round((len(deltas) - 1) / ((deltas[-1] - deltas[0]) / 1000), 1)


def _cut(body: bytes) -> list[bytes]:
    return [body[a:b] for a, b in split_frames(body, "sse")]


# -- secrets, the ring, the capture's bounds ------------------------------------------------


def test_secrets_are_redacted_everywhere_they_would_show() -> None:
    secret = 'tok"en-\\with-escapes-1234'
    body = golden("plain-text", "nest").replace(b"Hello", json.dumps(secret)[1:-1].encode(), 1)
    capture = captured("nest", "ai-sdk", body, secrets=(secret,))
    whole = analyse(capture)
    assert json.dumps(secret)[1:-1].encode() not in whole and secret.encode() not in whole
    assert REDACTED.encode() in whole
    for side in ("upstream", "client"):
        data, _ = transcript(capture, side)
        assert json.dumps(secret)[1:-1].encode() not in data


def test_secret_values_are_the_route_credentials_and_the_client_credential_headers() -> None:
    found = secret_values(
        {"Authorization": "Bearer up-secret-1"},
        {"Cookie": "sid=abc123; theme=dark", "X-Api-Key": "k-777", "Accept": "text/event-stream"},
    )
    assert {"Bearer up-secret-1", "up-secret-1", "abc123", "dark", "k-777"} <= set(found)
    assert "text/event-stream" not in found
    assert list(found) == sorted(found, key=len, reverse=True)  # a whole before its parts


def test_the_ring_keeps_the_newest_streams_and_never_drops_a_live_one_first() -> None:
    inspector = Inspector(keep=3)
    facts = StreamFacts("r", "/", "nest", "ai-sdk", "sse")
    live = inspector.open("live", facts)
    for i in range(5):
        inspector.open(f"done-{i}", facts).end("completed", 0, "sse")
    assert list(inspector.streams) == ["live", "done-3", "done-4"]
    assert live.live
    assert [s["id"] for s in inspector.summaries()] == ["done-4", "done-3", "live"]


def test_a_stream_over_the_limit_is_kept_truncated_and_still_counted() -> None:
    capture = StreamCapture("s", StreamFacts("r", "/", "nest", "ai-sdk", "sse"), limit=100)
    for _ in range(10):
        capture.upstream_chunk(b"x" * 30)
    summary = capture.summary()
    assert summary["truncated"] and summary["bytes_in"] == 300
    assert summary["chunks_in"] == 4  # kept while under the limit: at most one chunk over it


def test_without_a_token_only_loopback_addresses_may_look() -> None:
    def request(peer: tuple[str, int], query: str = "", headers: dict[str, str] | None = None) -> Any:
        transport = mock.Mock()
        transport.get_extra_info.side_effect = lambda name, default=None: peer if name == "peername" else default
        return make_mocked_request("GET", "/_inspect/" + query, headers=headers, transport=transport)

    assert allowed(request(("127.0.0.1", 5)), None)
    assert allowed(request(("::1", 5)), None)
    assert not allowed(request(("10.1.2.3", 5)), None)
    assert not allowed(request(("192.168.0.9", 5)), None)
    assert not allowed(request(("127.0.0.1", 5)), "s3cret-token")  # a token is asked of everyone
    assert allowed(request(("10.1.2.3", 5), "?token=s3cret-token"), "s3cret-token")
    assert allowed(request(("10.1.2.3", 5), headers={"X-Inspect-Token": "s3cret-token"}), "s3cret-token")
    assert not allowed(request(("10.1.2.3", 5), "?token=wrong"), "s3cret-token")


# -- transcripts the CLI reads ----------------------------------------------------------------


@pytest.mark.parametrize("side", ["upstream", "client"])
def test_either_side_downloads_as_a_transcript_convert_validate_and_replay_read(tmp_path: Path, side: str) -> None:
    capture = captured("nest", "ai-sdk", golden("approval", "nest"))
    data, name = transcript(capture, side)
    path = tmp_path / name
    path.write_bytes(data)
    protocol = "nest" if side == "upstream" else "ai-sdk"
    validated = invoke("validate", path)
    assert validated.exit_code == 0, validated.output
    converted = invoke("convert", path, "--to", "agentkit")
    assert converted.exit_code == 0, converted.output
    translator = Translator(protocol, "agentkit")
    side_body = data.split(b"\n\n", 1)[1]
    assert converted.stdout_bytes == translator.feed(side_body) + translator.close()
    replayed = invoke("replay", path)
    assert replayed.exit_code == 0 and replayed.stdout_bytes == data.split(b"\n\n", 1)[1]


# -- the proxy -------------------------------------------------------------------------------


async def test_the_inspector_is_off_by_default_and_costs_no_capture(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend()
    server = await aiohttp_server(backend.app())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", "ai-sdk"))
    state = client.app[STATE]
    assert state.inspector is None
    await chat(client)
    assert (await client.get("/_inspect/")).status == 404
    assert (await client.get("/_inspect/api/streams")).status == 404


async def test_a_proxied_stream_is_captured_byte_for_byte_with_its_translation(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend)
    body = await chat(client)
    listed = await (await client.get("/_inspect/api/streams")).json()
    (summary,) = listed["streams"]
    assert summary["status"] == "completed" and summary["terminal"] == "succeeded" and not summary["live"]
    assert summary["source"] == "nest" and summary["target"] == "ai-sdk" and summary["path"] == "/api/chat"
    assert summary["bytes_out"] == len(body)
    assert summary["bytes_in"] == sum(map(len, backend.answers[0]))
    assert summary["events_in"] > 0 and summary["ttfb_ms"] is not None
    seen = await (await client.get(f"/_inspect/api/streams/{summary['id']}")).json()
    up, out = seen["upstream"]["frames"], seen["client"]["frames"]
    assert len(up) == len(backend.answers[0])
    assert "".join(f["raw"] for f in out).encode() == body.replace(UPSTREAM_SECRET.encode(), REDACTED.encode())
    assert out[0]["marks"] == ["heartbeat"]  # the proxy's first write, before any upstream byte
    assert {f["origin"] for f in out} <= {"relay", "end", "proxy"}
    assert all(f["links"] for f in out if f["origin"] == "relay")
    assert [f["wire"] for f in out[-2:]] == ["finish", "[DONE]"]


async def test_no_secret_reaches_the_inspector_page_or_its_data(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend)
    body = await chat(client)
    assert UPSTREAM_SECRET.encode() in body  # the backend echoed its credential: the client got it
    (summary,) = (await (await client.get("/_inspect/api/streams")).json())["streams"]
    urls = ["/_inspect/", "/_inspect/static/app.js", "/_inspect/api/streams", f"/_inspect/api/streams/{summary['id']}"]
    urls += [f"/_inspect/api/streams/{summary['id']}/{side}" for side in ("upstream", "client")]
    for url in urls:
        data = await (await client.get(url)).read()
        assert UPSTREAM_SECRET.encode() not in data and CLIENT_SECRET.encode() not in data, url
    detail = await (await client.get(f"/_inspect/api/streams/{summary['id']}")).read()
    assert REDACTED.encode() in detail


async def test_a_broken_upstream_shows_as_a_fault_with_the_proxys_terminal(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend(break_after=5)
    backend.release.set()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend)
    await chat(client)
    (summary,) = (await (await client.get("/_inspect/api/streams")).json())["streams"]
    assert summary["faults"] == ["upstream_disconnected"] and summary["status"] == "upstream_disconnected"
    assert summary["terminal"] is None  # the upstream sent none: the client's is the proxy's
    seen = await (await client.get(f"/_inspect/api/streams/{summary['id']}")).json()
    assert [f["code"] for f in seen["faults"]] == ["upstream_disconnected"]
    faulty = [f for f in seen["client"]["frames"] if "fault" in f["marks"]]
    assert faulty and all("terminal" in f["marks"] and f["origin"] == "proxy" for f in faulty)
    assert len(seen["upstream"]["frames"]) == 5


async def test_the_list_changes_live_while_a_stream_runs(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend(hold_after=3)
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend, heartbeat=0)
    inspector = client.app[STATE].inspector
    feed = await client.get("/_inspect/api/live")
    assert feed.headers["Content-Type"].startswith("text/event-stream")
    first = await feed.content.readuntil(b"\n\n")
    assert first == b"event: streams\ndata: []\n\n"
    running = asyncio.create_task(chat(client))
    await backend.reached.wait()
    notice = await _next_notice(feed)
    assert notice["live"] and notice["status"] == "live"
    while notice["events_in"] == 0:  # counted as they are decoded, not only at the end
        notice = await _next_notice(feed)
    assert notice["live"]
    notices = inspector.listen()
    stream = inspector.get(notice["id"])
    await until(lambda: stream.bytes_in == sum(map(len, backend.answers[0][:3])), notices)
    backend.release.set()
    await running
    while (notice := await _next_notice(feed))["status"] != "completed":
        pass
    assert notice["bytes_in"] == sum(map(len, backend.answers[0])) and not notice["live"]
    feed.close()


async def _next_notice(feed: aiohttp.ClientResponse) -> dict[str, Any]:
    async with asyncio.timeout(PATIENCE):
        frame = await feed.content.readuntil(b"\n\n")
        while frame.startswith(b":"):
            frame = await feed.content.readuntil(b"\n\n")
    event, data = frame.split(b"\n", 1)
    assert event == b"event: stream"
    return json.loads(data.removeprefix(b"data: "))


async def test_heartbeats_show_as_heartbeats(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend(hold_after=2)
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend, heartbeat=0.02)
    inspector = client.app[STATE].inspector
    notices = inspector.listen()
    running = asyncio.create_task(chat(client))
    await backend.reached.wait()
    stream = next(iter(inspector.streams.values()))
    await until(lambda: any(o == "heartbeat" for _, _, o in stream.client), notices)
    backend.release.set()
    body = await running
    seen = await (await client.get(f"/_inspect/api/streams/{stream.id}")).json()
    beats = [f for f in seen["client"]["frames"] if "heartbeat" in f["marks"]]
    assert len(beats) == body.count(b": ping\n\n") >= 2
    assert all(f["wire"] == "heartbeat" and f["origin"] == "proxy" for f in beats)


async def test_with_a_token_the_inspector_asks_for_it(aiohttp_server, aiohttp_client) -> None:
    client = await inspected_proxy(aiohttp_server, aiohttp_client, NestBackend(), inspect_token="tok-42-abcdef")
    assert (await client.get("/_inspect/api/streams")).status == 403
    assert (await client.get("/_inspect/api/streams?token=nope")).status == 403
    assert (await client.get("/_inspect/api/streams?token=tok-42-abcdef")).status == 200
    page = await client.get("/_inspect/", headers={"X-Inspect-Token": "tok-42-abcdef"})
    assert page.status == 200 and page.headers["Referrer-Policy"] == "no-referrer"
    assert "script-src" not in page.headers["Content-Security-Policy"]  # default-src 'self': no inline script


async def test_the_page_and_its_assets_are_served_from_the_package(aiohttp_server, aiohttp_client) -> None:
    client = await inspected_proxy(aiohttp_server, aiohttp_client, NestBackend())
    page = await (await client.get("/_inspect/")).text()
    assert 'src="static/app.js"' in page and 'href="static/app.css"' in page
    assert "http://" not in page and "https://" not in page  # no CDN
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        resp = await client.get(f"/_inspect/static/{name}")
        assert resp.status == 200 and resp.headers["Content-Type"].startswith(kind)
    assert (await client.get("/_inspect/static/../capture.py")).status == 404
    assert (await client.get("/_inspect/api/streams/nope")).status == 404


# -- streambridge inspect FILE ------------------------------------------------------------------


def test_inspect_serves_a_recording_translated_to_another_protocol() -> None:
    proc = Proc("inspect", GOLDEN / "approval" / "nest.sse", "--to", "ai-sdk", "--port", "0")
    try:
        url = proc.wait_for(r"inspecting .* at (http://\S+/_inspect/)#recording").group(1)
        asyncio.run(_check_recording(url))
    finally:
        proc.stop()


async def _check_recording(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as page:
            assert page.status == 200 and "streambridge inspector" in await page.text()
        async with session.get(url + "api/streams/recording") as resp:
            seen = await resp.json()
    body = golden("approval", "nest")
    assert len(seen["upstream"]["frames"]) == len(split_frames(body, "sse"))
    translator = Translator("nest", "ai-sdk")
    assert "".join(f["raw"] for f in seen["client"]["frames"]).encode() == translator.feed(body) + translator.close()
    assert seen["summary"]["recorded"] and seen["timeline"]["recorded"]


def test_inspect_names_a_file_it_cannot_read() -> None:
    result = invoke("inspect", "no-such-file.sse")
    assert result.exit_code == 2
    assert "no-such-file.sse" in result.output


# -- configuration and the serve command --------------------------------------------------------


def test_the_inspector_settings_come_from_flags_the_environment_and_routes_toml(tmp_path: Path) -> None:
    environ = {"STREAMBRIDGE_INSPECT_TOKEN": "tok-from-env-123", "STREAMBRIDGE_INSPECT_STREAM_BYTES": "4096"}
    config = proxy_config("http://127.0.0.1:9/agent", "nest", "ai-sdk", environ=environ)
    assert not config.inspect  # off unless asked
    assert config.inspect_token == "tok-from-env-123" and config.inspect_stream_bytes == 4096
    assert "tok-from-env-123" not in repr(config)
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[server]\ninspect = true\ninspect_streams = 7\n[[routes]]\npath = "/"\n'
        'upstream = "http://127.0.0.1:9/agent"\nfrom = "nest"\nto = "ai-sdk"\n'
    )
    config = build_config(config_file=routes, environ={})
    assert config.inspect and config.inspect_streams == 7 and config.inspect_token is None
    assert build_config(config_file=routes, inspect_streams=3, environ={}).inspect_streams == 3


def test_serve_inspect_announces_the_page_and_a_shutdown_ends_its_live_feed() -> None:
    proc = Proc(
        "serve",
        "--upstream",
        "http://127.0.0.1:9/agent",
        "--from",
        "nest",
        "--to",
        "ai-sdk",
        "--port",
        "0",
        "--inspect",
    )
    try:
        url = proc.wait_for(r"inspector url=(http://127\.0\.0\.1:\d+/_inspect/) access=loopback")[1]
        proc.wait_for(r"listening")
        asyncio.run(_page_answers_then_shutdown(url, proc))
        assert proc.finish() == 0, proc.lines
    finally:
        proc.stop()


async def _page_answers_then_shutdown(url: str, proc: Proc) -> None:
    """The page answers; a page's live feed is open when SIGTERM comes, and it ends (the
    proxy does not wait out its shutdown timeout for it)."""
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as page:
            assert page.status == 200 and "streambridge inspector" in await page.text()
        async with session.get(url + "api/live") as feed:
            assert await feed.content.readuntil(b"\n\n") == b"event: streams\ndata: []\n\n"
            proc.popen.send_signal(signal.SIGTERM)
            async with asyncio.timeout(PATIENCE):
                assert await feed.content.read() == b""  # the feed ends: the server closed it


def test_the_ring_holds_at_most_its_byte_budget_of_finished_streams() -> None:
    inspector = Inspector(keep=10, stream_bytes=100, total_bytes=250)
    facts = StreamFacts("r", "/", "nest", "ai-sdk", "sse")
    live = inspector.open("live", facts)
    live.upstream_chunk(b"x" * 90)
    for i in range(4):
        done = inspector.open(f"done-{i}", facts)
        done.upstream_chunk(b"y" * 60)
        done.end("completed", 0, "sse")
    assert list(inspector.streams) == ["live", "done-2", "done-3"]  # 90 + 60 + 60 <= 250
    assert sum(c.kept for c in inspector.streams.values()) <= 250


async def test_a_websocket_stream_shows_one_client_frame_per_message(aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend)
    messages = []
    async with connect(ws_url(client, "/ws"), proxy=None) as ws:
        await ws.send(json.dumps(CHAT))
        messages = [message async for message in ws]
    (summary,) = (await (await client.get("/_inspect/api/streams")).json())["streams"]
    assert summary["transport"] == "ws" and summary["status"] == "completed"
    seen = await (await client.get(f"/_inspect/api/streams/{summary['id']}")).json()
    assert seen["facts"]["client_framing"] == "ndjson"
    shown = [f["raw"].rstrip("\n") for f in seen["client"]["frames"]]
    assert shown == [m.replace(UPSTREAM_SECRET, REDACTED) for m in messages]
    assert len(seen["upstream"]["frames"]) == len(backend.answers[0])


async def test_a_malformed_upstream_frame_is_one_fault_naming_the_frame(aiohttp_server, aiohttp_client) -> None:
    parts = [*ANSWER_FRAMES[:3], b"data: {not json\n\n", *ANSWER_FRAMES[3:]]

    async def handler(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, parts, status=201)

    server = await aiohttp_server(stream_app(handler, "/agent/chat"))
    config = replace(proxy_config(url_of(server, "/agent"), "nest", "ai-sdk"), inspect=True)
    client = await start_proxy(aiohttp_client, config)
    await chat(client)
    (summary,) = (await (await client.get("/_inspect/api/streams")).json())["streams"]
    seen = await (await client.get(f"/_inspect/api/streams/{summary['id']}")).json()
    (fault,) = seen["faults"]
    assert summary["faults"] == [fault["code"]] == [summary["status"]]
    assert "frame 4" in fault["detail"] and "expected" in fault["detail"]
    bad = seen["upstream"]["frames"][3]
    assert bad["raw"] == "data: {not json\n\n" and {"malformed", "fault"} <= set(bad["marks"])


async def test_a_finished_stream_is_worked_out_once(aiohttp_server, aiohttp_client) -> None:
    client = await inspected_proxy(aiohttp_server, aiohttp_client, NestBackend())
    await chat(client)
    (stream,) = client.app[STATE].inspector.streams.values()
    assert stream.finished_view is None
    first = await (await client.get(f"/_inspect/api/streams/{stream.id}")).read()
    assert stream.finished_view == first
    with mock.patch("streambridge.inspector.web.analyse", side_effect=AssertionError("worked out again")):
        assert await (await client.get(f"/_inspect/api/streams/{stream.id}")).read() == first

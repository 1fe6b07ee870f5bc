"""Everything the proxy and ``replay --serve`` know of a protocol's HTTP comes from its surface:
``runlines`` (tests/protocols/runlines, registered here and edited nowhere else) names its runs in
headers of its own, lets browser clients read one more, and says decisions in a body of its own;
the proxy serves all of it, and reads an upstream's run id only from the header its protocol names.
The built-in protocols' control bytes are forwarded as they were."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from aiohttp import web

from streambridge import codecs
from streambridge.bridge.cors import Cors
from streambridge.bridge.state import STATE
from streambridge.cli import replay_server as replay
from streambridge.events import TextDelta

from .corpus import ROOT, convert, golden
from .protocols import runlines
from .proxy_support import (
    Upstream,
    decode,
    proxy_config,
    read_until,
    start_proxy,
    stream_app,
    url_of,
    write_stream,
)
from .test_proxy_ops import golden_upstream

NEW = "runlines"
ORIGIN = "https://app.example"


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    codecs.register(runlines.CODEC)
    try:
        yield
    finally:
        codecs.unregister(NEW)


# -- run ids and the headers a browser reads -------------------------------------------------


async def test_a_client_protocols_run_headers_are_its_own_and_readable_by_its_browser_clients(
    aiohttp_server, aiohttp_client
) -> None:
    server = await aiohttp_server(golden_upstream(Upstream()))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", NEW, cors_origins=ORIGIN)
    )
    resp = await client.post("/", json={"prompt": "hi"}, headers={"Origin": ORIGIN})
    body = await resp.read()
    assert resp.status == 200
    run_id = resp.headers["X-Lines-Run"]
    assert resp.headers["X-Lines-Thread"].startswith("thr-")  # minted: its clients are told one
    assert resp.headers["Access-Control-Expose-Headers"] == (
        "X-Lines-Run, X-Lines-Thread, X-Lines-Trace, X-Streambridge-Run-Id"
    )
    assert not [name for name in resp.headers if name.lower().startswith("x-agent")]
    assert [e.text for e in decode(NEW, body) if type(e) is TextDelta] == [
        e.text for e in decode("agentkit", golden("plain-text", "agentkit")) if type(e) is TextDelta
    ]
    again = await client.get(f"/lines/{run_id}/stream")  # its re-attach route, from its surface
    assert again.status == 200 and again.headers["X-Lines-Run"] == run_id
    assert [e.text for e in decode(NEW, await again.read()) if type(e) is TextDelta] == [
        e.text for e in decode(NEW, body) if type(e) is TextDelta
    ]


async def test_an_upstreams_run_id_is_read_from_its_own_protocols_header(aiohttp_server, aiohttp_client) -> None:
    """A cancelled run is stopped upstream by the id in ``X-Lines-Run``, not by a nest header the
    upstream happens to send too."""
    upstream = Upstream()
    stopped: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def chat(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        headers = {"X-Lines-Run": "up-7", "X-Agent-Run-Id": "not-this-one"}
        parts = [b'{"line":"Hello"}\n', b'{"end":"succeeded"}\n']
        return await write_stream(
            request, parts, headers=headers, content_type="application/x-ndjson", upstream=upstream, hold_after=1
        )

    async def stop(request: web.Request) -> web.Response:
        stopped.set_result(request.path)
        return web.json_response({"stopped": True})

    app = stream_app(chat, "/up")
    app.router.add_post("/up/stop/{run_id}", stop)
    server = await aiohttp_server(app)
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), NEW, "nest"))
    resp = await client.post("/agent/chat", json={"message": "hi"})
    await read_until(resp.content, b"Hello", bytearray())
    run_id = resp.headers["X-Agent-Run-Id"]  # the proxy's run, told to its nest client
    cancel = await client.post(f"/agent/chat/{run_id}/cancel")
    assert cancel.status == 201
    assert await asyncio.wait_for(stopped, 10) == "/up/stop/up-7"
    assert upstream.last_json == {"prompt": "hi"}


async def test_an_upstream_of_a_protocol_without_runs_has_no_run_id_whatever_it_sends(
    aiohttp_server, aiohttp_client
) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=2, headers={"X-Agent-Run-Id": "up-1"}))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    resp = await client.post("/agent/chat", json={"message": "hi"})
    await asyncio.wait_for(upstream.reached.wait(), 10)
    (relay,) = client.server.app[STATE].live.values()
    assert relay.upstream is not None and relay.upstream.run_id is None
    upstream.release.set()
    assert (await resp.read()).endswith(b"event: done\ndata: {}\n\n")


# -- decisions -------------------------------------------------------------------------------


def control_upstream(upstream: Upstream, path: str) -> web.Application:
    """An upstream whose control route records the exact bytes it is sent."""

    async def decide(request: web.Request) -> web.Response:
        upstream.controls.append((request.match_info["decision"], {"raw": await request.read()}, {}))
        return web.json_response({"ok": True})

    app = golden_upstream(upstream)
    app.router.add_post(path, decide)
    return app


async def test_a_decision_in_a_client_protocols_own_body_reaches_a_nest_upstream_in_nests(
    aiohttp_server, aiohttp_client
) -> None:
    upstream = Upstream()
    server = await aiohttp_server(control_upstream(upstream, "/agent/tool-call/{decision}"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", NEW))
    resp = await client.post("/decide/reject", json={"call": "c1", "note": "not now"})
    assert resp.status == 202 and await resp.json() == {"ok": True}
    assert upstream.controls[0][:2] == ("reject", {"raw": b'{"toolCallId":"c1","reason":"not now"}'})
    bad = await client.post("/decide/approve", json={"toolCallId": "c1"})  # another protocol's body
    assert bad.status == 400 and "runlines decision" in (await bad.json())["message"]
    assert len(upstream.controls) == 1


async def test_a_nest_clients_decision_reaches_an_upstream_in_its_protocols_own_body(
    aiohttp_server, aiohttp_client
) -> None:
    upstream = Upstream()
    server = await aiohttp_server(control_upstream(upstream, "/up/tool-call/{decision}"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), NEW, "nest"))
    resp = await client.post("/agent/tool-call/reject", json={"toolCallId": "c1", "reason": "no"})
    assert resp.status == 201
    approve = await client.post("/agent/tool-call/approve", json={"toolCallId": "c2"})
    assert approve.status == 201
    assert [control[:2] for control in upstream.controls] == [
        ("reject", {"raw": b'{"call":"c1","approved":false,"note":"no"}'}),
        ("approve", {"raw": b'{"call":"c2","approved":true}'}),
    ]


@pytest.mark.parametrize(("source", "target"), [("agentkit", "nest"), ("nest", "ai-sdk"), ("oma", "agentkit")])
async def test_a_decision_between_protocols_that_say_it_alike_is_forwarded_byte_for_byte(
    aiohttp_server, aiohttp_client, source: str, target: str
) -> None:
    upstream = Upstream()
    server = await aiohttp_server(control_upstream(upstream, "/up/tool-call/{decision}"))
    config = proxy_config(url_of(server, "/up"), source, target, control_url=url_of(server, "/up"))
    client = await start_proxy(aiohttp_client, config)
    raw = b'{"toolCallId": "c1",  "reason": "no", "extra": [1, {"kept": true}]}'
    path = "/" + codecs.get(target).http.control_path.replace("{decision}", "reject")
    resp = await client.post(path, data=raw, headers={"Content-Type": "application/json"})
    assert resp.status == codecs.get(target).http.control_status
    assert upstream.controls[0][:2] == ("reject", {"raw": raw})


# -- the CORS policy, and replay --serve -------------------------------------------------------


def test_a_cors_policy_allows_its_origins_only() -> None:
    one, listed, anyone = Cors(("https://a.example",)), Cors(("https://a.example", "https://b.example")), Cors(("*",))
    assert one.allowed("https://a.example") == "https://a.example"
    assert one.allowed("https://evil.example") is None
    assert one.allowed(None) == "https://a.example"  # a request with no Origin: the one origin allowed
    assert listed.allowed("https://b.example") == "https://b.example"
    assert listed.allowed(None) is None
    assert anyone.allowed("https://evil.example") == anyone.allowed(None) == "*"
    assert Cors(()).allowed("https://a.example") is None


async def test_replay_lets_browsers_read_the_served_protocols_headers_only(aiohttp_client, tmp_path) -> None:
    source = tmp_path / "run.ndjson"
    source.write_bytes(convert("agentkit", NEW, golden("plain-text", "agentkit")))
    playback = replay.render(replay.load_recording(source, NEW), None, None)
    client = await aiohttp_client(replay.make_replay_app([playback], cors=ORIGIN))
    resp = await client.post("/", json={"prompt": "hi"}, headers={"Origin": ORIGIN})
    await resp.read()
    assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert resp.headers["Access-Control-Expose-Headers"] == "X-Lines-Run, X-Lines-Thread, X-Lines-Trace"
    preflight = await client.options("/decide/approve", headers={"Origin": ORIGIN})
    assert preflight.status == 204 and "POST" in preflight.headers["Access-Control-Allow-Methods"]
    settled = await client.post("/decide/approve", json={"call": "c1"})
    assert settled.status == 202


def test_the_test_protocols_surface_round_trips_a_decision() -> None:
    decisions = codecs.get(NEW).http.decisions
    decision = decisions.parse(b'{"call":"c9","note":"later"}', False)
    assert (decision.call_id, decision.approved, decision.reason) == ("c9", False, "later")
    assert msgspec.json.decode(decisions.build(decision)) == {"call": "c9", "approved": False, "note": "later"}


# -- nothing of a protocol's in the proxy's code -------------------------------------------------


def _code_strings(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants and names of a module's code (docstrings left out: they may give examples)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bodies = [
        n for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    docstrings = {id(n.body[0].value) for n in bodies if n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value
        elif isinstance(node, ast.Name | ast.Attribute):
            yield node.lineno, node.id if isinstance(node, ast.Name) else node.attr


def test_the_proxy_and_replay_name_no_protocol_nor_its_headers_or_body_members() -> None:
    words = {"toolCallId"}
    for name in codecs.names():
        codec = codecs.get(name)
        words |= {codec.name, *codec.aliases, *codec.http.exposed_headers}
    word = re.compile("|".join(rf"(?<![\w-]){re.escape(w)}(?![\w-])" for w in sorted(words, key=len, reverse=True)))
    files = [
        *sorted((ROOT / "streambridge/bridge").rglob("*.py")),
        ROOT / "streambridge/cli/replay.py",
        ROOT / "streambridge/cli/replay_server.py",
    ]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}"
        for path in files
        for line, text in _code_strings(path)
        if word.search(text)
    ]
    assert found == []

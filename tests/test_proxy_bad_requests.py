"""Bad client input gets 400 naming what is wrong, never 500: deep JSON, ids that cannot go into a
header, a URL or a log (CR/LF, NUL, huge), in every client protocol and on nest's control routes."""

from __future__ import annotations

import msgspec
import pytest
from aiohttp import web

from streambridge import codecs
from streambridge.codecs.requests import MAX_JSON_DEPTH, BadRequest, check_depth

from .proxy_support import proxy_config, start_proxy, stream_app, url_of, write_stream
from .test_proxy_stream import CLIENT_PATH, REQUESTS

THREAD_FIELD = {"nest": "threadId", "agentkit": "conversationId", "oma": "conversationId"}
BAD_IDS = ["thr\r\nX-Injected: 1", "thr\x00", "t" * 200_000, ""]


def deep_body(request: dict, levels: int = 1000) -> bytes:
    """``request`` with a member nested ``levels`` deep (as raw bytes: no encoder recurses that far)."""
    return msgspec.json.encode(request)[:-1] + b',"extra":' + b"[" * levels + b"1" + b"]" * levels + b"}"


JSON = {"Content-Type": "application/json"}


def test_depth_is_counted_outside_strings_only() -> None:
    check_depth(b'{"a":"' + b"[" * 1000 + b'"}')  # brackets in a string are text
    inner = MAX_JSON_DEPTH - 1  # the object is a level too
    check_depth(('{"a":' + "[" * inner + "]" * inner + "}").encode())
    with pytest.raises(BadRequest, match="nested deeper"):
        check_depth(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))


@pytest.mark.parametrize("protocol", ["nest", "agentkit", "oma"])
@pytest.mark.parametrize("bad", BAD_IDS, ids=["crlf", "nul", "huge", "empty"])
def test_a_thread_id_that_cannot_go_into_a_header_is_refused_by_name(protocol: str, bad: str) -> None:
    body = REQUESTS[protocol]("hi")
    body[THREAD_FIELD[protocol]] = bad
    with pytest.raises(BadRequest, match=THREAD_FIELD[protocol]):
        codecs.get(protocol).http.parse_request(msgspec.json.encode(body))


def _upstream() -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, [b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'])

    return stream_app(handler, "/up")


@pytest.mark.parametrize("target", ["nest", "agentkit", "oma"])
async def test_deep_json_and_bad_ids_get_400_not_500(aiohttp_server, aiohttp_client, target: str) -> None:
    server = await aiohttp_server(_upstream())
    source = "nest" if target != "nest" else "agentkit"  # a translating route: the request is read
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), source, target))
    resp = await client.post(CLIENT_PATH[target], data=deep_body(REQUESTS[target]("hi")), headers=JSON)
    assert resp.status == 400 and "nested deeper" in (await resp.json())["message"]
    for bad in BAD_IDS:
        resp = await client.post(CLIENT_PATH[target], json=REQUESTS[target]("hi") | {THREAD_FIELD[target]: bad})
        assert resp.status == 400, bad[:20]
        assert THREAD_FIELD[target] in (await resp.json())["message"]
        assert "X-Injected" not in resp.headers


async def test_nest_control_routes_refuse_bad_ids_and_deep_json(aiohttp_server, aiohttp_client) -> None:
    server = await aiohttp_server(_upstream())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    resp = await client.post("/agent/tool-call/approve", json={"toolCallId": "c\r\n1"})
    assert resp.status == 400 and "toolCallId" in (await resp.json())["message"]
    resp = await client.post("/agent/tool-call/approve", data=deep_body({"toolCallId": "c1"}), headers=JSON)
    assert resp.status == 400 and "nested deeper" in (await resp.json())["message"]
    resp = await client.get("/agent/chat/" + "r" * 5000 + "/stream")
    assert resp.status == 400 and "runId" in (await resp.json())["message"]


async def test_a_passthrough_route_refuses_deep_json_and_never_puts_a_bad_id_in_a_header(
    aiohttp_server, aiohttp_client
) -> None:
    server = await aiohttp_server(_upstream())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    resp = await client.post("/", data=deep_body(REQUESTS["agentkit"]("hi")), headers=JSON)
    assert resp.status == 400 and "nested deeper" in (await resp.json())["message"]
    resp = await client.post("/", json=REQUESTS["agentkit"]("hi") | {"conversationId": "c\r\nX-Injected: 1"})
    await resp.read()
    assert resp.status < 500 and "X-Injected" not in resp.headers

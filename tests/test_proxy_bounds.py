"""Resources under faults (issue 27, points 11-14): a run's size and duration are bounded, a
run whose client is gone reads its upstream no faster than its log takes it, a hung Redis
does not hold up new streams, a client that never reads is dropped wherever it waits, and an
NDJSON upstream cut mid-line is ``truncated``."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web

from .proxy_support import Upstream, decode, proxy_config, start_proxy, stream_app, url_of, write_stream
from .test_proxy_faults import assert_fault

OMA_TEXT = b'{"type":"text","data":"Hello"}\n'
AGENTKIT_START = b'{"type":"turn_start","turnId":"t1","messageId":"m1"}\n'
AGENTKIT_TEXT = b'{"type":"text_delta","messageId":"m1","text":"Hello"}\n'


@pytest.fixture(autouse=True)
def _logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streambridge")


# -- 14: an NDJSON upstream cut mid-line --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        ("oma", [OMA_TEXT, b'{"type":"text","da']),
        ("agentkit", [AGENTKIT_START, AGENTKIT_TEXT, b'{"type":"text_delta","messageId":"m1","te']),
    ],
)
async def test_an_ndjson_upstream_that_ends_mid_line_is_truncated(
    aiohttp_server, aiohttp_client, caplog, source: str, parts: list[bytes]
) -> None:
    upstream = Upstream()

    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(request, parts, content_type="application/x-ndjson", upstream=upstream)

    server = await aiohttp_server(stream_app(handler, "/up"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), source, "oma"))
    body = await (await client.post("/", json={"prompt": "hi"})).read()
    assert [e.text for e in decode("oma", body) if type(e).__name__ == "TextDelta"] == ["Hello"]
    await assert_fault(client, caplog, body, "oma", "truncated")

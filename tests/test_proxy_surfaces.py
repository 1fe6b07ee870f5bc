"""Request mapping between the protocols' HTTP surfaces, upstream header rules, upstream URLs,
and the fault → terminal table (sans-IO parts of the proxy)."""

from __future__ import annotations

import email.utils

import msgspec
import pytest

from streambridge import codecs
from streambridge.bridge.faults import FAULTS, fault_for_status, retry_after_ms, terminal_for
from streambridge.bridge.surfaces import upstream_headers
from streambridge.codecs.requests import BadRequest, ChatRequest
from streambridge.events import RunStart


def parse_request(protocol: str, body: bytes) -> ChatRequest:
    return codecs.get(protocol).http.parse_request(body)


def build_request(protocol: str, req: ChatRequest) -> bytes:
    return codecs.get(protocol).http.build_request(req)


def chat_url(protocol: str, upstream: str) -> str:
    return codecs.get(protocol).http.upstream_chat_url(upstream)


def control_url(protocol: str, upstream: str, configured: str | None, decision: str) -> str | None:
    return codecs.get(protocol).http.control_url(upstream, configured, decision)


def cancel_url(protocol: str, upstream: str, run_id: str | None) -> str | None:
    return codecs.get(protocol).http.cancel_url(upstream, run_id)


def translate_request(source_protocol: str, target_protocol: str, body: dict) -> dict:
    """A client request of ``source_protocol`` as an upstream of ``target_protocol`` receives it."""
    return msgspec.json.decode(
        build_request(target_protocol, parse_request(source_protocol, msgspec.json.encode(body)))
    )


def test_nest_chat_to_agentkit_turn() -> None:
    nest = {
        "agent": "support",
        "threadId": "thr-existing",
        "pageContext": {"kind": "orders"},
        "message": "Weather in Paris?",
        "attachments": [{"mediaId": "m1", "url": "https://cdn/x.png", "contentType": "image/png", "name": "x.png"}],
    }
    assert translate_request("nest", "agentkit", nest) == {
        "text": "Weather in Paris?",
        "history": [],
        "grounding": {"kind": "orders"},
        "attachments": [{"id": "m1", "name": "x.png", "mediaType": "image/png", "url": "https://cdn/x.png"}],
        "conversationId": "thr-existing",
    }


def test_agentkit_turn_to_nest_chat_drops_history_and_inline_attachments() -> None:
    turn = {
        "text": "And tomorrow?",
        "conversationId": "c-7",
        "grounding": {"tenant": "t1"},
        "history": [{"id": "h1", "role": "user", "authorId": "u", "text": "Weather?", "createdAt": 1}],
        "attachments": [
            {"id": "a1", "name": "n.txt", "mediaType": "text/plain", "base64": "aGk="},
            {"id": "a2", "name": "p.pdf", "mediaType": "application/pdf", "url": "https://cdn/p.pdf", "sizeBytes": 9},
        ],
    }
    assert translate_request("agentkit", "nest", turn) == {
        "message": "And tomorrow?",
        "threadId": "c-7",
        "attachments": [
            {"mediaId": "a2", "url": "https://cdn/p.pdf", "contentType": "application/pdf", "name": "p.pdf"}
        ],
        "pageContext": {"tenant": "t1"},
    }


def test_agentkit_turn_to_oma_keeps_history_and_back() -> None:
    turn = {
        "text": "And tomorrow?",
        "conversationId": "c-7",
        "history": [
            {"id": "h1", "role": "user", "authorId": "u", "text": "Weather?", "createdAt": 1},
            {"id": "h2", "role": "assistant", "authorId": "bot", "text": "Sunny.", "createdAt": 2},
        ],
    }
    oma = translate_request("agentkit", "oma", turn)
    assert oma == {
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "conversationId": "c-7",
    }
    back = translate_request("oma", "agentkit", oma)
    assert back["text"] == "And tomorrow?" and back["conversationId"] == "c-7"
    assert [(m["role"], m["text"]) for m in back["history"]] == [("user", "Weather?"), ("assistant", "Sunny.")]


def test_agentfootprint_invoke_requests() -> None:
    req = parse_request("agentfootprint", b'{"input": "Chart Q3", "sessionId": "sess_41", "decision": {"ok": true}}')
    assert (req.text, req.thread_id) == ("Chart Q3", "sess_41")
    assert translate_request("agentfootprint", "nest", {"input": "hi", "sessionId": "s1"}) == {
        "message": "hi",
        "threadId": "s1",
    }
    assert translate_request("nest", "agentfootprint", {"message": "hi", "threadId": "t1"}) == {
        "input": "hi",
        "sessionId": "t1",
    }
    assert chat_url("agentfootprint", "http://h:8080") == "http://h:8080/invoke"
    assert chat_url("agentfootprint", "http://h/agents/a1/invoke") == "http://h/agents/a1/invoke"
    with pytest.raises(BadRequest, match="missing required field `input`"):
        parse_request("agentfootprint", b'{"sessionId": "s"}')


def test_oma_request_forms() -> None:
    assert parse_request("oma", b'{"prompt": "hi", "agent": "a1"}').text == "hi"
    blocks = b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]}'
    assert parse_request("oma", blocks).text == "ab"
    assert translate_request("oma", "nest", {"prompt": "hi", "agent": "a1"}) == {"message": "hi", "agent": "a1"}


@pytest.mark.parametrize(
    ("protocol", "body", "message"),
    [
        ("nest", b'{"threadId": "t"}', "missing required field `message`"),
        ("nest", b'{"message": "x", "regenerate": true}', "regenerate requires an existing threadId"),
        ("agentkit", b"[1, 2]", "invalid AgentTurn"),
        ("oma", b'{"messages": [{"role": "assistant", "content": "x"}]}', "messages ending with a user message"),
        ("oma", b"not json", "not JSON"),
    ],
)
def test_bad_requests(protocol: str, body: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_request(protocol, body)


def test_upstream_headers() -> None:
    client = [
        ("Connection", "keep-alive, X-Hop"),
        ("X-Hop", "1"),
        ("Upgrade", "h2c"),
        ("Transfer-Encoding", "chunked"),
        ("Host", "proxy"),
        ("Content-Length", "3"),
        ("Authorization", "Bearer c"),
        ("Cookie", "a=1"),
        ("x-actor-id", "u9"),
        ("X-Api-Key", "client"),
        ("Accept-Encoding", "gzip"),
    ]
    out = upstream_headers(client, {"X-Api-Key": "route"}, accept="text/event-stream", forward_auth=False)
    assert dict(out) == {  # x-actor-id is not on the allow-list and the route does not name it
        "X-Api-Key": "route",
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Accept-Encoding": "identity",
    }
    out = upstream_headers(
        client, {}, accept="text/event-stream", forward_auth=False, forward=["X-Actor-Id", "x-api-key"]
    )
    assert out["x-actor-id"] == "u9" and "X-Api-Key" not in out  # a named credential still needs forward_auth
    out = upstream_headers(client, {}, accept="application/x-ndjson", forward_auth=True, forward=["x-api-key"])
    assert out["Authorization"] == "Bearer c" and out["Cookie"] == "a=1" and out["X-Api-Key"] == "client"


def test_upstream_urls() -> None:
    assert chat_url("nest", "http://h:3000/agent") == "http://h:3000/agent/chat"
    assert chat_url("nest", "http://h:3000/agent/chat") == "http://h:3000/agent/chat"
    assert chat_url("agentkit", "http://h/turn?x=1") == "http://h/turn?x=1"
    assert control_url("nest", "http://h/agent/", None, "approve") == "http://h/agent/tool-call/approve"
    assert control_url("agentkit", "http://h/turn", None, "reject") == "http://h/turn/tool-call/reject"
    assert control_url("oma", "ws://h/s", None, "approve") is None
    assert control_url("oma", "ws://h/s", "http://h/ctl", "approve") == "http://h/ctl/tool-call/approve"
    assert cancel_url("nest", "http://h/agent", "r/1") == "http://h/agent/chat/r%2F1/cancel"
    assert cancel_url("agentkit", "http://h/turn", "r1") is None
    assert cancel_url("nest", "http://h/agent", None) is None


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "upstream_unauthorized"),
        (403, "upstream_forbidden"),
        (404, "upstream_not_found"),
        (429, "rate_limited"),
        (500, "upstream_error"),
        (502, "bad_gateway"),
        (503, "not_provisioned"),
        (418, "upstream_rejected"),
        (504, "upstream_error"),
        (307, "upstream_redirected"),
    ],
)
def test_status_faults(status: int, code: str) -> None:
    assert fault_for_status(status) == code


def test_retry_after() -> None:
    assert retry_after_ms("7") == 7000
    now = 1_800_000_000.0
    assert retry_after_ms(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30000
    assert retry_after_ms(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0
    assert retry_after_ms("soon") is None and retry_after_ms(None) is None


@pytest.mark.parametrize("code", sorted(FAULTS))
@pytest.mark.parametrize("target", codecs.names())
def test_every_fault_is_one_terminal_in_every_target(code: str, target: str) -> None:
    encoder = codecs.get(target).encoder()
    out = (
        encoder.encode([RunStart(run_id="r1", thread_id="t1"), terminal_for(code, retry_after=1500)]) + encoder.close()
    )
    decoder = codecs.get(target).decoder(strict=True)
    events = decoder.feed(out) + decoder.close()
    end = events[-1]
    fault = FAULTS[code]
    assert end.status == fault.status
    assert (end.failure.code, end.failure.message, end.failure.recoverable) == (
        fault.code,
        fault.message,
        fault.recoverable,
    )
    assert end.failure.retry_after_ms == 1500
    assert sum(type(e).__name__ == "Terminal" for e in events) == 1


def test_cancel_is_not_a_failure() -> None:
    end = terminal_for("cancelled")
    assert end.status == "cancelled" and end.failure is msgspec.UNSET

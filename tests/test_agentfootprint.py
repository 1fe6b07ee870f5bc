"""agentfootprint's ``toSSE`` envelope stream as a real agent writes it: every frame with a
real ``meta`` (clock, stage, trace ids), heartbeats, bus types streambridge does not map, and the
whole lifecycle of a ``present`` call."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from msgspec import UNSET
from typer.testing import CliRunner

from streambridge import StreamError
from streambridge.cli import app
from streambridge.events import (
    ArtifactPresented,
    BudgetExhausted,
    DataPart,
    Elicitation,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolOutput,
    ToolProgress,
    Usage,
)

from .corpus import CODECS, canonical, convert, decode, encode
from .proxy_support import Upstream, proxy_config, start_proxy, url_of, without_comments, write_stream

RESULT = {
    "presented": True,
    "ref": "art_9mTw4kQ2xV7pL0sB3nR8yZ",
    "as": "bar-chart",
    "snapshot": {"kind": "chart/spec", "mediaType": "application/json", "bytes": 41210, "label": "Q3 sales by region"},
}


def frame(kind: str, payload: dict, offset: int, stage: str) -> bytes:
    meta = {
        "wallClockMs": 1764566401123 + offset,
        "runOffsetMs": offset,
        "runtimeStageId": stage,
        "subflowPath": [],
        "compositionPath": ["analyst"],
        "turnIndex": 2,
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
        "runId": "run_8f2kQ",
        "sessionId": "sess_41",
    }
    envelope = {"type": "agentfootprint." + kind, "payload": payload, "meta": meta}
    data = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
    return f"event: agentfootprint.{kind}\ndata: {data}\n\n".encode()


FRAMES = [
    frame("agent.turn_start", {"turnIndex": 2, "userPrompt": "Chart Q3 sales by region"}, 0, "turn-start#0"),
    frame("context.injected", {"slot": "memory", "chars": 412}, 2, "context#1"),
    frame(
        "stream.llm_start",
        {
            "iteration": 1,
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "systemPromptChars": 1840,
            "messagesCount": 5,
            "toolsCount": 3,
        },
        5,
        "llm#2",
    ),
    frame("stream.thinking_delta", {"iteration": 1, "tokenIndex": 0, "content": "A chart is stored."}, 310, "llm#2"),
    frame("stream.token", {"iteration": 1, "tokenIndex": 0, "content": "Here is Q3 "}, 420, "llm#2"),
    frame("stream.token", {"iteration": 1, "tokenIndex": 1, "content": "by region."}, 433, "llm#2"),
    frame(
        "stream.tool_start",
        {"toolName": "present", "toolCallId": "toolu_01", "args": {"ref": RESULT["ref"], "as": "bar-chart"}},
        1810,
        "tools#3",
    ),
    frame(
        "stream.tool_progress",
        {"toolCallId": "toolu_01", "toolName": "present", "iteration": 1, "payload": {"phase": "head"}},
        1811,
        "tools#3",
    ),
    frame(
        "artifacts.resolved",
        {"ref": RESULT["ref"], "via": "head", "kind": "chart/spec", "bytes": 41210, "tool": "present"},
        1812,
        "tools#3",
    ),
    frame(
        "artifacts.presented",
        {
            "ref": RESULT["ref"],
            "as": "bar-chart",
            "snapshot": RESULT["snapshot"],
            "toolCallId": "toolu_01",
            "iteration": 1,
        },
        1813,
        "tools#3",
    ),
    frame(
        "stream.tool_end",
        {"toolCallId": "toolu_01", "result": json.dumps(RESULT, separators=(",", ":")), "durationMs": 4},
        1814,
        "tools#3",
    ),
    frame(
        "stream.llm_end",
        {
            "iteration": 1,
            "content": "Here is Q3 by region.",
            "toolCallCount": 1,
            "usage": {"input": 1200, "output": 40, "cacheRead": 800},
            "stopReason": "tool_use",
            "durationMs": 1830,
        },
        1835,
        "llm#2",
    ),
    frame(
        "agent.budget_exhausted",
        {"reason": "max-iterations", "iteration": 1, "limit": 1, "pendingToolCalls": 0, "action": "wrapped-up"},
        1836,
        "agent#4",
    ),
    frame(
        "agent.turn_end",
        {
            "turnIndex": 2,
            "finalContent": "Here is Q3 by region.",
            "totalInputTokens": 1200,
            "totalOutputTokens": 40,
            "iterationCount": 1,
            "durationMs": 1840,
            "stoppedEarly": {"reason": "max-iterations", "iteration": 1, "pendingToolCalls": 0, "wrappedUp": True},
        },
        1840,
        "turn-end#5",
    ),
]
STREAM = b"".join(FRAMES)
PING = b": ping\n\n"


def test_a_real_stream_decodes_into_the_model() -> None:
    events = decode("agentfootprint", STREAM, strict=True)
    assert [type(e) for e in events] == [
        RunStart,
        DataPart,  # context.injected: not mapped, kept whole
        StepStart,
        ReasoningDelta,
        TextDelta,
        TextDelta,
        ToolCall,
        ToolProgress,
        DataPart,  # artifacts.resolved
        ArtifactPresented,
        ToolOutput,
        StepFinish,
        BudgetExhausted,
        Terminal,
    ]
    start, step_end, end = events[0], events[11], events[-1]
    assert (start.run_id, start.thread_id) == ("run_8f2kQ", "sess_41")
    assert step_end.usage == Usage(input_tokens=1200, output_tokens=40, cache_read_tokens=800)
    artifact = events[9]
    assert (artifact.ref, artifact.as_, artifact.tool_call_id, artifact.synthetic) == (
        RESULT["ref"],
        "bar-chart",
        "toolu_01",
        False,
    )
    assert not any(isinstance(e, ArtifactPresented) for e in events[10:])  # the result repeats it: no second one
    assert events[12].action == "wrapped-up" and events[12].reason == "max-iterations"
    assert end.status == "succeeded" and end.text == "Here is Q3 by region."


def test_a_real_stream_round_trips_byte_for_byte_and_heartbeats_are_transport() -> None:
    assert encode("agentfootprint", decode("agentfootprint", STREAM)) == STREAM
    beating = PING + b"".join(f + PING for f in FRAMES)
    assert decode("agentfootprint", beating) == decode("agentfootprint", STREAM)


@pytest.mark.parametrize("via", [c for c in CODECS if c != "agentfootprint"])
def test_a_real_stream_comes_back_through_every_protocol(via: str) -> None:
    there = convert("agentfootprint", via, STREAM)
    assert convert(via, "agentfootprint", there) == STREAM
    seen = decode(via, there, strict=True)
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "Here is Q3 by region."
    assert [e.ref for e in seen if isinstance(e, ArtifactPresented)][:1] == [RESULT["ref"]]


def test_nest_clients_see_the_artifact_as_a_ui_frame_with_its_placeholder() -> None:
    nest = convert("agentfootprint", "nest", STREAM)
    ui = next(json.loads(line[6:]) for line in nest.split(b"\n") if line.startswith(b'data: {"kind":"ui"'))
    assert ui["id"] == RESULT["ref"] and ui["component"] == "bar-chart" and ui["toolCallId"] == "toolu_01"
    assert ui["fallbackText"] == "Chart — 'Q3 sales by region' (bar-chart, 41 KB)"
    assert ui["props"] == {"ref": RESULT["ref"], "as": "bar-chart", "snapshot": RESULT["snapshot"]}


def test_a_fatal_error_and_a_pause_request_reach_a_nest_client() -> None:
    paused = frame("pause.request", {"reason": "needs-approval", "questionPayload": {"q": "Send it?"}}, 9, "pause#1")
    fatal = frame("error.fatal", {"error": "provider timed out", "stage": "llm#2", "scope": "agent"}, 10, "err#2")
    data = FRAMES[0] + paused + fatal
    events = decode("agentfootprint", data, strict=True)
    assert events[1] == ToolCall(call_id="pause-0", name="unknown", synthetic=True)  # what it asks about
    assert isinstance(events[2], Elicitation) and bytes(events[2].request) == b'{"q":"Send it?"}'
    assert events[-1].status == "error" and events[-1].failure.message == "provider timed out"
    nest = convert("agentfootprint", "nest", data)
    assert (
        b'"kind":"elicitation"' in nest
        and b'event: error\ndata: {"code":"run_failed","message":"provider timed out"}' in nest
    )
    assert convert("nest", "agentfootprint", nest) == data


def test_a_stream_without_its_terminal_ends_with_a_fatal_error() -> None:
    out = convert("agentfootprint", "agentfootprint", b"".join(FRAMES[:5]))
    assert out.startswith(b"".join(FRAMES[:5]))
    end = decode("agentfootprint", out)[-1]
    assert end.status == "error" and end.failure is not UNSET


def test_strict_decoding_names_the_bad_frame_and_its_byte() -> None:
    bad = b"event: agentfootprint.stream.token\ndata: {not json\n\n"
    with pytest.raises(StreamError) as caught:
        decode("agentfootprint", FRAMES[0] + bad, strict=True)
    message = str(caught.value)
    assert f"frame 2 at byte {len(FRAMES[0])}" in message and "JSON envelope" in message


def test_unmapped_bus_types_come_back_intact_everywhere() -> None:
    unknown = frame("integrity.checked", {"ok": True, "digest": "sha-256:ab"}, 3, "integrity#1")
    data = FRAMES[0] + unknown + FRAMES[-1]
    for via in CODECS:
        assert canonical(
            decode("agentfootprint", convert(via, "agentfootprint", convert("agentfootprint", via, data)))
        ) == (canonical(decode("agentfootprint", data)))


# -- through the proxy -----------------------------------------------------------------------


async def test_a_nest_client_sees_an_agentfootprint_backends_artifact_through_the_proxy(
    aiohttp_server, aiohttp_client
) -> None:
    """A nest frontend in front of an agentfootprint host: its chat request becomes
    ``POST …/invoke {input, sessionId}``, the envelope stream (with heartbeats) becomes nest
    frames with the artifact as a ``ui`` frame, and the ``meta`` the client gets names the thread."""
    backend = Upstream()

    async def invoke(request):
        await backend.record(request)
        return await write_stream(request, [PING, *FRAMES[:6], PING, *FRAMES[6:]])

    app = web.Application()
    app.router.add_post("/host/invoke", invoke)
    server = await aiohttp_server(app)
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/host"), "agentfootprint", "nest", heartbeat=60)
    )
    resp = await client.post("/agent/chat", json={"message": "Chart Q3 sales by region", "threadId": "sess_41"})
    assert resp.status == 201  # nest answers a chat with 201 Created
    body = without_comments(await resp.read())
    assert backend.requests[0]["path"] == "/host/invoke"
    assert backend.last_json == {"input": "Chart Q3 sales by region", "sessionId": "sess_41"}
    meta = body.split(b"\n\n", 1)[0]  # the proxy's own run id (nest clients re-attach by it), the thread
    assert meta.startswith(b'event: meta\ndata: {"runId":"') and meta.endswith(b'"threadId":"sess_41"}')
    events = decode("nest", body, strict=True)
    assert [e.ref for e in events if isinstance(e, ArtifactPresented)] == [RESULT["ref"]]
    assert b'"fallbackText":"Chart \xe2\x80\x94 \'Q3 sales by region\' (bar-chart, 41 KB)"' in body
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Here is Q3 by region."
    assert events[-1].status == "succeeded"


def test_validate_finds_nothing_in_a_real_stream() -> None:
    """Every frame's own meta is kept with its event on purpose: no unknown-field finding."""
    result = CliRunner().invoke(app, ["validate", "-", "--protocol", "agentfootprint"], input=STREAM)
    assert result.exit_code == 0, result.stdout
    assert ": clean (" in result.stdout


def test_validate_reports_a_payload_member_agentfootprint_does_not_define() -> None:
    newer = frame("stream.token", {"iteration": 0, "tokenIndex": 0, "content": "x", "logprob": -0.1}, 1, "llm#1")
    result = CliRunner().invoke(app, ["validate", "-", "--protocol", "agentfootprint"], input=FRAMES[0] + newer)
    assert "SB007" in result.stdout and "logprob" in result.stdout

"""Conformance: streambridge's ai-sdk output, judged by the REAL published AI SDK client.

tests/conformance/ai-sdk-check.mjs serves each body to the `DefaultChatTransport` of a real `ai`
release (one Node process per batch): the SDK's own `parseJsonEventStream` and
`uiMessageChunkSchema` validate every chunk, and its `readUIMessageStream` folds the chunks into
the UIMessage `useChat` would show, reporting every ordering error. The clients are pinned in
tests/conformance/package.json: ai 7 (`ai`), the newest 5.x and 6.x (`ai5`, `ai6`) and the last
releases whose chunk schemas still rejected unknown keys (`ai5-strict` 5.0.216, `ai6-strict`
6.0.230: an `ai-sdk@5` / `ai-sdk@6` profile must serve every client of its major).

- Every golden scenario, from every source protocol, translated to each ai-sdk profile, must pass
  its clients with no error (or exactly the run's failure, as one `error` chunk), show the source's
  text and reasoning, every tool call as a tool part in its final state, and end with `finish`.
- Real server output, written by the real `ai` 5/6/7 server helpers
  (tests/conformance/ai-sdk-producers.mjs), must decode strictly, re-encode byte for byte and
  cross every other protocol and back to the same events.
- Hand-written streams prove the harness is not vacuous: the client accepts a good one and
  rejects each broken one.

Node.js and npm are required: without them the tests are skipped with the reason printed, and
under ``CI=true`` they fail instead (see tests/tools.py).
"""

from __future__ import annotations

import base64
import inspect
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from streambridge import codecs
from streambridge.codecs.terminals import DEFAULT_MESSAGES
from streambridge.events import (
    UNSET,
    Event,
    ReasoningDelta,
    Terminal,
    TextDelta,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputStart,
    ToolOutput,
)

from .corpus import CODECS, CORPUS, SCENARIOS, Findings, canonical, convert, decode, encode, golden, golden_name
from .tools import CONFORMANCE, conformance_node

CHECK = CONFORMANCE / "ai-sdk-check.mjs"
PRODUCERS = CONFORMANCE / "ai-sdk-producers.mjs"

# Bodies above LARGE_BODY are served in LARGE_PIECE pieces instead of 7-byte ones (an odd size,
# so boundaries still fall mid-frame and mid-character), to keep the batch fast.
PIECE = 7
LARGE_BODY = 64 * 1024
LARGE_PIECE = 4093
DONE = b"data: [DONE]\n\n"

#: each ai-sdk profile streambridge encodes, and the real clients (ai-sdk-check.mjs versions) it must pass
PROFILES: dict[str, tuple[str, ...]] = {
    "ai-sdk": ("7",),
    "ai-sdk@5": ("5", "5-strict"),
    "ai-sdk@6": ("6", "6-strict"),
}
CLIENTS = ("5", "6", "7", "5-strict", "6-strict")

Result = dict[str, Any]
Item = tuple[str, str, bytes]  # name, client version, body
Harness = Callable[[list[Item]], dict[str, Result]]


# -- the Node harnesses ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def node() -> str:
    """Node.js, with tests/conformance/node_modules installed (``npm ci``) when it is missing."""
    return conformance_node("the real AI SDK client")


@pytest.fixture(scope="session")
def ai_sdk_client(node: str) -> Harness:
    """Run bodies through tests/conformance/ai-sdk-check.mjs, one Node process per batch."""

    def run(items: list[Item]) -> dict[str, Result]:
        batch = [
            {
                "name": name,
                "version": version,
                "base64": base64.b64encode(body).decode(),
                "piece": LARGE_PIECE if len(body) > LARGE_BODY else PIECE,
            }
            for name, version, body in items
        ]
        assert len({name for name, _, _ in items}) == len(items), "item names must be unique"
        done = subprocess.run(
            [node, str(CHECK)], cwd=CONFORMANCE, input=json.dumps(batch).encode(), capture_output=True, timeout=300
        )
        if done.returncode != 0:
            pytest.fail(f"the ai-sdk client harness failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
        results = json.loads(done.stdout)
        assert [r["name"] for r in results] == [name for name, _, _ in items]
        return {r["name"]: r for r in results}

    return run


@pytest.fixture(scope="session")
def producer_bodies(node: str) -> dict[str, bytes]:
    """Bodies written by the real ai 5/6/7 servers (tests/conformance/ai-sdk-producers.mjs)."""
    done = subprocess.run([node, str(PRODUCERS)], cwd=CONFORMANCE, capture_output=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"the ai-sdk producer harness failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
    return {name: body.encode() for name, body in json.loads(done.stdout).items()}


# -- what the client must show ---------------------------------------------------------------


@dataclass
class Call:
    name: str | None = None  # None: never announced by the source
    input: Any = None
    has_input: bool = False
    outcome: tuple[str, Any] | None = None  # ("output", value) / ("error", text) / ("denied", None)
    approval_pending: bool = False  # an approval was asked and not settled


@dataclass
class Expected:
    text: str
    reasoning: str
    calls: dict[str, Call] = field(default_factory=dict)
    layout: list[tuple[str, str]] = field(default_factory=list)  # text runs and tool calls, in order
    status: str = "succeeded"
    error: str | None = None  # the failure the client must report (one `error` chunk)


def _layout(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent text runs merged, empty ones dropped: only text-versus-tool order counts."""
    out: list[tuple[str, str]] = []
    for kind, value in items:
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + value)
        elif kind != "text" or value:
            out.append((kind, value))
    return out


def expected_from(events: list[Event]) -> Expected:
    """What the AI SDK client must render for the stream that decodes to ``events``."""
    expected = Expected(
        # (another message's text, agentkit's second agent, travels as data parts: not this message)
        text="".join(e.text for e in events if type(e) is TextDelta and e.message_id is UNSET),
        reasoning="".join(e.text for e in events if type(e) is ReasoningDelta),
    )
    calls = expected.calls
    items: list[tuple[str, str]] = []
    for e in events:
        t = type(e)
        if t is TextDelta and e.message_id is UNSET:
            items.append(("text", e.text))
        elif t in (ToolCall, ToolInputStart):
            if e.call_id not in calls:
                items.append(("tool", e.call_id))
            call = calls.setdefault(e.call_id, Call(name=e.name))
            if t is ToolCall:
                if e.input is not UNSET:
                    call.input, call.has_input = json.loads(bytes(e.input)), True
                elif isinstance(e.arguments_json, str):
                    call.input, call.has_input = json.loads(e.arguments_json), True
        elif t is ToolApprovalRequest and e.call_id in calls:
            calls[e.call_id].approval_pending = True
        elif t is ToolApprovalSettled and e.call_id in calls:
            calls[e.call_id].approval_pending = False
        elif t is ToolOutput and e.call_id in calls:
            calls[e.call_id].outcome = ("output", json.loads(bytes(e.output)))
        elif t is ToolError and e.call_id in calls:
            calls[e.call_id].outcome = ("error", e.error)
        elif t is ToolDenied and e.call_id in calls:
            calls[e.call_id].outcome = ("denied", None)
        elif t is Terminal:
            expected.status = e.status
            if e.status not in ("succeeded", "cancelled"):
                expected.error = e.failure.message if e.failure else DEFAULT_MESSAGES[e.status]
    expected.layout = _layout(items)
    return expected


def _major(client: str) -> int:
    return int(client.split("-")[0])


def check(result: Result, body: bytes, expected: Expected) -> None:
    """Assert the real client's view of one ai-sdk stream matches ``expected``."""
    client = result["version"]
    schema = [e for e in result["errors"] if e["source"] in ("schema", "transport")]
    assert schema == [], f"ai {result['client']} rejects chunks: {schema}"
    assert body.endswith(DONE), "the stream does not end with data: [DONE]"
    types = result["types"]
    assert result["chunks"] == len(types)
    assert types[:1] == ["start"]
    if expected.error is None:
        assert result["errors"] == [], f"ai {result['client']} failed: {result['errors']}"
        assert "error" not in types
    else:
        assert result["errors"] == [{"source": "error-chunk", "message": expected.error}], (
            f"ai {result['client']} must report exactly the run's failure"
        )
        assert types.count("error") == 1
    if expected.status == "cancelled":
        assert "abort" in types and types[-1] in ("abort", "finish"), f"a cancelled run ends {types[-3:]}"
    else:
        assert types[-1] == "finish", f"the message does not end finished: {types[-3:]}"
        reason = (result["finish"] or {}).get("finishReason")
        if expected.status == "succeeded":
            assert reason != "error"
        else:
            assert reason in (None, "error", "content-filter", "other")

    parts = result["message"]["parts"] if result["message"] else []
    assert "".join(p["text"] for p in parts if p["type"] == "text") == expected.text
    assert "".join(p["text"] for p in parts if p["type"] == "reasoning") == expected.reasoning
    tool_parts = {p["toolCallId"]: p for p in parts if "toolCallId" in p}
    assert set(expected.calls) <= set(tool_parts), "tool calls missing from the message"
    seen = _layout(
        [
            ("text", p["text"]) if p["type"] == "text" else ("tool", p["toolCallId"])
            for p in parts
            if p["type"] == "text" or p.get("toolCallId") in expected.calls
        ]
    )
    assert seen == expected.layout, "text and tool calls out of order"

    for call_id, call in expected.calls.items():
        part = tool_parts[call_id]
        if call.name is not None:
            assert part["type"] == f"tool-{call.name}" or (
                part["type"] == "dynamic-tool" and part["toolName"] == call.name
            ), f"tool part {call_id} is {part['type']}"
        if call.has_input:
            assert part["input"] == call.input
        state = part["state"]
        if call.outcome is None:
            allowed = {"input-available"}
            if call.approval_pending and _major(client) >= 6:
                allowed = {"approval-requested"}
            if expected.error is not None:  # a failed run may settle its open calls as errors
                allowed.add("output-error")
            assert state in allowed, f"unfinished call {call_id} shown as {state}"
        elif call.outcome[0] == "output":
            assert (state, part.get("output")) == ("output-available", call.outcome[1])
        elif call.outcome[0] == "error":
            assert (state, part.get("errorText")) == ("output-error", call.outcome[1])
        else:  # denied: ai 5 has no tool-output-denied, so the call must settle as an error
            assert state == ("output-denied" if _major(client) >= 6 else "output-error"), (
                f"denied call {call_id} shown as {state}"
            )


# -- golden scenarios, through streambridge --------------------------------------------------


def profile_encoder_options(profile: str) -> tuple[str, dict[str, object]]:
    """The codec id and encoder options that select an ai-sdk profile ("ai-sdk@5": the 5.x one).

    A profile registered as its own alias is used as it stands; otherwise the version goes to the
    ai-sdk encoder's profile keyword, whichever of these names it has."""
    try:
        codecs.get(profile)
        return profile, {}
    except ValueError:  # codecs.UnknownProtocol
        pass
    name, _, version = profile.partition("@")
    parameters = inspect.signature(codecs.get(name).encoder_class).parameters
    for keyword in ("profile", "version", "target_version", "target"):
        if keyword in parameters:
            return name, {keyword: version}
    pytest.fail(f"no way to select the {profile!r} profile: tell profile_encoder_options how", pytrace=False)


def to_ai_sdk(scenario: str, source: str, profile: str) -> bytes:
    target, options = profile_encoder_options(profile)
    return encode(target, decode(source, golden(scenario, source)), **options)


GOLDEN_CASES = [(s, c, p) for s in SCENARIOS for c in CODECS for p in PROFILES]


@pytest.fixture(scope="session")
def golden_results(ai_sdk_client: Harness) -> dict[tuple[str, str, str], tuple[bytes, dict[str, Result]]]:
    bodies = {case: to_ai_sdk(*case) for case in GOLDEN_CASES}
    items = [
        ("/".join(case) + f"#{client}", client, body) for case, body in bodies.items() for client in PROFILES[case[2]]
    ]
    results = ai_sdk_client(items)
    return {
        case: (body, {client: results["/".join(case) + f"#{client}"] for client in PROFILES[case[2]]})
        for case, body in bodies.items()
    }


@pytest.mark.parametrize("source", CODECS)
def test_every_golden_translated_to_ai_sdk_passes_the_real_client(source: str, golden_results: dict) -> None:
    """One test per source walks every golden and profile, failing once naming each failing case."""
    findings = Findings(f"goldens of {source} through the real ai clients")
    for scenario in SCENARIOS:
        expected = expected_from(list(CORPUS.events(scenario, source)))
        for profile in PROFILES:
            body, results = golden_results[scenario, source, profile]
            for client, result in results.items():
                with findings.case(f"{golden_name(scenario, source)} → {profile}, read by {client}"):
                    check(result, body, expected)
    findings.check()


# -- real producer output --------------------------------------------------------------------


def test_real_producer_output_decodes_round_trips_and_cross_trips(producer_bodies: dict[str, bytes]) -> None:
    assert len(producer_bodies) == 9
    for name, body in producer_bodies.items():
        events = decode("ai-sdk", body, strict=True)
        assert isinstance(events[-1], Terminal), f"{name}: no terminal"
        if name.endswith("-error"):
            # ai's own failed stream: `error` inside the step (its text part left open), then
            # `finish-step`, then `finish`: an error terminal, never a success, written back so
            assert events[-1].status == "error", f"{name}: a failed stream decoded as {events[-1].status}"
            assert events[-1].failure.message == "An error occurred."  # ai masks errors by default
            assert [type(e).__name__ for e in events[-3:]] == ["TextDelta", "StepFinish", "Terminal"]
        assert encode("ai-sdk", events) == body, f"{name}: the round trip is not byte exact"
        original = canonical(events)
        for via in CODECS:
            if via == "ai-sdk":
                continue
            there = convert("ai-sdk", via, body)
            back = convert(via, "ai-sdk", there)
            assert canonical(decode("ai-sdk", back)) == original, f"{name}: the trip through {via} changed the events"
            assert back == body, f"{name}: the trip through {via} changed the bytes"


def test_real_producer_output_passes_the_real_client(producer_bodies: dict[str, bytes], ai_sdk_client: Harness) -> None:
    """The baseline: what the real servers write, every real client accepts as it should."""
    items = [(f"{name}#{client}", client, body) for name, body in producer_bodies.items() for client in CLIENTS]
    results = ai_sdk_client(items)
    for name, body in producer_bodies.items():
        for client in CLIENTS:
            result = results[f"{name}#{client}"]
            parts = result["message"]["parts"]
            types = [p["type"] for p in parts]
            assert body.endswith(DONE) and result["types"][-1] == "finish", name
            if name.endswith("-streamText-error"):
                # the server masks the error by default and still finishes the message
                assert result["errors"] == [{"source": "error-chunk", "message": "An error occurred."}]
                assert result["finish"] == {"type": "finish", "finishReason": "error"}
                assert [p["text"] for p in parts if p["type"] == "text"] == ["Half an ans"]
                continue
            assert result["errors"] == [], f"{name} on ai {result['client']}: {result['errors']}"
            if name.endswith("-streamText-tools"):
                tag = name.split("-")[0]
                assert result["message"]["id"] == "msg-producer"
                assert result["message"]["metadata"] == {"producer": tag, "at": "finish"}  # deep-merged
                step_one = ["step-start", "reasoning", "text", "tool-getWeather", "tool-brokenTool"]
                assert types == [*step_one, "step-start", "text"]
                weather, broken = parts[3], parts[4]
                assert (weather["state"], weather["input"], weather["output"]) == (
                    "output-available",
                    {"city": "Paris"},
                    {"city": "Paris", "tempC": 21},
                )
                assert (broken["state"], broken["errorText"]) == ("output-error", "tool exploded")
                assert parts[2]["text"] == "Let me check Paris — ☀️?"
            else:
                assert result["message"]["id"] == "msg-data"
                # the transient part never reaches the message; the one with an id is reconciled in place
                assert types == ["step-start", "data-weather", "text", "data-note"]
                assert parts[1] == {
                    "type": "data-weather",
                    "id": "weather-1",
                    "data": {"city": "Paris", "status": "done", "tempC": 21},
                }


# -- the harness is not vacuous ------------------------------------------------------------------


def sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks) + DONE


GOOD = sse(
    {"type": "start", "messageId": "msg-1"},
    {"type": "start-step"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "Héllo "},
    {"type": "text-delta", "id": "t1", "delta": "wörld ☀️"},
    {"type": "text-end", "id": "t1"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "lookup"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"q":'},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "1}"},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "lookup", "input": {"q": 1}},
    {"type": "tool-output-available", "toolCallId": "c1", "output": {"ok": True}},
    {"type": "finish-step"},
    {"type": "finish"},
)
DELTA_WITHOUT_START = sse({"type": "start"}, {"type": "text-delta", "id": "t9", "delta": "x"}, {"type": "finish"})
UNKNOWN_KEY = sse(
    {"type": "start"},
    {"type": "text-start", "id": "t1", "bogus": 1},
    {"type": "text-delta", "id": "t1", "delta": "x"},
    {"type": "text-end", "id": "t1"},
    {"type": "finish"},
)
UNKNOWN_TYPE = sse({"type": "start"}, {"type": "what-is-this"}, {"type": "finish"})
GHOST_OUTPUT = sse(
    {"type": "start"}, {"type": "tool-output-available", "toolCallId": "ghost", "output": 1}, {"type": "finish"}
)
HARNESS_CASES = {
    "good": GOOD,
    "delta-without-start": DELTA_WITHOUT_START,
    "unknown-key": UNKNOWN_KEY,
    "unknown-type": UNKNOWN_TYPE,
    "ghost-output": GHOST_OUTPUT,
}


def test_the_harness_catches_what_the_client_rejects(ai_sdk_client: Harness) -> None:
    items = [(f"{name}#{client}", client, body) for name, body in HARNESS_CASES.items() for client in CLIENTS]
    results = ai_sdk_client(items)

    def run(name: str, client: str) -> Result:
        return results[f"{name}#{client}"]

    for client in CLIENTS:
        good = run("good", client)
        assert good["errors"] == [] and good["chunks"] == 13 and good["types"][-1] == "finish"
        check(good, GOOD, expected_from(decode_good()))

        # a text-delta with no text-start: the reader throws (ai 5.0.277 and 5.0.216 fail on the
        # missing part with a TypeError, later releases with a UIMessageStreamError)
        delta = run("delta-without-start", client)
        assert [e["source"] for e in delta["errors"]] == ["reader"], delta["errors"]
        if _major(client) >= 6:
            assert 'missing text part with ID "t9"' in delta["errors"][0]["message"]

        # an unknown chunk type: every release rejects it, the transport stops there
        unknown = run("unknown-type", client)
        assert [(e["source"], e.get("index")) for e in unknown["errors"]] == [("schema", 1), ("transport", None)]
        assert "what-is-this" in unknown["errors"][0]["message"] and unknown["types"] == ["start"]

        # an output for a call never announced (ai 5 words it as if it were an output error)
        ghost = run("ghost-output", client)
        message = (
            'No tool invocation found for tool call ID "ghost".'
            if _major(client) >= 6
            else "tool-output-error must be preceded by a tool-input-available"
        )
        assert ghost["errors"] == [{"source": "reader", "message": message}]

        # an unknown key: rejected only by the strict schemas (5.0.0-5.0.216, 6.0.0-6.0.230)
        key = run("unknown-key", client)
        if client.endswith("-strict"):
            assert [(e["source"], e.get("index")) for e in key["errors"]] == [("schema", 1), ("transport", None)]
            assert "bogus" in key["errors"][0]["message"] and key["types"] == ["start"]
        else:
            assert key["errors"] == [] and key["message"]["parts"][0]["text"] == "x"

    # and check() itself fails on each broken result
    with pytest.raises(AssertionError, match="failed"):
        check(run("delta-without-start", "7"), DELTA_WITHOUT_START, Expected(text="", reasoning=""))
    with pytest.raises(AssertionError, match="rejects chunks"):
        check(run("unknown-type", "7"), UNKNOWN_TYPE, Expected(text="", reasoning=""))
    with pytest.raises(AssertionError, match="rejects chunks"):
        check(run("unknown-key", "5-strict"), UNKNOWN_KEY, Expected(text="x", reasoning=""))


def decode_good() -> list[Event]:
    """GOOD as events, without the ai-sdk codec: the same run said in nest."""
    return decode(
        "nest",
        b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\n'
        b'data: {"kind":"step-start"}\n\n'
        b'data: {"kind":"text","text":"H\xc3\xa9llo w\xc3\xb6rld \xe2\x98\x80\xef\xb8\x8f"}\n\n'
        b'data: {"kind":"tool-input-available","id":"c1","name":"lookup","input":{"q":1},"toolKind":"read"}\n\n'
        b'data: {"kind":"tool-output","id":"c1","output":{"ok":true}}\n\n'
        b'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":1},"costUsd":null}\n\n'
        b"event: done\ndata: {}\n\n",
    )

"""Conformance: streambridge's ag-ui output, judged by the REAL published AG-UI SDKs.

tests/conformance/ag-ui-check.mjs runs each body through @ag-ui/client 1.0.0 (one Node process per
batch): the client's own SSE transport, @ag-ui/core's zod `EventSchemas`, the client's stage order
`enforceEvents` → `transformChunks` → `verifyEvents` (the lifecycle and open/close discipline), and
a whole `HttpAgent.runAgent()` whose `defaultApplyEvents` folds the events into the messages an
application shows. tests/agui_models.py checks every event against the Python SDK's pydantic
models (PyPI ``ag-ui-protocol`` 1.x, strict: no coercion, no unknown member, read back as sent).

- Every ag-ui golden, and every golden of every other protocol translated to ag-ui (through
  ``streambridge.Translator``), passes both SDKs with no error and no warning, and the client
  shows the source's text, reasoning, tool calls, tool results, artifacts and the run's end.
- Real producer output, written by @ag-ui/encoder's and ``ag_ui.encoder``'s ``EventEncoder``
  (tests/conformance/ag-ui-producers.mjs, tests/agui_models.py: the same runs, the same bytes
  but for member order where KEY_ORDER says), decodes strictly, re-encodes byte for byte (at event
  level where EVENT_LEVEL says why) and crosses every other protocol and back to the same events;
  the client shows streambridge's rewrite of each run as it shows the original.
- Hand-written streams prove the harness is not vacuous: both SDKs accept a good one and reject
  each broken one.

Node.js and npm are required: without them the Node half is skipped with the reason printed, and
under ``CI=true`` it fails instead (see tests/tools.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streambridge import Translator, codecs
from streambridge.codecs.terminals import DEFAULT_MESSAGES
from streambridge.events import UNSET, Event, ReasoningDelta, Terminal, TextDelta

from .agui_models import problems, producer_streams, sse_payloads
from .corpus import CODECS, CORPUS, GOLDEN, SCENARIOS, Findings, canonical, convert, decode, encode, golden, golden_name
from .test_laws import project
from .tools import CONFORMANCE, conformance_node

AG_UI = "ag-ui"
CHECK = CONFORMANCE / "ag-ui-check.mjs"
PRODUCERS = CONFORMANCE / "ag-ui-producers.mjs"

# Bodies above LARGE_BODY are served in LARGE_PIECE pieces instead of 7-byte ones (an odd size,
# so boundaries still fall mid-frame and mid-character), to keep the batch fast.
PIECE = 7
LARGE_BODY = 64 * 1024
LARGE_PIECE = 4093

Result = dict[str, Any]
Harness = Callable[[dict[str, bytes]], dict[str, Result]]

GOLDENS: list[Path] = sorted(GOLDEN.glob(f"*/{AG_UI}.sse"))
SOURCES = [c for c in CODECS if c != AG_UI]
TRANSLATED = [(s, c) for s in SCENARIOS for c in SOURCES]


def require_codec() -> None:
    """Fail (never skip) while the ag-ui codec is not registered."""
    if AG_UI not in codecs.registered():
        pytest.fail(f"the {AG_UI!r} codec is not registered (streambridge/codecs/ag_ui)", pytrace=False)


def translate(source: str, data: bytes) -> bytes:
    """A golden of ``source`` as ag-ui, through the streaming ``Translator`` (the proxy's path)."""
    translator = Translator(source, AG_UI)
    return translator.feed(data) + translator.close()


# -- the Node harnesses ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def node() -> str:
    """Node.js, with tests/conformance/node_modules installed (``npm ci``) when it is missing."""
    return conformance_node("the real AG-UI client")


@pytest.fixture(scope="session")
def ag_ui_client(node: str) -> Harness:
    """Run bodies through tests/conformance/ag-ui-check.mjs, one Node process per batch."""

    def run(bodies: dict[str, bytes]) -> dict[str, Result]:
        batch = [
            {"name": name, "sse": body.decode(), "piece": LARGE_PIECE if len(body) > LARGE_BODY else PIECE}
            for name, body in bodies.items()
        ]
        done = subprocess.run(
            [node, str(CHECK)], cwd=CONFORMANCE, input=json.dumps(batch).encode(), capture_output=True, timeout=300
        )
        if done.returncode != 0:
            pytest.fail(f"the AG-UI client harness failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
        results = json.loads(done.stdout)
        assert [r["name"] for r in results] == list(bodies)
        return {r["name"]: r for r in results}

    return run


@pytest.fixture(scope="session")
def node_producer_bodies(node: str) -> dict[str, bytes]:
    """Runs written by @ag-ui/encoder's EventEncoder (tests/conformance/ag-ui-producers.mjs)."""
    done = subprocess.run([node, str(PRODUCERS)], cwd=CONFORMANCE, capture_output=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"the AG-UI producer harness failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
    return {item["name"]: item["sse"].encode() for item in json.loads(done.stdout)}


# -- what the client must show ---------------------------------------------------------------


#: scenarios whose sources carry an unknown member on purpose (golden/unknown-kinds/README.md):
#: streambridge keeps it, and AG-UI tolerates it (§7): the client strips it with a warning, the
#: Python models keep it as an extra. Nothing else may be warned about.
UNKNOWN_MEMBERS = {"unknown-kinds"}
STRIPPED = "[ag-ui][enforce] Removed unrecognised material at "


def assert_accepted(result: Result, body: bytes, *, unknown_members: bool = False) -> None:
    """Both SDKs accept the stream: no transport, schema, verifier or agent error, no warning
    (``unknown_members``: none but a stripped unknown member's)."""
    name = result["name"]
    assert result["schemaErrors"] == [], f"{name}: @ag-ui/core rejects events: {result['schemaErrors']}"
    assert "error" not in result, f"{name}: verifyEvents: {result.get('error')}"
    assert "error" not in result["agent"], f"{name}: HttpAgent.runAgent: {result['agent'].get('error')}"
    assert result["events"] > 0
    warnings, objections = result["warnings"], problems(body)
    if unknown_members:
        warnings = [w for w in warnings if not w.startswith(STRIPPED)]
        objections = [(i, p) for i, p in objections if not p.startswith("unknown member ")]
    assert warnings == [], f"{name}: the client warned: {warnings}"
    assert objections == [], f"{name}: ag_ui.core models object: {objections}"


def _messages(result: Result, role: str) -> list[dict[str, Any]]:
    return [m for m in result["agent"]["messages"] if m["role"] == role]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _streamed_text(events: list[Event]) -> str:
    """The text in message order: each message's deltas together, messages by first delta."""
    by_message: dict[object, str] = {}
    for e in events:
        if type(e) is TextDelta:
            key = "" if e.message_id is UNSET else e.message_id
            by_message[key] = by_message.get(key, "") + e.text
    return "".join(by_message.values())


def assert_shows(result: Result, events: list[Event], *, truncated: bool = False) -> None:
    """The client's messages and run end say what the source said (``truncated``: the stream
    itself ends with no terminal, and the client must not invent one)."""
    name, agent = result["name"], result["agent"]
    expected = project(events)
    text = _streamed_text(events) or expected["text"]
    assert "".join(_text(m) for m in _messages(result, "assistant")) == text, f"{name}: text"
    reasoning = "".join(e.text for e in events if type(e) is ReasoningDelta)
    assert "".join(_text(m) for m in _messages(result, "reasoning")) == reasoning, f"{name}: reasoning"
    calls = {c["id"]: c for m in _messages(result, "assistant") for c in m.get("toolCalls", [])}
    for call_id, tool, args in expected["tools"]:
        assert call_id in calls, f"{name}: tool call {call_id} missing"
        assert calls[call_id]["function"]["name"] == tool, f"{name}: tool call {call_id} name"
        if args is not None:
            assert json.loads(calls[call_id]["function"]["arguments"]) == args, f"{name}: tool call {call_id} args"
    results = {m["toolCallId"] for m in _messages(result, "tool")}
    for call_id, _ in expected["outcomes"]:  # an output, an error or a denial: a tool message
        assert call_id in results, f"{name}: tool result for {call_id} missing"
    shown = {m["id"] for m in _messages(result, "activity")}
    shown |= {m["content"].get("ref") for m in _messages(result, "activity")}
    # (an artifact a source derives from its presenting call's result, as oma's, may stay there)
    said = " ".join(_text(m) for m in _messages(result, "tool"))
    for ref in filter(None, expected["artifacts"]):  # presented or refused: the client names it
        assert ref in shown or ref in said, f"{name}: artifact {ref} missing"
    end = events[-1]
    assert isinstance(end, Terminal)
    errors = [e["message"] for e in agent["runErrors"]]
    if truncated:
        assert end.synthetic and not {"RUN_FINISHED", "RUN_ERROR"} & set(result["types"]), f"{name}: not truncated"
        assert (agent.get("outcome"), errors) == (None, []), f"{name}: the client invented an end"
    elif end.status == "succeeded":
        assert errors == [] and agent.get("outcome") in ("success", "interrupt"), f"{name}: {agent.get('outcome')}"
    elif end.status == "cancelled":
        assert agent.get("outcome") == "cancelled" or len(errors) == 1, f"{name}: a cancelled run ends {errors}"
    else:
        message = end.failure.message if end.failure else DEFAULT_MESSAGES[end.status]
        assert errors == [message], f"{name}: the run's failure"


# -- golden scenarios, through streambridge --------------------------------------------------


def test_every_scenario_has_an_ag_ui_golden() -> None:
    require_codec()
    assert [p.parent.name for p in GOLDENS] == SCENARIOS


@pytest.fixture(scope="session")
def golden_results(ag_ui_client: Harness) -> dict[str, tuple[bytes, Result]]:
    require_codec()
    bodies = {f"{p.parent.name}/{AG_UI}": p.read_bytes() for p in GOLDENS}
    bodies |= {f"{scenario}/{source}": translate(source, golden(scenario, source)) for scenario, source in TRANSLATED}
    results = ag_ui_client(bodies)
    return {name: (body, results[name]) for name, body in bodies.items()}


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.parent.name)
def test_every_ag_ui_golden_passes_the_real_sdks(path: Path, golden_results: dict) -> None:
    body, result = golden_results[f"{path.parent.name}/{AG_UI}"]
    assert_accepted(result, body, unknown_members=path.parent.name in UNKNOWN_MEMBERS)
    assert_shows(result, decode(AG_UI, body), truncated=path.parent.name == "truncated")


@pytest.mark.parametrize("source", SOURCES)
def test_every_golden_translated_to_ag_ui_passes_the_real_sdks(source: str, golden_results: dict) -> None:
    """One test per source walks every golden, failing once naming each failing file."""
    findings = Findings(f"goldens of {source} translated to ag-ui, through the real SDKs")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, source)):
            body, result = golden_results[f"{scenario}/{source}"]
            assert_accepted(result, body, unknown_members=scenario in UNKNOWN_MEMBERS)
            assert_shows(result, list(CORPUS.events(scenario, source)))
    findings.check()


# -- real producer output --------------------------------------------------------------------


#: producer runs the two SDKs write in different member orders, and why
KEY_ORDER = {
    "timestamps-and-metadata": "ag_ui's pydantic models write the BaseEvent members (timestamp, "
    "metadata) right after type; @ag-ui/encoder keeps the order the producer built its object in",
}


def test_both_sdks_write_the_same_events(node_producer_bodies: dict[str, bytes]) -> None:
    """@ag-ui/encoder and ag_ui.encoder write the same events, byte for byte but for KEY_ORDER."""
    python = producer_streams()
    assert node_producer_bodies.keys() == python.keys()
    for name, body in python.items():
        if name in KEY_ORDER:
            assert node_producer_bodies[name] != body, f"{name}: now the same bytes: drop it from KEY_ORDER"
            as_json = [json.loads(p) for p in sse_payloads(body)]
            assert [json.loads(p) for p in sse_payloads(node_producer_bodies[name])] == as_json, name
        else:
            assert node_producer_bodies[name] == body, name


def test_real_producer_output_passes_the_real_sdks(
    node_producer_bodies: dict[str, bytes], ag_ui_client: Harness
) -> None:
    """The baseline: what the real encoders write, the real client and models accept as they should."""
    results = ag_ui_client(node_producer_bodies)
    for name, body in node_producer_bodies.items():
        result = results[name]
        assert_accepted(result, body)
        assert result["ok"], name
        agent = result["agent"]
        texts = [_text(m) for m in _messages(result, "assistant")]
        assert name == "frontend-tool" or (texts and all(texts)), f"{name}: no assistant text"
        if name == "run-error":
            assert agent["runErrors"] == [{"message": "The model provider timed out.", "code": "provider_timeout"}]
            continue
        assert agent["runErrors"] == [], name
        assert agent["outcome"] == {"interrupt": "interrupt", "cancelled": "cancelled"}.get(name, "success"), name
    assert results["interrupt"]["agent"]["interrupts"][0]["id"] == "int-1"
    assert results["frontend-tool"]["agent"]["pendingToolCallIds"] == ["call-1"]
    assert results["state-and-steps"]["agent"]["state"] == {
        "todos": [{"title": "Buy milk", "done": False}],
        "status": "ready",
    }
    chunks = results["chunks"]
    assert chunks["verified"] > chunks["events"], "the chunks were not expanded"
    assert [_text(m) for m in chunks["agent"]["messages"]] == ["Checking the time.", "10:00", "It is 10:00 UTC."]
    call = chunks["agent"]["messages"][0]["toolCalls"][0]
    assert (call["id"], call["function"]) == ("call-1", {"name": "getTime", "arguments": '{"tz":"UTC"}'})


CHUNKS = "the *_CHUNK shorthand is decoded as the client's transformChunks expands it (START / CONTENT / END)"
#: producer runs streambridge writes back in another (equivalent) form, and why: for these the
#: round trip is asserted on the events, and the client must show the same for both forms
EVENT_LEVEL = {
    ("node", "chunks"): CHUNKS,
    ("python", "chunks"): CHUNKS,
    ("python", "timestamps-and-metadata"): "streambridge writes the members it does not model "
    "(timestamp, metadata, usage) after the event's own fields, as @ag-ui/encoder did here, not "
    "first as ag_ui's models do (KEY_ORDER)",
}
PRODUCER_CASES = [(sdk, name) for sdk in ("node", "python") for name in sorted(producer_streams())]
ENDS = {"run-error": "error", "cancelled": "cancelled"}


@pytest.mark.parametrize(("sdk", "name"), PRODUCER_CASES, ids=["-".join(c) for c in PRODUCER_CASES])
def test_real_producer_output_decodes_round_trips_and_cross_trips(
    sdk: str, name: str, request: pytest.FixtureRequest
) -> None:
    require_codec()
    bodies = request.getfixturevalue("node_producer_bodies") if sdk == "node" else producer_streams()
    body = bodies[name]
    events = decode(AG_UI, body, strict=True)
    assert isinstance(events[-1], Terminal), f"{name}: no terminal"
    assert events[-1].status == ENDS.get(name, "succeeded"), f"{name}: ends {events[-1].status}"
    ours = encode(AG_UI, events)
    original = canonical(events)
    if (sdk, name) in EVENT_LEVEL:
        assert canonical(decode(AG_UI, ours)) == original, f"{name}: the round trip changed the events"
    else:
        assert ours == body, f"{name}: the round trip is not byte exact"
    for via in SOURCES:
        back = convert(via, AG_UI, convert(AG_UI, via, body))
        assert canonical(decode(AG_UI, back)) == original, f"{name}: the trip through {via} changed the events"
        assert back == ours, f"{name}: the trip through {via} changed the bytes"


def test_the_client_shows_producer_output_as_streambridge_rewrites_it(
    node_producer_bodies: dict[str, bytes], ag_ui_client: Harness
) -> None:
    """What streambridge writes back for a real producer's run, the client shows as the original."""
    require_codec()
    ours = {f"{name}#ours": encode(AG_UI, decode(AG_UI, body)) for name, body in node_producer_bodies.items()}
    results = ag_ui_client(node_producer_bodies | ours)
    for name in node_producer_bodies:
        original, rewritten = results[name]["agent"], results[f"{name}#ours"]["agent"]
        assert_accepted(results[f"{name}#ours"], ours[f"{name}#ours"])
        assert rewritten == original, f"{name}: the client shows streambridge's rewrite differently"


# -- the harness is not vacuous ------------------------------------------------------------------


def sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)


START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
GOOD = b": keep-alive\n\nevent: ignored\nid: 1\n" + sse(
    START,
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Héllo ☀️"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    FINISH,
)
BROKEN = {
    "content-without-start": sse(START, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "a"}, FINISH),
    "open-tool-call": sse(START, {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}, FINISH),
    "event-after-error": sse(
        START, {"type": "RUN_ERROR", "message": "boom"}, {"type": "STEP_STARTED", "stepName": "s"}
    ),
    "first-not-run-started": sse({"type": "STEP_STARTED", "stepName": "s"}, START, FINISH),
    "malformed": sse({**START, "runId": 5}, FINISH),
    "null-optional": sse(
        START, {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": None}
    ),
    "unknown-member": sse({**START, "bogus": 1}, FINISH),
    "unknown-type": sse(START, {"type": "WHAT_IS_THIS"}, FINISH),
}


def test_the_harness_catches_what_the_sdks_reject(ag_ui_client: Harness) -> None:
    results = ag_ui_client({"good": GOOD, **BROKEN})
    assert_accepted(results["good"], GOOD)
    assert results["good"]["events"] == 5
    assert [_text(m) for m in results["good"]["agent"]["messages"]] == ["Héllo ☀️"]

    def verifier(name: str) -> str:
        assert not results[name]["ok"], name
        return results[name]["error"]

    assert "No active text message found with ID 'x'" in verifier("content-without-start")
    assert "while tool calls are still active: c" in verifier("open-tool-call")
    assert "already errored" in verifier("event-after-error")
    assert "First event must be 'RUN_STARTED'" in verifier("first-not-run-started")
    malformed = results["malformed"]
    assert [(e["index"], e["type"]) for e in malformed["schemaErrors"]] == [(0, "RUN_STARTED")]
    assert "runId" in malformed["error"] and not malformed["ok"]
    # a null where absence is meant: a schema error, which the agent's compatibility boundary
    # repairs with a deprecation warning
    null = results["null-optional"]
    assert [(e["index"], e["type"]) for e in null["schemaErrors"]] == [(1, "TOOL_CALL_START")]
    assert "error" not in null["agent"] and "[ag-ui][compat]" in null["warnings"][0]
    for name in ("unknown-member", "unknown-type"):  # tolerated (§7), but stripped with a warning
        assert "error" not in results[name] and results[name]["warnings"] and not results[name]["ok"], name

    # and the Python models object to what they must
    assert problems(GOOD) == []
    assert [i for i, _ in problems(BROKEN["malformed"])] == [0]
    assert problems(BROKEN["null-optional"])[0][0] == 1  # a null where absence is meant
    assert problems(BROKEN["unknown-member"]) == [(0, "unknown member /bogus")]
    assert [i for i, _ in problems(BROKEN["unknown-type"])] == [1]
    with pytest.raises(AssertionError, match="verifyEvents"):
        assert_accepted(results["content-without-start"], BROKEN["content-without-start"])


# -- through the proxy: the run log's resume ids ------------------------------------------------


async def test_the_proxys_resume_ids_do_not_disturb_the_real_ag_ui_client(
    ag_ui_client: Harness, aiohttp_server, aiohttp_client
) -> None:
    """The proxy numbers every frame it writes (``id:`` lines, its resume cursors): the real
    client's parser, schemas, verifier and ``HttpAgent`` take such streams as they take others."""
    from streambridge.codecs.requests import ChatRequest

    from .proxy_support import frames, proxy_config, start_proxy, stream_app, url_of, write_stream

    bodies: dict[str, bytes] = {}
    for scenario in ("plain-text", "text-after-tool", "approval", "reasoning-then-text"):

        async def agent(request: Any, scenario: str = scenario) -> Any:
            await request.read()
            return await write_stream(request, frames(golden(scenario, "agentkit")))

        server = await aiohttp_server(stream_app(agent, "/up"))
        proxy = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", AG_UI))
        body = codecs.get(AG_UI).http.build_request(ChatRequest(text="hi", thread_id="thr-1"))
        resp = await proxy.post("/", data=body, headers={"Content-Type": "application/json"})
        bodies[scenario] = await resp.read()  # (with the heartbeat comment before the first frame)
        assert bodies[scenario].replace(b": ping\n\n", b"").startswith(b"id: 1\ndata: "), bodies[scenario][:80]
    results = ag_ui_client(bodies)
    for name, body in bodies.items():
        assert_accepted(results[name], body)

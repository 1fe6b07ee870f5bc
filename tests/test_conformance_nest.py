"""Conformance: streambridge's nest output, read by the REAL published nest client.

Every golden stream (each scenario, each source protocol) is translated to nest by streambridge
and served, as a nest server would serve it, to the unmodified `AgentChatTransport` of
@dudousxd/nestjs-agent-react 0.5.5; its UI chunks go through the AI SDK's own
`readUIMessageStream` (see tests/conformance/nest-client.mjs). The client's view must match the
source: no client error (or, for a failed run, exactly the failure's message), the same text and
reasoning in the same order relative to the tool calls, every tool call as a tool part with its
name, input and outcome. The three real server captures are run the same way as a baseline, and
three hand-made broken streams prove the harness fails when the client does.

Node.js and npm are required: without them the test is skipped with the reason printed, and
under ``CI=true`` it fails instead (see tests/tools.py).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streambridge import translate
from streambridge.codecs.terminals import DEFAULT_MESSAGES
from streambridge.events import (
    UNSET,
    Elicitation,
    Event,
    ReasoningDelta,
    RunStart,
    Terminal,
    TextDelta,
    ToolApprovalRequest,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputStart,
    ToolOutput,
)

from .corpus import CODECS, CORPUS, SCENARIOS, Findings, capture_body, capture_paths, decode, golden, golden_name
from .tools import CONFORMANCE, conformance_node

HARNESS = CONFORMANCE / "nest-client.mjs"

# The harness serves bodies in 7-byte pieces. The 0.5.5 transport rescans its whole buffer for
# "\n\n" on every read, so a 1 MB frame in 7-byte pieces takes minutes on the client side (with any
# server). Bodies above LARGE_BODY are served in LARGE_PIECE pieces (an odd size, so boundaries
# still fall mid-frame and mid-character).
PIECE = 7
LARGE_BODY = 64 * 1024
LARGE_PIECE = 4093

Result = dict[str, Any]
Harness = Callable[[list[bytes]], list[Result]]


# -- the Node harness ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def nest_client() -> Harness:
    """Run bodies through tests/conformance/nest-client.mjs, one Node process per batch."""
    node = conformance_node("the real nest client")

    def run(bodies: list[bytes]) -> list[Result]:
        items = [
            {"base64": base64.b64encode(body).decode(), "piece": LARGE_PIECE if len(body) > LARGE_BODY else PIECE}
            for body in bodies
        ]
        done = subprocess.run(
            [node, str(HARNESS), "--batch"],
            cwd=CONFORMANCE,
            input=json.dumps(items).encode(),
            capture_output=True,
            timeout=120,
        )
        if done.returncode != 0:
            pytest.fail(f"the nest client harness failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
        results = json.loads(done.stdout)
        assert len(results) == len(bodies)
        return results

    return run


# -- what the client must show ---------------------------------------------------------------


@dataclass
class Call:
    name: str | None = None  # None: never announced by the source
    kind: str = "read"
    input: Any = None
    has_input: bool = False
    outcome: tuple[str, Any] | None = None  # ("output", value) / ("error", text) / ("denied", None)


@dataclass
class Expected:
    text: str
    reasoning: str
    calls: dict[str, Call]
    layout: list[tuple[str, str]]  # text runs and tool calls, in order
    error: str | None
    reattach: bool = False  # a re-attach's meta names no thread: the published client ignores it


def _layout(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent text runs merged, empty ones dropped: only text-versus-tool order counts."""
    out: list[tuple[str, str]] = []
    for kind, value in items:
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + value)
        elif kind != "text" or value:
            out.append((kind, value))
    return out


TOOL_EVENTS = (ToolCall, ToolInputStart, ToolOutput, ToolError, ToolDenied, Elicitation, ToolApprovalRequest)


def expected_from(events: list[Event]) -> Expected:
    """What a client must render for the stream that decodes to ``events``."""
    calls: dict[str, Call] = {}
    items: list[tuple[str, str]] = []
    mentioned: set[str] = set()
    error = None
    for e in events:
        t = type(e)
        call_id = getattr(e, "call_id", None)
        if t in TOOL_EVENTS and call_id not in mentioned:
            mentioned.add(call_id)
            items.append(("tool", call_id))
        if t is TextDelta:
            items.append(("text", e.text))
        elif t in (ToolCall, ToolInputStart):
            call = calls.setdefault(e.call_id, Call(name=e.name))
            call.kind = "action" if e.tool_kind == "action" else "read"
            if t is ToolCall:
                if e.input is not UNSET:
                    call.input, call.has_input = json.loads(bytes(e.input)), True
                elif isinstance(e.arguments_json, str):
                    call.input, call.has_input = json.loads(e.arguments_json), True
        elif t is ToolOutput:
            calls.setdefault(e.call_id, Call()).outcome = ("output", json.loads(bytes(e.output)))
        elif t is ToolError:
            calls.setdefault(e.call_id, Call()).outcome = ("error", e.error)
        elif t is ToolDenied:
            calls.setdefault(e.call_id, Call()).outcome = ("denied", None)
        elif t is Terminal and e.status not in ("succeeded", "cancelled"):
            # A cancelled run ends with a normal `done` (0.5.5 drops the `cancelled` frame).
            error = e.failure.message if e.failure else DEFAULT_MESSAGES[e.status]
    return Expected(
        text="".join(e.text for e in events if type(e) is TextDelta),
        reasoning="".join(e.text for e in events if type(e) is ReasoningDelta),
        calls=calls,
        layout=_layout(items),
        error=error,
        reattach=any(type(e) is RunStart and e.resumed is True for e in events),
    )


def check(result: Result, expected: Expected, *, denied_must_settle: bool = False) -> None:
    """Assert the real client's view of one stream matches ``expected``."""
    chunks = result["chunks"]
    types = [c["type"] for c in chunks]
    assert result["schemaErrors"] == [], "chunks the AI SDK's uiMessageChunkSchema rejects"
    if expected.reattach:  # as with the real server's GET …/stream: the run id comes from the header
        assert result["meta"]["onMeta"] is None, "a re-attach's meta gained a thread id"
    else:
        assert result["meta"]["onMeta"] is not None, "the client did not accept the `event: meta` frame"
    assert types[:1] == ["start"]
    if expected.error is None:
        assert result["errors"] == [], f"the client failed: {result['errors']}"
        assert types[-1] == "finish" and "error" not in types
    else:
        assert result["errors"] == [{"source": "error-chunk", "message": expected.error}]
        assert types.count("error") == 1 and chunks[-1] == {"type": "error", "errorText": expected.error}

    parts = result["message"]["parts"] if result["message"] else []
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    assert text == expected.text
    assert "".join(p["text"] for p in parts if p["type"] == "reasoning") == expected.reasoning
    tool_parts = {p["toolCallId"]: p for p in parts if "toolCallId" in p}
    assert set(expected.calls) <= set(tool_parts), "tool calls missing from the message"
    seen = _layout(
        [
            ("text", p["text"]) if p["type"] == "text" else ("tool", p["toolCallId"])
            for p in parts
            if p["type"] == "text" or "toolCallId" in p
        ]
    )
    assert seen == expected.layout, "text and tool calls out of order"

    for call_id, call in expected.calls.items():
        part = tool_parts[call_id]
        if call.name is not None:
            assert part["type"] == f"tool-{call.name}"
            assert part.get("toolMetadata") == {"toolKind": call.kind}
        if call.has_input:
            assert part["input"] == call.input
        if call.outcome is None:
            assert part["state"] == "input-available"
        elif call.outcome[0] == "output":
            assert (part["state"], part.get("output")) == ("output-available", call.outcome[1])
        elif call.outcome[0] == "error":
            assert (part["state"], part.get("errorText")) == ("output-error", call.outcome[1])
        elif denied_must_settle:
            assert part["state"] in ("output-error", "output-denied"), f"denied call {call_id} shown as {part['state']}"


# -- golden scenarios, through streambridge --------------------------------------------------

GOLDEN_CASES = [(s, c) for s in SCENARIOS for c in CODECS]


def to_nest(scenario: str, source: str) -> bytes:
    return b"".join(translate([golden(scenario, source)], source, "nest"))


@pytest.fixture(scope="session")
def golden_results(nest_client: Harness) -> dict[tuple[str, str], Result]:
    results = nest_client([to_nest(s, c) for s, c in GOLDEN_CASES])
    return dict(zip(GOLDEN_CASES, results, strict=True))


@pytest.mark.parametrize("source", CODECS)
def test_golden_through_real_client(source: str, golden_results: dict) -> None:
    """One test per source walks every golden, failing once naming each failing file."""
    findings = Findings(f"goldens of {source} through the real nest client")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, source)):
            check(golden_results[scenario, source], expected_from(list(CORPUS.events(scenario, source))))
    findings.check()


# A nest source already speaking the newer generation (approval frames, `tool-output-denied`)
# is passed on in that generation: a 0.5.5 client does not understand it whoever writes it.
# So is any source whose denied call went through approval events (agentfootprint carries nest's
# approval frames as they were): the encoder keeps the generation the call was made in.


def _published_denial(events: list) -> bool:
    denied = {e.call_id for e in events if type(e) is ToolDenied}
    return bool(denied) and not any(type(e) is ToolApprovalRequest and e.call_id in denied for e in events)


DENIED_CASES = [(s, c) for s, c in GOLDEN_CASES if c != "nest" and _published_denial(decode(c, golden(s, c)))]


@pytest.mark.parametrize(("scenario", "source"), DENIED_CASES, ids=[f"{s}-{c}" for s, c in DENIED_CASES])
def test_denied_call_settles_in_real_client(scenario: str, source: str, golden_results: dict) -> None:
    """A denial translated into nest uses the published form, which a 0.5.5 client settles."""
    expected = expected_from(decode(source, golden(scenario, source)))
    check(golden_results[scenario, source], expected, denied_must_settle=True)


# -- the real server's captures, as a baseline -------------------------------------------------


@pytest.fixture(scope="session")
def capture_results(nest_client: Harness) -> dict[str, Result]:
    paths = capture_paths()
    assert len(paths) == 3
    return dict(zip((p.name for p in paths), nest_client([capture_body(p) for p in paths]), strict=True))


@pytest.mark.parametrize("path", capture_paths(), ids=lambda p: p.name)
def test_capture_through_real_client(path: Path, capture_results: dict) -> None:
    result = capture_results[path.name]
    check(result, expected_from(decode("nest", capture_body(path))))
    assert result["request"]["url"].endswith("/agent/chat") and result["request"]["method"] == "POST"
    meta = json.loads(capture_body(path).split(b"\n\n")[0].split(b"data: ", 1)[1])
    assert result["meta"]["onMeta"] == meta


def test_capture_outcomes_are_as_recorded(capture_results: dict) -> None:
    """Pin the baseline itself, independently of streambridge's decoder."""
    read_only = capture_results["01-chat-read-only.http"]["message"]["parts"]
    assert [p["type"] for p in read_only] == [
        "step-start",
        "reasoning",
        "text",
        "tool-getWeather",
        "step-start",
        "text",
    ]
    assert read_only[3]["output"] == {"tempC": 21, "city": "Paris"}
    approved = capture_results["02-chat-action-approved.http"]["message"]["parts"]
    purge = next(p for p in approved if p["type"] == "tool-purgeCache")
    assert (purge["state"], purge["toolMetadata"]) == ("output-available", {"toolKind": "action"})
    failed = capture_results["05-chat-run-failed.http"]
    assert failed["error"] == "provider exploded"
    assert [c["type"] for c in failed["chunks"]] == ["start", "start-step", "error"]


# -- the harness is not vacuous ------------------------------------------------------------------

GHOST_OUTPUT = (
    b'event: meta\ndata: {"runId":"run-x","threadId":"thr-x"}\n\n'
    b'data: {"kind":"step-start"}\n\n'
    b'data: {"kind":"text","text":"Looking it up."}\n\n'
    b'data: {"kind":"tool-output","id":"call-ghost","output":{"ok":true}}\n\n'
    b'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":1},"costUsd":null}\n\n'
    b"event: done\ndata: {}\n\n"
)


CRLF = capture_body(next(p for p in capture_paths() if p.name == "01-chat-read-only.http")).replace(b"\n", b"\r\n")


# Text, a tool call, then more text in the same step: 0.5.5 appends the later text to the first
# text part (the quirk the encoder avoids by opening a new step).
TEXT_TOOL_TEXT = (
    b'event: meta\ndata: {"runId":"run-y","threadId":"thr-y"}\n\n'
    b'data: {"kind":"step-start"}\n\n'
    b'data: {"kind":"text","text":"Before. "}\n\n'
    b'data: {"kind":"tool-input-available","id":"call-1","name":"lookup","input":{},"toolKind":"read"}\n\n'
    b'data: {"kind":"tool-output","id":"call-1","output":1}\n\n'
    b'data: {"kind":"text","text":"After."}\n\n'
    b'data: {"kind":"step-finish","usage":{"inputTokens":1,"outputTokens":1},"costUsd":null}\n\n'
    b"event: done\ndata: {}\n\n"
)


@pytest.fixture(scope="session")
def broken_results(nest_client: Harness) -> list[Result]:
    return nest_client([GHOST_OUTPUT, CRLF, TEXT_TOOL_TEXT])


def test_unannounced_tool_output_fails_in_real_client(broken_results: list[Result]) -> None:
    result = broken_results[0]
    assert result["errors"] == [
        {"source": "reader", "message": 'No tool invocation found for tool call ID "call-ghost".'}
    ]
    assert all("toolCallId" not in p for p in result["message"]["parts"])
    with pytest.raises(AssertionError, match="the client failed"):
        check(result, expected_from(decode("nest", GHOST_OUTPUT)))


def test_crlf_stream_is_empty_in_real_client(broken_results: list[Result]) -> None:
    result = broken_results[1]
    assert [c["type"] for c in result["chunks"]] == ["start", "finish"]
    assert result["message"] is None
    assert result["meta"]["onMeta"] is None
    with pytest.raises(AssertionError, match="did not accept the `event: meta` frame"):
        check(result, expected_from(decode("nest", CRLF)))


def test_text_after_tool_in_one_step_is_misplaced_in_real_client(broken_results: list[Result]) -> None:
    result = broken_results[2]
    assert result["errors"] == []
    parts = [p for p in result["message"]["parts"] if p["type"] != "step-start"]
    assert [(p["type"], p.get("text")) for p in parts] == [("text", "Before. After."), ("tool-lookup", None)]
    with pytest.raises(AssertionError, match="out of order"):
        check(result, expected_from(decode("nest", TEXT_TOOL_TEXT)))

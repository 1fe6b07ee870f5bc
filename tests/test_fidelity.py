"""Fidelity: ``exact`` keeps every byte for a translation back, ``client`` gives a live client
what a native backend of its protocol would send (streambridge/codecs/fidelity.py).

Each law here loops over every registered protocol with goldens and reports every failing case
at once."""

from __future__ import annotations

import functools

import msgspec
import pytest
from msgspec import Raw

from streambridge import StreamError, translate
from streambridge.bridge.config import ConfigError, build_config
from streambridge.codecs import get
from streambridge.codecs.fidelity import FIDELITIES, parse_fidelity
from streambridge.codecs.framing import make_parser
from streambridge.codecs.riding import AI_SDK_SLOT as RIDE
from streambridge.events import (
    ArtifactPresented,
    DataPart,
    Elicitation,
    MessageMetadata,
    RunStart,
    Status,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    ToolApprovalRequest,
    ToolCall,
    ToolInputStart,
    Usage,
)

from .agui_models import problems as agui_problems
from .cli_support import invoke, user_error
from .corpus import CODECS, CORPUS, SCENARIOS, capture_body, capture_paths, decode, golden
from .proxy_support import Upstream, proxy_config, start_proxy, url_of
from .test_proxy_ops import golden_upstream

#: how every carrier's body starts inside its protocol's data part (carrier.carrier_body)
CARRIER_MARKS = (b'"event":{"type":', b'"covers":', b'"whole":true,"event"')


def _client(source: str, target: str, data: bytes) -> bytes:
    return b"".join(translate([data], source, target, fidelity="client"))


@functools.cache
def _client_golden(scenario: str, source: str, target: str) -> bytes:
    """A golden at client fidelity, translated once per process for the three tests reading it."""
    return _client(source, target, golden(scenario, source))


def _frames(target: str, data: bytes) -> int:
    parser = make_parser(get(target).default_framing)
    return len(parser.feed(data) + parser.close())


def test_client_output_has_no_carrier_and_exactly_one_terminal() -> None:
    failures = []
    for scenario in SCENARIOS:
        for source in CODECS:
            for target in CODECS:
                out = _client_golden(scenario, source, target)
                if any(mark in out for mark in CARRIER_MARKS):
                    failures.append(f"{scenario}: {source} → {target}: a carrier in client output")
                try:  # the client's own decoder reads every frame (none is a broken carrier)
                    events = decode(target, out, strict=True)
                except StreamError as exc:
                    failures.append(f"{scenario}: {source} → {target}: {exc}")
                    continue
                terminals = [e for e in events if isinstance(e, Terminal)]
                if len(terminals) != 1:
                    failures.append(f"{scenario}: {source} → {target}: {len(terminals)} terminals")
    assert not failures, "\n".join(failures)


def _said(events: list[object]) -> str:
    """The answer's text: the deltas of the first one's message and part (another message's are
    its own, whether a protocol calls it a message or a part)."""
    deltas = [e for e in events if isinstance(e, TextDelta)]
    first = (deltas[0].message_id, deltas[0].part_id) if deltas else None
    return "".join(e.text for e in deltas if (e.message_id, e.part_id) == first)


def test_client_output_keeps_the_answer() -> None:
    """What a user reads survives: the answer's text, in order, and whether the run succeeded."""
    failures = []
    for scenario in SCENARIOS:
        for source in CODECS:
            want = list(CORPUS.events(scenario, source))
            [want_end] = [e for e in want if isinstance(e, Terminal)]
            for target in CODECS:
                got = decode(target, _client_golden(scenario, source, target))
                [got_end] = [e for e in got if isinstance(e, Terminal)]
                if (got_end.status == "succeeded") != (want_end.status == "succeeded"):  # (a target may lack the word)
                    failures.append(f"{scenario}: {source} → {target}: status {got_end.status}, not {want_end.status}")
                if _said(got) != _said(want):
                    failures.append(f"{scenario}: {source} → {target}: the text said differs")
    assert not failures, "\n".join(failures)


def test_client_output_is_smaller_than_exact() -> None:
    """Carriers dropped: a client never receives more frames at ``client`` than at ``exact``,
    but for one frame per artifact derived from a tool output (an archive needs none: the tool
    output says it; a live client is shown it as an artifact)."""
    failures = []
    for scenario in SCENARIOS:
        for source in CODECS:
            derived = sum(
                1 for e in CORPUS.events(scenario, source) if isinstance(e, ArtifactPresented) and e.synthetic
            )
            for target in CODECS:
                exact = CORPUS.converted(scenario, source, target)  # (what translate writes: the chunking law)
                client = _client_golden(scenario, source, target)
                if _frames(target, client) > _frames(target, exact) + derived:
                    failures.append(f"{scenario}: {source} → {target}")
    assert not failures, "\n".join(failures)


def test_real_captures_reach_every_client_with_few_data_parts() -> None:
    """Real Nest server streams: data parts at most 5 % of what any client receives."""
    failures = []
    for path in capture_paths():
        body = capture_body(path)
        for target in CODECS:  # (agentfootprint:host too: its tool calls stay on the server, as a host's do)
            out = _client("nest", target, body)
            parts = sum(isinstance(e, DataPart) for e in decode(target, out))
            share = parts / _frames(target, out)
            if share > 0.05:
                failures.append(f"{path.name} → {target}: data parts {share:.0%} of frames")
    assert not failures, "\n".join(failures)


def test_ai_sdk_carriers_are_transient_or_ride_at_exact() -> None:
    """``useChat`` keeps a non-transient data part in the message: a carrier never is one; it
    is a transient data part, or it rides on its own chunk's ``providerMetadata``."""
    failures, ridden = [], 0
    for scenario in SCENARIOS:
        for source in CODECS:
            out = b"".join(translate([golden(scenario, source)], source, "ai-sdk"))
            for frame in make_parser("sse").feed(out):
                rides = RIDE in frame.data
                ridden += rides
                carried = any(mark in frame.data for mark in CARRIER_MARKS)
                if carried and not rides and not frame.data.endswith(b',"transient":true}'):
                    failures.append(f"{scenario}: {source}: {frame.data[:80]!r}")
    assert not failures, "\n".join(failures)
    assert ridden > 50  # (each a frame the riding saves)


def test_a_riding_carrier_comes_back_as_its_event_and_its_chunk_stays_as_ai_reads_it() -> None:
    """A carrier on its chunk (codecs/riding.py): the ai-sdk decoder gives the carried event back, and
    the chunk without it is the chunk the encoder would write for a plain event."""
    call = ToolInputStart(call_id="c1", name="refund", tool_kind="action")  # ai has no word for the kind
    out = get("ai-sdk").encoder().encode([RunStart(synthetic=True), call])
    (frame,) = [f for f in make_parser("sse").feed(out) if b"tool-input-start" in f.data]
    assert frame.data == (
        b'{"type":"tool-input-start","toolCallId":"c1","toolName":"refund","providerMetadata":{"streambridge":'
        b'{"event":{"type":"tool-input-start","callId":"c1","name":"refund","toolKind":"action"}}}}'
    )
    assert [e for e in get("ai-sdk").decoder().feed(out) if type(e) is ToolInputStart] == [call]
    # ai 6.0.0 has no providerMetadata on tool-input-start: there the carrier is a part of its own
    assert RIDE not in get("ai-sdk@6").encoder().encode([RunStart(), call])


def _ai_sdk_client(*events: object) -> list[dict[str, object]]:
    encoder = get("ai-sdk").encoder(fidelity="client")
    out = encoder.encode([RunStart(run_id="r1"), *events, Terminal()]) + encoder.close()  # type: ignore[list-item]
    frames = make_parser("sse").feed(out)
    return [msgspec.json.decode(f.data) for f in frames if f.data != b"[DONE]"]


def test_a_question_to_the_user_stays_in_the_message_and_passing_state_does_not() -> None:
    chunks = _ai_sdk_client(
        TextDelta(text="Hi"), Elicitation(call_id="c1", request=Raw(b'{"q":"Which?"}')), Status(label="thinking")
    )
    parts = {c["type"]: c for c in chunks if str(c["type"]).startswith("data-")}
    assert parts["data-elicitation"] == {
        "type": "data-elicitation",
        "data": {"callId": "c1", "request": {"q": "Which?"}},
    }
    assert parts["data-status"]["transient"] is True
    assert "data-run-start" not in parts  # the run's ids are transport detail for useChat


def test_fidelity_names_are_checked() -> None:
    assert [parse_fidelity(name) for name in FIDELITIES] == ["exact", "client"]
    with pytest.raises(ValueError, match="unknown fidelity 'lossless': expected 'exact' or 'client'"):
        parse_fidelity("lossless")
    with pytest.raises(ValueError, match="unknown fidelity"):
        translate([b""], "nest", "oma", fidelity="lossless")


def _route(**settings: object):  # type: ignore[no-untyped-def]
    return build_config(
        upstream="http://127.0.0.1:9/agent", source="nest", target="ai-sdk", settings=settings, environ={}
    ).routes[0]


def test_a_proxy_route_serves_clients_at_client_fidelity_unless_told() -> None:
    assert _route().fidelity == "client"
    assert _route(fidelity="exact").fidelity == "exact"
    with pytest.raises(ConfigError, match="fidelity must be 'exact' or 'client'"):
        _route(fidelity="lossless")


def test_convert_is_exact_by_default_and_client_when_asked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "run.sse"
    source.write_bytes(golden("approval", "nest"))
    exact = invoke("convert", source, "--to", "ai-sdk")
    client = invoke("convert", source, "--to", "ai-sdk", "--fidelity", "client")
    assert exact.exit_code == 0 and client.exit_code == 0
    # the run's ids: riding forward on a chunk at exact, a native backend never says them
    assert b'{"type":"run-start"' in exact.stdout_bytes and b"run-start" not in client.stdout_bytes
    user_error(invoke("convert", source, "--to", "ai-sdk", "--fidelity", "lossless"), "--fidelity: unknown fidelity")


async def test_a_client_route_serves_what_the_core_gives_at_client_fidelity(aiohttp_server, aiohttp_client) -> None:  # type: ignore[no-untyped-def]
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, "approval"))
    routes = {level: proxy_config(url_of(server, "/up"), "agentkit", "oma", fidelity=level) for level in FIDELITIES}
    served = {}
    for level, config in routes.items():
        client = await start_proxy(aiohttp_client, config)
        served[level] = await (await client.post("/", json={"prompt": "hi"})).read()
    data = golden("approval", "agentkit")
    assert served["client"] == b"".join(translate([data], "agentkit", "oma", strict=True, fidelity="client"))
    assert served["exact"] == b"".join(translate([data], "agentkit", "oma", strict=True))
    assert served["client"] != served["exact"]


def test_a_live_ai_sdk_client_reads_the_run_in_ai_s_own_fields() -> None:
    """At client fidelity: ``finish`` says its reason (as ``streamText`` does), the message's
    metadata the run's ids (on ``start``) and its usage and model (on ``finish``)."""
    run = RunStart(run_id="r1", thread_id="t1")
    usage = Usage(input_tokens=3, output_tokens=10, reasoning_tokens=2)
    end = Terminal(text="Hi", usage=usage, model="m")
    chunks = _chunks("ai-sdk", "client", run, TextDelta(text="Hi"), end)
    assert chunks[0] == {"type": "start", "messageMetadata": {"runId": "r1", "threadId": "t1"}}
    assert chunks[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {
            "usage": {"inputTokens": 3, "outputTokens": 10, "totalTokens": 13, "reasoningTokens": 2},
            "model": "m",
        },
    }
    blocked = _chunks("ai-sdk", "client", run, Terminal(status="blocked"))
    assert blocked[-1] == {"type": "finish", "finishReason": "content-filter"}
    assert _chunks("ai-sdk@5", "client", run, Terminal())[-1] == {"type": "finish"}  # (5.0.0 reads none)


def test_a_live_ag_ui_client_reads_usage_metadata_and_approvals_where_ag_ui_keeps_them() -> None:
    """At client fidelity: the run's usage and an AI SDK message's metadata on ``RUN_FINISHED``
    (valid for ag-ui-protocol's models), an approval only as the outcome's interrupt, no step
    the source did not name."""
    events = [
        RunStart(run_id="r1", thread_id="t1"),
        StepStart(),
        ToolCall(call_id="c1", name="refund", input=Raw(b"{}")),
        MessageMetadata(metadata=Raw(b'{"a":1}')),
        ToolApprovalRequest(call_id="c1"),
        StepFinish(),
        Terminal(usage=Usage(input_tokens=3, output_tokens=10), model="m"),
    ]
    encoder = get("ag-ui").encoder(fidelity="client")
    body = encoder.encode(events) + encoder.close()
    chunks = [msgspec.json.decode(f.data) for f in make_parser("sse").feed(body)]
    assert [c["type"] for c in chunks] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    finished = chunks[-1]
    assert finished["usage"] == [{"model": "m", "inputTokens": 3, "outputTokens": 10, "totalTokens": 13}]
    assert finished["metadata"] == {"a": 1}
    assert [i["toolCallId"] for i in finished["outcome"]["interrupts"]] == ["c1"]
    assert agui_problems(body) == []


def test_an_ag_ui_carrier_rides_on_its_event_s_raw_event() -> None:
    call = ToolInputStart(call_id="c1", name="refund", tool_kind="action")  # AG-UI has no word for the kind
    out = get("ag-ui").encoder().encode([RunStart(run_id="r1", thread_id="t1"), call])
    (frame,) = [f for f in make_parser("sse").feed(out) if b"TOOL_CALL_START" in f.data]
    assert frame.data.endswith(
        b',"rawEvent":{"streambridge":{"event":{"type":"tool-input-start","callId":"c1","name":"refund","toolKind":"action"}}}}'
    )
    assert [e for e in get("ag-ui").decoder().feed(out) if type(e) is ToolInputStart] == [call]
    assert agui_problems(out) == []


def _chunks(codec: str, fidelity: str, *events: object) -> list[dict[str, object]]:
    encoder = get(codec).encoder(fidelity=fidelity)  # type: ignore[arg-type]
    out = encoder.encode(list(events)) + encoder.close()  # type: ignore[arg-type]
    return [msgspec.json.decode(f.data) for f in make_parser("sse").feed(out) if f.data != b"[DONE]"]

"""Same message, not just valid chunks: what a real client builds from streambridge's output at
``client`` fidelity equals what it builds from a native producer's stream of the same run.

One agent run (tests/native_producers.py: pydantic-ai's own AI SDK and AG-UI adapters over one
streaming FunctionModel) is streamed natively in both protocols. Each native stream is translated
into the other protocol at ``client`` fidelity and folded by the real client of that protocol
(``readUIMessageStream`` of ai 7, 6 and 5; ``@ag-ui/client``'s ``HttpAgent`` with
``defaultApplyEvents``); the result is compared with folding the other native stream: the same
parts in the same order, text, reasoning, tool states, inputs, outputs and approvals equal, ids
and provider metadata aside. The translation must also be no longer than the native stream
(frames ≤ 1.1x, bytes ≤ 1.3x) and carry data parts in at most 5 % of its frames. And the
laws hold on them as on the goldens: a native stream comes back byte for byte from its own codec
and from every other (at exact fidelity), though its producer orders members its own way.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from streambridge import codecs, translate
from streambridge.codecs.riding import NEST_SLOT, ridden
from streambridge.events import DataPart

from .native_producers import SCENARIOS, native_streams
from .tools import CONFORMANCE, conformance_node

AI_SDK_RELEASES = (7, 6, 5)
#: the scenarios an ai release can show: ai 5 has no tool approvals (the producer writes for ai 6+)
SHOWN_BY = {7: SCENARIOS, 6: SCENARIOS, 5: tuple(s for s in SCENARIOS if s != "approval")}
#: (native source protocol, client protocol)
DIRECTIONS = (("ag-ui", "ai-sdk"), ("ai-sdk", "ag-ui"))
Runs = dict[str, dict[str, bytes]]
Fold = Callable[[dict[str, bytes]], dict[str, Any]]


@pytest.fixture(scope="module")
def runs() -> Runs:
    """Per scenario: both native streams, and each translated into the other at client fidelity."""
    made: Runs = {}
    for scenario in SCENARIOS:
        native = native_streams(scenario)
        made[scenario] = dict(native)
        for source, client in DIRECTIONS:
            made[scenario][f"{client} from {source}"] = b"".join(
                translate([native[source]], source, client, fidelity="client")
            )
    return made


def run_node(node: str, script: str, batch: list[dict[str, Any]], *flags: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [node, script, *flags], cwd=CONFORMANCE, input=json.dumps(batch).encode(), capture_output=True, timeout=300
    )
    if done.returncode != 0:
        pytest.fail(f"{script} failed ({done.returncode}):\n{done.stderr.decode()}", pytrace=False)
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


@pytest.fixture(scope="module")
def node() -> str:
    return conformance_node("the real AI SDK and AG-UI clients")


def ui_parts(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A UIMessage's parts as a user sees them: ids and provider metadata aside."""
    assert message is not None
    parts = []
    for part in message["parts"]:
        shown = {k: v for k, v in part.items() if k not in ("id", "providerMetadata", "callProviderMetadata")}
        if "approval" in shown:
            shown["approval"] = {k: v for k, v in shown["approval"].items() if k != "id"}
        parts.append(shown)
    return parts


def ag_ui_messages(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages ``@ag-ui/client`` built, ids aside (an assistant message that only calls a
    tool says no content: empty or absent, as producers differ)."""
    shown = []
    for message in result["agent"]["messages"]:
        kept = {k: v for k, v in message.items() if k != "id"}
        if kept.get("content") == "" and kept.get("toolCalls"):
            del kept["content"]
        shown.append(kept)
    return shown


def test_use_chat_builds_from_an_ag_ui_agent_the_message_of_its_native_ai_sdk_stream(node: str, runs: Runs) -> None:
    batch = [
        {"name": f"{scenario}|{kind}|{release}", "version": release, "body": runs[scenario][kind].decode()}
        for release in AI_SDK_RELEASES
        for scenario in SHOWN_BY[release]
        for kind in ("ai-sdk", "ai-sdk from ag-ui")
    ]
    folded = {r["name"]: r for r in run_node(node, "ai-sdk-check.mjs", batch)}
    failures = []
    for release in AI_SDK_RELEASES:
        for scenario in SHOWN_BY[release]:
            native, ours = folded[f"{scenario}|ai-sdk|{release}"], folded[f"{scenario}|ai-sdk from ag-ui|{release}"]
            assert native["errors"] == [], (scenario, release, native["errors"])  # (the producer itself)
            if ours["errors"] or ui_parts(ours["message"]) != ui_parts(native["message"]):
                failures.append(
                    (scenario, release, ours["errors"], ui_parts(ours["message"]), ui_parts(native["message"]))
                )
    assert failures == [], "\n".join(map(repr, failures))


def test_an_ag_ui_client_builds_from_an_ai_sdk_backend_the_messages_of_its_native_stream(node: str, runs: Runs) -> None:
    batch = [
        {"name": f"{scenario}|{kind}", "sse": runs[scenario][kind].decode()}
        for scenario in SCENARIOS
        for kind in ("ag-ui", "ag-ui from ai-sdk")
    ]
    folded = {r["name"]: r for r in run_node(node, "ag-ui-check.mjs", batch)}
    failures = []
    for scenario in SCENARIOS:
        native, ours = folded[f"{scenario}|ag-ui"], folded[f"{scenario}|ag-ui from ai-sdk"]
        assert native["ok"], (scenario, native)
        same = ag_ui_messages(ours) == ag_ui_messages(native)
        outcome = ours["agent"].get("outcome") == native["agent"].get("outcome")
        if not (ours["ok"] and same and outcome):
            failures.append(
                (scenario, ours.get("error"), ours["warnings"], ag_ui_messages(ours), ag_ui_messages(native))
            )
    assert failures == [], "\n".join(map(repr, failures))


def frames_of(body: bytes) -> list[bytes]:
    """An SSE body's frames (both sides write plain ``\n\n``-ended frames)."""
    return [frame + b"\n\n" for frame in body.split(b"\n\n") if frame.strip()]


def data_parts(body: bytes, protocol: str) -> int:
    """How many of a client's frames its protocol's decoder reads as data parts."""
    decoder = codecs.get(protocol).decoder("sse")
    count = 0
    for frame in frames_of(body):
        count += any(type(event) is DataPart for event in decoder.feed(frame))
    return count


def test_a_client_gets_no_more_than_a_native_backend_sends(runs: Runs) -> None:
    """Per run: frames ≤ 1.1x and bytes ≤ 1.3x the native stream of the client's protocol, and
    data parts at most 5 % of the frames over all runs."""
    too_long, parts, frames = [], 0, 0
    for scenario in SCENARIOS:
        for source, client in DIRECTIONS:
            ours, native = runs[scenario][f"{client} from {source}"], runs[scenario][client]
            frame_ratio = len(frames_of(ours)) / len(frames_of(native))
            byte_ratio = len(ours) / len(native)
            if frame_ratio > 1.1 or byte_ratio > 1.3:
                too_long.append((scenario, client, round(frame_ratio, 2), round(byte_ratio, 2)))
            parts += data_parts(ours, client)
            frames += len(frames_of(ours))
    assert too_long == []
    assert parts <= 0.05 * frames, (parts, frames)


def test_exact_output_stays_within_a_native_backends_frames(runs: Runs) -> None:
    """At exact, carriers ride on frames (forward, for events with no frame; late, after a frame
    with no slot, such as ai-sdk's strict ``tool-input-delta``): frames ≤ 1.15x the native
    stream of the client's protocol."""
    over = []
    for scenario in SCENARIOS:
        for source, client in DIRECTIONS:
            ours = b"".join(translate([runs[scenario][source]], source, client))
            ratio = len(frames_of(ours)) / len(frames_of(runs[scenario][client]))
            if ratio > 1.15:
                over.append((scenario, client, round(ratio, 2)))
    assert over == []


def test_native_streams_come_back_byte_for_byte_through_every_codec(runs: Runs) -> None:
    """Round trip and cross trip on streams no one here wrote: pydantic-ai writes ``delta``
    before ``id`` and a ``timestamp`` first, which its codec keeps as received."""
    failures = []
    for scenario in SCENARIOS:
        for source in ("ai-sdk", "ag-ui"):
            native = runs[scenario][source]
            for target in codecs.registered():
                out = b"".join(translate([native], source, target))
                back = b"".join(translate([out], target, source))
                if back != native:
                    failures.append((scenario, source, target))
    assert failures == [], "\n".join(map(repr, failures))


def as_nest_shows(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message as the published nest client (0.5.5) says it: every tool part with its call's
    ``toolMetadata.toolKind``, and a call waiting for approval as an ``action`` call with its
    input and no output (that client has no approval state: docs/mapping.md)."""
    shown = []
    for part in parts:
        if part["type"].startswith("tool-"):
            waits = part["state"] == "approval-requested"
            part = {k: v for k, v in part.items() if k != "approval"}
            part["toolMetadata"] = {"toolKind": "action" if waits else "read"}
            if waits:
                part["state"] = "input-available"
        shown.append(part)
    return shown


def test_the_nest_client_builds_from_an_ai_sdk_or_ag_ui_agent_the_message_use_chat_builds_natively(
    node: str, runs: Runs
) -> None:
    """The published nest React transport (``@dudousxd/nestjs-agent-react``) turns nest SSE into
    AI SDK chunks and ``readUIMessageStream`` folds them: in front of either native agent it
    builds the message ``useChat`` (ai 7) builds from that agent's own AI SDK stream, as nest
    says it (:func:`as_nest_shows`)."""
    kinds = [(scenario, source) for scenario in SCENARIOS for source in ("ai-sdk", "ag-ui")]
    bodies = [b"".join(translate([runs[s][source]], source, "nest", fidelity="client")) for s, source in kinds]
    batch = [{"base64": base64.b64encode(body).decode()} for body in bodies]
    folded = run_node(node, "nest-client.mjs", batch, "--batch")
    natives = {
        r["name"].split("|")[0]: r
        for r in run_node(
            node,
            "ai-sdk-check.mjs",
            [
                {"name": f"{scenario}|native", "version": 7, "body": runs[scenario]["ai-sdk"].decode()}
                for scenario in SCENARIOS
            ],
        )
    }
    failures = []
    for (scenario, source), ours in zip(kinds, folded, strict=True):
        want = as_nest_shows(ui_parts(natives[scenario]["message"]))
        if ours["errors"] or ours["schemaErrors"] or ui_parts(ours["message"]) != want:
            failures.append((scenario, source, ours["errors"], ours["schemaErrors"], ui_parts(ours["message"]), want))
    assert failures == [], "\n".join(map(repr, failures))


def without_riders(body: bytes) -> bytes:
    """``body`` with every carrier riding on a nest frame taken off it (codecs/riding.py)."""
    frames = []
    for frame in frames_of(body):
        head, _, data = frame.rstrip(b"\n").rpartition(b"data: ")
        carried = ridden(data, NEST_SLOT)
        frames.append(head + b"data: " + (carried[1] if carried else data) + b"\n\n")
    return b"".join(frames)


def test_the_nest_client_passes_over_a_carrier_riding_on_a_frame(node: str, runs: Runs) -> None:
    """At ``exact`` a carrier rides on the nest frame it describes, in a ``streambridge`` member:
    the published client builds the same chunks and message as from the frames without it."""
    bodies = [
        b"".join(translate([runs[scenario][source]], source, "nest"))
        for scenario in SCENARIOS
        for source in ("ai-sdk", "ag-ui")
    ]
    assert sum(body.count(NEST_SLOT) for body in bodies) > 20  # (what is shown)
    batch = [{"base64": base64.b64encode(b).decode()} for body in bodies for b in (body, without_riders(body))]
    folded = run_node(node, "nest-client.mjs", batch, "--batch")
    for riding, bare in zip(folded[::2], folded[1::2], strict=True):
        assert riding["errors"] == riding["schemaErrors"] == []
        assert (riding["chunks"], riding["message"]) == (bare["chunks"], bare["message"])

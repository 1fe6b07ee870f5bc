"""Artifacts handed to the screen by reference: the placeholder text, recognising a ``present``
result in any tool output, and the artifact's own frame in every protocol."""

from __future__ import annotations

import json

import pytest
from msgspec import UNSET, Raw

from streambridge import Translator
from streambridge.codecs.artifacts import placeholder, present_result, size_text
from streambridge.events import (
    ArtifactPresented,
    ArtifactRefused,
    ArtifactSnapshot,
    RunStart,
    Terminal,
    ToolCall,
    ToolOutput,
    UiComponent,
)

from .corpus import CODECS, canonical, convert, decode, encode

CHART = ArtifactSnapshot(kind="chart/spec", media_type="application/json", bytes=41210, label="Q3 sales by region")


def snapshot(kind: str = "chart/spec", size: int = 41210, label: str | None = None) -> ArtifactSnapshot:
    return ArtifactSnapshot(
        kind=kind, media_type="application/json", bytes=size, label=UNSET if label is None else label
    )


# -- the placeholder --------------------------------------------------------------------------


def test_the_placeholder_of_the_docs_example() -> None:
    assert placeholder(CHART, "bar-chart") == "Chart — 'Q3 sales by region' (bar-chart, 41 KB)"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (999, "999 bytes"),
        (1000, "1 KB"),
        (1499, "1 KB"),
        (1500, "2 KB"),  # half up, every time (not to the even neighbour)
        (2500, "3 KB"),
        (41210, "41 KB"),
        (999_499, "999 KB"),
        (999_500, "1 MB"),  # never "1000 KB"
        (2_480_512, "2 MB"),
        (10**12, "1 TB"),
    ],
)
def test_sizes_are_decimal_and_rounded_half_up(size: int, text: str) -> None:
    assert size_text(size) == text


def test_zero_bytes_and_the_kilobyte_edge_in_a_placeholder() -> None:
    assert placeholder(snapshot(size=0), "table") == "Chart (table, 0 bytes)"
    assert placeholder(snapshot(size=999), "table") == "Chart (table, 999 bytes)"
    assert placeholder(snapshot(size=1000), "table") == "Chart (table, 1 KB)"


def test_no_label_leaves_out_the_label_and_its_dash() -> None:
    assert placeholder(snapshot(), "bar-chart") == "Chart (bar-chart, 41 KB)"
    assert placeholder(snapshot(label="   "), "bar-chart") == "Chart (bar-chart, 41 KB)"  # blank is none


@pytest.mark.parametrize(
    ("kind", "noun"),
    [
        ("", "Artifact"),
        ("/spec", "Artifact"),
        ("chart/spec", "Chart"),
        ("image/png", "Image"),
        ("dataFrame", "DataFrame"),
    ],
)
def test_the_noun_is_the_kinds_first_segment_capitalised(kind: str, noun: str) -> None:
    assert placeholder(snapshot(kind=kind), "x") == f"{noun} (x, 41 KB)"


def test_non_ascii_and_quoted_labels_are_kept_as_written_on_one_line() -> None:
    assert placeholder(snapshot(label="Umsatz Zürich — Q3"), "table") == "Chart — 'Umsatz Zürich — Q3' (table, 41 KB)"
    assert placeholder(snapshot(label='Bob\'s "best" chart'), "x") == "Chart — 'Bob's \"best\" chart' (x, 41 KB)"
    assert placeholder(snapshot(label="two\nlines\t here"), "x") == "Chart — 'two lines here' (x, 41 KB)"


def test_an_empty_as_leaves_only_the_size() -> None:
    assert placeholder(snapshot(), "") == "Chart (41 KB)"


# -- a present result in a tool output ------------------------------------------------------

RESULT = {
    "presented": True,
    "ref": "art_9mTw4kQ2xV7pL0sB3nR8yZ",
    "as": "bar-chart",
    "snapshot": {"kind": "chart/spec", "mediaType": "application/json", "bytes": 41210, "label": "Q3 sales by region"},
}


@pytest.mark.parametrize("form", ["object", "JSON string"])
def test_a_present_result_is_recognised_as_an_object_or_a_json_string(form: str) -> None:
    text = json.dumps(RESULT)
    output = Raw(text.encode() if form == "object" else json.dumps(text).encode())
    artifact = present_result(output, "call_1")
    assert artifact == ArtifactPresented(
        ref=RESULT["ref"], as_="bar-chart", snapshot=CHART, tool_call_id="call_1", synthetic=True
    )


@pytest.mark.parametrize(
    "output",
    [
        {**RESULT, "presented": False},
        {k: v for k, v in RESULT.items() if k != "snapshot"},
        {**RESULT, "ref": 7},
        {"placed": True, "ref": "art_x", "kind": "tool-result/search"},  # placement, not presentation
        "presented",
        ["presented"],
    ],
)
def test_other_tool_outputs_present_nothing(output: object) -> None:
    assert present_result(Raw(json.dumps(output).encode()), "c") is None


@pytest.mark.parametrize("codec", CODECS)
def test_any_protocols_present_result_surfaces_as_an_artifact(codec: str) -> None:
    """A ``present`` call proxied through a framework that knows nothing of artifacts: its
    decoder derives the artifact from the tool output, once, after the output."""
    events = [
        RunStart(run_id="r"),
        ToolCall(call_id="c1", name="present", input=Raw(b'{"ref":"art_9mTw4kQ2xV7pL0sB3nR8yZ","as":"bar-chart"}')),
        ToolOutput(call_id="c1", output=Raw(json.dumps(json.dumps(RESULT)).encode())),
        Terminal(status="succeeded"),
    ]
    back = decode(codec, encode(codec, events))
    artifacts = [e for e in back if isinstance(e, ArtifactPresented)]
    assert [(a.ref, a.as_, a.snapshot, a.tool_call_id, a.synthetic) for a in artifacts] == [
        (RESULT["ref"], "bar-chart", CHART, "c1", True)
    ]
    assert isinstance(back[back.index(artifacts[0]) - 1], ToolOutput)


# -- the artifact's own frame --------------------------------------------------------------


PRESENTED = ArtifactPresented(ref="art_9mTw4kQ2xV7pL0sB3nR8yZ", as_="bar-chart", snapshot=CHART, tool_call_id="c1")
REFUSED = ArtifactRefused(op="dispatch", reason="missing-or-expired", ref="art_Zx8Cv2Bn5Mq1Wr7Ty3Ue9I", tool="present")
NATIVE_FORM = {
    "nest": b'"kind":"ui","id":"art_9mTw4kQ2xV7pL0sB3nR8yZ","component":"bar-chart"',
    "agentkit": b'"type":"data-artifact","messageId":"msg-r","id":"art_9mTw4kQ2xV7pL0sB3nR8yZ"',
    "oma": b'"type":"data-artifact","data":{"id":"art_9mTw4kQ2xV7pL0sB3nR8yZ"',
    "agentfootprint": b'"type":"agentfootprint.artifacts.presented","payload":{"ref":"art_9mTw4kQ2xV7pL0sB3nR8yZ"',
}


@pytest.mark.parametrize("codec", CODECS)
def test_every_protocol_writes_an_artifact_in_a_form_of_its_own_and_reads_it_back(codec: str) -> None:
    events = [RunStart(run_id="r"), PRESENTED, REFUSED, Terminal(status="succeeded", text="")]
    out = encode(codec, events)
    assert b'"event":{"type":"artifact' not in out, "written natively, never in a carrier"
    if codec in NATIVE_FORM:
        assert NATIVE_FORM[codec] in out
    assert b"Chart \xe2\x80\x94 'Q3 sales by region' (bar-chart, 41 KB)" in out or codec == "agentfootprint"
    assert canonical(decode(codec, out)[1:3]) == canonical([PRESENTED, REFUSED])


def test_a_ui_component_that_only_looks_like_an_artifact_stays_a_component() -> None:
    """An artifact is read from a ``ui`` frame only when the frame is exactly what an artifact is
    written as; a frame with another fallback text is someone's component."""
    frame = encode("nest", [RunStart(run_id="r"), PRESENTED, Terminal(status="succeeded")])
    edited = frame.replace(b"41 KB)", b"41 kB)")
    (ui,) = [e for e in decode("nest", edited) if isinstance(e, UiComponent | ArtifactPresented)]
    assert isinstance(ui, UiComponent) and ui.fallback_text == "Chart — 'Q3 sales by region' (bar-chart, 41 kB)"
    assert convert("nest", "nest", edited) == edited


@pytest.mark.parametrize("via", CODECS)
def test_an_iteration_nest_cannot_say_comes_back_through_it(via: str) -> None:
    events = [RunStart(run_id="r"), ArtifactPresented(ref="art_x", as_="image", snapshot=CHART, iteration=3)]
    events.append(Terminal(status="succeeded", text=""))
    back = decode(via, encode(via, events))
    assert canonical([e for e in back if isinstance(e, ArtifactPresented)]) == canonical([events[1]])


# -- an artifact derived from a tool output, shown to a live client -----------------------------------

#: a ``present`` call and its result, in a protocol that says no artifact of its own
PRESENT_CALL = [
    RunStart(run_id="r"),
    ToolCall(call_id="c1", name="present", input=Raw(b'{"ref":"art_9mTw4kQ2xV7pL0sB3nR8yZ","as":"bar-chart"}')),
    ToolOutput(call_id="c1", output=Raw(json.dumps(RESULT).encode())),
    Terminal(status="succeeded", text=""),
]
#: what each artifact-aware client is shown for it (the native form, after the tool output)
DERIVED_FORM = {
    **NATIVE_FORM,
    "ai-sdk": b'"type":"data-artifact","id":"art_9mTw4kQ2xV7pL0sB3nR8yZ"',
    "ag-ui": b'"type":"ACTIVITY_SNAPSHOT","messageId":"art_9mTw4kQ2xV7pL0sB3nR8yZ","activityType":"data-artifact"',
}


def client_output(source: str, target: str, data: bytes) -> bytes:
    translator = Translator(source, target, fidelity="client")
    return translator.feed(data) + translator.close()


@pytest.mark.parametrize("source", ["oma", "nest", "ai-sdk"])
@pytest.mark.parametrize("target", sorted(DERIVED_FORM))
def test_a_present_result_reaches_an_artifact_aware_client_as_an_artifact(source: str, target: str) -> None:
    """nest → agentfootprint writes agentfootprint.artifacts.presented, nest → nest a ui frame:
    plainly, right after the tool output that says it; read back, it is the derived artifact
    (one, synthetic), not a second one."""
    out = client_output(source, target, encode(source, PRESENT_CALL))
    form = DERIVED_FORM[target]
    assert form in out
    assert out.index(form) > out.index(b"art_9mTw4kQ2xV7pL0sB3nR8yZ"), "after the tool output"
    if target != "agentfootprint":  # (its artifact event has no placeholder: its clients draw one)
        assert b"Chart \xe2\x80\x94 'Q3 sales by region' (bar-chart, 41 KB)" in out
    artifacts = [e for e in decode(target, out) if isinstance(e, ArtifactPresented)]
    assert [(a.ref, a.as_, a.snapshot, a.tool_call_id, a.synthetic) for a in artifacts] == [
        (RESULT["ref"], "bar-chart", CHART, "c1", True)
    ]


@pytest.mark.parametrize("via", CODECS)
def test_a_derived_artifact_is_left_to_the_tool_output_in_an_archive(via: str) -> None:
    """At ``exact`` (an archive) the tool output says it: nest (no ui frame) → B → nest gives
    nest back, byte for byte."""
    nest = encode("nest", PRESENT_CALL)
    assert convert(via, "nest", convert("nest", via, nest)) == nest


@pytest.mark.parametrize("codec", CODECS)
def test_a_real_artifact_where_a_derived_one_is_read_comes_back(codec: str) -> None:
    """A real artifact right after the tool output that presents it, saying no more than that
    output: its decoder would read it as the derived one, so its encoder carries it (as a real
    step bracket in an implied place), and it comes back as the real event it was."""
    real = ArtifactPresented(ref=RESULT["ref"], as_="bar-chart", snapshot=CHART, tool_call_id="c1")
    events = [*PRESENT_CALL[:3], real, PRESENT_CALL[3]]
    out = encode(codec, events)
    back = [e for e in decode(codec, out) if isinstance(e, ArtifactPresented)]
    assert canonical([e for e in back if not e.synthetic]) == canonical([real])
    assert encode(codec, decode(codec, out)) == out

"""``Translator.collect_asks``: the sans-IO half of carrying approvals across an upstream whose
runs end to ask (AG-UI). A held run's terminal is withheld, the resumed run goes on in the same
output (its start not repeated, its text added), and the output does not depend on chunking."""

from __future__ import annotations

import msgspec
import pytest

from streambridge import Translator, codecs
from streambridge.events import Elicitation, RunStart, Terminal, TextDelta, ToolApprovalRequest

OUTCOME = {
    "type": "interrupt",
    "interrupts": [
        {"id": "int-1", "reason": "tool_approval", "toolCallId": "call-1"},
        {"id": "int-2", "reason": "input_required", "message": "Which account?"},
    ],
}


def sse(obj: dict) -> bytes:
    return b"data: " + msgspec.json.encode(obj) + b"\n\n"


def run(run_id: str, text: str, outcome: dict | None) -> bytes:
    finished: dict = {"type": "RUN_FINISHED", "threadId": "t1", "runId": run_id}
    if outcome is not None:
        finished["outcome"] = outcome
    return b"".join(
        [
            sse({"type": "RUN_STARTED", "threadId": "t1", "runId": run_id}),
            sse({"type": "TEXT_MESSAGE_START", "messageId": run_id + "-m", "role": "assistant"}),
            sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": run_id + "-m", "delta": text}),
            sse({"type": "TEXT_MESSAGE_END", "messageId": run_id + "-m"}),
            sse(finished),
        ]
    )


ASKING, RESUMED = run("r1", "Checking. ", OUTCOME), run("r2", "Done.", None)
TARGETS = [name for name in codecs.names() if name != "ag-ui"]


def held_then_resumed(target: str, size: int) -> tuple[Translator, bytes]:
    translator = Translator("ag-ui", target, source_framing="sse")
    translator.collect_asks(hold=True)
    out = b"".join(translator.feed(ASKING[i : i + size]) for i in range(0, len(ASKING), size))
    assert translator.held is not None and not translator.terminated
    assert [type(a) for a in translator.asks] == [ToolApprovalRequest, Elicitation]
    translator.go_on()
    assert translator.asks == [] and translator.held is None
    out += b"".join(translator.feed(RESUMED[i : i + size]) for i in range(0, len(RESUMED), size))
    return translator, out + translator.close()


@pytest.mark.parametrize("target", TARGETS)
def test_a_held_run_goes_on_in_the_same_output(target: str) -> None:
    translator, out = held_then_resumed(target, len(ASKING))
    events = codecs.get(target).decoder(strict=True).feed(out)
    assert sum(type(e) is RunStart and not e.synthetic for e in events) <= 1
    ends = [e for e in events if type(e) is Terminal]
    assert len(ends) == 1 and ends[0].status == "succeeded"
    assert "".join(e.text for e in events if type(e) is TextDelta) == "Checking. Done."
    assert out.index(b"Checking. ") < out.index(b"Done.")
    assert translator.terminal is not None


@pytest.mark.parametrize("target", TARGETS)
def test_holding_does_not_depend_on_chunking(target: str) -> None:
    whole = held_then_resumed(target, len(ASKING))[1]
    for size in (1, 7, 64):
        assert held_then_resumed(target, size)[1] == whole


def test_release_ends_the_output_with_the_held_terminal() -> None:
    translator = Translator("ag-ui", "nest", source_framing="sse")
    translator.collect_asks(hold=True)
    out = translator.feed(ASKING)
    assert b"event: done" not in out
    out += translator.release()
    assert out.count(b"event: done") == 1 and translator.terminated
    assert translator.close() == b""


def test_without_hold_the_terminal_goes_through_and_the_asks_are_kept() -> None:
    translator = Translator("ag-ui", "ai-sdk", source_framing="sse")
    translator.collect_asks(hold=False)
    out = translator.feed(ASKING)
    assert translator.terminated and translator.held is None and b'"type":"finish"' in out
    assert [a.call_id for a in translator.asks] == ["call-1", "int-2"]


def test_go_on_needs_a_held_run() -> None:
    translator = Translator("ag-ui", "nest", source_framing="sse")
    translator.collect_asks(hold=True)
    with pytest.raises(RuntimeError, match="no run is held"):
        translator.go_on()

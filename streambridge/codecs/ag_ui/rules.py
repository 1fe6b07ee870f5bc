"""ag-ui's own rules for ``streambridge validate``: AG-UI 1.0's ordering rules (§4.1, §4.2) as
the TypeScript client's ``verifyEvents`` enforces them (each violation is an ``AGUIError`` that
ends the run there), ids unique within a run, and the JSON conventions (absent, never ``null``;
an unknown event type is dropped by clients, with a warning). The events are checked as
written, from each frame's JSON: chunks (§4.3) are shorthand the client expands, so they open
and close nothing here."""

from __future__ import annotations

from typing import Any, ClassVar

from ..codec import RuleContext, Rules
from ..envelope import json_object
from ..framing import Frame
from .wire import EVENT_TYPES, kept

__all__ = ["AgUiRules"]

#: the lanes of the open / content / close discipline: type prefix → the member naming the item
_LANES = {"TEXT_MESSAGE": "messageId", "TOOL_CALL": "toolCallId", "REASONING_MESSAGE": "messageId"}
#: members the decoder keeps with an event on purpose (AG-UI fields the model has no place for)
_KEPT = frozenset(
    {"timestamp", "rawEvent", "metadata", "name", "usage", "parentRunId", "input", "protocolVersion", "role"}
    | {kept(m) for m in ("role", "messageId", "parentMessageId", "stepName", "threadId", "runId", "outcome")}
    | {kept("interrupt")}
)


class AgUiRules(Rules):
    kept_members: ClassVar[frozenset[str]] = _KEPT
    catalogue: ClassVar[dict[str, tuple[str, str, str]]] = {
        "AGUI001": ("run-not-first", "error", "ag-ui: the first event is not RUN_STARTED (or RUN_ERROR)"),
        "AGUI002": (
            "after-run-end",
            "error",
            "ag-ui: an event after RUN_ERROR, or other than RUN_STARTED / RUN_ERROR after RUN_FINISHED",
        ),
        "AGUI003": ("run-already-active", "error", "ag-ui: RUN_STARTED while a run is active"),
        "AGUI004": (
            "content-not-open",
            "error",
            "ag-ui: content or an end for a message, reasoning message or tool call that is not open",
        ),
        "AGUI005": ("already-open", "error", "ag-ui: a start for a message, tool call or step name that is open"),
        "AGUI006": ("step-not-started", "error", "ag-ui: STEP_FINISHED for a step name that is not open"),
        "AGUI007": (
            "open-at-finish",
            "error",
            "ag-ui: RUN_FINISHED while a message, tool call or step is still open",
        ),
        "AGUI008": ("null-member", "warning", "ag-ui: a member sent as null (absent means absent, never null)"),
        "AGUI009": ("type-unknown", "warning", "ag-ui: an event type AG-UI does not define (clients drop it)"),
        "AGUI010": ("id-repeated", "error", "ag-ui: a result message id or interrupt id used twice in one run"),
    }

    def __init__(self, check: RuleContext) -> None:
        super().__init__(check)
        self._state = "none"  # none, active, finished, errored
        self._open: dict[str, set[str]] = {lane: set() for lane in _LANES}
        self._steps: set[str] = set()
        self._ids: set[str] = set()
        self._first = True

    def known_kind(self, kind: str) -> bool:
        return True  # unknown event types are this catalogue's AGUI009 (CUSTOM names are free)

    def frame(self, frame: Frame, name: str, data: bytes) -> None:
        event = json_object(data)
        kind = event.get("type") if event is not None else None
        if not isinstance(kind, str) or event is None:
            return  # (a frame that is no event object is the validator's SB001)
        nulls = sorted(k for k, v in event.items() if v is None)
        if nulls:
            self.check.add("AGUI008", f"{kind} with null {', '.join(nulls)}")
        if kind not in EVENT_TYPES:
            self.check.add("AGUI009", f"event type {kind!r}")
        self._lifecycle(kind)
        lane, _, what = kind.rpartition("_")
        if lane in _LANES and what in ("START", "CONTENT", "ARGS", "END"):
            self._item(kind, lane, what, event.get(_LANES[lane]))
        elif kind in ("STEP_STARTED", "STEP_FINISHED"):
            self._step(kind, event.get("stepName"))
        elif kind == "TOOL_CALL_RESULT":
            self._unique(f"result message id {event.get('messageId')!r}", ("message", event.get("messageId")))
        elif kind == "RUN_FINISHED":
            self._finished(event)

    def _lifecycle(self, kind: str) -> None:
        first, self._first = self._first, False
        if first and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self.check.add("AGUI001", f"the stream begins with {kind}")
        state = self._state
        if state == "errored":
            self.check.add("AGUI002", f"{kind} after RUN_ERROR")
        elif state == "finished" and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self.check.add("AGUI002", f"{kind} after RUN_FINISHED")
        if kind == "RUN_STARTED":
            if state == "active":
                self.check.add("AGUI003", "RUN_STARTED while the run is active")
            self._reset()
            self._state = "active"
        elif kind == "RUN_ERROR":
            self._state = "errored"
        elif kind == "RUN_FINISHED":
            self._state = "finished"

    def _reset(self) -> None:
        for ids in self._open.values():
            ids.clear()
        self._steps.clear()
        self._ids.clear()

    def _item(self, kind: str, lane: str, what: str, item: Any) -> None:
        opened = self._open[lane]
        if what == "START":
            if item in opened:
                self.check.add("AGUI005", f"{kind} for {item!r}, which is open")
            opened.add(item)
        elif item not in opened:
            self.check.add("AGUI004", f"{kind} for {item!r}, which is not open")
        elif what == "END":
            opened.discard(item)

    def _step(self, kind: str, name: Any) -> None:
        if kind == "STEP_STARTED":
            if name in self._steps:
                self.check.add("AGUI005", f"STEP_STARTED {name!r}, which is open")
            self._steps.add(name)
        elif name not in self._steps:
            self.check.add("AGUI006", f"STEP_FINISHED {name!r}, which was not started")
        else:
            self._steps.discard(name)

    def _finished(self, event: dict[str, Any]) -> None:
        left = [
            f"{lane.lower().replace('_', ' ')} {i!r}" for lane, ids in self._open.items() for i in sorted(map(str, ids))
        ]
        left += [f"step {s!r}" for s in sorted(map(str, self._steps))]
        if left:
            self.check.add("AGUI007", f"RUN_FINISHED with {', '.join(left)} open")
        outcome = event.get("outcome")
        interrupts = outcome.get("interrupts") if isinstance(outcome, dict) else None
        for interrupt in interrupts if isinstance(interrupts, list) else []:
            if isinstance(interrupt, dict):
                self._unique(f"interrupt id {interrupt.get('id')!r}", ("interrupt", interrupt.get("id")))

    def _unique(self, what: str, key: tuple[str, Any]) -> None:
        marker = f"{key[0]}:{key[1]}"
        if marker in self._ids:
            self.check.add("AGUI010", f"{what} used twice in the run")
        self._ids.add(marker)

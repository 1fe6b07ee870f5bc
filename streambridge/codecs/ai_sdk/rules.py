"""ai-sdk's own rules for ``streambridge validate``: the client's ordering rules
(``process-ui-message-stream.ts``: each violation breaks the message), unknown chunk types (the
client rejects them) and the ``[DONE]`` end marker. The SDK names no SSE events."""

from __future__ import annotations

from ..codec import RuleContext, Rules
from ..envelope import json_object
from ..framing import Frame
from .profiles import CHUNK_TYPES
from .sniff import HEADER

__all__ = ["AiSdkRules"]

_OUTCOMES = frozenset({"tool-output-available", "tool-output-error", "tool-output-denied", "tool-approval-request"})
_TERMINALS = frozenset({"finish", "abort"})


class AiSdkRules(Rules):
    catalogue = {
        "AI001": (
            "chunk-type-unknown",
            "error",
            "ai-sdk: a chunk type the client rejects (not data-* or a known type)",
        ),
        "AI002": (
            "part-not-open",
            "error",
            "ai-sdk: a text or reasoning delta or end without an open start of its id (finish-step forgets open ids)",
        ),
        "AI003": ("tool-input-unstarted", "error", "ai-sdk: tool-input-delta without a tool-input-start for its call"),
        "AI004": (
            "tool-part-missing",
            "error",
            "ai-sdk: a tool outcome or approval request for a call without a tool part (No tool invocation found)",
        ),
        "AI005": ("part-open-at-finish", "warning", "ai-sdk: text or reasoning parts still open at finish"),
        "AI006": ("done-missing", "warning", "ai-sdk: the stream ends without data: [DONE]"),
        "AI007": (
            "header-missing",
            "warning",
            "ai-sdk: a capture without the x-vercel-ai-ui-message-stream: v1 header",
        ),
    }

    def __init__(self, check: RuleContext) -> None:
        super().__init__(check)
        self._open: dict[str, set[str]] = {"text": set(), "reasoning": set()}
        self._inputs: set[str] = set()
        self._tools: set[str] = set()
        self._done = False
        self._frames = 0

    def known_kind(self, kind: str) -> bool:
        return True  # unknown chunk types are this catalogue's AI001 (data parts have any name)

    def frame(self, frame: Frame, name: str, data: bytes) -> None:
        self._frames += 1
        if self._frames == 1:
            self._check_header()
        if data.strip() == b"[DONE]":
            self._done = True
            return
        chunk = json_object(data)
        kind = chunk.get("type") if chunk else None
        if chunk is None or not isinstance(kind, str):
            return
        if kind not in CHUNK_TYPES and not kind.startswith("data-"):
            self.check.add("AI001", f"chunk type {kind!r}")
            return
        part_kind, _, what = kind.partition("-")
        if part_kind in self._open and what in ("start", "delta", "end"):
            self._part(kind, self._open[part_kind], what, chunk.get("id"))
        elif kind == "finish-step":
            for opened in self._open.values():
                opened.clear()
        elif kind in _TERMINALS:
            self._finish(kind)
        else:
            self._tool(kind, str(chunk.get("toolCallId")))

    def _check_header(self) -> None:
        if self.check.header(HEADER) is None and self.check.header("content-type") is not None:
            self.check.add("AI007", f"no {HEADER} header")

    def _part(self, kind: str, opened: set[str], what: str, part: object) -> None:
        """A text or reasoning start, delta or end: the latter two need their start."""
        if what == "start":
            opened.add(str(part))
        elif part not in opened:
            self.check.add("AI002", f"{kind} for {kind.partition('-')[0]} part {part!r}, which is not open")
        elif what == "end":
            opened.discard(str(part))

    def _tool(self, kind: str, call: str) -> None:
        """Tool chunks: a delta needs its input start, an outcome its tool part."""
        if kind == "tool-input-start":
            self._inputs.add(call)
            self._tools.add(call)
        elif kind in ("tool-input-available", "tool-input-error"):
            self._tools.add(call)
        elif kind == "tool-input-delta" and call not in self._inputs:
            self.check.add("AI003", f"tool-input-delta for {call!r}")
        elif kind in _OUTCOMES and call not in self._tools:
            self.check.add("AI004", f'{kind}: No tool invocation found for tool call ID "{call}"')

    def _finish(self, kind: str) -> None:
        left = sorted(f"{k} {p}" for k, ids in self._open.items() for p in ids)
        if left:
            self.check.add("AI005", f"{kind} with open parts: {', '.join(left)}")

    def end(self) -> None:
        if self._frames and not self._done:
            self.check.add("AI006", "no data: [DONE] at the end")

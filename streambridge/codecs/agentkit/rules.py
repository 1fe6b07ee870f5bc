"""agentkit's own rules for ``streambridge validate`` (ids in its catalogue, docs/cli.md).

The turn opens with ``turn_start`` (SB012); ``turn_end`` repeats its turn and message ids, which
decode to unset when equal (SB030, SB031), and its ``result.text`` is the streamed text (SB040).
A tool call announced again replaces the earlier one, so a repeat is no finding. The
catalogue's ``SB`` ids predate protocol catalogues (a new rule takes a prefix of its own); the
start rule (SB012) is shared with nest and lives in the shared catalogue
(:mod:`streambridge.validate.rules`).
"""

from __future__ import annotations

from typing import ClassVar

from msgspec import UNSET

from ...events import Event, RunStart, Terminal, TextDelta
from ..codec import RuleContext, Rules
from .decoder import AgentkitDecoder

__all__ = ["AgentkitRules"]


class AgentkitRules(Rules):
    known_passthrough = frozenset({"tool_result"})
    repeated_call_replaces = True
    catalogue: ClassVar[dict[str, tuple[str, str, str]]] = {
        "SB030": ("turn-id-mismatch", "error", "agentkit: turn_end.turnId differs from turn_start's"),
        "SB031": ("message-id-mismatch", "error", "agentkit: turn_end.messageId differs from turn_start's"),
        "SB040": ("terminal-text-mismatch", "warning", "agentkit: result.text differs from the streamed text deltas"),
    }

    def __init__(self, check: RuleContext) -> None:
        super().__init__(check)
        self._text: list[str] = []
        self._streamed_text = False

    def first_event(self, event: Event) -> None:
        if type(event) is not RunStart:
            self.check.add("SB012", f"the stream does not open with {AgentkitDecoder.start_words}")

    def terminal(self, end: Terminal) -> None:
        if end.turn_id is not UNSET:
            self.check.add("SB030", f"turn_end.turnId {end.turn_id!r} differs from turn_start's")
        if end.message_id is not UNSET:
            self.check.add("SB031", f"turn_end.messageId {end.message_id!r} differs from turn_start's")
        joined = "".join(self._text)
        if self._streamed_text and end.text is not UNSET and end.text != joined:
            self.check.add("SB040", f"result.text has {len(end.text)} characters, the text deltas {len(joined)}")

    def event(self, event: Event) -> None:
        """Collects the turn's own text (deltas of another message are not in ``result.text``)."""
        if type(event) is TextDelta and event.message_id is UNSET:
            self._text.append(event.text)
            self._streamed_text = self._streamed_text or not event.synthetic

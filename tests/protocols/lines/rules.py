"""``lines``'s own part of ``streambridge validate``: one rule id of its own."""

from __future__ import annotations

from streambridge.codecs.codec import Rules
from streambridge.events import Event, TextDelta

__all__ = ["LinesRules"]


class LinesRules(Rules):
    catalogue = {"LN001": ("line-empty", "warning", "a line frame without text (it says nothing)")}

    def event(self, event: Event) -> None:
        if type(event) is TextDelta and not event.text:
            self.check.add("LN001", "a line frame with empty text")

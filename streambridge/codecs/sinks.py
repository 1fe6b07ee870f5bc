"""Where decoded events go: an :class:`EventSink` (a list, or an encoder's sink that writes each
event as it is appended), and the plain way to hand it a run of deltas from the hot path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from msgspec import UNSET, UnsetType

from ..events import Event, ReasoningDelta, TextDelta

__all__ = ["DeltaSink", "EventSink", "append_deltas"]


class EventSink(Protocol):
    """Where a decoder puts its events: a list, or an encoder's sink that writes each one as it
    is appended (a translation then needs no list of events at all)."""

    def append(self, event: Event, /) -> None: ...


class DeltaSink(EventSink, Protocol):
    """A sink that takes a run of plain primary deltas in one call, with no event per delta
    (an encoder's sink: the hot path of a translation). ``part_id`` is the run's part, where
    the source's deltas name theirs (ai-sdk, AG-UI)."""

    def deltas(
        self,
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> None: ...


def append_deltas(
    out: EventSink,
    texts: list[str],
    reasoning: bool = False,
    ids: Sequence[bytes] | None = None,
    part_id: str | UnsetType = UNSET,
) -> None:
    """A run of primary deltas as events, for a sink that takes only events. ``ids`` are the
    frames' own ``id: <digits>`` lines, which become the events' ``event_id``."""
    make = ReasoningDelta if reasoning else TextDelta
    if ids is None:
        for text in texts:
            out.append(make(text=text, part_id=part_id))
    else:
        for text, line in zip(texts, ids, strict=True):
            out.append(make(text=text, part_id=part_id, event_id=line[4:].decode()))  # an `id: <ASCII digits>` line

"""Two item streams compared in lockstep, resynced after each difference within a window.

While the sides agree each item is compared once. At a difference the :class:`Comparison`
looks up to ``WINDOW`` items ahead on each side for the nearest point (fewest items passed
over) where ``CONFIRM`` items agree again (or both streams end), and reports what lies before
it as one :class:`Hunk`. Generated ids are compared as :class:`Joins`: ids first met in two
items that agree are paired, and the pair must hold wherever either id comes back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from . import normalise
from .normalise import Item, Ref

__all__ = ["CONFIRM", "WINDOW", "Comparison", "Hunk", "Joins", "Lookahead", "Mark"]

#: events looked ahead on each side to resync after a difference
WINDOW = 32
#: events that must agree (or both streams end) for a resync point to count
CONFIRM = 3
_REST = -1  # "everything left" in a resync step


class Lookahead:
    """The items of one side not yet compared, pulled from its decoder only as far as asked."""

    def __init__(self, batches: Iterator[list[Item]]) -> None:
        self._batches = batches
        self._buffer: deque[Item] = deque()
        self.taken = 0

    def get(self, ahead: int) -> Item | None:
        buffer = self._buffer
        while len(buffer) <= ahead:
            if not self._pull():
                return None
        return buffer[ahead]

    def _pull(self) -> bool:
        for batch in self._batches:
            if batch:
                self._buffer.extend(batch)
                return True
        return False

    def advance(self) -> None:
        self._buffer.popleft()
        self.taken += 1

    def take(self, count: int) -> list[Item]:
        items = [self._buffer.popleft() for _ in range(count)]
        self.taken += count
        return items

    def drain(self, keep: int) -> tuple[list[Item], int]:
        """Everything left: the first ``keep`` items, and how many more there were."""
        kept: list[Item] = []
        more = 0
        while self.get(0) is not None:
            item = self._buffer.popleft()
            if len(kept) < keep:
                kept.append(item)
            else:
                more += 1
        self.taken += len(kept) + more
        return kept, more


class Joins:
    """Which id of A is which id of B: paired when first met in agreeing events, then held
    (the last ``2 * ID_MEMORY`` pairs: the oldest are forgotten first)."""

    def __init__(self) -> None:
        self.a_to_b: dict[Ref, Ref] = {}
        self.b_to_a: dict[Ref, Ref] = {}

    def fit(self, a: tuple[Ref, ...], b: tuple[Ref, ...], new: dict[Ref, Ref], back: dict[Ref, Ref]) -> bool:
        """Whether the ids agree with the pairs so far (and those in ``new``, which gets the
        new pairs they make)."""
        for x, y in zip(a, b, strict=True):
            to_b = new.get(x) or self.a_to_b.get(x)
            to_a = back.get(y) or self.b_to_a.get(y)
            if to_b is None and to_a is None:
                new[x], back[y] = y, x
            elif to_b != y or to_a != x:
                return False
        return True

    def commit(self, new: dict[Ref, Ref]) -> None:
        for x, y in new.items():
            self.a_to_b[x] = y
            self.b_to_a[y] = x
        while len(self.a_to_b) > 2 * normalise.ID_MEMORY:  # the oldest pairs are forgotten first
            self.b_to_a.pop(self.a_to_b.pop(next(iter(self.a_to_b))), None)

    def pair_free(self, a: tuple[Ref, ...], b: tuple[Ref, ...]) -> None:
        """Pair the unpaired ids of two events reported as changed, in order (as numbering by
        order of appearance would): the rest of a changed call still joins."""
        new = {
            x: y
            for x, y in zip(a, b, strict=False)
            if _kind(x) == _kind(y) and x not in self.a_to_b and y not in self.b_to_a
        }
        if len(set(new.values())) == len(new):
            self.commit(new)


def _kind(ref: Ref) -> str:
    return ref.partition("#")[0]


@dataclass
class Mark:
    """A reported event: its position, how it is shown, and where it came from."""

    index: int
    shown: str
    frame: int | None
    lo: int | None

    @classmethod
    def of(cls, item: Item) -> Mark:
        return cls(item.index, item.shown, item.frame, item.lo)

    @property
    def where(self) -> str:
        if self.lo is not None:
            return f"frames {self.lo + 1}-{self.frame}"
        return "end" if self.frame is None else f"frame {self.frame}"


@dataclass
class Hunk:
    """One difference: where it starts on each side and the events only each side has."""

    tag: str
    at: tuple[int, int]
    heads: tuple[Mark | None, Mark | None]
    removed: list[Mark]
    added: list[Mark]
    more: tuple[int, int] = (0, 0)

    def marks(self) -> Iterator[tuple[int, Mark]]:
        """Every mark with its side (0 for A, 1 for B)."""
        for side, head in enumerate(self.heads):
            if head is not None:
                yield side, head
        yield from ((0, mark) for mark in self.removed)
        yield from ((1, mark) for mark in self.added)

    def lines(self) -> list[str]:
        """The hunk as text: its header, then ``- A`` and ``+ B`` lines."""
        head_a, head_b = (h.where if h is not None else "-" for h in self.heads)
        lines = [f"@@ event {self.at[0] + 1} of A ({head_a}), event {self.at[1] + 1} of B ({head_b}): {self.tag}"]
        lines += [f"- A {mark.where}: {mark.shown}" for mark in self.removed]
        if self.more[0]:
            lines.append(f"- A ... and {self.more[0]:,} more event(s)")
        lines += [f"+ B {mark.where}: {mark.shown}" for mark in self.added]
        if self.more[1]:
            lines.append(f"+ B ... and {self.more[1]:,} more event(s)")
        return lines


class Comparison:
    """Two item streams compared in lockstep, resynced within the window after a difference.

    ``comparisons`` counts item comparisons: at most one per event while the sides agree, and
    a bounded number (the window's) per difference, so the work is linear in the input."""

    def __init__(self, a: Iterator[list[Item]], b: Iterator[list[Item]], limit: int) -> None:
        self.a, self.b = Lookahead(a), Lookahead(b)
        self.joins = Joins()
        self.limit = limit
        self.hunks: list[Hunk] = []
        self.stopped = False
        self.comparisons = 0

    def run(self) -> Comparison:
        a, b = self.a, self.b
        while True:
            left, right = a.get(0), b.get(0)
            if left is None and right is None:
                return self
            if left is not None and right is not None and self._agree(left, right):
                a.advance()
                b.advance()
                continue
            if len(self.hunks) >= self.limit:
                self.stopped = True
                return self
            self._report(*self._resync())

    def _agree(self, left: Item, right: Item) -> bool:
        """Lockstep: the two items agree, and their new id pairs are kept."""
        self.comparisons += 1
        if left.key != right.key:
            return False
        if not left.refs:
            return True
        new: dict[Ref, Ref] = {}
        if not self.joins.fit(left.refs, right.refs, new, {}):
            return False
        if new:
            self.joins.commit(new)
        return True

    def _same(self, left: Item | None, right: Item | None, new: dict[Ref, Ref], back: dict[Ref, Ref]) -> bool:
        self.comparisons += 1
        if left is None or right is None or left.key != right.key:
            return False
        return not left.refs or self.joins.fit(left.refs, right.refs, new, back)

    def _run_length(self, skip_a: int, skip_b: int) -> int:
        """How many items agree from ``skip_a`` ahead in A and ``skip_b`` in B (``CONFIRM``
        when the two streams end together)."""
        new: dict[Ref, Ref] = {}
        back: dict[Ref, Ref] = {}
        for step in range(CONFIRM):
            left, right = self.a.get(skip_a + step), self.b.get(skip_b + step)
            if left is None and right is None:
                return CONFIRM
            if not self._same(left, right, new, back):
                return step
        return CONFIRM

    def _resync(self) -> tuple[int, int]:
        """Items to pass over on each side: the nearest point where ``CONFIRM`` items agree,
        else the nearest where one does, else one each (or the rest, past an end)."""
        partial = None
        for cost in range(1, 2 * WINDOW + 1):
            for skip_a in range(max(0, cost - WINDOW), min(cost, WINDOW) + 1):
                agreeing = self._run_length(skip_a, cost - skip_a)
                if agreeing == CONFIRM:
                    return skip_a, cost - skip_a
                if agreeing and partial is None:
                    partial = (skip_a, cost - skip_a)
        if partial is not None:
            return partial
        if self.a.get(0) is None:
            return 0, _REST
        if self.b.get(0) is None:
            return _REST, 0
        return 1, 1

    def _report(self, skip_a: int, skip_b: int) -> None:
        heads = (self.a.get(0), self.b.get(0))
        at = (self.a.taken, self.b.taken)
        removed, more_a = self.a.drain(WINDOW) if skip_a == _REST else (self.a.take(skip_a), 0)
        added, more_b = self.b.drain(WINDOW) if skip_b == _REST else (self.b.take(skip_b), 0)
        for x, y in zip(removed, added, strict=False):
            self.joins.pair_free(x.refs, y.refs)
        tag = "replace" if removed and added else "delete" if removed else "insert"
        self.hunks.append(
            Hunk(
                tag,
                at,
                (None if heads[0] is None else Mark.of(heads[0]), None if heads[1] is None else Mark.of(heads[1])),
                [Mark.of(item) for item in removed],
                [Mark.of(item) for item in added],
                (more_a, more_b),
            )
        )

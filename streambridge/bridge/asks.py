"""Runs that end to ask, for clients that answer while their stream waits.

Some upstreams' runs cannot wait for an approval (their surface has an ``interrupt_id``): a run
ends at its interrupts, and the next run carries the answers as resume entries. Other clients
keep their stream open and answer on their surface's control route (approve / reject). The
proxy bridges the two: it withholds the run's terminal (``Translator.collect_asks``), registers
the open interrupts here by tool call id, waits for every answer (or the route's
``approval_timeout``, after which the rest are cancelled), sends the resume run upstream on the
same thread and goes on translating it into the same client stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ..codecs.requests import ResumeEntry, decision_entry
from ..events import Elicitation, ToolApprovalRequest
from .upstream import Upstream

__all__ = ["Pending", "Resumer"]


@dataclass(frozen=True)
class Resumer:
    """How a held run goes on: the upstream protocol's interrupt ids, the resume run, the wait."""

    interrupt_id: Callable[[ToolApprovalRequest | Elicitation], str]
    #: the upstream request of the run that resumes the held one with these answers
    reopen: Callable[[list[ResumeEntry]], Upstream]
    timeout: float
    #: the identity that started the run: only it answers the run's questions
    owner: str = ""


class Pending:
    """The interrupts one run asked, answered by tool call id: registered as each ask is
    decoded, before the client sees it, so an answer can never arrive before its question."""

    def __init__(self, owner: str = "") -> None:
        self.owner = owner  # the identity whose run asked (see runlog.identity)
        self.interrupts: dict[str, str] = {}  # tool call id → interrupt id, in the order asked
        self.answers: dict[str, ResumeEntry] = {}
        self._complete = asyncio.Event()

    def add(self, call_id: str, interrupt_id: str) -> None:
        self.interrupts[call_id] = interrupt_id
        self._complete.clear()

    def answer(self, call_id: str, approved: bool, reason: str | None = None, payload: object = None) -> None:
        """Record the client's decision on one call (a later one replaces an earlier one)."""
        self.answers[call_id] = decision_entry(self.interrupts[call_id], approved, reason, payload, call_id)
        if len(self.answers) == len(self.interrupts):
            self._complete.set()

    async def entries(self, timeout: float) -> list[ResumeEntry]:
        """Every interrupt's entry once all are answered, or at the timeout with the unanswered
        ones cancelled (an expired interrupt cannot be resolved): a resume list covers them all."""
        if len(self.answers) < len(self.interrupts):
            try:
                async with asyncio.timeout(timeout):
                    await self._complete.wait()
            except TimeoutError:
                pass
        return [
            self.answers.get(call_id) or decision_entry(interrupt, False, "no answer in time", tool_call_id=call_id)
            for call_id, interrupt in self.interrupts.items()
        ]

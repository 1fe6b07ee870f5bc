"""oma's own part of ``streambridge validate``: only the kinds its decoder keeps as passthroughs
although open-multi-agent defines them (the generic rules cover the rest)."""

from __future__ import annotations

from ..codec import Rules

__all__ = ["OmaRules"]


class OmaRules(Rules):
    known_passthrough = frozenset({"loop_detected", "budget_exceeded"})

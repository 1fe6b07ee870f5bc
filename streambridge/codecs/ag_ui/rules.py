"""ag-ui's own rules for ``streambridge validate``: placeholder replaced below."""

from __future__ import annotations

from ..codec import Rules

__all__ = ["AgUiRules"]


class AgUiRules(Rules):
    pass

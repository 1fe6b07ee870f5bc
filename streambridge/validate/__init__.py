"""Checking transcripts against their protocol's rules, as a library (``streambridge validate``
is a thin command over it).

::

    from streambridge.validate import validate, validate_file

    report = validate_file("golden/truncated/nest.sse")
    [f.rule for f in report.findings]  # ['SB010']
    validate(body, "nest").clean       # a body held in memory, its protocol named

Every rule has a stable id (:func:`all_rules`: the shared catalogue in :mod:`.rules` and every
registered protocol's own); the engine is :mod:`.engine`. Nothing here prints.
"""

from __future__ import annotations

from .engine import Finding, Report, Validator, validate, validate_file, validate_source
from .rules import RULES, Rule, all_rules

__all__ = [
    "RULES",
    "Finding",
    "Report",
    "Rule",
    "Validator",
    "all_rules",
    "validate",
    "validate_file",
    "validate_source",
]

"""The shared rule catalogue: the ids every protocol's transcripts are checked against.

Rule ids are global and stable (``SB…``): a rule is never renumbered and an id never reused,
so a finding's id means the same in every release and every protocol. The rules here are the
ones the generic validator (:mod:`.engine`) checks for every protocol, or that more than one
protocol's own rules check; a rule only one protocol checks is described beside its check, in
that protocol's :class:`~streambridge.codecs.codec.Rules` ``catalogue``. :func:`all_rules`
merges the two, as ``validate --ignore`` and docs/cli.md know them.
"""

from __future__ import annotations

from .. import codecs

__all__ = ["RULES", "Rule", "all_rules"]

#: a rule's name, severity (``error`` or ``warning``) and what it checks
Rule = tuple[str, str, str]

#: rule id → (name, severity, what it checks). Ids are stable: never reuse or renumber one.
#: Retired: SB014 (``done`` while a nest step is open): the real server ends a cancelled run
#: so, and the published client closes the step itself.
RULES: dict[str, Rule] = {
    "SB001": (
        "frame-malformed",
        "error",
        "a frame that does not decode: bad JSON, missing or ill-typed fields, invalid values",
    ),
    "SB002": (
        "frame-unterminated",
        "error",
        "the input ends inside a frame (SSE: no empty line after the last event; NDJSON: a last line "
        "without its newline that does not read)",
    ),
    "SB003": ("frame-oversize", "error", "a frame larger than the size limit (16 MiB)"),
    "SB004": (
        "line-endings",
        "warning",
        "CR or CRLF line endings (LF only: the published nest client finds no frame in CRLF)",
    ),
    "SB005": ("event-name-unexpected", "warning", "an SSE event name the protocol does not use"),
    "SB006": (
        "kind-unknown",
        "warning",
        "a frame of a kind/type the protocol does not define (forwarded as a passthrough)",
    ),
    "SB007": ("field-unknown", "warning", "a known kind with fields the protocol does not define"),
    "SB010": ("terminal-missing", "error", "the stream ends without its terminal event (truncated, never a success)"),
    "SB011": ("after-terminal", "error", "a frame after the terminal event (exactly one terminal, and it is last)"),
    "SB012": (
        "start-not-first",
        "error",
        "the run does not open with its start (agentkit turn_start, nest event: meta)",
    ),
    "SB013": ("start-repeated", "error", "a second run start (turn_start, event: meta) in one stream"),
    "SB020": (
        "tool-call-unknown",
        "error",
        "a tool outcome, input delta, approval or elicitation for a call not announced before it",
    ),
    "SB021": ("tool-outcome-repeated", "error", "a second outcome for one tool call"),
    "SB022": (
        "tool-call-repeated",
        "warning",
        "the same call id announced twice (unless the protocol's repeat replaces the call)",
    ),
    "SB023": ("tool-call-unsettled", "warning", "a successful run with tool calls that never got an outcome"),
    "SB041": (
        "failure-status-mismatch",
        "warning",
        "a terminal whose failure.status differs from its status, or a success with a failure",
    ),
    "SB050": ("http-status", "error", "a capture whose HTTP status is not 2xx"),
    "SB051": ("content-type", "warning", "a capture whose content-type does not match the framing"),
}


def all_rules() -> dict[str, Rule]:
    """The shared rules and every registered protocol's own (its ``Rules.catalogue``): the
    ``SB`` ids in order, then the protocols' prefixed ids in registry order."""
    merged = dict(RULES)
    for codec in codecs.registered().values():
        merged.update(codec.rules.catalogue)
    shared = sorted(rule for rule in merged if rule.startswith("SB"))
    return {rule: merged[rule] for rule in (*shared, *(rule for rule in merged if not rule.startswith("SB")))}

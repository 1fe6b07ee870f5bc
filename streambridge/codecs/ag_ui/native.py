"""What a live client (fidelity ``client``) reads in AG-UI's own fields where ``exact`` keeps a
carrier: the run's token usage, on ``RUN_FINISHED`` / ``RUN_ERROR`` (AG-UI 1.0's ``usage``, a
list of ``TokenUsage``, one per provider and model: here the run's one)."""

from __future__ import annotations

from msgspec import UNSET

from ...events import Terminal
from ..envelope import json_encode

__all__ = ["with_usage"]

#: the model's usage fields, by AG-UI's ``TokenUsage`` names (cache and reasoning counts are
#: parts of the input and output totals in both)
_COUNTS = (
    ("input_tokens", b"inputTokens"),
    ("output_tokens", b"outputTokens"),
    ("reasoning_tokens", b"reasoningTokens"),
    ("cached_tokens", b"cachedInputTokens"),
    ("cache_write_tokens", b"cacheWriteInputTokens"),
)


def with_usage(head: bytes, end: Terminal) -> bytes:
    """A terminal frame's head (unclosed) with ``"usage":[{...}]`` when the run reports any."""
    if end.usage is UNSET:
        return head
    members: list[bytes] = []
    for field, value in (("provider", end.provider), ("model", end.model)):
        if isinstance(value, str):
            members.append(b'"' + field.encode() + b'":' + json_encode(value))
    counts = [(name, getattr(end.usage, field)) for field, name in _COUNTS]
    said = [b'"' + name + b'":' + json_encode(value) for name, value in counts if isinstance(value, int)]
    if not said:
        return head
    members += said[:2]
    if isinstance(end.usage.input_tokens, int) and isinstance(end.usage.output_tokens, int):
        members.append(b'"totalTokens":' + json_encode(end.usage.input_tokens + end.usage.output_tokens))
    members += said[2:]
    return head + b',"usage":[{' + b",".join(members) + b"}]"

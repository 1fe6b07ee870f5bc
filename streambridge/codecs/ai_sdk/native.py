"""What a live client (fidelity ``client``) reads in ai's own fields where ``exact`` keeps a
carrier: the finish reason a ``streamText`` server writes, and the run's ids and usage in the
message's ``messageMetadata`` (the one place a UI message keeps facts about its run; ``useChat``
deep-merges it into ``message.metadata``)."""

from __future__ import annotations

from msgspec import UNSET

from ...events import RunStart, RunStatus, Terminal, Usage
from ..envelope import json_encode

__all__ = ["FINISH_REASONS", "client_finish", "with_run_metadata"]

#: ai's ``finishReason`` for each run status (a cancelled run ends with ``abort`` instead)
FINISH_REASONS: dict[RunStatus, bytes] = {
    "succeeded": b'"stop"',
    "blocked": b'"content-filter"',
    "refused": b'"content-filter"',
    "error": b'"error"',
    "notProvisioned": b'"error"',
    "cancelled": b'"other"',
}

#: the model's usage fields, by ai's ``LanguageModelUsage`` names
_USAGE_NAMES = (
    ("input_tokens", b"inputTokens"),
    ("output_tokens", b"outputTokens"),
    ("reasoning_tokens", b"reasoningTokens"),
    ("cached_tokens", b"cachedInputTokens"),
)


def client_finish(end: Terminal, says_reason: bool) -> bytes:
    """The ``finish`` chunk a live client gets: its reason (when the client's release reads one)
    and, in ``messageMetadata``, the run's usage and model, unless the source said its own."""
    members = [b'"type":"finish"']
    said = end.extra if end.extra is not UNSET else {}
    if says_reason and "finishReason" not in said:
        members.append(b'"finishReason":' + FINISH_REASONS[end.status])
    metadata = _run_facts(end) if "messageMetadata" not in said else b""
    if metadata:
        members.append(b'"messageMetadata":' + metadata)
    return b"{" + b",".join(members) + b"}"


def with_run_metadata(start_chunk: bytes, start: RunStart) -> bytes:
    """The ``start`` chunk with the run's and thread's ids in ``messageMetadata`` (where a UI
    message keeps them), unless the source said metadata of its own."""
    if start.extra is not UNSET and "messageMetadata" in start.extra:
        return start_chunk
    ids = [(b"runId", start.run_id), (b"threadId", start.thread_id)]
    said = [b'"' + name + b'":' + json_encode(value) for name, value in ids if isinstance(value, str)]
    if not said:
        return start_chunk
    return start_chunk[:-1] + b',"messageMetadata":{' + b",".join(said) + b"}}"


def _run_facts(end: Terminal) -> bytes:
    """``{"usage": {...}, "model": "..."}`` of a terminal, or b"" when it reports neither."""
    facts: list[bytes] = []
    if end.usage is not UNSET:
        usage = _usage(end.usage)
        if usage:
            facts.append(b'"usage":' + usage)
    if end.model is not UNSET:
        facts.append(b'"model":' + json_encode(end.model))
    return b"{" + b",".join(facts) + b"}" if facts else b""


def _usage(usage: Usage) -> bytes:
    counts = [(name, getattr(usage, field)) for field, name in _USAGE_NAMES]
    members = [b'"' + name + b'":' + json_encode(value) for name, value in counts if isinstance(value, int)]
    if isinstance(usage.input_tokens, int) and isinstance(usage.output_tokens, int):
        members.insert(2, b'"totalTokens":' + json_encode(usage.input_tokens + usage.output_tokens))
    return b"{" + b",".join(members) + b"}" if members else b""

"""nest's frames as written, read without decoding them: what sniffing, ``validate``'s rules and
``replay --serve`` need to know before (or beside) the decoder.

nest names three SSE events (``meta``, ``done``, ``error``); in NDJSON streambridge writes a named
event as ``{"event": …, "data": …}``. The opening ``meta`` names the run and its thread, which
the published server repeats in its ``X-Agent-Run-Id`` / ``X-Agent-Thread-Id`` headers.
"""

from __future__ import annotations

import msgspec

from ..envelope import json_object
from ..framing import DEFAULT_MAX_EVENT_SIZE, Frame, Framing, make_parser
from .wire import NdjsonNamed

__all__ = ["EVENT_NAMES", "named_event", "run_ids"]

#: the SSE event names nest uses: the run start and the two terminals
EVENT_NAMES = ("meta", "done", "error")


_named_decoder = msgspec.json.Decoder(NdjsonNamed)


def named_event(frame: Frame, framing: str) -> tuple[str, bytes]:
    """A frame's event name and data; in NDJSON a named event is ``{"event":…,"data":…}``
    (streambridge's NDJSON form of nest's ``meta``/``done``/``error``)."""
    if framing == "ndjson" and frame.data.startswith(b'{"event"'):
        try:
            named = _named_decoder.decode(frame.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return "", frame.data
        return named.event, bytes(named.data)
    return frame.event, frame.data


def run_ids(head: bytes, framing: Framing) -> tuple[str | None, str | None]:
    """The ``runId`` and ``threadId`` of the ``meta`` a stream opens with, exactly as written (the
    decoder's canonical form would drop a thread id derived from the run id, which a server still
    sends in its header)."""
    parser = make_parser(framing, DEFAULT_MAX_EVENT_SIZE)
    frames = parser.feed(head) + parser.close()
    if not frames:
        return None, None
    event, data = named_event(frames[0], framing)
    meta = json_object(data) if event == "meta" else None
    if meta is None:
        return None, None
    run_id, thread_id = meta.get("runId"), meta.get("threadId")
    return (run_id if isinstance(run_id, str) else None), (thread_id if isinstance(thread_id, str) else None)

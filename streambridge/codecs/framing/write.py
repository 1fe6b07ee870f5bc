"""Writing frames: one SSE event or one NDJSON line."""

from __future__ import annotations

__all__ = ["ndjson_frame", "sse_frame"]


def sse_frame(data: bytes, event: str = "", id: str = "") -> bytes:
    """One SSE event, LF only. Data with line breaks is split over several ``data:`` lines."""
    head = b""
    if event:
        head = b"event: " + event.encode() + b"\n"
    if id:
        head += b"id: " + id.encode() + b"\n"
    if 10 in data or 13 in data:  # (LF, CR: a byte's value is tested ten times as fast as a string)
        lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
    return head + b"data: " + data + b"\n\n"


def ndjson_frame(data: bytes, event: str = "", id: str = "") -> bytes:
    """One NDJSON line. A named event (an SSE event with an ``event:`` name) becomes
    ``{"event":name,"data":payload}`` — streambridge's NDJSON form of an SSE event name."""
    if event:
        return b'{"event":"' + event.encode() + b'","data":' + data + b"}\n"
    return data + b"\n"

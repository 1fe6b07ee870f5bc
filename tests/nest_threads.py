"""The threads of the published nest server (@dudousxd/nestjs-agent 0.11), as the suite's nest
fakes keep them.

The real server creates a thread for a chat request without ``threadId`` (``thr-<n>`` from the
in-memory store of the captures) and names it in ``X-Agent-Thread-Id`` and the ``meta`` frame.
A ``threadId`` it did not create is not refused at the door: the run starts (``201``, ``meta``
naming the unknown id) and fails at once, before its first step, when the loop appends the
message to a thread that is not there: ``event: error`` ``run_failed`` with the store's
TypeError. ``tests/test_proxy_threads.py`` runs the real server for both and compares.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

__all__ = ["UNKNOWN_THREAD", "NestThreads"]

#: what the real server's run says of a thread it did not create (its store's TypeError)
UNKNOWN_THREAD = "Cannot read properties of undefined (reading 'messages')"
_META_THREAD = re.compile(rb'^(event: meta\ndata: \{"runId":"[^"]*","threadId":")[^"]*"')


def meta_frame(run_id: str, thread_id: str) -> bytes:
    return b"event: meta\ndata: " + msgspec.json.encode({"runId": run_id, "threadId": thread_id}) + b"\n\n"


@dataclass
class NestThreads:
    """The threads a fake nest server created, and its answer to a chat request's ``threadId``."""

    created: list[str] = field(default_factory=list)
    #: the unknown thread ids it was sent (each failed its run, as on the real server)
    refused: list[str] = field(default_factory=list)

    def thread_of(self, body: dict[str, Any]) -> str | None:
        """The thread a chat request runs on: a new one for none, None for an unknown one."""
        thread = body.get("threadId")
        if thread is None:
            thread = f"thr-{len(self.created) + 1}"
            self.created.append(thread)
            return thread
        if thread in self.created:
            return str(thread)
        self.refused.append(str(thread))
        return None

    def answer(
        self, body: dict[str, Any], headers: dict[str, str], frames: list[bytes]
    ) -> tuple[dict[str, str], list[bytes]]:
        """A recorded answer (its ``x-agent-*`` headers and frames) as this server gives it to
        ``body``: on the request's thread, or, for a thread it did not create, the run failing."""
        thread = self.thread_of(body)
        run_id = headers.get("x-agent-run-id") or str(uuid.uuid4())
        if thread is None:
            given = str(body["threadId"])
            error = msgspec.json.encode({"code": "run_failed", "message": UNKNOWN_THREAD})
            ids = {"x-agent-run-id": run_id, "x-agent-thread-id": given}
            return ids, [meta_frame(run_id, given), b"event: error\ndata: " + error + b"\n\n"]
        named = rb"\g<1>" + thread.encode() + b'"'
        return {**headers, "x-agent-thread-id": thread}, [_META_THREAD.sub(named, f, count=1) for f in frames]

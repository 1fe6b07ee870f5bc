"""``ag-ui``: the AG-UI protocol 1.0 (``@ag-ui/core`` / ``ag-ui-protocol`` 1.0), as its clients
read it over HTTP + SSE (the TypeScript client's ``verifyEvents`` is the bar for order).

One camelCase JSON event per SSE ``data:`` frame (or NDJSON line), no event names, no ids, no
``[DONE]``; optional members are left out, never ``null``.

Mapped (docs/mapping.md): ``RUN_STARTED`` ↔ run start (``threadId``, ``runId``),
``STEP_STARTED`` / ``STEP_FINISHED`` ↔ steps (a source's step name kept), ``TEXT_MESSAGE_*`` and
``REASONING_MESSAGE_*`` ↔ text and reasoning (message ids are part ids; text without one gets
``sb-text-<n>`` / ``sb-reasoning-<n>``), ``TOOL_CALL_START`` / ``ARGS`` / ``END`` ↔ input
start, input delta, tool call (the joined argument text), ``TOOL_CALL_RESULT`` ↔ tool output,
``CUSTOM`` ↔ data part (name, value), ``RUN_FINISHED`` / ``RUN_ERROR`` ↔ terminal: success, the
approval requests and elicitations still waiting as ``outcome {type: 'interrupt'}`` (read back
as those events), cancelled as ``outcome {type: 'cancelled'}``, failures as
``RUN_ERROR {message, code}`` (the shared code table). The chunk forms and the 0.x
``THINKING_*`` events are read (§4.3; as reasoning), never written. ``STATE_*``,
``MESSAGES_SNAPSHOT``, ``ACTIVITY_*``, ``SUBAGENT_*``, ``RAW``, the reasoning spans and
encrypted values are kept whole (data parts of this codec: other protocols carry them, and
they come back byte for byte), and so are unknown types. Everything AG-UI cannot say (tool
errors, denials, approvals, sources…) travels in ``CUSTOM`` carriers named
``streambridge.carrier``, beside a native rendering where AG-UI has one (a tool error is also a
``TOOL_CALL_RESULT`` with its text).

The package: ``wire`` (event Structs), ``readings`` (what frames mean, shared by the decoder
and the encoder's nativeness checks), ``decoder``, ``encoder``, ``http`` (``RunAgentInput`` ↔
the chat request, resume entries), ``sniff``, ``rules`` (AG-UI's ordering rules for
``validate``).
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import AgUiDecoder
from .encoder import AgUiEncoder
from .http import HEADERS, SURFACE
from .rules import AgUiRules
from .sniff import sniff
from .wire import SPANS

__all__ = ["CODEC", "AgUiDecoder", "AgUiEncoder"]

_NATIVE = (
    COMMON_NATIVE
    | ARTIFACTS
    | {
        "run-start",
        "step-start",
        "step-finish",
        "text-start",
        "text-end",
        "reasoning-start",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
    }
)

CODEC = Codec(
    "ag-ui",
    "AG-UI 1.0 (Agent-User Interaction protocol)",
    AgUiDecoder,
    AgUiEncoder,
    "sse",
    frozenset(_NATIVE),
    SURFACE,
    sniff=sniff,
    rules=AgUiRules,
    response_headers=HEADERS,
    spans=SPANS,
)

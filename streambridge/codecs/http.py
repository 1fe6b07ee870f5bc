"""A protocol's HTTP surface, described as data and pure functions (no I/O).

The proxy and ``replay --serve`` mount every protocol from its :class:`HttpSurface`, and send
upstream requests by its URL rules: neither names a protocol. Paths are relative to the mount
path of a route (``""`` is the mount path itself); ``{run_id}`` and ``{decision}`` are filled in.
A tool decision travels as a neutral :class:`Decision`, read and written by each surface's
:class:`DecisionBody`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

import msgspec

from ..events import Elicitation, ToolApprovalRequest
from .framing import Framing
from .requests import BadRequest, ChatRequest, check_depth, check_id

__all__ = [
    "TOOL_CALL_DECISIONS",
    "Decision",
    "DecisionBody",
    "HttpSurface",
    "Runs",
    "Threads",
    "capture_head",
    "join_url",
    "upstream_scheme_is_http",
]


def join_url(base: str, suffix: str) -> str:
    """``suffix`` appended to the path of ``base`` (one slash between), its query kept."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/") + "/" + suffix.lstrip("/")
    return urlunsplit(parts._replace(path=path, fragment=""))


def capture_head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """The head of a capture file (what ``streambridge record`` writes and every command reads
    before the exact body): ``HTTP <status>``, a ``name: value`` line per header, an empty line."""
    return ("\n".join([f"HTTP {status}", *(f"{name}: {value}" for name, value in headers)]) + "\n\n").encode()


def upstream_scheme_is_http(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https")


def _same(upstream: str) -> str:
    return upstream


@dataclass(frozen=True)
class Decision:
    """An approve / reject of one tool call, in no protocol's words: what the proxy carries from a
    client's control request to the upstream's (or into a held run's resume entries)."""

    call_id: str
    approved: bool
    reason: str | None = None
    #: the answer itself (an elicitation's), any JSON value; None: none given
    payload: Any = None


@dataclass(frozen=True)
class DecisionBody:
    """How a protocol's control route says a :class:`Decision` (approved or not is its path's
    ``{decision}``). Surfaces that share one are forwarded the client's body unchanged."""

    #: the client's body (and whether its route approves) as a decision; :class:`BadRequest` if bad
    parse: Callable[[bytes, bool], Decision]
    #: the body an upstream of this protocol is sent for a decision
    build: Callable[[Decision], bytes]
    #: how the body names the tool call, for error messages
    call_id_field: str


class _ToolCallDecision(msgspec.Struct, rename="camel", omit_defaults=True):
    tool_call_id: str
    reason: str | None = None
    payload: Any = None


def _parse_tool_call_decision(body: bytes, approved: bool) -> Decision:
    check_depth(body, "decision")
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise BadRequest("The body is not JSON.") from None
    call_id = decoded.get("toolCallId") if isinstance(decoded, dict) else None
    if not isinstance(call_id, str):
        raise BadRequest("toolCallId (a string) is required.")
    check_id(call_id, "toolCallId")
    reason = decoded.get("reason")
    return Decision(call_id, approved, reason if isinstance(reason, str) else None, decoded.get("payload"))


def _build_tool_call_decision(decision: Decision) -> bytes:
    return msgspec.json.encode(_ToolCallDecision(decision.call_id, decision.reason, decision.payload))


#: ``{toolCallId, reason?, payload?}``: nest's control body, which streambridge's own control route
#: takes too for protocols without one of their own
TOOL_CALL_DECISIONS = DecisionBody(_parse_tool_call_decision, _build_tool_call_decision, "toolCallId")


@dataclass(frozen=True)
class Runs:
    """Chats are runs: the server mints a run id (and a thread id), announces them in response
    headers and in a run start before anything else, lets another reader re-attach to a live run
    and cancels one by id."""

    stream_path: str  # GET: re-attach to a live run
    cancel_path: str  # POST: cancel a live run
    cancel_status: int
    cancel_answer: dict[str, object]
    run_id_header: str
    thread_id_header: str
    #: the upstream URL that cancels run ``run_id`` of an upstream configured as ``upstream``
    upstream_cancel_url: Callable[[str, str], str]
    #: the (run id, thread id) a stream beginning with ``head`` (in a framing) announces, exactly
    #: as written: what a replay of it repeats in the id headers
    read_ids: Callable[[bytes, Framing], tuple[str | None, str | None]]


@dataclass(frozen=True)
class Threads:
    """How a protocol's chat requests name the conversation they continue (a
    :class:`~.requests.ChatRequest`'s ``thread_id``), and who may choose that name.

    ``client``: a client names its conversations, and a server takes any name (the proxy sends
    the client's upstream as it is). ``server``: the server mints the name when a first message
    comes without one, says it in its run's thread id header and run start, and takes no other
    (nest: an unknown ``threadId`` fails the run), so a proxy in front of it keeps which of the
    server's threads each client conversation is."""

    #: the request member that names the conversation (for people: docs, error messages)
    field: str
    chosen_by: Literal["client", "server"] = "client"


@dataclass(frozen=True)
class HttpSurface:
    """How clients of a protocol talk to a server of it, and how to talk to an upstream of it."""

    chat_path: str  # POST: a chat request, answered by the stream
    chat_status: int
    control_path: str  # POST: approve / reject a tool call (``{decision}``)
    control_status: int
    parse_request: Callable[[bytes], ChatRequest]
    build_request: Callable[[ChatRequest], bytes]
    #: the upstream URL of chats, from the URL a route configures
    upstream_chat_url: Callable[[str], str] = _same
    #: the base of the upstream's ``tool-call/<decision>`` route when a route configures none
    upstream_control_base: Callable[[str], str] = _same
    runs: Runs | None = None
    #: GET: a chat's live stream again, from its start, by the chat id of its request
    #: (``{chat_id}``); ``204`` when none is active (the AI SDK's ``resumeStream``)
    resume_path: str | None = None
    #: the interrupt ids the end of a stream (its last write) asks about: a protocol whose runs
    #: end to ask (AG-UI), whose next request's resume entries must answer every one of them
    asked_interrupts: Callable[[bytes], list[str]] | None = None
    #: the interrupt id an approval request or elicitation of this protocol's streams is
    #: answered by (AG-UI's ``resume`` entries): set for a protocol whose runs end to ask,
    #: which therefore has no control route upstream
    interrupt_id: Callable[[ToolApprovalRequest | Elicitation], str] | None = None
    #: clients of this protocol answer an approval in their next request (AI SDK approval
    #: responses, AG-UI resume), not on a control route while the stream waits
    answers_in_next_request: bool = False
    #: the protocol's named SSE frames carry no ``id:`` (nest: ``meta``, ``done``, ``error``):
    #: the proxy's resume cursors number only the others
    unnumbered_named_frames: bool = False
    #: the body of its control route's approve / reject
    decisions: DecisionBody = TOOL_CALL_DECISIONS
    #: response headers of its own (beside the run's id headers) that its browser clients read
    readable_headers: tuple[str, ...] = ()
    #: how its requests name a conversation (None: they name none)
    threads: Threads | None = None

    def __post_init__(self) -> None:
        if self.server_threads and self.runs is None:
            raise ValueError("a server that chooses thread ids must say them in its runs (runs is unset)")

    @property
    def server_threads(self) -> bool:
        """The server mints conversation ids and takes only its own (see :class:`Threads`)."""
        return self.threads is not None and self.threads.chosen_by == "server"

    @property
    def exposed_headers(self) -> tuple[str, ...]:
        """Every response header a browser client of this protocol must be let read
        (``Access-Control-Expose-Headers``): the run's id headers, then its own."""
        ids = (self.runs.run_id_header, self.runs.thread_id_header) if self.runs is not None else ()
        return (*ids, *self.readable_headers)

    @property
    def run_id_header(self) -> str | None:
        """The response header an upstream of this protocol names its run in (None: it has no runs)."""
        return self.runs.run_id_header if self.runs is not None else None

    def peek_thread_id(self, body: bytes) -> str | None:
        """The thread id of a request forwarded unchanged (passthrough), when it has one."""
        try:
            return self.parse_request(body).thread_id
        except BadRequest:
            return None

    def control_url(self, upstream: str, configured: str | None, decision: str) -> str | None:
        """Where an approve / reject goes upstream: ``<configured or the protocol's base>/tool-call/<decision>``
        (None when that is not an HTTP URL)."""
        base = configured or self.upstream_control_base(upstream)
        if self.interrupt_id is not None or not upstream_scheme_is_http(base):
            return None
        return join_url(base, f"tool-call/{decision}")

    def cancel_url(self, upstream: str, run_id: str | None) -> str | None:
        """The upstream URL that cancels a run; None where a run is cancelled by closing its connection."""
        if self.runs is None or not run_id or not upstream_scheme_is_http(upstream):
            return None
        return self.runs.upstream_cancel_url(upstream, quote(run_id, safe=""))

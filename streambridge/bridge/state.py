"""What one proxy app shares across its streams: configuration, metrics, the upstream session and
connection limit, the run log, live runs and relays, and the background tasks the drain waits for."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from .. import codecs
from .config import Config, Route
from .logging import log_event
from .metrics import BridgeMetrics

if TYPE_CHECKING:
    from ..inspector import Inspector
    from .asks import Pending
    from .relay import Relay
    from .runlog import RunLog
    from .runlog.threads import ThreadMap
    from .upstream import ConnectionLimit, Upstream

__all__ = ["STATE", "BridgeState"]


@dataclass
class BridgeState:
    config: Config
    metrics: BridgeMetrics = field(default_factory=BridgeMetrics)
    session: aiohttp.ClientSession | None = None
    limit: ConnectionLimit | None = None
    #: the runs this instance is relaying, by run id (what a cancel interrupts)
    live: dict[str, Relay] = field(default_factory=dict)
    #: where every run's output is logged for resume (None: ``--run-log off``)
    runlog: RunLog | None = None
    #: the upstream's own thread of each client conversation, for upstreams that choose them
    #: (beside the run log: in Redis when it is, else in this process)
    threads: ThreadMap | None = None
    #: this proxy instance (a run log shared by instances sends cancels to a run's owner by it)
    instance: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    #: the interrupts each thread's last run ended asking about (route name, thread id), newest last
    interrupts: OrderedDict[tuple[str, str], list[str]] = field(default_factory=OrderedDict)
    #: what each thread's last run asked of an upstream whose runs end to ask: (route name,
    #: thread id) → tool call id → interrupt id, so a client's answers by call find their interrupt
    upstream_asks: OrderedDict[tuple[str, str], dict[str, str]] = field(default_factory=OrderedDict)
    #: the open interrupts of held runs (asks.py), by (route name, tool call id)
    pending: dict[tuple[str, str], Pending] = field(default_factory=dict)
    relays: set[Relay] = field(default_factory=set)
    #: the live stream inspector (None: ``--inspect`` is off)
    inspector: Inspector | None = None
    background: set[asyncio.Task[None]] = field(default_factory=set)
    draining: bool = False
    never_listened: bool = False  # the socket could not be bound: nothing to drain at shutdown
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def opened(self, relay: Relay) -> None:
        self.relays.add(relay)
        self.idle.clear()

    def closed(self, relay: Relay) -> None:
        self.relays.discard(relay)
        if not self.relays:
            self.idle.set()

    def asked(self, route: str, thread_id: str, interrupts: list[str]) -> None:
        """Remember what a thread's run ended asking its client (forgetting it when it asked
        nothing), for the most recent :data:`INTERRUPT_THREADS` threads."""
        _remember(self.interrupts, (route, thread_id), interrupts)

    def upstream_asked(self, route: str, thread_id: str, interrupts: dict[str, str]) -> None:
        """Remember what a thread's run asked of its client in the upstream's interrupt ids."""
        _remember(self.upstream_asks, (route, thread_id), interrupts)

    def unanswered(self, route: str, thread_id: str, answered: set[str]) -> list[str]:
        """The interrupts of the thread's last run that ``answered`` leaves out."""
        return [i for i in self.interrupts.get((route, thread_id), []) if i not in answered]

    def cancel_live(self, run_id: str) -> bool:
        """Cancel a run this instance relays (a cancel from any instance ends here)."""
        relay = self.live.get(run_id)
        if relay is None:
            return False
        relay.interrupt("cancelled")
        return True

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def cancel_upstream(self, route: Route, upstream: Upstream | None) -> None:
        """An upstream whose runs go on after their client left (its surface has runs) is told to
        stop one, by its id and its protocol's cancel route (best effort); others saw their
        connection close."""
        if upstream is None or self.session is None:
            return
        url = codecs.get(route.source).http.cancel_url(route.upstream, upstream.run_id)
        if url is None:
            return
        headers = {k: v for k, v in upstream.headers.items() if k.lower() not in ("content-type", "accept")}
        self.spawn(self._post_cancel(route, url, headers))

    async def _post_cancel(self, route: Route, url: str, headers: dict[str, str]) -> None:
        assert self.session is not None
        try:
            timeout = aiohttp.ClientTimeout(total=route.connect_timeout + 5)
            async with self.session.post(url, headers=headers, timeout=timeout, allow_redirects=False) as resp:
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            log_event(logging.WARNING, "upstream_cancel_failed", route=route.name, error=type(exc).__name__)
            return
        log_event(logging.INFO, "upstream_cancel", route=route.name, status=status)


#: how many threads' open interrupts a proxy remembers
INTERRUPT_THREADS = 10_000


def _remember(table: OrderedDict[tuple[str, str], Any], key: tuple[str, str], value: Any) -> None:
    """Keep ``value`` as the newest entry (none when empty), the table bounded to
    :data:`INTERRUPT_THREADS` entries, oldest dropped first."""
    table.pop(key, None)
    if value:
        table[key] = value
        while len(table) > INTERRUPT_THREADS:
            table.popitem(last=False)


STATE = web.AppKey("streambridge_state", BridgeState)

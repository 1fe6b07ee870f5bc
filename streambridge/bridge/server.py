"""The aiohttp application and running it: the routes (mounted by router.py), health, metrics, the
inspector, the upstream session and run log, and the drain at shutdown.

Run it with ``handler_cancellation=True`` (``serve`` and the tests do): a client that goes away
then cancels its handler at once, and with it the upstream request. Shutdown stops accepting,
lets open streams finish for ``drain_timeout`` seconds, then ends the rest with a terminal event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..inspector import Inspector
from ..inspector.web import mount
from .boundary import HostCheck, guard_server_log
from .config import Config, safe_url
from .logging import log_event, setup_logging
from .metrics import CONTENT_TYPE_LATEST
from .router import mount_route
from .runlog import open_run_log
from .runlog.threads import thread_map
from .state import STATE, BridgeState
from .upstream import ConnectionLimit, make_session

if TYPE_CHECKING:
    from .workers import Worker

__all__ = ["STATE", "WORKER_HEADER", "BindError", "BridgeState", "create_app", "run_app"]

#: the response header naming the worker process that answered (``serve --workers N``, N > 1):
#: ``/healthz`` and ``/metrics`` answer for that worker alone
WORKER_HEADER = "X-Streambridge-Worker"


async def healthz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = {"status": "draining" if state.draining else "ok", "openStreams": len(state.relays)}
    return web.json_response(body, status=503 if state.draining else 200)


async def metrics_handler(request: web.Request) -> web.Response:
    body = request.app[STATE].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _session_ctx(app: web.Application) -> AsyncIterator[None]:
    state = app[STATE]
    config = state.config
    state.runlog = open_run_log(
        config.run_log,
        state.instance,
        run_bytes=max(r.replay_limit_bytes for r in config.routes),
        route_bytes={r.name: r.replay_limit_bytes for r in config.routes},
        total_bytes=config.run_log_bytes,
        ttl=config.run_log_ttl,
        lease=config.run_log_lease,
        maxlen=config.run_log_maxlen,
        timeout=config.run_log_timeout,
    )
    if state.runlog is not None:
        await state.runlog.start(state.cancel_live)
    state.threads = thread_map(state.runlog, config.thread_ttl)
    state.session = make_session(state.config.upstream_keepalive)
    metrics = state.metrics
    state.limit = ConnectionLimit(
        state.config.max_upstream_connections, metrics.upstream_connections, metrics.connection_limit_refusals
    )
    yield
    await state.session.close()
    if state.runlog is not None:
        await state.runlog.stop()


async def _drain(app: web.Application) -> None:
    """Stop taking streams, let open ones finish for ``drain_timeout``, then end them with a terminal.

    Run while the listener is still open (see :func:`run_app`), so ``/healthz`` answers 503 and
    new streams are refused with 503 during the drain; a second call does nothing."""
    state = app[STATE]
    if state.draining:
        return
    state.draining = True
    if state.never_listened:
        return
    log_event(logging.INFO, "draining", open_streams=len(state.relays))
    await _wait_idle(state, state.config.drain_timeout)
    for relay in list(state.relays):
        relay.interrupt("shutting_down")
    await _wait_idle(state, 5.0)
    if state.background:
        await asyncio.wait(list(state.background), timeout=5.0)


async def _wait_idle(state: BridgeState, timeout: float) -> None:
    if not state.relays:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await state.idle.wait()


def create_app(config: Config) -> web.Application:
    """The proxy as an aiohttp app. Serve it with ``handler_cancellation=True`` (see :func:`run_app`)."""
    limit = max(r.max_request_bytes for r in config.routes)
    guard_server_log()
    app = web.Application(client_max_size=limit + 1024, middlewares=[HostCheck(config.allowed_hosts).middleware()])
    app[STATE] = BridgeState(config)
    app.cleanup_ctx.append(_session_ctx)
    app.on_shutdown.append(_drain)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_handler)
    for route in config.routes:
        mount_route(app.router, route, config.owner_header, config.require_identity)
    if config.inspect:
        state = app[STATE]
        state.inspector = Inspector(
            config.inspect_streams, config.inspect_stream_bytes, config.inspect_token, config.inspect_bytes
        )
        mount(app, state.inspector)
    return app


class BindError(Exception):
    """The listening socket could not be bound (address in use, no permission, unknown host)."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {error}")
        self.host = host
        self.port = port
        self.error = error


def run_app(config: Config, worker: Worker | None = None) -> None:
    """Serve until SIGINT / SIGTERM, then drain (blocking). Raises :class:`BindError` when the
    address cannot be bound; the routes and ``listening`` are logged only once it is.

    As one of ``serve --workers`` (workers.py), its socket shares the port (``SO_REUSEPORT``),
    its log lines and answers name its process, and it stops as on SIGTERM when its parent is gone.
    """
    setup_logging(config.log_json, {"worker": os.getpid()} if worker else None)
    app = create_app(config)
    if worker is not None:
        app.on_response_prepare.append(_name_worker)
    with asyncio.Runner() as loop:
        runner = loop.run(_start(app, config, worker))
        try:
            loop.run(_forever())
        except (web.GracefulExit, KeyboardInterrupt):  # SIGTERM, SIGINT
            _ignore_further_stops(loop.get_loop())
        finally:
            loop.run(_drain(app))  # still listening: /healthz says 503 while open streams finish
            loop.run(runner.cleanup())  # then stop listening (the drain is done: nothing waits)


async def _start(app: web.Application, config: Config, worker: Worker | None) -> web.AppRunner:
    """What ``web.run_app`` starts, for one TCP site, announced once its socket is bound."""
    runner = web.AppRunner(app, handle_signals=True, handler_cancellation=True, shutdown_timeout=5.0, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, config.host, config.port, reuse_port=worker is not None).start()
    except OSError as exc:
        app[STATE].never_listened = True
        await runner.cleanup()
        raise BindError(config.host, config.port, exc) from None
    _announce(config, runner.addresses[0])
    if worker is not None:
        _watch_parent(worker.parent_gone)
        worker.ready()
    return runner


def _ignore_further_stops(loop: asyncio.AbstractEventLoop) -> None:
    """A second SIGTERM / SIGINT while draining is logged and changes nothing: a supervisor
    that signals every process of a group (systemd's default) also reaches a worker whose parent
    forwards the same stop, and a drain cut short by it would end no stream properly."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, log_event, logging.INFO, "already_draining")


async def _name_worker(request: web.Request, response: web.StreamResponse) -> None:
    response.headers[WORKER_HEADER] = str(os.getpid())


def _watch_parent(gone: int) -> None:
    """Stop as on SIGTERM (drain, then exit) once the parent's end of the pipe is closed."""
    loop = asyncio.get_running_loop()

    def parent_gone() -> None:
        loop.remove_reader(gone)
        os.kill(os.getpid(), signal.SIGTERM)

    loop.add_reader(gone, parent_gone)


async def _forever() -> None:
    await asyncio.Event().wait()


def _announce(config: Config, address: tuple[Any, ...]) -> None:
    for route in config.routes:
        log_event(
            logging.INFO,
            "route",
            name=route.name,
            path=route.path,
            upstream=safe_url(route.upstream),
            source=route.source,
            target=route.target,
            mode=route.request_mode,
        )
    log_event(logging.INFO, "run_log", backend=safe_url(config.run_log) if "://" in config.run_log else config.run_log)
    if config.inspect:
        host = f"[{address[0]}]" if ":" in str(address[0]) else address[0]
        access = "token" if config.inspect_token else "loopback only"
        log_event(logging.INFO, "inspector", url=f"http://{host}:{address[1]}/_inspect/", access=access)
    log_event(logging.INFO, "listening", host=address[0], port=address[1])

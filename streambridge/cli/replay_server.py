"""What ``streambridge replay`` does (the command itself, light to import, is in :mod:`.replay`):
play a recorded run to stdout, or serve it as a live fake backend.

A replay holds its transcripts in memory (they are recordings of single runs), cut into one
piece per source frame so pacing is per frame. With ``--to`` each piece is translated through a
:class:`~streambridge.Translator`; without it the bytes are sent exactly as recorded.

``--serve`` mounts the served protocol's :class:`~streambridge.codecs.http.HttpSurface` at
``--base`` (``/`` by default) as the proxy does: its chat route answered with its chat status,
its control route, and for a protocol with runs the run's ids in its id headers, the re-attach
route (the run replayed, its start naming the run only) and the cancel route; a protocol that
resumes chats by id (a ``resume_path``) is told ``204``: a replay keeps no chat open to resume.
``--cors`` and the access log are the proxy's own (``bridge.cors``, ``bridge.logging``).
:func:`make_replay_app` is the whole server, for tests and embedding.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
from aiohttp import web
from msgspec import UNSET

from ..bridge.boundary import HostCheck, RouteGate, guard_server_log
from ..bridge.cors import Cors
from ..bridge.logging import TextFormatter, access_log
from ..codecs import Codec
from ..codecs.fidelity import Fidelity
from ..codecs.framing import Framing
from ..codecs.http import HttpSurface
from ..events import RunStart, StepFinish, Terminal
from ..transcripts import Capture, cut_frames, transcripts_in
from ..translate import Translator
from .common import (
    UserError,
    Warnings,
    note,
)
from .limits import FrameGuard
from .replay import REALTIME_FRAME_MS
from .transcripts import detect, open_source

ACCESS_LOG = logging.getLogger("streambridge.replay")
_json = msgspec.json.encode


@dataclass
class Recording:
    """One transcript, cut into its frames."""

    name: str
    keys: tuple[str, ...]
    codec: Codec
    framing: Framing
    capture: Capture | None
    pieces: list[bytes]


@dataclass
class Playback:
    """What one replay sends: the served protocol, its chunks, and the run's ids (a protocol with runs)."""

    recording: Recording
    codec: Codec
    framing: Framing
    chunks: list[bytes]
    run_id: str | None = None
    thread_id: str | None = None
    failed_status: int | None = None  # a capture of a non-2xx answer is served as recorded


def load_recording(arg: str | Path, protocol: str | None, root: Path | None = None, force: bool = False) -> Recording:
    with open_source(arg) as source:
        detected = detect(source, protocol, "--from", report=False, force=force)
        pieces = [piece.raw for piece in cut_frames(source.chunks(), detected.framing)]
    path = Path(source.name)
    keys: tuple[str, ...] = (path.name, path.stem)
    if root is not None:
        rel = path.relative_to(root)
        keys = (str(rel), str(rel.with_suffix("")), *keys)
    return Recording(source.name, keys, detected.codec, detected.framing, source.capture, pieces)


def load_recordings(arg: str, protocol: str | None, force: bool = False) -> list[Recording]:
    path = Path(arg)
    if arg != "-" and path.is_dir():
        files = transcripts_in(path)
        if not files:
            raise UserError(f"{path}: no transcripts in it (*.sse, *.ndjson, *.jsonl, *.http)")
        return [load_recording(f, protocol, path, force) for f in files]
    return [load_recording(arg, protocol, force=force)]


def render(
    recording: Recording, target: Codec | None, framing: Framing | None, fidelity: Fidelity = "exact"
) -> Playback:
    """The chunks to send: the recorded pieces, or each piece translated to ``target``."""
    codec = target or recording.codec
    out_framing = framing or (codec.default_framing if target else recording.framing)
    capture = recording.capture
    if capture is not None and not 200 <= capture.status < 300:
        return Playback(recording, recording.codec, recording.framing, recording.pieces, failed_status=capture.status)
    if codec is recording.codec and out_framing == recording.framing:
        chunks = list(recording.pieces)
    else:
        translator = Translator(
            recording.codec.name,
            codec.name,
            source_framing=recording.framing,
            target_framing=out_framing,
            fidelity=fidelity,
        )
        warnings = Warnings(recording.name, echo=None)
        chunks = [translator.feed(piece) for piece in recording.pieces]
        chunks.append(translator.close())
        warnings.take(translator)
        guard = FrameGuard(recording.name, codec.name, out_framing)
        for chunk in chunks:
            guard.check(chunk)
    playback = Playback(recording, codec, out_framing, [c for c in chunks if c])
    runs = codec.http.runs
    if runs is not None and playback.chunks:  # the ids its run start announces, for the headers
        playback.run_id, playback.thread_id = runs.read_ids(playback.chunks[0], out_framing)
    return playback


def recorded_duration_ms(recording: Recording) -> float | None:
    """The run's duration when the transcript reports one (agentkit usage.durationMs, or the
    steps' usage durations)."""
    decoder = recording.codec.decoder(recording.framing)
    events = [e for piece in recording.pieces for e in decoder.feed(piece)] + decoder.close()
    steps = 0.0
    for event in events:
        usage = getattr(event, "usage", UNSET)
        duration = usage.duration_ms if usage is not UNSET else UNSET
        if duration is UNSET:
            continue
        if type(event) is Terminal:
            return float(duration)
        if type(event) is StepFinish:
            steps += float(duration)
    return steps or None


def frame_delay(playback: Playback, delay_ms: float | None, realtime: bool) -> float:
    """Seconds between two chunks: fixed, or the recorded duration spread over the frames."""
    if delay_ms is not None:
        return max(delay_ms, 0.0) / 1000
    if not realtime:
        return 0.0
    total = recorded_duration_ms(playback.recording)
    per_frame = total / max(len(playback.chunks), 1) if total else REALTIME_FRAME_MS
    return per_frame / 1000


# -- the HTTP fake backend -------------------------------------------------------------------


class ReplayServer:
    """Hands out playbacks, one per request in order (cycling) or by ``?transcript=<name>``."""

    def __init__(self, playbacks: list[Playback], delays: list[float], exit_after: int | None = None) -> None:
        self.playbacks = playbacks
        self.delays = delays
        self._order = itertools.cycle(range(len(playbacks)))
        self.served = 0
        self.exit_after = exit_after
        self.finished = asyncio.Event()

    def pick(self, request: web.Request) -> int:
        wanted = request.query.get("transcript")
        if wanted is None:
            return next(self._order)
        for i, playback in enumerate(self.playbacks):
            if wanted in playback.recording.keys:
                return i
        names = ", ".join(p.recording.keys[0] for p in self.playbacks)
        raise web.HTTPNotFound(
            text=_json({"message": f"no transcript {wanted!r} (have: {names})"}).decode(),
            content_type="application/json",
        )

    def by_run(self, run_id: str) -> int:
        for i, playback in enumerate(self.playbacks):
            if playback.run_id == run_id:
                return i
        raise web.HTTPNotFound(
            text=_json({"statusCode": 404, "message": f"no active run {run_id}"}).decode(),
            content_type="application/json",
        )

    async def send(
        self, request: web.Request, index: int, status: int, headers: dict[str, str], chunks: list[bytes]
    ) -> web.StreamResponse:
        playback = self.playbacks[index]
        if playback.failed_status is not None:
            capture = playback.recording.capture
            content_type = (capture.header("content-type") if capture else None) or "application/json"
            return web.Response(
                status=playback.failed_status, body=b"".join(chunks), headers={"Content-Type": content_type}
            )
        stream_headers = playback.codec.stream_headers(playback.framing)
        response = web.StreamResponse(status=status, headers={**stream_headers, **headers})
        delay = self.delays[index]
        try:
            await response.prepare(request)
            for i, chunk in enumerate(chunks):
                if i and delay:
                    await asyncio.sleep(delay)
                await response.write(chunk)
            await response.write_eof()
        except ConnectionError:
            pass  # the client went away: nothing left to send it
        finally:
            self._count()  # a stream cut short still counts toward --exit-after
        return response

    def _count(self) -> None:
        self.served += 1
        if self.exit_after is not None and self.served >= self.exit_after:
            self.finished.set()


REPLAY_KEY = web.AppKey("streambridge_replay", ReplayServer)


def _run_headers(playback: Playback, with_thread: bool) -> dict[str, str]:
    """The run's ids in the surface's id headers (none for a protocol without runs)."""
    runs = playback.codec.http.runs
    headers = {}
    if runs is not None and playback.run_id:
        headers[runs.run_id_header] = playback.run_id
    if runs is not None and with_thread and playback.thread_id:
        headers[runs.thread_id_header] = playback.thread_id
    return headers


def _resume_chunks(playback: Playback) -> list[bytes]:
    """The chunks of a re-attach: the run replayed, its first frame (the run start) replaced by one
    that names the run only, as a server says it to a reader joining a run under way."""
    if not playback.run_id or not playback.chunks:
        return playback.chunks
    pieces = list(cut_frames([playback.chunks[0]], playback.framing))
    encoder = playback.codec.encoder(playback.framing)
    start = encoder.encode([RunStart(run_id=playback.run_id, resumed=True)])
    first = start + b"".join(p.raw for p in pieces[1:])
    return [first, *playback.chunks[1:]]


@contextlib.contextmanager
def access_log_to_stderr() -> Iterator[None]:
    """Print the access log on stderr while the fake backend runs (and only then)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter())
    saved = ACCESS_LOG.propagate, ACCESS_LOG.level
    ACCESS_LOG.addHandler(handler)
    ACCESS_LOG.propagate, ACCESS_LOG.level = False, logging.INFO
    try:
        yield
    finally:
        ACCESS_LOG.removeHandler(handler)
        ACCESS_LOG.propagate, ACCESS_LOG.level = saved


def make_replay_app(
    playbacks: list[Playback],
    *,
    delays: list[float] | None = None,
    base: str | None = None,
    cors: str | None = None,
    exit_after: int | None = None,
    allowed_hosts: Iterable[str] = (),
) -> web.Application:
    """An aiohttp app serving ``playbacks`` (all in one protocol) on that protocol's surface,
    behind the proxy's browser boundary (``bridge.boundary``: Host names, Origin, JSON bodies)."""
    if not playbacks:
        raise ValueError("nothing to serve")
    codec = playbacks[0].codec
    server = ReplayServer(playbacks, delays or [0.0] * len(playbacks), exit_after)
    policy = Cors((cors,) if cors else (), codec.http.exposed_headers)
    guard_server_log()
    gates = [HostCheck(allowed_hosts).middleware(), RouteGate(policy).middleware()]
    app = web.Application(middlewares=[access_log(ACCESS_LOG), *gates])
    app[REPLAY_KEY] = server
    if cors:  # the served protocol's id headers readable by a browser frontend
        policy.install(app)
    _mount(app, server, codec.http, mount_path(base))
    return app


def mount_path(base: str | None) -> str:
    """``--base`` as a mount path: a leading and a trailing slash, ``/`` when not given."""
    inner = (base or "").strip("/")
    return f"/{inner}/" if inner else "/"


def _chat_route(surface: HttpSurface, mount: str) -> str:
    """Where chats are posted (a chat path that is the mount path itself has no trailing slash)."""
    return mount + surface.chat_path if surface.chat_path or mount == "/" else mount.rstrip("/")


def _mount(app: web.Application, server: ReplayServer, surface: HttpSurface, mount: str) -> None:
    """The surface's routes under ``mount``, as the proxy mounts a route's client surface."""
    replies = _Replies(server, surface)
    app.router.add_post(_chat_route(surface, mount), replies.chat)
    if not surface.chat_path and mount != "/":
        app.router.add_post(mount, replies.chat)
    if surface.runs is not None:
        app.router.add_get(mount + surface.runs.stream_path, replies.attach)
        app.router.add_post(mount + surface.runs.cancel_path, replies.cancel)
    if surface.resume_path is not None:
        app.router.add_get(mount + surface.resume_path, replies.nothing_to_resume)
    app.router.add_post(mount + surface.control_path.replace("{decision}", "{decision:approve|reject}"), replies.settle)


class _Replies:
    """The fake backend's answers on one protocol's surface."""

    def __init__(self, server: ReplayServer, surface: HttpSurface) -> None:
        self.server = server
        self.surface = surface

    async def chat(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        index = self.server.pick(request)
        playback = self.server.playbacks[index]
        headers = _run_headers(playback, True)
        return await self.server.send(request, index, self.surface.chat_status, headers, playback.chunks)

    async def attach(self, request: web.Request) -> web.StreamResponse:
        index = self.server.by_run(request.match_info["run_id"])
        playback = self.server.playbacks[index]
        return await self.server.send(request, index, 200, _run_headers(playback, False), _resume_chunks(playback))

    async def cancel(self, request: web.Request) -> web.Response:
        self.server.by_run(request.match_info["run_id"])
        runs = self.surface.runs
        assert runs is not None  # mounted only for protocols with runs
        return web.json_response(runs.cancel_answer, status=runs.cancel_status)

    @staticmethod
    async def nothing_to_resume(request: web.Request) -> web.Response:
        """A replay keeps no chat open between requests: a resume finds none active."""
        return web.Response(status=204)

    async def settle(self, request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"ok": True}, status=self.surface.control_status)


def announce(url: str) -> None:
    """Tell the user where the fake backend listens (tests replace this to learn the URL)."""
    note(f"serving on {url} (Ctrl-C stops)")


async def serve_app(app: web.Application, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Run ``app`` until it has served ``exit_after`` streams (a replay app), or forever (until cancelled)."""
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)  # ours: access_log
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise listen_error(host, port, exc) from None
        bound_host, bound_port = runner.addresses[0][:2]
        ready(f"http://{_url_host(bound_host)}:{bound_port}")
        server = app.get(REPLAY_KEY)  # an app of another command's (the inspector's) serves until stopped
        if server is None or server.exit_after is None:
            await asyncio.Event().wait()
        else:
            await server.finished.wait()
    finally:
        await runner.cleanup()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listen_error(host: str, port: int, exc: OSError) -> UserError:
    """A socket that could not be bound (address in use, no permission, unknown host), in one line."""
    # a resolver's error (or one without an errno): its errno is no OS error number
    reason = (exc.strerror or str(exc)) if isinstance(exc, socket.gaierror) or not exc.errno else os.strerror(exc.errno)
    return UserError(f"cannot listen on {_url_host(host)}:{port}: {reason}")


def entry_points(playbacks: list[Playback], base: str | None) -> list[str]:
    surface, mount = playbacks[0].codec.http, mount_path(base)
    points = [f"POST {_chat_route(surface, mount)}"]
    if surface.runs is not None:
        points.append(f"GET {mount}{surface.runs.stream_path.replace('{run_id}', ':runId')}")
    return points

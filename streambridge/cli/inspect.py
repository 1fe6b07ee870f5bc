"""``streambridge inspect FILE``: the live inspector's page for a recorded transcript, served on
this machine (loopback by default), its client side the transcript translated ``--to`` another
protocol (default: as recorded). The recording's frames stand for its chunks; it has no arrival
times, so the page shows no timeline."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

import typer

from ..bridge.config import ENV_PREFIX
from .common import findings_exit, note, resolve_protocol
from .options import PORT_MAX, PORT_MIN, AsRecordedTarget, ForceOption, SniffedSource

if TYPE_CHECKING:  # (the inspector and its server are imported when the command runs)
    from ..inspector import StreamCapture

__all__ = ["TOKEN_VARIABLE", "access_token", "inspect_command", "page_url", "recorded_capture"]

DEFAULT_PORT = 8789
TOKEN_VARIABLE = ENV_PREFIX + "INSPECT_TOKEN"  # the proxy's inspector reads the same (bridge/config.py)


def recorded_capture(file: str, source: str | None, target: str | None, force: bool = False) -> StreamCapture:
    """The transcript as the inspector keeps a stream: its frames as received, their translation
    as a client would get it."""
    from .. import Translator
    from ..inspector import StreamCapture, StreamFacts
    from .replay_server import load_recording

    recording = load_recording(file, source, force=force)
    to = resolve_protocol(target, "--to") if target else recording.codec
    translator = Translator(recording.codec.name, to.name, source_framing=recording.framing, strict=False)
    facts = StreamFacts(
        route="recording",
        path=Path(recording.name).name,
        source=recording.codec.name,
        target=to.name,
        framing=translator.encoder.framing,
        transport="file",
        source_framing=recording.framing,
    )
    capture = StreamCapture("recording", facts, limit=1 << 62, recorded=True, clock=lambda: 0.0)
    for piece in recording.pieces:
        capture.upstream_chunk(piece)
        out = translator.feed(piece)
        if out:
            capture.client_write(out)
    tail = translator.close()  # (lenient: a bad frame is a malformed event, never an error)
    if tail:
        capture.client_write(tail, origin="end")
    terminal = translator.terminal
    capture.end("completed", translator.events_in, recording.framing, terminal.status if terminal else None)
    return capture


def access_token(host: str) -> str | None:
    """``STREAMBRIDGE_INSPECT_TOKEN``, else a fresh token when ``host`` is not loopback: the
    page answers loopback addresses without one and any other only with one, so a page bound
    beyond loopback without a token would answer 403 to everyone it was opened for."""
    token = os.environ.get(TOKEN_VARIABLE) or None
    if token is None and not _loopback(host):
        token = secrets.token_urlsafe(18)
        note(f"{TOKEN_VARIABLE} is not set: the page takes a token made for this run (in its URL)")
    return token


def page_url(bound: str, token: str | None) -> str:
    """The page's URL that works: a wildcard address (``0.0.0.0``) is no address to open, so
    this machine's loopback stands for it; the token, when one is needed, in the query."""
    from ..inspector.web import PREFIX

    scheme, _, rest = bound.partition("://")
    host, _, port = rest.rpartition(":")
    if _wildcard(host.strip("[]")):
        host = _LOOPBACK
    query = f"?token={quote(token, safe='')}" if token else ""
    return f"{scheme}://{host}:{port}{PREFIX}/{query}"


_LOOPBACK = "127.0.0.1"


def _wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def inspect_command(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript or capture file; - reads stdin.")],
    to: AsRecordedTarget = None,
    from_: SniffedSource = None,
    host: Annotated[
        str,
        typer.Option(
            metavar="HOST",
            help=f"Address to bind (beyond loopback the page takes a token: {TOKEN_VARIABLE}, else one made for the run).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(metavar="PORT", min=PORT_MIN, max=PORT_MAX, help="Port to bind (0 picks a free one).")
    ] = DEFAULT_PORT,
    force: ForceOption = False,
) -> None:
    """Open a recorded transcript in the stream inspector (upstream and translated frames side by side)."""
    from ..bridge.boundary import HostCheck, guard_server_log
    from ..inspector import Inspector
    from ..inspector.web import create_inspect_app
    from .replay_server import serve_app

    with findings_exit():
        capture = recorded_capture(file, from_, to, force)
    token = access_token(host)
    inspector = Inspector(keep=1, token=token)
    inspector.add(capture)
    app = create_inspect_app(inspector)
    app.middlewares.append(HostCheck().middleware())  # against DNS rebinding, as the proxy's (bridge/boundary.py)
    guard_server_log()

    def ready(url: str) -> None:
        note(f"inspecting {file} at {page_url(url, token)}#{capture.id} (Ctrl-C stops)")
        if _wildcard(host):
            note(f"listening on every address: from another machine use its address in place of {_LOOPBACK}")

    try:
        asyncio.run(serve_app(app, host, port, ready))
    except KeyboardInterrupt:
        note("stopped")

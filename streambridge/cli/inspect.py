"""``streambridge inspect FILE``: the live inspector's page for a recorded transcript, served on
this machine (loopback by default), its client side the transcript translated ``--to`` another
protocol (default: as recorded). The recording's frames stand for its chunks; it has no arrival
times, so the page shows no timeline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from .. import Translator
from ..bridge.boundary import HostCheck, guard_server_log
from ..inspector import Inspector, StreamCapture, StreamFacts
from ..inspector.web import PREFIX, create_inspect_app
from .common import note, resolve_protocol
from .options import PORT_MAX, PORT_MIN, AsRecordedTarget, SniffedSource
from .replay import load_recording, serve_app

__all__ = ["inspect_command", "recorded_capture"]

DEFAULT_PORT = 8789


def recorded_capture(file: str, source: str | None, target: str | None) -> StreamCapture:
    """The transcript as the inspector keeps a stream: its frames as received, their translation
    as a client would get it."""
    recording = load_recording(file, source)
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


def inspect_command(
    file: Annotated[str, typer.Argument(metavar="FILE", help="Transcript or capture file; - reads stdin.")],
    to: AsRecordedTarget = None,
    from_: SniffedSource = None,
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to bind (the page answers loopback only).")] = (
        "127.0.0.1"
    ),
    port: Annotated[
        int, typer.Option(metavar="PORT", min=PORT_MIN, max=PORT_MAX, help="Port to bind (0 picks a free one).")
    ] = DEFAULT_PORT,
) -> None:
    """Open a recorded transcript in the stream inspector (upstream and translated frames side by side)."""
    capture = recorded_capture(file, from_, to)
    inspector = Inspector(keep=1)
    inspector.add(capture)
    app = create_inspect_app(inspector)
    app.middlewares.append(HostCheck().middleware())  # against DNS rebinding, as the proxy's (bridge/boundary.py)
    guard_server_log()

    def ready(url: str) -> None:
        note(f"inspecting {file} at {url}{PREFIX}/#{capture.id} (Ctrl-C stops)")

    try:
        asyncio.run(serve_app(app, host, port, ready))
    except KeyboardInterrupt:
        note("stopped")

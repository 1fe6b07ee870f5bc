"""``streambridge replay``: play a recorded run to stdout, or serve it as a live fake backend.

The command and its options only, light to import (shell completion and ``--help`` import this
module): what it does, with aiohttp and the proxy's pieces, is in :mod:`.replay_server`, imported
when the command runs. See that module for how a replay is played and served.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Annotated

import typer

from .common import (
    UserError,
    VerboseOption,
    check_fidelity,
    check_framing,
    complete_framing,
    findings_exit,
    note,
    resolve_protocol,
    set_verbose,
    stdout_binary,
)
from .options import (
    FRAMING_METAVAR,
    PORT_MAX,
    PORT_MIN,
    AsRecordedTarget,
    ForceOption,
    SniffedSource,
    fidelity_option,
)

if TYPE_CHECKING:
    from .replay_server import Playback

__all__ = ["DEFAULT_PORT", "REALTIME_FRAME_MS", "replay_command"]

DEFAULT_PORT = 8788  # the proxy (`serve`) takes 8787: a replay can be its upstream
REALTIME_FRAME_MS = 30.0


# -- the command -----------------------------------------------------------------------------

SERVE_ONLY = ("host", "port", "base", "cors", "exit_after", "allowed_host")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user gave option ``name`` (its value is not the default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _serve_options_need_serve(ctx: typer.Context) -> None:
    """Options that only mean something to the HTTP backend are an error without ``--serve``."""
    given = [name for name in SERVE_ONLY if _given(ctx, name)]
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UserError(f"{options}: only with --serve (without it the replay goes to stdout)")


def _play(playback: Playback, delay: float) -> None:
    out = stdout_binary()
    for i, chunk in enumerate(playback.chunks):
        if i and delay:
            time.sleep(delay)
        out.write(chunk)
        out.flush()


def replay_command(
    ctx: typer.Context,
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE|DIR", help="Transcript or capture file (a directory with --serve); - reads stdin."
        ),
    ],
    to: AsRecordedTarget = None,
    from_: SniffedSource = None,
    framing: Annotated[
        str | None, typer.Option(metavar=FRAMING_METAVAR, help="Output framing.", autocompletion=complete_framing)
    ] = None,
    delay_ms: Annotated[
        float | None, typer.Option("--delay-ms", metavar="MS", min=0, help="Pause between frames, in milliseconds.")
    ] = None,
    realtime: Annotated[
        bool,
        typer.Option(
            "--realtime", help=f"Pace as recorded (the run's reported duration, else {REALTIME_FRAME_MS:g} ms a frame)."
        ),
    ] = False,
    serve: Annotated[
        bool, typer.Option("--serve", help="Serve over HTTP as a live backend instead of printing.")
    ] = False,
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to bind with --serve.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(metavar="PORT", min=PORT_MIN, max=PORT_MAX, help="Port with --serve (0 picks a free one).")
    ] = DEFAULT_PORT,
    base: Annotated[
        str | None,
        typer.Option(
            metavar="PATH",
            help="Mount path of the protocol's routes with --serve (default: /; the routes' own paths follow it).",
        ),
    ] = None,
    cors: Annotated[
        str | None, typer.Option(metavar="ORIGIN", help="With --serve: allow this browser origin (or *).")
    ] = None,
    exit_after: Annotated[
        int | None, typer.Option("--exit-after", metavar="N", min=1, help="With --serve: stop after this many streams.")
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            metavar="NAME",
            help="With --serve: a host name clients use (repeatable; localhost and IP addresses always work).",
        ),
    ] = None,
    fidelity: Annotated[str | None, fidelity_option("client with --serve, else exact")] = None,
    force: ForceOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Play a transcript to stdout, or serve it as a live backend (--serve)."""
    from .replay_server import (
        access_log_to_stderr,
        announce,
        entry_points,
        frame_delay,
        load_recordings,
        make_replay_app,
        render,
        serve_app,
    )

    set_verbose(verbose)
    if delay_ms is not None and realtime:
        raise UserError("--delay-ms and --realtime exclude each other")
    if not serve:
        _serve_options_need_serve(ctx)
    target = resolve_protocol(to, "--to") if to else None
    if target is not None:
        check_framing(target, framing)
    with findings_exit():
        recordings = load_recordings(file, from_, force)
    if len(recordings) > 1 and not serve:
        raise UserError(f"{file}: a directory can only be replayed with --serve")
    if target is None and len({r.codec.name for r in recordings}) > 1:
        kinds = ", ".join(sorted({r.codec.name for r in recordings}))
        raise UserError(f"{file}: the transcripts are in several protocols ({kinds}); pick one with --to")
    out_framing = check_framing(target or recordings[0].codec, framing) if framing else None
    level = check_fidelity(fidelity, "client" if serve else "exact")  # served: a live client's stream
    with findings_exit():
        playbacks = [render(r, target, out_framing, level) for r in recordings]
    delays = [frame_delay(p, delay_ms, realtime) for p in playbacks]
    if not serve:
        _play(playbacks[0], delays[0])
        return
    app = make_replay_app(
        playbacks, delays=delays, base=base, cors=cors, exit_after=exit_after, allowed_hosts=allowed_host or ()
    )
    routes = ", ".join(entry_points(playbacks, base))
    note(f"{len(playbacks)} transcript(s) as {playbacks[0].codec.name}: {routes}")
    try:
        with access_log_to_stderr():
            asyncio.run(serve_app(app, host, port, announce))
    except KeyboardInterrupt:
        note("stopped")

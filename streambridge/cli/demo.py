"""``streambridge demo``: the whole idea in one command, for a first-time user.

A golden transcript is served by an in-process fake backend on 127.0.0.1 (the same server as
``replay --serve``), fetched over real HTTP, translated live chunk by chunk, and both streams are
shown side by side. It needs no terminal and exits by itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..codecs import Codec
from ..codecs.framing import Framing, detect_framing
from ..codecs.requests import ChatRequest
from ..events import Terminal
from ..transcripts import FrameCutter, cut_frames
from ..translate import Translator
from .common import (
    FRAMING_SUFFIX,
    DataConsole,
    UserError,
    VerboseOption,
    Warnings,
    complete_protocol,
    resolve_protocol,
    set_verbose,
)
from .options import protocol_help

if TYPE_CHECKING:  # (the server, the client and the live table are imported when the demo runs)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = [
    "CELL_LINE_LIMIT",
    "DEFAULT_SCENARIO",
    "DEFAULT_SOURCE",
    "DEFAULT_TARGET",
    "DEMO_QUESTION",
    "DemoRun",
    "complete_scenario",
    "demo_command",
    "golden_dir",
    "golden_file",
    "load_golden",
    "run_demo",
    "scenarios",
]

DEFAULT_SCENARIO = "text-after-tool"
# A product decision, not protocol knowledge: the first run a new user sees goes from nest (the
# protocol with the most to show: steps, run ids, tool input streaming) into agentkit.
DEFAULT_SOURCE = "nest"
DEFAULT_TARGET = "agentkit"
DEMO_QUESTION = "How do I reset MFA?"
CELL_LINE_LIMIT = 160

#: golden/text-after-tool/nest.sse, for installs without the repository's golden/ directory.
_EMBEDDED_GOLDEN = (
    "event: meta\n"
    'data: {"runId":"27c9e1b3-4d6f-4a8b-8c0e-2f4a6b8d0e71","threadId":"thr-5"}\n'
    "\n"
    'data: {"kind":"step-start"}\n'
    "\n"
    'data: {"kind":"text","text":"Searching the admin knowledge base."}\n'
    "\n"
    'data: {"kind":"tool-input-start","id":"call_kb_12","name":"searchDocs","toolKind":"read"}\n'
    "\n"
    'data: {"kind":"tool-input-delta","id":"call_kb_12","delta":"{\\"query\\":\\"reset MFA for a user\\",\\"limit\\":2}"}\n'
    "\n"
    'data: {"kind":"tool-input-available","id":"call_kb_12","name":"searchDocs","input":{"query":"reset MFA for a user","limit":2},"toolKind":"read"}\n'
    "\n"
    'data: {"kind":"tool-output","id":"call_kb_12","output":"KB-204: Admins reset MFA under Users → Security → Reset MFA.\\nKB-311: After a reset the user must re-enroll at next sign-in."}\n'
    "\n"
    'data: {"kind":"step-finish","usage":{"inputTokens":97,"outputTokens":22},"costUsd":null}\n'
    "\n"
    'data: {"kind":"step-start"}\n'
    "\n"
    'data: {"kind":"text","text":"\\n\\nGo to Users → Security and choose Reset MFA for that person. "}\n'
    "\n"
    'data: {"kind":"text","text":"They\'ll be asked to enroll a new authenticator "}\n'
    "\n"
    'data: {"kind":"text","text":"the next time they sign in."}\n'
    "\n"
    'data: {"kind":"step-finish","usage":{"inputTokens":161,"outputTokens":35},"costUsd":null}\n'
    "\n"
    "event: done\n"
    "data: {}\n"
    "\n"
).encode()


def golden_dir() -> Path | None:
    """The repository's golden/ directory (a checkout or an editable install)."""
    path = Path(__file__).resolve().parents[2] / "golden"
    return path if path.is_dir() else None


def scenarios() -> list[str]:
    root = golden_dir()
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root else [DEFAULT_SCENARIO]


def complete_scenario(incomplete: str) -> list[str]:
    return [name for name in scenarios() if name.startswith(incomplete)]


def golden_file(codec: Codec) -> str:
    """A protocol's file in a golden scenario: its name (``:`` written ``-``, as file names on
    Windows need) and its default framing's suffix."""
    return codec.name.replace(":", "-") + FRAMING_SUFFIX[codec.default_framing]


def load_golden(scenario: str, codec: Codec) -> tuple[str, bytes]:
    root = golden_dir()
    name = f"{scenario}/{golden_file(codec)}"
    if root is not None and (root / name).is_file():
        return f"golden/{name}", (root / name).read_bytes()
    if scenario == DEFAULT_SCENARIO and codec.name == DEFAULT_SOURCE:
        return f"golden/{name}", _EMBEDDED_GOLDEN
    known = ", ".join(scenarios())
    raise UserError(f"--scenario {scenario!r}: no golden transcript {name} (scenarios: {known})")


@dataclass
class DemoRun:
    url: str
    status: int
    run_id: str | None
    run_id_header: str = ""
    rows: list[tuple[bytes, bytes]] = field(default_factory=list)
    outcome: str = "none"


def _cell(data: bytes) -> Text:
    from rich.text import Text

    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return Text("·", style="dim")
    shown = [line if len(line) <= CELL_LINE_LIMIT else line[: CELL_LINE_LIMIT - 1] + "…" for line in lines]
    return Text("\n".join(shown))


def _table(source: Codec, target: Codec) -> Table:
    from rich.table import Table

    table = Table(show_lines=True, expand=True)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column(f"{source.name}: from the backend, over HTTP", ratio=1, overflow="fold")
    table.add_column(f"{target.name}: translated live by streambridge", ratio=1, overflow="fold")
    return table


async def run_demo(name: str, body: bytes, source: Codec, target: Codec, delay: float, table: Table) -> DemoRun:
    """Serve ``body`` from a fake backend, fetch it, translate it as it arrives, fill ``table``."""
    from aiohttp import web

    from .replay_server import Recording, make_replay_app, render

    framing = detect_framing(body) or source.default_framing
    recording = Recording(name, (name,), source, framing, None, [p.raw for p in cut_frames([body], framing)])
    app = make_replay_app([render(recording, None, None)], delays=[delay])
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        url = f"http://{host}:{port}/{source.http.chat_path}"  # the replay mounts the surface at /
        return await _fetch(url, source, target, framing, table)
    finally:
        await runner.cleanup()


async def _fetch(url: str, source: Codec, target: Codec, framing: Framing, table: Table) -> DemoRun:
    import aiohttp

    translator = Translator(source.name, target.name, source_framing=framing)
    cutter = FrameCutter(framing)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=30)
    request = source.http.build_request(ChatRequest(text=DEMO_QUESTION))
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=request, headers={"Content-Type": "application/json"}) as resp,
    ):
        run = _answered(url, resp.status, resp.headers, source)
        async for chunk in resp.content.iter_any():
            for piece in cutter.feed(chunk):
                _row(run, table, piece.raw, translator.feed(piece.raw))
        for piece in cutter.close():
            _row(run, table, piece.raw, translator.feed(piece.raw))
        tail = translator.close()
        if tail:
            _row(run, table, b"", tail)
    Warnings(source.name).take(translator)  # (said with -v)
    check = target.decoder(translator.encoder.framing)  # read our own output back: how did the run end?
    for event in check.feed(b"".join(right for _, right in run.rows)) + check.close():
        if type(event) is Terminal:
            run.outcome = event.status
    return run


def _answered(url: str, status: int, headers: Mapping[str, str], source: Codec) -> DemoRun:
    """The answer's status, and its run id when the protocol's chats are runs."""
    runs = source.http.runs
    if runs is None:
        return DemoRun(url, status, None)
    return DemoRun(url, status, headers.get(runs.run_id_header), runs.run_id_header)


def _row(run: DemoRun, table: Table, left: bytes, right: bytes) -> None:
    run.rows.append((left, right))
    table.add_row(str(len(run.rows)), _cell(left), _cell(right))


def demo_command(
    scenario: Annotated[
        str,
        typer.Option(
            metavar="NAME", help="Golden scenario to serve (a directory of golden/).", autocompletion=complete_scenario
        ),
    ] = DEFAULT_SCENARIO,
    from_: Annotated[
        str,
        typer.Option(
            "--from",
            "-f",
            metavar="PROTOCOL",
            help=protocol_help("Protocol the fake backend speaks."),
            autocompletion=complete_protocol,
        ),
    ] = DEFAULT_SOURCE,
    to: Annotated[
        str,
        typer.Option(
            "--to", "-t", metavar="PROTOCOL", help="Protocol to translate into.", autocompletion=complete_protocol
        ),
    ] = DEFAULT_TARGET,
    delay_ms: Annotated[
        float,
        typer.Option("--delay-ms", metavar="MS", min=0, help="Pause between the backend's frames, in milliseconds."),
    ] = 60.0,
    verbose: VerboseOption = False,
) -> None:
    """Serve a golden run from a fake backend, translate it live, show both streams side by side."""
    set_verbose(verbose)
    source = resolve_protocol(from_, "--from")
    target = resolve_protocol(to, "--to")
    name, body = load_golden(scenario, source)
    console = DataConsole()
    if not console.is_terminal:
        console = DataConsole(width=max(console.width, 160))
    console.print(
        f"[bold]streambridge demo[/]: a fake {source.name} backend serves [cyan]{name}[/]; "
        f"streambridge reads it over HTTP and translates each chunk to {target.name} as it arrives."
    )
    table = _table(source, target)
    if console.is_terminal:
        from rich.live import Live

        with Live(table, console=console, refresh_per_second=12, vertical_overflow="visible"):
            run = asyncio.run(run_demo(name, body, source, target, max(delay_ms, 0) / 1000, table))
    else:
        run = asyncio.run(run_demo(name, body, source, target, max(delay_ms, 0) / 1000, table))
        console.print(table)
    _summary(console, run, source, target)


def _summary(console: Console, run: DemoRun, source: Codec, target: Codec) -> None:
    frames_in = sum(1 for left, _ in run.rows if left)
    frames_out = sum(1 for _, right in run.rows if right)
    head = f"HTTP {run.status}" + (f", {run.run_id_header} {run.run_id}" if run.run_id else "")
    console.print(
        f"{run.url} answered {head}: {frames_in} {source.name} frames in, {frames_out} {target.name} writes out; "
        f"the {target.name} stream ends with status {run.outcome!r}."
    )
    console.print(
        "Next: [bold]streambridge convert FILE --to oma[/], [bold]streambridge validate FILE[/], "
        "[bold]streambridge replay FILE --serve --to nest[/] (see docs/cli.md)."
    )

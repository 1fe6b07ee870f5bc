"""``streambridge record``: capture a live backend's answer in the capture format.

The file starts with ``HTTP <status>`` and the response headers (lower-case names, as in
``tests/data/captures/nest/``), an empty line, then the body bytes exactly as received, written
as they arrive. Recording stops at the stream's terminal event (watched with the protocol's own
decoder), at the end of the body, or at a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO
from urllib.parse import urlsplit

import msgspec
import typer

from .. import codecs
from ..codecs import Codec
from ..codecs.decoder import Decoder
from ..codecs.framing import Framing, detect_framing
from ..codecs.http import capture_head
from ..events import Terminal
from ..transcripts import SNIFF_LIMIT, Capture, framing_hint, sniff
from .common import (
    EXIT_FINDINGS,
    ProgressBar,
    UserError,
    VerboseOption,
    complete_protocol,
    detail,
    ensure_directory,
    is_stdio,
    note,
    resolve_protocol,
    set_verbose,
    stdout_binary,
    warn,
)
from .options import protocol_help

if TYPE_CHECKING:  # (imported when a recording starts: completion and --help need none of it)
    import aiohttp

__all__ = [
    "CAPTURE_HEADERS",
    "Recorded",
    "TerminalWatcher",
    "check_url",
    "load_data",
    "parse_headers",
    "record",
    "record_command",
    "recorded_head",
]

#: the headers a capture keeps, in this order (tests/data/captures/README.md).
CAPTURE_HEADERS = (
    "content-type",
    "cache-control",
    "connection",
    "x-agent-run-id",
    "x-agent-thread-id",
    "transfer-encoding",
)
_NEVER_RECORDED = frozenset({"set-cookie"})


@dataclass
class Recorded:
    status: int
    size: int
    protocol: str | None
    terminal: str | None
    stopped: str  # "terminal", "end", "idle timeout", "max time"
    looks_like: str | None = None  # the protocol sniffed from the body, when it is not the one named


class TerminalWatcher:
    """Decodes the body on the side to notice the terminal event (sniffing first if needed)."""

    def __init__(self, codec: Codec | None, capture: Capture) -> None:
        self.codec = codec
        self.capture = capture
        self.decoder: Decoder | None = None
        self.status: str | None = None
        self._head = b""
        self._gave_up = False
        self._first: list[bytes] = []  # the body's first SNIFF_LIMIT bytes, to check a named protocol
        self._first_size = 0

    def feed(self, chunk: bytes) -> bool:
        """True once the terminal event has been received."""
        if self._first_size < SNIFF_LIMIT:
            self._first.append(chunk)
            self._first_size += len(chunk)
        if self._gave_up:
            return False
        decoder = self.decoder
        if decoder is None:
            self._head += chunk
            decoder = self._start()
            if decoder is None:
                self._gave_up = len(self._head) > SNIFF_LIMIT
                return False
            chunk, self._head = self._head, b""
        for event in decoder.feed(chunk):
            if type(event) is Terminal:
                self.status = event.status
        return decoder.terminated

    def _start(self) -> Decoder | None:
        framing: Framing | None
        if self.codec is None:
            found = sniff(self._head, self.capture, complete=False)
            if found is None:
                return None
            self.codec, framing = codecs.get(found[0]), found[1]
        else:
            framing = detect_framing(self._head) or framing_hint(self.capture)
            if framing is None:
                return None  # nothing significant yet (a BOM, blank lines)
            if framing not in self.codec.framings:
                framing = self.codec.default_framing
        self.decoder = self.codec.decoder(framing)
        return self.decoder

    def other_protocol(self) -> str | None:
        """The protocol the body's first frames belong to, when it is not the watched one."""
        found = sniff(b"".join(self._first), self.capture)
        return found[0] if found is not None and self.codec is not None and found[0] != self.codec.name else None


def recorded_head(response: aiohttp.ClientResponse, all_headers: bool) -> bytes:
    """``HTTP <status>``, the recorded headers, and the empty line before the body."""
    headers: list[tuple[str, str]] = []
    if all_headers:
        for raw_name, raw_value in response.raw_headers:
            name = raw_name.decode("latin-1").lower()
            if name not in _NEVER_RECORDED:
                headers.append((name, raw_value.decode("latin-1")))
    else:
        for name in CAPTURE_HEADERS:
            value = response.headers.get(name)
            if value is not None:
                headers.append((name, value))
    return capture_head(response.status, headers)


@contextlib.contextmanager
def _open_recording(output: str) -> Iterator[BinaryIO]:
    if output == "-":
        yield stdout_binary()
        return
    with Path(output).open("wb") as out:  # written as it comes: a partial recording is kept
        yield out


async def record(
    url: str,
    *,
    output: str,
    method: str,
    body: bytes | None,
    headers: dict[str, str],
    codec: Codec | None,
    idle_timeout: float,
    connect_timeout: float,
    max_time: float | None,
    all_headers: bool,
) -> Recorded:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=idle_timeout)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.request(method, url, data=body, headers=headers) as response,
    ):
        capture = Capture(response.status, [(k.lower(), v) for k, v in response.headers.items()])
        watcher = TerminalWatcher(codec, capture)
        label = "recording" if output == "-" else f"recording {Path(output).name}"
        with (
            _open_recording(output) as out,
            ProgressBar(label, response.content_length, streams_stdout=output == "-") as bar,
        ):
            out.write(recorded_head(response, all_headers))
            out.flush()
            size, stopped = await _copy_body(response, out, watcher, bar, max_time)
        protocol = watcher.codec.name if watcher.decoder is not None and watcher.codec is not None else None
        looks_like = watcher.other_protocol() if stopped != "terminal" else None
        return Recorded(response.status, size, protocol, watcher.status, stopped, looks_like)


async def _copy_body(
    response: aiohttp.ClientResponse, out: BinaryIO, watcher: TerminalWatcher, bar: ProgressBar, max_time: float | None
) -> tuple[int, str]:
    """The body written as it arrives, up to the terminal event or a timeout: (bytes, why it stopped)."""
    size = 0
    deadline = asyncio.timeout(max_time)
    try:
        async with deadline:
            async for chunk in response.content.iter_any():
                out.write(chunk)
                out.flush()
                size += len(chunk)
                bar.update(size)
                if watcher.feed(chunk):
                    return size, "terminal"
    except TimeoutError:
        return size, "max time" if deadline.expired() else "idle timeout"
    return size, "end"


#: a header name followed by something else (a value is never quoted back: it may be a secret)
_HEADER_NAME = re.compile(r"\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)[\s=]+\S")


def parse_headers(values: list[str]) -> dict[str, str]:
    """``-H 'Name: value'`` pairs. A malformed one is named by its first word only: a header's
    value may be a credential, and an error line ends up in logs and screenshots."""
    headers: dict[str, str] = {}
    for value in values:
        name, colon, content = value.partition(":")
        if not colon or not name.strip():
            named = _HEADER_NAME.match(value)
            which = f"{named.group(1)!r} " if named else ""
            raise UserError(f"--header {which}is not in the form 'Name: value' (a colon after the header name)")
        headers[name.strip()] = content.strip()
    return headers


def check_url(url: str) -> None:
    """A URL without its scheme (``localhost:8788/agent/chat``) is the usual slip: said as such,
    with the URL it probably meant."""
    parsed = urlsplit(url)
    if parsed.scheme in ("http", "https") and parsed.netloc:
        return
    if "://" not in url and not any(c.isspace() for c in url) and urlsplit(f"http://{url}").hostname:
        raise UserError(f"{url}: no scheme (did you mean http://{url}?)")
    raise UserError(f"{url}: not an http:// or https:// URL")


def load_data(data: str) -> bytes:
    """``--data``: JSON text, or ``@file`` holding it; checked to be JSON before sending."""
    raw = Path(data[1:]).read_bytes() if data.startswith("@") else data.encode()
    try:
        msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        where = data if data.startswith("@") else "--data"
        raise UserError(f"{where}: not valid JSON ({exc})") from None
    return raw


def _has(headers: dict[str, str], name: str) -> bool:
    return any(key.lower() == name for key in headers)


def _request_headers(header: list[str] | None, has_body: bool) -> dict[str, str]:
    headers = parse_headers(header or [])
    defaults = {
        "accept": "text/event-stream, application/x-ndjson;q=0.9, */*;q=0.1",
        "accept-encoding": "identity",  # compression holds a stream back; record the plain bytes
    }
    if has_body:
        defaults["content-type"] = "application/json"
    for name, value in defaults.items():
        if not _has(headers, name):
            headers[name] = value
    return headers


def _report(recorded: Recorded, output: str) -> int:
    where = "stdout" if output == "-" else output
    ended = {
        "terminal": f"{recorded.protocol} terminal: {recorded.terminal}",
        "end": "the body ended" + ("" if recorded.protocol else " (protocol not recognised)"),
        "idle timeout": "stopped: no data within the idle timeout",
        "max time": "stopped: --max-time reached",
    }[recorded.stopped]
    note(f"recorded HTTP {recorded.status}, {recorded.size} body bytes, {ended} → {where}")
    if not 200 <= recorded.status < 300:
        warn(f"the server answered HTTP {recorded.status}")
        return EXIT_FINDINGS
    if recorded.looks_like is not None:
        raise UserError(
            f"the response is not a {recorded.protocol} stream: it looks like {recorded.looks_like} "
            "(recorded anyway; leave out --protocol to detect it)"
        )
    if recorded.protocol and recorded.stopped != "terminal":
        warn("the stream has no terminal event: the recording is truncated")
        return EXIT_FINDINGS
    if recorded.stopped in ("idle timeout", "max time"):
        return EXIT_FINDINGS
    return 0


def record_command(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="The backend's stream URL (e.g. http://127.0.0.1:3000/agent/chat).")
    ],
    output: Annotated[
        str, typer.Option("--output", "-o", metavar="FILE", help="Capture file to write; - (default) is stdout.")
    ] = "-",
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            "-p",
            metavar="PROTOCOL",
            help=protocol_help("Protocol of the answer (sniffed when left out)."),
            autocompletion=complete_protocol,
        ),
    ] = None,
    data: Annotated[
        str | None, typer.Option("--data", "-d", metavar="JSON|@FILE", help="JSON request body, or @file.")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", metavar="'NAME: VALUE'", help="Request header (repeatable).")
    ] = None,
    method: Annotated[
        str | None,
        typer.Option("--method", "-X", metavar="METHOD", help="HTTP method (default: POST with --data, else GET)."),
    ] = None,
    timeout: Annotated[
        float, typer.Option(metavar="SECONDS", min=0, help="Stop after this many seconds without data.")
    ] = 60.0,
    connect_timeout: Annotated[
        float, typer.Option(metavar="SECONDS", min=0, help="Seconds allowed to connect.")
    ] = 10.0,
    max_time: Annotated[
        float | None, typer.Option(metavar="SECONDS", min=0, help="Stop after this many seconds in all.")
    ] = None,
    all_headers: Annotated[
        bool, typer.Option("--all-headers", help="Record every response header (never set-cookie).")
    ] = False,
    parents: Annotated[bool, typer.Option("--parents", help="Create -o's missing directories.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Record a live stream verbatim (status, headers, exact body) until its terminal event."""
    set_verbose(verbose)
    check_url(url)
    codec = resolve_protocol(protocol, "--protocol") if protocol else None
    body = load_data(data) if data is not None else None
    headers = _request_headers(header, body is not None)
    if not is_stdio(output):
        ensure_directory(Path(output).parent, parents, Path(output))
    verb = (method or ("POST" if body is not None else "GET")).upper()
    detail(f"{verb} {url} (headers: {', '.join(headers)})")  # names only: values may hold credentials
    import aiohttp  # (the client, only once a recording starts: completion and --help need none of it)

    try:
        recorded = asyncio.run(
            record(
                url,
                output=output,
                method=verb,
                body=body,
                headers=headers,
                codec=codec,
                idle_timeout=timeout,
                connect_timeout=connect_timeout,
                max_time=max_time,
                all_headers=all_headers,
            )
        )
    except (aiohttp.InvalidURL, ValueError) as exc:
        raise UserError(f"{url}: not a valid URL ({exc})") from None
    except TimeoutError:
        raise UserError(f"{url}: timed out before the response started") from None
    except aiohttp.ClientError as exc:
        raise UserError(f"{url}: {exc}") from None
    code = _report(recorded, output)
    if code:
        raise typer.Exit(code)

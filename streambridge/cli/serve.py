"""``streambridge serve``: run the translating proxy (see docs/proxy.md).

Registered by the CLI app with ``app.command("serve")(serve_command)``. Every option can also be
given as a ``STREAMBRIDGE_*`` environment variable; upstream credentials are only ever given as
``NAME=env:VAR`` so that no secret appears on a command line.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import EXIT_FINDINGS, EXIT_USAGE, complete_protocol, print_error, warn
from .options import PORT_MAX, PORT_MIN, fidelity_option

if TYPE_CHECKING:  # the proxy (aiohttp) is imported when it runs: help and completion stay quick
    from types import ModuleType

    from ..bridge import config as bridge_config
    from ..bridge import workers as bridge_workers

#: the proxy's modules, imported on first use (``serve_module.bridge_server`` too)
_PROXY = {"bridge_config": "config", "bridge_server": "server", "bridge_workers": "workers"}


def __getattr__(name: str) -> ModuleType:
    if name in _PROXY:
        return import_module(f"streambridge.bridge.{_PROXY[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["serve_command"]


def _fail(message: str, code: int = EXIT_USAGE) -> None:
    print_error(message)
    raise typer.Exit(code)


REQUEST_MODES = ("translate", "passthrough")
#: the help's panels beside Options (the route's): ``serve --help`` fits 80 columns
SERVER, RUNS, SECURITY, INSPECTOR = "Server", "Streams and runs", "Security", "Inspector"


def complete_request_mode(incomplete: str) -> list[str]:
    return [mode for mode in REQUEST_MODES if mode.startswith(incomplete)]


def serve_command(
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            envvar="STREAMBRIDGE_UPSTREAM",
            show_envvar=False,
            metavar="URL",
            help="Upstream http(s):// or ws(s):// URL.",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            envvar="STREAMBRIDGE_FROM",
            show_envvar=False,
            metavar="PROTOCOL",
            help="The upstream's protocol (streambridge protocols lists them).",
            autocompletion=complete_protocol,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--to",
            envvar="STREAMBRIDGE_TO",
            show_envvar=False,
            metavar="PROTOCOL",
            help="The client's protocol.",
            autocompletion=complete_protocol,
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            envvar="STREAMBRIDGE_HOST",
            show_envvar=False,
            rich_help_panel=SERVER,
            metavar="HOST",
            help="Address to bind (default 127.0.0.1).",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            envvar="STREAMBRIDGE_PORT",
            show_envvar=False,
            rich_help_panel=SERVER,
            metavar="PORT",
            min=PORT_MIN,
            max=PORT_MAX,
            help="Port to bind (default 8787; 0 picks a free one).",
        ),
    ] = None,
    path: Annotated[
        str,
        typer.Option(
            "--path",
            envvar="STREAMBRIDGE_PATH",
            show_envvar=False,
            metavar="PATH",
            help="Mount path of the route.",
        ),
    ] = "/",
    upstream_header: Annotated[
        list[str] | None,
        typer.Option(
            "--upstream-header",
            envvar="STREAMBRIDGE_UPSTREAM_HEADER",
            show_envvar=False,
            metavar="NAME=env:VAR",
            help="Header sent upstream, its value from the environment (repeatable).",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            envvar="STREAMBRIDGE_CONFIG",
            show_envvar=False,
            metavar="FILE",
            help="routes.toml with several routes.",
        ),
    ] = None,
    log_json: Annotated[
        bool,
        typer.Option(
            "--log-json",
            envvar="STREAMBRIDGE_LOG_JSON",
            show_envvar=False,
            rich_help_panel=SERVER,
            help="One JSON object per log line.",
        ),
    ] = False,
    request_mode: Annotated[
        str | None,
        typer.Option(
            "--request-mode",
            envvar="STREAMBRIDGE_REQUEST_MODE",
            show_envvar=False,
            metavar="MODE",
            help="translate (default), or passthrough: requests as sent.",
            autocompletion=complete_request_mode,
        ),
    ] = None,
    heartbeat: Annotated[
        float | None,
        typer.Option(
            "--heartbeat",
            envvar="STREAMBRIDGE_HEARTBEAT",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="Idle seconds before a heartbeat (0: none).",
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            envvar="STREAMBRIDGE_IDLE_TIMEOUT",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="Upstream silence that ends a stream.",
        ),
    ] = None,
    run_log: Annotated[
        str | None,
        typer.Option(
            "--run-log",
            envvar="STREAMBRIDGE_RUN_LOG",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="WHERE",
            help="Where runs are kept to resume: memory (default), a redis:// URL, off.",
        ),
    ] = None,
    resume_grace: Annotated[
        float | None,
        typer.Option(
            "--resume-grace",
            envvar="STREAMBRIDGE_RESUME_GRACE",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="How long a run outlives its client's disconnect (0: cancel at once).",
        ),
    ] = None,
    owner_header: Annotated[
        str | None,
        typer.Option(
            "--owner-header",
            envvar="STREAMBRIDGE_OWNER_HEADER",
            show_envvar=False,
            rich_help_panel=SECURITY,
            metavar="NAME",
            help="Header naming a run's owner (default: Authorization / Cookie, hashed).",
        ),
    ] = None,
    inspect: Annotated[
        bool,
        typer.Option(
            "--inspect",
            envvar="STREAMBRIDGE_INSPECT",
            show_envvar=False,
            rich_help_panel=INSPECTOR,
            help="Serve the inspector at /_inspect (loopback only unless STREAMBRIDGE_INSPECT_TOKEN).",
        ),
    ] = False,
    inspect_streams: Annotated[
        int | None,
        typer.Option(
            "--inspect-streams",
            envvar="STREAMBRIDGE_INSPECT_STREAMS",
            show_envvar=False,
            rich_help_panel=INSPECTOR,
            metavar="N",
            min=1,
            help="Live and recent streams it keeps (default 100).",
        ),
    ] = None,
    approval_timeout: Annotated[
        float | None,
        typer.Option(
            "--approval-timeout",
            envvar="STREAMBRIDGE_APPROVAL_TIMEOUT",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="How long a run that asked waits for approve / reject.",
        ),
    ] = None,
    first_byte_timeout: Annotated[
        float | None,
        typer.Option(
            "--first-byte-timeout",
            envvar="STREAMBRIDGE_FIRST_BYTE_TIMEOUT",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="How long to wait for the upstream's first byte.",
        ),
    ] = None,
    max_run_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-run-bytes",
            envvar="STREAMBRIDGE_MAX_RUN_BYTES",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="BYTES",
            min=0,
            help="Most bytes a run may send (default 64 MiB; 0: no bound).",
        ),
    ] = None,
    max_run_seconds: Annotated[
        float | None,
        typer.Option(
            "--max-run-seconds",
            envvar="STREAMBRIDGE_MAX_RUN_SECONDS",
            show_envvar=False,
            rich_help_panel=RUNS,
            metavar="SECONDS",
            min=0,
            help="Longest a run may last (default 3600; 0: no bound).",
        ),
    ] = None,
    forward_auth: Annotated[
        bool | None,
        typer.Option(
            "--forward-auth",
            envvar="STREAMBRIDGE_FORWARD_AUTH",
            show_envvar=False,
            rich_help_panel=SECURITY,
            help="Forward the client's Authorization and Cookie headers upstream.",
        ),
    ] = None,
    no_forward_auth: Annotated[
        bool,
        typer.Option(
            "--no-forward-auth",
            rich_help_panel=SECURITY,
            help="Do not forward them (over routes.toml and the environment).",
        ),
    ] = False,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin",
            envvar="STREAMBRIDGE_CORS_ORIGINS",
            show_envvar=False,
            rich_help_panel=SECURITY,
            metavar="ORIGIN",
            help="Allowed browser origin (repeatable).",
        ),
    ] = None,
    forward_header: Annotated[
        list[str] | None,
        typer.Option(
            "--forward-header",
            envvar="STREAMBRIDGE_FORWARD_HEADERS",
            show_envvar=False,
            rich_help_panel=SECURITY,
            metavar="NAME",
            help="Also forward this client header (repeatable; credentials need --forward-auth).",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            envvar="STREAMBRIDGE_ALLOWED_HOSTS",
            show_envvar=False,
            rich_help_panel=SECURITY,
            metavar="NAME",
            help="Host name clients may use, else 421 (repeatable; .example.com: and subdomains; *: any).",
        ),
    ] = None,
    require_identity: Annotated[
        bool,
        typer.Option(
            "--require-identity",
            envvar="STREAMBRIDGE_REQUIRE_IDENTITY",
            show_envvar=False,
            rich_help_panel=SECURITY,
            help="Refuse (401) requests with no --owner-header, Authorization or Cookie.",
        ),
    ] = False,
    fidelity: Annotated[str | None, fidelity_option("client", short=True)] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            envvar="STREAMBRIDGE_WORKERS",
            show_envvar=False,
            rich_help_panel=SERVER,
            metavar="N",
            min=1,
            help="Serve the port from N processes (N > 1 needs a redis:// run log).",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            rich_help_panel=SERVER,
            help="Check the configuration and the run log, print a summary, exit (0: it would start; 1: not).",
        ),
    ] = False,
) -> None:
    """Proxy a client of protocol --to to an upstream of protocol --from, translating live.

    Options also come from the environment (--idle-timeout: STREAMBRIDGE_IDLE_TIMEOUT; docs/proxy.md).
    """
    from ..bridge import config as bridge_config
    from ..bridge import server as bridge_server
    from ..bridge import workers as bridge_workers
    from .replay_server import listen_error

    settings: dict[str, Any] = {
        "request_mode": request_mode,
        "heartbeat": heartbeat,
        "idle_timeout": idle_timeout,
        "approval_timeout": approval_timeout,
        "resume_grace": resume_grace,
        "first_byte_timeout": first_byte_timeout,
        "max_run_bytes": max_run_bytes,
        "max_run_seconds": max_run_seconds,
        "forward_auth": False if no_forward_auth else forward_auth,
        "cors_origins": tuple(cors_origin) if cors_origin else None,
        "forward_headers": tuple(forward_header) if forward_header else None,
        "fidelity": fidelity,
    }
    try:
        cfg = bridge_config.build_config(
            upstream=upstream,
            source=source,
            target=target,
            host=host,
            port=port,
            path=path,
            upstream_headers=upstream_header or (),
            config_file=config,
            log_json=log_json or None,
            run_log=run_log,
            owner_header=owner_header,
            inspect=inspect or None,
            inspect_streams=inspect_streams,
            allowed_hosts=allowed_host,
            require_identity=require_identity or None,
            workers=workers,
            settings=settings,
        )
    except bridge_config.ConfigError as exc:
        _fail(str(exc), EXIT_FINDINGS if check else EXIT_USAGE)
        return
    if check:
        _check(cfg)
        return
    try:
        if cfg.workers > 1:
            raise typer.Exit(bridge_workers.run_workers(cfg, _serve_worker))
        bridge_server.run_app(cfg)
    except bridge_server.BindError as exc:
        _fail(listen_error(exc.host, exc.port, exc.error).message)


def _serve_worker(cfg: bridge_config.Config, worker: bridge_workers.Worker) -> int:
    """One worker process of ``--workers``: its exit code (a port it cannot bind is a usage error)."""
    from ..bridge import server as bridge_server
    from .replay_server import listen_error

    try:
        bridge_server.run_app(cfg, worker)
    except bridge_server.BindError as exc:
        print_error(listen_error(exc.host, exc.port, exc.error).message)
        return EXIT_USAGE
    return 0


def _check(cfg: bridge_config.Config) -> None:
    """``--check``: the summary on stdout, warnings and the problem on stderr; exit 1 on a problem."""
    from ..bridge.check import check_config

    checked = check_config(cfg)
    for line in checked.summary:
        typer.echo(line)
    for warning in checked.warnings:
        warn(warning)
    if checked.problem is not None:
        _fail(checked.problem, EXIT_FINDINGS)
    typer.echo("check passed: serve would start with this configuration")

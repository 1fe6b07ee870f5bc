"""The typer application: commands, the root options and the one place user errors become exit 2.

Exit codes: 0 success, 1 findings or differences, 2 usage or input errors, 0 when stdout's reader
left early. A user error is one line on stderr (``streambridge: error: <file>: frame N (byte B):
…``), never a traceback; ``-v`` adds detail.
"""

from __future__ import annotations

import errno
import traceback
import warnings
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, TextIO

import typer
from typer.core import TyperCommand, TyperGroup

try:  # typer ≥ 0.2x parses with its own copy of click
    from typer._click import core as click_core
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    # (the same module from the other place; click itself may be absent where typer vendors it)
    from click import core as click_core  # type: ignore[no-redef, import-not-found, unused-ignore]
    from click import exceptions as click_exceptions  # type: ignore[no-redef, import-not-found, unused-ignore]

from .. import __version__, codecs
from ..codecs import StreamError
from ..transcripts import TranscriptError
from . import completion
from .common import EXIT_USAGE, UserError, print_error, reader_gone, say, set_verbose, state, stream_error, warn
from .convert import convert_command
from .demo import demo_command
from .diff import diff_command
from .inspect import inspect_command
from .options import PROTOCOL_NAMES, examples, fill_protocols
from .protocols import protocols_command
from .record import record_command
from .replay import replay_command
from .validate import validate_command


def _plain_help(params: list[Any]) -> list[Any]:
    """Help shows metavars only: no ``<bool>`` beside a flag (it takes no value), no ``<str>``
    beside an argument whose metavar says what goes there."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if param.param_type_name == "argument" and param.metavar and hasattr(param, "display_type_rich"):
            param.display_type_rich = _no_type
    return params


def _no_type(ctx: typer.Context) -> None:
    return None


def _fill_help(command: Any) -> None:
    """The command's help and its options' with the protocol lists of the registry as it is now."""
    for target in (command, *command.params):
        template = getattr(target, "help_template", None)
        if template is None and target.help and fill_protocols(target.help) != target.help:
            template = target.help_template = target.help
        if template is not None:
            target.help = fill_protocols(template)


class _Command(TyperCommand):
    """A command whose help shows what goes in each option, not its Python type."""

    def get_params(self, ctx: click_core.Context) -> list[Any]:
        _fill_help(self)  # completion shows options' help too
        return _plain_help(super().get_params(ctx))

    def format_help(self, ctx: click_core.Context, formatter: Any) -> None:
        _fill_help(self)
        super().format_help(ctx, formatter)


class _Group(TyperGroup):
    """Turns the errors a user can cause into one line on stderr and exit code 2."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click_exceptions.UsageError as exc:
            _usage_error(exc)

    def get_params(self, ctx: click_core.Context) -> list[Any]:
        _fill_help(self)  # completion shows options' help too
        return _plain_help(super().get_params(ctx))

    def format_help(self, ctx: click_core.Context, formatter: Any) -> None:
        _fill_help(self)
        super().format_help(ctx, formatter)

    def parse_args(self, ctx: click_core.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            args = completion.with_default_shell(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click_core.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click_exceptions.UsageError as exc:
            _usage_error(exc)
        except UserError as exc:
            print_error(exc.message, exc.detail)
        except TranscriptError as exc:  # the library's, where no command said it with an option
            print_error(str(exc))
        except StreamError as exc:
            error = stream_error("input", exc)
            print_error(error.message, error.detail)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                reader_gone()
            where = f"{exc.filename}: " if exc.filename else ""
            print_error(f"{where}{exc.strerror or exc}", traceback.format_exc())
        except KeyError as exc:
            print_error(str(exc.args[0]) if exc.args else "unknown name", traceback.format_exc())
        raise typer.Exit(EXIT_USAGE)


def _usage_error(exc: click_exceptions.UsageError) -> NoReturn:
    """click's usage errors (a missing option, an unknown command) in the CLI's own error form:
    the usage and the help hint, then ``streambridge: error: …``."""
    if isinstance(exc, getattr(click_exceptions, "NoArgsIsHelpError", ())):
        raise exc  # `streambridge` alone prints the help
    if exc.ctx is not None:
        say(exc.ctx.get_usage())
        say(f"Try '{exc.ctx.command_path} {exc.ctx.help_option_names[0]}' for help.")
    print_error(exc.format_message())
    raise typer.Exit(exc.exit_code)


app = typer.Typer(
    name="streambridge",
    cls=_Group,
    help=f"Translate AI-agent chat streams between protocols ({PROTOCOL_NAMES}).",
    epilog=examples("streambridge convert run.sse --to oma", "streambridge replay run.sse --serve --to nest"),
    no_args_is_help=True,
    add_completion=False,  # ours: the shell named on the command line wins (see completion.py)
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
completion.setup()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"streambridge {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show more detail (warnings, error context).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    install_completion: completion.InstallOption = None,
    show_completion: completion.ShowOption = None,
) -> None:
    """Translate AI-agent chat streams between protocols."""
    state.verbose = False
    set_verbose(verbose)


EXAMPLES = {
    "convert": (
        "streambridge convert golden/approval/nest.sse --to agentkit",
        "streambridge convert recordings/ --to nest -o converted/",
    ),
    "validate": ("streambridge validate capture.http", "streambridge validate run.sse --json --ignore SB006"),
    "replay": (
        "streambridge replay run.sse --to oma --delay-ms 50",
        "streambridge replay recordings/ --serve --to nest --port 8788",
    ),
    "record": ('streambridge record http://127.0.0.1:3000/agent/chat -d \'{"message":"hi"}\' -o run.http',),
    "diff": ("streambridge diff run.http other.ndjson", "streambridge diff a.sse b.sse --exact-ids --max 10"),
    "protocols": ("streambridge protocols", "streambridge protocols --json"),
    "demo": ("streambridge demo", "streambridge demo --scenario approval --from oma --to nest"),
    "inspect": ("streambridge inspect run.http --to ai-sdk", "streambridge inspect golden/approval/nest.sse --port 0"),
    "serve": (
        "streambridge serve --upstream http://127.0.0.1:3000/agent --from nest --to agentkit",
        "streambridge serve --config routes.toml --port 9000",
        "streambridge serve --upstream http://127.0.0.1:3000/agent --from nest --to ai-sdk --inspect",
    ),
}


def _register(name: str, command: Any) -> None:
    app.command(name, cls=_Command, epilog=examples(*EXAMPLES[name]))(command)


for _name, _command in (
    ("convert", convert_command),
    ("validate", validate_command),
    ("replay", replay_command),
    ("record", record_command),
    ("diff", diff_command),
    ("protocols", protocols_command),
    ("demo", demo_command),
    ("inspect", inspect_command),
):
    _register(_name, _command)

serve_command: Callable[..., None] | None
try:
    from .serve import serve_command
except ImportError:
    serve_command = None

__all__ = ["EXAMPLES", "app", "main", "root", "serve_command"]
if serve_command is not None:
    _register("serve", serve_command)


def _say_plugin_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A protocol plugin that did not load is one warning line, as the CLI says warnings."""
    if issubclass(category, codecs.PluginWarning):
        warn(str(message))
    else:
        _show_warning(message, category, filename, lineno, file, line)


_show_warning = warnings.showwarning


def main() -> None:
    """Console-script entry point (``streambridge``, ``python -m streambridge``)."""
    warnings.showwarning = _say_plugin_warning
    app(prog_name="streambridge")

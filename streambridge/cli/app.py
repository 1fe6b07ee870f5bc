"""The typer application: commands, the root options and the one place user errors become exit 2.

Exit codes: 0 success, 1 findings or differences, 2 usage or input errors, 0 when stdout's reader
left early, 130 on Ctrl-C. A user error is one line on stderr (``streambridge: error: <file>:
frame N (byte B): …``), never a traceback; ``-v`` adds detail.

Commands are imported when they run (:data:`COMMANDS`): ``--help``, completion and a command
import only what they use, so none of them pays for the proxy (aiohttp) or protocols it never uses.
"""

from __future__ import annotations

import errno
import traceback
import warnings
from importlib import import_module
from typing import Annotated, Any, NamedTuple, NoReturn, TextIO

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo

try:  # typer ≥ 0.2x parses with its own copy of click
    from typer._click import core as click_core
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    # (the same module from the other place; click itself may be absent where typer vendors it)
    from click import core as click_core  # type: ignore[no-redef, import-not-found, unused-ignore]
    from click import exceptions as click_exceptions  # type: ignore[no-redef, import-not-found, unused-ignore]

from .. import __version__, codecs
from ..codecs import StreamError, UnknownProtocol
from . import completion, pause_for_tests
from .common import EXIT_USAGE, UserError, print_error, reader_gone, say, set_verbose, state, stream_error, warn
from .options import PROTOCOL_NAMES, examples, fill_protocols


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


class Entry(NamedTuple):
    """A command as the app knows it before importing it: its one-line summary (the first line
    of its function's docstring, which a test keeps equal) and whether it may be absent."""

    summary: str
    optional: bool = False


#: the commands in the order help lists them; ``<name>`` is ``streambridge.cli.<name>.<name>_command``
COMMANDS = {
    "convert": Entry("Convert a transcript from one protocol into another (streaming, constant memory)."),
    "validate": Entry("Check a transcript against its protocol's rules; exit 1 when there are findings."),
    "replay": Entry("Play a transcript to stdout, or serve it as a live backend (--serve)."),
    "record": Entry("Record a live stream verbatim (status, headers, exact body) until its terminal event."),
    "diff": Entry("Compare two transcripts by meaning (even across protocols); exit 1 when they differ."),
    "protocols": Entry("List the protocols, one line each; NAME shows one in detail, --pairs what travels natively."),
    "demo": Entry("Serve a golden run from a fake backend, translate it live, show both streams side by side."),
    "inspect": Entry(
        "Open a recorded transcript in the stream inspector (upstream and translated frames side by side)."
    ),
    "serve": Entry(
        "Proxy a client of protocol --to to an upstream of protocol --from, translating live.", optional=True
    ),
}


#: optional commands found not importable (asked for, they are unknown commands)
_ABSENT: set[str] = set()


def command_function(name: str) -> Any:
    """The function of command ``name``, imported now (``None``: an optional one that cannot be)."""
    try:
        module = import_module(f"{__package__}.{name}")
    except ImportError:
        if not COMMANDS[name].optional:
            raise
        return None
    return getattr(module, f"{name}_command")


class _Group(TyperGroup):
    """Turns the errors a user can cause into one line on stderr and exit code 2, and imports a
    command only when it is the one that runs (help lists the others by their summaries)."""

    def get_command(self, ctx: click_core.Context, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in COMMANDS and cmd_name not in _ABSENT:
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name].summary)  # listed, not yet imported
        return found

    def list_commands(self, ctx: click_core.Context) -> list[str]:
        listed = [name for name in COMMANDS if name not in _ABSENT]
        return [*listed, *(name for name in self.commands if name not in COMMANDS)]

    def resolve_command(self, ctx: click_core.Context, args: list[str]) -> Any:
        if args and args[0] in COMMANDS and args[0] not in self.commands:
            self._load(args[0])
        return super().resolve_command(ctx, args)

    def loaded(self, name: str) -> Any:
        """The command ``name`` itself, imported if it was not yet (for its options, in tests and docs)."""
        if name not in self.commands:
            self._load(name)
        return self.commands.get(name)

    def _load(self, name: str) -> None:
        function = command_function(name)
        if function is None:
            _ABSENT.add(name)  # an optional command that cannot be imported: "no such command"
            return
        info = CommandInfo(name=name, cls=_Command, callback=function, epilog=examples(*EXAMPLES[name]))
        self.commands[name] = get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
        )

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
        except _transcript_error() as exc:  # the library's, where no command said it with an option
            print_error(str(exc))
        except UnknownProtocol as exc:  # the library's, where no command said it with an option
            print_error(str(exc), traceback.format_exc())
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


def _transcript_error() -> type[Exception]:
    """:class:`~streambridge.transcripts.TranscriptError`, imported when an error is being said
    (an ``except`` clause is evaluated only then): help and completion do not import transcripts."""
    from ..transcripts import TranscriptError

    return TranscriptError


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
    "protocols": ("streambridge protocols", "streambridge protocols nest --pairs", "streambridge protocols --json"),
    "demo": ("streambridge demo", "streambridge demo --scenario approval --from oma --to nest"),
    "inspect": ("streambridge inspect run.http --to ai-sdk", "streambridge inspect golden/approval/nest.sse --port 0"),
    "serve": (
        "streambridge serve --upstream http://backend/agent --from nest --to agentkit",
        "streambridge serve --config routes.toml --port 9000 --inspect",
    ),
}


__all__ = ["COMMANDS", "EXAMPLES", "Entry", "app", "command_function", "main", "root"]


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


pause_for_tests()  # (only where a test asks: Ctrl-C while this module is being imported)

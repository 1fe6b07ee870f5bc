"""The typer application: commands, the root options and the one place user errors become exit 2.

Exit codes: 0 success, 1 findings or differences, 2 usage or input errors, 0 when stdout's reader
left early. A user error is one line on stderr (``streambridge: error: <file>: frame N (byte B):
…``), never a traceback; ``-v`` adds detail.
"""

from __future__ import annotations

import errno
import traceback
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

try:  # typer ≥ 0.2x parses with its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_exceptions  # type: ignore[no-redef]

from .. import __version__
from ..codecs import StreamError
from .common import EXIT_USAGE, UserError, print_error, reader_gone, say, set_verbose, state, stream_error
from .convert import convert_command
from .demo import demo_command
from .diff import diff_command
from .protocols import protocols_command
from .record import record_command
from .replay import replay_command
from .validate import validate_command


class _Group(TyperGroup):
    """Turns the errors a user can cause into one line on stderr and exit code 2."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click_exceptions.UsageError as exc:
            _usage_error(exc)

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click_exceptions.UsageError as exc:
            _usage_error(exc)
        except UserError as exc:
            print_error(exc.message, exc.detail)
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
    help="Translate AI-agent chat streams between protocols (agentkit, nest/adonis, oma).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"streambridge {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show more detail (warnings, error context).")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Translate AI-agent chat streams between protocols (agentkit, nest/adonis, oma)."""
    state.verbose = False
    set_verbose(verbose)


app.command("convert")(convert_command)
app.command("validate")(validate_command)
app.command("replay")(replay_command)
app.command("record")(record_command)
app.command("diff")(diff_command)
app.command("protocols")(protocols_command)
app.command("demo")(demo_command)

try:
    from .serve import serve_command
except ImportError:
    serve_command = None
if serve_command:
    app.command("serve")(serve_command)


def main() -> None:
    """Console-script entry point (``streambridge``, ``python -m streambridge``)."""
    app(prog_name="streambridge")

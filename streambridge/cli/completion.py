"""Shell completion: ``--show-completion [SHELL]`` and ``--install-completion [SHELL]``.

Typer's own options are flags that always use the shell they detect, so ``--show-completion zsh``
printed a bash script from bash. Here the shell named on the command line wins; left out, it is
the current shell. The scripts and the completion protocol (``_STREAMBRIDGE_COMPLETE``) are
typer's, for bash, zsh, fish and PowerShell.
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer import completion as typer_completion

__all__ = [
    "OPTIONS",
    "SHELLS",
    "InstallOption",
    "ShowOption",
    "complete_shell",
    "current_shell",
    "install",
    "setup",
    "show",
    "with_default_shell",
]

SHELLS = tuple(shell.value for shell in typer_completion.Shells)
OPTIONS = ("--show-completion", "--install-completion")


def setup() -> None:
    """Register typer's completion classes (its flags, left out here, would do it)."""
    typer_completion.completion_init()


def current_shell() -> str | None:
    """The shell this process runs under, when it is one completion supports."""
    try:
        import shellingham  # what typer asks too (absent from typer-slim)

        name = shellingham.detect_shell()[0]
    except (ImportError, OSError):  # shellingham.ShellDetectionFailure is an OSError
        return None
    return name if name in SHELLS else None


def with_default_shell(args: list[str]) -> list[str]:
    """``args`` with the current shell after a completion option given without one."""
    out = list(args)
    for i, arg in enumerate(out):
        if not arg.startswith("-"):
            break  # the command: its options are not ours
        if arg in OPTIONS and (i + 1 == len(out) or out[i + 1].startswith("-")):
            shell = current_shell()
            if shell is not None:
                out.insert(i + 1, shell)
            break
    return out


def _names(ctx: typer.Context) -> tuple[str, str]:
    prog_name = ctx.find_root().info_name or "streambridge"
    return prog_name, "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())


def _check(value: str) -> str:
    shell = value.lower()
    if shell not in SHELLS:
        raise typer.BadParameter(f"{value!r} is not a supported shell (one of {', '.join(SHELLS)})")
    return shell


def show(ctx: typer.Context, value: str | None) -> None:
    """Print the completion script of the named shell, then exit."""
    if value is None or ctx.resilient_parsing:
        return
    prog_name, complete_var = _names(ctx)
    typer.echo(
        typer_completion.get_completion_script(prog_name=prog_name, complete_var=complete_var, shell=_check(value))
    )
    raise typer.Exit()


def install(ctx: typer.Context, value: str | None) -> None:
    """Install the completion script of the named shell, then exit."""
    if value is None or ctx.resilient_parsing:
        return
    prog_name, complete_var = _names(ctx)
    shell, path = typer_completion.install(shell=_check(value), prog_name=prog_name, complete_var=complete_var)
    typer.echo(f"{shell} completion installed in {path}; it takes effect in a new shell.")
    raise typer.Exit()


def complete_shell(incomplete: str) -> list[str]:
    return [shell for shell in SHELLS if shell.startswith(incomplete)]


_SHELL_HELP = f"({', '.join(SHELLS)}; default: the current shell)"
ShowOption = Annotated[
    str | None,
    typer.Option(
        "--show-completion",
        metavar="SHELL",
        callback=show,
        is_eager=True,
        expose_value=False,
        autocompletion=complete_shell,
        help=f"Print the completion script for SHELL {_SHELL_HELP}.",
    ),
]
InstallOption = Annotated[
    str | None,
    typer.Option(
        "--install-completion",
        metavar="SHELL",
        callback=install,
        is_eager=True,
        expose_value=False,
        autocompletion=complete_shell,
        help=f"Install completion for SHELL {_SHELL_HELP}.",
    ),
]

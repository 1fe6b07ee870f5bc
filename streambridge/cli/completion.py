"""Shell completion: ``--show-completion [SHELL]`` and ``--install-completion [SHELL]``.

Typer's own options are flags that always use the shell they detect, so ``--show-completion zsh``
printed a bash script from bash. Here the shell named on the command line wins; left out, it is
the current shell. The scripts and the completion protocol (``_STREAMBRIDGE_COMPLETE``) are
typer's, for bash, zsh, fish and PowerShell.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from typer import _completion_classes as typer_completion_classes
from typer import completion as typer_completion
from typer._completion_classes import add_completion_class, click_split_arg_string

from .. import codecs

__all__ = [
    "OPTIONS",
    "SHELLS",
    "BashComplete",
    "InstallOption",
    "ShowOption",
    "complete_protocol",
    "complete_shell",
    "current_shell",
    "install",
    "join_colon_words",
    "setup",
    "show",
    "with_default_shell",
]

SHELLS = tuple(shell.value for shell in typer_completion.Shells)
OPTIONS = ("--show-completion", "--install-completion")


def setup() -> None:
    """Register typer's completion classes (its flags, left out here, would do it), with ours
    for bash."""
    typer_completion.completion_init()
    add_completion_class(BashComplete, BashComplete.name)


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


def complete_protocol(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion for protocol options: the names and aliases that start with what was
    typed, each with what it is. Read from the registry's names: no protocol is imported."""
    known = codecs.names()
    named = [(name, codecs.title(name)) for name in known]
    aliased = [(alias, f"alias of {name}") for name in known for alias in codecs.aliases(name)]
    return [(value, help_text) for value, help_text in (*named, *aliased) if value.startswith(incomplete)]


def join_colon_words(words: list[str], cword: int) -> tuple[list[str], int]:
    """bash's words as the user typed them, and the index of the current one: bash splits a
    word at ``:`` (``COMP_WORDBREAKS``), so ``agentfootprint:h`` arrives as three words."""
    out: list[str] = []
    current = None
    for i, word in enumerate(words):
        if out and (word == ":" or out[-1].endswith(":")):
            out[-1] += word
        else:
            out.append(word)
        if i == cword:
            current = len(out) - 1
    return out, len(out) if current is None else current


class BashComplete(typer_completion_classes.BashComplete):
    """typer's bash completion, for words with a ``:`` in them: it reads the word as typed
    (``--to agentfootprint:h``) and answers with what goes after the word's last ``:``
    (``host``), the part bash replaces."""

    def get_completion_args(self) -> tuple[list[str], str]:
        words, cword = join_colon_words(click_split_arg_string(os.environ["COMP_WORDS"]), int(os.environ["COMP_CWORD"]))
        return words[1:cword], words[cword] if cword < len(words) else ""

    def complete(self) -> str:
        args, incomplete = self.get_completion_args()
        typed = incomplete[: incomplete.rfind(":") + 1]  # what bash keeps: up to the last colon
        values = [item.value for item in self.get_completions(args, incomplete)]
        return "\n".join(value[len(typed) :] if value.startswith(typed) else value for value in values)


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

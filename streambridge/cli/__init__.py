"""streambridge's command line: ``streambridge`` / ``python -m streambridge`` (see docs/cli.md).

This module is what the console script imports first, so it imports nothing itself: :func:`main`
installs the Ctrl-C handling before the application (typer, rich, the commands) is imported.
"""

from __future__ import annotations

import os
import signal
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import app

__all__ = ["EXIT_INTERRUPTED", "app", "main"]

#: the exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130


def main() -> None:
    """Console-script entry point: the app, where Ctrl-C at any moment, even while it is being
    imported, ends the run with exit code 130 and no traceback."""
    try:
        from .app import main as run

        run()
    except KeyboardInterrupt:
        interrupted()


def interrupted() -> None:
    """Leave now, as a Unix tool does on Ctrl-C: exit 130, nothing on stderr (the terminal has
    shown ``^C``). A second Ctrl-C while leaving ends the process at once."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(EXIT_INTERRUPTED)


def pause_for_tests() -> None:
    """Test-only: with ``STREAMBRIDGE_TEST_PAUSE`` naming a FIFO, wait on it (a test sends Ctrl-C
    while the app is being imported, at a point it knows, then closes its end)."""
    fifo = os.environ.get("STREAMBRIDGE_TEST_PAUSE")
    if fifo:
        with open(fifo, "rb") as waiting:
            waiting.read()


class _Package(types.ModuleType):
    """The package, whose ``app`` is the typer application, imported on first use, even once the
    submodule of that name is imported (the import system binds it to the package's ``app``)."""

    @property
    def app(self) -> Any:
        from .app import app

        return app

    @app.setter
    def app(self, module: object) -> None:
        pass  # the submodule being bound: ``streambridge.cli.app`` stays the application


sys.modules[__name__].__class__ = _Package

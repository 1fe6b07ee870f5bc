"""streambridge's command line: ``streambridge`` / ``python -m streambridge`` (see docs/cli.md)."""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]

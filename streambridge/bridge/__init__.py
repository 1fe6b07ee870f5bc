"""``streambridge serve``: a proxy that translates live agent chat streams between protocols.

A client of one protocol talks to the proxy; the proxy talks to an upstream of another protocol
and translates the request and, chunk by chunk, the response stream (through the core
:class:`~streambridge.Translator`). See docs/proxy.md.
"""

from __future__ import annotations

from .config import Config, ConfigError, Route, build_config
from .server import create_app, run_app

__all__ = ["Config", "ConfigError", "Route", "build_config", "create_app", "run_app"]

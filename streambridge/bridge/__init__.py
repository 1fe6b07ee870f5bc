"""``streambridge serve``: a proxy that translates live agent chat streams between protocols.

A client of one protocol talks to the proxy; the proxy talks to an upstream of another protocol
and translates the request and, chunk by chunk, the response stream (through the core
:class:`~streambridge.Translator`). See docs/proxy.md.

Its names are imported when first used, so reading the configuration (``bridge.config``) does
not import the server and aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .config import Config, ConfigError, Route, build_config
    from .server import create_app, run_app

__all__ = ["Config", "ConfigError", "Route", "build_config", "create_app", "run_app"]

#: each public name and the module it comes from
_HOME = {
    "Config": ".config",
    "ConfigError": ".config",
    "Route": ".config",
    "build_config": ".config",
    "create_app": ".server",
    "run_app": ".server",
}

__getattr__ = lazy_names(__name__, _HOME, globals())

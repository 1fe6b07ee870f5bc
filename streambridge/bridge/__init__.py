"""``streambridge serve``: a proxy that translates live agent chat streams between protocols.

A client of one protocol talks to the proxy; the proxy talks to an upstream of another protocol
and translates the request and, chunk by chunk, the response stream (through the core
:class:`~streambridge.Translator`). See docs/proxy.md.

Its names are imported when first used, so reading the configuration (``bridge.config``) does
not import the server and aiohttp.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Config, ConfigError, Route, build_config
    from .server import create_app, run_app

__all__ = ["Config", "ConfigError", "Route", "build_config", "create_app", "run_app"]

_HOME = {
    "Config": "config",
    "ConfigError": "config",
    "Route": "config",
    "build_config": "config",
    "create_app": "server",
    "run_app": "server",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value

"""The codec registry: one sans-IO decoder and encoder per protocol, all through one event model.

Each protocol is a package here whose ``CODEC`` (or ``CODECS``, one per dialect) says all it
knows (see :mod:`.codec`); adding one is a new package and one line in :data:`BUILTIN`. Plugins
(entry points of the group ``streambridge.protocols``, modules named in ``STREAMBRIDGE_PROTOCOLS``)
join the same way. The registry fills itself when it is first asked (``names``, ``get``,
``registered``, ``register``); a plugin that fails to load is one :class:`PluginWarning` naming
it, and the rest load. ``codecs`` lives inside the package: a top-level ``codecs`` would shadow
Python's own module.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from importlib.metadata import entry_points

from .codec import Codec
from .errors import StreamError

__all__ = [
    "BUILTIN",
    "PLUGINS_VARIABLE",
    "Codec",
    "PluginWarning",
    "StreamError",
    "get",
    "load_plugins",
    "names",
    "register",
    "registered",
    "unregister",
]

#: the built-in protocols, one line each: the module whose ``CODEC`` (or ``CODECS``) is registered
BUILTIN = (
    "streambridge.codecs.agentkit",
    "streambridge.codecs.nest",
    "streambridge.codecs.oma",
    "streambridge.codecs.agentfootprint",
    "streambridge.codecs.agentfootprint.host",
    "streambridge.codecs.ai_sdk",
    "streambridge.codecs.ag_ui",
)
#: modules named here (comma-separated) are protocol plugins
PLUGINS_VARIABLE = "STREAMBRIDGE_PROTOCOLS"


class PluginWarning(UserWarning):
    """A protocol plugin could not be loaded (the registry goes on without it)."""


_REGISTRY: dict[str, Codec] = {}
_ALIASES: dict[str, str] = {}
_loaded = False


def _codecs_of(module: object) -> tuple[Codec, ...]:
    """What a protocol module registers: its ``CODECS``, else its ``CODEC`` (or the codec itself)."""
    said = module if isinstance(module, Codec) else getattr(module, "CODECS", None) or getattr(module, "CODEC", None)
    found = (said,) if isinstance(said, Codec) else tuple(said or ())
    if not found or not all(isinstance(codec, Codec) for codec in found):
        raise TypeError(f"{getattr(module, '__name__', module)!r} has no CODEC (a streambridge.codecs.Codec)")
    return found


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN:
        for codec in _codecs_of(import_module(name)):
            _add(codec)
    load_plugins()


def _add(codec: Codec) -> None:
    taken = {*_REGISTRY, *_ALIASES}
    if codec.name in taken or taken & set(codec.aliases):
        raise ValueError(f"protocol {codec.name!r} or one of its aliases is already registered")
    _REGISTRY[codec.name] = codec
    _ALIASES.update(dict.fromkeys(codec.aliases, codec.name))


def register(codec: Codec) -> None:
    """Add a protocol to the registry (its name and aliases must be new)."""
    _ensure_loaded()
    _add(codec)


def unregister(name: str) -> None:
    """Remove a protocol (tests that register one of their own)."""
    codec = _REGISTRY.pop(name)
    for alias in codec.aliases:
        _ALIASES.pop(alias, None)


def _plugin_sources(environ: Mapping[str, str]) -> Iterable[tuple[str, Callable[[], object]]]:
    """(name, loader) of every plugin: entry points first, then the variable's modules."""
    for ep in entry_points(group="streambridge.protocols"):
        yield ep.name, ep.load
    for name in environ.get(PLUGINS_VARIABLE, "").split(","):
        if name.strip():
            yield name.strip(), functools.partial(import_module, name.strip())


def load_plugins(environ: Mapping[str, str] = os.environ) -> None:
    """Register the protocols installed as plugins: each entry point of the group
    ``streambridge.protocols`` and each module named in ``STREAMBRIDGE_PROTOCOLS`` (comma-separated)
    gives a ``CODEC`` (or ``CODECS``) that joins the registry (see docs/adding-a-protocol.md). A
    plugin that fails to load, or whose codec clashes with a registered name, is one
    :class:`PluginWarning` naming it; the others load."""
    for name, load in _plugin_sources(environ):
        try:
            module = load()
            for codec in _codecs_of(module):
                if _REGISTRY.get(codec.name) is not codec:
                    _add(codec)
        except Exception as exc:  # a plugin is someone else's code: any failure is its own
            warnings.warn(f"protocol plugin {name!r} not loaded: {type(exc).__name__}: {exc}", PluginWarning, 2)


def names() -> list[str]:
    """Codec ids, aliases excluded, in registration order."""
    _ensure_loaded()
    return list(_REGISTRY)


def registered() -> dict[str, Codec]:
    """Every registered codec by its id (a copy: change the registry with :func:`register`)."""
    _ensure_loaded()
    return dict(_REGISTRY)


def get(name: str) -> Codec:
    """A codec by id or alias; ``KeyError`` names the known ones."""
    _ensure_loaded()
    key = _ALIASES.get(name, name)
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join([*_REGISTRY, *_ALIASES])
        raise KeyError(f"unknown protocol {name!r}: expected one of {known}") from None

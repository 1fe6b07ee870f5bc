"""The codec registry: one sans-IO decoder and encoder per protocol, all through one event model.

Each protocol is a package here (``agentkit/``, ``nest/``, ``oma/``) whose ``CODEC`` says all it
knows (see :mod:`.codec`); adding one is a new package and one line below. ``codecs`` lives
inside the package: a top-level ``codecs`` would shadow Python's own module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from importlib.metadata import entry_points

from . import ag_ui, agentfootprint, agentkit, ai_sdk, nest, oma
from .agentfootprint import host as agentfootprint_host
from .codec import Codec
from .errors import StreamError

__all__ = ["REGISTRY", "Codec", "StreamError", "get", "load_plugins", "names", "register", "unregister"]

REGISTRY: dict[str, Codec] = {}
_ALIASES: dict[str, str] = {}


def register(codec: Codec) -> None:
    """Add a protocol to the registry (its name and aliases must be new)."""
    taken = {*REGISTRY, *_ALIASES}
    if codec.name in taken or taken & set(codec.aliases):
        raise ValueError(f"protocol {codec.name!r} or one of its aliases is already registered")
    REGISTRY[codec.name] = codec
    _ALIASES.update(dict.fromkeys(codec.aliases, codec.name))


def unregister(name: str) -> None:
    """Remove a protocol (tests that register one of their own)."""
    codec = REGISTRY.pop(name)
    for alias in codec.aliases:
        _ALIASES.pop(alias, None)


def load_plugins(environ: Mapping[str, str] = os.environ) -> None:
    """Register the protocols installed as plugins: each entry point of the group
    ``streambridge.protocols`` and each module named in ``STREAMBRIDGE_PROTOCOLS`` (comma-separated)
    is a package whose ``CODEC`` joins the registry (see docs/adding-a-protocol.md)."""
    modules = [ep.load() for ep in entry_points(group="streambridge.protocols")]
    modules += [import_module(name.strip()) for name in environ.get(PLUGINS_VARIABLE, "").split(",") if name.strip()]
    for module in modules:
        codec = getattr(module, "CODEC", module)
        if codec.name not in REGISTRY:
            register(codec)


PLUGINS_VARIABLE = "STREAMBRIDGE_PROTOCOLS"

for _package in (agentkit, nest, oma, agentfootprint, agentfootprint_host):
    register(_package.CODEC)
for _codec in ai_sdk.CODECS:  # one codec per target client version
    register(_codec)
register(ag_ui.CODEC)
load_plugins()


def names() -> list[str]:
    """Codec ids, aliases excluded."""
    return list(REGISTRY)


def get(name: str) -> Codec:
    """A codec by id or alias; ``KeyError`` names the known ones."""
    key = _ALIASES.get(name, name)
    try:
        return REGISTRY[key]
    except KeyError:
        known = ", ".join([*REGISTRY, *_ALIASES])
        raise KeyError(f"unknown protocol {name!r}: expected one of {known}") from None

"""The codec registry: one sans-IO decoder and encoder per protocol, all through one event model.

Each protocol is a package here whose ``CODEC`` (or ``CODECS``, one per dialect) says all it
knows (see :mod:`.codec`); adding one is a new package and one :class:`Builtin` line in
:data:`BUILTIN`. The registry is lazy: names, aliases and titles are known from :data:`BUILTIN`
without importing anything, and a protocol's package is imported the first time :func:`get`
returns its codec (so a command that uses two protocols imports two). Plugins (entry points of
the group ``streambridge.protocols``, modules named in ``STREAMBRIDGE_PROTOCOLS``) are loaded when
a name is not a built-in one and by :func:`names`, :func:`registered` and :func:`register`; a plugin
that fails to load is one :class:`PluginWarning` naming it, and the rest load.

Every protocol name anyone gives (``get``, ``Translator``, the CLI's ``--from/--to``, the proxy's
routes) goes through :func:`resolve`: case and separators (``-``, ``_``, ``:``, none) do not matter,
and an unknown name is an :class:`UnknownProtocol` that suggests the nearest one. ``codecs`` lives
inside the package: a top-level ``codecs`` would shadow Python's own module.
"""

from __future__ import annotations

import difflib
import functools
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import StreamError

if TYPE_CHECKING:
    from .codec import Codec

__all__ = [
    "BUILTIN",
    "PLUGINS_VARIABLE",
    "Builtin",
    "Codec",
    "PluginWarning",
    "StreamError",
    "UnknownProtocol",
    "aliases",
    "get",
    "load_plugins",
    "names",
    "register",
    "registered",
    "resolve",
    "title",
    "unregister",
]


class Builtin(NamedTuple):
    """A built-in protocol as the registry knows it before importing it: what names it answers
    to and says it is (checked against its codec when its module is imported)."""

    name: str
    module: str
    aliases: tuple[str, ...] = ()
    title: str = ""


_AI_SDK = "streambridge.codecs.ai_sdk"
_AI_SDK_TITLE = "Vercel AI SDK UI message stream (ai {})"
#: the built-in protocols, one line each, in the order they are listed (and sniffed)
BUILTIN = (
    Builtin("agentkit", "streambridge.codecs.agentkit", (), "@dataverse-kit/agent-kit AgentEvent"),
    Builtin("nest", "streambridge.codecs.nest", ("adonis",), "@dudousxd/nestjs-agent chat SSE (and its AdonisJS copy)"),
    Builtin("oma", "streambridge.codecs.oma", (), "open-multi-agent StreamEvent"),
    Builtin(
        "agentfootprint", "streambridge.codecs.agentfootprint", (), "footprintjs/agentfootprint toSSE envelope stream"
    ),
    Builtin(
        "agentfootprint:host",
        "streambridge.codecs.agentfootprint.host",
        (),
        "footprintjs/agentfootprint hosting SSE dialect (POST /invoke)",
    ),
    Builtin("ai-sdk", _AI_SDK, ("ai-sdk@7",), _AI_SDK_TITLE.format(7)),
    Builtin("ai-sdk@6", _AI_SDK, (), _AI_SDK_TITLE.format(6)),
    Builtin("ai-sdk@5", _AI_SDK, (), _AI_SDK_TITLE.format(5)),
    Builtin("ag-ui", "streambridge.codecs.ag_ui", (), "AG-UI 1.0 (Agent-User Interaction protocol)"),
)
#: modules named here (comma-separated) are protocol plugins
PLUGINS_VARIABLE = "STREAMBRIDGE_PROTOCOLS"


class PluginWarning(UserWarning):
    """A protocol plugin could not be loaded (the registry goes on without it)."""


class UnknownProtocol(ValueError):
    """A protocol name the registry does not know. Its message is what the CLI prints after the
    option: the name, the nearest known one when there is one, and every known name."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.suggestion = _nearest(name, known)
        hint = f"did you mean {self.suggestion!r}? " if self.suggestion else ""
        super().__init__(f"unknown protocol {name!r} ({hint}expected one of {', '.join(known)})")


_BUILTIN = {entry.name: entry for entry in BUILTIN}
_listed: list[str] = [entry.name for entry in BUILTIN]  # codec names, in registration order
_aliases: dict[str, str] = {alias: entry.name for entry in BUILTIN for alias in entry.aliases}
_loaded: dict[str, Codec] = {}  # the codecs imported so far (plugins: registered) by name
_plugins_loaded = False


def _key(name: str) -> str:
    """What a name is compared by: ``AI_SDK``, ``ai-sdk`` and ``aisdk`` are one name."""
    return "".join(ch for ch in name.casefold() if ch not in "-_: ")


def _spellings() -> dict[str, str]:
    """Every known name and alias, by its :func:`_key`, to the codec name it stands for."""
    found = {_key(name): name for name in _listed}
    found.update({_key(alias): name for alias, name in _aliases.items()})
    return found


def _known() -> list[str]:
    """Codec names then aliases: every name the registry accepts as written."""
    return [*_listed, *_aliases]


def _nearest(name: str, known: list[str]) -> str | None:
    """The known name closest to ``name`` (compared as :func:`_key` compares), if any is close."""
    keys = {_key(k): k for k in known}
    close = difflib.get_close_matches(_key(name), list(keys), n=1, cutoff=0.5)
    return keys[close[0]] if close else None


def resolve(name: str) -> str:
    """The codec name ``name`` stands for: a codec name or alias, whatever its case and its
    separators (``-``, ``_``, ``:`` or none). Plugins are loaded when it is not a built-in name;
    an unknown name raises :class:`UnknownProtocol`. The one place protocol names are read."""
    found = _spellings().get(_key(name))
    if found is None and not _plugins_loaded:
        _load_plugins_once()
        found = _spellings().get(_key(name))
    if found is None:
        raise UnknownProtocol(name, _known())
    return found


def _codecs_of(module: object) -> tuple[Codec, ...]:
    """What a protocol module registers: its ``CODECS``, else its ``CODEC`` (or the codec itself)."""
    from .codec import Codec

    said = module if isinstance(module, Codec) else getattr(module, "CODECS", None) or getattr(module, "CODEC", None)
    found = (said,) if isinstance(said, Codec) else tuple(said or ())
    if not found or not all(isinstance(codec, Codec) for codec in found):
        raise TypeError(f"{getattr(module, '__name__', module)!r} has no CODEC (a streambridge.codecs.Codec)")
    return found


def _import_builtin(entry: Builtin) -> None:
    """Import a built-in protocol's module and keep its codecs (each as its entry says it)."""
    for codec in _codecs_of(import_module(entry.module)):
        said = _BUILTIN.get(codec.name)
        if said is None or (said.module, said.aliases, said.title) != (entry.module, codec.aliases, codec.title):
            raise TypeError(f"{entry.module}: codec {codec.name!r} differs from its line in BUILTIN")
        if codec.name in _listed:  # (not unregistered)
            _loaded.setdefault(codec.name, codec)


def _load_plugins_once() -> None:
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        load_plugins()


def _add(codec: Codec) -> None:
    taken = _spellings()
    if any(_key(name) in taken for name in (codec.name, *codec.aliases)):
        raise ValueError(f"protocol {codec.name!r} or one of its aliases is already registered")
    _listed.append(codec.name)
    _aliases.update(dict.fromkeys(codec.aliases, codec.name))
    _loaded[codec.name] = codec


def register(codec: Codec) -> None:
    """Add a protocol to the registry (its name and aliases must be new, whatever their case
    and separators)."""
    _load_plugins_once()
    _add(codec)


def unregister(name: str) -> None:
    """Remove a protocol (tests that register one of their own)."""
    _listed.remove(name)
    _loaded.pop(name, None)
    for alias in [alias for alias, of in _aliases.items() if of == name]:
        del _aliases[alias]


def _plugin_sources(environ: Mapping[str, str]) -> Iterable[tuple[str, Callable[[], object]]]:
    """(name, loader) of every plugin: entry points first, then the variable's modules."""
    from importlib.metadata import entry_points  # (a few ms: only when plugins are asked for)

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
                if _loaded.get(codec.name) is not codec:
                    _add(codec)
        except Exception as exc:  # a plugin is someone else's code: any failure is its own
            warnings.warn(f"protocol plugin {name!r} not loaded: {type(exc).__name__}: {exc}", PluginWarning, 2)


def names() -> list[str]:
    """Codec ids, aliases excluded, in registration order (no protocol module is imported)."""
    _load_plugins_once()
    return list(_listed)


def aliases(name: str) -> tuple[str, ...]:
    """The aliases of the codec called ``name`` (no protocol module is imported)."""
    return tuple(alias for alias, of in _aliases.items() if of == name)


def title(name: str) -> str:
    """What the protocol called ``name`` is, in a few words (no built-in module is imported)."""
    entry = _BUILTIN.get(name)
    return entry.title if entry is not None else get(name).title


def registered() -> dict[str, Codec]:
    """Every registered codec by its id (a copy: change the registry with :func:`register`)."""
    return {name: get(name) for name in names()}


def get(name: str) -> Codec:
    """A codec by its name or an alias, spelt in any case and with any separators (see
    :func:`resolve`); its module is imported the first time. An unknown name raises
    :class:`UnknownProtocol` (a ``ValueError``) suggesting the nearest known one."""
    codec_name = resolve(name)
    if codec_name not in _loaded:
        _import_builtin(_BUILTIN[codec_name])
    return _loaded[codec_name]


def __getattr__(name: str) -> Any:
    """:class:`Codec` on first use: the registry's names need none of the codec machinery."""
    if name == "Codec":
        from .codec import Codec

        return Codec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

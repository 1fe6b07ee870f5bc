"""streambridge: translate AI-agent chat streams between frameworks, losslessly and live.

The names below are imported on first use (PEP 562), so ``import streambridge`` and the command
line's ``--help`` and completion stay fast: a name costs its import only when it is used.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from .lazy import lazy_names

if TYPE_CHECKING:
    from . import codecs, events
    from .codecs import StreamError
    from .translate import Translator, translate

__all__ = ["StreamError", "Translator", "codecs", "events", "translate"]
__version__ = "0.1.0"

#: each public name and the module it comes from (a module itself when the name is its own)
_LAZY = {
    "StreamError": ".codecs.errors",
    "Translator": ".translate",
    "codecs": ".codecs",
    "events": ".events",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "translate"])


class _Package(types.ModuleType):
    """The package, whose ``translate`` is the function even once the submodule of that name is
    imported (the import system binds a submodule to its package's attribute of the same name)."""

    @property
    def translate(self) -> Any:
        from .translate import translate

        return translate

    @translate.setter
    def translate(self, module: object) -> None:
        pass  # the submodule being bound: ``streambridge.translate`` stays the function


sys.modules[__name__].__class__ = _Package

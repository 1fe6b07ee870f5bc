"""Names a package exports but imports on first use (PEP 562): importing the package, or one of
its light modules, then costs nothing for the heavy ones (the CLI's start-up, shell completion)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str], namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: each name of ``homes`` imported from its module (relative
    to ``package``; a module itself when the name is its own) when first asked for, then kept in
    the package's ``namespace``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = import_module(home, package)
        value = module if home == f".{name}" else getattr(module, name)
        namespace[name] = value
        return value

    return __getattr__

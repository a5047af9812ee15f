"""Modules imported on first use instead of at import time.

pyarrow takes about 100 ms to import (with numpy, and pandas where installed), and most commands never touch data:
``tablefmt expire``, ``remove-orphans`` and ``expire-partitions`` read and write metadata only. Modules that need
pyarrow only inside functions bind it with :func:`lazy_module`; type checkers see the real import::

    if TYPE_CHECKING:
        import pyarrow as pa
    else:
        pa = lazy_module("pyarrow")

The first attribute read imports the module and copies its namespace into the stand-in, so later reads are plain
attribute lookups; a name the module gains afterwards (a submodule imported later) is still found through it.

A package whose ``__init__`` re-exports names of its modules imports each of those modules when one of its names is
first read, through :func:`lazy_attributes` (type checkers see the real imports)::

    if TYPE_CHECKING:
        from .execute import execute_expiration
    else:
        __getattr__ = lazy_attributes(__name__, {"execute_expiration": ".execute"})
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

_lock = threading.Lock()


class _LazyModule(ModuleType):
    """Stands in for module ``__name__`` until an attribute is read (then holds the module's names too)."""

    def __getattr__(self, attr: str) -> Any:  # only for names not copied yet
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # copy, pickle and inspect probe dunders: never import for those
        module = self._load()
        return getattr(module, attr)

    def _load(self) -> ModuleType:
        loaded = self.__dict__.get("_loaded_module")
        if loaded is None:
            with _lock:
                loaded = self.__dict__.get("_loaded_module")
                if loaded is None:
                    loaded = importlib.import_module(self.__name__)
                    namespace = {k: v for k, v in vars(loaded).items() if not k.startswith("__")}
                    self.__dict__.update(namespace)
                    self.__dict__["_loaded_module"] = loaded
        return loaded


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it at the first attribute read."""
    return _LazyModule(name)


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` is read from its module (``homes[name]``, a
    relative name such as ``.execute``) when first asked for, then kept in the package's namespace."""

    def package_getattr(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return package_getattr

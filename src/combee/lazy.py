"""A package's public names imported when first used (PEP 562), so that importing the package,
or any one of its modules, does not import every library behind the names it re-exports.

In the package's ``__init__``::

    if TYPE_CHECKING:
        from combee.llm.client import LLM      # what type checkers and readers see
    if not TYPE_CHECKING:
        __getattr__, __dir__ = lazy_exports(__name__, {"LLM": "combee.llm.client"})
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose public name -> defining module
    ``exports`` are imported on first use and then kept in the package's namespace.

    Where a public name is also a module's name (``combee.llm.connect``, a function in the
    module of the same name), importing that module must not put the module in the function's
    place, as Python's import system would: the package keeps the public name.
    """
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(source), name)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *exports})

    module.__class__ = _package_class(frozenset(exports))
    return __getattr__, __dir__


def _package_class(public: frozenset[str]) -> type[ModuleType]:
    class Package(ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in public and isinstance(value, ModuleType):
                return
            super().__setattr__(name, value)

    return Package

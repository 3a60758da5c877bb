"""A package's public names imported on first use (PEP 562), so a command that needs one light
module (`lakemirror status`) does not pay for every module of the package (pyarrow, numpy,
deltalake). Type checkers see the names through the package's `TYPE_CHECKING` imports."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, modules: dict[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The package's module `__getattr__`: `modules` maps each submodule to the names it gives."""
    owner = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        if name not in owner:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{owner[name]}"), name)

    return __getattr__

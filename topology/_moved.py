"""Old module paths keep importing after a module moved (and old pickles keep loading).

The three packages share this one mechanism (``topology`` is the one both
others may import). Each package lists its moves, ``old dotted name -> new
dotted name``, and calls :func:`install` from its ``__init__``. Importing an
old path then returns the module at its new path (a ``DeprecationWarning``
names the new path), so ``import asyncdp.links`` and a pickle that refers to
``asyncdp.transcript.Transcript`` keep working. A moved package maps its
submodules too (``asyncdp.costs.quadratics`` -> ``asyncdp.problems.costs.quadratics``).

Example:
    >>> import importlib, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     old = importlib.import_module("topology.properties")
    >>> old.__name__
    'topology.checks.properties'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType

__all__ = ["install", "new_name"]

_MOVES: dict[str, str] = {}
_TOPS: set[str] = set()  # the top-level packages with moves (a cheap first test on every import)


def new_name(old: str) -> str | None:
    """The current dotted name of module ``old``, or ``None`` if it did not move.

    Example:
        >>> new_name("topology.constants")
        'topology.checks.constants'
    """
    if old.partition(".")[0] not in _TOPS:
        return None
    for prefix in sorted(_MOVES, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            return _MOVES[prefix] + old[len(prefix):]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"module {module.__name__} moved to {self.target}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        # importlib returns whatever sys.modules holds under the old name after exec_module
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None or new == fullname:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install(moves: Mapping[str, str]) -> None:
    """Register ``old -> new`` module moves and put the finder on ``sys.meta_path`` once.

    Args:
        moves: old dotted module names mapped to their new dotted names.
    """
    _MOVES.update(moves)
    _TOPS.update(name.partition(".")[0] for name in moves)
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        # first on the path: a submodule of a moved package (asyncdp.costs.quadratics) would otherwise be
        # found by the path finder in the package's new folder and loaded a second time under its old name
        sys.meta_path.insert(0, _MovedModuleFinder())

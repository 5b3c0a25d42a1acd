"""Shipped private algorithms, each a pure per-agent rule (see :mod:`.base`).

:data:`REGISTRY` maps each algorithm's name to its class; engines, the CLI and
the engine-equivalence test discover algorithms through it. The record of each
paper (rule, accountant inputs, claim, topology assumptions, reproductions) is
in :mod:`.registry`: :class:`~.registry.PaperSpec`, :data:`~.registry.PAPERS`,
:func:`~.registry.get_spec`; those names load it on first access, since it
imports the privacy adapters.
"""

from __future__ import annotations

from typing import Any

from ..errors import AlgorithmParameterError
from .base import Algorithm, Channel, NoiseDeclaration
from .dpsda import DPSDAC, DPSDAPS
from .huang2015 import Huang2015
from .showkatbakhsh import Showkatbakhsh
from .wang_basar import WangBasar

__all__ = ["Algorithm", "Channel", "NoiseDeclaration", "Huang2015", "Showkatbakhsh", "DPSDAC", "DPSDAPS", "WangBasar",
           "REGISTRY", "get_algorithm", "PAPERS", "PaperSpec", "NotSupportedError", "get_spec"]

_FROM_REGISTRY = ("PAPERS", "PaperSpec", "NotSupportedError", "get_spec")

REGISTRY: dict[str, type[Algorithm]] = {Huang2015.name: Huang2015, Showkatbakhsh.name: Showkatbakhsh,
                                    DPSDAC.name: DPSDAC, DPSDAPS.name: DPSDAPS, WangBasar.name: WangBasar}


def get_algorithm(name: str) -> type[Algorithm]:
    """The algorithm class registered under ``name``.

    Raises:
        AlgorithmParameterError: an unknown name (the message lists the known ones).
    """
    try:
        return REGISTRY[name]
    except KeyError:
        raise AlgorithmParameterError(f"unknown algorithm {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def __getattr__(name: str) -> Any:
    """Load :mod:`.registry` on first access to one of its names (PEP 562)."""
    if name in _FROM_REGISTRY:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Reproductions of published experiments.

:data:`EXPERIMENTS` maps an experiment name (the argument of
``asyncdp reproduce NAME``) to its function ``(out_dir, **options) -> dict``;
:data:`TABLES` maps the same name to a formatter of that dict as a text table.
Adding an experiment means adding a module here and one entry to
:data:`_REGISTRY`.

The experiment modules (and their scipy, accounting and simulator imports)
load on first access to :data:`EXPERIMENTS`, :data:`TABLES` or a function
(PEP 562); :data:`EXPERIMENT_NAMES` needs none of them, so
``asyncdp --help`` stays fast.

Example:
    >>> from asyncdp.reproduce import EXPERIMENTS
    >>> "huang2015-fig1" in EXPERIMENTS and "showkatbakhsh-fig1" in EXPERIMENTS
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import lazy_loader

if TYPE_CHECKING:
    from .huang2015.fig1 import format_fig1_table, reproduce_fig1

    EXPERIMENTS: dict[str, Callable[..., dict[str, Any]]]
    TABLES: dict[str, Callable[[dict[str, Any]], str]]

__all__ = ["EXPERIMENTS", "EXPERIMENT_NAMES", "TABLES", "reproduce_fig1", "format_fig1_table"]

_REGISTRY: dict[str, tuple[str, str, str]] = {
    "huang2015-fig1": ("huang2015.fig1", "reproduce_fig1", "format_fig1_table"),
    "showkatbakhsh-fig1": ("showkatbakhsh.fig1", "reproduce_fig1", "format_table"),
    "showkatbakhsh-fig2": ("showkatbakhsh.fig2", "reproduce_fig2", "format_table"),
    "showkatbakhsh-fig3": ("showkatbakhsh.fig3", "reproduce_fig3", "format_table"),
    "showkatbakhsh-fig4": ("showkatbakhsh.fig4", "reproduce_fig4", "format_table"),
    "wang-basar-table1": ("wang_basar.table1", "reproduce_table1", "format_table1_table"),
    "wang-basar-saddle": ("wang_basar.saddle", "reproduce_saddle", "format_saddle_table"),
    "wang-basar-ica": ("wang_basar.ica", "reproduce_ica", "format_ica_table"),
    "dpsda-olr": ("dpsda.olr", "reproduce_olr", "format_olr_table"),
    "dpsda-classification": ("dpsda.classification", "reproduce_classification", "format_classification_table"),
    "dpsda-dp-check": ("dpsda.dp_check", "reproduce_dp_check", "format_dp_check_table"),
}
"""Experiment name -> (submodule, dotted below this package; reproduction function; table formatter)."""

EXPERIMENT_NAMES: tuple[str, ...] = tuple(_REGISTRY)
"""The keys of :data:`EXPERIMENTS` and :data:`TABLES`, without importing any experiment."""


def _load() -> None:
    """Import the experiment modules and bind :data:`EXPERIMENTS` and :data:`TABLES`.

    ``EXPERIMENTS``: experiment name -> reproduction function ``(out_dir, **options) -> summary dict``.
    ``TABLES``: experiment name -> ``summary dict -> text table``.
    """
    experiments: dict[str, Callable[..., dict[str, Any]]] = {}
    tables: dict[str, Callable[[dict[str, Any]], str]] = {}
    for name, (module, function, table) in _REGISTRY.items():
        mod = importlib.import_module(f"{__name__}.{module}")
        experiments[name] = getattr(mod, function)
        tables[name] = getattr(mod, table)
    globals().update(EXPERIMENTS=experiments, TABLES=tables)


_lazy_getattr = lazy_loader.attach(__name__, submod_attrs={"huang2015.fig1": ["reproduce_fig1", "format_fig1_table"]})[0]


def __getattr__(name: str) -> Any:
    """Build :data:`EXPERIMENTS` and :data:`TABLES`, or import a function, on first access (PEP 562)."""
    if name in ("EXPERIMENTS", "TABLES"):
        _load()
        return globals()[name]
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""Reproductions of published experiments.

:data:`EXPERIMENTS` maps an experiment name (the argument of
``asyncdp reproduce NAME``) to its function ``(out_dir, **options) -> dict``;
:data:`TABLES` maps the same name to a formatter of that dict as a text table.
Adding an experiment means adding a module here and one entry to each.

Example:
    >>> "huang2015-fig1" in EXPERIMENTS and "showkatbakhsh-fig1" in EXPERIMENTS
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import dpsda as _dpsda
from . import showkatbakhsh as _showkatbakhsh
from . import wang_basar as _wang_basar
from .huang2015_fig1 import format_fig1_table, reproduce_fig1

__all__ = ["EXPERIMENTS", "TABLES", "reproduce_fig1", "format_fig1_table"]

EXPERIMENTS: dict[str, Callable[..., dict[str, Any]]] = {
    "huang2015-fig1": reproduce_fig1,
    "showkatbakhsh-fig1": _showkatbakhsh.reproduce_fig1,
    "showkatbakhsh-fig2": _showkatbakhsh.reproduce_fig2,
    "showkatbakhsh-fig3": _showkatbakhsh.reproduce_fig3,
    "showkatbakhsh-fig4": _showkatbakhsh.reproduce_fig4,
    "wang-basar-table1": _wang_basar.reproduce_table1,
    "wang-basar-saddle": _wang_basar.reproduce_saddle,
    "wang-basar-ica": _wang_basar.reproduce_ica,
    "dpsda-olr": _dpsda.reproduce_olr,
    "dpsda-classification": _dpsda.reproduce_classification,
    "dpsda-dp-check": _dpsda.reproduce_dp_check,
}
"""Experiment name -> reproduction function ``(out_dir, **options) -> summary dict``."""

TABLES: dict[str, Callable[[dict[str, Any]], str]] = {
    "huang2015-fig1": format_fig1_table,
    "showkatbakhsh-fig1": _showkatbakhsh.format_table,
    "showkatbakhsh-fig2": _showkatbakhsh.format_table,
    "showkatbakhsh-fig3": _showkatbakhsh.format_table,
    "showkatbakhsh-fig4": _showkatbakhsh.format_table,
    "wang-basar-table1": _wang_basar.format_table1_table,
    "wang-basar-saddle": _wang_basar.format_saddle_table,
    "wang-basar-ica": _wang_basar.format_ica_table,
    "dpsda-olr": _dpsda.format_olr_table,
    "dpsda-classification": _dpsda.format_classification_table,
    "dpsda-dp-check": _dpsda.format_dp_check_table,
}
"""Experiment name -> ``summary dict -> text table``."""

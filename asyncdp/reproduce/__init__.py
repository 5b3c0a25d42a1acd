"""Reproductions of published experiments, collected from the paper records.

:data:`EXPERIMENTS` maps an experiment name (the argument of
``asyncdp reproduce NAME``) to its function ``(out_dir, **options) -> dict``;
:data:`TABLES` maps the same name to a formatter of that dict as a text
table. Both come from the :class:`~asyncdp.papers.Reproduction` records of
every discovered paper (:mod:`asyncdp.papers`): a paper's reproductions live
in its folder, and nothing is listed here. :mod:`._outputs` and
:mod:`._stats` are the helpers the reproductions share.

:data:`EXPERIMENT_NAMES` reads only the records; the experiment modules (and
their scipy, accounting and simulator imports) load on first access to
:data:`EXPERIMENTS` or :data:`TABLES` (PEP 562), so
``asyncdp --help`` stays fast.

Example:
    >>> from asyncdp.reproduce import EXPERIMENTS
    >>> "huang2015-fig1" in EXPERIMENTS and "showkatbakhsh-fig1" in EXPERIMENTS
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    EXPERIMENTS: dict[str, Callable[..., dict[str, Any]]]
    TABLES: dict[str, Callable[[dict[str, Any]], str]]
    EXPERIMENT_NAMES: tuple[str, ...]

__all__ = ["EXPERIMENTS", "EXPERIMENT_NAMES", "TABLES"]


def _records() -> dict[str, Any]:
    from ..papers import PaperError, papers

    out: dict[str, Any] = {}
    for paper in papers().values():
        for rep in paper.reproductions:
            if rep.name in out:
                raise PaperError(f"two reproductions are named {rep.name!r} (papers {out[rep.name][0]!r} and "
                                 f"{paper.name!r})")
            out[rep.name] = (paper.name, rep)
    return {name: out[name][1] for name in sorted(out)}


def _load() -> None:
    """Import the experiment modules and bind :data:`EXPERIMENTS` and :data:`TABLES`."""
    experiments: dict[str, Callable[..., dict[str, Any]]] = {}
    tables: dict[str, Callable[[dict[str, Any]], str]] = {}
    for name, rep in _records().items():
        experiments[name], tables[name] = rep.load()
    globals().update(EXPERIMENTS=experiments, TABLES=tables)


def __getattr__(name: str) -> Any:
    """Build :data:`EXPERIMENT_NAMES`, :data:`EXPERIMENTS` and :data:`TABLES`, on first access (PEP 562)."""
    if name == "EXPERIMENT_NAMES":
        return tuple(_records())
    if name in ("EXPERIMENTS", "TABLES"):
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

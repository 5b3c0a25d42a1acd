"""Sweep grids, tasks and seeds: the points of a parameter grid, the tasks they are cut into, each task's seed.

Points are the cartesian product of the grid's value lists (last key
fastest, :func:`grid_points`); a point's runs are cut into chunks of
``chunk_runs`` runs, one :class:`_Task` each; every seed of a sweep comes
from the one sweep seed through :func:`derive_seed` (the layout is described
in :mod:`asyncdp.experiments.sweep`).

Example:
    >>> grid_points(grid_from_strings(["a=1,2"]))
    [{'a': 1}, {'a': 2}]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SweepError
from .summaries import _RESERVED

__all__ = ["derive_seed", "grid_points", "grid_from_strings"]


def derive_seed(seed: int, a: int, b: int) -> int:
    """The scenario seed of task or run ``(a, b)`` of a sweep (see the module docstring).

    Args:
        seed: the sweep seed (a nonnegative integer).
        a, b: the spawn key: ``(point, chunk)`` for the batch engine,
            ``(point, run)`` for the SimPy engine.

    Returns:
        A nonnegative integer below ``2**63``.

    Example:
        >>> derive_seed(0, 1, 2) == derive_seed(0, 1, 2) != derive_seed(0, 2, 1)
        True
    """
    state = np.random.SeedSequence(int(seed), spawn_key=(int(a), int(b))).generate_state(1, dtype=np.uint64)
    return int(state[0]) >> 1


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise SweepError(f"grid parameter names must be Python identifiers, got {name!r}")
    if name in _RESERVED:
        raise SweepError(f"grid parameter name {name!r} clashes with a result column; rename it")
    return name


def grid_points(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    """The parameter points of a grid, in sweep order (point index = list index).

    Args:
        grid: parameter name -> non-empty list of values.

    Returns:
        The cartesian product as dicts, ``itertools.product`` order (last key fastest).

    Raises:
        SweepError: not a mapping, a bad name, a string or non-iterable instead
            of a list of values, or an empty list.

    Example:
        >>> grid_points({"a": [1, 2], "b": ["x", "y"]})
        [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    if not isinstance(grid, Mapping):
        raise SweepError(f"grid must be a mapping name -> list of values, got {type(grid).__name__}")
    names, lists = [], []
    for name, values in grid.items():
        names.append(_check_name(name))
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise SweepError(f"grid parameter {name!r}: expected a list of values, got {values!r}")
        values = list(values)
        if not values:
            raise SweepError(f"grid parameter {name!r} has no values")
        lists.append(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*lists)]


def _parse_value(text: str) -> bool | int | float | str:
    if text.lower() in ("true", "false"):  # the text 'False' would be true in the factory's ``if``
        return text.lower() == "true"
    if "_" in text or not text.isascii():  # Python's int() reads '2024_01' as 202401 and '١٢' as 12: a label
        return text
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def grid_from_strings(items: Iterable[str]) -> dict[str, list[Any]]:
    """Parse ``NAME=V1,V2,...`` strings (the CLI's ``--grid``) into a grid.

    Each value becomes a ``bool`` if it is ``true`` or ``false`` (any case),
    else an ``int`` if it parses as one, else a ``float`` (``1e3``, ``inf``,
    ``nan`` included), else a stripped string. A value with an underscore or
    a character outside ASCII is a string (``2024_01`` is a label, not the
    number Python's ``int`` would make of it).

    Args:
        items: the strings, one parameter each.

    Returns:
        ``{name: [values]}`` in the order given.

    Raises:
        SweepError: no ``=``, a bad or repeated name, or an empty value.

    Example:
        >>> grid_from_strings(["epsilon=0.1,1,10", "c=0.2", "mode=broadcast", "lossy=True,False"])
        {'epsilon': [0.1, 1, 10], 'c': [0.2], 'mode': ['broadcast'], 'lossy': [True, False]}
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise SweepError(f"bad grid entry {item!r}: expected NAME=V1,V2,...")
        _check_name(name)
        if name in grid:
            raise SweepError(f"bad grid entry {item!r}: parameter {name!r} is given twice")
        parts = [v.strip() for v in values.split(",")]
        if any(not v for v in parts):
            raise SweepError(f"bad grid entry {item!r}: empty value (expected NAME=V1,V2,...)")
        grid[name] = [_parse_value(v) for v in parts]
    return grid


@dataclass(frozen=True)
class _Task:
    """Chunk ``chunk`` of point ``point``: global runs ``first .. first + runs - 1``."""

    point: int
    chunk: int
    params: dict[str, Any]
    first: int
    runs: int
    seed: int  # the sweep seed

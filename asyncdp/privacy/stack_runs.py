"""Where each stacked candidate's runs lie: their offsets, the copied schedules and one rule per candidate.

The runs of stacked candidates (``asyncdp.privacy.stacked``) follow one another, candidate ``k`` on runs
``k R .. (k + 1) R - 1`` or on its own first ``size[k]`` runs (:func:`bounds`); :class:`Tiled` is the copied
schedules of those runs and :class:`Blocks` the candidates' own rules, each on its own runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting.schedule_reads import dense_round

__all__ = ["bounds", "Tiled", "Blocks"]


def bounds(size: int | Sequence[int], count: int) -> list[int]:
    """Where each stacked candidate's runs start, and where the last one's end: ``count + 1`` offsets. ``size``:
    every candidate's number of runs, or each one's (the first ``size[k]`` runs of the stacked schedules).

    Example:
        >>> bounds(3, 2), bounds([3, 1, 2], 3)
        ([0, 3, 6], [0, 3, 4, 6])
    """
    if isinstance(size, (int, np.integer)):
        return [k * int(size) for k in range(count + 1)]
    sizes = [int(v) for v in size]
    if len(sizes) != count:
        raise ValueError(f"stacked candidates: {len(sizes)} sizes for {count} candidates")
    out = [0]
    for v in sizes:
        out.append(out[-1] + v)
    return out


def _per_run(values: Any, size: int | Sequence[int], axis: int | None = None) -> np.ndarray:
    """Each candidate's value repeated over its runs (``numpy.repeat`` by ``size`` or by each one's)."""
    return np.repeat(values, size if isinstance(size, (int, np.integer)) else np.asarray(size, dtype=np.int64),
                     axis=axis)


class Tiled:
    """``copies`` copies of a batch of schedules, one after the other (the runs of stacked candidates); with
    ``sizes``, copy ``k`` is the first ``sizes[k]`` runs of the batch (candidates evaluated on fewer runs)."""

    def __init__(self, schedules: Any, copies: int, sizes: Sequence[int] | None = None) -> None:
        self._schedules, self._copies = schedules, copies
        self._sizes = None if sizes is None or all(v == len(schedules) for v in sizes) else [int(v) for v in sizes]
        if self._sizes is not None and (len(self._sizes) != copies or
                                        not all(0 < v <= len(schedules) for v in self._sizes)):
            raise ValueError(f"stacked candidates: sizes {sizes} for {copies} copies of {len(schedules)} runs")
        self._rounds: dict[Any, Any] = {}  # each round's arrays and gather index, for every pass of the replay

    def __len__(self) -> int:
        return len(self._schedules) * self._copies if self._sizes is None else sum(self._sizes)

    def __getitem__(self, runs: slice) -> Tiled:
        if range(len(self))[runs] != range(len(self)):
            raise ValueError("stacked candidates are replayed as one chunk")
        return self

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._rounds.get(t)
        if got is None and self._sizes is not None:  # each copy its own first runs
            w, src = dense_round(self._schedules, t)
            got = self._rounds[t] = (np.concatenate([w[:v] for v in self._sizes]),
                                     np.concatenate([src[:v] for v in self._sizes]))
        if got is None:
            tiled = getattr(self._schedules, "tiled_round", None)  # kept by the schedules for every stack of them
            if tiled is not None:
                got = self._rounds[t] = tiled(t, self._copies)
            else:
                w, src = dense_round(self._schedules, t)
                got = self._rounds[t] = (np.concatenate([w] * self._copies), np.concatenate([src] * self._copies))
        return got

    def shared_round(self, t: int) -> Any:
        """The copied schedules' ``shared_round(t)`` (:meth:`~asyncdp.privacy.constructed.DenseSchedules.shared_round`:
        copies of runs that all have round ``t``'s ``(W, S)`` have it too), ``None`` when they have none."""
        shared = getattr(self._schedules, "shared_round", None)
        return None if shared is None else shared(t)

    def gather_index(self, t: int) -> Any:
        """:func:`accounting.round_gather.gather_index` of round ``t``, from the copied schedules' (kept by
        them when they keep it: :class:`~asyncdp.privacy.constructed.DenseSchedules`)."""
        from accounting.round_gather import gather_index, tiled_gather_index

        key = ("index", t)
        got = self._rounds.get(key)
        if got is None and self._sizes is not None:
            got = self._rounds[key] = gather_index(self.dense_runs(t)[1])
        if got is None:
            one = self._schedules.gather_index(t) if hasattr(self._schedules, "gather_index") else \
                gather_index(dense_round(self._schedules, t)[1])
            got = self._rounds[key] = tiled_gather_index(one, self._copies)
        return got


class Blocks:
    """Several :class:`~accounting.replay_inputs.ChannelRule` s, rule ``k`` on runs ``k size .. (k + 1) size - 1``.

    Each rule sees exactly its own runs, as in a replay of its own; the state is the list of the rules' states.
    """

    def __init__(self, rules: Sequence[Any], size: int | Sequence[int]) -> None:
        self.rules, self.size = list(rules), size
        self._bounds = bounds(size, len(self.rules))

    def initial_state(self, runs: int) -> list[Any]:
        if runs != self._bounds[-1]:
            raise ValueError("stacked candidates are replayed as one chunk")
        b = self._bounds
        return [r.initial_state(b[k + 1] - b[k]) for k, r in enumerate(self.rules)]

    def message_means(self, state: list[Any], t: int) -> dict[str, np.ndarray]:
        parts = [r.message_means(s, t) for r, s in zip(self.rules, state)]
        return {c: np.concatenate([np.asarray(p[c], dtype=float) for p in parts]) for c in parts[0]}

    def next_state(self, state: list[Any], mixed: Any, t: int) -> list[Any]:
        b = self._bounds
        return [r.next_state(s, {c: m[b[k]:b[k + 1]] for c, m in mixed.items()}, t)
                for k, (r, s) in enumerate(zip(self.rules, state))]

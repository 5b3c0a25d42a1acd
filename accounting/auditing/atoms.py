"""The atoms score: naive-Bayes log-odds of the output values that repeat in the training rows.

Why. A mechanism whose output law has an atom inside an otherwise continuous
law, say one that skips its noise on a small share of draws and then releases
the data itself, has ``delta(epsilon) >=`` that share at every ``epsilon``:
the atom at the data's value is an event of the one input only. The learned
scores of :mod:`.classifier` are smooth in the output, so no threshold on them
isolates one value, and exact events (:mod:`.events`) are chosen only when
every output is discrete. This score gives such a value its own weight.

What. For each output coordinate ``j``, every value that occurs at least twice
among the training rows of both sides together (an atom; a continuous law
repeats a float with negligible probability) gets the weight
``w_j(v) = log((k_j(v) + 1) / (n + 2)) - log((k'_j(v) + 1) / (n' + 2))`` from its
counts ``k`` and ``k'`` in the ``n`` and ``n'`` training rows of ``P`` and ``P'``;
a row's score is the sum of its values' weights, 0 for a value that is no atom.
A value about as frequent on both sides (``|w| <`` :data:`MIN_WEIGHT`, e.g. a
noise-free constant) carries no evidence and is left out.

Only outputs of at most :data:`MAX_COLUMNS` numbers are scored (a mechanism's
output under ``asyncdp privacy audit``): finding the repeated values sorts
every column of the training rows, some 55 ms for 6000 numbers per row. The
privacy check's transcripts, of many more numbers, compare every release with
the draw the engine handed it instead (a draw replaced by 0 is a mismatch).

Soundness. The score is a fixed function of the outputs, fitted on the
training rows only; the threshold event on it is chosen on the selection rows
(:func:`~accounting.auditing.samples.choose_threshold` keeps, per order of the
pair, the candidate score that projects the better bound) and certified on the
held-out rows: any such event is a valid witness.

Example:
    >>> rng = np.random.default_rng(0)
    >>> x = np.where(rng.random((2000, 1)) < 0.05, 0.0, rng.laplace(0, 1, (2000, 1)))
    >>> xp = np.where(rng.random((2000, 1)) < 0.05, 1.0, 1.0 + rng.laplace(0, 1, (2000, 1)))
    >>> s = fit_atom_score(x, xp)
    >>> float(s(np.array([[0.0], [1.0], [0.5]]))[0]) > 3.0, float(s(np.array([[0.5]]))[0])
    (True, 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_COLUMNS", "MIN_WEIGHT", "AtomScore", "fit_atom_score"]

MAX_COLUMNS = 64
"""Outputs of more numbers per row get no atoms score (the module docstring: its cost)."""

MIN_WEIGHT = 0.1
"""Atoms whose log-odds weight is smaller in magnitude are left out (about as frequent under both inputs)."""


@dataclass(frozen=True)
class AtomScore:
    """A fitted atoms score: larger values mean "more likely under ``P`` than under ``P'``".

    Attributes:
        columns: the output coordinates that have atoms, ``(m,)``.
        values: per such coordinate, its atoms (sorted).
        weights: per such coordinate, the atoms' weights.
    """

    columns: np.ndarray
    values: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``x`` (``(n, d)``), shape ``(n,)``."""
        arr = np.asarray(x, dtype=float).reshape(np.shape(x)[0], -1)
        out = np.zeros(arr.shape[0])
        for j, vals, w in zip(self.columns, self.values, self.weights):
            col = arr[:, j]
            pos = np.clip(np.searchsorted(vals, col), 0, vals.size - 1)
            out += np.where(vals[pos] == col, w[pos], 0.0)
        return out


def fit_atom_score(x: np.ndarray, x_prime: np.ndarray) -> AtomScore | None:
    """The atoms score of the training rows ``x`` (under ``P``) and ``x_prime`` (``P'``), both ``(n, d)``; ``None``
    when no coordinate has an atom of weight at least :data:`MIN_WEIGHT`, or the rows hold more than
    :data:`MAX_COLUMNS` numbers (module docstring)."""
    a = np.asarray(x, dtype=float).reshape(np.shape(x)[0], -1)
    if a.shape[1] > MAX_COLUMNS:
        return None
    b = np.asarray(x_prime, dtype=float).reshape(np.shape(x_prime)[0], -1)
    both = np.sort(np.concatenate([a, b]), axis=0)
    repeated = np.flatnonzero((both[1:] == both[:-1]).any(axis=0))  # NaN never equals itself: never an atom
    columns, values, weights = [], [], []
    for j in repeated:
        vals, counts = np.unique(both[:, j], return_counts=True)
        vals = vals[(counts >= 2) & ~np.isnan(vals)]  # (unique merges NaNs, which equal nothing)
        ka = np.searchsorted(np.sort(a[:, j]), vals, side="right") - np.searchsorted(np.sort(a[:, j]), vals)
        kb = np.searchsorted(np.sort(b[:, j]), vals, side="right") - np.searchsorted(np.sort(b[:, j]), vals)
        w = np.log((ka + 1) / (a.shape[0] + 2)) - np.log((kb + 1) / (b.shape[0] + 2))
        keep = np.abs(w) >= MIN_WEIGHT
        if keep.any():
            columns.append(int(j))
            values.append(vals[keep])
            weights.append(w[keep])
    if not columns:
        return None
    return AtomScore(np.asarray(columns, dtype=np.intp), tuple(values), tuple(weights))

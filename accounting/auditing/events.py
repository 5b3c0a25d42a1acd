"""Exact event search for small discrete or categorical outputs (in the spirit of StatDP, Ding et al., CCS 2018).

When an output takes few distinct values ("atoms": a category, a bit vector,
an index), no score needs to be learned: every event is a set of atoms. On
the selection samples the atoms are ranked by their estimated ratio
``P[atom] / P'[atom]`` (with a half-count smoothing), and the candidate events
are the prefixes of that ranking, the Neyman–Pearson sets of the estimated
ratio. The prefix with the best projected certified bound
(:func:`~accounting.auditing.certify.projected_epsilon`) is kept and then
certified on held-out samples like any other event. The reverse order uses the
reversed ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .certify import projected_epsilons

__all__ = ["AtomEvent", "atoms", "distinct_rows", "choose_atom_event"]

MAX_LISTED = 8
"""Atoms spelled out in an event's description."""

MAX_PREFIXES = 256
"""With more atoms than this, only a geometric grid of prefix lengths is tried."""


def _row_keys(x: np.ndarray) -> np.ndarray:
    """One hashable/sortable key per row of a 2-D array (bytes for fixed-width dtypes, repr for objects)."""
    if x.dtype.kind == "O":
        return np.array([repr(tuple(row)) for row in x.tolist()])
    c = np.ascontiguousarray(x)
    return c.view(np.dtype((np.void, c.dtype.itemsize * c.shape[1]))).ravel()


def distinct_rows(x: np.ndarray) -> int:
    """Number of distinct rows of a 2-D array.

    Example:
        >>> distinct_rows(np.array([[0, 1], [0, 1], [1, 1]]))
        2
    """
    return int(np.unique(_row_keys(x)).size)


def atoms(x: np.ndarray, x_prime: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Integer atom ids of the rows of ``x`` and ``x_prime`` (both ``(n, d)``), and a label per atom.

    The ids depend only on the values (not on which array a row came from).

    Example:
        >>> a, b, labels = atoms(np.array([[0], [1], [1]]), np.array([[1], [2]]))
        >>> a.tolist(), b.tolist(), labels
        ([0, 1, 1], [1, 2], ['0', '1', '2'])
    """
    both = np.concatenate([x, x_prime])
    keys = _row_keys(both)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    labels = [_label(both[i]) for i in first]
    return inverse[: x.shape[0]], inverse[x.shape[0]:], labels


def _label(row: np.ndarray) -> str:
    vals = row.tolist()
    return str(vals[0]) if len(vals) == 1 else str(tuple(vals))


@dataclass(frozen=True)
class AtomEvent:
    """The event "the output is one of ``members``" (atom ids), with their labels for display."""

    members: tuple[int, ...]
    labels: tuple[str, ...]

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Membership of each atom id."""
        return np.isin(ids, np.asarray(self.members, dtype=int))

    def describe(self) -> str:
        """e.g. ``output in {1, 3}``."""
        shown = ", ".join(self.labels[:MAX_LISTED])
        more = f", ... ({len(self.labels)} values)" if len(self.labels) > MAX_LISTED else ""
        return f"output in {{{shown}{more}}}"


def choose_atom_event(ids: np.ndarray, ids_prime: np.ndarray, labels: list[str], *, n_cert: int, n_cert_prime: int,
                      epsilon: float, delta: float, alpha: float) -> tuple[AtomEvent, float]:
    """The prefix of the ratio ranking with the best projected certified bound on selection samples.

    Args:
        ids, ids_prime: atom ids of the selection samples of the numerator ``P`` and denominator ``P'``.
        labels: label of each atom id.
        n_cert, n_cert_prime: certification sample sizes.
        epsilon, delta: the claim.
        alpha: level of each one-sided bound.

    Returns:
        ``(event, projected epsilon bound)``.

    Example:
        >>> ev, proj = choose_atom_event(np.array([0] * 75 + [1] * 25), np.array([0] * 25 + [1] * 75), ["a", "b"],
        ...                              n_cert=100, n_cert_prime=100, epsilon=0.5, delta=0.0, alpha=0.0125)
        >>> ev.describe(), proj > 0
        ('output in {a}', True)
    """
    k_atoms = len(labels)
    c = np.bincount(ids, minlength=k_atoms).astype(float)
    cp = np.bincount(ids_prime, minlength=k_atoms).astype(float)
    n, m = max(1, ids.size), max(1, ids_prime.size)
    ratio = ((c + 0.5) / n) / ((cp + 0.5) / m)
    order = np.argsort(-ratio, kind="stable")
    cum, cum_p = np.cumsum(c[order]) / n, np.cumsum(cp[order]) / m
    best = (-math.inf, -math.inf, 1)
    prefixes = range(1, k_atoms + 1) if k_atoms <= MAX_PREFIXES else np.unique(
        np.geomspace(1, k_atoms, MAX_PREFIXES).astype(int))
    ends = np.asarray(prefixes, dtype=np.int64) - 1
    projected = projected_epsilons(cum[ends], cum_p[ends], n_cert, n_cert_prime, epsilon=epsilon, delta=delta,
                                   alpha=alpha)
    for j, (eps_proj, margin) in zip(prefixes, projected):
        if (eps_proj, margin) > best[:2]:
            best = (eps_proj, margin, j)
    chosen = [int(i) for i in order[: best[2]]]
    return AtomEvent(tuple(chosen), tuple(labels[i] for i in chosen)), best[0]

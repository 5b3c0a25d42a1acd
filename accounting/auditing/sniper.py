"""The threshold-randomized event on a score (the idea of DP-Sniper, Bichsel et al., S&P 2021).

For a score ``s`` where larger means "more likely under the numerator ``P``",
the events ``S(t, q) = {s > t} + {s == t with probability q}`` are, by the
Neyman–Pearson lemma, the best tests of ``P`` against ``P'`` *if* ``s`` is a
monotone function of the likelihood ratio; randomizing on the boundary lets
the event reach any target probability under ``P'`` even when the score has
atoms (discrete outputs, "no answer" flags). DP-Sniper fixes the target
``P'[S] = c`` for one small ``c``; here a grid of targets ``c`` (``0`` and a
geometric grid up to 1) is tried on the *selection* samples and the event
whose projected certified bound (:func:`~accounting.auditing.certify.projected_epsilons`,
at the certification sample sizes) is largest is kept. Membership of a
sample on the boundary is decided by a seeded uniform draw, so the
certification counts are still binomial.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .certify import projected_epsilons

__all__ = ["ThresholdEvent", "choose_threshold_event"]

LEVELS = 48
"""Number of geometric target probabilities under ``P'`` tried (plus the target 0)."""


@dataclass(frozen=True)
class ThresholdEvent:
    """``{direction * s > direction * t}``, plus ``{s == t}`` with probability ``tie_probability``.

    Attributes:
        threshold: ``t``.
        tie_probability: ``q`` in ``[0, 1]``.
        direction: ``+1`` (large scores) or ``-1`` (small scores).
        column: which column of a multi-score key the event tests (0 for a single score).
        name: the score's name, for :meth:`describe`.
    """

    threshold: float
    tie_probability: float
    direction: int
    column: int = 0
    name: str = "score"

    def contains(self, scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Membership of each score (boundary ties decided by ``rng``).

        Example:
            >>> ev = ThresholdEvent(0.5, 0.0, 1)
            >>> ev.contains(np.array([0.2, 0.5, 0.9]), np.random.default_rng(0)).tolist()
            [False, False, True]
        """
        arr = np.asarray(scores, dtype=float)
        if arr.ndim == 2:  # one column per candidate score: this event's
            arr = arr[:, self.column]
        s = self.direction * arr
        t = self.direction * self.threshold
        inside = s > t
        ties = s == t
        if self.tie_probability > 0 and ties.any():
            inside = inside | (ties & (rng.random(s.shape[0]) < self.tie_probability))
        return inside

    def describe(self) -> str:
        """Human-readable form, e.g. ``score > 1.25 (ties with probability 0.3)``."""
        op = ">" if self.direction > 0 else "<"
        tie = f" (ties with probability {self.tie_probability:.3g})" if self.tie_probability > 0 else ""
        return f"{self.name} {op} {self.threshold:.6g}{tie}"


def _counts(sorted_s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numbers of entries ``> t`` and ``== t`` in an ascending array, for each ``t``."""
    right = np.searchsorted(sorted_s, t, side="right")
    left = np.searchsorted(sorted_s, t, side="left")
    return sorted_s.size - right, right - left


def choose_threshold_event(scores: np.ndarray, scores_prime: np.ndarray, *, direction: int, n_cert: int,
                           n_cert_prime: int, epsilon: float, delta: float, alpha: float) -> tuple[ThresholdEvent, float]:
    """The randomized threshold event with the best projected certified bound on selection samples.

    Args:
        scores, scores_prime: the score on selection samples of the numerator ``P`` and denominator ``P'``.
        direction: ``+1`` if large scores favour ``P``, ``-1`` if small ones do.
        n_cert, n_cert_prime: certification sample sizes (for the projected bound).
        epsilon, delta: the claim.
        alpha: level of each one-sided bound.

    Returns:
        ``(event, projected epsilon bound)``.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> ev, proj = choose_threshold_event(rng.laplace(1, 1, 4000), rng.laplace(0, 1, 4000), direction=1,
        ...                                   n_cert=4000, n_cert_prime=4000, epsilon=1.0, delta=0.0, alpha=0.0125)
        >>> ev.direction, 0.3 < proj < 1.0
        (1, True)
    """
    s = np.sort(direction * np.asarray(scores, dtype=float))
    sp = np.sort(direction * np.asarray(scores_prime, dtype=float))
    n, m = s.size, sp.size
    targets = _targets(m)
    # every target's threshold and tie probability at once (the same arithmetic, elementwise)
    want = targets * m  # expected number of P' selection samples in the event
    idx = np.clip(m - 1 - np.floor(want).astype(np.int64), 0, m - 1)
    t = np.where(targets > 0, sp[idx], sp[-1])
    gt_p, eq_p = _counts(sp, t)
    # randomize only on a real atom of the score (several samples at t); a continuous score needs none
    q = np.where((targets == 0) | (eq_p < 2), 0.0, np.clip((want - gt_p) / eq_p, 0.0, 1.0))  # eq_p >= 1: t is in sp
    seen: set[tuple[float, float]] = set()
    keep = []
    for j, key in enumerate((tj, round(qj, 6)) for tj, qj in zip(t.tolist(), q.tolist())):
        if key not in seen:
            seen.add(key)
            keep.append(j)
    t, q, gt_p, eq_p = t[keep], q[keep], gt_p[keep], eq_p[keep]
    gt, eq = _counts(s, t)
    projected = projected_epsilons((gt + q * eq) / n, (gt_p + q * eq_p) / m, n_cert, n_cert_prime,
                                   epsilon=epsilon, delta=delta, alpha=alpha)
    best, best_key = -1, (-math.inf, -math.inf)  # -1: no candidate beats (-inf, -inf)
    for j, key in enumerate(projected):
        if key > best_key:
            best, best_key = j, key
    if best < 0:
        return ThresholdEvent(float(direction * sp[-1]), 0.0, direction), -math.inf
    return ThresholdEvent(float(direction * t[best]), float(q[best]), direction), best_key[0]


@functools.lru_cache(maxsize=64)
def _targets(m: int) -> np.ndarray:
    """The target probabilities under ``P'`` for ``m`` selection samples: ``0`` and the geometric grid of
    :data:`LEVELS` values from ``1/m`` (the last, 1, left out); made once per ``m``, read-only."""
    targets = np.concatenate([[0.0], np.geomspace(1.0 / m, 1.0, LEVELS)[:-1]])
    targets.flags.writeable = False
    return targets

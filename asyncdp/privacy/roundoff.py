"""The floating-point round-off a correct rule's releases and replayed losses may carry.

The engine and the accountant's replay compute a noise-free value by the same steps, up to the order of a
combination's sums: ``_gap_allowance`` bounds the difference in spacings of the released values,
``_roundoff_floor`` turns it into a tolerance per round, ``release_spacing`` is the resolution of the released
numbers (float32 or float64) and ``_roundoff_budget`` the most round-off can add to a run's replayed loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .behavior import declared_noise
from .context import CheckContext

__all__ = ["release_spacing"]


def _gap_allowance(t: int, n_agents: int) -> float:
    """The round-off a correct rule's noise-free release of round ``t`` may show against the replay, in spacings
    of the channel's magnitude (:func:`accounting.replay_densities.noise_free_gap`).

    The engine and the replay compute a noise-free value by the same message and update steps on the same
    combinations; only the order of a combination's sum may differ. Two orders of a sum of at most ``N`` terms
    ``W_ij y_j`` (weights in ``[0, 1]`` summing to at most 1, ``|y_j| <= m``) differ by at most
    ``2 (N - 1) 2**-53 m < 2 N spacing(m)`` (Higham, Accuracy and Stability of Numerical Algorithms, 2002,
    eq. (3.5)); through a non-expansive recursion (averaging, push-sum weights) the differences of rounds
    ``1..t`` add up: ``2 t N`` spacings. Measured on every example: DPSDA-PS's weights 0, Showkatbakhsh's
    Stage II at most 0.01 of it (e.g. 256 spacings of a released ``2e-5``, far below one of the run's ``0.7``).

    Example:
        >>> _gap_allowance(3, 4)
        24.0
    """
    return 2.0 * t * n_agents


def _roundoff_floor(messages: np.ndarray, state_magnitude: float) -> np.ndarray:
    """Per round, the most round-off a correct rule's residual may carry beyond a few spacings of its own value,
    ``(T,)``: :func:`_gap_allowance` spacings of the largest of the channel's released values so far (over the
    runs; NaN read as 0, an infinity as the largest float) and ``state_magnitude``.

    A residual is a released value minus the noise-free value the replay recomputes by the rule's own steps on
    the released messages; the two differ only in the order of a combination's sums, through the recursion
    rounds ``1..t``: the bound of the noise-free releases (``conformance._replay_doubts``), in spacings of the values
    the means are computed from (consensus cancels: a small release may come from large terms). Measured on
    every shipped privacy example under lockstep, deadline and asynchronous timing (with and without a
    staleness limit, lossy links): at most 3.1 spacings of that magnitude (Wang and Başar's 400 rounds), far below
    the bound (2 t N spacings in round t, 2 N already in round 1).

    Example:
        >>> m = np.array([[[[1.0]], [[0.5]], [[np.nan]]]])  # runs, rounds, agents, coordinates
        >>> bool(np.all(_roundoff_floor(m, 0.0) == np.array([2.0, 4.0, 6.0]) * np.spacing(1.0)))
        True
    """
    peak = np.maximum.accumulate(_round_magnitude(messages)) if np.size(messages) else np.zeros(0)
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.nan_to_num(np.maximum(peak, state_magnitude)))
    n_agents = messages.shape[2] if messages.ndim > 2 else 1
    return np.array([_gap_allowance(t, n_agents) for t in range(1, len(peak) + 1)]) * spacing


def _round_magnitude(messages: np.ndarray) -> np.ndarray:
    """The largest absolute released value of each round, ``(T,)`` (0 for a round with nothing released).

    ``fmax`` skips NaN (nothing released) unless a round has nothing else: that round's NaN becomes 0. The
    largest and smallest value over the runs first (run after run, whole rounds at a time; ``max |x|`` is the
    larger of ``|max x|`` and ``|min x|``, exactly, without an array of every ``|x|``), then within each round.

    Example:
        >>> _round_magnitude(np.array([[[[1.0, -3.0]], [[np.nan, np.nan]]], [[[2.0, np.nan]], [[np.nan, np.nan]]]]))
        array([3., 0.])
    """
    m = np.asarray(messages, dtype=float)
    m = m.reshape(m.shape[0], m.shape[1], -1)
    top, bottom = np.fmax.reduce(m, axis=0), np.fmin.reduce(m, axis=0)
    a = np.fmax(np.abs(top, out=top), np.abs(bottom, out=bottom), out=top)
    return np.nan_to_num(np.fmax.reduce(a, axis=1), nan=0.0)


def release_spacing(messages: np.ndarray, magnitude: Any) -> np.ndarray:
    """The floating-point spacing of the released values at ``magnitude``: float32's when every finite release
    is a float32 number (a rule that releases float32 rounds each release to that resolution), else float64's.

    Example:
        >>> m = np.array([[[[0.5, 1.25]]]])
        >>> bool(release_spacing(m, 1.0) == np.spacing(np.float32(1.0)))
        True
    """
    mag = np.asarray(magnitude, dtype=float)
    return np.spacing(mag.astype(np.float32)).astype(np.float64) if _all_float32(messages) else np.spacing(mag)


_FLOAT32_HEAD = 1024
"""Values :func:`_all_float32` reads first: one finite float64 number among them settles the answer."""


def _all_float32(messages: Any) -> bool:
    """Whether ``messages`` has a finite value and every finite value is a float32 number.

    The first :data:`_FLOAT32_HEAD` values are read first: a finite value among them that float32 does not hold
    (the usual float64 release) answers ``False`` without reading the rest, as the whole comparison would.

    Example:
        >>> _all_float32(np.array([0.5, np.nan])), _all_float32(np.array([np.nan, 0.1])), _all_float32(np.array([np.nan]))
        (True, False, False)
    """
    m = np.asarray(messages, dtype=float).reshape(-1)
    with np.errstate(over="ignore"):
        for part in (m[:_FLOAT32_HEAD], m):
            finite = part[np.isfinite(part)]
            if not np.all(finite.astype(np.float32).astype(np.float64) == finite):
                return False
    return bool(finite.size)


def _roundoff_budget(ctx: CheckContext, runs: Any) -> np.ndarray:
    """Per round, the most floating-point round-off can add to a run's replayed loss, ``(T,)``.

    The loss of a round sums ``(|y - mu'| - |y - mu|) / b`` (Laplace) or the
    Gaussian analogue over the changed agent's coordinates (every agent's
    under round adjacency; the others' terms are exactly 0: both replays
    compute their means by the same operations). Each residual carries at
    most a few floating-point spacings of the values its mean is computed from,
    the released value or the state (:attr:`~asyncdp.privacy.context.CheckContext.state_magnitude`:
    a rule releasing offsets from states near ``1e8`` rounds its means at 1.5e-8), so a round
    can gain at most ``4 k spacing(max(max |y|, max |x|)) / b`` (Laplace; the Gaussian term
    is bounded likewise with the largest residual). It is negligible unless
    the noise scale nears that resolution. The spacing is
    float32's for a rule that releases float32 numbers (:func:`release_spacing`):
    its means are rounded to that resolution.
    """
    horizon = ctx.pair.scenario.horizon if ctx.pair is not None else 0
    budget = np.zeros(horizon)
    for name, ch in declared_noise(ctx.algorithm, horizon).items():
        if ch.mechanism is None:
            continue
        msgs = runs.messages[name]
        mag = _round_magnitude(msgs)
        coords = int(np.prod(msgs.shape[3:])) * (msgs.shape[2] if ctx.changed_agent is None else 1)
        scales = np.where(ch.scales > 0, ch.scales, np.inf)
        err = 4.0 * release_spacing(msgs, np.maximum(mag, ctx.state_magnitude))
        if ch.mechanism == "laplace":
            budget += coords * err / scales
        else:  # |(y - mu')^2 - (y - mu)^2| changes by at most 2 (|y - mu| + |y - mu'|) err; |y - mu| <= 2 max|y|
            budget += coords * 8.0 * mag * err / (2.0 * scales**2)
    return budget

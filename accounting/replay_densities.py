"""The noise densities of a replay's releases: the log density of a noisy release (one round, or consecutive
rounds at once, computed by the same operations), the point-mass ratio of a noise-free one, and how far a
noise-free release is from its replayed value (:func:`noise_free_gap`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import AccountingError
from .replay import noise_free_matches
from .replay_inputs import ChannelNoise

__all__ = ["noise_free_gap"]


def _nan_to_num(a: np.ndarray) -> np.ndarray:
    """``numpy.nan_to_num(a)`` of a float array (NaN -> 0, +-inf -> the largest finite magnitude), in fewer steps
    for the usual arrays without infinities (the replay calls it several times per round)."""
    out = np.where(np.isnan(a), 0.0, a)
    return out if np.isfinite(out).all() else np.nan_to_num(out)


def _log_density(noise: np.ndarray, mechanism: str, scale: float) -> np.ndarray:
    """Sum over every axis but the first of the noise log-density, constants dropped (they cancel in ratios)."""
    axes = tuple(range(1, noise.ndim))
    if mechanism == "laplace":
        return -np.abs(noise).sum(axis=axes) / scale
    return -(noise**2).sum(axis=axes) / (2.0 * scale**2)


def _log_density_rounds(noise: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """:func:`_log_density` of every round at once: ``noise`` ``(R, T', ...)``, ``scales`` the ``T'`` rounds'
    scales; ``(R, T')`` (each round's divisor computed as :func:`_log_density` computes it, in Python floats)."""
    return _log_density_sums(_round_sums(_terms(noise, mechanism)), mechanism, scales)


def _terms(noise: np.ndarray, mechanism: str) -> np.ndarray:
    """Each entry's term of the noise log density, as a new array: ``|noise|`` (Laplace) or ``noise ** 2``."""
    return np.abs(noise) if mechanism == "laplace" else noise**2


def _round_sums(terms: np.ndarray) -> np.ndarray:
    """Each run's and round's sum of ``terms`` ``(R, T', ...)``, ``(R, T')``."""
    return terms.sum(axis=tuple(range(2, terms.ndim)))


def _log_density_sums(sums: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """:func:`_log_density_rounds` from each run's and round's sum of ``|noise|`` (Laplace) or ``noise ** 2``."""
    if mechanism == "laplace":
        return -sums / np.array([float(s) for s in scales])
    return -sums / np.array([2.0 * s**2 for s in scales])


def _point_mass_ratio(y: np.ndarray, mu: np.ndarray, mu_p: np.ndarray, observed: np.ndarray, t: int) -> np.ndarray:
    """A noise-free release's log-density ratio per run: 0, ``+inf`` or ``-inf`` (see :mod:`accounting.replay`).

    Only observed entries are compared, by :func:`accounting.replay.noise_free_matches`.
    """
    in_p, in_q = noise_free_matches(y, mu, mu_p, observed)
    if not (in_p | in_q).all():
        r = int(np.flatnonzero(~(in_p | in_q))[0])
        raise AccountingError(f"round {t} is noise-free but run {r}'s messages equal neither problem's message mean "
                              "(probability 0 under both): wrong rule, declaration or transcript?")
    return np.where(in_p & in_q, 0.0, np.where(in_p, np.inf, -np.inf))


def noise_free_gap(y: np.ndarray, mu: np.ndarray, observed: np.ndarray, peak: np.ndarray) -> tuple[float, int, int]:
    """The largest gap between a round's noise-free releases and their replayed values, in floating-point spacings
    of the channel's magnitude in the run so far.

    The round-off of a combination ``sum_j W_ij y_j`` (weights in ``[0, 1]`` summing to at most 1) is relative
    to the terms combined, not to its result (consensus cancels: Showkatbakhsh's Stage II releases ``2e-5``
    after rounds of values near 1), so each coordinate's gap ``|y - mu|`` is counted in spacings of ``peak``,
    the largest ``|y|``, ``|mu|`` the run's noise-free releases of the channel reached so far (``inf`` where
    either is not finite). A by-product of the comparison the replay makes anyway.

    Args:
        y: the round's releases ``(R, N, ...)`` (NaN where nothing was observed); ``mu``: the replayed
            noise-free values, broadcastable to ``y``; ``observed``: where ``y`` was released.
        peak: ``(R,)``, each run's magnitude before this round, updated in place.

    Returns:
        ``(gap, run, agent)`` of the largest gap (``(0.0, 0, 0)`` when nothing was observed).

    Example:
        >>> y = np.array([[[1.0], [1.0 + 1e-11]]])
        >>> g, r, a = noise_free_gap(y, np.ones((1, 2, 1)), np.ones(y.shape, dtype=bool), np.zeros(1))
        >>> round(g), r, a
        (45036, 0, 1)
    """
    runs = y.shape[0]
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(observed, np.nan_to_num(np.abs(y - mu), nan=np.inf), 0.0)
        size = np.where(observed, np.nan_to_num(np.maximum(np.abs(y), np.abs(mu)), nan=np.inf), 0.0)
        if size.size:
            np.maximum(peak, size.reshape(runs, -1).max(axis=1), out=peak)
        gap = diff / np.spacing(peak).reshape((runs,) + (1,) * (diff.ndim - 1))
    gap = np.nan_to_num(gap, nan=np.inf)
    if gap.size == 0:
        return 0.0, 0, 0
    where = np.unravel_index(int(np.argmax(gap)), gap.shape)
    return float(gap[where]), int(where[0]), int(where[1])


def _deferred_densities(y: np.ndarray, resid: np.ndarray, resid_p: np.ndarray, ch: ChannelNoise,
                        scales: list[float], start: int, contributions: np.ndarray) -> None:
    """The density ratios of one channel's noisy releases in rounds ``start .. T``, every round at once, added to
    ``contributions``.

    ``resid`` (``resid_p``) holds each noisy round's ``y - mu_P`` (``y - mu_P'``), ``y`` the transcript. Every
    operation is the one the round-by-round replay applies to round ``t`` (the log densities summed over each
    release's entries, NaN entries: nothing observed), applied to consecutive rounds at once: the same numbers.
    """
    assert ch.mechanism is not None
    picked = [t - 1 for t in range(start, len(scales) + 1) if scales[t - 1] > 0]
    spans: list[list[int]] = []  # the noisy rounds as runs of consecutive rounds: each is a slice (views)
    for k in picked:
        if spans and spans[-1][1] == k:
            spans[-1][1] = k + 1
        else:
            spans.append([k, k + 1])
    for first, stop in spans:
        sel = slice(first, stop)
        s = scales[first:stop]
        # under P': the terms of y - mu_P' with 0 where nothing was observed (the terms of those entries set to
        # 0, the term of a 0 entry, rather than the entries: one array fewer)
        terms_p = _terms(resid_p[:, sel], ch.mechanism)
        np.copyto(terms_p, 0.0, where=np.isnan(y[:, sel]))
        contributions[:, sel] += (_log_density_observed(resid[:, sel], ch.mechanism, s)
                                  - _log_density_sums(_round_sums(terms_p), ch.mechanism, s))


def _log_density_observed(resid: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """``_log_density_rounds(_nan_to_num(resid), mechanism, scales)`` in fewer passes over ``resid``.

    Each entry's term (``|r|`` or ``r ** 2``) is taken first and a NaN term set to 0 (``fmax``), which is the
    term of ``nan_to_num``'s 0; a finite entry's term is its own either way. An infinite entry (whose
    ``nan_to_num`` is the largest float) makes its run's sum infinite, and so does a sum that overflows: then
    the rounds are computed as :func:`_nan_to_num` and :func:`_log_density_rounds` compute them.
    """
    terms = _terms(resid, mechanism)
    np.fmax(terms, 0.0, out=terms)
    sums = _round_sums(terms)
    if not np.isfinite(sums).all():
        return _log_density_rounds(_nan_to_num(resid), mechanism, scales)
    return _log_density_sums(sums, mechanism, scales)

"""Noise conformance: do the released values carry the noise the algorithm declares?

The residuals of a release are the released values minus their noise-free
values, which the accountant recomputes itself (by replay,
:mod:`accounting.scheduled_replay`). Under the declaration, residual/scale is
i.i.d. standard Laplace (or standard normal) across runs, agents and
coordinates. :func:`noise_conformance` tests that with Kolmogorov–Smirnov
statistics in three families:

* per ``(channel, round, agent)``: every run's residuals of that release;
* per ``(channel, round)``: pooled over agents;
* per ``(channel, agent)``: pooled over rounds (standardized by each round's scale).

Each group gets two tests: a two-sided test of residual/scale against the
declared standard distribution (does the noise look as declared at all?)
and a one-sided test of ``|residual|/scale`` against the declared
distribution of ``|noise|`` (``alternative="greater"``: is the released
noise's magnitude *stochastically smaller* somewhere, i.e. is any part of
it, the tails included, concentrated closer to the noise-free value than
declared?). Each p-value is the Dvoretzky–Kiefer–Wolfowitz–Massart bound,
never below the exact one, and is compared with ``alpha / m`` (Bonferroni
over all ``m`` tests), so under the declaration the probability that any
test rejects is at most ``alpha`` (the family-wise error rate), whatever the
dependence between tests.

* A rejected one-sided test is **under-noised**: part of the released noise
  is smaller than declared (less noise, or lighter tails, e.g. Gaussian noise
  where Laplace noise is declared), so the release leaks more than the claim
  accounts for. This is a witness against the claim.
* A rejected two-sided test whose one-sided test is not rejected is a
  **mismatch** (typically over-noised: more noise of the same family only
  lowers the loss). It is not a witness, but replay with the declared scale
  is then not exact; it is reported, and the bounds are not trusted.

Each test also reports the scale estimated from its residuals (Laplace: the
mean absolute residual; Gaussian: the root mean square), as a ratio to the
declared scale.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ok = {"y": rng.laplace(0, 2.0, size=(400, 3, 2, 1))}
    >>> noise_conformance(ok, {"y": ("laplace", np.full(3, 2.0))}).violation
    False
    >>> low = {"y": rng.laplace(0, 1.0, size=(400, 3, 2, 1))}
    >>> r = noise_conformance(low, {"y": ("laplace", np.full(3, 2.0))})
    >>> r.violation, r.witness["declared_scale"], round(r.witness["estimated_scale"], 1)
    (True, 2.0, 0.9)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topology.validation import check_integer, check_open_unit

from .errors import PrivacyParameterError, UnknownMechanismError

__all__ = ["ConformanceTest", "ConformanceReport", "noise_conformance", "RESOLUTION_FACTOR"]

RESOLUTION_FACTOR = 1e4
"""A round is tested only if its scale is at least this many floating-point spacings of its released values:
the round-off of a residual then moves the tested distribution by at most about 1e-4, far below what a KS test
on up to 10^6 residuals resolves."""


@dataclass(frozen=True)
class ConformanceTest:
    """One Kolmogorov–Smirnov test of residual/scale against the declared standard distribution.

    Attributes:
        channel: the channel tested.
        round: 1-based round, or ``None`` when pooled over rounds.
        agent: the sending agent, or ``None`` when pooled over agents.
        samples: residuals tested.
        declared_scale: the declared scale (``None`` when pooled over rounds of different scales).
        scale_ratio: estimated scale / declared scale (1 under the declaration).
        statistic: the two-sided KS statistic.
        p_value: its p-value (unadjusted).
        p_under: the one-sided p-value of ``|residual|`` being stochastically smaller than declared.
    """

    channel: str
    round: int | None
    agent: int | None
    samples: int
    declared_scale: float | None
    scale_ratio: float
    statistic: float
    p_value: float
    p_under: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ConformanceReport:
    """Outcome of :func:`noise_conformance`.

    Attributes:
        tests: number of tests ``m``.
        alpha: the family-wise error rate (``1 - confidence``).
        threshold: ``alpha / m``; a p-value below it rejects.
        rejected: every group with a rejected test, smallest p-value first.
        violation: some group is under-noised (see the module docstring).
        witness: an under-noised test as a dict (the one with the smallest p-value among those naming
            both round and agent, if any is rejected; else the pooled ones), or ``None``.
        over_noised: groups whose two-sided test rejects but not the one-sided one (a mismatch, not a witness).
        min_scale_ratio: the smallest estimated/declared scale ratio over the per-release tests.
        unresolved: ``(channel, round)`` not tested because the noise is below the floating-point
            resolution of the released values (see ``magnitude`` of :func:`noise_conformance`).
    """

    tests: int
    alpha: float
    threshold: float
    rejected: tuple[ConformanceTest, ...]
    violation: bool
    witness: dict[str, Any] | None
    over_noised: tuple[ConformanceTest, ...] = field(default=())
    min_scale_ratio: float = math.nan
    unresolved: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"tests": self.tests, "alpha": self.alpha, "threshold": self.threshold,
                "rejected": [t.to_dict() for t in self.rejected], "violation": self.violation,
                "witness": self.witness, "over_noised": [t.to_dict() for t in self.over_noised],
                "min_scale_ratio": self.min_scale_ratio, "unresolved": [list(u) for u in self.unresolved]}


def _scale_hat(z: np.ndarray, mechanism: str) -> float:
    """Scale of standardized residuals ``z`` (1 under the declaration): MLE for Laplace, RMS for Gaussian."""
    return float(np.mean(np.abs(z))) if mechanism == "laplace" else float(np.sqrt(np.mean(z**2)))


def _cdfs(x: np.ndarray, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """The declared standard CDF at ``x`` and the CDF of ``|noise|`` at ``|x|``, elementwise (NaN stays NaN).

    The standard CDFs written with scipy.special, as scipy.stats computes them
    (laplace, norm; expon and halfnorm for ``|z|``), without scipy.stats'
    per-call argument handling.
    """
    return _cdfs_in_place(np.array(x, dtype=float), mechanism)


def _cdfs_in_place(x: np.ndarray, mechanism: str, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_cdfs` of a float array ``x`` that it overwrites with the second result, the first written into
    ``out`` (a float array shaped like ``x``; ``None``: a new one). On hundreds of thousands of residuals each
    new array costs fresh memory pages."""
    from scipy import special

    if mechanism == "laplace":
        above = x > 0
        m = np.negative(np.abs(x, out=x), out=x)  # -|x|: one exp serves both sides of the CDF
        cdf = np.exp(m, out=out)
        cdf *= 0.5
        np.subtract(1.0, cdf, out=cdf, where=above)  # 1 - tail above 0, the tail below
        return cdf, np.negative(special.expm1(m, out=m), out=m)
    cdf = special.ndtr(x) if out is None else special.ndtr(x, out=out)
    np.abs(x, out=x)
    x /= np.sqrt(2)
    return cdf, special.erf(x, out=x)


def _ks_sorted(cdf: np.ndarray, cdf_abs: np.ndarray) -> tuple[float, float, float]:
    """:func:`_ks` from the sorted CDF values of the sample and of its absolute values (no NaN)."""
    d, d_under = _ks_statistics(cdf, cdf_abs)
    return (d, *_p_values(cdf.size, d, d_under))


def _ks_statistics(cdf: np.ndarray, cdf_abs: np.ndarray) -> tuple[float, float]:
    """The two-sided statistic and the one-sided one of ``|z|`` (:func:`_ks_sorted`) from sorted CDF values."""
    n = cdf.size
    up = np.arange(1, n + 1) / n
    down = np.arange(n) / n
    d = float(max((up - cdf).max(), (cdf - down).max()))
    d_under = float(max(0.0, (up - cdf_abs).max()))  # empirical CDF of |z| above the declared one
    return d, d_under


def _p_values(n: int, d: float, d_under: float) -> tuple[float, float]:
    """The DKW bounds (:func:`_ks`) of the two-sided statistic ``d`` and the one-sided ``d_under`` of ``n`` values."""
    return min(1.0, 2.0 * math.exp(-2.0 * n * d * d)), min(1.0, math.exp(-2.0 * n * d_under * d_under))


def _ks(z: np.ndarray, mechanism: str) -> tuple[float, float, float]:
    """Two-sided KS statistic of ``z`` with its DKW p-value bound, and the one-sided bound for ``|z|`` being smaller.

    The p-values are the Dvoretzky–Kiefer–Wolfowitz bounds with Massart's
    constant (Massart, Ann. Probab. 1990): ``P(sup |F_n - F| > d) <= 2 exp(-2 n d^2)``
    and ``P(sup (F_n - F) > d) <= exp(-2 n d^2)``, valid for every ``n``
    (where the bound is at most 1/2, the only range a test here rejects in).
    They are never below the exact p-values, so the tests are conservative,
    and they cost one sort (scipy's exact one-sided distribution costs
    milliseconds per test). The statistics read only the sorted CDF values:
    a CDF is non-decreasing, so the CDF of the sorted sample is the sorted
    CDF of the sample. :func:`noise_conformance` computes the same statistics
    of many groups at once without sorting them (:func:`_ks_extremes`).

    Example:
        >>> d, p, p_under = _ks(np.array([0.0]), "laplace")  # F(0) = 1/2; |z| = 0 has declared CDF 0
        >>> d, p, round(p_under, 4) == round(math.exp(-2.0), 4)
        (0.5, 1.0, True)
    """
    cdf, cdf_abs = _cdfs(np.asarray(z, dtype=float).ravel(), "laplace" if mechanism == "laplace" else "gaussian")
    return _ks_sorted(np.sort(cdf), np.sort(cdf_abs))


FINE_BITS = 16
"""At most ``2**FINE_BITS`` bins of ``[0, 1]`` per group in :func:`_ks_extremes`."""

VALUES_PER_BIN = 4.0
"""About this many values of the largest group per bin in :func:`_ks_extremes` (measured: 1 makes the bin
tables as large as the values, 4 leaves several times more values in bins that may hold the maximum)."""

MARGIN = 1e-12
"""Slack of the bounds of :func:`_ks_extremes`, far above their rounding error (a few units of 1e-16)."""


def _ks_extremes(values: np.ndarray, missing: np.ndarray | None, row_group: np.ndarray, sizes: np.ndarray,
                 minus: bool, work: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Per group, the largest ``i/n - v_(i)`` (and ``v_(i) - (i-1)/n``) over its sorted values, exactly.

    The two one-sided KS statistics of :func:`_ks_sorted` (``up - cdf`` and
    ``cdf - down``), for many groups at once and without sorting them. The
    values (CDF values in ``[0, 1]``) are counted in ``B`` equal bins per
    group (``B`` a power of two, :data:`VALUES_PER_BIN` values of the largest
    group per bin). Bin ``j`` of group ``g`` holds the ranks ``C + 1 .. C + m``
    (``C`` values in lower bins, ``m`` in it) and values in ``[j, j + 1) / B``,
    so every ``i/n - v`` in it is at most ``(C + m)/n - j/B``, and its
    lowest-ranked value has ``i/n - v`` at least ``(C + 1)/n - (j + 1)/B``
    (likewise ``v - (i - 1)/n`` is at most ``(j + 1)/B - C/n`` and, for the
    highest-ranked value, at least ``j/B - (C + m - 1)/n``). Only bins whose
    upper bound reaches the group's best lower bound (less :data:`MARGIN`,
    which covers the rounding of both) can hold the maximum; their values
    are sorted (a few per group) and their terms computed with the
    arithmetic of :func:`_ks_sorted` (``i / n`` from integers), so the maxima
    are those of the full sort, bit for bit.

    Args:
        values: ``(rows, w)`` CDF values (rows: releases), NaN where ``missing``.
        missing: ``(rows, w)`` mask of values to skip, or ``None``.
        row_group: ``(rows,)`` the group of each row's values.
        sizes: ``(G,)`` values per group (``missing`` excluded).
        minus: also compute the ``v_(i) - (i - 1)/n`` maxima.
        work: an int64 array shaped like ``values`` to overwrite (``None``: a new one).

    Returns:
        ``(plus, minus)`` of shape ``(G,)`` (``-inf`` for an empty group; ``minus`` is ``None`` unless asked).
    """
    n_groups = sizes.size
    bins = 1 << int(min(FINE_BITS, max(0, round(math.log2(max(1.0, float(sizes.max(initial=1))
                                                               / VALUES_PER_BIN))))))
    # each value's bin, floor(v * bins) (1 joins the last bin): bins is a power of two, so v * bins is exact and
    # bin b holds exactly the values in [b, b + 1) / bins; NaN gives garbage, overwritten below
    key = np.empty(values.shape, dtype=np.int64) if work is None else work
    with np.errstate(invalid="ignore"):
        np.multiply(values, bins, out=key, casting="unsafe")  # truncated, as astype: the floor of values >= 0
    np.minimum(key, bins - 1, out=key)
    key += (row_group * bins)[:, None]
    if missing is not None:
        key[missing] = n_groups * bins  # one extra bin, dropped
    key = key.ravel()
    cnt = np.bincount(key, minlength=n_groups * bins + 1)[:n_groups * bins].reshape(n_groups, bins)
    upto_int = np.cumsum(cnt, axis=1)  # values in this bin and below: the bin's highest rank
    full, empty = cnt > 0, cnt == 0
    below_int = np.subtract(upto_int, cnt, out=cnt)  # the bin's lowest rank less 1 (in the counts' memory)
    with np.errstate(divide="ignore"):
        inv = 1.0 / sizes.astype(float)[:, None]
    lo, hi = np.arange(bins) / bins, np.arange(1, bins + 1) / bins
    # the bounds with products by 1/n (cheaper than quotients) and a margin of 1e-12 far above their rounding:
    # every upper bound still holds and every lower bound is still met, so no bin that can hold a maximum is missed
    top, bottom = upto_int * inv, below_int * inv  # (the ranks converted to float: exact below 2**53)
    with np.errstate(invalid="ignore"):  # (in place: each new table costs fresh memory pages)
        bound = np.add(bottom, inv - hi, out=upto_int.view(np.float64))  # (the highest ranks are no longer needed)
        bound[empty] = -np.inf
        least = bound.max(axis=1, keepdims=True)
        cand = np.greater_equal(np.subtract(top, lo, out=bound), least - MARGIN)
        cand &= full
        if minus:
            np.add(lo, inv, out=bound)
            np.subtract(bound, top, out=bound)
            bound[empty] = -np.inf
            least = bound.max(axis=1, keepdims=True)
            cand |= full & (np.subtract(hi, bottom, out=bound) >= least - MARGIN)
    inside = np.flatnonzero(np.append(cand.ravel(), False)[key])
    k, v = key[inside], values.ravel()[inside]
    order = np.lexsort((v, k))
    k, v = k[order], v[order]
    pos = np.arange(k.size)
    first = np.maximum.accumulate(np.where(np.r_[True, k[1:] != k[:-1]], pos, 0)) if k.size else pos
    rank = below_int.ravel()[k] + (pos - first) + 1
    group = k // bins
    total = sizes[group]
    plus = np.full(n_groups, -np.inf)
    np.maximum.at(plus, group, rank / total - v)
    if not minus:
        return plus, None
    low = np.full(n_groups, -np.inf)
    np.maximum.at(low, group, v - (rank - 1) / total)
    return plus, low


def _sort_nonnegative(x: np.ndarray) -> np.ndarray:
    """Sort the rows of a C-contiguous float array of non-negative values without NaN (CDF values) in place,
    read as 64-bit integers; returns ``x``.

    IEEE 754 doubles ``>= +0`` are ordered as their bit patterns read as
    signed integers (a ``-0.0`` reads as the smallest integer and sorts first,
    where it belongs: it equals the smallest value, 0). A stable integer sort
    (timsort) merges sorted runs three times faster than the float one, which
    must place NaN; the values are only reordered.

    Example:
        >>> _sort_nonnegative(np.array([0.5, 0.0, 1.0, 0.25])).tolist()
        [0.0, 0.25, 0.5, 1.0]
    """
    x.view(np.int64).sort(axis=-1, kind="stable")
    return x


def _release_statistics(cdf: np.ndarray, cdf_abs: np.ndarray, counts: np.ndarray, scratch: np.ndarray
                        ) -> tuple[list[int], list[float], list[float]]:
    """``(sizes, d, d_under)`` of :func:`_ks_sorted` for each row of sorted CDF values (NaN last, ``counts``
    values each); the complete rows at once (the same arithmetic per row), their differences written into
    ``scratch`` (a float array shaped like ``cdf``: new arrays this large cost fresh memory pages)."""
    width = cdf.shape[1]
    d, d_under = np.zeros(cdf.shape[0]), np.zeros(cdf.shape[0])
    complete = counts == width
    if complete.any():
        up, down = np.arange(1, width + 1) / width, np.arange(width) / width
        every = bool(complete.all())
        c, ca = (cdf, cdf_abs) if every else (cdf[complete], cdf_abs[complete])
        tmp = scratch[:c.shape[0]]
        d[complete] = np.maximum(np.subtract(up, c, out=tmp).max(axis=1),
                                 np.subtract(c, down, out=tmp).max(axis=1))
        d_under[complete] = np.maximum(0.0, np.subtract(up, ca, out=tmp).max(axis=1))
    for g in np.flatnonzero(~complete & (counts > 0)).tolist():
        d[g], d_under[g] = _ks_statistics(cdf[g, :counts[g]], cdf_abs[g, :counts[g]])
    return counts.tolist(), d.tolist(), d_under.tolist()


def _group_tests(name: str, z: np.ndarray, noisy: np.ndarray, scales: np.ndarray, mechanism: str,
                 min_samples: int, scratch: bool = False) -> list[ConformanceTest]:
    """The tests of one channel, in the order per round (each agent, then pooled over agents), then per agent.

    ``z``: residual/scale of the tested rounds with the agent first, ``(N, R, T', ..., d)``.
    Every release's residuals are sorted once (one row per ``(round, agent)``,
    NaN last), which sorts their CDF values and leaves those of ``|z|`` in two
    runs (a stable sort merges them); the releases' statistics are read off
    the sorted rows (:func:`_ks_sorted`, all complete rows at once). The
    pooled groups (rounds pooled over agents, agents pooled over rounds) get
    theirs from :func:`_ks_extremes` without merging their rows: the values
    of :func:`_ks` on each group's residuals, bit for bit. The scale
    estimates read the residuals in their recorded order, as one test per
    group would.

    ``scratch``: ``z`` is the caller's scratch array (overwritten here), laid
    out round first (``np.moveaxis(z, 2, 0)`` C-contiguous): its rows are
    then sorted in place, without a copy.
    """
    n_agents, n_rounds = z.shape[0], z.shape[2]
    rows = np.moveaxis(z, 2, 0).reshape(n_rounds * n_agents, -1)  # row (k, i): release (round k, agent i)
    if not scratch and np.may_share_memory(rows, z):  # a view (one round or one agent): sorted in place below
        rows = rows.copy()
    width = rows.shape[1]
    counts = width - np.count_nonzero(np.isnan(rows), axis=1)
    complete = counts == width
    missing_any = not complete.all()

    def valid(values: np.ndarray) -> np.ndarray:
        values = values.ravel()
        return values[~np.isnan(values)] if missing_any else values

    # the scale estimates first, on the residuals in their recorded order (each group's own mean, as one
    # test's); the complete releases' at once
    work = np.empty(rows.shape, dtype=np.int64)  # scratch memory for the scale estimates, then the CDF values
    row_hat = np.full(rows.shape[0], np.nan)
    if complete.any():
        part = rows[complete] if missing_any else rows
        size = work.view(np.float64)[:part.shape[0]]  # |z| or z**2 (the same values as a new array's)
        size = np.abs(part, out=size) if mechanism == "laplace" else np.square(part, out=size)
        row_hat[complete] = np.mean(size, axis=1) if mechanism == "laplace" else np.sqrt(np.mean(size, axis=1))
    for g in np.flatnonzero(~complete & (counts >= min_samples)).tolist():
        row_hat[g] = _scale_hat(valid(rows[g]), mechanism)
    # the round's rows hold z[:, :, k] in its recorded order
    round_hat = [_scale_hat(valid(rows[k * n_agents:(k + 1) * n_agents]), mechanism)
                 if counts[k * n_agents:(k + 1) * n_agents].sum() >= min_samples else None for k in range(n_rounds)]
    agent_hat = [_scale_hat(valid(z[i]), mechanism) if counts[i::n_agents].sum() >= min_samples else None
                 for i in range(n_agents)]

    rows.sort(axis=1)  # in place (NaN last): the sorted CDF values; those of |z| in two runs
    cdf, cdf_abs = _cdfs_in_place(rows, mechanism, out=work.view(np.float64))  # the scratch memory holds cdf
    work = np.empty(rows.shape, dtype=np.int64)  # the scratch memory of the steps below
    missing = np.isnan(cdf) if missing_any else None
    if missing is None:  # a stable sort merges the two runs
        _sort_nonnegative(cdf_abs)
    else:
        cdf_abs.sort(axis=1, kind="stable")  # NaN last, as in cdf
    stats = {"release": _release_statistics(cdf, cdf_abs, counts, work.view(np.float64))}
    release = np.arange(rows.shape[0])
    families = (("round", release // n_agents), ("agent", release % n_agents))
    sizes = [np.bincount(row_group, weights=counts).astype(np.int64) for _, row_group in families]
    found = [_ks_extremes(cdf, missing, row_group, n, minus=True, work=work)
             for (_, row_group), n in zip(families, sizes)]
    for ((family, row_group), n, (plus, low)) in zip(families, sizes, found):
        under, _ = _ks_extremes(cdf_abs, missing, row_group, n, minus=False, work=work)
        assert low is not None
        stats[family] = (n.tolist(), np.maximum(plus, low).tolist(), np.maximum(under, 0.0).tolist())

    def test(family: str, g: int, rnd: int | None, agent: int | None, scale: float | None,
             hat: float) -> ConformanceTest:
        sizes, d, d_under = stats[family]
        return ConformanceTest(name, rnd, agent, sizes[g], scale, hat, d[g], *_p_values(sizes[g], d[g], d_under[g]))

    out = []
    for k, col in enumerate(noisy.tolist()):
        scale = float(scales[col])
        for i in range(n_agents):
            g = k * n_agents + i
            if counts[g] >= min_samples:
                out.append(test("release", g, col + 1, i, scale, float(row_hat[g])))
        hat = round_hat[k]
        if hat is not None:
            out.append(test("round", k, col + 1, None, scale, hat))
    for i in range(n_agents):
        hat = agent_hat[i]
        if hat is not None:
            out.append(test("agent", i, None, i, None, hat))
    return out


def noise_conformance(
    residuals: Mapping[str, np.ndarray],
    declared: Mapping[str, tuple[str, Any]],
    *,
    confidence: float = 0.95,
    min_samples: int = 20,
    magnitude: Mapping[str, Any] | None = None,
) -> ConformanceReport:
    """Test residuals against the declared noise (module docstring: families, error rate, classification).

    Args:
        residuals: per channel, released minus noise-free values, ``(R, T, N, d)``
            (or ``(R, T, N, N, d)`` per link); NaN entries (nothing released) are skipped.
        declared: per channel, ``(mechanism, scales)`` with ``scales`` of shape ``(T,)``;
            rounds of scale 0 are not tested (noise-free releases are checked by replay).
        confidence: ``1 - alpha``, the family-wise confidence, in (0, 1).
        min_samples: smallest number of residuals a test needs (fewer: the test is skipped).
        magnitude: per channel, the largest absolute released value of each round ``(T,)``. A
            round whose scale is below :data:`RESOLUTION_FACTOR` times the floating-point spacing
            of that magnitude is not tested: its residuals are dominated by round-off (they are
            differences of nearly equal floats), not by the noise.

    Returns:
        A :class:`ConformanceReport`.

    Raises:
        PrivacyParameterError: a channel without a declaration, bad shapes, a
            bad ``confidence`` or ``min_samples``.
        UnknownMechanismError: an unknown mechanism.

    Example:
        See the module docstring.
    """
    conf = check_open_unit(confidence, "confidence", error=PrivacyParameterError, where="noise_conformance")
    min_samples = check_integer(min_samples, "min_samples", minimum=2, error=PrivacyParameterError,
                                where="noise_conformance")
    alpha = 1.0 - conf
    tests: list[ConformanceTest] = []
    untested: list[tuple[str, int]] = []
    for name, res in residuals.items():
        if name not in declared:
            raise PrivacyParameterError(f"noise_conformance: no declaration for channel {name!r}")
        mechanism, scales = declared[name]
        if mechanism not in ("laplace", "gaussian"):
            raise UnknownMechanismError(f"unknown mechanism {mechanism!r}; known: laplace, gaussian")
        r = np.asarray(res, dtype=float)
        scales = np.asarray(scales, dtype=float)
        if r.ndim not in (4, 5) or scales.shape != (r.shape[1],):
            raise PrivacyParameterError(f"noise_conformance: channel {name!r} has residuals of shape {r.shape} and "
                                        f"scales of shape {scales.shape}; need (R, T, N, [N,] d) and (T,)")
        testable = scales > 0
        if magnitude is not None and name in magnitude:
            resolution = np.spacing(np.abs(np.asarray(magnitude[name], dtype=float))) * RESOLUTION_FACTOR
            unresolved = testable & (scales < resolution)
            untested.extend((name, int(t) + 1) for t in np.flatnonzero(unresolved))
            testable &= ~unresolved
        noisy = np.flatnonzero(testable)
        if noisy.size == 0:
            continue
        # residual/scale written round first, (T', N, R, ..., d): the rows of _group_tests without a copy
        sel = r[:, noisy[0]:noisy[-1] + 1] if noisy[-1] - noisy[0] + 1 == noisy.size else r[:, noisy]
        rows = np.empty((noisy.size, r.shape[2], r.shape[0]) + r.shape[3:])
        np.divide(np.moveaxis(sel, 0, 2), scales[noisy].reshape((-1,) + (1,) * (r.ndim - 1)), out=rows)
        z = np.moveaxis(rows, 0, 2)  # (N, R, T', ..., d): agent first
        tests.extend(_group_tests(name, z, noisy, scales, mechanism, min_samples, scratch=True))
    m = 2 * len(tests)  # a two-sided and a one-sided test per group
    threshold = alpha / m if m else 0.0
    rejected = tuple(sorted((x for x in tests if min(x.p_value, x.p_under) < threshold),
                            key=lambda x: min(x.p_value, x.p_under)))
    under = [x for x in rejected if x.p_under < threshold]
    over = tuple(x for x in rejected if x.p_under >= threshold)
    witness = None
    if under:
        # the most specific rejected release names agent and round; pooled tests only when none is rejected
        w = min(under, key=lambda x: (x.round is None, x.agent is None, x.p_under))
        witness = {"kind": "conformance", "channel": w.channel, "round": w.round, "agent": w.agent,
                   "declared_scale": w.declared_scale, "estimated_scale": None if w.declared_scale is None
                   else w.declared_scale * w.scale_ratio, "scale_ratio": w.scale_ratio, "p_value": w.p_under,
                   "samples": w.samples, "threshold": threshold,
                   "method": ("noise conformance: the released noise is smaller than declared (one-sided test of "
                              "the residuals against the declared scale, Bonferroni over every test)"),
                   "confidence": 1.0 - alpha}
    per_release = [x.scale_ratio for x in tests if x.round is not None and x.agent is not None]
    return ConformanceReport(tests=m, alpha=alpha, threshold=threshold, rejected=rejected, violation=bool(under),
                             witness=witness, over_noised=over,
                             min_scale_ratio=float(min(per_release)) if per_release else math.nan,
                             unresolved=tuple(untested))

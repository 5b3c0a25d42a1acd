"""Noise that the declarations say is independent but is not: a test, and an audit of what it exposes.

Every noise declaration (:class:`~asyncdp.algorithms.base.NoiseDeclaration`)
states a fresh, independent draw per release, and every bound the
accountant composes assumes it. A rule that draws its noise once and
reuses it in later rounds, or shares one draw between agents, releases
noise whose marginals match the declaration exactly, so a per-release test
of the noise cannot see it. Two functions deal with it:

* :func:`noise_dependence`: a test of independence across rounds and across
  agents on the residuals (released minus noise-free values: the noise
  itself); across the channels of one round on the channels' releases
  interleaved (:func:`interleave_channels`). Its rejection is a *doubt*: the
  verdict cannot be ``pass``.
* :func:`cancelling_audit`: a *witness*. Dependent noise can cancel: if the
  noise of release ``B`` is ``beta`` times that of release ``A``, then
  ``g = r_B - beta r_A`` (each residual taken under the scenario's problem
  ``P``, which the replay computes from the transcript alone) is free of
  noise under ``P`` and moves by the releases' shifts under ``P'``. The
  audit picks ``A``, ``B`` and ``beta`` on one half of the scenario's runs,
  fixes the event ``{|g - c| > tau}`` there, and certifies with
  Clopper–Pearson counts on the other half and on the adjacent scenario's
  runs (:func:`accounting.auditing.certify.certify_event`) a lower bound on
  epsilon, and on delta at the claimed epsilon. Any event of the
  transcript is bounded by the claim (``g`` is a function of the
  transcript: post-processing), so a bound above the claim refutes it.

Both run at :data:`DEPENDENCE_ALPHA_FRACTION` of the conformance method's
error share, and the conformance tests at the rest of it, so the method's
false-violation rate stays within its share.

Example:
    >>> rng = np.random.default_rng(0)
    >>> noise = rng.normal(size=(200, 1, 2, 1))
    >>> noise_dependence({"y": np.repeat(noise, 3, axis=1)}, {"y": np.ones(3)}, 0.05)["across"]
    'rounds'
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

__all__ = ["DEPENDENCE_ALPHA_FRACTION", "noise_dependence", "cancelling_audit", "CancellingAudit", "interleave_channels"]

DEPENDENCE_ALPHA_FRACTION = 0.1
"""The dependence test and the cancelling audit each run at this fraction of the conformance method's error
share (the conformance tests at the rest). The test's rejection is a doubt that costs a correct rule its
``pass``, and the dependence it is there for (a draw reused across rounds or agents) has correlation near 1,
found at any level; so false alarms are kept ten times rarer than a witness's."""

_MIN_PAIRS = 50
"""Runs a dependence test needs (both releases present): the Fisher z approximation is asymptotic."""

_MIN_AUDIT_RUNS = 40
"""Scenario runs the cancelling audit needs: half choose the combination and the event, half certify."""


def noise_dependence(residuals: dict[str, np.ndarray], scales: dict[str, np.ndarray], alpha: float
                     ) -> dict[str, Any] | None:
    """Test the released noise for dependence the declaration does not state: across rounds and across agents.

    The declarations say every release's noise is a fresh, independent draw.
    For each channel, coordinate and agent the residuals (released minus
    noise-free values, i.e. the noise itself) of consecutive rounds ``t`` and
    ``t + 1`` are correlated over the runs, and so are those of agents ``i``
    and ``i + 1`` in the same round; under independence each sample
    correlation ``r`` of ``n`` runs has ``atanh(r) sqrt(n - 3)`` approximately
    standard normal (Fisher). A two-sided p-value below ``alpha`` divided by
    the number of tests (Bonferroni) rejects independence. A rule that draws
    its noise once and reuses it has correlation 1 between rounds.

    Args:
        residuals: per channel ``(R, T, N, d)`` residuals (NaN where nothing was released; broadcast only).
        scales: per channel the declared scale per round ``(T,)`` (0: noise-free, not tested).
        alpha: the family-wise error rate.

    Returns:
        The first rejection as a dict (``channel``, ``across`` = ``"rounds"`` or
        ``"agents"``, ``rounds``, ``agents``, ``coordinate``, ``correlation``,
        ``p_value``, ``threshold``, ``tests``, ``runs``), or ``None``.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> noise = rng.normal(size=(200, 1, 2, 1))
        >>> res = {"y": np.repeat(noise, 3, axis=1)}  # one draw reused in 3 rounds
        >>> noise_dependence(res, {"y": np.ones(3)}, 0.05)["rounds"]
        [1, 2]
        >>> noise_dependence({"y": rng.normal(size=(200, 3, 2, 1))}, {"y": np.ones(3)}, 0.05) is None
        True
    """
    from scipy.special import ndtr

    found: list[tuple[float, dict[str, Any]]] = []
    tests = 0
    for c, res in residuals.items():
        r = np.asarray(res, dtype=float)
        if r.ndim != 4 or c not in scales:
            continue
        noisy = np.asarray(scales[c], dtype=float) > 0
        # every pair of one kind at once: (R, pairs, N', d) blocks, pairs in the order of their first round
        blocks: list[tuple[str, np.ndarray, np.ndarray, list[int], int]] = []
        first = [t for t in range(r.shape[1] - 1) if noisy[t] and noisy[t + 1]]
        if first:
            idx = _rounds_index(first)
            blocks.append(("rounds", r[:, idx], r[:, _rounds_index([t + 1 for t in first])], first, 0))
        same = [t for t in range(r.shape[1]) if noisy[t]] if r.shape[2] > 1 else []
        if same:
            idx = _rounds_index(same)
            blocks.append(("agents", r[:, idx, :-1], r[:, idx, 1:], same, 1))
        used = sorted(set(first) | {t + 1 for t in first} | set(same))
        centered = _centered(r) if used and np.isfinite(r[:, _rounds_index(used)]).all() else None
        for across, a, b, rounds, shift in blocks:
            if centered is not None:  # every run released every tested release (e.g. lockstep, lossless)
                n = np.full(a.shape[1:], r.shape[0])
                corr = _every_run_correlation(*centered, across, rounds)
            else:
                n, corr = _masked_correlation(a, b)
            valid = (n >= _MIN_PAIRS) & np.isfinite(corr)
            tests += int(valid.sum())
            with np.errstate(divide="ignore"):
                z = np.arctanh(np.clip(corr, -1 + 1e-15, 1 - 1e-15)) * np.sqrt(np.maximum(n - 3, 0))
            p = np.where(valid, 2.0 * ndtr(-np.abs(z)), 1.0)
            j, agent, coord = (int(v) for v in np.unravel_index(int(np.argmin(p)), p.shape))  # first smallest
            t = rounds[j]
            pair_rounds = [t + 1, t + 2] if across == "rounds" else [t + 1, t + 1]
            found.append((float(p[j, agent, coord]), {
                "channel": c, "across": across, "rounds": pair_rounds, "agents": [agent, agent + shift],
                "coordinate": coord, "correlation": float(corr[j, agent, coord]),
                "p_value": float(p[j, agent, coord]), "runs": int(n[j, agent, coord])}))
    if not found or tests == 0:
        return None
    p_min, best = min(found, key=lambda x: x[0])
    threshold = alpha / tests
    if p_min >= threshold:
        return None
    return {**best, "threshold": threshold, "tests": tests}


def interleave_channels(arrays: list[np.ndarray]) -> np.ndarray:
    """Several channels' ``(R, T, N, d)`` arrays as one, their releases of each round side by side along the rounds.

    Virtual round ``t K + k`` (0-based) is channel ``k``'s round ``t``, so the tests across consecutive rounds
    (:func:`noise_dependence`, :func:`cancelling_audit`) meet the channels of one round: a rule adding one draw to
    two channels' releases is dependent there, and the combination of those two releases cancels its noise.

    Example:
        >>> a, b = np.zeros((1, 2, 1, 1)), np.ones((1, 2, 1, 1))
        >>> interleave_channels([a, b])[0, :, 0, 0]
        array([0., 1., 0., 1.])
    """
    stacked = np.stack([np.asarray(a, dtype=float) for a in arrays], axis=2)  # (R, T, K, ...)
    return stacked.reshape(stacked.shape[0], stacked.shape[1] * stacked.shape[2], *stacked.shape[3:])


def _masked_correlation(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs with both releases and the sample correlation over them, per pair ``(pairs, N', d)``."""
    ok = np.isfinite(a) & np.isfinite(b)
    n = ok.sum(axis=0)  # (pairs, N', d)
    every = bool(ok.all())  # every run released both: no masking needed
    a0, b0 = (a, b) if every else (np.where(ok, a, 0.0), np.where(ok, b, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = a0.sum(axis=0) / n, b0.sum(axis=0) / n
        da, db = (a - ma, b - mb) if every else (np.where(ok, a - ma, 0.0), np.where(ok, b - mb, 0.0))
        return n, (da * db).sum(axis=0) / np.sqrt((da * da).sum(axis=0) * (db * db).sum(axis=0))


def _centered(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every release's residuals less their mean over the runs, and their sums of squares (all runs).

    The correlation of two releases reads these once for every pair they
    are in: the correlations of :func:`_masked_correlation` up to the order
    of the sums over the runs (numpy sums a large block of releases run by
    run, as here, and some small blocks pairwise), so equal bit for bit on
    the shipped examples and to rounding (1e-15) otherwise.
    """
    d = r - r.sum(axis=0) / r.shape[0]
    return d, (d * d).sum(axis=0)


def _every_run_correlation(d: np.ndarray, squares: np.ndarray, across: str, rounds: list[int]) -> np.ndarray:
    """:func:`_masked_correlation` of the pairs of one kind when every run released both releases."""
    idx = _rounds_index(rounds)
    if across == "rounds":
        nxt = _rounds_index([t + 1 for t in rounds])
        num, sa, sb = (d[:, idx] * d[:, nxt]).sum(axis=0), squares[idx], squares[nxt]
    else:
        num, sa, sb = ((d[:, idx, :-1] * d[:, idx, 1:]).sum(axis=0), squares[idx, :-1], squares[idx, 1:])
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / np.sqrt(sa * sb)


def _rounds_index(rounds: list[int]) -> slice | np.ndarray:
    """Index of these rounds (0-based, increasing): a slice when they are consecutive (a view, no copy)."""
    if rounds[-1] - rounds[0] + 1 == len(rounds):
        return slice(rounds[0], rounds[-1] + 1)
    return np.array(rounds)


class CancellingAudit(dict):
    """The result of :func:`cancelling_audit`: a plain dict (it goes into the report's JSON as is).

    Keys: ``channel``, ``rounds`` and ``agents`` (1-based rounds of releases
    ``A`` and ``B``; their agents), ``coordinate``, ``beta``,
    ``selection_correlation`` (of the two residuals on the selection half),
    ``center``, ``tau``, ``counts`` (``{"adjacent": [k, n], "scenario": [k, n]}``
    of the event), ``epsilon_lower_bound``, ``delta_lower_bound`` (at the
    claimed epsilon, >= 0), ``confidence``, ``epsilon_allowed``,
    ``delta_allowed`` and ``violation``.
    """


def _candidates(r: np.ndarray, agents: list[int]) -> list[tuple[int, int, int, list[int]]]:
    """Groups of release pairs to combine: ``(round A, agent A, round B, agents B)`` (0-based).

    Consecutive rounds of each changed agent, and each changed agent with every
    other agent in the same round (the only releases whose shifts differ are
    the changed agents'; a combination with another release exposes them).
    The agents ``B`` of a group are scored together (one array operation).
    """
    horizon, n_agents = r.shape[1], r.shape[2]
    out = []
    for i in agents:
        out += [(t, i, t + 1, [i]) for t in range(horizon - 1)]
        others = [j for j in range(n_agents) if j != i]
        if others:
            out += [(t, i, t, others) for t in range(horizon)]
    return out


def cancelling_audit(residuals: np.ndarray, shifts: np.ndarray, residuals_adjacent: np.ndarray, *,
                     agents: list[int], epsilon: float, delta: float, alpha: float,
                     per_round: bool = False) -> CancellingAudit | None:
    """Certify the loss exposed by noise that cancels between two releases (module docstring).

    Releases ``A`` and ``B`` are the pairs of :func:`_candidates`. On the first
    half of the scenario's runs, per candidate and coordinate: ``beta`` by
    least squares of ``r_B`` on ``r_A``; ``g = r_B - beta r_A``; its spread
    ``s`` (standard deviation); and its expected move under ``P'``, the
    median of ``|shift_B - beta shift_A|`` over the same runs (the shifts
    ``mu_P - mu_P'`` from the replay under both problems). The candidate with
    the largest move relative to ``s`` is chosen; the event is
    ``{|g - c| > tau}`` with ``c`` the median of ``g`` and ``tau`` half the
    median move. Counted on the second half of the scenario's runs and on
    every adjacent run (independent of the first half), a one-sided
    Clopper–Pearson lower bound of the adjacent probability and an upper
    bound of the scenario probability, each at ``alpha / 2``, give
    ``epsilon >= ln((p' - delta) / p)`` and ``delta(epsilon) >= p' - e^epsilon p``
    (:func:`accounting.auditing.certify.certify_event`, with the adjacent
    scenario as numerator: a claim bounds both orders of the pair). Every
    event of the transcript obeys the claim, so the bounds hold with
    probability at least ``1 - alpha`` for any rule that meets its claim,
    whatever its noise. A per-iteration claim (``per_round``) allows the
    releases' rounds together the basic composition of their per-round
    claims (``k epsilon, k delta`` over ``k`` distinct rounds).

    Args:
        residuals: the scenario's runs' residuals under ``P``, ``(R, T, N, d)`` (NaN: not released / noise-free).
        shifts: the same runs' shifts ``mu_P - mu_P'``, same shape.
        residuals_adjacent: the adjacent scenario's runs' residuals under ``P``, ``(R', T, N, d)``.
        agents: the changed agents (every agent under round adjacency).
        epsilon, delta: the claim.
        alpha: the audit's error rate, in ``(0, 1)``.
        per_round: whether the claim is per iteration.

    Returns:
        A :class:`CancellingAudit`, or ``None`` with too few runs or no candidate.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> w = rng.laplace(size=(400, 1, 1, 1))
        >>> res = np.concatenate([w, 0.5 * w], axis=1)  # round 2 re-releases half of round 1's draw
        >>> shifts = np.zeros_like(res); shifts[:, 1] = 1.0  # the data moves round 2's release by 1
        >>> out = cancelling_audit(res, shifts, res - shifts, agents=[0], epsilon=1.0, delta=0.0, alpha=0.001)
        >>> out["violation"], round(out["beta"], 6), out["epsilon_lower_bound"] > 3
        (True, 0.5, True)
    """
    from accounting.auditing.certify import certify_event

    r = np.asarray(residuals, dtype=float)
    sh = np.asarray(shifts, dtype=float)
    ra = np.asarray(residuals_adjacent, dtype=float)
    runs = r.shape[0]
    if r.ndim != 4 or runs < _MIN_AUDIT_RUNS or ra.shape[0] < _MIN_AUDIT_RUNS // 2:
        return None
    half = runs // 2
    best: tuple[float, Any] | None = None
    for ta, ia, tb, group in _candidates(r, agents):
        a, b = r[:half, ta, ia][:, None, :], r[:half, tb][:, group]  # (h, 1, d) and (h, K, d)
        sa, sb = sh[:half, ta, ia][:, None, :], sh[:half, tb][:, group]
        ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(sa) & np.isfinite(sb)
        n = ok.sum(axis=0)  # (K, d)
        if n.max() < _MIN_AUDIT_RUNS // 2:  # a noise-free round, or too few runs released both
            continue
        a0, b0 = np.where(ok, a, 0.0), np.where(ok, b, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # coordinates with no run released both: NaN
            ma, mb = a0.sum(axis=0) / n, b0.sum(axis=0) / n
            da, db = np.where(ok, a - ma, 0.0), np.where(ok, b - mb, 0.0)
            beta = (da * db).sum(axis=0) / (da * da).sum(axis=0)
            g = np.where(ok, b - beta * a, np.nan)
            spread = np.nanstd(g, axis=0)
            move = np.nanmedian(np.where(ok, np.abs(sb - beta * sa), np.nan), axis=0)
            score = move / np.maximum(spread, np.finfo(float).tiny)
        score = np.where((n >= _MIN_AUDIT_RUNS // 2) & np.isfinite(score) & np.isfinite(beta), score, -np.inf)
        kj, k = (int(v) for v in np.unravel_index(int(np.argmax(score)), score.shape))
        if np.isfinite(score[kj, k]) and (best is None or score[kj, k] > best[0]):
            sel = ok[:, kj, k]
            corr = float(np.corrcoef(a[sel, 0, k], b[sel, kj, k])[0, 1])
            best = (float(score[kj, k]), ((ta, ia), (tb, group[kj]), k, float(beta[kj, k]),
                                          float(np.nanmedian(g[:, kj, k])), float(move[kj, k]), corr))
    if best is None:
        return None
    (ta, ia), (tb, ib), k, beta_k, center, move_k, corr = best[1]
    tau = 0.5 * move_k
    if not tau > 0:
        return None

    def hits(res: np.ndarray) -> tuple[int, int]:
        gg = res[:, tb, ib, k] - beta_k * res[:, ta, ia, k]
        inside = np.isfinite(gg) & (np.abs(gg - center) > tau)
        return int(inside.sum()), int(res.shape[0])

    k0, n0 = hits(r[half:])
    k1, n1 = hits(ra)
    rounds_used = len({ta, tb})
    eps_allowed = epsilon * rounds_used if per_round else epsilon
    delta_allowed = min(1.0, delta * rounds_used) if per_round else delta
    cert = certify_event(k1, n1, k0, n0, epsilon=eps_allowed, delta=delta_allowed, alpha=alpha / 2.0)
    eps_lb = float(cert.epsilon_lower_bound)
    delta_lb = max(0.0, float(cert.delta_lower_bound))
    violation = eps_lb > eps_allowed * (1 + 1e-9) or (delta_allowed > 0 and delta_lb > delta_allowed)
    return CancellingAudit(
        rounds=[ta + 1, tb + 1], agents=[ia, ib], coordinate=k, beta=beta_k, selection_correlation=corr,
        center=center, tau=tau, counts={"adjacent": [k1, n1], "scenario": [k0, n0]},
        epsilon_lower_bound=eps_lb if math.isfinite(eps_lb) else float(np.finfo(float).max),
        delta_lower_bound=delta_lb, confidence=1.0 - alpha, epsilon_allowed=float(eps_allowed),
        delta_allowed=float(delta_allowed), violation=bool(violation))

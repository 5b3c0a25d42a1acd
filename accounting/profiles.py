"""Exact privacy profiles of constructed pairs with known shifts: witnesses with no sampling error.

A constructed pair of problems ``(P, P')`` whose releases differ by
deterministic shifts (the noise-free value under ``P`` minus that under
``P'`` does not depend on the noise, e.g. linear costs with no projection or
clipping active, under lockstep timing) is a composition of shifted noise
pairs. Whether the shifts are deterministic is the caller's to check on the
runs; given that they are, the profile ``delta(epsilon)`` of the pair is:

* Gaussian releases (shift ``d_k`` in L2 norm, noise standard deviation
  ``s_k``): one Gaussian pair with ``mu = sqrt(sum (d_k / s_k)^2)`` (by rotation
  invariance; Dong, Roth and Su, JRSS-B 2022, Cor. 3.3), and

      delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)

  in closed form (Balle and Wang, ICML 2018, Thm 8; evaluated in log space by
  :mod:`accounting.mechanisms`), so exact for any ``delta``, ``1e-12`` included.
* Laplace releases: every coordinate ``i`` with ``|d_i| > 0`` is a pair
  ``Lap(0, b)`` vs ``Lap(d_i, b)`` of ratio ``r_i = |d_i| / b``. One of them
  alone has the closed form ``delta(epsilon) = 1 - e^((epsilon - r)/2)`` for
  ``epsilon < r`` (0 beyond); several are composed with dp_accounting's
  privacy loss distributions with **optimistic** discretization
  (``pessimistic_estimate=False``, privacy buckets): the result is at most
  the true ``delta(epsilon)``, a certified lower bound. With Gaussian
  releases as well, the Gaussian closed form is averaged over that
  optimistic Laplace distribution (again a lower bound; the Gaussian part
  stays exact).

Either way the profile is a witness against a claim with no statistical
error. The Rényi divergences are exact too (:meth:`PrivacyProfile.renyi`):
``alpha mu^2 / 2`` for the Gaussian part and Mironov's closed form (CSF 2017,
Prop. 6) per Laplace coordinate, summed (independent releases).

Under deadline or asynchronous timing compute one profile per sampled
schedule and bound their average with
:func:`accounting.delta_bounds.average_delta_lower` (see
:func:`schedule_average_lower`), and their Rényi divergences with
:func:`schedule_renyi_lower`.

Shifts found fixed on the runs need not be fixed where ``delta(epsilon)``
weighs transcripts (the tail near ``epsilon``): :func:`matched_tilt_delta_lower`
bounds a Gaussian pair's ``delta(epsilon)`` by the closed form less the margin
of tilted transcripts that kept every release's shift.

Example:
    >>> p = shift_profile([("gaussian", [0.3, 0.4], 1.0), ("gaussian", 1.2, 1.0)])
    >>> p.gaussian_mu, p.exact, round(p.delta(1.0), 6)
    (1.3, True, 0.240749)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy.special import log_ndtr

from topology.validation import check_nonnegative, check_open_unit, check_positive

from .delta_bounds import DeltaLowerBound, average_delta_lower
from .errors import PrivacyParameterError, UnknownMechanismError
from .mechanisms import _SMALL_MU, _gaussian_epsilon_mu, _log_gaussian_delta_small_mu
from .tilting import log_mgf

__all__ = [
    "loss_renyi_lower",
    "PrivacyProfile",
    "gaussian_mu",
    "gaussian_profile_delta",
    "gaussian_profile_epsilon",
    "laplace_profile_delta",
    "shift_profile",
    "ShiftCheck",
    "profile_from_shifts",
    "schedule_average_lower",
    "RenyiLowerBound",
    "schedule_renyi_lower",
    "matched_tilt_delta_lower",
]

_E = PrivacyParameterError


def _log_gaussian_delta_vec(mu: Any, x: Any) -> np.ndarray:
    """``log h(x)`` elementwise (broadcast) for ``mu > 0`` and real ``x``: ``h(x) = Phi(-x/mu + mu/2) - e^x Phi(-x/mu - mu/2)``.

    The vectorized form of :func:`accounting.mechanisms._log_gaussian_delta`
    (the same equation, Balle and Wang, ICML 2018, Thm 8, valid for every real
    ``x``), in log space; ``-inf`` where ``h`` is 0 to machine precision. Below
    ``mu = 1/2`` both use :func:`accounting.mechanisms._log_gaussian_delta_small_mu` (no cancellation):
    the exact profile is a witness, compared with a claim to a relative ``1e-9``.
    """
    x = np.asarray(x, dtype=float)
    small = np.asarray(mu) < _SMALL_MU
    if small.all():
        return _log_gaussian_delta_small_mu(mu, x)
    l1 = log_ndtr(mu / 2 - x / mu)
    l2 = x + log_ndtr(-mu / 2 - x / mu)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(l2 < l1, l1 + np.log(-np.expm1(np.minimum(l2 - l1, 0.0))), -np.inf)
    if small.any():  # mu an array, some of it below 1/2
        m, xb, sb = np.broadcast_arrays(np.asarray(mu, dtype=float), x, small)
        out[sb] = _log_gaussian_delta_small_mu(m[sb], xb[sb])
    return out


def gaussian_mu(shifts: Sequence[Any], stds: Sequence[float]) -> float:
    """``mu = sqrt(sum_k (||d_k||_2 / s_k)^2)`` of Gaussian releases with shifts ``d_k`` and noise std ``s_k``.

    Args:
        shifts: per release a number or a vector (its L2 norm is used).
        stds: per release the noise standard deviation, ``> 0``.

    Returns:
        ``mu >= 0``.

    Raises:
        PrivacyParameterError: different lengths, a non-finite shift or a bad std (naming the release index).

    Example:
        >>> gaussian_mu([[3.0, 4.0], 1.0], [5.0, 1.0])
        1.4142135623730951
    """
    if len(shifts) != len(stds):
        raise PrivacyParameterError(f"shifts has {len(shifts)} releases but stds has {len(stds)}")
    total = []
    for k, (d, s) in enumerate(zip(shifts, stds)):
        v = np.asarray(d, dtype=float).ravel()
        if not np.isfinite(v).all():
            raise PrivacyParameterError(f"release {k}: shift must be finite, got {d!r}")
        sd = check_positive(s, "std", error=_E, where=f"release {k}")
        total.append(float(np.dot(v, v)) / (sd * sd))
    return math.sqrt(math.fsum(total))


def gaussian_profile_delta(mu: float, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of the Gaussian pair ``N(0, 1)`` vs ``N(mu, 1)``.

    ``Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`` (Balle and
    Wang, ICML 2018, Thm 8), in log space (``scipy.special.log_ndtr``), so
    deltas far below ``1e-8`` keep their relative precision.

    Args:
        mu: ``>= 0`` (0 gives 0).
        epsilon: ``>= 0``.

    Returns:
        ``delta`` in ``[0, 1]``.

    Raises:
        PrivacyParameterError: negative or non-finite ``mu`` or ``epsilon``.

    Example:
        >>> f"{gaussian_profile_delta(1.0, 8.0):.4e}"
        '3.6508e-15'
    """
    m = check_nonnegative(mu, "mu", error=_E)
    e = check_nonnegative(epsilon, "epsilon", error=_E)
    return 0.0 if m == 0 else float(np.exp(_log_gaussian_delta_vec(m, e)))


def gaussian_profile_epsilon(mu: float, delta: float) -> float:
    """Exact ``epsilon(delta)`` of the Gaussian pair with parameter ``mu`` (root of :func:`gaussian_profile_delta`).

    Brent's method on ``log delta`` (:func:`accounting.mechanisms.gaussian_epsilon`),
    absolute tolerance ``1e-13``.

    Args:
        mu: ``>= 0``.
        delta: in ``(0, 1)``.

    Returns:
        ``epsilon >= 0``.

    Raises:
        PrivacyParameterError: bad ``mu`` or ``delta``.

    Example:
        >>> round(gaussian_profile_epsilon(1.0, 1e-5), 4)
        4.3772
    """
    m = check_nonnegative(mu, "mu", error=_E)
    d = check_open_unit(delta, "delta", error=_E)
    return 0.0 if m == 0 else _gaussian_epsilon_mu(m, d)


def laplace_profile_delta(ratio: float, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of ``Lap(0, 1)`` vs ``Lap(ratio, 1)``: ``1 - e^((epsilon - ratio)/2)`` below ``ratio``.

    The loss is ``ratio`` on ``y < 0``, ``ratio - 2y`` on ``[0, ratio]`` and
    ``-ratio`` beyond; integrating ``(1 - e^(epsilon - L))_+`` gives the form.

    Args:
        ratio: shift over scale, ``>= 0``.
        epsilon: ``>= 0``.

    Returns:
        ``delta`` (0 for ``epsilon >= ratio``).

    Raises:
        PrivacyParameterError: negative or non-finite arguments.

    Example:
        >>> round(laplace_profile_delta(1.0, 0.0), 6)
        0.393469
    """
    r = check_nonnegative(ratio, "ratio", error=_E)
    e = check_nonnegative(epsilon, "epsilon", error=_E)
    return 0.0 if e >= r else -math.expm1((e - r) / 2.0)


@dataclass(frozen=True)
class PrivacyProfile:
    """The privacy profile of a composed shift pair: a Gaussian part and Laplace coordinates.

    Attributes:
        gaussian_mu: ``mu`` of all Gaussian releases together (0 if none).
        laplace_ratios: ``|d_i| / b`` of every Laplace coordinate with a nonzero shift.
        value_discretization_interval: the loss grid of the optimistic PLD (when one is needed).

    Properties :attr:`exact` and :attr:`method` say how :meth:`delta` is
    computed; either way ``delta(epsilon)`` never exceeds the pair's true profile.
    """

    gaussian_mu: float
    laplace_ratios: tuple[float, ...] = ()
    value_discretization_interval: float = 1e-4

    def __post_init__(self) -> None:
        check_nonnegative(self.gaussian_mu, "gaussian_mu", error=_E)
        for k, r in enumerate(self.laplace_ratios):
            check_nonnegative(r, f"laplace_ratios[{k}]", error=_E)
        h = check_positive(self.value_discretization_interval, "value_discretization_interval", error=_E)
        if h > 1:
            raise PrivacyParameterError(f"value_discretization_interval must be <= 1, got {h!r}")

    @property
    def _ratios(self) -> tuple[float, ...]:
        return tuple(r for r in self.laplace_ratios if r > 0)

    @property
    def exact(self) -> bool:
        """True when :meth:`delta` is a closed form (Gaussian only, or one Laplace coordinate alone)."""
        r = self._ratios
        return not r or (self.gaussian_mu == 0 and len(r) == 1)

    @property
    def method(self) -> str:
        """``"none"``, ``"gaussian closed form"``, ``"laplace closed form"``, ``"optimistic pld"`` or
        ``"gaussian closed form over optimistic laplace pld"``."""
        r = self._ratios
        if not r:
            return "gaussian closed form" if self.gaussian_mu > 0 else "none"
        if self.exact:
            return "laplace closed form"
        return "gaussian closed form over optimistic laplace pld" if self.gaussian_mu > 0 else "optimistic pld"

    @property
    def max_loss(self) -> float:
        """The largest privacy loss: ``sum r_i`` without Gaussian releases, ``inf`` with them."""
        return math.inf if self.gaussian_mu > 0 else math.fsum(self._ratios)

    @cached_property
    def _laplace_pld(self) -> Any:
        """The optimistic PLD of the Laplace coordinates (identical ratios self-composed by repeated squaring)."""
        from dp_accounting.pld import privacy_loss_distribution as pld_lib

        from .composition.pld import compose_power

        h = self.value_discretization_interval
        plds = []
        for r, n in sorted(Counter(self._ratios).items()):
            one = pld_lib.from_laplace_mechanism(1.0, sensitivity=r, pessimistic_estimate=False,
                                                 value_discretization_interval=h, use_connect_dots=False)
            plds.append(compose_power(one, n))
        out = plds[0]
        for p in plds[1:]:
            out = out.compose(p)
        return out

    @cached_property
    def _laplace_losses(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The optimistic Laplace PLD as (losses, probabilities, mass at +inf), order ``P || P'``."""
        pmf = self._laplace_pld._pmf_remove.to_dense_pmf()  # dp_accounting keeps the arrays private
        losses = (pmf._lower_loss + np.arange(pmf._probs.size)) * pmf._discretization
        return losses, np.asarray(pmf._probs, dtype=float), float(pmf._infinity_mass)

    def _mixed_delta(self, epsilon: float) -> float:
        """``E[h(epsilon - L_lap)]`` over the optimistic Laplace PLD, ``h`` the Gaussian closed form.

        The Gaussian and Laplace losses are independent, so ``delta(epsilon) =
        E[(1 - e^(epsilon - L_g - L_lap))_+] = E[h(epsilon - L_lap)]`` with
        ``h(x) = Phi(-x/mu + mu/2) - e^x Phi(-x/mu - mu/2)`` (any real ``x``).
        ``h(epsilon - l)`` increases with ``l`` and the optimistic PLD rounds
        every Laplace loss down (and drops, never adds, truncated mass), so the
        sum is at most the true ``delta(epsilon)``.
        """
        losses, probs, inf_mass = self._laplace_losses
        keep = probs > 0
        h = np.exp(_log_gaussian_delta_vec(self.gaussian_mu, epsilon - losses[keep]))
        return float(min(1.0, math.fsum(probs[keep] * h) + inf_mass))

    def delta(self, epsilon: float) -> float:
        """``delta(epsilon)``: exact (closed form) or a certified lower bound (optimistic PLD).

        Args:
            epsilon: ``>= 0``.

        Returns:
            ``delta`` in ``[0, 1]``, never above the pair's true profile (up to float round-off of the closed form).

        Raises:
            PrivacyParameterError: a negative or non-finite epsilon.

        Example:
            >>> PrivacyProfile(0.0, (0.5, 0.5)).delta(1.0)
            0.0
        """
        e = check_nonnegative(epsilon, "epsilon", error=_E)
        r = self._ratios
        if not r:
            return gaussian_profile_delta(self.gaussian_mu, e)
        if e >= self.max_loss:
            return 0.0
        if self.exact:
            return laplace_profile_delta(r[0], e)
        if self.gaussian_mu > 0:
            return self._mixed_delta(e)
        return float(min(1.0, max(0.0, self._laplace_pld.get_delta_for_epsilon(e))))

    def epsilon(self, delta: float) -> float:
        """``epsilon(delta)``: exact (Gaussian root, Laplace closed form) or a lower bound (optimistic PLD).

        Args:
            delta: in ``(0, 1)``.

        Returns:
            ``epsilon >= 0``; a mechanism with this pair in its adjacency class is
            not ``(e, delta)``-DP for any ``e`` below it.

        Raises:
            PrivacyParameterError: a delta outside ``(0, 1)``.

        Example:
            >>> round(PrivacyProfile(0.0, (1.0,)).epsilon(0.1), 6)
            0.789279
        """
        d = check_open_unit(delta, "delta", error=_E)
        r = self._ratios
        if not r:
            return gaussian_profile_epsilon(self.gaussian_mu, d)
        if self.exact:
            return max(0.0, r[0] + 2.0 * math.log1p(-d))
        if self.gaussian_mu == 0:
            return float(max(0.0, self._laplace_pld.get_epsilon_for_delta(d)))
        # bisection on the lower-bound curve, keeping the end where it is still above delta
        lo, hi = 0.0, 1.0
        if self.delta(lo) <= d:
            return 0.0
        while self.delta(hi) > d:
            lo, hi = hi, 2.0 * hi
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.delta(mid) > d else (lo, mid)
        return lo

    def renyi(self, alpha: float) -> float:
        """The exact Rényi divergence ``D_alpha(P || P')`` of the pair, ``alpha > 1``.

        ``alpha mu^2 / 2`` plus, per Laplace coordinate of ratio ``r``,
        ``(1/(alpha - 1)) log(alpha/(2 alpha - 1) e^((alpha - 1) r) + (alpha - 1)/(2 alpha - 1) e^(-alpha r))``
        (Mironov, CSF 2017, Prop. 6); divergences of independent releases add.

        Args:
            alpha: the order, ``> 1`` and finite.

        Returns:
            ``D_alpha >= 0``.

        Raises:
            PrivacyParameterError: ``alpha <= 1`` or not finite.

        Example:
            >>> PrivacyProfile(2.0).renyi(3.0)
            6.0
        """
        a = check_positive(alpha, "alpha", error=_E)
        if a <= 1:
            raise PrivacyParameterError(f"alpha must be > 1, got {alpha!r}")
        return log_mgf(a - 1.0, gaussian_mus=[self.gaussian_mu], laplace_ratios=self._ratios) / (a - 1.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields: ``gaussian_mu``, ``laplace_ratios``, ``exact``, ``method``."""
        return {"gaussian_mu": self.gaussian_mu, "laplace_ratios": list(self._ratios), "exact": self.exact,
                "method": self.method}


def shift_profile(releases: Iterable[tuple[str, Any, float]], *,
                  value_discretization_interval: float = 1e-4) -> PrivacyProfile:
    """The privacy profile of a pair whose releases differ by known, deterministic shifts.

    Args:
        releases: per release ``(mechanism, shift, scale)``: ``mechanism`` is
            ``"gaussian"`` (``scale`` the standard deviation; the shift's L2
            norm counts) or ``"laplace"`` (``scale`` the Laplace ``b``; every
            coordinate of the shift is its own pair); ``shift`` a number or a
            vector, the noise-free value under ``P`` minus that under ``P'``.
        value_discretization_interval: the optimistic PLD's loss grid, in ``(0, 1]``.

    Returns:
        A :class:`PrivacyProfile`.

    Raises:
        UnknownMechanismError: a mechanism other than ``"gaussian"`` and ``"laplace"``.
        PrivacyParameterError: a non-finite shift or a bad scale (naming the release index).

    Example:
        >>> p = shift_profile([("laplace", [0.5, -0.5], 1.0), ("gaussian", 0.0, 2.0)])
        >>> p.laplace_ratios, p.method, p.max_loss
        ((0.5, 0.5), 'optimistic pld', 1.0)
    """
    g_shifts: list[Any] = []
    g_stds: list[float] = []
    ratios: list[float] = []
    for k, item in enumerate(releases):
        try:
            mechanism, shift, scale = item
        except (TypeError, ValueError):
            raise PrivacyParameterError(f"release {k}: expected (mechanism, shift, scale), got {item!r}") from None
        if mechanism == "gaussian":
            g_shifts.append(shift)
            g_stds.append(scale)
        elif mechanism == "laplace":
            v = np.asarray(shift, dtype=float).ravel()
            if not np.isfinite(v).all():
                raise PrivacyParameterError(f"release {k}: shift must be finite, got {shift!r}")
            b = check_positive(scale, "scale", error=_E, where=f"release {k}")
            ratios.extend(float(x) for x in np.abs(v) / b if x > 0)
        else:
            raise UnknownMechanismError(f"release {k}: unknown mechanism {mechanism!r}; known: gaussian, laplace")
    return PrivacyProfile(gaussian_mu(g_shifts, g_stds), tuple(ratios), value_discretization_interval)


@dataclass(frozen=True)
class ShiftCheck:
    """The outcome of :func:`profile_from_shifts`.

    Attributes:
        profile: the pair's exact profile when every shift is the same on every run, else ``None``.
        varying: ``(channel, agent, round)`` of the first release whose shift differs between runs, or ``None``.
        noise_free: ``(channel, agent, round)`` of the first noise-free release with a nonzero shift, or
            ``None``; such a release tells the two problems apart with certainty (``delta(epsilon) = 1``).
        reason: one line for the report.
    """

    profile: PrivacyProfile | None
    varying: tuple[str, int, int] | None
    noise_free: tuple[str, int, int] | None
    reason: str


def profile_from_shifts(shifts: Mapping[str, Any], scales: Mapping[str, Any], mechanisms: Mapping[str, str], *,
                        rtol: float = 1e-9, atol: float = 1e-12,
                        value_discretization_interval: float = 1e-4) -> ShiftCheck:
    """The exact profile of a pair from its realized per-release shifts, after checking they are deterministic.

    The shifts (noise-free value under ``P`` minus under ``P'``, replayed on
    the observed messages) of a pair whose releases compose into fixed shifted
    noise pairs are the same on every run. That is checked here on the runs:
    a release whose shift differs between runs by more than ``atol + rtol
    |shift|`` in some coordinate makes the profile unknown (``profile=None``,
    the release named). With one run nothing can be checked: replay the
    schedule with at least two noise draws.

    Args:
        shifts: per channel ``(R, T, N, d)`` (broadcast) or ``(R, T, N, N, d)``
            (unicast, ``[run, round - 1, sender, receiver]``), NaN where nothing was released.
        scales: per channel the noise scale per round ``(T,)`` or per round and
            sender ``(T, N)`` (Gaussian standard deviation, Laplace ``b``; 0 for
            a noise-free release).
        mechanisms: per channel ``"gaussian"`` or ``"laplace"``.
        rtol, atol: tolerances of the determinism check, ``>= 0``.
        value_discretization_interval: the optimistic PLD grid (Laplace).

    Returns:
        A :class:`ShiftCheck`.

    Raises:
        PrivacyParameterError: missing scales or mechanisms, bad shapes or scales, a release with some
            coordinates NaN (naming the channel, agent and round).
        UnknownMechanismError: a mechanism other than ``"gaussian"`` and ``"laplace"``.

    Example:
        >>> s = {"y": np.tile([[[[0.6], [0.0]]]], (3, 2, 1, 1))}  # 3 runs, 2 rounds, agent 0 shifted by 0.6
        >>> c = profile_from_shifts(s, {"y": np.ones(2)}, {"y": "gaussian"})
        >>> round(c.profile.gaussian_mu, 6), c.varying
        (0.848528, None)
    """
    rt = check_nonnegative(rtol, "rtol", error=_E)
    at = check_nonnegative(atol, "atol", error=_E)
    releases: list[tuple[str, Any, float]] = []
    for channel, shift in shifts.items():
        if channel not in scales or channel not in mechanisms:
            raise PrivacyParameterError(f"channel {channel!r} has shifts but no scale or mechanism")
        mech = mechanisms[channel]
        if mech not in ("gaussian", "laplace"):
            raise UnknownMechanismError(f"channel {channel!r}: unknown mechanism {mech!r}; known: gaussian, laplace")
        arr = np.asarray(shift, dtype=float)
        if arr.ndim not in (4, 5) or arr.shape[0] < 1:
            raise PrivacyParameterError(f"channel {channel!r}: shifts must be (R, T, N, d) or (R, T, N, N, d), "
                                        f"got shape {arr.shape}")
        rounds, agents = arr.shape[1], arr.shape[2]
        sc = np.asarray(scales[channel], dtype=float)
        if sc.shape == (rounds,):
            sc = np.repeat(sc[:, None], agents, axis=1)
        if sc.shape != (rounds, agents) or not (np.isfinite(sc) & (sc >= 0)).all():
            raise PrivacyParameterError(f"channel {channel!r}: scales must be finite, >= 0, of shape (T,) or (T, N) "
                                        f"= ({rounds},) or {(rounds, agents)}, got {scales[channel]!r}")
        first = arr[0]
        with np.errstate(invalid="ignore"):
            differ = ~((np.abs(arr - first[None]) <= at + rt * np.abs(first[None]))
                       | (np.isnan(arr) & np.isnan(first[None])))
        if differ.any():
            _, t, i = (int(v) for v in np.argwhere(differ)[0][:3])
            return ShiftCheck(None, (str(channel), i, t + 1), None,
                              f"channel {channel!r}, agent {i}, round {t + 1}: the shift differs between runs, so the "
                              "pair is not a fixed-shift composition (a projection, clipping or nonlinearity is "
                              "active); no exact profile")
        for idx in np.ndindex(*first.shape[:-1]):
            vec = first[idx]
            if np.isnan(vec).all():
                continue
            t, i = idx[0], idx[1]
            if np.isnan(vec).any():
                raise PrivacyParameterError(f"channel {channel!r}, agent {i}, round {t + 1}: some coordinates of the "
                                            "shift are NaN, not all")
            b = float(sc[t, i])
            if b == 0:
                if np.abs(vec).max() > at:
                    return ShiftCheck(None, None, (str(channel), i, t + 1),
                                      f"channel {channel!r}, agent {i}, round {t + 1}: a noise-free release differs "
                                      "between the problems: they are told apart with certainty (delta = 1)")
                continue
            releases.append((mech, vec, b))
    profile = shift_profile(releases, value_discretization_interval=value_discretization_interval)
    runs = {int(np.asarray(v).shape[0]) for v in shifts.values()}
    return ShiftCheck(profile, None, None,
                      f"every shift is the same on all {min(runs, default=0)} run(s): exact profile ({profile.method}, "
                      f"gaussian mu {profile.gaussian_mu:.6g}, {len(profile.laplace_ratios)} laplace coordinate(s))")


def schedule_average_lower(profiles: Sequence[PrivacyProfile], epsilon: float, *,
                           confidence: float = 0.95) -> DeltaLowerBound:
    """Lower bound on ``delta(epsilon) = E_S[delta_S(epsilon)]`` from one exact profile per sampled schedule.

    Evaluates every profile at ``epsilon`` (exact or a certified lower bound
    each) and bounds their mean with
    :func:`accounting.delta_bounds.average_delta_lower`: the only error is the
    sampling of schedules, and the bound holds with probability at least
    ``confidence``. Schedules must be sampled i.i.d. from the timing model,
    independently of the data and the noise, and be part of what the
    observer sees (the convention of :mod:`accounting.scheduled_replay`).

    Args:
        profiles: one :class:`PrivacyProfile` per sampled schedule (at least 2).
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.

    Returns:
        A :class:`~accounting.delta_bounds.DeltaLowerBound` (method ``"schedule average"``).

    Raises:
        PrivacyParameterError: fewer than 2 profiles, bad epsilon or confidence.

    Example:
        >>> b = schedule_average_lower([PrivacyProfile(1.0), PrivacyProfile(1.2)] * 100, 3.0)
        >>> b.lower < (gaussian_profile_delta(1.0, 3.0) + gaussian_profile_delta(1.2, 3.0)) / 2
        True
    """
    return average_delta_lower([p.delta(epsilon) for p in profiles], epsilon, confidence=confidence)


@dataclass(frozen=True)
class RenyiLowerBound:
    """A certified lower bound on a pair's Rényi divergence of one order.

    Attributes:
        method: how it was obtained.
        alpha: the order, ``> 1``.
        lower: the bound, ``>= 0``.
        confidence: the probability with which it holds.
        samples: how many samples it rests on.
    """

    method: str
    alpha: float
    lower: float
    confidence: float
    samples: int


def schedule_renyi_lower(profiles: Sequence[PrivacyProfile], alphas: Sequence[float], *,
                         confidence: float = 0.95, floor: float = 1.0) -> list[RenyiLowerBound]:
    """Lower bounds on the pair's ``D_alpha`` at each order, from one exact profile per sampled schedule.

    The observer sees the schedule ``S`` (drawn i.i.d., independently of the
    data and the noise; the convention of :func:`schedule_average_lower`),
    so ``D_alpha = log E_S[X] / (alpha - 1)`` with ``X = exp((alpha - 1) D_S)``
    and ``D_S`` the exact divergence given ``S`` (:meth:`PrivacyProfile.renyi`).
    For the ``k``-th smallest of the ``n`` sampled ``D_S``, ``d_(k)``,
    ``P_S[D_S >= d_(k)] >= q_k``, the Clopper-Pearson bound ``q_k`` with
    ``P(Binomial(n, q_k) >= n - k + 1) = a`` (no assumption on the
    distribution; ``q_1 = a^(1/n)``), for ``k = 1, 2, 4, ...`` up to ``n / 2``
    and ``k = n, n - 1, n - 3, ...`` down to ``n / 2 + 1`` at once (union bound; the top ranks weigh a few
    schedules with a far larger ``D_S``, e.g. a rule that steps further after a stale message, whose share of
    ``E_S[X]`` the bottom half never sees). As ``X >= 1``, ``E X = 1 + int_1^inf P[X >= x] dx
    >= 1 + sum_j q_(k_j) (X_(k_j) - X_(k_(j-1)))`` (``X_(k_0) = 1``): one
    schedule with a small ``D_S`` lowers the bound little. Every order gets
    its share of ``1 - confidence`` (union bound). Where every schedule has
    the same divergence ``m`` the bound is about ``m - log(1/q_1) / (alpha -
    1)`` for large ``m``: nearly exact; it never exceeds the largest ``d_(k)`` used. With ``floor = 0`` the sum
    starts from ``X_(k_0) = 0``: the bound on ``E Y`` for any ``Y >= 0`` whose samples are the ``X``, e.g. ``Y = X``
    where a draw from the order-``alpha`` escort given ``S`` kept the profile's Gaussian ``mu`` and 0 elsewhere
    (``E Y <= E_S E_escort[exp(alpha (alpha - 1) mu^2 / 2)]``, the pair's ``exp((alpha - 1) D_alpha)``).

    Args:
        profiles: one :class:`PrivacyProfile` per sampled schedule (at least 2; a profile object repeated for
            several schedules is evaluated once).
        alphas: the orders, each ``> 1`` and finite.
        confidence: in ``(0, 1)``: all the bounds hold together with at least this probability.
        floor: the least value of the sampled variable: 1 (``X >= 1``) or 0 (above).

    Returns:
        One :class:`RenyiLowerBound` per order (method ``"schedule order statistics of exact Renyi divergences"``).

    Raises:
        PrivacyParameterError: fewer than 2 profiles, no order, a bad order or confidence.

    Example:
        >>> b = schedule_renyi_lower([PrivacyProfile(1.0)] * 300, [2.0])[0]
        >>> 0.98 < b.lower < PrivacyProfile(1.0).renyi(2.0) == 1.0
        True
    """
    from scipy.special import logsumexp
    from scipy.stats import beta

    conf = check_open_unit(confidence, "confidence", error=_E)
    if floor not in (0.0, 1.0):
        raise PrivacyParameterError(f"schedule_renyi_lower: floor must be 0 or 1, got {floor!r}")
    if len(profiles) < 2:
        raise PrivacyParameterError(f"schedule_renyi_lower needs at least 2 profiles, got {len(profiles)}")
    orders = [float(a) for a in alphas]
    if not orders:
        raise PrivacyParameterError("schedule_renyi_lower needs at least one order")
    distinct = list({id(p): p for p in profiles}.values())
    n = len(profiles)
    low = [2**j for j in range(n.bit_length()) if 2**j <= max(1, n // 2)]  # 1, 2, 4, ... (1-based ranks)
    ks = sorted(set(low) | {n + 1 - k for k in low})  # and the top ones: n, n - 1, n - 3, ... (a heavy upper tail)
    share = (1.0 - conf) / (len(orders) * len(ks))
    # 1 - q_k = P-quantile of Beta(k, n - k + 1) (the complement, accurate near q = 1), then the weights of the
    # layer-cake sum: 1 - q_(k_1) on X = 1, q_(k_j) - q_(k_(j+1)) on X_(k_j), q_(k_J) on X_(k_J)
    comp = [float(beta.isf(share, k, n - k + 1)) for k in ks] + [1.0]
    weights = np.array([comp[0]] + [comp[j + 1] - comp[j] for j in range(len(ks))])
    method = "schedule order statistics of exact Renyi divergences"
    out = []
    for a in orders:
        value = {id(p): p.renyi(a) for p in distinct}  # each checks the order
        d = np.sort([value[id(p)] for p in profiles])[[k - 1 for k in ks]]
        log_ex = float(logsumexp(np.concatenate([[0.0], (a - 1.0) * d]), b=weights * np.r_[floor, np.ones(d.size)]))
        lower = min(float(d[-1]), log_ex / (a - 1.0))  # the clip only removes round-off (a mixture of X_(k) and 1)
        out.append(RenyiLowerBound(method, a, max(0.0, lower), conf, n))
    return out



LOSS_CAP_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
"""The truncation levels of :func:`loss_renyi_lower`, as fractions of its ``cap_epsilon`` (fixed in advance)."""


def loss_renyi_lower(losses: Any, alphas: Sequence[float], *, cap_epsilon: float,
                     confidence: float = 0.95) -> list[RenyiLowerBound]:
    """Lower bounds on a pair's ``D_alpha(P || P')`` from the exact privacy losses of transcripts drawn under ``P``.

    ``D_alpha = log E_P[Y] / (alpha - 1)`` with ``Y = exp((alpha - 1) L)``
    (Mironov, CSF 2017, Def. 3), ``L`` a transcript's exact loss
    ``log p / p'``. ``Y >= 0``, and ``min(Y, c) <= Y`` for a level ``c``
    fixed before the draws, here ``exp((alpha - 1) f cap_epsilon)`` for each
    ``f`` of ``LOSS_CAP_FRACTIONS`` (``cap_epsilon`` e.g. the pure
    composition of the releases' sensitivities; a larger loss is only
    truncated, which keeps the bound valid; a lower level trades the tail's
    mass for a smaller range, which pays at high orders), so
    the empirical Bernstein bound of
    :func:`accounting.delta_bounds.bernstein_mean_lower` on ``min(Y, c) / c``
    (in ``[0, 1]``; the bound scales with ``c``, so ``log E_P[Y]`` is bounded
    without forming ``c``, which overflows once ``(alpha - 1) cap_epsilon >
    709``) bounds ``E_P[Y]`` from below (the best level, union bound over the
    levels). No assumption on how the shifts
    vary from transcript to transcript (a projection active on some runs):
    only that the losses are i.i.d. under ``P`` and exact. Every order gets
    ``(1 - confidence) / len(alphas)`` (union bound).

    Args:
        losses: ``n >= 2`` exact losses (``+inf`` allowed: truncated).
        alphas: the orders, each ``> 1`` and finite, fixed before the draws.
        cap_epsilon: ``> 0``, fixed before the draws.
        confidence: in ``(0, 1)``: all the bounds hold together with at least this probability.

    Returns:
        One :class:`RenyiLowerBound` per order (method ``"exact replay losses, empirical Bernstein bound on
        E exp((alpha - 1) L)"``).

    Raises:
        PrivacyParameterError: fewer than 2 losses, a NaN loss, no order, a bad order, cap or confidence.

    Example:
        >>> x = np.random.default_rng(1).laplace(size=(1000, 4))
        >>> losses = (np.abs(x + 0.4) - np.abs(x)).sum(axis=1)  # four Laplace releases of ratio 0.4: D_2 = 0.539
        >>> b = loss_renyi_lower(losses, [2.0], cap_epsilon=1.6)[0]
        >>> 0.4 < b.lower < 0.539
        True
    """
    from .delta_bounds import bernstein_mean_lower

    conf = check_open_unit(confidence, "confidence", error=_E)
    cap = check_positive(cap_epsilon, "cap_epsilon", error=_E)
    if not math.isfinite(cap):
        raise PrivacyParameterError(f"loss_renyi_lower: cap_epsilon must be finite, got {cap!r}")
    orders = [float(a) for a in alphas]
    if not orders:
        raise PrivacyParameterError("loss_renyi_lower needs at least one order")
    if any(not (a > 1 and math.isfinite(a)) for a in orders):
        raise PrivacyParameterError(f"loss_renyi_lower: every order must be finite and > 1, got {orders!r}")
    x = np.asarray(losses, dtype=float).ravel()
    if np.isnan(x).any():
        raise PrivacyParameterError(f"loss_renyi_lower: loss {int(np.flatnonzero(np.isnan(x))[0])} is NaN")
    method = "exact replay losses, empirical Bernstein bound on E exp((alpha - 1) L)"
    out = []
    each = (1.0 - conf) / len(orders) / len(LOSS_CAP_FRACTIONS)
    for a in orders:
        best = 0.0  # log E_P[Y] >= 0 bounds nothing: D_alpha >= 0 always
        for f in LOSS_CAP_FRACTIONS:
            top = (a - 1.0) * f * cap  # log c
            lo = bernstein_mean_lower(np.exp(np.minimum((a - 1.0) * x - top, 0.0)), each, 1.0)
            if lo > 0:
                best = max(best, math.log(lo) + top)
        out.append(RenyiLowerBound(method, a, best / (a - 1.0), conf, x.size))
    return out

_TAIL_LOG = 700.0
"""``log(1/p)`` of the probability ``p`` that the round-off drift of a matched loss exceeds its allowance."""

_LOG_FLOAT_MAX = 709.0
"""Below ``log`` of the largest float: a larger ``log cap`` is an infinite cap."""


def matched_tilt_delta_lower(mu: float, epsilon: float, tilt: float, draws: int, misses: int, error: float, *,
                             drift: float = 0.0, spread: float = 0.0) -> DeltaLowerBound:
    """A certified lower bound on a pair's ``delta(epsilon)`` from its Gaussian closed form and tilted draws that
    kept every release's shift (:func:`accounting.tilted_replay.tilted_scheduled_transcripts` with ``offsets``).

    Setting: one schedule, Gaussian releases ``y_r = m_r + s_r z_r`` under ``P`` (``m'_r`` under ``P'``, both given
    the past), fixed offsets ``o_r`` with ``mu^2 = sum ||o_r||^2 / s_r^2``, and the event ``S``: every release's
    shift ``d_r = m_r - m'_r`` lies within ``eta_r`` of ``o_r`` coordinate by coordinate. With
    ``L_o = sum o_r . z_r / s_r + mu^2 / 2`` (law ``N(mu^2 / 2, mu^2)`` under ``P``: the closed form's loss) and the
    pair's loss ``L = sum d_r . z_r / s_r + ||d_r||^2 / (2 s_r^2)``, on ``S``
    ``L >= L_o - drift + M`` with ``drift = sum eta |o| / s^2`` (``||d||^2 >= ||o||^2 - 2 eta |o|``) and ``M`` a
    martingale of conditional variances summing to at most ``spread = sum eta^2 / s^2`` (stopped when ``S``
    fails), so ``P(M < -k) <= exp(-k^2 / (2 spread))``. ``g(L) = (1 - e^(epsilon - L))_+`` is ``>= 0`` and grows
    with ``L``, so with ``Delta = drift + k``

        delta(epsilon) = E_P[g(L)] >= E_P[g(L_o - Delta) 1_S] - P(M < -k)
                       >= delta_mu(epsilon + Delta) - E_P[g(L_o - Delta) 1_(not S)] - exp(-k^2 / (2 spread)).

    The middle term is an expectation under the proposal ``Q`` moving every release by ``tilt`` times its offset
    (``z = z_Q + tilt o / s``): ``E_Q[w g 1_(not S)]`` with ``w = exp(K - tilt L_o)``,
    ``K = tilt (1 + tilt) mu^2 / 2``, and ``w g <= cap`` (:func:`accounting.tilting.chernoff_log_cap` at
    ``epsilon + Delta``, any tilt; not clipped at 1: ``E_P[g 1_(not S)]`` is not bounded by ``Q(not S)``, and a tilt
    far beyond the Chernoff one has a cap far above 1), and at most the closed form itself. So it is at most
    ``min(cap q, delta_mu(epsilon + Delta))``, ``q = Q(not S)``: ``draws`` transcripts drawn
    under ``Q`` with ``misses`` outside ``S`` bound ``q`` by the one-sided Clopper–Pearson bound at ``error``
    (``1 - error^(1/n)`` when none missed). The bound holds with probability at least ``1 - error``. ``k`` is
    ``sqrt(2 spread 700)`` (the drift's tail ``e^(-700)`` is subtracted too). The closed form is exact only on
    ``S``: a projection active under the tilt puts its draws outside ``S`` and leaves nothing.

    Args:
        mu: the offsets' composed ``mu`` (``> 0``).
        epsilon: ``>= 0``.
        tilt: the proposal's ``lambda >= 0`` (fixed before the draw).
        draws: transcripts drawn under ``Q`` (``>= 1``); misses: how many left ``S`` (``0 .. draws``).
        error: in ``(0, 1)``.
        drift, spread: the round-off allowances above (``>= 0``).

    Returns:
        A :class:`~accounting.delta_bounds.DeltaLowerBound` (method ``"exact profile less the tilt margin"``;
        ``lower`` may be negative: nothing certified), at confidence ``1 - error``.

    Raises:
        PrivacyParameterError: a bad parameter, named.

    Example:
        >>> b = matched_tilt_delta_lower(1.0, 4.0, 3.7, 1000, 0, 0.01)
        >>> 4.5e-5 < b.lower < gaussian_profile_delta(1.0, 4.0)
        True
    """
    from .auditors import clopper_pearson_bound_many
    from .tilting import chernoff_log_cap

    m = check_positive(mu, "mu", error=_E)
    eps = check_nonnegative(epsilon, "epsilon", error=_E)
    lam = check_nonnegative(tilt, "tilt", error=_E)
    a = check_open_unit(error, "error", error=_E)
    b = check_nonnegative(drift, "drift", error=_E)
    v = check_nonnegative(spread, "spread", error=_E)
    if not (isinstance(draws, (int, np.integer)) and draws >= 1 and isinstance(misses, (int, np.integer))
            and 0 <= misses <= draws):
        raise PrivacyParameterError(f"need draws >= 1 and 0 <= misses <= draws, got {misses!r} of {draws!r}")
    q = float(clopper_pearson_bound_many(int(misses), int(draws), min(1.0 - 1e-15, 2.0 * a), upper=True))
    k = math.sqrt(2.0 * v * _TAIL_LOG)
    shifted = eps + b + k
    log_cap = chernoff_log_cap(lam, shifted, gaussian_mus=[m])
    cap = math.exp(log_cap) if log_cap < _LOG_FLOAT_MAX else math.inf
    closed = gaussian_profile_delta(m, shifted)
    tail = math.exp(-_TAIL_LOG) if v > 0 else 0.0
    # the missed part is at most cap q, and at most the whole closed form (never clip cap at 1: P(not S) is not q)
    lower = closed - min(closed, cap * q) - tail
    return DeltaLowerBound("exact profile less the tilt margin", eps, float(lower), gaussian_profile_delta(m, eps),
                           1.0 - a, int(draws), {"misses": int(misses), "q_upper": q, "cap": cap, "tilt": lam,
                                                 "loss_allowance": b + k, "closed_form": closed})

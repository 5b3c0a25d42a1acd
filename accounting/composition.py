"""Composition of the releases in a :class:`~accounting.ledger.Ledger`: basic, advanced, RDP and PLD.

The accountant does **not** trust ``Release.claimed_sensitivity``. Every
function takes a ``sensitivity`` argument, the sensitivity the *caller* vouches
for, in one of three forms:

* a float: the same sensitivity for every release;
* a callable ``Release -> float`` (e.g. ``lambda r: huang2015_release_sensitivity(r.round, ...)``);
* a mapping ``(agent, round) -> float``; every release of that agent in that
  round gets that value, a missing key is an error.

To use the algorithm's own claim, pass :func:`claimed` explicitly.
Sensitivities are L1 for Laplace and L2 for Gaussian releases and refer to the
whole released vector, so ``Release.dimension`` never enters. A release with
sensitivity 0 does not depend on the private datum and costs nothing: it is
skipped explicitly (not turned into a zero-noise-multiplier event).

Per release, with ``ratio = sensitivity / scale``: a Laplace release is pure
``ratio``-DP; a Gaussian release is the Gaussian mechanism with
``mu = ratio`` (exact delta(epsilon) curve, :func:`~accounting.mechanisms.gaussian_delta`).
For Laplace, the one-dimensional pair ``Lap(0, b)`` vs ``Lap(Delta, b)`` is
used, as dp_accounting's ``LaplaceDpEvent`` does: exact for pure epsilon; for
(epsilon, delta), shifts split over several coordinates came out dominated by
it in our numerical checks (tests), which is evidence, not a proof. For
Gaussian noise the L2 pair is exact by rotation invariance.

Methods (each returns an epsilon valid at the stated total delta):

* :func:`basic_composition`: sum of per-release epsilons;
* :func:`advanced_composition`: Dwork-Rothblum-Vadhan (2010) / Kairouz et al. (2015);
* :func:`rdp_epsilon`: Renyi DP via dp_accounting's ``RdpAccountant``;
* :func:`pld_epsilon`, :func:`pld_delta`, :func:`delta_curve`: privacy loss
  distributions (connect-the-dots, pessimistic), the tightest of the four.

Scope: :func:`network_wide` composes the releases of *all* agents: the
guarantee when one private datum can influence every agent's releases (e.g. a
datum of agent i propagates through consensus into everybody's iterates).
:func:`per_agent` composes each agent's releases separately: the guarantee
when only its owner's releases depend on a datum.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import log_ndtr

from .errors import AccountingError, PrivacyParameterError, UnknownMethodError
from .ledger import Ledger, Release
from .mechanisms import _gaussian_epsilon_mu

__all__ = [
    "Sensitivity",
    "claimed",
    "basic_composition",
    "advanced_composition",
    "rdp_epsilon",
    "pld_epsilon",
    "pld_delta",
    "delta_curve",
    "per_agent",
    "network_wide",
    "CompositionReport",
    "compose",
    "METHODS",
]

Sensitivity = Union[float, Callable[[Release], float], Mapping[tuple[int, int], float]]
"""A float, a callable ``Release -> float`` or a mapping ``(agent, round) -> float``."""

METHODS: tuple[str, ...] = ("basic", "advanced", "rdp", "pld")
"""Method names understood by :func:`compose`."""

_TAIL_MASS_TRUNCATION = 1e-15  # per convolution, as dp_accounting; truncation is pessimistic
_CHUNK_POINTS = 1 << 22  # Laplace leaves are built and composed this many grid points at a time
_MAX_GRID = 1 << 25  # refuse PLD grids above ~3.4e7 points (270 MB); coarsen the interval instead


# --------------------------------------------------------------------------- sensitivities


def claimed(release: Release) -> float:
    """The algorithm's claimed sensitivity of a release, for callers who choose to trust it.

    Pass it explicitly as ``sensitivity=claimed``; the accountant never uses it
    on its own.

    Args:
        release: a ledger record.

    Returns:
        ``release.claimed_sensitivity``.

    Raises:
        PrivacyParameterError: the release claims no sensitivity (NaN).

    Example:
        >>> claimed(Release(0, 1, 1.0, "laplace", 2.0, 1, claimed_sensitivity=0.5))
        0.5
    """
    s = release.claimed_sensitivity
    if s is None or math.isnan(s):
        raise PrivacyParameterError(
            f"agent {release.agent}, round {release.round}: the release claims no sensitivity "
            f"(claimed_sensitivity={s!r})"
        )
    return float(s)


def _sensitivity_of(release: Release, sensitivity: Sensitivity) -> float:
    if isinstance(sensitivity, Mapping):
        key = (release.agent, release.round)
        if key not in sensitivity:
            raise PrivacyParameterError(
                f"sensitivity mapping has no entry for (agent, round) = {key!r}"
            )
        value: Any = sensitivity[key]
    elif callable(sensitivity):
        value = sensitivity(release)
    else:
        value = sensitivity
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(
            f"agent {release.agent}, round {release.round}: sensitivity must be a real number, got {value!r}"
        )
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise PrivacyParameterError(
            f"agent {release.agent}, round {release.round}: sensitivity must be nonnegative and finite, got {value!r}"
        )
    return v


def _check_sensitivity_arg(sensitivity: object) -> None:
    if isinstance(sensitivity, Mapping) or callable(sensitivity):
        return
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(
            f"sensitivity must be a float, a callable Release -> float or a mapping (agent, round) -> float, "
            f"got {sensitivity!r}"
        )


def _ratios(ledger: Ledger, sensitivity: Sensitivity) -> tuple[Counter[float], Counter[float]]:
    """Counts of ``sensitivity / scale`` per mechanism, zero-sensitivity releases skipped."""
    if not isinstance(ledger, Ledger):
        raise AccountingError(f"expected a Ledger, got {type(ledger).__name__}")
    _check_sensitivity_arg(sensitivity)
    lap: Counter[float] = Counter()
    gau: Counter[float] = Counter()
    for r in ledger:
        s = _sensitivity_of(r, sensitivity)
        if s == 0:
            continue  # does not depend on the private datum: free
        ratio = s / r.scale
        if not math.isfinite(ratio):
            raise PrivacyParameterError(
                f"agent {r.agent}, round {r.round}: sensitivity / scale = {s!r} / {r.scale!r} is not finite"
            )
        (lap if r.mechanism == "laplace" else gau)[ratio] += 1
    return lap, gau


def _check_delta(name: str, value: object, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    ok = (0 <= v < 1) if allow_zero else (0 < v < 1)
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise PrivacyParameterError(f"{name} must lie in {interval}, got {value!r}")
    return v


def _check_epsilon(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise PrivacyParameterError(f"{name} must be nonnegative and finite, got {value!r}")
    return v


def _gaussian_share_epsilons(gau: Counter[float], delta: float, what: str) -> tuple[list[float], list[int]]:
    """Per distinct Gaussian ratio: epsilon at an equal share ``delta / k`` of the delta budget."""
    k = sum(gau.values())
    if k and delta <= 0:
        raise PrivacyParameterError(
            f"{what}: the ledger has {k} Gaussian release(s) with nonzero sensitivity, "
            f"which need delta > 0, got delta={delta!r}"
        )
    eps = [_gaussian_epsilon_mu(mu, delta / k) for mu in gau]
    return eps, list(gau.values())


# --------------------------------------------------------------------------- basic / advanced


def basic_composition(ledger: Ledger, sensitivity: Sensitivity, delta: float = 0.0) -> float:
    """Basic composition: the sum of the per-release epsilons.

    Laplace releases contribute their pure epsilon ``sensitivity / scale``. If
    the ledger has ``k > 0`` Gaussian releases (with nonzero sensitivity), each
    gets an equal share ``delta / k`` of the delta budget and contributes its
    analytic-Gaussian epsilon at that delta; the result is then
    ``(epsilon, delta)``-DP, otherwise pure ``epsilon``-DP.

    Args:
        ledger: the releases.
        sensitivity: float, callable ``Release -> float`` or mapping ``(agent, round) -> float``.
        delta: total delta, in [0, 1); must be > 0 if there are Gaussian releases.

    Returns:
        epsilon (0 for an empty ledger or all-zero sensitivities).

    Raises:
        PrivacyParameterError: bad delta, bad or negative sensitivity.

    Example:
        >>> led = Ledger([Release(0, t, float(t), "laplace", 2.0, 1) for t in (1, 2, 3)])
        >>> basic_composition(led, 1.0)
        1.5
    """
    d = _check_delta("delta", delta, allow_zero=True)
    lap, gau = _ratios(ledger, sensitivity)
    total = math.fsum(r * n for r, n in lap.items())
    eps, counts = _gaussian_share_epsilons(gau, d, "basic_composition")
    return total + math.fsum(e * n for e, n in zip(eps, counts))


def advanced_composition(ledger: Ledger, sensitivity: Sensitivity, delta: float, delta_prime: float) -> float:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010; heterogeneous form as in Kairouz et al. 2015).

    For releases that are ``(epsilon_i, delta_i)``-DP, the adaptive composition is
    ``(epsilon', sum delta_i + delta_prime)``-DP with
    ``epsilon' = sqrt(2 ln(1/delta_prime) sum epsilon_i^2) + sum epsilon_i (e^{epsilon_i} - 1)``.
    Laplace releases enter with their pure epsilon (``delta_i = 0``). Gaussian
    releases are not pure; each of the ``k`` Gaussian releases enters with the
    (epsilon_i, delta / k) pair of the analytic Gaussian mechanism, so the
    result holds at total delta ``delta + delta_prime``. The value is *not*
    clipped at the basic bound (it exceeds it for few, large epsilons).

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: delta spent inside the Gaussian releases, in [0, 1) (> 0 if any).
        delta_prime: the slack of the theorem, in (0, 1).

    Returns:
        epsilon', valid at total delta ``delta + delta_prime``.

    Raises:
        PrivacyParameterError: bad deltas or sensitivities.

    Example:
        >>> led = Ledger([Release(0, t, float(t), "laplace", 100.0, 1) for t in range(1, 1001)])
        >>> round(advanced_composition(led, 1.0, 0.0, 1e-6), 3), basic_composition(led, 1.0)
        (1.763, 10.0)
    """
    d = _check_delta("delta", delta, allow_zero=True)
    dp = _check_delta("delta_prime", delta_prime)
    lap, gau = _ratios(ledger, sensitivity)
    eps, counts = _gaussian_share_epsilons(gau, d, "advanced_composition")
    pairs = list(lap.items()) + list(zip(eps, counts))
    if not pairs:
        return 0.0
    sq = math.fsum(e * e * n for e, n in pairs)
    drift = math.fsum(e * math.expm1(e) * n for e, n in pairs)
    return math.sqrt(2 * math.log(1 / dp) * sq) + drift


# --------------------------------------------------------------------------- RDP


def _events(lap: Counter[float], gau: Counter[float]) -> dp_event.DpEvent:
    """One ``ComposedDpEvent`` of self-composed Laplace / Gaussian events (noise multiplier = 1 / ratio)."""
    events: list[dp_event.DpEvent] = []
    for ratio, n in lap.items():
        e = dp_event.LaplaceDpEvent(noise_multiplier=1.0 / ratio)
        events.append(e if n == 1 else dp_event.SelfComposedDpEvent(e, n))
    for ratio, n in gau.items():
        e = dp_event.GaussianDpEvent(noise_multiplier=1.0 / ratio)
        events.append(e if n == 1 else dp_event.SelfComposedDpEvent(e, n))
    return dp_event.ComposedDpEvent(events)


def _rdp_accountant(ledger: Ledger, sensitivity: Sensitivity,
                    orders: Sequence[float] | None) -> rdp_privacy_accountant.RdpAccountant | None:
    lap, gau = _ratios(ledger, sensitivity)
    if not lap and not gau:
        return None
    if orders is not None:
        orders = [float(o) for o in orders]
        if not orders or any(not (o > 1 and math.isfinite(o)) for o in orders):
            raise PrivacyParameterError(f"RDP orders must be a nonempty list of finite numbers > 1, got {orders!r}")
    acc = rdp_privacy_accountant.RdpAccountant(orders=orders)
    acc.compose(_events(lap, gau))
    return acc


def rdp_epsilon(ledger: Ledger, sensitivity: Sensitivity, delta: float,
                orders: Sequence[float] | None = None) -> float:
    """Epsilon from Renyi-DP composition (dp_accounting ``RdpAccountant``).

    Each release becomes ``LaplaceDpEvent(scale / sensitivity)`` or
    ``GaussianDpEvent(sigma / sensitivity)``; identical events are grouped in a
    ``SelfComposedDpEvent`` and all composed in one ``ComposedDpEvent``. The
    RDP-to-DP conversion (Canonne, Kamath & Steinke 2020, Prop. 12) is looser
    than PLD accounting.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: target delta in (0, 1).
        orders: RDP orders (> 1); ``None`` for dp_accounting's defaults (1.1 ... 1024).

    Returns:
        epsilon.

    Raises:
        PrivacyParameterError: bad delta, orders or sensitivities.

    Example:
        >>> led = Ledger([Release(0, t, float(t), "gaussian", 10.0, 1) for t in range(1, 101)])
        >>> round(rdp_epsilon(led, 1.0, 1e-5), 3), round(pld_epsilon(led, 1.0, 1e-5), 3)
        (4.729, 4.377)
    """
    d = _check_delta("delta", delta)
    acc = _rdp_accountant(ledger, sensitivity, orders)
    return 0.0 if acc is None else float(acc.get_epsilon(d))


# --------------------------------------------------------------------------- PLD
#
# A discretized PLD is (lower, probs, infinity_mass): probs[j] is the mass of
# privacy loss (lower + j) * h. Leaves are built with the pessimistic
# connect-the-dots construction (Doroshenko et al. 2022, Algorithm 1), exactly
# as dp_accounting's from_laplace_mechanism / from_gaussian_mechanism do, but
# vectorized over release types (dp_accounting builds one release at a time,
# ~1-2 ms each). Composition is dp_accounting's own (DensePLDPmf.compose and
# self_compose, with their pessimistic tail truncation); releases are grouped by
# ratio (self-composition), then the groups are composed pairwise in a balanced
# tree, smallest supports first. All Gaussian releases collapse into one Gaussian with
# mu = sqrt(sum mu_i^2): the composition of Gaussian mechanisms is exactly a
# Gaussian mechanism (Dong, Roth & Su 2022, Cor. 3.3).

_Pmf = tuple[int, np.ndarray, float]


def _connect_dots(h: float, lower: int, upper: int, deltas: np.ndarray) -> _Pmf:
    """Pessimistic connect-the-dots PMF on ``lower..upper`` (dp_accounting's fixed-gap formula)."""
    deltas = np.minimum.accumulate(np.clip(deltas, 0.0, 1.0))
    if lower == upper:
        return lower, np.array([1.0 - deltas[0]]), float(deltas[0])
    dd = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1.0 - deltas[0] + dd[0] / math.expm1(h)
    probs[1:-1] = (dd[1:] - dd[:-1] * math.exp(h)) / math.expm1(h)
    probs[-1] = dd[-1] / math.expm1(-h)
    return lower, np.maximum(probs, 0.0), float(deltas[-1])


def _grid(lo_value: float, hi_value: float, h: float) -> tuple[int, int]:
    lower, upper = math.floor(lo_value / h), math.ceil(hi_value / h)
    if upper - lower + 1 > _MAX_GRID:
        raise PrivacyParameterError(
            f"value_discretization_interval={h!r} needs {upper - lower + 1} grid points for privacy losses in "
            f"[{lo_value:.4g}, {hi_value:.4g}] (limit {_MAX_GRID}); use a coarser interval"
        )
    return lower, upper


def _laplace_pmfs(ratios: Sequence[float], h: float) -> list[_Pmf]:
    """PLDs of Lap(0, 1) vs Lap(r, 1) for many r at once (connect-the-dots, vectorized over r).

    ``delta_r(e) = 1 - e^{(e - r)/2}`` on [-r, r], ``1 - e^e`` below, 0 above;
    grid ``floor(-r/h) .. ceil(r/h)`` (at least 3 points as r > 0), so the
    mass at +infinity is ``delta_r(ceil(r/h) h) = 0``.
    """
    r = np.asarray(ratios, dtype=float)
    if r.size == 0:
        return []
    lowers = np.floor(-r / h).astype(np.int64)
    uppers = np.ceil(r / h).astype(np.int64)
    sizes = uppers - lowers + 1
    if sizes.max(initial=0) > _MAX_GRID:
        _grid(-float(r.max()), float(r.max()), h)  # raises with the explanation
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    seg = np.repeat(np.arange(len(r)), sizes)
    local = np.arange(int(sizes.sum())) - starts[seg]
    rr = r[seg]
    e = (lowers[seg] + local) * h
    # branches clamped to their domain so the unused ones cannot overflow
    inner = -np.expm1(np.minimum(e - rr, 0.0) / 2)
    below = -np.expm1(np.minimum(e, 0.0))
    d = np.where(e >= rr, 0.0, np.where(e >= -rr, inner, below))
    dd = np.diff(d)
    before = np.concatenate(([0.0], dd))  # d[k] - d[k-1]
    after = np.concatenate((dd, [0.0]))  # d[k+1] - d[k]
    em = math.expm1(h)
    probs = (after - before * math.exp(h)) / em  # interior points
    first, last = starts, starts + sizes - 1
    probs[first] = 1.0 - d[first] + after[first] / em
    probs[last] = before[last] / math.expm1(-h)
    np.maximum(probs, 0.0, out=probs)
    return [(int(lo), p, 0.0) for lo, p in zip(lowers, np.split(probs, starts[1:]))]


def _gaussian_pmf(mu: float, h: float) -> _Pmf:
    """PLD of the Gaussian mechanism with ``mu = sensitivity / sigma``: loss ~ N(mu^2/2, mu^2)."""
    z = 10.0  # losses beyond mean +- 10 sd (mass < 1e-23 per side) go to the end points / +infinity
    lower, upper = _grid(mu * mu / 2 - z * mu, mu * mu / 2 + z * mu, h)
    e = np.arange(lower, upper + 1) * h
    l1 = log_ndtr(mu / 2 - e / mu)
    l2 = e + log_ndtr(-mu / 2 - e / mu)
    with np.errstate(divide="ignore", invalid="ignore"):
        deltas = np.where(l2 < l1, np.exp(l1) * -np.expm1(np.minimum(l2 - l1, 0.0)), 0.0)
    return _connect_dots(h, lower, upper, deltas)


def _leaf(pmf: _Pmf, h: float) -> pld_pmf.DensePLDPmf:
    lower, probs, inf_mass = pmf
    return pld_pmf.DensePLDPmf(h, lower, probs, min(inf_mass, 1.0), pessimistic_estimate=True)


def _compose_tree(pmfs: list[pld_pmf.DensePLDPmf]) -> pld_pmf.DensePLDPmf:
    """Compose with dp_accounting's ``DensePLDPmf.compose`` pairwise, smallest supports first."""
    level = sorted(pmfs, key=lambda p: p.size)
    while len(level) > 1:
        nxt = [level[i].compose(level[i + 1], tail_mass_truncation=_TAIL_MASS_TRUNCATION)
               for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = sorted(nxt, key=lambda p: p.size)
    return level[0]


def _laplace_chunk(chunk: Sequence[tuple[float, int]], h: float) -> pld_pmf.DensePLDPmf:
    """Composition of ``n`` Laplace releases of ratio ``r`` for every ``(r, n)`` in ``chunk``."""
    pmfs = [_leaf(p, h) for p in _laplace_pmfs([r for r, _ in chunk], h)]
    return _compose_tree([p if n == 1 else p.self_compose(n, tail_mass_truncation=_TAIL_MASS_TRUNCATION)
                          for p, (_, n) in zip(pmfs, chunk)])


def _check_interval(h: object) -> float:
    if isinstance(h, bool) or not isinstance(h, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(f"value_discretization_interval must be a real number, got {h!r}")
    v = float(h)
    if not (math.isfinite(v) and 0 < v <= 1):
        raise PrivacyParameterError(f"value_discretization_interval must lie in (0, 1], got {h!r}")
    return v


def _pld(ledger: Ledger, sensitivity: Sensitivity, h: float,
         engine: str) -> pld_lib.PrivacyLossDistribution | pld_privacy_accountant.PLDAccountant | None:
    if engine not in ("tree", "accountant"):
        raise UnknownMethodError(f"PLD engine must be 'tree' or 'accountant', got {engine!r}")
    lap, gau = _ratios(ledger, sensitivity)
    if not lap and not gau:
        return None
    if engine == "accountant":
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
        acc.compose(_events(lap, gau))
        return acc
    # Laplace leaves are built and composed in chunks of at most ~4e6 grid points
    # (32 MB), so memory stays bounded by a chunk plus the composed results
    leaves: list[pld_pmf.DensePLDPmf] = []
    chunk: list[tuple[float, int]] = []
    points = 0.0
    for r, n in sorted(lap.items()):
        chunk.append((r, n))
        points += 2 * r / h + 3
        if points > _CHUNK_POINTS:
            leaves.append(_laplace_chunk(chunk, h))
            chunk, points = [], 0.0
    if chunk:
        leaves.append(_laplace_chunk(chunk, h))
    if gau:
        mu = math.sqrt(math.fsum(r * r * n for r, n in gau.items()))
        leaves.append(_leaf(_gaussian_pmf(mu, h), h))
    return pld_lib.PrivacyLossDistribution(_compose_tree(leaves))


def pld_epsilon(ledger: Ledger, sensitivity: Sensitivity, delta: float,
                value_discretization_interval: float = 1e-4, engine: str = "tree") -> float:
    """Epsilon from privacy-loss-distribution composition (pessimistic, i.e. a valid upper bound).

    ``engine="tree"`` (default) builds each distinct release type's PLD with
    dp_accounting's connect-the-dots construction (vectorized over release
    types), self-composes groups of identical releases, merges all Gaussian
    releases into one exact Gaussian and composes the groups in a balanced
    tree. ``engine="accountant"`` feeds the same ``ComposedDpEvent`` as
    :func:`rdp_epsilon` to dp_accounting's ``PLDAccountant`` (sequential; a
    cross-check, ~1 ms per distinct event plus a growing convolution).

    Accuracy: losses are discretized to multiples of ``h =
    value_discretization_interval``; one Laplace or Gaussian release (or all
    Gaussians, merged) is overestimated by at most ``h``, ``k`` Laplace
    releases by at most ``k h`` in the worst (pure, tiny-delta) case and far
    less typically. Each convolution moves <= 1e-15 of tail mass to
    infinite loss, so deltas below ~ (number of releases) * 1e-15 are not
    resolved (epsilon is then ``inf``).

    Cost (benchmarks/bench_pld_composition.py, 2-core box): 10^4 Laplace
    releases with 9,933 distinct noise multipliers, epsilon ~ 6.8: 0.85 s at
    h = 1e-4, 0.19 s at h = 1e-3 (epsilon + 0.004), 10 s at h = 1e-5 (same
    epsilon to 4 digits). Time and memory grow with the width of the composed
    loss distribution over ``h``; use a coarser ``h`` for very large epsilons.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: target delta in (0, 1).
        value_discretization_interval: loss grid ``h`` in (0, 1]; coarser is faster.
        engine: ``"tree"`` or ``"accountant"``.

    Returns:
        epsilon (``inf`` if delta is below the mass at infinite loss).

    Raises:
        PrivacyParameterError: bad delta, interval or sensitivities.
        UnknownMethodError: unknown engine.

    Example:
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 2.0, 1)])
        >>> abs(pld_epsilon(led, 1.0, 1e-9) - 0.5) <= 1e-4
        True
    """
    d = _check_delta("delta", delta)
    h = _check_interval(value_discretization_interval)
    pld = _pld(ledger, sensitivity, h, engine)
    if pld is None:
        return 0.0
    if isinstance(pld, pld_privacy_accountant.PLDAccountant):
        return float(pld.get_epsilon(d))
    return float(pld.get_epsilon_for_delta(d))


def pld_delta(ledger: Ledger, sensitivity: Sensitivity, epsilon: float,
              value_discretization_interval: float = 1e-4, engine: str = "tree") -> float:
    """Delta at ``epsilon`` from PLD composition (an upper bound; see :func:`pld_epsilon`).

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        epsilon: epsilon >= 0 (0 gives the total-variation bound).
        value_discretization_interval: loss grid in (0, 1].
        engine: ``"tree"`` or ``"accountant"``.

    Returns:
        delta in [0, 1].

    Raises:
        PrivacyParameterError: bad epsilon, interval or sensitivities.
        UnknownMethodError: unknown engine.

    Example:
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 1.0, 1)])
        >>> pld_delta(led, 1.0, 1.0)
        0.0
    """
    e = _check_epsilon("epsilon", epsilon)
    h = _check_interval(value_discretization_interval)
    pld = _pld(ledger, sensitivity, h, engine)
    if pld is None:
        return 0.0
    if isinstance(pld, pld_privacy_accountant.PLDAccountant):
        return float(pld.get_delta(e))
    return float(pld.get_delta_for_epsilon(e))


def delta_curve(ledger: Ledger, sensitivity: Sensitivity, epsilons: Iterable[float],
                method: str = "pld", value_discretization_interval: float = 1e-4,
                orders: Sequence[float] | None = None) -> np.ndarray:
    """Delta as a function of epsilon, composing the ledger once.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        epsilons: epsilons >= 0.
        method: ``"pld"`` (tight) or ``"rdp"``.
        value_discretization_interval: PLD loss grid.
        orders: RDP orders (``"rdp"`` only).

    Returns:
        array of deltas, same length as ``epsilons``, non-increasing in epsilon.

    Raises:
        PrivacyParameterError: bad epsilons, interval or sensitivities.
        UnknownMethodError: a method other than ``"pld"`` / ``"rdp"``.

    Example:
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 1.0, 1)])
        >>> [round(float(d), 4) for d in delta_curve(led, 1.0, [0.0, 1.0])]
        [0.3935, 0.0]
    """
    eps = [_check_epsilon("epsilon", e) for e in epsilons]
    if method == "pld":
        h = _check_interval(value_discretization_interval)
        pld = _pld(ledger, sensitivity, h, "tree")
        if pld is None:
            return np.zeros(len(eps))
        assert isinstance(pld, pld_lib.PrivacyLossDistribution)
        return np.asarray(pld.get_delta_for_epsilon(eps) if eps else [], dtype=float).reshape(len(eps))
    if method == "rdp":
        acc = _rdp_accountant(ledger, sensitivity, orders)
        if acc is None:
            return np.zeros(len(eps))
        return np.array([acc.get_delta(e) for e in eps], dtype=float)
    raise UnknownMethodError(f"delta_curve method must be 'pld' or 'rdp', got {method!r}")


# --------------------------------------------------------------------------- scopes and report


def per_agent(ledger: Ledger, fn: Callable[..., Any], **kwargs: Any) -> dict[int, Any]:
    """Apply a composition function to each agent's releases separately.

    The right scope when a private datum influences only its owner's releases.

    Args:
        ledger: the releases.
        fn: e.g. :func:`pld_epsilon`; called as ``fn(ledger.for_agent(a), **kwargs)``.
        **kwargs: passed to ``fn`` (``sensitivity=...``, ``delta=...``).

    Returns:
        ``{agent: value}`` for every agent with a release.

    Example:
        >>> led = Ledger([Release(a, 1, 1.0, "laplace", 2.0, 1) for a in (0, 1)])
        >>> per_agent(led, basic_composition, sensitivity=1.0)
        {0: 0.5, 1: 0.5}
    """
    return {a: fn(ledger.for_agent(a), **kwargs) for a in ledger.agents}


def network_wide(ledger: Ledger, fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Apply a composition function to the releases of all agents together.

    The guarantee when one private datum can influence every agent's releases
    (through the consensus dynamics); never smaller than the per-agent values.

    Args:
        ledger: the releases.
        fn: e.g. :func:`pld_epsilon`.
        **kwargs: passed to ``fn``.

    Returns:
        ``fn(ledger, **kwargs)``.

    Example:
        >>> led = Ledger([Release(a, 1, 1.0, "laplace", 2.0, 1) for a in (0, 1)])
        >>> network_wide(led, basic_composition, sensitivity=1.0)
        1.0
    """
    return fn(ledger, **kwargs)


def _json_float(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass
class CompositionReport:
    """Epsilons per composition method, network-wide and per agent, all at total delta ``delta``.

    Attributes:
        delta: the total delta every epsilon is valid at.
        methods: the methods computed.
        releases: releases in the ledger.
        charged: releases with nonzero sensitivity (the others are free).
        network_wide: ``{method: epsilon}`` for all agents' releases composed.
        per_agent: ``{agent: {method: epsilon}}`` or ``None``.
        per_agent_max: ``{method: max over agents}`` or ``None``.
    """

    delta: float
    methods: tuple[str, ...]
    releases: int
    charged: int
    network_wide: dict[str, float]
    per_agent: dict[int, dict[str, float]] | None = None
    per_agent_max: dict[str, float] | None = field(default=None)

    @property
    def best(self) -> float:
        """The smallest network-wide epsilon (all methods are valid upper bounds at ``delta``)."""
        return min(self.network_wide.values()) if self.network_wide else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: agent keys become strings, infinite epsilons become ``None``."""
        def conv(d: Mapping[str, float]) -> dict[str, float | None]:
            return {k: _json_float(v) for k, v in d.items()}

        return {
            "delta": self.delta,
            "methods": list(self.methods),
            "releases": self.releases,
            "charged": self.charged,
            "network_wide": conv(self.network_wide),
            "best_network_wide": _json_float(self.best),
            "per_agent": None if self.per_agent is None else {str(a): conv(v) for a, v in self.per_agent.items()},
            "per_agent_max": None if self.per_agent_max is None else conv(self.per_agent_max),
        }


def _method_epsilons(ledger: Ledger, sensitivity: Sensitivity, delta: float, methods: Sequence[str],
                     value_discretization_interval: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in methods:
        if m == "basic":
            out[m] = basic_composition(ledger, sensitivity, delta)
        elif m == "advanced":
            _, gau = _ratios(ledger, sensitivity)
            if gau:  # half the budget inside the Gaussian releases, half as the theorem's slack
                out[m] = advanced_composition(ledger, sensitivity, delta / 2, delta / 2)
            else:
                out[m] = advanced_composition(ledger, sensitivity, 0.0, delta)
        elif m == "rdp":
            out[m] = rdp_epsilon(ledger, sensitivity, delta)
        elif m == "pld":
            out[m] = pld_epsilon(ledger, sensitivity, delta, value_discretization_interval)
    return out


def compose(ledger: Ledger, sensitivity: Sensitivity, delta: float = 1e-6,
            methods: Sequence[str] = METHODS, per_agent: bool = True,
            value_discretization_interval: float = 1e-4) -> CompositionReport:
    """All requested composition methods, network-wide and per agent, at one total delta.

    Every epsilon is valid at total delta ``delta``: basic shares it among the
    Gaussian releases; advanced uses it as the theorem's slack for a pure
    (Laplace-only) ledger and splits it half/half between the Gaussian
    releases and the slack otherwise; RDP and PLD use it directly.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: total delta in (0, 1).
        methods: subset of :data:`METHODS`.
        per_agent: also compose each agent's releases separately.
        value_discretization_interval: PLD loss grid.

    Returns:
        a :class:`CompositionReport`.

    Raises:
        PrivacyParameterError: bad delta or sensitivities.
        UnknownMethodError: a method not in :data:`METHODS`.

    Example:
        >>> led = Ledger([Release(a, t, float(t), "laplace", 50.0, 1) for a in (0, 1) for t in range(1, 101)])
        >>> rep = compose(led, 1.0, methods=("basic", "pld"))
        >>> rep.network_wide["basic"], rep.per_agent_max["basic"]
        (4.0, 2.0)
    """
    d = _check_delta("delta", delta)
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise UnknownMethodError(f"unknown composition method(s) {unknown or methods!r}; known: {', '.join(METHODS)}")
    lap, gau = _ratios(ledger, sensitivity)  # validates every sensitivity once, up front
    charged = sum(lap.values()) + sum(gau.values())
    nw = _method_epsilons(ledger, sensitivity, d, methods, value_discretization_interval)
    pa: dict[int, dict[str, float]] | None = None
    pa_max: dict[str, float] | None = None
    if per_agent:
        pa = {a: _method_epsilons(ledger.for_agent(a), sensitivity, d, methods, value_discretization_interval)
              for a in ledger.agents}
        pa_max = {m: max((v[m] for v in pa.values()), default=0.0) for m in methods}
    return CompositionReport(delta=d, methods=methods, releases=len(ledger), charged=charged,
                             network_wide=nw, per_agent=pa, per_agent_max=pa_max)

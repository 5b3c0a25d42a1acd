"""Basic and advanced composition of a ledger's releases (sums of per-release epsilons).

Example:
    >>> led = Ledger([Release(0, t, float(t), "laplace", 4.0, 1) for t in (1, 2)])
    >>> basic_composition(led, 1.0)
    0.5
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ..ledger import Ledger, Release  # noqa: F401  (Release: docstring examples)
from .inputs import Sensitivity, _check_delta, _gaussian_share_epsilons, _ratio_multisets, _ratios

__all__ = ["basic_composition", "basic_composition_table", "advanced_composition"]


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
    return _basic(*_ratios(ledger, sensitivity), _check_delta("delta", delta, allow_zero=True))


def _basic(lap: Counter[float], gau: Counter[float], delta: float) -> float:
    """:func:`basic_composition` of releases with these ratio counts (exact sums: it reads their multisets)."""
    total = math.fsum(r * n for r, n in lap.items())
    eps, counts = _gaussian_share_epsilons(gau, delta, "basic_composition")
    return total + math.fsum(e * n for e, n in zip(eps, counts))


def basic_composition_table(ledgers: Sequence[Ledger], sensitivity: Sensitivity, delta: float = 0.0) -> list[float]:
    """:func:`basic_composition` of several ledgers (e.g. one per agent), one value per ledger.

    The value depends only on the multisets of the ledger's ratios (``math.fsum`` is exactly rounded), so ledgers
    with the same ratios (every agent's releases on a lockstep run) share one computation of their Gaussian
    epsilons (a root search each). Every entry equals ``basic_composition(ledger, sensitivity, delta)`` exactly.

    Args:
        ledgers: the ledgers, each composed on its own.
        sensitivity: as in :func:`basic_composition`, for every ledger.
        delta: total delta of each ledger, in [0, 1); > 0 if it has Gaussian releases.

    Returns:
        One epsilon per ledger, in their order.

    Raises:
        PrivacyParameterError: bad delta, bad or negative sensitivity.

    Example:
        >>> a, b = (Ledger([Release(i, 1, 1.0, "gaussian", 2.0, 1)]) for i in (0, 1))
        >>> basic_composition_table([a, b], 1.0, 1e-5) == [basic_composition(a, 1.0, 1e-5)] * 2
        True
    """
    d = _check_delta("delta", delta, allow_zero=True)
    done: dict[tuple[object, ...], float] = {}
    out = []
    for ledger in ledgers:
        lap, gau = _ratios(ledger, sensitivity)
        key = _ratio_multisets(lap, gau)
        if key not in done:
            done[key] = _basic(lap, gau, d)
        out.append(done[key])
    return out


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

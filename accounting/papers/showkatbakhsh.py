"""Showkatbakhsh, Karakus and Diggavi (arXiv 2019): Gaussian noise on states, Theorem 1's tail bound.

The accountant's side of the paper: Prop. 3's conditional sensitivity
(:func:`showkatbakhsh_sensitivity`, :func:`showkatbakhsh_release_sensitivity`),
Corollary 1's ``kappa`` and Theorem 2's noise schedule
(:func:`showkatbakhsh_kappa`, :func:`showkatbakhsh_noise_scales`), the claim
(:func:`showkatbakhsh_claim`) and Theorem 1's own argument recomputed on
realized scales (:func:`showkatbakhsh_alpha`,
:func:`showkatbakhsh_effective_epsilon`); :data:`SPEC` collects them.

Every function is a plain function of numbers (gradient bounds, step sizes,
noise scales ...); none looks at an algorithm object or at a sensitivity an
algorithm claims. Each sensitivity docstring states which state the bound is
about, which release masks it with which noise scale, and when the bound holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from topology.audit import AssumptionSet, EachRound, Spectral, fixed_symmetric_steps
from topology.checks import properties as _P
from topology.validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_real

from ..claims import Claim
from ..errors import PrivacyParameterError
from .spec import AccountantSpec

__all__ = [
    "ASSUMPTIONS",
    "showkatbakhsh_sensitivity",
    "showkatbakhsh_release_sensitivity",
    "showkatbakhsh_kappa",
    "showkatbakhsh_noise_scales",
    "showkatbakhsh_claim",
    "showkatbakhsh_alpha",
    "showkatbakhsh_effective_epsilon",
    "SPEC",
]

_E = PrivacyParameterError
_SHOWKATBAKHSH2019 = "Showkatbakhsh, Karakus and Diggavi (arXiv 2019)"


def _showkatbakhsh_step(t: int, eta_t: float | None, c: float | None) -> float:
    if (eta_t is None) == (c is None):
        raise PrivacyParameterError(
            f"give exactly one of eta_t and c (eta_t = c/t), got eta_t={eta_t!r}, c={c!r}"
        )
    if eta_t is not None:
        return check_nonnegative(eta_t, "eta_t", error=_E)
    return check_positive(c, "c", error=_E) / t


def showkatbakhsh_sensitivity(
    t: int, *, G: float, eta_t: float | None = None, c: float | None = None, T: int | None = None
) -> float:
    """Conditional L2 sensitivity ``Delta(t)`` of ``x_i(t)`` (Showkatbakhsh et al., arXiv 2019, Def. 4, Prop. 3).

    Bounded quantity: node ``i``'s Stage-I state after the gradient step of
    round ``t``, ``x_i(t) = Proj_X(z_i(t) - eta_t grad f_i(z_i(t)))`` (eq. 8),
    with the messages ``y(1..t)`` held fixed. Then ``z_i(t) = Proj_X(sum_j
    w_ij y_j(t))`` (eq. 9) is the same under both data sets and lies *inside*
    ``X``, where Assumption 2 bounds both gradients by ``G``; projection is
    non-expansive, so ``Delta(t) <= 2 eta_t G`` (Prop. 3), ``eta_t = c/t``.

    Masking message: ``x_i(t)`` is masked by ``y_i(t+1) = x_i(t) + n_i(t)``
    with ``n_i(t) ~ N(0, M_t^2 I)`` (eq. 11). The pair that enters Theorem 1's
    sum ``sum_t Delta(t)^2 / M_t^2`` is therefore (state of round ``t``, noise
    ``n(t)`` of scale ``M_t``, released as message ``y(t+1)``); the last one,
    ``y(T+1) = x(T) + n(T)``, must carry noise as eq. (11) says, although the
    paper's Stage II description sends ``x(T)`` unperturbed, which would
    reveal ``x(T)`` outside Theorem 1's proof. In Stage II (``t > T``) the state is a function of the messages
    only, so its conditional sensitivity is 0.

    ``G`` here is the privacy-relevant gradient bound (``G_priv``: for
    ERM costs, the bound on one sample's gradient change), which may differ
    from the convergence constant.

    Args:
        t: round, ``t >= 1``.
        G: gradient bound on ``X``, ``>= 0``.
        eta_t: the step size of round ``t``; or give ``c`` instead.
        c: step-size constant, ``eta_t = c / t`` (Theorem 2).
        T: Stage-I horizon; if given and ``t > T`` the result is 0.

    Returns:
        ``2 eta_t G`` (L2), or 0 in Stage II.

    Raises:
        PrivacyParameterError: ``t < 1``, a negative constant, both or neither
            of ``eta_t`` and ``c``.

    Example:
        >>> showkatbakhsh_sensitivity(4, G=1.5, c=2.0)
        1.5
        >>> showkatbakhsh_sensitivity(4, G=1.5, eta_t=0.1)
        0.30000000000000004
    """
    t = check_integer(t, "t", minimum=1, error=_E)
    G = check_nonnegative(G, "G", error=_E)
    eta = _showkatbakhsh_step(t, eta_t, c)
    if T is not None:
        T = check_integer(T, "T", minimum=1, error=_E)
        if t > T:
            return 0.0
    return 2.0 * eta * G


def showkatbakhsh_release_sensitivity(
    s: int, *, G: float, eta_t: float | None = None, c: float | None = None, T: int | None = None
) -> float:
    """L2 sensitivity of the message ``y(s)`` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019, eq. 11 with Prop. 3).

    ``y(1) = 0`` carries no information (sensitivity 0); for ``s >= 2``,
    ``y(s) = x(s-1) + n(s-1)`` masks ``x(s-1)``, whose sensitivity is
    ``Delta(s-1) = 2 eta_(s-1) G``, and its noise has scale ``M_(s-1)``.

    Args:
        s: message index, ``s >= 1``.
        G, c, T: as in :func:`showkatbakhsh_sensitivity`.
        eta_t: the step size ``eta_(s-1)`` of the masked round (not of ``s``).

    Returns:
        ``Delta(s-1)``, or 0 for ``s = 1``.

    Raises:
        PrivacyParameterError: ``s < 1`` or an invalid constant.

    Example:
        >>> showkatbakhsh_release_sensitivity(1, G=1.0, c=1.0)
        0.0
        >>> showkatbakhsh_release_sensitivity(3, G=1.0, c=1.0)
        1.0
    """
    s = check_integer(s, "s", minimum=1, error=_E)
    if s == 1:
        check_nonnegative(G, "G", error=_E)
        return 0.0
    return showkatbakhsh_sensitivity(s - 1, G=G, eta_t=eta_t, c=c, T=T)



def showkatbakhsh_kappa(epsilon: float, delta: float, *, G: float) -> float:
    """``kappa(epsilon, delta) = epsilon^2 / (4 G^2 (epsilon + 2 ln(2/delta)))``.

    Corollary 1 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019).

    Args:
        epsilon: ``> 0``.
        delta: in ``(0, 1)``.
        G: gradient bound, ``> 0``.

    Returns:
        ``kappa``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> round(showkatbakhsh_kappa(1.0, 2 * math.exp(-1.0), G=0.5), 12)
        0.333333333333
    """
    eps, d, g = check_positive(epsilon, "epsilon", error=_E), check_open_unit(delta, "delta", error=_E), check_positive(G, "G", error=_E)
    return eps**2 / (4 * g**2 * (eps + 2 * math.log(2 / d)))


def showkatbakhsh_noise_scales(epsilon: float, delta: float, *, T: int, c: float, G: float) -> np.ndarray:
    """Theorem 2's noise standard deviations ``M_1..M_T`` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019).

    ``M_t^2 = (2 / kappa) c^2 sqrt(T) / t^(3/2)``; ``M_t`` is the standard
    deviation of ``n(t)``, released in ``y(t+1) = x(t) + n(t)``.

    Args:
        epsilon, delta, G: as in :func:`showkatbakhsh_kappa`.
        T: Stage-I horizon, ``>= 1``.
        c: step constant (``eta_t = c / t``), ``> 0``.

    Returns:
        Array of shape ``(T,)``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> showkatbakhsh_noise_scales(1.0, 1e-3, T=4, c=1.0, G=1.0).shape
        (4,)
    """
    kappa = showkatbakhsh_kappa(epsilon, delta, G=G)
    T = check_integer(T, "T", minimum=1, error=_E)
    c = check_positive(c, "c", error=_E)
    t = np.arange(1, T + 1, dtype=float)
    return np.sqrt((2 / kappa) * c**2 * math.sqrt(T) / t**1.5)


def showkatbakhsh_claim(epsilon: float, delta: float, *, T: int, c: float, G: float) -> Claim:
    """Theorem 1 / Corollary 1 with Theorem 2's schedule: ``(epsilon, delta)`` for the run.

    The claim of Showkatbakhsh, Karakus and Diggavi (arXiv 2019).

    Corollary 1: the run of ``T`` Stage-I rounds is ``(epsilon, delta)``-DP if
    ``sum_t eta_t^2 / M_t^2 <= kappa(epsilon, delta)``; Theorem 2's schedule
    (:func:`showkatbakhsh_noise_scales`) gives ``kappa (sum_t t^(-1/2)) /
    (2 sqrt T) < kappa``.

    Args:
        epsilon: ``> 0`` (Theorem 1 needs no ``epsilon < 1``).
        delta: in ``(0, 1)``.
        T: horizon, ``>= 1``.
        c: step constant, ``> 0``.
        G: the privacy gradient bound (``G_priv``), ``> 0``.

    Returns:
        The :class:`Claim` (``per="run"``).

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> showkatbakhsh_claim(4.0, 1e-3, T=1000, c=0.01, G=1.0).per
        'run'
    """
    kappa = showkatbakhsh_kappa(epsilon, delta, G=G)
    check_integer(T, "T", minimum=1, error=_E)
    check_positive(c, "c", error=_E)
    return Claim(
        paper=_SHOWKATBAKHSH2019,
        statement="Theorem 1 / Corollary 1 with Theorem 2's schedule: (epsilon, delta)-DP for the run",
        epsilon=float(epsilon),
        delta=float(delta),
        per="run",
        notes=(
            f"kappa = {kappa:.6g}; eta_t = c/t, M_t^2 = (2/kappa) c^2 sqrt(T)/t^(3/2), T = {T}. "
            "Prop. 3: Delta(t) = 2 eta_t G for x(t), masked by y(t+1) = x(t) + n(t); the message "
            "y(T+1) must be noisy. Privacy loss bounded by a sub-Gaussian tail, no composition theorem."
        ),
    )


def showkatbakhsh_alpha(scales: Sequence[float], *, c: float, G: float) -> float:
    """``alpha = sum_{t=1}^{T} Delta(t)^2 / M_t^2`` of Theorem 1, from realized scales.

    Theorem 1 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019).

    ``Delta(t) = 2 (c/t) G`` comes from
    :func:`showkatbakhsh_sensitivity`; ``scales[t-1] =
    M_t`` is the standard deviation of ``n(t)`` (message ``y(t+1)``).

    Args:
        scales: ``M_1..M_T``, positive and finite.
        c: step constant, ``> 0``.
        G: gradient bound, ``> 0``.

    Returns:
        ``alpha`` (0 for empty scales).

    Raises:
        PrivacyParameterError: a non-positive scale or an invalid constant.

    Example:
        >>> showkatbakhsh_alpha([2.0, 1.0], c=1.0, G=1.0)
        2.0
    """
    check_positive(c, "c", error=_E)
    check_positive(G, "G", error=_E)
    total = 0.0
    for t, m in enumerate(scales, start=1):
        m = check_real(m, f"scales[{t - 1}] (M_{t})", error=_E)
        if m <= 0:
            raise PrivacyParameterError(f"scales[{t - 1}] (M_{t}) must be > 0, got {m!r}")
        total += (showkatbakhsh_sensitivity(t, G=G, c=c) / m) ** 2
    return total


def showkatbakhsh_effective_epsilon(scales: Sequence[float], *, delta: float, c: float, G: float) -> float:
    """The epsilon that Theorem 1's own argument certifies for realized scales.

    Theorem 1 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019).

    The proof of Theorem 1 bounds the privacy loss by ``alpha/2 + C_T`` with
    ``C_T`` sub-Gaussian of variance proxy ``alpha`` (eqs. 42-49), so
    ``P[|loss| >= epsilon] <= 2 exp(-(epsilon - alpha/2)^2 / (2 alpha))``.
    Setting this to ``delta`` gives the smallest certified epsilon:
    ``alpha/2 + sqrt(2 alpha ln(2/delta))``. For ``alpha`` at Theorem 1's
    threshold ``epsilon^2 / (epsilon + 2 ln(2/delta))`` this is ``<= epsilon``
    (AM-GM), so the theorem is consistent. This tail bound is not tight; exact
    Gaussian accounting is the composition module's job.

    Args:
        scales: ``M_1..M_T``.
        delta: in ``(0, 1)``.
        c, G: as in :func:`showkatbakhsh_alpha`.

    Returns:
        The certified epsilon for the run at this ``delta``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> round(showkatbakhsh_effective_epsilon([2.0, 1.0], delta=2 * math.exp(-1.0), c=1.0, G=1.0), 12)
        3.0
    """
    d = check_open_unit(delta, "delta", error=_E)
    alpha = showkatbakhsh_alpha(scales, c=c, G=G)
    return alpha / 2 + math.sqrt(2 * alpha * math.log(2 / d))


SPEC = AccountantSpec(
    names=("showkatbakhsh",),
    paper=_SHOWKATBAKHSH2019,
    mechanism="gaussian",
    norm="l2",
    sensitivity=showkatbakhsh_sensitivity,
    release_sensitivity=showkatbakhsh_release_sensitivity,
    claim=showkatbakhsh_claim,
    effective_epsilon=showkatbakhsh_effective_epsilon,
    noise_scale=showkatbakhsh_noise_scales,
)
"""The accountant's record of Showkatbakhsh, Karakus and Diggavi (arXiv 2019)."""


ASSUMPTIONS = AssumptionSet("showkatbakhsh", "Showkatbakhsh, Karakus and Diggavi 2019, Sec. 2", (
    *fixed_symmetric_steps("Showkatbakhsh, Karakus and Diggavi 2019, Sec. 2"),
    EachRound(_P.check_connected_undirected, "connected", "the undirected graph is connected"),
    Spectral(_P.second_eigenvalue_modulus, "beta", "beta_below_one", "max(|lambda_2|, |lambda_N|)",
             "beta = max(|lambda_2(W)|, |lambda_N(W)|) < 1 (Showkatbakhsh, Karakus and Diggavi 2019)",
             symmetric_only=True),
), "doubly")
"""The topology assumptions: one fixed matrix, symmetric, nonnegative, doubly stochastic, connected, with
``beta = max(|lambda_2|, |lambda_N|) < 1``."""

"""Huang, Mitra and Vaidya (ICDCN 2015): Laplace noise on states, geometric schedules.

The accountant's side of the paper: Lemma 4's sensitivity (:func:`huang2015_sensitivity`,
:func:`huang2015_release_sensitivity`), Theorem 5's claim (:func:`huang2015_claim`),
the noise schedule of eq. (8) (:func:`huang2015_noise_scale`) and Lemma 2's sum
recomputed with the correct indexing (:func:`huang2015_effective_epsilon`,
:func:`huang2015_effective_epsilon_from_ledger`); :data:`SPEC` collects them.

Every function is a plain function of numbers (gradient bounds, step sizes,
noise scales ...); none looks at an algorithm object or at a sensitivity an
algorithm claims. Each sensitivity docstring states which state the bound is
about, which release masks it with which noise scale, and when the bound holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from topology.audit import AssumptionSet, EachRound, MinWeight
from topology.checks import constants as _C
from topology.checks import properties as _P
from topology.validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_real

from ..claims import Claim
from ..errors import PrivacyParameterError
from ..ledger import Ledger
from .spec import AccountantSpec

__all__ = [
    "ASSUMPTIONS",
    "huang2015_sensitivity",
    "huang2015_release_sensitivity",
    "HUANG2015_SCHEDULES",
    "huang2015_claim",
    "huang2015_noise_scale",
    "huang2015_effective_epsilon",
    "huang2015_effective_epsilon_from_ledger",
    "SPEC",
]

_E = PrivacyParameterError
_HUANG2015 = "Huang, Mitra and Vaidya (ICDCN 2015)"

HUANG2015_SCHEDULES = ("eq8", "theorem5-proof")
"""Noise schedules of Huang, Mitra and Vaidya (ICDCN 2015): eq. (8) as printed (``p^(t-1)``), or ``p^t``
as in the proof of Theorem 5."""


def huang2015_sensitivity(t: int, *, C2: float, n: int, c: float, q: float) -> float:
    """L1 sensitivity ``Delta(t)`` of the state ``x(t)`` (Huang, Mitra and Vaidya, ICDCN 2015, Lemma 4).

    Bounded quantity: the network state ``x(t)`` in ``R^(nN)`` after the update
    (7) of round ``t``, with the observations ``y(1..t)`` held fixed. Given the
    same observations every ``z_j(t)`` is the same under both problems (eq. 6),
    so only the agent ``i`` whose cost differs can differ, by
    ``gamma_t * ||grad f_i(z) - grad f_i'(z)||_1 <= gamma_t * sqrt(n) * 2 C2``
    (projection is non-expansive, ``||.||_1 <= sqrt(n) ||.||_2``). Hence
    ``Delta(t) = 2 C2 sqrt(n) gamma_t`` with ``gamma_t = c q^(t-1)`` (eq. 8),
    and ``Delta(0) = 0``: the initial state does not depend on any cost.

    Masking message: ``x(t)`` is masked by the broadcast of the *next* round,
    ``y(t+1) = x(t) + w(t+1)`` with ``w(t+1) ~ Lap(M_(t+1))^n`` (eq. 5). So the
    release at round ``t`` has sensitivity ``Delta(t-1)``: see
    :func:`huang2015_release_sensitivity`. (Lemma 2's proof pairs ``x(t)``
    with ``M_t``, an off-by-one: the message ``y(t)`` hides ``x(t-1)``, not
    ``x(t)``, although the paper's eq. (11) writes ``x(t)``.)

    Validity: ``C2`` must bound ``||grad f_i||_2`` at the point where the
    gradient is evaluated, ``z_i(t)``, which noise can push outside the
    domain. Lemma 4 holds as stated only if the gradient is clipped to L2 norm
    ``C2`` (or evaluated at ``Proj_X(z)``); with the raw eq. (7) and a cost such
    as ``||x - a||^2`` the bound fails off the domain.

    Args:
        t: round index, ``t >= 0``.
        C2: gradient bound (Assumption 1(ii)), ``>= 0``.
        n: dimension of each agent's state, ``>= 1``.
        c: initial step size, ``> 0``.
        q: step decay, in ``(0, 1)``.

    Returns:
        ``2 C2 sqrt(n) c q^(t-1)`` for ``t >= 1``, else ``0.0``.

    Raises:
        PrivacyParameterError: ``t < 0``, a negative or non-finite constant,
            ``q`` outside ``(0, 1)``, ``n`` not a positive integer.

    Example:
        >>> round(huang2015_sensitivity(1, C2=1.0, n=4, c=0.5, q=0.5), 12)
        2.0
        >>> huang2015_sensitivity(0, C2=1.0, n=4, c=0.5, q=0.5)
        0.0
    """
    t = check_integer(t, "t", minimum=0, error=_E)
    C2 = check_nonnegative(C2, "C2", error=_E)
    n = check_integer(n, "n", minimum=1, error=_E)
    c = check_positive(c, "c", error=_E)
    q = check_open_unit(q, "q", error=_E)
    if t == 0:
        return 0.0
    return 2.0 * C2 * math.sqrt(n) * c * q ** (t - 1)


def huang2015_release_sensitivity(t: int, *, C2: float, n: int, c: float, q: float) -> float:
    """L1 sensitivity of the release ``y(t)`` of round ``t`` (Huang, Mitra and Vaidya, ICDCN 2015, eq. 5 with Lemma 4).

    ``y_i(t) = x_i(t-1) + w_i(t)`` masks ``x(t-1)``, so its sensitivity is
    ``Delta(t-1)``; in particular ``y(1)`` masks the cost-independent ``x(0)``
    and has sensitivity 0. This is the number to pair with the noise scale
    ``M_t`` of the same round.

    Args:
        t: release round, ``t >= 1``.
        C2, n, c, q: as in :func:`huang2015_sensitivity`.

    Returns:
        ``huang2015_sensitivity(t - 1, ...)``.

    Raises:
        PrivacyParameterError: ``t < 1`` or an invalid constant.

    Example:
        >>> huang2015_release_sensitivity(1, C2=1.0, n=4, c=0.5, q=0.5)
        0.0
        >>> round(huang2015_release_sensitivity(2, C2=1.0, n=4, c=0.5, q=0.5), 12)
        2.0
    """
    t = check_integer(t, "t", minimum=1, error=_E)
    return huang2015_sensitivity(t - 1, C2=C2, n=n, c=c, q=q)



def _check_qp(q: object, p: object) -> tuple[float, float]:
    qf = check_open_unit(q, "q", error=_E)
    pf = check_real(p, "p", error=_E)
    if not qf < pf < 1:
        raise PrivacyParameterError(f"p must lie in (q, 1) = ({qf!r}, 1), got {p!r}")
    return qf, pf


def huang2015_claim(epsilon: float, *, c: float | None = None, q: float | None = None, p: float | None = None) -> Claim:
    """Theorem 5 of Huang, Mitra and Vaidya (ICDCN 2015): epsilon-DP (delta = 0) for the whole run.

    The theorem asserts epsilon-DP for any ``c > 0``, ``q in (0, 1)``, ``p in
    (q, 1)``, with the noise ``M_t`` of eq. (8). Whether it holds depends on the
    schedule actually used: :func:`huang2015_effective_epsilon`.

    Args:
        epsilon: the privacy parameter, ``> 0``.
        c, q, p: optional; validated against the theorem's ranges if given.

    Returns:
        The :class:`Claim` (``per="run"``).

    Raises:
        PrivacyParameterError: ``epsilon <= 0``, ``c <= 0``, ``q`` outside ``(0, 1)``, ``p`` outside ``(q, 1)``.

    Example:
        >>> huang2015_claim(0.5).epsilon, huang2015_claim(0.5).delta
        (0.5, 0.0)
    """
    eps = check_positive(epsilon, "epsilon", error=_E)
    if c is not None:
        check_positive(c, "c", error=_E)
    if q is not None and p is not None:
        _check_qp(q, p)
    elif q is not None:
        check_open_unit(q, "q", error=_E)
    elif p is not None:
        check_open_unit(p, "p", error=_E)
    return Claim(
        paper=_HUANG2015,
        statement="Theorem 5: epsilon-DP for any c > 0, q in (0,1), p in (q,1)",
        epsilon=eps,
        delta=0.0,
        per="run",
        notes=(
            "Lemma 2 + Lemma 4 with M_t of eq. (8). The release y(t) masks x(t-1), so the loss is "
            "sum_{t>=2} Delta(t-1)/M_t: exactly epsilon with eq. (8) (p^(t-1)), epsilon/p with the "
            "Theorem 5 proof's p^t. Lemma 4 needs the gradient bound C2 at the noisy z_i(t) "
            "(clip the gradient). The final output x(T) is not covered."
        ),
    )


def huang2015_noise_scale(
    t: int, *, epsilon: float, C2: float, n: int, c: float, q: float, p: float, schedule: str = "eq8"
) -> float:
    """The Laplace scale ``M_t`` of round ``t`` (Huang, Mitra and Vaidya, ICDCN 2015, eq. 8).

    ``schedule="eq8"``: ``M_t = 2 C2 sqrt(n) c p^(t-1) / (epsilon (p - q))``
    (eq. 8). ``schedule="theorem5-proof"``: the proof of Theorem 5 writes
    ``p^t`` instead of ``p^(t-1)``.

    Args:
        t: round, ``>= 1``.
        epsilon, C2, n, c, q, p: the paper's parameters.
        schedule: one of :data:`HUANG2015_SCHEDULES`.

    Returns:
        ``M_t``.

    Raises:
        PrivacyParameterError: an invalid parameter or schedule.

    Example:
        >>> round(huang2015_noise_scale(1, epsilon=1.0, C2=1.0, n=1, c=0.5, q=0.5, p=0.75), 12)
        4.0
    """
    t = check_integer(t, "t", minimum=1, error=_E)
    eps = check_positive(epsilon, "epsilon", error=_E)
    C2 = check_positive(C2, "C2", error=_E)
    n = check_integer(n, "n", minimum=1, error=_E)
    c = check_positive(c, "c", error=_E)
    q, p = _check_qp(q, p)
    if schedule not in HUANG2015_SCHEDULES:
        raise PrivacyParameterError(f"schedule must be one of {HUANG2015_SCHEDULES}, got {schedule!r}")
    power = t - 1 if schedule == "eq8" else t
    return 2.0 * C2 * math.sqrt(n) * c * p**power / (eps * (p - q))


def huang2015_effective_epsilon(
    *,
    epsilon: float,
    c: float,
    q: float,
    p: float,
    C2: float,
    n: int,
    schedule: str = "eq8",
    horizon: int | None = None,
) -> float:
    """Privacy loss ``sum_{t=2}^{T} Delta(t-1) / M_t`` (Huang, Mitra and Vaidya, ICDCN 2015, Lemma 2, reindexed).

    Releases ``y(1), ..., y(T)`` (``T = horizon``); ``y(t)`` masks ``x(t-1)``
    whose L1 sensitivity is ``Delta(t-1) = 2 C2 sqrt(n) c q^(t-2)`` (Lemma 4),
    and ``y(1)`` masks the cost-free ``x(0)``. With ``r = q / p`` each term is
    ``epsilon (p - q)/p * r^(t-2)`` (eq. 8) or ``epsilon (p - q)/p^2 * r^(t-2)``
    (the proof's ``p^t``), so in closed form

    * ``eq8``: ``epsilon * (1 - r^(T-1))``, tending to ``epsilon``;
    * ``theorem5-proof``: ``(epsilon / p) * (1 - r^(T-1))``, tending to
      ``epsilon / p > epsilon``: Theorem 5's claim fails for that schedule.

    ``C2``, ``n`` and ``c`` cancel but are validated.

    Args:
        epsilon: the epsilon the schedule was built for, ``> 0``.
        c, q, p, C2, n: the paper's parameters (``0 < q < p < 1``).
        schedule: one of :data:`HUANG2015_SCHEDULES`.
        horizon: number of rounds ``T >= 1``; ``None`` for the limit ``T -> inf``.

    Returns:
        The total privacy loss (pure DP epsilon) of the run.

    Raises:
        PrivacyParameterError: an invalid parameter, schedule or horizon.

    Example:
        >>> huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.5, p=0.8, C2=1.0, n=2)
        1.0
        >>> huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.5, p=0.8, C2=1.0, n=2, schedule="theorem5-proof")
        1.25
    """
    eps = check_positive(epsilon, "epsilon", error=_E)
    check_positive(c, "c", error=_E)
    check_positive(C2, "C2", error=_E)
    check_integer(n, "n", minimum=1, error=_E)
    q, p = _check_qp(q, p)
    if schedule not in HUANG2015_SCHEDULES:
        raise PrivacyParameterError(f"schedule must be one of {HUANG2015_SCHEDULES}, got {schedule!r}")
    limit = eps if schedule == "eq8" else eps / p
    if horizon is None:
        return limit
    T = check_integer(horizon, "horizon", minimum=1, error=_E)
    # 1 - r^(T-1), computed stably for r close to 1
    return limit * -math.expm1((T - 1) * math.log(q / p))


def huang2015_effective_epsilon_from_ledger(
    scales: Sequence[float] | Ledger, *, C2: float, n: int, c: float, q: float
) -> float:
    """Recompute the privacy loss of Huang, Mitra and Vaidya (ICDCN 2015) from the noise scales that were actually used.

    With a sequence ``scales = (M_1, ..., M_T)`` (``M_t`` the Laplace scale of
    the release ``y(t)``), returns ``sum_{t=2}^{T} Delta(t-1) / M_t`` with
    ``Delta`` from :func:`huang2015_sensitivity`: the
    independent bound, never a sensitivity recorded with the releases.

    With a :class:`~accounting.ledger.Ledger`, every release of agent ``i`` at
    round ``t`` adds ``Delta(t-1) / scale``: one term per broadcast, one per
    unicast copy (independent noise per copy; if copies shared a draw this
    over-counts, which is safe). The result is the maximum over agents, since
    adjacency changes one agent's cost. Every release must be Laplace with
    ``dimension == n``.

    Args:
        scales: ``M_1..M_T`` (positive, finite), or a ledger.
        C2, n, c, q: the constants of Lemma 4.

    Returns:
        The pure-DP epsilon of the run (0 for an empty input).

    Raises:
        PrivacyParameterError: a non-positive or non-finite scale, a non-Laplace
            release, a release whose dimension is not ``n``, invalid constants.

    Example:
        >>> M = [huang2015_noise_scale(t, epsilon=1.0, C2=1.0, n=2, c=0.1, q=0.5, p=0.8) for t in range(1, 60)]
        >>> round(huang2015_effective_epsilon_from_ledger(M, C2=1.0, n=2, c=0.1, q=0.5), 9)
        1.0
    """
    huang2015_sensitivity(0, C2=C2, n=n, c=c, q=q)  # validates the constants
    if isinstance(scales, Ledger):
        losses: dict[int, float] = {}
        for r in scales:
            if r.mechanism != "laplace":
                raise PrivacyParameterError(
                    f"agent {r.agent}, round {r.round}: Huang, Mitra and Vaidya (ICDCN 2015) use Laplace noise, "
                    f"got mechanism {r.mechanism!r}"
                )
            if r.dimension != n:
                raise PrivacyParameterError(
                    f"agent {r.agent}, round {r.round}: release dimension {r.dimension} != n={n}"
                )
            term = huang2015_release_sensitivity(r.round, C2=C2, n=n, c=c, q=q) / r.scale
            losses[r.agent] = losses.get(r.agent, 0.0) + term
        return max(losses.values(), default=0.0)
    total = 0.0
    for t, m in enumerate(scales, start=1):
        m = check_real(m, f"scales[{t - 1}] (M_{t})", error=_E)
        if m <= 0:
            raise PrivacyParameterError(f"scales[{t - 1}] (M_{t}) must be > 0, got {m!r}")
        total += huang2015_release_sensitivity(t, C2=C2, n=n, c=c, q=q) / m
    return total


SPEC = AccountantSpec(
    names=("huang2015",),
    paper=_HUANG2015,
    mechanism="laplace",
    norm="l1",
    sensitivity=huang2015_sensitivity,
    release_sensitivity=huang2015_release_sensitivity,
    claim=huang2015_claim,
    effective_epsilon=huang2015_effective_epsilon,
    noise_scale=huang2015_noise_scale,
)
"""The accountant's record of Huang, Mitra and Vaidya (ICDCN 2015)."""


def _nedic_ozdaglar(eta: float, n: int) -> dict[str, float]:
    theta, beta = _C.nedic_ozdaglar(eta, n)
    return {"theta": theta, "beta": beta}


ASSUMPTIONS = AssumptionSet("huang2015", "Huang, Mitra and Vaidya 2015, Assumption 2 and Sec. 2", (
    EachRound(_P.check_nonnegative, "nonnegative", "every weight a_ij(t) >= 0"),
    EachRound(_P.check_doubly_stochastic, "doubly_stochastic",
              "every A_t has rows and columns summing to 1 (Huang, Mitra and Vaidya 2015, Sec. 2)"),
    EachRound(_P.check_strongly_connected, "strongly_connected",
              "every A_t is strongly connected (Huang, Mitra and Vaidya 2015, Assumption 2)"),
    MinWeight("eta", "min_weight_eta",
              "a_ii(t) >= eta and a_ij(t) > 0 implies a_ij(t) >= eta for one eta > 0 "
              "(Huang, Mitra and Vaidya 2015, Assumption 2)",
              _nedic_ozdaglar),
), "doubly")
"""The topology assumptions of Theorem 5 and Lemma 6: every ``A_t`` nonnegative, doubly stochastic, strongly
connected, with every self weight and positive weight at least ``eta > 0``; constants ``eta`` and the
Nedić–Ozdaglar ``theta``, ``beta``."""

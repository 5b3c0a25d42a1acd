"""Each seed paper's privacy statement, and a verifier that recomputes it.

A :class:`Claim` records what a paper asserts: which ``(epsilon, delta)``, at
which level (per iteration, per round, or for the whole run), under which
theorem. The ``*_effective_epsilon`` functions recompute the privacy loss
from plain numbers: the noise scales actually used and the sensitivity
derived *independently* in :mod:`accounting.sensitivity` (never an
algorithm's claimed value). :func:`verify` compares the two.

Every computation here is the paper's own argument, done with the correct
indices and constants:

* seed 003 (Huang et al.): Lemma 2's sum of ``Delta / M`` over the rounds;
* seed 000 (Showkatbakhsh et al.): Theorem 1's sub-Gaussian tail bound;
* seed 001 (Wang and Basar): the classical Gaussian mechanism at one iteration;
* seed 004 (Cheng et al.): Theorem 2's product of per-round Laplace ratios.

Tighter accounting of Gaussian noise over many rounds (RDP, PLD) belongs to
the composition module, not here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .errors import PrivacyParameterError
from .ledger import Ledger
from .sensitivity import (
    _dpsda_block_sizes,
    _integer,
    _nonnegative,
    _open_unit,
    _positive,
    _real,
    dpsda_network_sensitivity,
    dpsda_node_sensitivity,
    huang2015_release_sensitivity,
    huang2015_sensitivity,
    showkatbakhsh_sensitivity,
    wang_basar_sensitivity,
)

__all__ = [
    "LEVELS",
    "Claim",
    "Verdict",
    "verify",
    "HUANG2015_SCHEDULES",
    "huang2015_claim",
    "huang2015_noise_scale",
    "huang2015_effective_epsilon",
    "huang2015_effective_epsilon_from_ledger",
    "showkatbakhsh_kappa",
    "showkatbakhsh_noise_scales",
    "showkatbakhsh_claim",
    "showkatbakhsh_alpha",
    "showkatbakhsh_effective_epsilon",
    "wang_basar_variance_threshold",
    "wang_basar_claim",
    "wang_basar_effective_epsilon",
    "dpsda_claim",
    "dpsda_effective_epsilon",
]

LEVELS = ("run", "iteration", "round")
"""The level a claim is made at: the whole run, one iteration, one round."""

HUANG2015_SCHEDULES = ("eq8", "theorem5-proof")
"""Noise schedules of seed 003: eq. (8) as printed (``p^(t-1)``), or the Theorem 5 proof's ``p^t``."""

_SEED003 = "seed 003 (Huang, Mitra, Vaidya 2015)"
_SEED000 = "seed 000 (Showkatbakhsh, Karakus, Diggavi)"
_SEED001 = "seed 001 (Wang, Basar)"
_SEED004 = "seed 004 (Cheng, Liao, Li)"


# -- claims and verdicts ------------------------------------------------------------------
def _epsilon(value: object, name: str = "epsilon") -> float:
    return _positive(name, value)


def _delta_open(value: object) -> float:
    return _open_unit("delta", value)


@dataclass(frozen=True)
class Claim:
    """A paper's privacy statement.

    Attributes:
        paper: which seed paper.
        statement: the theorem and what it asserts.
        epsilon: the claimed epsilon, ``> 0``.
        delta: the claimed delta, in ``[0, 1)``.
        per: ``"run"``, ``"iteration"`` or ``"round"`` (see :data:`LEVELS`).
        notes: conditions, caveats and known problems.

    Raises:
        PrivacyParameterError: ``epsilon <= 0``, ``delta`` outside ``[0, 1)``, an unknown ``per``.

    Example:
        >>> Claim("seed 003", "Theorem 5", 1.0, 0.0, "run", "").per
        'run'
    """

    paper: str
    statement: str
    epsilon: float
    delta: float
    per: str
    notes: str = ""

    def __post_init__(self) -> None:
        _epsilon(self.epsilon)
        d = _real("delta", self.delta)
        if not 0 <= d < 1:
            raise PrivacyParameterError(f"delta must lie in [0, 1), got {self.delta!r}")
        if self.per not in LEVELS:
            raise PrivacyParameterError(f"per must be one of {LEVELS}, got {self.per!r}")


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`verify`.

    Attributes:
        holds: whether the computed ``(epsilon, delta)`` is within the claim.
        gap: computed epsilon minus claimed epsilon (positive = the claim is too optimistic).
        message: a one-line human-readable verdict.
        delta_gap: computed delta minus claimed delta.
        claim: the claim that was checked.
    """

    holds: bool
    gap: float
    message: str
    delta_gap: float = 0.0
    claim: Claim | None = None


def verify(claim: Claim, computed_epsilon: float, computed_delta: float = 0.0, *, rtol: float = 1e-9) -> Verdict:
    """Compare a claim with an independently computed ``(epsilon, delta)`` at the same level.

    The claim holds if ``computed_epsilon <= claim.epsilon * (1 + rtol)`` and
    ``computed_delta <= claim.delta * (1 + rtol)``; ``rtol`` absorbs rounding
    in closed forms that are mathematically equal (default ``1e-9``).

    Args:
        claim: the paper's claim.
        computed_epsilon: the recomputed epsilon, ``>= 0`` (``inf`` allowed).
        computed_delta: the recomputed delta, in ``[0, 1]``.
        rtol: relative tolerance, ``>= 0``.

    Returns:
        A :class:`Verdict`.

    Raises:
        PrivacyParameterError: a negative or NaN epsilon, a delta outside ``[0, 1]``, a negative ``rtol``.

    Example:
        >>> v = verify(huang2015_claim(1.0), 1.25)
        >>> v.holds, v.gap
        (False, 0.25)
    """
    if isinstance(computed_epsilon, bool) or not isinstance(computed_epsilon, Real) or (
        math.isnan(computed_epsilon) or computed_epsilon < 0
    ):
        raise PrivacyParameterError(f"computed_epsilon must be a number >= 0, got {computed_epsilon!r}")
    cd = _real("computed_delta", computed_delta)
    if not 0 <= cd <= 1:
        raise PrivacyParameterError(f"computed_delta must lie in [0, 1], got {computed_delta!r}")
    rtol = _nonnegative("rtol", rtol)
    ce = float(computed_epsilon)
    holds = ce <= claim.epsilon * (1 + rtol) and cd <= claim.delta * (1 + rtol)
    gap, dgap = ce - claim.epsilon, cd - claim.delta
    word = "holds" if holds else "VIOLATED"
    message = (
        f"{claim.paper}, {claim.statement}: claimed ({claim.epsilon:.6g}, {claim.delta:.3g}) per {claim.per}, "
        f"computed ({ce:.6g}, {cd:.3g}): {word} (epsilon gap {gap:+.3g}, delta gap {dgap:+.3g})"
    )
    return Verdict(holds=bool(holds), gap=gap, message=message, delta_gap=dgap, claim=claim)


# -- seed 003: Huang, Mitra, Vaidya ----------------------------------------------------------
def _check_qp(q: object, p: object) -> tuple[float, float]:
    qf = _open_unit("q", q)
    pf = _real("p", p)
    if not qf < pf < 1:
        raise PrivacyParameterError(f"p must lie in (q, 1) = ({qf!r}, 1), got {p!r}")
    return qf, pf


def huang2015_claim(epsilon: float, *, c: float | None = None, q: float | None = None, p: float | None = None) -> Claim:
    """Theorem 5 of seed 003: epsilon-DP (delta = 0) for the whole run.

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
    eps = _epsilon(epsilon)
    if c is not None:
        _positive("c", c)
    if q is not None and p is not None:
        _check_qp(q, p)
    elif q is not None:
        _open_unit("q", q)
    elif p is not None:
        _open_unit("p", p)
    return Claim(
        paper=_SEED003,
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
    """The Laplace scale ``M_t`` of round ``t`` (seed 003).

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
    t = _integer("t", t, 1)
    eps = _epsilon(epsilon)
    C2 = _positive("C2", C2)
    n = _integer("n", n, 1)
    c = _positive("c", c)
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
    """The privacy loss ``sum_{t=2}^{T} Delta(t-1) / M_t`` of seed 003 (Lemma 2, correct indexing).

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
        c, q, p, C2, n: seed 003's parameters (``0 < q < p < 1``).
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
    eps = _epsilon(epsilon)
    _positive("c", c)
    _positive("C2", C2)
    _integer("n", n, 1)
    q, p = _check_qp(q, p)
    if schedule not in HUANG2015_SCHEDULES:
        raise PrivacyParameterError(f"schedule must be one of {HUANG2015_SCHEDULES}, got {schedule!r}")
    limit = eps if schedule == "eq8" else eps / p
    if horizon is None:
        return limit
    T = _integer("horizon", horizon, 1)
    # 1 - r^(T-1), computed stably for r close to 1
    return limit * -math.expm1((T - 1) * math.log(q / p))


def huang2015_effective_epsilon_from_ledger(
    scales: Sequence[float] | Ledger, *, C2: float, n: int, c: float, q: float
) -> float:
    """Recompute seed 003's privacy loss from the noise scales that were actually used.

    With a sequence ``scales = (M_1, ..., M_T)`` (``M_t`` the Laplace scale of
    the release ``y(t)``), returns ``sum_{t=2}^{T} Delta(t-1) / M_t`` with
    ``Delta`` from :func:`accounting.sensitivity.huang2015_sensitivity`: the
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
                    f"agent {r.agent}, round {r.round}: seed 003 uses Laplace noise, got mechanism {r.mechanism!r}"
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
        m = _real(f"scales[{t - 1}] (M_{t})", m)
        if m <= 0:
            raise PrivacyParameterError(f"scales[{t - 1}] (M_{t}) must be > 0, got {m!r}")
        total += huang2015_release_sensitivity(t, C2=C2, n=n, c=c, q=q) / m
    return total


# -- seed 000: Showkatbakhsh, Karakus, Diggavi --------------------------------------------
def showkatbakhsh_kappa(epsilon: float, delta: float, *, G: float) -> float:
    """``kappa(epsilon, delta) = epsilon^2 / (4 G^2 (epsilon + 2 ln(2/delta)))`` (seed 000, Cor. 1).

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
    eps, d, g = _epsilon(epsilon), _delta_open(delta), _positive("G", G)
    return eps**2 / (4 * g**2 * (eps + 2 * math.log(2 / d)))


def showkatbakhsh_noise_scales(epsilon: float, delta: float, *, T: int, c: float, G: float) -> np.ndarray:
    """Theorem 2's noise standard deviations ``M_1..M_T`` (seed 000).

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
    T = _integer("T", T, 1)
    c = _positive("c", c)
    t = np.arange(1, T + 1, dtype=float)
    return np.sqrt((2 / kappa) * c**2 * math.sqrt(T) / t**1.5)


def showkatbakhsh_claim(epsilon: float, delta: float, *, T: int, c: float, G: float) -> Claim:
    """Theorem 1 / Corollary 1 (with Theorem 2's schedule) of seed 000: ``(epsilon, delta)`` for the run.

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
    _integer("T", T, 1)
    _positive("c", c)
    return Claim(
        paper=_SEED000,
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
    """``alpha = sum_{t=1}^{T} Delta(t)^2 / M_t^2`` of seed 000's Theorem 1, from realized scales.

    ``Delta(t) = 2 (c/t) G`` comes from
    :func:`accounting.sensitivity.showkatbakhsh_sensitivity`; ``scales[t-1] =
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
    _positive("c", c)
    _positive("G", G)
    total = 0.0
    for t, m in enumerate(scales, start=1):
        m = _real(f"scales[{t - 1}] (M_{t})", m)
        if m <= 0:
            raise PrivacyParameterError(f"scales[{t - 1}] (M_{t}) must be > 0, got {m!r}")
        total += (showkatbakhsh_sensitivity(t, G=G, c=c) / m) ** 2
    return total


def showkatbakhsh_effective_epsilon(scales: Sequence[float], *, delta: float, c: float, G: float) -> float:
    """The epsilon that Theorem 1's own argument certifies for realized scales (seed 000).

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
    d = _delta_open(delta)
    alpha = showkatbakhsh_alpha(scales, c=c, G=G)
    return alpha / 2 + math.sqrt(2 * alpha * math.log(2 / d))


# -- seed 001: Wang, Basar ------------------------------------------------------------------
_WB_THEOREMS = {"sample": "Theorem 4", "gradient": "Theorem 5", "variable": "Theorem 6"}


def wang_basar_variance_threshold(
    epsilon: float,
    delta: float,
    *,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    form: str = "printed",
) -> float:
    """Minimum ``Var(n_i^k)`` (per coordinate) in Theorems 4-6 of seed 001, at one iteration.

    ``form="printed"``: the theorems as printed,
    Thm 4 ``2 nu^2 lam^2 ln(1.25/delta) / (n_i^2 epsilon^2)``,
    Thm 5 ``2 lam^2 ln(1.25/delta) / epsilon^2``,
    Thm 6 ``2 ln(1.25/delta) / (lam^2 epsilon^2)``.
    ``form="consistent"``: the released noise is ``lam^k n_i^k``, so the
    Gaussian mechanism needs ``Var(n) >= 2 ln(1.25/delta) S^2 / epsilon^2``
    with ``S`` the sensitivity in noise units
    (:func:`accounting.sensitivity.wang_basar_sensitivity` with
    ``units="noise"``): Thms 4 and 5 lose their ``lam^2`` factor, Thm 6 is
    unchanged (notes on seed 001, section 6 item 2).

    Args:
        epsilon, delta: in ``(0, 1)`` (the classical Gaussian mechanism's range).
        lam_k: step size of the iteration, ``> 0``.
        kind: ``"sample"``, ``"gradient"`` or ``"variable"``.
        nu, n_i: needed for ``kind="sample"``.
        form: ``"printed"`` or ``"consistent"``.

    Returns:
        The variance threshold.

    Raises:
        PrivacyParameterError: an invalid parameter, kind or form.

    Example:
        >>> t = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="printed")
        >>> c = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="consistent")
        >>> round(c / t, 9)
        100.0
    """
    eps = _open_unit("epsilon", epsilon)
    d = _delta_open(delta)
    if kind not in _WB_THEOREMS:
        raise PrivacyParameterError(f"kind must be one of {tuple(_WB_THEOREMS)}, got {kind!r}")
    if form not in ("printed", "consistent"):
        raise PrivacyParameterError(f"form must be 'printed' or 'consistent', got {form!r}")
    base = 2 * math.log(1.25 / d) / eps**2
    if form == "consistent" or kind == "variable":
        s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, units="noise")
    else:  # Theorems 4 and 5 as printed: the message sensitivity against Var(n)
        s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, units="message")
    return base * s**2


def wang_basar_claim(
    epsilon: float,
    delta: float,
    *,
    noise_variance: float,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
) -> Claim:
    """Theorems 4-6 of seed 001: ``(epsilon, delta)``-DP at **one iteration** only.

    The paper claims the guarantee when the per-coordinate variance of
    ``n_i^k`` meets the printed threshold
    (:func:`wang_basar_variance_threshold`, ``form="printed"``). It gives no
    guarantee for a run of many iterations; composing them is the caller's job.

    Args:
        epsilon, delta: in ``(0, 1)``.
        noise_variance: ``Var(n_i^k)`` per coordinate, ``> 0`` (the paper's
            "sigma" in the experiments, "sigma^2" in the theorems).
        lam_k: step size of the iteration, ``> 0``.
        kind: ``"sample"`` (Thm 4), ``"gradient"`` (Thm 5) or ``"variable"`` (Thm 6).
        nu, n_i: needed for ``kind="sample"``.

    Returns:
        The :class:`Claim` (``per="iteration"``).

    Raises:
        PrivacyParameterError: an invalid parameter, or ``noise_variance`` below
            the printed threshold (then the paper claims nothing).

    Example:
        >>> wang_basar_claim(0.5, 1e-3, noise_variance=1.0, lam_k=0.02).per
        'iteration'
    """
    var = _positive("noise_variance", noise_variance)
    threshold = wang_basar_variance_threshold(epsilon, delta, lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, form="printed")
    name = _WB_THEOREMS[kind]
    if var < threshold:
        raise PrivacyParameterError(
            f"noise_variance={noise_variance!r} is below {name}'s printed threshold {threshold:.6g}; "
            "the paper claims nothing for these parameters"
        )
    return Claim(
        paper=_SEED001,
        statement=f"{name}: (epsilon, delta)-DP for agent i's {kind} at one iteration",
        epsilon=float(epsilon),
        delta=float(delta),
        per="iteration",
        notes=(
            f"lam_k = {lam_k!r}, Var(n) = {var:.6g} >= printed threshold {threshold:.6g}. Message "
            "x - lam (g + n): the released noise is lam*n, which Theorems 4 and 5 ignore. No composition "
            "over iterations is given."
        ),
    )


def wang_basar_effective_epsilon(
    *,
    delta: float,
    noise_variance: float,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    G: float | None = None,
) -> float:
    """Per-iteration epsilon of seed 001's message by the classical Gaussian mechanism.

    The message ``x - lam^k g`` has sensitivity ``S`` (message units) and is
    released with noise of standard deviation ``lam^k sqrt(Var(n))``; the
    Dwork-Roth calibration ``std = S sqrt(2 ln(1.25/delta)) / epsilon`` gives
    ``epsilon = S_noise sqrt(2 ln(1.25/delta)) / sqrt(Var(n))`` with
    ``S_noise = S / lam^k``. That calibration is proven only for
    ``epsilon < 1``; a larger return value means the classical theorem
    certifies nothing at this ``delta`` (use the analytic Gaussian mechanism of
    the composition module instead).

    Args:
        delta: in ``(0, 1)``.
        noise_variance: ``Var(n_i^k)`` per coordinate, ``> 0``.
        lam_k: step size, ``> 0``.
        kind: one of :data:`accounting.sensitivity.WANG_BASAR_KINDS`.
        nu, n_i, G: constants needed by the chosen ``kind``.

    Returns:
        The epsilon of one iteration at this ``delta``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> v = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="printed")
        >>> round(wang_basar_effective_epsilon(delta=1e-3, noise_variance=v, lam_k=0.1), 9)
        5.0
    """
    d = _delta_open(delta)
    var = _positive("noise_variance", noise_variance)
    s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, G=G, units="noise")
    return s * math.sqrt(2 * math.log(1.25 / d)) / math.sqrt(var)


# -- seed 004: Cheng, Liao, Li (DPSDA) --------------------------------------------------------
def dpsda_claim(epsilon: float, T: int, *, per: str = "run") -> Claim:
    """Theorem 2 / Theorem 4 of seed 004: epsilon-DP per round, ``T * epsilon`` for the run.

    With Laplace noise ``sigma(t) = Delta(t) / epsilon`` and Lemma 1's
    ``Delta = 2 n L_hat``, the paper claims each round's messages are
    epsilon-DP and, by basic composition, the ``T``-round run is
    ``T epsilon``-DP. ``per="round"`` returns the per-round claim,
    ``per="run"`` the composed one. The paper applies the per-node
    sensitivity to the stacked messages of all nodes; at network level the
    sensitivity is ``2 n^2 L_hat`` (see :func:`dpsda_effective_epsilon`).

    Args:
        epsilon: per-round epsilon, ``> 0``.
        T: number of rounds, ``>= 1``.
        per: ``"round"`` or ``"run"``.

    Returns:
        The :class:`Claim`.

    Raises:
        PrivacyParameterError: an invalid parameter or level.

    Example:
        >>> dpsda_claim(0.5, 10).epsilon, dpsda_claim(0.5, 10, per="round").epsilon
        (5.0, 0.5)
    """
    eps = _epsilon(epsilon)
    T = _integer("T", T, 1)
    if per not in ("round", "run"):
        raise PrivacyParameterError(f"per must be 'round' or 'run' for seed 004, got {per!r}")
    notes = (
        "Lemma 1: Delta = 2 n L_hat bounds a sup by an expectation; it holds only with u_i clipped to "
        "[-L_hat, L_hat]. It is one node's sensitivity; a change of f_t0 moves every node's z_i, so "
        "the stacked messages have Delta = 2 n^2 L_hat."
    )
    if per == "round":
        return Claim(_SEED004, "Theorem 2: epsilon-DP at each round", eps, 0.0, "round", notes)
    return Claim(_SEED004, f"Theorem 2: T*epsilon-DP over T = {T} rounds (basic composition)", T * eps, 0.0,
                 "run", notes)


def dpsda_effective_epsilon(
    scales: Sequence[float],
    *,
    n: int,
    L_hat: float,
    level: str = "network",
    block_sizes: int | Sequence[int] | None = None,
    clip: str = "coordinate",
) -> float:
    """Seed 004's privacy loss ``sum_t Delta / sigma(t)`` from realized Laplace scales.

    This is Theorem 2's own argument (the product of per-round Laplace density
    ratios) with an independently derived ``Delta``:
    ``level="network"`` uses :func:`accounting.sensitivity.dpsda_network_sensitivity`
    (an observer of every node's messages; the paper's eavesdropper),
    ``level="node"`` uses :func:`accounting.sensitivity.dpsda_node_sensitivity`
    (an observer of one node only; with blocks, the largest block). Every
    round counts: the sensitivity of later rounds is not zero once the dual
    variables diverge. A single scale gives the per-round epsilon.

    Args:
        scales: ``sigma(t)`` for each round, positive and finite.
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound of the local signals, ``>= 0``.
        level: ``"network"`` or ``"node"``.
        block_sizes, clip: as in :func:`accounting.sensitivity.dpsda_network_sensitivity`.

    Returns:
        The pure-DP epsilon of the rounds given.

    Raises:
        PrivacyParameterError: an invalid scale, constant or level.

    Example:
        >>> sigma = 2 * 7 * 1.0 / 0.5          # the paper's sigma for n=7, L_hat=1, epsilon=0.5
        >>> dpsda_effective_epsilon([sigma] * 10, n=7, L_hat=1.0, level="node")
        5.0
        >>> dpsda_effective_epsilon([sigma] * 10, n=7, L_hat=1.0, level="network")
        35.0
    """
    if level not in ("network", "node"):
        raise PrivacyParameterError(f"level must be 'network' or 'node', got {level!r}")
    delta_net = dpsda_network_sensitivity(n=n, L_hat=L_hat, block_sizes=block_sizes, clip=clip)
    if level == "network":
        sens = delta_net
    else:
        sizes = _dpsda_block_sizes(int(n), block_sizes)
        sens = max(dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip) for d in sizes)
    total = 0.0
    for t, s in enumerate(scales):
        s = _real(f"scales[{t}]", s)
        if s <= 0:
            raise PrivacyParameterError(f"scales[{t}] must be > 0, got {s!r}")
        total += sens / s
    return total

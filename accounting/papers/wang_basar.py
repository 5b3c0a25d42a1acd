"""Wang and Başar (Automatica 2023): Gaussian noise on gradients, Theorems 4-6 per iteration.

The accountant's side of the paper, and the one copy of its theorem table:
:data:`WANG_BASAR_THEOREMS` (which theorem covers which adjacency; the
simulator's rule, its privacy lemma and the reproductions read it from
here), the sensitivities of eqs. (28)-(31), eq. (31) corrected and as printed
(:func:`wang_basar_sensitivity`),
the printed and the consistent variance thresholds
(:func:`wang_basar_variance_threshold`), the claim (:func:`wang_basar_claim`)
and the classical Gaussian mechanism's epsilon of one iteration
(:func:`wang_basar_effective_epsilon`); :data:`SPEC` collects them.

Every function is a plain function of numbers (gradient bounds, step sizes,
noise scales ...); none looks at an algorithm object or at a sensitivity an
algorithm claims. Each sensitivity docstring states which state the bound is
about, which release masks it with which noise scale, and when the bound holds.
"""

from __future__ import annotations

import math

from topology.audit import AssumptionSet, EachRound, Spectral, fixed_symmetric_steps
from topology.checks import properties as _P
from topology.validation import check_integer, check_nonnegative, check_open_unit, check_positive

from ..claims import Claim
from ..errors import PrivacyParameterError
from ..mechanisms import _classic_gaussian
from .spec import AccountantSpec

__all__ = [
    "ASSUMPTIONS",
    "WANG_BASAR_KINDS",
    "WANG_BASAR_THEOREMS",
    "wang_basar_sensitivity",
    "wang_basar_variance_threshold",
    "wang_basar_claim",
    "wang_basar_effective_epsilon",
    "wang_basar_noise_std",
    "SPEC",
]

_E = PrivacyParameterError
_WANG_BASAR2023 = "Wang and Basar (Automatica 2023)"

WANG_BASAR_KINDS = ("sample", "gradient", "variable", "variable_printed", "sample_replace")
"""Adjacency notions of Wang and Başar (Automatica 2023): eqs. (28), (30), (31) corrected, (31) as printed, plus
an arbitrary sample replacement."""

WANG_BASAR_THEOREMS: dict[str, str] = {"sample": "Theorem 4", "gradient": "Theorem 5", "variable": "Theorem 6"}
"""The theorem of Wang and Başar (Automatica 2023) behind each adjacency it covers: a data sample (eq. 28),
the gradient (eq. 30), the variable (eq. 31). The one copy of this table (the rule, its lemma and the
reproductions read it)."""


def wang_basar_sensitivity(
    *,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    G: float | None = None,
    L: float | None = None,
    units: str = "message",
) -> float:
    """Per-iteration sensitivity of Wang and Basar's shared message (Automatica 2023, eqs. 28-31).

    Indexing: at iteration ``k`` agent ``i`` sends ``v_ji^k = w_ji (x_i^k -
    lam^k (g_i^k + n_i^k))`` with ``g_i^k = grad f_i(x_i^k)`` (Algorithm 2);
    ``w_ji`` is public, so the mechanism analysed is ``M_i^k = x_i^k - lam^k
    g_i^k`` released with additive noise ``lam^k n_i^k``. Given all earlier
    messages, ``x_i^k = sum_j v_ij^(k-1)`` is fixed (the self term uses the same
    noise draw as the sent copies), so for data or gradient adjacency only
    ``g_i^k`` differs.

    ``kind`` selects the adjacency:

    * ``"sample"`` (eq. 28): one sample changes with ``||s_p - s_q||_1 <= 1``;
      Assumption 1 gives ``nu lam^k / n_i``.
    * ``"gradient"`` (eq. 30): ``||g - g'||_1 <= 1``; gives ``lam^k``.
    * ``"variable"`` (eq. 31, corrected): ``||x - x'||_1 <= 1``; gives the **L2** bound
      ``1 + lam^k L``, with ``L`` the Lipschitz constant of ``grad f_i`` in the Euclidean norm
      (``sup ||hess f_i||_2`` on a convex set holding every iterate). Derivation:
      ``M(x) - M(x') = (x - x') - lam^k (grad f_i(x) - grad f_i(x'))``, so
      ``||M(x) - M(x')||_2 <= ||x - x'||_2 + lam^k L ||x - x'||_2 <= (1 + lam^k L) ||x - x'||_1
      <= 1 + lam^k L`` (``||.||_2 <= ||.||_1``). It is attained: ``f = -L x^2 / 2``, ``x' = x + 1``.
      No dimension factor enters because the Gaussian mechanism needs L2; an L1 bound from ``L`` alone
      would be ``1 + lam^k sqrt(d) L`` (``||v||_1 <= sqrt(d) ||v||_2``).
    * ``"variable_printed"``: eq. (31) as printed, ``1``. It holds ``grad f_i(x_i^k)`` fixed while
      ``x_i^k`` moves, so it is **not** a bound for any cost with curvature (``L > 0``); kept to
      reproduce Theorem 6's printed threshold.
    * ``"sample_replace"`` (not in the paper): one sample replaced by an
      arbitrary one; Assumption 2 (``||grad l|| <= G``) gives the **L2** bound
      ``2 G lam^k / n_i``.

    ``"sample"``, ``"gradient"`` and ``"variable_printed"`` are L1 values as printed. The Gaussian
    mechanism needs L2, and ``||.||_2 <= ||.||_1``, so they are valid (conservative) L2 bounds too.

    ``units``: ``"message"`` returns the sensitivity of ``M_i^k`` itself, to be
    compared with the standard deviation of the *released* noise ``lam^k
    n_i^k``. ``"noise"`` divides by ``lam^k``, i.e. expresses it against the
    standard deviation of ``n_i^k``. Theorems 4 and 5 compare the message
    sensitivity with ``Var(n_i^k)`` directly, ignoring the ``lam^k`` on the
    noise; Theorem 6 accounts for it.
    Variance notation: Algorithm 2 writes covariance ``sigma I`` and the
    experiments "variance sigma", whereas Theorems 4-6 treat ``sigma^2`` as the
    variance; callers of :mod:`accounting` always pass a variance explicitly.

    Args:
        lam_k: step size ``lam^k`` of iteration ``k``, ``> 0``.
        kind: one of :data:`WANG_BASAR_KINDS`.
        nu: Lipschitz constant of Assumption 1 (``kind="sample"``).
        n_i: number of samples of agent ``i`` (``"sample"``, ``"sample_replace"``).
        G: gradient bound of Assumption 2 (``"sample_replace"``).
        L: Lipschitz constant of ``grad f_i`` in the Euclidean norm (``"variable"``); the paper's
            Assumption 1 calls it ``nu`` without naming the norm.
        units: ``"message"`` or ``"noise"``.

    Returns:
        The per-iteration sensitivity (L1 for ``"sample"``, ``"gradient"`` and ``"variable_printed"``,
        L2 for ``"variable"`` and ``"sample_replace"``).

    Raises:
        PrivacyParameterError: an unknown ``kind``/``units``, a missing or invalid constant (``kind="variable"``
            without ``L``: eq. (31)'s ``1`` is no guarantee, so no value is returned).

    Example:
        >>> wang_basar_sensitivity(lam_k=0.02, kind="gradient")
        0.02
        >>> wang_basar_sensitivity(lam_k=0.02, kind="gradient", units="noise")
        1.0
        >>> wang_basar_sensitivity(lam_k=0.5, kind="sample", nu=2.0, n_i=10)
        0.1
        >>> wang_basar_sensitivity(lam_k=0.02, kind="variable", L=1.0)  # f = -x^2/2 moves M by 1.02
        1.02
        >>> wang_basar_sensitivity(lam_k=0.02, kind="variable_printed")  # eq. (31) as printed: too small
        1.0
    """
    lam = check_positive(lam_k, "lam_k", error=_E)
    if kind not in WANG_BASAR_KINDS:
        raise PrivacyParameterError(f"kind must be one of {WANG_BASAR_KINDS}, got {kind!r}")
    if units not in ("message", "noise"):
        raise PrivacyParameterError(f"units must be 'message' or 'noise', got {units!r}")
    if kind == "sample":
        if nu is None or n_i is None:
            raise PrivacyParameterError(f"kind='sample' needs nu and n_i, got nu={nu!r}, n_i={n_i!r}")
        value = check_nonnegative(nu, "nu", error=_E) * lam / check_integer(n_i, "n_i", minimum=1, error=_E)
    elif kind == "gradient":
        value = lam
    elif kind == "variable":
        if L is None:
            raise PrivacyParameterError(
                "kind='variable' (eq. 31) needs L, the Lipschitz constant of grad f_i (L2), got L=None: the "
                "message x - lam^k grad f_i(x) moves by up to 1 + lam^k L; eq. (31)'s printed 1 "
                "(kind='variable_printed') holds the gradient fixed and is no bound")
        value = 1.0 + lam * check_nonnegative(L, "L", error=_E)
    elif kind == "variable_printed":
        value = 1.0
    else:
        if G is None or n_i is None:
            raise PrivacyParameterError(f"kind='sample_replace' needs G and n_i, got G={G!r}, n_i={n_i!r}")
        value = 2.0 * check_nonnegative(G, "G", error=_E) * lam / check_integer(n_i, "n_i", minimum=1, error=_E)
    return value / lam if units == "noise" else value



def wang_basar_variance_threshold(
    epsilon: float,
    delta: float,
    *,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    L: float | None = None,
    form: str = "printed",
) -> float:
    """Minimum ``Var(n_i^k)`` (per coordinate) in Theorems 4-6 (Wang and Başar, Automatica 2023), at one iteration.

    ``form="printed"``: the theorems as printed,
    Thm 4 ``2 nu^2 lam^2 ln(1.25/delta) / (n_i^2 epsilon^2)``,
    Thm 5 ``2 lam^2 ln(1.25/delta) / epsilon^2``,
    Thm 6 ``2 ln(1.25/delta) / (lam^2 epsilon^2)`` (eq. 31's printed sensitivity ``1``).
    ``form="consistent"``: the released noise is ``lam^k n_i^k``, so the
    Gaussian mechanism needs ``Var(n) >= 2 ln(1.25/delta) S^2 / epsilon^2``
    with ``S`` the sensitivity in noise units
    (:func:`wang_basar_sensitivity` with
    ``units="noise"``): Thms 4 and 5 lose their ``lam^2`` factor; Thm 6
    already treats the ``lam^k`` on the noise consistently but takes eq. (31)'s
    ``1`` for the sensitivity, so its consistent threshold is
    ``2 ln(1.25/delta) (1 + lam L)^2 / (lam^2 epsilon^2)`` (``kind="variable"``, needs ``L``).

    Args:
        epsilon, delta: in ``(0, 1)`` (the classical Gaussian mechanism's range).
        lam_k: step size of the iteration, ``> 0``.
        kind: ``"sample"``, ``"gradient"`` or ``"variable"``.
        nu, n_i: needed for ``kind="sample"``.
        L: Lipschitz constant of ``grad f_i`` (L2), needed for ``kind="variable"``, ``form="consistent"``.
        form: ``"printed"`` or ``"consistent"``.

    Returns:
        The variance threshold.

    Raises:
        PrivacyParameterError: an invalid parameter, kind or form; ``L`` missing where it is needed.

    Example:
        >>> t = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="printed")
        >>> c = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="consistent")
        >>> round(c / t, 9)
        100.0
    """
    eps = check_open_unit(epsilon, "epsilon", error=_E)
    d = check_open_unit(delta, "delta", error=_E)
    if kind not in WANG_BASAR_THEOREMS:
        raise PrivacyParameterError(f"kind must be one of {tuple(WANG_BASAR_THEOREMS)}, got {kind!r}")
    if form not in ("printed", "consistent"):
        raise PrivacyParameterError(f"form must be 'printed' or 'consistent', got {form!r}")
    base = 2 * math.log(1.25 / d) / eps**2
    if form == "consistent":
        s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, L=L, units="noise")
    elif kind == "variable":  # Theorem 6 as printed: eq. (31)'s 1 against the released noise lam^k n
        s = wang_basar_sensitivity(lam_k=lam_k, kind="variable_printed", units="noise")
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
    """Theorems 4-6 of Wang and Başar, Automatica 2023: ``(epsilon, delta)``-DP at **one iteration** only.

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
    var = check_positive(noise_variance, "noise_variance", error=_E)
    threshold = wang_basar_variance_threshold(epsilon, delta, lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, form="printed")
    name = WANG_BASAR_THEOREMS[kind]
    if var < threshold:
        raise PrivacyParameterError(
            f"noise_variance={noise_variance!r} is below {name}'s printed threshold {threshold:.6g}; "
            "the paper claims nothing for these parameters"
        )
    return Claim(
        paper=_WANG_BASAR2023,
        statement=f"{name}: (epsilon, delta)-DP for agent i's {kind} at one iteration",
        epsilon=float(epsilon),
        delta=float(delta),
        per="iteration",
        notes=(
            f"lam_k = {lam_k!r}, Var(n) = {var:.6g} >= printed threshold {threshold:.6g}. Message "
            "x - lam (g + n): the released noise is lam*n, which Theorems 4 and 5 ignore"
            + ("; eq. (31)'s sensitivity 1 holds grad f_i fixed while x moves (true: 1 + lam L)"
               if kind == "variable" else "")
            + ". No composition over iterations is given."
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
    L: float | None = None,
) -> float:
    """Per-iteration epsilon of the shared message by the classical Gaussian mechanism.

    The message of Wang and Başar (Automatica 2023), Algorithm 2.

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
        kind: one of :data:`WANG_BASAR_KINDS`.
        nu, n_i, G, L: constants needed by the chosen ``kind``.

    Returns:
        The epsilon of one iteration at this ``delta``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> v = wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, kind="gradient", form="printed")
        >>> round(wang_basar_effective_epsilon(delta=1e-3, noise_variance=v, lam_k=0.1), 9)
        5.0
    """
    d = check_open_unit(delta, "delta", error=_E)
    var = check_positive(noise_variance, "noise_variance", error=_E)
    s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, G=G, L=L, units="noise")
    return _classic_gaussian(s, d, math.sqrt(var))



def wang_basar_noise_std(
    epsilon: float,
    delta: float,
    *,
    lam_k: float,
    kind: str = "gradient",
    nu: float | None = None,
    n_i: int | None = None,
    G: float | None = None,
    L: float | None = None,
) -> float:
    """Standard deviation of the released noise ``lam^k n_i^k`` that gives ``epsilon`` at one iteration.

    Wang and Başar (Automatica 2023), Theorems 4-6.

    The inverse of :func:`wang_basar_effective_epsilon`: the classical Gaussian
    calibration ``std = S sqrt(2 ln(1.25/delta)) / epsilon`` with ``S`` the
    message sensitivity (:func:`wang_basar_sensitivity`, ``units="message"``).
    The calibration is proven for ``epsilon < 1`` only; the value is returned
    for any ``epsilon > 0`` so that a per-iteration claim can be compared with
    the noise an algorithm declares.

    Args:
        epsilon: the per-iteration epsilon, ``> 0``.
        delta: in ``(0, 1)``.
        lam_k, kind, nu, n_i, G, L: as in :func:`wang_basar_sensitivity`.

    Returns:
        The per-coordinate standard deviation of the released noise.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> std = wang_basar_noise_std(0.5, 1e-3, lam_k=0.1)      # released std = lam * sqrt(Var(n))
        >>> round(wang_basar_effective_epsilon(delta=1e-3, noise_variance=(std / 0.1) ** 2, lam_k=0.1), 12)
        0.5
    """
    eps = check_positive(epsilon, "epsilon", error=_E)
    d = check_open_unit(delta, "delta", error=_E)
    s = wang_basar_sensitivity(lam_k=lam_k, kind=kind, nu=nu, n_i=n_i, G=G, L=L, units="message")
    return _classic_gaussian(s, d, eps)


SPEC = AccountantSpec(
    names=("wang-basar",),
    paper=_WANG_BASAR2023,
    mechanism="gaussian",
    norm="l2",  # the printed L1 values bound the L2 norm too; "variable" is an L2 bound (wang_basar_sensitivity)
    sensitivity=wang_basar_sensitivity,
    release_sensitivity=wang_basar_sensitivity,  # the released message is the mechanism's own output
    claim=wang_basar_claim,
    effective_epsilon=wang_basar_effective_epsilon,
    noise_scale=wang_basar_noise_std,
)
"""The accountant's record of Wang and Başar (Automatica 2023)."""


ASSUMPTIONS = AssumptionSet("wang-basar", "Wang and Basar 2023, Assumption 4", (
    *fixed_symmetric_steps("Wang and Basar 2023, Assumption 4"),
    EachRound(_P.check_positive_diagonal, "positive_diagonal", "w_ii > 0 (Wang and Basar 2023, Sec. 2)"),
    Spectral(_P.mixing_norm, "eta", "mixing_norm_below_one", "||W - 11^T/m||_2",
             "eta = ||W - 11^T/m||_2 < 1 (Wang and Basar 2023, Assumption 4)"),
), "doubly")
"""The topology assumptions (Assumption 4): one fixed matrix, symmetric, doubly stochastic, positive diagonal,
``eta = ||W - 11^T/m||_2 < 1``."""

"""Accountant inputs for ``showkatbakhsh`` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019), and tight
accounting beside Theorem 1.

* :func:`sensitivity` — the L2 sensitivity of every round's release, from
  :mod:`accounting.papers.showkatbakhsh` with the problem's ``G`` (never the
  algorithm's claimed values);
* :func:`theorem_verdict` — Theorem 1's own argument recomputed on the
  realized noise scales (used by :func:`asyncdp.privacy.check_privacy`);
* :func:`tight_accounting` — the paper's epsilon beside the RDP and PLD
  epsilon of the same Gaussian releases, and how much less noise tight
  accounting needs for the same epsilon.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accounting.claims import verify
from accounting.errors import PrivacyParameterError
from accounting.ledger import Ledger, Release
from accounting.papers import showkatbakhsh as P

from ...errors import ScenarioError
from ..record import GradientClass, require_out_neighbours

__all__ = ["claimed_scale", "gradient_class", "sensitivity", "theorem_verdict", "tight_accounting"]


def _constants(scenario: Any) -> tuple[Any, float]:
    """The bound algorithm and the problem's own gradient bound ``G``."""
    alg = scenario.algorithm.bind(scenario.problem)
    G = scenario.problem.constants.gradient_bound
    if G is None:
        raise ScenarioError("showkatbakhsh: the problem declares no gradient bound G; Prop. 3 needs one")
    return alg, float(G)


def sensitivity(scenario: Any) -> np.ndarray:
    """L2 sensitivity of each release ``y(t)``, ``t = 1..horizon`` (eq. 11 with Prop. 3).

    ``y(t)`` masks ``x(t-1)``, so its sensitivity is
    ``accounting.papers.showkatbakhsh.showkatbakhsh_release_sensitivity(t)`` =
    ``Delta(t-1) = 2 (c/(t-1)) G`` for ``2 <= t <= T + 1``, and 0 for ``y(1)``
    (it masks the data-free ``x(0)``) and for every Stage-II message after
    ``y(T+1)`` (functions of released messages). ``G`` is the problem's
    gradient bound; ``c = (mu + L)/(2 mu L)`` is the algorithm's step constant.

    The sensitivity does not depend on the hand-over variant: in
    ``stage2="as-printed"`` the message ``y(T+1) = x(T)`` still has
    sensitivity ``Delta(T) > 0``, but it is released with scale 0, so its
    privacy loss is infinite (``check_privacy`` reports that).

    Raises:
        ScenarioError: the problem has no gradient bound; or unicast mode with
            an agent that has no out-neighbour in some round (its noise-free
            self term breaks Prop. 3's conditioning argument).
    """
    alg, G = _constants(scenario)
    require_out_neighbours(scenario, f"{P.SPEC.paper}, Prop. 3")
    return np.array([P.showkatbakhsh_release_sensitivity(t, G=G, c=alg.c, T=alg.T)
                     for t in range(1, scenario.horizon + 1)])


def theorem_verdict(scenario: Any, eps_ledger: float | None = None, delta_ledger: float | None = None
                   ) -> str:
    """Theorem 1's tail bound recomputed on the declared scales of the released messages.

    The messages ``y(2..min(horizon, T+1))`` mask ``x(1..)`` with scales
    ``M_1, ...``; :func:`accounting.papers.showkatbakhsh.showkatbakhsh_effective_epsilon`
    turns them (with the problem's ``G``) into the epsilon Theorem 1's
    argument certifies at the claimed delta, compared with the claim by
    :func:`accounting.claims.verify`. A released state with scale 0 makes
    the certified epsilon infinite.

    ``eps_ledger`` and ``delta_ledger`` (the accountant's figures of the run)
    are accepted so that every paper's verdict has one signature
    (:class:`~asyncdp.papers.record.Paper`); this paper's verdict does not need them.
    """
    alg, G = _constants(scenario)
    eps, delta = alg.claimed_privacy(scenario.horizon)
    if math.isinf(eps):
        return f"{P.SPEC.paper}: epsilon = inf, no privacy claimed"
    claim = P.showkatbakhsh_claim(eps, delta, T=alg.T, c=alg.c, G=G)
    last = min(scenario.horizon, alg.T + 1)
    scales = [alg.noise(t, "y").scale for t in range(2, last + 1)]
    if not scales:
        computed = 0.0
    elif min(scales) == 0:
        computed = math.inf
    else:
        computed = P.showkatbakhsh_effective_epsilon(scales, delta=delta, c=alg.c, G=G)
    return verify(claim, computed, delta).message


def _ledger(scales: np.ndarray) -> Ledger:
    """One agent's releases: state ``x(t)`` masked with std ``scales[t-1]`` (round index = ``t``)."""
    return Ledger([Release(agent=0, round=t, time=0.0, mechanism="gaussian", scale=float(m), dimension=1)
                   for t, m in enumerate(scales, start=1)])


def tight_accounting(epsilon: float, delta: float, *, T: int, c: float, G: float,
                     value_discretization_interval: float = 1e-3) -> dict[str, Any]:
    """The paper's (epsilon, delta) beside tight accounting of the same Gaussian releases.

    Releases: ``x(t)`` with L2 sensitivity ``Delta(t) = 2 (c/t) G``
    (:func:`accounting.papers.showkatbakhsh.showkatbakhsh_sensitivity`) under noise
    ``M_t`` of Theorem 2's schedule (:func:`accounting.papers.showkatbakhsh.showkatbakhsh_noise_scales`),
    ``t = 1..T`` (the last is ``y(T+1)``, noisy as in the corrected hand-over).

    Reported:

    * ``epsilon_paper``: the claim; ``epsilon_theorem1``: the epsilon Theorem
      1's sub-Gaussian tail argument certifies for this schedule at ``delta``
      (``<= epsilon_paper``: Theorem 2's schedule leaves slack);
    * ``epsilon_rdp``, ``epsilon_pld``: :func:`accounting.composition.rdp_epsilon`
      and :func:`~accounting.composition.pld_epsilon` of the same releases at the same ``delta``;
    * ``epsilon_exact``: the composition is exactly one Gaussian mechanism with
      ``mu = sqrt(alpha)``, ``alpha = sum_t Delta(t)^2 / M_t^2`` (Dong, Roth and
      Su 2022), so its exact epsilon at ``delta`` is that mechanism's;
    * ``noise_factor``: the factor ``s`` such that the schedule ``s M_t``
      gives exactly ``epsilon_paper`` at ``delta`` under exact accounting
      (``s = sqrt(alpha) * sigma_1``, ``sigma_1`` the analytic-Gaussian std
      for unit sensitivity); ``variance_factor = s^2``; and
      ``epsilon_pld_scaled``, the PLD epsilon of the scaled schedule (a check,
      ``~ epsilon_paper``).

    Args:
        epsilon: ``> 0``; delta: in ``(0, 1)``; T: ``>= 1``; c, G: ``> 0``.
        value_discretization_interval: PLD grid step.

    Returns:
        A JSON-ready dict with the keys above plus the inputs, ``kappa`` and ``alpha``.

    Raises:
        PrivacyParameterError: an invalid parameter.

    Example:
        >>> r = tight_accounting(1.0, 1e-5, T=100, c=0.01, G=1.0)
        >>> r["epsilon_pld"] < r["epsilon_paper"] and r["noise_factor"] < 1
        True
    """
    from accounting import composition, mechanisms  # dp_accounting and scipy.stats: loaded when used

    scales = P.showkatbakhsh_noise_scales(epsilon, delta, T=T, c=c, G=G)
    kappa = P.showkatbakhsh_kappa(epsilon, delta, G=G)
    alpha = P.showkatbakhsh_alpha(scales, c=c, G=G)

    def sens(r: Release) -> float:
        return P.showkatbakhsh_sensitivity(r.round, G=G, c=c)

    ledger = _ledger(scales)
    mu = math.sqrt(alpha)
    sigma_1 = mechanisms.gaussian_sigma(1.0, epsilon, delta)
    factor = mu * sigma_1
    if not factor > 0:
        raise PrivacyParameterError(f"noise factor must be positive, got {factor!r}")
    return {
        "epsilon": float(epsilon), "delta": float(delta), "T": int(T), "c": float(c), "G": float(G),
        "kappa": kappa, "alpha": alpha,
        "epsilon_paper": float(epsilon),
        "epsilon_theorem1": P.showkatbakhsh_effective_epsilon(scales, delta=delta, c=c, G=G),
        "epsilon_rdp": composition.rdp_epsilon(ledger, sens, delta),
        "epsilon_pld": composition.pld_epsilon(ledger, sens, delta,
                                               value_discretization_interval=value_discretization_interval),
        "epsilon_exact": mechanisms.gaussian_epsilon(mu, 1.0, delta),
        "noise_factor": factor,
        "variance_factor": factor**2,
        "epsilon_pld_scaled": composition.pld_epsilon(_ledger(scales * factor), sens, delta,
                                                      value_discretization_interval=value_discretization_interval),
    }


def claimed_scale(scenario: Any, t: int) -> float:
    """Theorem 2's std ``M_(t-1)`` of message ``y(t)``, from the accountant's schedule and the problem's ``G``.

    :func:`accounting.papers.showkatbakhsh.showkatbakhsh_noise_scales` at the
    claimed ``(epsilon, delta)``; 0 for ``y(1)`` and after ``y(T+1)`` (no state
    with data is masked there), and when no privacy is claimed.

    Example:
        >>> from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
        >>> sc = Showkatbakhsh.example_scenario()
        >>> round(claimed_scale(sc, 2) / sc.algorithm.bind(sc.problem).noise(2, "y").scale, 12)
        1.0
    """
    alg, G = _constants(scenario)
    eps, delta = alg.claimed_privacy(scenario.horizon)
    if math.isinf(eps) or not 2 <= t <= alg.T + 1:
        return 0.0
    return float(P.showkatbakhsh_noise_scales(eps, delta, T=alg.T, c=alg.c, G=G)[t - 2])


def gradient_class(scenario: Any) -> GradientClass:
    """Prop. 3's adjacency class: any two costs with ``||grad f||_2 <= G``, bounded in L2.

    Example:
        >>> from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
        >>> gradient_class(Showkatbakhsh.example_scenario()).norm
        'l2'
    """
    return GradientClass(float(_constants(scenario)[1]), "l2")

"""Accountant inputs for ``wang-basar`` (Wang and Başar, Automatica 2023) and its privacy report.

What each release masks: in round ``t = k`` agent ``i`` broadcasts
``v_i^k = M_i^k + lam^k n_i^k`` with ``M_i^k = x_i^k - lam^k grad f_i(x_i^k)``.
In broadcast mode ``x_i^k = sum_j w_ij v_j^(k-1)`` is a function of earlier
releases only, so given the past only ``grad f_i`` (data or gradient
adjacency) or ``x_i^k`` itself (variable adjacency, Theorem 6) differs
between adjacent problems, and only agent ``i``'s own releases carry new
information about its datum: the right composition scope is per agent.

:func:`sensitivity` hands the step sizes and the cost family's constants to
:func:`accounting.papers.wang_basar.wang_basar_sensitivity` (never the algorithm's
claimed values). For the variable adjacency that includes ``L``, the Lipschitz
constant of the gradients on the set the iterates live in (:func:`gradient_lipschitz`):
eq. (31)'s printed ``1`` holds the gradient fixed and is not used as a bound. :func:`privacy_report` sets the paper's per-iteration
statements (Theorems 4–6) beside the accountant's per-iteration epsilon and
the totals over ``K`` iterations by basic, advanced, RDP and PLD composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting.claims import verify
from accounting.errors import PrivacyParameterError
from accounting.ledger import Ledger, Release
from accounting.papers import wang_basar as P
from accounting.papers.wang_basar import WANG_BASAR_THEOREMS

from ...errors import ScenarioError
from ..record import GradientClass, require_out_neighbours

__all__ = ["claimed_scale", "gradient_class", "gradient_lipschitz", "gradient_relation", "sensitivity", "agent_ledger", "theorem_verdict",
           "privacy_report", "REPORT_KEYS", "THEOREM_KEYS"]

REPORT_KEYS = ("algorithm", "kind", "theorem", "delta", "horizon", "noise_variance", "step", "per_iteration",
               "theorems", "unavailable", "composed", "composition_failures", "scope", "gap", "statements")
"""Top-level keys of :func:`privacy_report`."""
THEOREM_KEYS = ("theorem", "kind", "sensitivity", "eps_printed_first", "eps_printed_last", "eps_printed_max",
                "eps_consistent_max", "claim_holds_printed", "eps_accountant_max")
"""Keys of each entry of ``privacy_report(...)["theorems"]``."""

_KIND_THEOREM = WANG_BASAR_THEOREMS  # the one copy of the theorem table, in accounting.papers.wang_basar
_EPS_REF = 0.5  # thresholds scale as 1/epsilon^2; any reference in (0, 1) inverts them exactly


def gradient_lipschitz(scenario: Any) -> float:
    """``L`` of the corrected eq. (31): the Lipschitz constant of every ``grad f_i`` where the iterates live.

    Read from the cost family's :class:`~asyncdp.problems.costs.FunctionClass` (``smoothness``, the
    Euclidean Lipschitz constant of the gradients) on the set holding every iterate ``x_i^k`` and the
    segment between two of them: ``R^d`` for ``constraint="none"`` (Algorithm 2 as printed), the
    problem's (convex) domain for ``"domain"``, the unit ball for ``"sphere"``. The first message reads the
    gradient at ``x0``, which no constraint has moved yet: when some ``x0`` lies outside that set, ``L`` is
    read on the ball about the origin holding both (radius ``max(sup_X ||x||, max_i ||x0_i||)``).

    Args:
        scenario: a scenario running :class:`~asyncdp.papers.wang_basar.rule.WangBasar`.

    Returns:
        ``L >= 0``.

    Raises:
        ScenarioError: the cost family declares no ``smoothness`` on that set (then the variable
            adjacency has no bound: eq. (31)'s printed ``1`` is not one).

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> round(gradient_lipschitz(WangBasar.example_scenario()), 4)
        34.3798
    """
    from ...problems.domains import Ball, Reals

    alg, problem = scenario.algorithm, scenario.problem
    dim = int(problem.dim)
    region = {"none": lambda: Reals(dim), "domain": lambda: problem.domain,
              "sphere": lambda: Ball(np.zeros(dim), 1.0)}[alg.constraint]()
    x0 = scenario.initial_points()
    if alg.constraint != "none" and not np.all(region.contains(x0)):  # round 1 reads grad f_i(x0)
        region = Ball(np.zeros(dim), max(float(region.radius_bound), float(np.linalg.norm(x0, axis=-1).max())))
    L = problem.costs.function_class(region).smoothness
    if L is None:
        raise ScenarioError(
            f"kind='variable' (eq. 31) needs L, the Lipschitz constant of grad f_i (FunctionClass.smoothness) on "
            f"{region!r} (constraint={alg.constraint!r}); {type(problem.costs).__name__} declares none there. The "
            "message x - lam^k grad f_i(x) moves by up to 1 + lam^k L; the printed 1 holds the gradient fixed "
            "and is no bound")
    return float(L)


def _constants(scenario: Any, kind: str) -> tuple[float | None, int | None, float | None]:
    """``(nu, n_i, L)`` for ``kind``: ``nu``, ``n_i`` as the cost family declares them, ``L`` for ``"variable"``."""
    costs = scenario.problem.costs
    nu, n_i = getattr(costs, "sample_lipschitz", None), getattr(costs, "samples_per_agent", None)
    if kind == "sample" and (nu is None or n_i is None):
        raise ScenarioError(f"kind='sample' (eq. 28) needs the cost family's sample_lipschitz and samples_per_agent; "
                            f"{type(costs).__name__} declares nu={nu!r}, n_i={n_i!r}")
    return nu, n_i, gradient_lipschitz(scenario) if kind == "variable" else None


def sensitivity(scenario: Any, kind: str | None = None) -> np.ndarray:
    """Sensitivity of each release ``v(t)``, ``t = 1..T``, in message units.

    ``accounting.papers.wang_basar.wang_basar_sensitivity(lam_k=lam^t, kind=...)``:
    ``nu lam^t / n_i`` (eq. 28) or ``lam^t`` (eq. 30), L1 values as printed and
    valid (conservative) L2 bounds for the Gaussian noise; ``1 + lam^t L``
    (eq. 31 corrected, an L2 bound; the printed ``1`` holds the gradient fixed).
    ``lam^t`` is the algorithm's step parameter; ``nu``, ``n_i`` and ``L``
    (:func:`gradient_lipschitz`) come from the cost family.

    Args:
        scenario: a scenario running :class:`~asyncdp.papers.wang_basar.rule.WangBasar`.
        kind: the adjacency (default: the algorithm's ``privacy_kind``).

    Returns:
        Array ``(T,)``.

    Raises:
        ScenarioError: unicast with an agent without out-neighbour (its
            noise-free self term is not a function of releases), or missing
            constants (``nu``, ``n_i`` for ``kind="sample"``, ``L`` for ``"variable"``).
    """
    alg = scenario.algorithm.bind(scenario.problem)
    kind = alg.privacy_kind if kind is None else kind
    require_out_neighbours(scenario, f"{P.SPEC.paper}, eqs. (28)-(31)")
    nu, n_i, L = _constants(scenario, kind)
    return np.array([P.wang_basar_sensitivity(lam_k=alg.step_size(t), kind=kind, nu=nu, n_i=n_i, L=L,
                                              units="message") for t in range(1, scenario.horizon + 1)])


def agent_ledger(scenario: Any, agent: int = 0, horizon: int | None = None) -> Ledger:
    """One agent's releases as the engines record them (schedules do not depend on the noise).

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> len(agent_ledger(WangBasar.example_scenario()))
        30
    """
    alg = scenario.algorithm.bind(scenario.problem)
    horizon = scenario.horizon if horizon is None else int(horizon)
    return Ledger([Release(agent=agent, round=t, time=0.0, mechanism="gaussian", scale=alg.noise_scale(t),
                           dimension=int(alg.dimension), claimed_sensitivity=alg.claimed_sensitivity(t), channel="v")
                   for t in range(1, horizon + 1) if alg.noise_scale(t) > 0])


def theorem_verdict(scenario: Any, eps_ledger: float | None = None, delta_ledger: float | None = None
                   ) -> str:
    """The printed theorem of the algorithm's ``privacy_kind`` against the accountant, per iteration.

    The claim is the algorithm's worst per-iteration ``(epsilon, delta)``
    (:meth:`~asyncdp.papers.wang_basar.rule.WangBasar.claimed_privacy`), built by
    :func:`accounting.papers.wang_basar.wang_basar_claim` at the step size of that
    iteration; the computed value is the largest per-release epsilon of the
    analytic Gaussian mechanism (:func:`accounting.mechanisms.gaussian_epsilon`)
    with :func:`sensitivity` and the declared noise scales.

    ``eps_ledger`` and ``delta_ledger`` (the accountant's figures of the run)
    are accepted so that every paper's verdict has one signature
    (:class:`~asyncdp.papers.record.Paper`); this paper's verdict does not need them.
    """
    from accounting import mechanisms  # dp_accounting and scipy.stats: loaded when used

    alg = scenario.algorithm.bind(scenario.problem)
    eps, delta = alg.claimed_privacy(scenario.horizon)
    name = _KIND_THEOREM[alg.privacy_kind]
    if math.isinf(eps):
        return (f"{P.SPEC.paper}, {name}: no claim (no noise, or a per-iteration epsilon >= 1 where the "
                "printed theorem requires epsilon < 1)")
    nu, n_i, _ = _constants(scenario, alg.privacy_kind)
    rounds = range(1, scenario.horizon + 1)
    k = max(rounds, key=alg.per_iteration_epsilon)
    # the claimed epsilon is the printed threshold solved for epsilon; nudge it past float rounding
    claim = P.wang_basar_claim(eps * (1 + 1e-12), delta, noise_variance=alg.noise_variance,
                                      lam_k=alg.step_size(k), kind=alg.privacy_kind, nu=nu, n_i=n_i)
    sens = sensitivity(scenario)
    computed = max(mechanisms.gaussian_epsilon(float(sens[t - 1]), alg.noise_scale(t), delta) for t in rounds)
    return verify(claim, computed, delta).message


def _printed_epsilon(lam: float, kind: str, var: float, delta: float, nu: float | None, n_i: int | None,
                     L: float | None, form: str) -> float:
    """Invert :func:`accounting.papers.wang_basar.wang_basar_variance_threshold` (``Var >= thr(eps)``, ``thr ~ 1/eps^2``)."""
    thr = P.wang_basar_variance_threshold(_EPS_REF, delta, lam_k=lam, kind=kind, nu=nu, n_i=n_i, L=L, form=form)
    return _EPS_REF * math.sqrt(thr / var)


def _theorem_entry(scenario: Any, kind: str, delta: float, horizon: int) -> dict[str, Any]:
    from accounting import mechanisms  # dp_accounting and scipy.stats: loaded when used

    alg = scenario.algorithm.bind(scenario.problem)
    nu, n_i, L = _constants(scenario, kind)
    var = alg.noise_variance
    lams = [alg.step_size(k) for k in range(1, horizon + 1)]
    printed = [_printed_epsilon(lam, kind, var, delta, nu, n_i, L, "printed") for lam in lams]
    consistent = [_printed_epsilon(lam, kind, var, delta, nu, n_i, L, "consistent") for lam in lams]
    sens = [P.wang_basar_sensitivity(lam_k=lam, kind=kind, nu=nu, n_i=n_i, L=L, units="message") for lam in lams]
    ratios = {s / (lam * math.sqrt(var)) for s, lam in zip(sens, lams)}  # epsilon grows with the ratio
    eps_acc = mechanisms.gaussian_epsilon(max(ratios), 1.0, delta)
    return {
        "theorem": _KIND_THEOREM[kind], "kind": kind,
        "sensitivity": {"first": sens[0], "last": sens[-1],
                        "units": ("message, L2: 1 + lam^k L (eq. 31 corrected)" if kind == "variable"
                                  else "message (L1 as printed, bounds L2)")},
        "eps_printed_first": printed[0], "eps_printed_last": printed[-1], "eps_printed_max": max(printed),
        "eps_consistent_max": max(consistent),
        "claim_holds_printed": bool(max(printed) < 1),
        "eps_accountant_max": eps_acc,
    }


def privacy_report(scenario: Any, *, delta: float | None = None, horizon: int | None = None,
                   methods: Sequence[str] | None = None, value_discretization_interval: float = 1e-3
                   ) -> dict[str, Any]:
    """Theorems 4–6 per iteration as printed, the accountant's per-iteration epsilon, and K-iteration totals.

    Per iteration (``theorems``): for each applicable kind, the epsilon the
    printed theorem gives (first, last and worst iteration), the same with the
    ``lam^k`` on the released noise accounted for (``form="consistent"``; as
    printed, Theorems 4 and 5 leave it out and only Theorem 6 keeps it), and
    the accountant's exact (analytic Gaussian) epsilon of the
    worst iteration at ``delta`` (for the variable adjacency with the corrected
    sensitivity ``1 + lam^k L`` of eq. 31). A kind whose constants the cost
    family does not declare (``nu``, ``n_i`` for Theorem 4; ``L`` for Theorem 6)
    is listed in ``unavailable`` with the reason, never given a number.
    Totals (``composed``): agent 0's ``K``
    releases under the algorithm's ``privacy_kind``, composed by each method
    at total ``delta`` (:func:`accounting.composition.compose`; per agent is the
    right scope, module docstring).

    Args:
        scenario: a WangBasar scenario (noise_variance > 0).
        delta: total delta (default: the algorithm's ``delta``).
        horizon: ``K`` (default: the scenario's horizon).
        methods: composition methods (default: all of :data:`accounting.composition.METHODS`).
        value_discretization_interval: PLD grid.

    Returns:
        A JSON-ready dict with :data:`REPORT_KEYS`.

    Raises:
        ScenarioError: no noise (nothing to account for), or the algorithm's own ``privacy_kind`` lacks a
            constant (naming it).

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> rep = privacy_report(WangBasar.example_scenario(), methods=("basic", "pld"))
        >>> rep["composed"]["basic"] >= rep["composed"]["pld"] > rep["per_iteration"]["eps_printed"]
        True
    """
    from accounting import composition  # dp_accounting and scipy.stats: loaded when used

    methods = composition.METHODS if methods is None else methods
    alg = scenario.algorithm.bind(scenario.problem)
    if alg.noise_variance <= 0:
        raise ScenarioError("the scenario adds no noise (noise_variance = 0): nothing to account for")
    delta = alg.delta if delta is None else float(delta)
    horizon = scenario.horizon if horizon is None else int(horizon)
    kind = alg.privacy_kind
    sc = scenario.replace(horizon=horizon) if horizon != scenario.horizon else scenario
    entries = []
    unavailable: dict[str, str] = {}
    for k in _KIND_THEOREM:
        try:
            entries.append(_theorem_entry(sc, k, delta, horizon))
        except ScenarioError as exc:  # e.g. no nu for Theorem 4 (ICA), no L for Theorem 6
            if k == kind:
                raise
            unavailable[k] = f"{_KIND_THEOREM[k]}: {exc}"
    own = next(e for e in entries if e["kind"] == kind)
    sens = sensitivity(sc, kind)
    ledger = agent_ledger(sc, 0, horizon)
    composed: dict[str, float | None] = {}
    failures: dict[str, str] = {}
    for m in methods:
        try:
            rep = composition.compose(ledger, lambda r: float(sens[r.round - 1]), delta, methods=(m,),
                                      per_agent=False, value_discretization_interval=value_discretization_interval)
            composed[m] = float(rep.network_wide[m])
        except (OverflowError, PrivacyParameterError) as exc:  # e^eps overflow; PLD grid beyond its limit
            composed[m] = None
            failures[m] = f"{type(exc).__name__}: {exc}"
    finite = [v for v in composed.values() if v is not None and math.isfinite(v)]
    best = min(finite) if finite else math.inf
    eps_claim = alg.claimed_privacy(horizon)[0]
    ratio = max(float(sens[t - 1]) / alg.noise_scale(t) for t in range(1, horizon + 1))
    statements = [
        (f"{own['theorem']} as printed: every iteration is ({own['eps_printed_max']:.4g}, {delta:g})-DP "
         "(per iteration; the paper composes nothing)."),
        (f"Accountant, one iteration: epsilon = {own['eps_accountant_max']:.4g} at delta = {delta:g} "
         f"(analytic Gaussian; largest sensitivity/std = {ratio:.4g})."),
        f"Accountant, {horizon} iterations (per agent): "
        + ", ".join(f"{m} {'not computable' if v is None else format(v, '.4g')}" for m, v in composed.items())
        + f"; the tightest is {best / own['eps_printed_max']:.3g} x the printed per-iteration epsilon.",
    ]
    return {
        "algorithm": alg.name, "kind": kind, "theorem": own["theorem"], "delta": delta, "horizon": horizon,
        "noise_variance": alg.noise_variance, "step": alg.params()["step"],
        "per_iteration": {"eps_printed": own["eps_printed_max"], "eps_consistent": own["eps_consistent_max"],
                          "eps_accountant": own["eps_accountant_max"],
                          "eps_claimed": None if math.isinf(eps_claim) else eps_claim},
        "theorems": entries, "unavailable": unavailable, "composed": composed, "composition_failures": failures, "scope": "per agent (agent 0's releases; all agents alike)",
        "gap": {"tightest_total_over_printed": best / own["eps_printed_max"] if finite else None,
                "accountant_per_iteration_over_printed": own["eps_accountant_max"] / own["eps_printed_max"]},
        "statements": statements,
    }


def claimed_scale(scenario: Any, t: int) -> float:
    """The released std at iteration ``t`` that the per-iteration claim needs (Gaussian mechanism).

    :func:`accounting.papers.wang_basar.wang_basar_noise_std` at the rule's
    per-iteration epsilon of ``t`` (its reading of Theorems 4-6) and ``delta``,
    with the paper's message sensitivity of the rule's ``privacy_kind`` (for
    the variable, eq. 31 as printed, ``kind="variable_printed"``: the scale the
    paper prescribes, not one that suffices); 0 without noise.

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> sc = WangBasar.example_scenario()
        >>> round(claimed_scale(sc, 7) / sc.algorithm.bind(sc.problem).noise(7, "v").scale, 12)
        1.0
    """
    alg = scenario.algorithm.bind(scenario.problem)
    eps = alg.per_iteration_epsilon(t)
    if math.isinf(eps):
        return 0.0
    kind = "variable_printed" if alg.privacy_kind == "variable" else alg.privacy_kind
    nu, n_i, _ = _constants(scenario, kind)
    return P.wang_basar_noise_std(eps, alg.delta, lam_k=alg.step_size(t), kind=kind, nu=nu, n_i=n_i)


def gradient_class(scenario: Any) -> GradientClass | None:
    """The adjacency class of eq. (30), gradient adjacency: ``||grad f_i - grad f_i'||_1 <= 1``.

    Only for ``privacy_kind="gradient"``; the sample adjacency (eq. 28) changes a data sample and the
    variable adjacency (eq. 31) the iterate itself, neither a class of costs the worst-case search builds
    (``None``; :func:`gradient_relation` bounds the sample adjacency's pairs).

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> sc = WangBasar.example_scenario()
        >>> gradient_class(sc.replace(algorithm=WangBasar(noise_variance=1.0, privacy_kind="gradient"))).kind
        'difference'
    """
    alg = scenario.algorithm.bind(scenario.problem)
    return GradientClass(1.0, "l1", kind="difference") if alg.privacy_kind == "gradient" else None


def gradient_relation(scenario: Any) -> GradientClass | None:
    """What every pair of the rule's adjacency meets, as a relation of agent ``i``'s two gradients.

    ``"gradient"``: eq. (30) itself (:func:`gradient_class`). ``"sample"``: eq. (28) with one sample changed by
    ``||s - s'||_1 <= 1`` moves the gradient by at most ``nu / n_i`` in L1, so a pair whose gradients differ by
    more changed more than one sample by 1: Theorem 4 says nothing of it (the privacy check refuses it). Not a
    class to draw pairs from: linear costs differing by ``nu / n_i`` need not be sample changes. It rests on the
    cost family's ``nu``: a family that understates it makes a one-sample change look outside the class, and the
    check refuses that pair (exit 2) rather than report the understated lemma. ``"variable"``: ``None``.

    Example:
        >>> from asyncdp.papers.wang_basar.rule import WangBasar
        >>> sc = WangBasar.example_scenario()
        >>> gradient_relation(sc.replace(algorithm=WangBasar(noise_variance=1.0, privacy_kind="sample"))).bound
        4.0
    """
    alg = scenario.algorithm.bind(scenario.problem)
    if alg.privacy_kind != "sample":
        return gradient_class(scenario)
    nu, n_i, _ = _constants(scenario, "sample")
    assert nu is not None and n_i is not None  # (_constants raises without them)
    return GradientClass(float(nu) / int(n_i), "l1", kind="difference")

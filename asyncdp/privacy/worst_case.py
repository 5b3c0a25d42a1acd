"""The worst adjacent pair the accountant can construct: extremal costs plus a Hypothesis search.

The user's adjacent pair is one point of the adjacency class; a claim must
hold for every pair in it. For papers whose sensitivity bound assumes only
a gradient bound (``||grad f||_2 <= C2``; the paper record's ``adjacency``),
the changed agent's cost is replaced by extremal costs of that class
(:class:`~asyncdp.problems.costs.LinearOverride`):

* opposite linear costs ``f = <g, x>``, ``f' = -<g, x>`` along every
  coordinate (``g = C2 e_k``), and, for an L1 bound, along sign patterns
  (``g = C2 s / sqrt(n)``, ``s in {-1, 1}^n``), which attain Lemma-4-type
  bounds ``2 C2 sqrt(n) gamma``;
* then a Hypothesis search (``hypothesis.target``) over pairs of gradients of
  norm ``C2``, starting anywhere, maximizing the loss below.

Every other agent's cost, the algorithm (bound to the user's problem, so the
same noise and steps) and the initial points are kept. Round adjacency of
online losses (a :class:`~asyncdp.papers.RoundClass`) has its own
construction, :mod:`asyncdp.privacy.worst_round`.

The loss of a candidate pair is computed on the realized schedules of the
engine's runs of the user's scenario (the schedule does not depend on the
costs): the changed agent's messages are *constructed*, each equal to its
noise-free value under ``P`` (``pin_agent`` of
:func:`accounting.scheduled_replay.scheduled_replay`), the other agents'
are the recorded ones. With Laplace noise each round then contributes its
largest possible loss ``||mu - mu'||_1 / b``. The loss is continuous in the
transcript and the transcript density is positive everywhere, so a
constructed transcript with loss ``L > epsilon`` proves that a set of
positive probability has ``P(S) > e^epsilon P'(S)``: a pure-DP claim is
refuted, given the declared noise (which the conformance test checks).
For claims with ``delta > 0`` the best pair is run on the real engine and
its exact losses audited (:func:`accounting.auditors.plrv_audit` with the
threshold-event lower bound of :func:`accounting.delta_bounds.threshold_delta_lower`).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example()
    >>> pairs = extremal_pairs(pair.scenario, 0)
    >>> len(pairs), pairs[0][0]
    (8, 'sign pattern (+1, +1)')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..papers import AdjacencyClass, GradientClass, RoundClass, find_paper
from ..problems.costs import LinearOverride
from ..problems.problem import Problem
from ..scenario import Scenario
from .behavior import EngineRuns, declared_noise, replay_runs

__all__ = ["CandidatePair", "adjacency_class", "extremal_pairs", "candidate_scenarios", "constructed_loss", "search_pairs",
           "pair_script", "search_worst_case", "MAX_SIGN_PATTERNS"]

MAX_SIGN_PATTERNS = 64
"""At most this many sign patterns are tried (all of them for ``n <= 6``)."""


@dataclass(frozen=True)
class CandidatePair:
    """A constructed adjacent pair: the changed agent's linear costs under ``P`` and ``P'``.

    Attributes:
        label: how it was built (e.g. ``"sign pattern (+1, -1)"``, ``"hypothesis search"``).
        agent: the changed agent.
        gradient, gradient_prime: ``g`` and ``g'`` of ``f = <g, x>``, ``f' = <g', x>``.
        loss: the largest constructed-transcript loss found for it (``nan`` before evaluation).
        run: the engine run whose schedule gave that loss.
    """

    label: str
    agent: int
    gradient: tuple[float, ...]
    gradient_prime: tuple[float, ...]
    loss: float = math.nan
    run: int | None = None


def adjacency_class(scenario: Scenario) -> AdjacencyClass | None:
    """The adjacency class the algorithm's paper record declares for ``scenario``, or ``None``.

    Raises:
        PaperError: the record's ``adjacency`` returns something other than a :class:`~asyncdp.papers.GradientClass`
            or :class:`~asyncdp.papers.RoundClass` (round adjacency: :mod:`asyncdp.privacy.worst_round`).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> adjacency_class(small_example()[0].scenario).norm
        'l1'
    """
    from ..papers import PaperError

    paper = find_paper(scenario.algorithm)
    if paper is None or paper.adjacency is None:
        return None
    cls = paper.adjacency(scenario)
    if cls is not None and not isinstance(cls, (GradientClass, RoundClass)):
        raise PaperError(f"paper {paper.name!r}: adjacency must return a GradientClass, a RoundClass or None, "
                         f"got {cls!r}"[:300])
    return cls


def extremal_pairs(scenario: Scenario, agent: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The extremal gradient pairs of the paper's adjacency class (module docstring), ``[]`` if it has none.

    Args:
        scenario: the scenario (its paper record's adjacency class gives ``C2`` and the norm).
        agent: the changed agent (unused by the construction, named for symmetry with :func:`candidate_scenarios`).

    Returns:
        ``[(label, g, g')]``.
    """
    cls = adjacency_class(scenario)
    if not isinstance(cls, GradientClass):  # none, or round adjacency (asyncdp.privacy.worst_round)
        return []
    n = scenario.problem.dim
    if cls.kind == "difference":  # g - g' on the extreme points of the norm ball of radius bound
        half = 0.5 * cls.bound
        return [(f"difference along coordinate {k} ({'+' if s > 0 else '-'})", s * half * np.eye(n)[k],
                 -s * half * np.eye(n)[k]) for k in range(n) for s in (1.0, -1.0)]
    c2, norm = cls.bound, cls.norm
    out = []
    if norm == "l1":
        patterns: Any = itertools.product((1.0, -1.0), repeat=n)
        for s in itertools.islice(patterns, MAX_SIGN_PATTERNS):
            g = c2 * np.array(s) / math.sqrt(n)
            out.append((f"sign pattern ({', '.join(f'{v:+.0f}' for v in s)})", g, -g))
    for k in range(n):
        for sign in (1.0, -1.0):
            g = np.zeros(n)
            g[k] = sign * c2
            if norm == "l1" and n == 1:
                continue  # the sign patterns are the coordinates
            out.append((f"coordinate {k} ({'+' if sign > 0 else '-'})", g, -g))
    return out


def candidate_scenarios(scenario: Scenario, agent: int, gradient: Any, gradient_prime: Any
                        ) -> tuple[Scenario, Scenario]:
    """The scenario pair of a candidate: agent ``agent``'s cost linear, the algorithm bound to the user's problem.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> p, q = candidate_scenarios(small_example()[0].scenario, 0, [1.0, 0.0], [-1.0, 0.0])
        >>> p.problem.costs.gradient(0, [0.0, 0.0]).tolist()
        [1.0, 0.0]
    """
    alg = scenario.algorithm.bind(scenario.problem)  # its constants are filled: rebinding keeps them
    base = scenario.problem

    def with_cost(g: Any) -> Scenario:
        problem = Problem(base.domain, LinearOverride(base.costs, agent, g))
        return scenario.replace(problem=problem, algorithm=alg, x0=scenario.initial_points())

    return with_cost(gradient), with_cost(gradient_prime)


def constructed_loss(runs: EngineRuns, scenario: Scenario, agent: int, gradient: Any, gradient_prime: Any,
                     max_runs: int | None = None) -> tuple[float, int]:
    """The largest constructed-transcript loss of a candidate pair over the recorded runs' schedules.

    Args:
        runs: the engine runs of the user's scenario (their schedules and the other agents' messages).
        scenario: the user's scenario.
        agent: the changed agent.
        gradient, gradient_prime: the candidate's ``g`` and ``g'``.
        max_runs: use only the first runs.

    Returns:
        ``(loss, run)``.
    """
    k = runs.runs if max_runs is None else min(max_runs, runs.runs)
    p, q = candidate_scenarios(scenario, agent, gradient, gradient_prime)
    sub = EngineRuns(runs.engine, runs.seeds[:k], {c: m[:k] for c, m in runs.messages.items()}, runs.schedules[:k],
                     runs.unicast)
    built = construct_transcript(sub, p, agent)
    # the constructed transcript replayed as any transcript: its exact loss (pinning read rounds in order)
    out = replay_runs(sub, p, q, algorithm=p.algorithm, messages=built)
    assert out.losses is not None
    r = int(np.argmax(out.losses))
    return float(out.losses[r]), r


def construct_transcript(runs: EngineRuns, scenario: Scenario, agent: int) -> dict[str, np.ndarray]:
    """The runs' transcripts with ``agent``'s messages (and every noise-free release) set to their values under ``scenario``.

    One pass of :func:`accounting.scheduled_replay.scheduled_replay` with
    ``pin_agent`` processes rounds in order; under asynchronous timing a
    combination may read a message of a later round before that message was
    constructed, so a noise-free release computed from it matches neither
    problem. The construction is therefore repeated on its own output until
    nothing changes: every pass fixes the next events in the run's causal
    order (which is acyclic), so at most ``horizon + 1`` passes are needed.

    Args:
        runs: the engine runs (schedules and the other agents' messages).
        scenario: the problem whose noise-free values are pinned (the candidate's ``P``).
        agent: the pinned agent.

    Returns:
        Per channel, the constructed messages.

    Raises:
        AccountingError: the construction does not settle within ``horizon + 1`` passes.
    """
    from accounting.errors import AccountingError

    built: dict[str, np.ndarray] | None = None
    for _ in range(scenario.horizon + 1):
        nxt = replay_runs(runs, scenario, algorithm=scenario.algorithm, pin_agent=agent, messages=built).messages
        assert nxt is not None
        if built is not None and all(np.array_equal(nxt[c], built[c], equal_nan=True) for c in nxt):
            return nxt
        built = {c: np.array(m) for c, m in nxt.items()}
    raise AccountingError(f"the constructed transcript of agent {agent} did not settle within "
                          f"{scenario.horizon + 1} passes")


def search_pairs(runs: EngineRuns, scenario: Scenario, agent: int, *, examples: int = 30, max_runs: int = 8,
                 start: Sequence[CandidatePair] = ()) -> CandidatePair:
    """Hypothesis search (``hypothesis.target``) for the pair of the class with the largest loss.

    ``kind="each"``: two gradients of L2 norm ``C2``; ``kind="difference"``: ``g = d / 2``, ``g' = -d / 2``
    with ``||d|| = C2`` in the class's norm.

    Derandomized and without a database, so the same inputs give the same
    pair. Directions are drawn in ``[-1, 1]^n`` and scaled to norm ``C2``;
    the best extremal pairs are tried first (``start``).

    Args:
        runs, scenario, agent: as in :func:`constructed_loss`.
        examples: Hypothesis examples.
        max_runs: runs whose schedules each example is evaluated on.
        start: candidates to seed the search with (``hypothesis.example``).

    Returns:
        The best :class:`CandidatePair` found (label ``"hypothesis search"``).
    """
    from hypothesis import HealthCheck, Phase, example, given, settings, target
    from hypothesis import strategies as st

    cls = adjacency_class(scenario)
    assert isinstance(cls, GradientClass)
    c2 = cls.bound
    n = scenario.problem.dim
    vec = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=n, max_size=n)
    best: list[Any] = [-math.inf, None, None, None]

    def scaled(u: Sequence[float], radius: float, order: float = 2) -> np.ndarray | None:
        v = np.asarray(u, dtype=float)
        norm = float(np.linalg.norm(v, ord=order))
        return None if norm < 1e-6 else radius * v / norm

    def pair_of(u: list[float], v: list[float]) -> tuple[np.ndarray | None, np.ndarray | None]:
        if cls.kind == "difference":  # g - g' of norm bound (its own norm), centred (the loss sees the difference)
            d = scaled(u, c2, 1 if cls.norm == "l1" else 2)
            return (None, None) if d is None else (0.5 * d, -0.5 * d)
        return scaled(u, c2), scaled(v, c2)

    def objective(u: list[float], v: list[float]) -> None:
        g, gp = pair_of(u, v)
        if g is None or gp is None:
            return
        loss, r = constructed_loss(runs, scenario, agent, g, gp, max_runs=max_runs)
        target(float(np.clip(loss, -1e300, 1e300)), label="privacy loss")  # an unnoised release: +inf
        if loss > best[0]:
            best[:] = [loss, g, gp, r]

    test: Any = objective
    for cand in start[:5]:
        test = example(list(cand.gradient), list(cand.gradient_prime))(test)
    run = settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                   phases=[Phase.explicit, Phase.generate, Phase.target],
                   suppress_health_check=list(HealthCheck))(given(vec, vec)(test))
    run()
    if best[1] is None:
        return CandidatePair("hypothesis search", agent, (0.0,) * n, (0.0,) * n, -math.inf, None)
    return CandidatePair("hypothesis search", agent, tuple(float(x) for x in best[1]),
                         tuple(float(x) for x in best[2]), float(best[0]), int(best[3]))


def pair_script(script_path: str | Path | None, pair: CandidatePair, seed: int) -> str:
    """A runnable Python script that rebuilds the worst pair (and checks it) from the user's script.

    Args:
        script_path: the user's scenario script (``None``: the script says where to plug the scenario in).
        pair: the worst pair.
        seed: the check's seed.

    Returns:
        The script's text.

    Example:
        >>> text = pair_script("s.py", CandidatePair("x", 0, (1.0, 0.0), (-1.0, 0.0), 2.0, 3), 0)
        >>> "candidate_scenarios" in text and "[1.0, 0.0]" in text
        True
    """
    source = (f"from asyncdp import load_script\n\nbase = load_script({str(Path(script_path).resolve())!r}, "
              "names=('scenario', 'adjacent'))['scenario']\n") if script_path is not None else \
        "base = ...  # the scenario that was checked\n"
    return f'''"""The worst adjacent pair found by the privacy check (asyncdp.privacy.worst_case).

Pair: {pair.label}; agent {pair.agent}'s cost is linear, f(x) = <g, x> under `scenario` and <g', x> under
`adjacent`; the algorithm is bound to the original problem (same noise, same steps). Constructed-transcript
privacy loss {pair.loss:.6g} on the realized schedule of engine run {pair.run} (check seed {seed}).

Run:  asyncdp privacy check THIS_FILE.py
"""

{source}
from asyncdp.privacy.worst_case import candidate_scenarios

scenario, adjacent = candidate_scenarios(base, {pair.agent}, {list(pair.gradient)!r}, {list(pair.gradient_prime)!r})
'''


def search_worst_case(pair: Any, ctx: Any) -> Any:
    """The check's step: the worst adjacent pair in the paper's class, and whether it refutes the claim.

    Tries every extremal pair (:func:`extremal_pairs`), then
    ``options.search_examples`` Hypothesis examples (:func:`search_pairs`),
    on the realized schedules of the engine's runs of the scenario. A user's
    paper record without an adjacency class gets a doubt: its lemma is then untested, and
    the verdict is at best ``inconclusive``. Pure
    claims: a constructed transcript with loss above epsilon is a witness
    (module docstring). Claims with delta > 0: the best pair is run
    ``runs`` times on the engine (side 2 of the seed layout) and its exact
    losses audited at ``alpha_share``.

    Args:
        pair: the :class:`~asyncdp.privacy.context.ScenarioPair`.
        ctx: the :class:`~asyncdp.privacy.context.CheckContext`.

    Returns:
        Evidence ``"worst-case adjacency search"`` (constructed worst case)
        with figures ``worst_case_loss``, ``worst_case_pair``,
        ``worst_case_delta_lower`` and ``worst_pair_script`` (a runnable
        script of the pair); witness ``{"kind": "worst-case", ...}``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = search_worst_case(*small_example(search_examples=5))
        >>> e.witness is None, round(e.figures["worst_case_loss"], 4)  # the composed bound, attained
        (True, 0.9877)
    """
    from accounting.errors import AccountingError

    from .evidence import Evidence

    method, kind = "worst-case adjacency search", "constructed worst case"
    empty = {"worst_case_loss": None, "worst_case_pair": None, "worst_case_delta_lower": None,
             "worst_pair_script": None}
    scenario = pair.scenario
    agent = ctx.changed_agent
    # a user's lemma is trusted only once it has met the worst case of its class
    users = ctx.paper is not None and not ctx.paper.published
    untested = (f"the sensitivity lemma of the user's paper record {ctx.paper.paper.name!r} was not tested against "
                "the worst case of an adjacency class, so the bound composed with it is not trusted") if users else None
    if agent is None:  # round adjacency of online losses: its own construction
        from .worst_round import search_round_worst_case

        return search_round_worst_case(pair, ctx)
    extremes = extremal_pairs(scenario, agent)
    if not extremes:
        return Evidence(method, kind, empty, doubt=untested, reasons=(
            f"worst-case search: no adjacency class declared for {scenario.algorithm.name} (its paper record has "
            "no adjacency, or there is no record): only the user's pair is checked",))
    runs = ctx.engine_runs(0)
    try:
        scored = []
        for label, g, gp in extremes:
            loss, r = constructed_loss(runs, scenario, agent, g, gp, max_runs=_CANDIDATE_RUNS)
            scored.append(CandidatePair(label, agent, tuple(map(float, g)), tuple(map(float, gp)), loss, r))
        scored.sort(key=lambda c: -c.loss)
        best = scored[0]
        if ctx.options.search_examples > 0 and math.isfinite(best.loss):  # nothing beats an infinite loss
            found = search_pairs(runs, scenario, agent, examples=ctx.options.search_examples,
                                 max_runs=min(_CANDIDATE_RUNS, 8), start=scored)
            if found.loss > best.loss:
                best = found
    except AccountingError as exc:
        return Evidence(method, kind, empty, reasons=(f"worst-case search: cannot replay the candidates: {exc}",))
    script = pair_script(ctx.options.script, best, ctx.options.seed)
    figures: dict[str, Any] = {"worst_case_loss": best.loss, "worst_case_pair": best.label,
                               "worst_case_delta_lower": None, "worst_pair_script": script}
    eps = ctx.epsilon_claimed
    pair_desc = (f"{best.label}: agent {agent} with f(x) = <g, x>, g = {_fmt(best.gradient)} vs "
                 f"g' = {_fmt(best.gradient_prime)}")
    base_witness = {"kind": "worst-case", "pair": best.label, "agent": agent, "gradient": list(best.gradient),
                    "gradient_prime": list(best.gradient_prime), "run": best.run,
                    "run_seed": runs.seeds[best.run or 0], "engine": runs.engine, "seed": ctx.options.seed,
                    "loss": best.loss, "script": script}
    if not math.isfinite(eps):
        return Evidence(method, kind, figures)
    if ctx.delta_claimed == 0:
        from .realized import _roundoff_budget

        slack = float(_roundoff_budget(ctx, runs).sum())  # the most round-off can add to a constructed loss
        if best.loss - slack > eps * (1 + 1e-9) + 1e-12:
            return Evidence(method, kind, figures, witness=base_witness, reasons=(
                f"worst case: {pair_desc} has a constructed transcript (engine run {best.run}'s realized schedule) "
                f"with privacy loss {best.loss:.6g} > epsilon {eps:.6g}; every transcript near it has loss > "
                "epsilon, a set of positive probability",))
        return Evidence(method, kind, figures)
    p, q = candidate_scenarios(scenario, agent, best.gradient, best.gradient_prime)
    return delta_evidence(ctx, p, q, figures, base_witness, pair_desc)


def delta_evidence(ctx: Any, p: Scenario, q: Scenario, figures: dict[str, Any], base_witness: dict[str, Any],
                   pair_desc: str) -> Any:
    """Whether the worst pair ``(p, q)`` refutes a claim with ``delta > 0``: exact profiles, importance sampling, runs.

    The pair's engine runs (sides 2, 3, ... of the seed layout, one per look)
    follow an :class:`accounting.sequential.SequentialPlan`: looks at
    ``R/4, R/2, R`` runs (``R = options.runs``, the budget), stopping as soon as
    the evidence decides. In order, the first that refutes is reported:

    1. the exact profile of the pair's realized shifts on the first look's runs
       (:func:`~asyncdp.privacy.profiles.pair_profile`): exact under lockstep
       timing (confidence 1); under deadline or asynchronous timing, where the
       shifts are fixed given the schedule, the average of the exact
       per-schedule profiles over the sampled schedules;
    2. importance sampling (Gaussian noise, broadcast;
       :func:`~asyncdp.privacy.profiles.scheduled_tilted_bound`): one tilted
       transcript on each realized schedule of the adjacent scenario's engine
       runs (the same timing model, drawn independently of the runs the search
       chose the pair on), exact likelihood ratios; valid when the shifts vary
       (a projection active on some runs);
    3. threshold events on the exact replay losses of the pair's engine runs,
       at every look of the plan (:meth:`accounting.sequential.SequentialPlan.decide`).

    The check's per-method share ``alpha_share`` is split evenly over the
    statistical tests fixed in advance (the schedule average unless the
    timing is lockstep without losses, importance sampling where it applies,
    the thresholds), so together they err with probability at most
    ``alpha_share``.

    Args:
        ctx: the check's context.
        p, q: the worst pair's scenarios.
        figures: the evidence's figures so far (updated: ``worst_case_delta_lower``, ``worst_case_runs``).
        base_witness: the witness fields of the pair.
        pair_desc: the pair in words, for the reasons.

    Returns:
        Evidence ``"worst-case adjacency search"``.
    """
    from accounting.coverage import realized_shifts
    from accounting.errors import AccountingError
    from accounting.sequential import SequentialPlan

    from .behavior import _lockstep_lossless, run_engine
    from .evidence import Evidence
    from .profiles import pair_profile, realized_mu, scheduled_tilted_bound

    method, kind = "worst-case adjacency search", "constructed worst case"
    eps, delta = ctx.epsilon_claimed, ctx.delta_claimed
    budget = ctx.options.runs
    shared = _lockstep_lossless(p)
    gaussian = p.mode == "broadcast" and all(
        ch.mechanism != "laplace" for ch in declared_noise(p.algorithm.bind(p.problem), p.horizon).values())
    tests = 1 + (0 if shared else 1) + (1 if gaussian else 0)
    share = ctx.options.alpha_share / tests
    plan = SequentialPlan(epsilon=eps, delta_claimed=delta, confidence=1.0 - share, budget=max(2, budget),
                          first=max(2, min(budget, max(2, budget // 4))))
    figures["worst_case_runs_budget"] = plan.budget

    def simulate(look: int, have: EngineRuns | None) -> EngineRuns:
        n = plan.looks[look] - (0 if have is None else have.runs)
        more = run_engine(p, n, seed=ctx.options.seed, side=2 + look, engine=ctx.options.engine)
        if have is None:
            return more
        return EngineRuns(more.engine, have.seeds + more.seeds,
                          {c: np.concatenate([have.messages[c], more.messages[c]]) for c in have.messages},
                          tuple(have.schedules) + tuple(more.schedules), have.unicast)

    def replayed(runs: EngineRuns) -> Any:
        return replay_runs(runs, p, q, algorithm=p.algorithm)

    worst_runs = simulate(0, None)
    figures["worst_case_runs"] = worst_runs.runs
    try:
        out = replayed(worst_runs)
    except AccountingError as exc:
        return Evidence(method, kind, figures, reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
    assert out.losses is not None and out.per_round is not None
    try:
        shifts: Any = realized_shifts(out, replay_runs(worst_runs, q, algorithm=p.algorithm))
    except AccountingError as exc:
        shifts = exc
    exact = pair_profile(ctx, shifts, p, worst_runs, schedule_confidence=1.0 - share)
    figures["worst_case_profile"] = exact.reason
    common = {**base_witness, "runs": worst_runs.runs, "runs_budget": plan.budget, "profile": exact.reason}
    if exact.certain:
        figures["worst_case_delta_lower"] = 1.0
        witness = {**common, "method": "exact: a noise-free release differs", "confidence": 1.0,
                   "claim_form": "approximate", "epsilon": eps, "delta_lower": 1.0}
        return Evidence(method, kind, figures, witness=witness, reasons=(f"worst case: {pair_desc}: {exact.reason}",))
    if exact.refutation is not None and exact.refutation.refuted:
        r = exact.refutation
        figures["worst_case_delta_lower"] = r.delta_witness
        witness = {**common, "method": r.method, "confidence": r.confidence, "claim_form": r.form,
                   "epsilon": r.epsilon, "delta_lower": r.delta_witness, "delta_allowed": r.delta_allowed,
                   "delta_meaning": r.delta_meaning}
        return Evidence(method, kind, figures, witness=witness, reasons=(
            f"worst case: {pair_desc}: {exact.reason}; {r.reason}",))
    if gaussian:
        bound, why = scheduled_tilted_bound(ctx, p, q, ctx.engine_runs(1), confidence=1.0 - share,
                                            seed=ctx.options.seed + 7, mu=realized_mu(shifts, p), pilot=worst_runs)
        if bound is not None and bound.lower > delta:
            figures["worst_case_delta_lower"] = float(bound.lower)
            n = bound.samples
            witness = {**common, "delta_lower": float(bound.lower), "epsilon": eps, "importance_samples": n,
                       "method": "importance sampling: one transcript of the worst pair per realized schedule of "
                       f"{n} engine runs, drawn under an exponential tilt toward the high-loss tail, exact likelihood "
                       "ratios, empirical Bernstein",
                       "confidence": float(bound.confidence), "claim_form": "(epsilon, delta)"}
            return Evidence(method, kind, figures, witness=witness, reasons=(
                f"worst case: {pair_desc}: importance sampling over {n} tilted transcripts (one per realized "
                f"schedule) certifies delta(epsilon={eps:.6g}) >= {bound.lower:.3g} > claimed delta {delta:.3g} "
                f"(confidence {bound.confidence:.6g}; {exact.reason})",))
        if why is not None:
            figures["worst_case_importance"] = why
    top = np.finfo(float).max
    look = 0
    while True:
        losses = out.per_round[:, ctx.focus] if ctx.focus is not None else out.losses
        step = plan.decide(np.nan_to_num(losses, posinf=top, neginf=-top))
        figures["worst_case_runs"] = worst_runs.runs
        figures["worst_case_delta_lower"] = step.bound.lower
        if step.decision != "continue":
            break
        look += 1
        worst_runs = simulate(look, worst_runs)
        try:
            out = replayed(worst_runs)
        except AccountingError as exc:
            return Evidence(method, kind, figures, reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
        assert out.losses is not None and out.per_round is not None
    if step.decision != "refuted":
        return Evidence(method, kind, figures, reasons=(f"worst case: {pair_desc}: engine runs: {step.reason}",))
    witness = {**common, "runs": worst_runs.runs, "delta_lower": step.bound.lower,
               "method": "engine runs of the worst pair, exact replay losses, thresholds lower bound on "
               "delta(epsilon) (Clopper-Pearson counts of threshold events, union bound over a fixed grid), "
               f"sequential looks at {', '.join(map(str, plan.looks))} runs",
               "confidence": 1.0 - share, "claim_form": "(epsilon, delta)"}
    return Evidence(method, kind, figures, witness=witness, reasons=(
        f"worst case: {pair_desc}: over {worst_runs.runs} engine runs (of a budget of {plan.budget}), "
        f"delta(epsilon={eps:.6g}) >= {step.bound.lower:.3g} > claimed delta {delta:.3g} "
        f"(confidence {1.0 - share:.6g})",))


_CANDIDATE_RUNS = 16
"""Engine runs whose realized schedules each extremal candidate is evaluated on."""


def _fmt(v: Sequence[float]) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in v) + ")"

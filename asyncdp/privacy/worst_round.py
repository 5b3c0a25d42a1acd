"""The worst adjacent pair under round adjacency of online losses: extremal rounds plus a Hypothesis search.

The round-adjacency counterpart of :mod:`asyncdp.privacy.worst_case`. Under
the adjacency of Cheng, Liao and Li (arXiv 2022, Def. 1) two loss sequences
differ in one round ``t0``; the paper record declares the class
(:class:`~asyncdp.papers.RoundClass`: the changed round's losses have
gradients of L2 norm at most ``L``). The user's pair is one point of it; a
claim must hold for every pair. Round ``t0``'s loss is replaced by extremal
members of the class (:class:`~asyncdp.problems.online.LinearRound`):

* opposite linear losses ``f_t0 = <g, x>``, ``f'_t0 = -<g, x>`` along sign
  patterns (``g = L s / sqrt(d)``, which moves every coordinate, so every
  node's block, at once; an L1 lemma) and along every coordinate
  (``g = L e_k``), at the rounds ``t0 = 1..8`` (:data:`EXTREMAL_ROUNDS`; an
  early change reaches the most releases, at the largest steps) and at the
  user's changed round;
* then a Hypothesis search (``hypothesis.target``) over every round
  ``t0 = 1..T-1`` (a change at round ``T`` reaches no release) and two
  gradients of norm ``L``, seeded with the best extremal pairs.

Every other round's loss, the algorithm (bound to the user's problem: the
same noise, clipping and steps) and the initial points are kept.

Such a change reaches every agent (each computes its block of the changed
gradient), so the constructed transcript pins **every** agent: each message
is its noise-free value under ``P`` given the transcript so far
(``pin_agent`` of :func:`accounting.scheduled_replay.scheduled_replay`), on
the realized schedules of the engine's runs of the user's scenario. With
Laplace noise each release then contributes its largest possible loss
``||mu - mu'||_1 / b`` given the past, and the verdict follows as in
:mod:`asyncdp.privacy.worst_case`: a constructed loss above epsilon refutes a
pure claim; for ``delta > 0`` the best pair is run on the engine and its exact
losses audited.

Example:
    >>> from asyncdp.papers.dpsda.rule import DPSDAC
    >>> pairs = extremal_round_pairs(DPSDAC.example_scenario())
    >>> len(pairs), sorted({t0 for _, t0, _, _ in pairs}), pairs[0][:2]
    (736, [1, 2, 3, 4, 5, 6, 7, 8], ('round 1, sign pattern (+1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1)', 1))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accounting.scheduled_replay import scheduled_replay

from ..papers import RoundClass
from ..problems.online import LinearRound
from ..problems.problem import Problem
from ..scenario import Scenario
from .behavior import AlgorithmChannelRule, EngineRuns, declared_noise

__all__ = ["RoundPair", "extremal_round_pairs", "round_scenarios", "round_constructed_loss", "search_round_pairs",
           "round_pair_script", "search_round_worst_case", "MAX_SIGN_PATTERNS", "EXTREMAL_ROUNDS"]

MAX_SIGN_PATTERNS = 64
"""At most this many sign patterns per round (all of them for ``d <= 6``)."""

EXTREMAL_ROUNDS = 8
"""The extremal pairs change rounds ``1..EXTREMAL_ROUNDS`` (and the user's changed round); the Hypothesis search
draws from every round, so a long horizon does not multiply the candidates."""

_CANDIDATE_RUNS = 16
"""Engine runs (with distinct realized schedules) each extremal candidate is evaluated on."""


@dataclass(frozen=True)
class RoundPair:
    """A constructed adjacent pair: round ``round_index``'s loss linear, ``<g, x>`` under ``P``, ``<g', x>`` under ``P'``.

    Attributes:
        label: how it was built (e.g. ``"round 1, sign pattern (+1, -1)"``, ``"hypothesis search"``).
        round_index: the changed round ``t0``.
        gradient, gradient_prime: ``g`` and ``g'``.
        loss: the largest constructed-transcript loss found for it (``nan`` before evaluation).
        run: the engine run whose schedule gave that loss.
    """

    label: str
    round_index: int
    gradient: tuple[float, ...]
    gradient_prime: tuple[float, ...]
    loss: float = math.nan
    run: int | None = None


def _rounds(scenario: Scenario) -> list[int]:
    """The rounds whose change can reach a release: ``1..T-1`` (``[1]`` when ``T = 1``)."""
    return list(range(1, max(scenario.horizon, 2)))


def extremal_round_pairs(scenario: Scenario, cls: RoundClass | None = None, changed_round: int | None = None
                         ) -> list[tuple[str, int, np.ndarray, np.ndarray]]:
    """The extremal pairs of the round class (module docstring), ``[]`` without a class.

    Args:
        scenario: an online scenario (its paper record's class gives ``L``, unless ``cls`` is given).
        cls: the class (default: the paper record's, :func:`asyncdp.privacy.worst_case.adjacency_class`).
        changed_round: the user's changed round, also tried (if it reaches a release).

    Returns:
        ``[(label, t0, g, g')]``, round by round.
    """
    if cls is None:
        from .worst_case import adjacency_class

        found = adjacency_class(scenario)
        cls = found if isinstance(found, RoundClass) else None
    if cls is None:
        return []
    d = scenario.problem.dim
    shapes: list[tuple[str, np.ndarray]] = []
    if cls.norm == "l1":
        patterns: Any = itertools.product((1.0, -1.0), repeat=d)
        for s in itertools.islice(patterns, MAX_SIGN_PATTERNS):
            shapes.append((f"sign pattern ({', '.join(f'{v:+.0f}' for v in s)})", cls.bound * np.array(s) / math.sqrt(d)))
    if not (cls.norm == "l1" and d == 1):  # in one dimension the sign patterns are the coordinates
        for k in range(d):
            for sign in (1.0, -1.0):
                shapes.append((f"coordinate {k} ({'+' if sign > 0 else '-'})", sign * cls.bound * np.eye(d)[k]))
    rounds = _rounds(scenario)
    tried = sorted(set(rounds[:EXTREMAL_ROUNDS]) | ({changed_round} & set(rounds)))
    return [(f"round {t0}, {label}", t0, g, -g) for t0 in tried for label, g in shapes]


def round_scenarios(scenario: Scenario, round_index: int, gradient: Any, gradient_prime: Any
                    ) -> tuple[Scenario, Scenario]:
    """The scenario pair of a candidate: round ``round_index``'s loss linear, the algorithm bound to the user's problem.

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> sc = DPSDAC.example_scenario()
        >>> p, q = round_scenarios(sc, 2, np.ones(14), -np.ones(14))
        >>> q.problem.costs.round_gradient(2, np.zeros(14))[:3].tolist()
        [-1.0, -1.0, -1.0]
    """
    alg = scenario.algorithm.bind(scenario.problem)  # its constants (L_hat, blocks) are filled: rebinding keeps them
    base = scenario.problem

    def with_loss(g: Any) -> Scenario:
        problem = Problem(base.domain, LinearRound(base.costs, round_index, g))
        return scenario.replace(problem=problem, algorithm=alg, x0=scenario.initial_points())

    return with_loss(gradient), with_loss(gradient_prime)


def _distinct_runs(runs: EngineRuns, limit: int) -> list[int]:
    """The first ``limit`` runs with distinct schedules (every agent is pinned, so equal schedules give equal losses)."""
    seen: set[int] = set()
    out = []
    for r, s in enumerate(runs.schedules):
        if id(s) not in seen:
            seen.add(id(s))
            out.append(r)
            if len(out) == limit:
                break
    return out


def round_constructed_loss(runs: EngineRuns, scenario: Scenario, round_index: int, gradient: Any,
                           gradient_prime: Any, max_runs: int = _CANDIDATE_RUNS) -> tuple[float, int]:
    """The largest constructed-transcript loss of a candidate over the recorded runs' schedules.

    Every agent's messages are constructed (module docstring); the transcript
    is then replayed as any transcript, under ``P`` and ``P'``, for its exact loss.

    Args:
        runs: the engine runs of the user's scenario (their schedules).
        scenario: the user's scenario.
        round_index, gradient, gradient_prime: the candidate.
        max_runs: use at most this many runs with distinct schedules.

    Returns:
        ``(loss, run)``.
    """
    rows = _distinct_runs(runs, max_runs)
    p, q = round_scenarios(scenario, round_index, gradient, gradient_prime)
    alg = p.algorithm
    schedules = [runs.schedules[r] for r in rows]
    messages = {c: m[rows] for c, m in runs.messages.items()}
    noise = declared_noise(alg, scenario.horizon)
    rule = AlgorithmChannelRule(alg, p.problem, p.initial_points())
    rule_q = AlgorithmChannelRule(alg, q.problem, q.initial_points())
    agents = list(range(scenario.problem.num_agents))
    built = scheduled_replay(messages, schedules, noise, rule, unicast=runs.unicast, pin_agent=agents).messages
    assert built is not None
    out = scheduled_replay(built, schedules, noise, rule, rule_q, unicast=runs.unicast)
    assert out.losses is not None
    k = int(np.argmax(out.losses))
    return float(out.losses[k]), rows[k]


def search_round_pairs(runs: EngineRuns, scenario: Scenario, cls: RoundClass, *, examples: int = 30,
                       max_runs: int = 8, start: Sequence[RoundPair] = ()) -> RoundPair:
    """Hypothesis search (``hypothesis.target``) over ``t0`` and two gradients of L2 norm ``L``.

    Derandomized and without a database, so the same inputs give the same
    pair. Directions are drawn in ``[-1, 1]^d`` and scaled to norm ``L``; the
    best extremal pairs are tried first (``start``).

    Args:
        runs, scenario: as in :func:`round_constructed_loss`.
        cls: the round class.
        examples: Hypothesis examples.
        max_runs: runs whose schedules each example is evaluated on.
        start: candidates to seed the search with (``hypothesis.example``).

    Returns:
        The best :class:`RoundPair` found (label ``"hypothesis search"``).
    """
    from hypothesis import HealthCheck, Phase, example, given, settings, target
    from hypothesis import strategies as st

    d = scenario.problem.dim
    rounds = _rounds(scenario)
    vec = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=d, max_size=d)
    best: list[Any] = [-math.inf, None, None, None, None]

    def scaled(u: Sequence[float]) -> np.ndarray | None:
        v = np.asarray(u, dtype=float)
        norm = float(np.linalg.norm(v))
        return None if norm < 1e-6 else cls.bound * v / norm

    def objective(t0: int, u: list[float], v: list[float]) -> None:
        g, gp = scaled(u), scaled(v)
        if g is None or gp is None:
            return
        loss, r = round_constructed_loss(runs, scenario, t0, g, gp, max_runs=max_runs)
        target(float(np.clip(loss, -1e300, 1e300)), label="privacy loss")  # an unnoised release: +inf
        if loss > best[0]:
            best[:] = [loss, t0, g, gp, r]

    test: Any = objective
    for cand in start[:5]:
        test = example(cand.round_index, list(cand.gradient), list(cand.gradient_prime))(test)
    run = settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                   phases=[Phase.explicit, Phase.generate, Phase.target],
                   suppress_health_check=list(HealthCheck))(given(st.sampled_from(rounds), vec, vec)(test))
    run()
    if best[2] is None:
        return RoundPair("hypothesis search", rounds[0], (0.0,) * d, (0.0,) * d, -math.inf, None)
    return RoundPair("hypothesis search", int(best[1]), tuple(float(x) for x in best[2]),
                     tuple(float(x) for x in best[3]), float(best[0]), int(best[4]))


def round_pair_script(script_path: str | Path | None, pair: RoundPair, seed: int) -> str:
    """A runnable Python script that rebuilds the worst round pair from the user's script.

    Example:
        >>> text = round_pair_script("s.py", RoundPair("x", 2, (1.0, 0.0), (-1.0, 0.0), 2.0, 3), 0)
        >>> "round_scenarios(base, 2, [1.0, 0.0], [-1.0, 0.0])" in text
        True
    """
    source = (f"from asyncdp import load_script\n\nbase = load_script({str(Path(script_path).resolve())!r}, "
              "names=('scenario', 'adjacent'))['scenario']\n") if script_path is not None else \
        "base = ...  # the scenario that was checked\n"
    return f'''"""The worst adjacent pair found by the privacy check (asyncdp.privacy.worst_round).

Pair: {pair.label}; round {pair.round_index}'s loss is linear, f(x) = <g, x> under `scenario` and <g', x> under
`adjacent` (round adjacency of online losses); every other round's loss and the algorithm (bound to the original
problem: same noise, same steps) are kept. Constructed-transcript privacy loss {pair.loss:.6g} on the realized
schedule of engine run {pair.run} (check seed {seed}).

Run:  asyncdp privacy check THIS_FILE.py
"""

{source}
from asyncdp.privacy.worst_round import round_scenarios

scenario, adjacent = round_scenarios(base, {pair.round_index}, {list(pair.gradient)!r}, {list(pair.gradient_prime)!r})
'''


def search_round_worst_case(pair: Any, ctx: Any) -> Any:
    """The check's worst-case step under round adjacency (see :func:`asyncdp.privacy.worst_case.search_worst_case`).

    Tries every extremal pair (:func:`extremal_round_pairs`), then
    ``options.search_examples`` Hypothesis examples
    (:func:`search_round_pairs`), on the realized schedules of the engine's
    runs of the scenario. Without a :class:`~asyncdp.papers.RoundClass` the
    step reports why and, for a user's paper, a doubt (its lemma is then
    untested).

    Args:
        pair: the :class:`~asyncdp.privacy.context.ScenarioPair`.
        ctx: the :class:`~asyncdp.privacy.context.CheckContext` (``changed_round`` set).

    Returns:
        Evidence ``"worst-case adjacency search"`` (constructed worst case)
        with the figures of :func:`~asyncdp.privacy.worst_case.search_worst_case`;
        witness ``{"kind": "worst-case", "round": t0, ...}``.
    """
    from accounting import auditors
    from accounting.errors import AccountingError

    from .evidence import Evidence
    from .worst_case import adjacency_class

    method, kind = "worst-case adjacency search", "constructed worst case"
    empty = {"worst_case_loss": None, "worst_case_pair": None, "worst_case_delta_lower": None,
             "worst_pair_script": None}
    scenario = pair.scenario
    users = ctx.paper is not None and not ctx.paper.published
    untested = (f"the sensitivity lemma of the user's paper record {ctx.paper.paper.name!r} was not tested against "
                "the worst case of an adjacency class, so the bound composed with it is not trusted") if users else None
    cls = adjacency_class(scenario)
    if not isinstance(cls, RoundClass):
        why = ("its paper record declares a class of one agent's costs, not round adjacency" if cls is not None
               else "its paper record has no adjacency class for this scenario, or there is no record")
        return Evidence(method, kind, empty, doubt=untested, reasons=(
            f"worst-case search: online losses (round adjacency) and no RoundClass for {scenario.algorithm.name} "
            f"({why}): only the user's pair is checked",))
    runs = ctx.engine_runs(0)
    try:
        scored = []
        for label, t0, g, gp in extremal_round_pairs(scenario, cls, ctx.changed_round):
            loss, r = round_constructed_loss(runs, scenario, t0, g, gp)
            scored.append(RoundPair(label, t0, tuple(map(float, g)), tuple(map(float, gp)), loss, r))
        scored.sort(key=lambda c: -c.loss)
        best = scored[0]
        if ctx.options.search_examples > 0 and math.isfinite(best.loss):  # nothing beats an infinite loss
            found = search_round_pairs(runs, scenario, cls, examples=ctx.options.search_examples,
                                       max_runs=min(_CANDIDATE_RUNS, 8), start=scored)
            if found.loss > best.loss:
                best = found
    except AccountingError as exc:
        return Evidence(method, kind, empty, reasons=(f"worst-case search: cannot replay the candidates: {exc}",))
    script = round_pair_script(ctx.options.script, best, ctx.options.seed)
    figures: dict[str, Any] = {"worst_case_loss": best.loss, "worst_case_pair": best.label,
                               "worst_case_delta_lower": None, "worst_pair_script": script}
    eps = ctx.epsilon_claimed
    pair_desc = (f"{best.label}: round {best.round_index}'s loss f(x) = <g, x>, g = {_fmt(best.gradient)} vs "
                 f"g' = {_fmt(best.gradient_prime)}")
    base_witness = {"kind": "worst-case", "pair": best.label, "agent": None, "round": best.round_index,
                    "gradient": list(best.gradient), "gradient_prime": list(best.gradient_prime), "run": best.run,
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
    from .behavior import replay_runs, run_engine

    p, q = round_scenarios(scenario, best.round_index, best.gradient, best.gradient_prime)
    worst_runs = run_engine(p, ctx.options.runs, seed=ctx.options.seed, side=2, engine=ctx.options.engine)
    try:
        out = replay_runs(worst_runs, p, q, algorithm=p.algorithm)
    except AccountingError as exc:
        return Evidence(method, kind, figures, reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
    assert out.losses is not None and out.per_round is not None
    losses = out.per_round[:, ctx.focus] if ctx.focus is not None else out.losses
    top = np.finfo(float).max
    report = auditors.plrv_audit(np.nan_to_num(losses, posinf=top, neginf=-top), eps, ctx.delta_claimed,
                                 confidence=1.0 - ctx.options.alpha_share)
    figures["worst_case_delta_lower"] = report.delta_lower
    if not report.violation:
        return Evidence(method, kind, figures)
    witness = {**base_witness, "delta_lower": report.delta_lower, "runs": worst_runs.runs}
    return Evidence(method, kind, figures, witness=witness, reasons=(
        f"worst case: {pair_desc}: over {worst_runs.runs} engine runs, delta(epsilon={eps:.6g}) >= "
        f"{report.delta_lower:.3g} > claimed delta {ctx.delta_claimed:.3g} (confidence {report.confidence:.6g})",))


def _fmt(v: Sequence[float]) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in v) + ")"

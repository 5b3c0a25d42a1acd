"""The pairwise leakage matrix of a scenario: the loss from every source ``u`` to every node ``v``.

Row ``v`` is what node ``v`` learns (observer ``node:v``: the messages that
arrive at it, its own data, noise and state) about each other agent's datum,
as the exact Renyi divergence of order ``alpha`` of ``v``'s Gaussian view on
the run's realized schedule (:mod:`asyncdp.privacy.linear_model`, verified
affine on the run). Rows are computed and written one observer at a time, so
only one observer's view is held.

* :func:`leakage_rows`: stream the rows (engine run; or, for a lockstep,
  lossless Muffliato scenario, the accountant's streaming path
  :func:`accounting.network.muffliato.pairwise_rows` on the same schedule,
  which takes minutes at ``N = 2048``);
* :func:`shortest_paths`: hop distances on the gossip graph (the union of every round's links);
* :func:`check_pairwise_claim`: a paper's pairwise claim
  (:class:`accounting.papers.muffliato.PairwiseClaim`, a matrix or a function
  of distance) verified per pair, with a witness (the pair and the first
  round after which the exact loss exceeds the claim) where it fails;
* :func:`pairwise_claim_of`: the claim a paper declares (``pairwise_claim(scenario)``
  in its ``privacy`` module), if any.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> rows = list(leakage_rows(Muffliato.example_scenario()))
    >>> len(rows), round(float(rows[5].values[4]), 9), rows[5].kind
    (6, 1.0, 'exact')
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.network import LinearSchedule, Observer, pairwise_losses
from accounting.network.muffliato import witness_margin

from ..engine.links import LinkModel
from ..engine.timing import Lockstep
from ..errors import ScenarioError
from .affine_check import AffineCheck, verify_affine, verify_affine_probed
from .linear_model import linear_schedule
from .observer_views import delivered_messages, run_for_views

__all__ = ["LeakageRow", "leakage_rows", "averaged_rows", "gossip_graph", "shortest_paths", "PairFailure", "ClaimCheck", "check_pairwise_claim",
           "pairwise_claim_of", "witness_round", "run_witness_round", "claimed_bounds", "deterministic_schedule"]


@dataclass(frozen=True)
class LeakageRow:
    """One observer's row: ``values[u]`` is the Renyi divergence from ``u`` to ``v`` (``inf`` at ``u = v``).

    Attributes:
        v: the observer.
        values: ``(N,)``.
        kind: ``"exact"`` or ``"lower estimate"`` (some rank decision was ambiguous: values above a claim
            remain witnesses, values below it certify nothing).
        path: ``"engine schedule"`` or ``"streaming (lockstep)"``.
        exact: per source, whether its value is exact (``None``: as ``kind`` says); a ``"lower estimate"`` row may
            hold exact values, e.g. an infinity from a noise-free release
            (:attr:`~accounting.network.gaussian_views.GaussianViewLoss.noise_free`).
    """

    v: int
    values: np.ndarray
    kind: str
    path: str
    exact: np.ndarray | None = None


def _streaming_model(scenario: Any) -> tuple[float, float | None] | None:
    """The streaming path's ``(sigma, gamma)`` for a lockstep, lossless Muffliato-shaped run, or ``None``.

    The run must have the identity in round 1 and one ``W`` afterwards, and the rule's *declared* linear
    structure (the one :func:`~asyncdp.privacy.affine_check.verify_affine` checks on the run) must be the
    streaming model's: Gaussian noise of scale ``sigma > 0`` in round 1 only, the plain mix in rounds 1 and
    2, then ``gamma`` times the mix plus ``1 - gamma`` times the own lagged message. ``sigma`` and ``gamma``
    are read from those declarations, never from the rule's attributes (a subclass may keep
    ``sigma = 1`` while it declares and adds another noise).

    Returns:
        ``(sigma, gamma)`` (``gamma`` ``None`` for plain gossip), or ``None`` when the streaming model does
        not describe the run.
    """
    from .linear_model import is_declared_affine

    alg = scenario.algorithm
    if getattr(alg, "name", None) != "muffliato" or not isinstance(scenario.timing, Lockstep):
        return None
    links = scenario.links
    if links.overrides or links.default != LinkModel():
        return None
    n = scenario.problem.num_agents
    horizon = scenario.horizon
    if horizon < 3:
        return None
    bound = alg.bind(scenario.problem)
    if not is_declared_affine(bound) or len(bound.channels) != 1 or len(bound.noisy_channels()) != 1:
        return None
    channel = bound.channels[0]
    if channel.mechanism != "gaussian":
        return None
    scales = [float(bound.noise(t, channel.name).scale) for t in range(1, horizon + 1)]
    if not (scales[0] > 0 and math.isfinite(scales[0])) or any(s != 0.0 for s in scales[1:]):
        return None
    if any(float(bound.mixing_factor(t)) != 1.0 or float(bound.self_lag_weight(t)) != 0.0 for t in (1, 2)):
        return None
    gamma = float(bound.mixing_factor(3))
    if any(float(bound.mixing_factor(t)) != gamma or float(bound.self_lag_weight(t)) != 1.0 - gamma
           for t in range(3, horizon + 1)):
        return None
    w1 = scenario.topology.weights(1)
    if abs(w1 - np.eye(n)).max() > 0:
        return None
    w2 = scenario.topology.weights(2)
    if not all(abs(scenario.topology.weights(t) - w2).max() == 0 for t in range(3, horizon + 1)):
        return None
    return scales[0], (None if gamma == 1.0 else gamma)


def leakage_rows(scenario: Any, *, alpha: float = 2.0, observers: Any = None, engine: str = "simpy",
                 fast: bool = True, workers: int = 1) -> Iterator[LeakageRow]:
    """Stream the leakage matrix's rows (observer ``node:v`` for each ``v``) on the scenario's realized schedule.

    Args:
        scenario: a scenario whose rule is affine in the noise (verified on the run).
        alpha: Renyi order, > 1.
        observers: the nodes ``v`` (default: every agent).
        engine: the engine of the run.
        fast: use the accountant's streaming path where it gives the same schedule (lockstep, lossless
            Muffliato; the first exchange is counted, as the engine's node observer sees it); the rule is
            still verified affine on one engine run (the path trusts nothing the rule says about itself).
        workers: processes for the observers of the streaming path (same values, in the same order).

    Yields:
        One :class:`LeakageRow` per observer.

    Raises:
        ScenarioError: the rule is not affine on the run (the reason), a bad observer or alpha.
    """
    if not (alpha > 1 and math.isfinite(alpha)):
        raise ScenarioError(f"alpha must be a finite number > 1, got {alpha!r}")
    n = scenario.problem.num_agents
    obs = list(range(n)) if observers is None else [int(v) for v in observers]
    bad = [v for v in obs if not 0 <= v < n]
    if bad:
        raise ScenarioError(f"observer node {bad[0]} does not exist (agents are 0..{n - 1})")
    sens = float(scenario.problem.domain.diameter)
    if not (sens > 0 and math.isfinite(sens)):
        raise ScenarioError(f"the private values' domain has diameter {sens!r}: the leakage needs a finite one")
    model = _streaming_model(scenario) if fast else None
    if model is not None:
        from accounting.network.muffliato import pairwise_rows

        # the streaming path models the rule; one run checks that the rule behaves as modelled
        check = verify_affine(run_for_views(scenario, engine), scenario)
        if check.ok:
            check = verify_affine_probed(scenario, engine)
        if not check.ok:
            raise ScenarioError(f"the pairwise leakage needs a rule affine in the noise: {check.reason}")

        sigma, gamma = model  # the declarations verify_affine checked on the run, not the rule's attributes
        import scipy.sparse as sp

        w = sp.csr_array(scenario.topology.weights(2))
        for row in pairwise_rows(w, obs, scenario.horizon - 2, gamma, alpha=alpha, sigma=sigma / sens,
                                 include_first_exchange=True, workers=workers):
            values = np.asarray(row.exact, dtype=float).copy()
            values[row.v] = math.inf
            yield LeakageRow(row.v, values, "exact" if row.dropped == 0 else "lower estimate", "streaming (lockstep)")
        return
    result = run_for_views(scenario, engine)
    check = verify_affine(result, scenario)
    if check.ok:
        check = verify_affine_probed(scenario, engine)  # a value of the source anywhere in the domain
    if not check.ok:
        raise ScenarioError(f"the pairwise leakage needs a rule affine in the noise: {check.reason}")
    sched = linear_schedule(result, scenario)
    for v in obs:
        seen = delivered_messages(result, Observer.node(v), sched)  # late or superseded copies too
        losses = pairwise_losses(sched, Observer.node(v), None, sensitivity=sens, delivered=seen)
        values = np.array([losses[u].renyi(alpha) for u in range(n)])
        exact = np.array([losses[u].exact for u in range(n)])
        yield LeakageRow(v, values, "exact" if exact.all() else "lower estimate", "engine schedule", exact)


def averaged_rows(scenario: Any, runs: int, *, alpha: float = 2.0, observers: Any = None, seed: int | None = None,
                  engine: str = "simpy", confidence_gap: float = 0.05) -> Iterator[tuple[LeakageRow, np.ndarray]]:
    """Rows averaged over ``runs`` realized schedules (asynchronous timing, lossy links): for each observer
    ``v`` the schedule-averaged Renyi divergence ``(1/(alpha-1)) log E_S exp((alpha-1) D_alpha(. | S))``
    from every source, estimated over the runs, with its one-sided upper confidence bound
    (:func:`accounting.network.combine_renyi`; ``d_max`` :func:`~.observer_bounds.affine_renyi_bound`, valid on every
    schedule for the structure verified on the runs).

    Args:
        scenario: the scenario; run ``r`` uses seed ``seed + r`` (default ``scenario.seed``).
        runs: number of runs (>= 2).
        alpha, observers, engine, confidence_gap: as :func:`leakage_rows` and :func:`accounting.network.combine_renyi`.

    Yields:
        ``(row, upper)``: the :class:`LeakageRow` of estimates (kind ``"estimate over schedules"``, or
        ``"lower estimate"`` when some per-schedule value is), and the ``(N,)`` upper bounds.

    Raises:
        ScenarioError: the rule is not affine on some run, ``runs < 2``.
    """

    from accounting.network import combine_renyi

    from .observer_bounds import affine_renyi_bound, rounded_to_bound
    from .observers import _losses

    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ScenarioError(f"runs must be an integer >= 2 to average over schedules, got {runs!r}")
    n = scenario.problem.num_agents
    obs = list(range(n)) if observers is None else [int(v) for v in observers]
    first = scenario.seed if seed is None else seed
    sens = float(scenario.problem.domain.diameter)
    bound = affine_renyi_bound(scenario, alpha)  # the verified structure's bound, not the paper's lemma
    results, scheds, not_affine = affine_runs(scenario, runs, first, engine)
    if not_affine is not None:
        raise ScenarioError(f"{not_affine[0]}: the pairwise leakage needs a rule affine in the noise: "
                            f"{not_affine[1]}")
    for v in obs:
        per_run = [_losses(s, Observer.node(v), list(range(n)), sens, res) for s, res in zip(scheds, results)]
        est, upper = np.full(n, math.inf), np.full(n, math.inf)
        exact = True
        for u in range(n):
            if u == v:
                continue
            ds = [pr[u].renyi(alpha) for pr in per_run]
            exact &= all(pr[u].exact for pr in per_run)
            if all(math.isfinite(d) for d in ds):
                comb = combine_renyi(rounded_to_bound(ds, bound), alpha, bound, confidence_gap)
                est[u], upper[u] = comb.estimate, comb.upper
        yield LeakageRow(v, est, "estimate over schedules" if exact else "lower estimate",
                         f"engine schedules ({runs} runs)"), upper


def affine_runs(scenario: Any, runs: int, first_seed: int, engine: str
                ) -> tuple[list[Any], list[LinearSchedule], tuple[str, str] | None]:
    """Run ``scenario`` ``runs`` times (run ``r`` with seed ``first_seed + r``), each verified affine in the noise,
    and the model verified with the private values at the domain's extremes
    (:func:`~.affine_check.verify_affine_probed`).

    Args:
        scenario: the scenario.
        runs: number of runs.
        first_seed: the seed of run 0.
        engine: the engine that runs them.

    Returns:
        ``(results, schedules, not_affine)``: the runs, their linear schedules, and ``(which, reason)`` for the
        first run on which the rule is not affine (``which``: ``"run r"``, or ``"a probe run"`` for the extremes;
        ``None`` if every run is; the lists then stop before that run).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> affine_runs(Muffliato.example_scenario(), 2, 0, "simpy")[2] is None
        True
    """
    from dataclasses import replace

    results: list[Any] = []
    scheds: list[LinearSchedule] = []
    for r in range(runs):
        res = run_for_views(replace(scenario, seed=first_seed + r), engine)
        check = verify_affine(res, scenario)
        if not check.ok:
            return results, scheds, (f"run {r}", check.reason)
        results.append(res)
        scheds.append(linear_schedule(res, scenario))
    probed = verify_affine_probed(replace(scenario, seed=first_seed), engine)
    if not probed.ok:
        return results, scheds, ("a probe run", probed.reason)
    return results, scheds, None


def gossip_graph(scenario: Any) -> Any:
    """The undirected union of the links of every round of the run: rounds ``1..horizon`` (one period of a
    periodic topology suffices). Information can only flow along it, so a node it does not connect to ``u``
    learns nothing about ``u``.

    Returns:
        A ``scipy.sparse.csr_array`` 0/1 adjacency (symmetric).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> int(gossip_graph(Muffliato.example_scenario()).sum())
        10
    """
    import scipy.sparse as sp

    n = scenario.problem.num_agents
    seq = scenario.topology
    rounds = scenario.horizon if seq.period is None else min(scenario.horizon, seq.period)
    adj = sp.csr_array((n, n))
    for t in range(1, rounds + 1):
        adj = adj + abs(sp.csr_array(seq.weights(t)))
    adj = sp.csr_array(((adj + adj.T) > 0).astype(float))
    adj.setdiag(0.0)
    adj.eliminate_zeros()
    return adj


def shortest_paths(scenario: Any, source: int, graph: Any = None) -> np.ndarray:
    """Hop distances from ``source`` on the union of the gossip graphs of the scenario's rounds (undirected,
    :func:`gossip_graph`, which ``graph`` may give precomputed); ``-1`` where no path exists.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> shortest_paths(Muffliato.example_scenario(), 0).tolist()
        [0, 1, 2, 3, 4, 5]
    """
    from scipy.sparse.csgraph import shortest_path

    adj = gossip_graph(scenario) if graph is None else graph
    d = shortest_path(adj, unweighted=True, indices=[source], directed=False)[0]
    return np.where(np.isfinite(d), d, -1).astype(np.int64)


def _truncated(sched: LinearSchedule, t: int) -> LinearSchedule:
    keep = sched.round <= t
    return LinearSchedule(sched.num_agents, sched.noise_scale[:t], sched.round[keep], sched.receiver[keep],
                          sched.sender[keep], sched.weight[keep], sched.sender_round[keep], sched.state_weight[:t])


def witness_round(sched: LinearSchedule, u: int, v: int, bound: float, alpha: float, sensitivity: float,
                  delivered: list[tuple[int, int]] | None = None, margin: float | None = None) -> int | None:
    """The first round ``t`` such that ``v``'s view up to round ``t`` already leaks more than ``bound`` about ``u``.

    The loss of a longer view is never smaller (a longer view is a superset), so a binary search finds it.
    ``delivered``: the messages delivered to ``v`` without being combined (:func:`~.observer_views.delivered_messages`),
    counted from their own round. ``margin``: how far the loss must exceed ``bound``
    (:func:`~accounting.network.muffliato.witness_margin`; default that of the local budget of the schedule's
    largest round-1 noise scale).

    Returns:
        The round, or ``None`` if the whole run does not exceed ``bound``.
    """
    if margin is None:
        s1 = float(np.max(sched.noise_scale[0]))
        margin = witness_margin(alpha * sensitivity**2 / (2.0 * s1**2) if s1 > 0 else math.inf)

    def exceeds(t: int) -> bool:
        seen = [m for m in delivered or () if m[0] <= t]
        loss = pairwise_losses(_truncated(sched, t), Observer.node(v), [u], sensitivity=sensitivity,
                               delivered=seen)[u]
        return bool(loss.renyi(alpha) > bound + margin)

    return _first_round(exceeds, sched.horizon)


def _first_round(exceeds: Any, horizon: int) -> int | None:
    """The least round ``r`` in ``1..horizon`` with ``exceeds(r)``, for a predicate monotone in ``r`` (binary
    search), or ``None`` when ``exceeds(horizon)`` is false.

    Example:
        >>> _first_round(lambda r: r >= 7, 10), _first_round(lambda r: False, 10)
        (7, None)
    """
    if not exceeds(horizon):
        return None
    lo, hi = 1, horizon
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if exceeds(mid) else (mid + 1, hi)
    return lo


def run_witness_round(result: Any, sched: LinearSchedule, u: int, v: int, bound: float, alpha: float,
                      sensitivity: float, margin: float) -> int | None:
    """The first round ``r`` of one run such that ``v``'s view restricted to the messages of rounds ``<= r`` leaks
    more than ``bound`` about ``u`` (every message delivered to ``v`` counted, combined or not).

    On a lockstep run this is :func:`witness_round`. An asynchronous run's schedule is re-indexed in global steps
    (:func:`~.linear_model.linear_schedule`: one combination per step, in simulated-time order), where agents run at
    their own pace: a message of a later round may be released before one of an earlier round, so neither a step
    number nor the round of the message released at the step where the loss exceeds is "the view up to round
    ``r``". The view's rows are selected by their messages' rounds instead (a marginal of the whole view:
    monotone in ``r``, so a binary search finds it).

    Args:
        result: the run (its transcript gives the messages delivered to ``v``).
        sched: the run's :func:`~.linear_model.linear_schedule`.
        u, v: the source and the observing node.
        bound, alpha, sensitivity, margin: as in :func:`witness_round` (``margin`` required).

    Returns:
        The round (``1..horizon``), or ``None`` if the whole run does not exceed ``bound``.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> from asyncdp.engine.timing import Async
        >>> from .linear_model import linear_schedule
        >>> sc = Muffliato.example_scenario().replace(timing=Async(), horizon=10)
        >>> res = sc.run()
        >>> sched = linear_schedule(res, sc)
        >>> sched.horizon, run_witness_round(res, sched, 5, 1, 0.27, 2.0, 1.0, 1e-6)
        (60, 10)
    """
    from accounting.network import gaussian_view_losses, observed_view

    from .linear_model import _global_steps

    seen = delivered_messages(result, Observer.node(v), sched)
    rs = result.schedule
    if sched.horizon == rs.horizon:
        return witness_round(sched, u, v, bound, alpha, sensitivity, seen, margin)
    view = observed_view(sched, Observer.node(v), seen)
    _, release = _global_steps(rs.num_agents, rs.horizon, result.times)
    round_of = {(int(release[r, j]), j): r + 1 for r in range(rs.horizon) for j in range(rs.num_agents)}
    rounds = np.array([round_of[m] for m in view.messages], dtype=np.int64)

    def exceeds(r: int) -> bool:
        sel = rounds <= r
        if not sel.any():
            return False
        loss = gaussian_view_losses(view.noise_map[sel], view.data_map[sel][:, [u]] * float(sensitivity))[0]
        return bool(loss.renyi(alpha) > bound + margin)

    return _first_round(exceeds, rs.horizon)


@dataclass(frozen=True)
class PairFailure:
    """A pair where the exact loss exceeds the claim: source, observer, distance, both values, first round."""

    u: int
    v: int
    distance: int
    claimed: float
    exact: float
    round: int | None


@dataclass(frozen=True)
class ClaimCheck:
    """A pairwise claim verified on every pair (see :func:`check_pairwise_claim`).

    Attributes:
        verdict: ``"pass"`` (every pair within the claim, every value exact), ``"violation"`` (some exact or
            lower-estimate value above the claim: a witness), or ``"inconclusive"`` (no witness, but some
            value is only a lower estimate).
        pairs: number of pairs checked.
        failures: the witnesses (the largest excesses first, at most ``max_witnesses``).
        failed: total number of pairs above the claim.
        statement: the claim's statement.
        reason: why the verdict is inconclusive (``""`` otherwise).
        alpha: the Renyi order of the claim's bounds and of the values.
    """

    verdict: str
    pairs: int
    failed: int
    failures: tuple[PairFailure, ...] = field(default_factory=tuple)
    statement: str = ""
    reason: str = ""
    alpha: float | None = None

    def to_table(self) -> str:
        """The verdict and the witnesses."""
        order = "" if self.alpha is None else f"Renyi divergence of order {self.alpha:g}; "
        lines = [f"pairwise claim ({order}{self.statement}): {self.verdict}: {self.failed} of {self.pairs} pairs above "
                 "it",
                 "  exact values: each node's view as the run realizes it (every message delivered to it, the first "
                 "exchange included; its own data, noise and state known)"]
        for f in self.failures:
            lines.append(f"  witness u={f.u} -> v={f.v} (distance {f.distance}): exact {f.exact:.6g} > claimed "
                         f"{f.claimed:.6g}" + (f", from round {f.round}" if f.round is not None else ""))
        if self.reason:
            lines.append(f"  {self.reason}")
        return "\n".join(lines)


def claimed_bounds(claim: Any, v: int, distances: np.ndarray, num_agents: int) -> np.ndarray:
    """The claim's bounds ``u -> v`` for every ``u``, checked: ``(num_agents,)`` numbers, none NaN (a NaN compares
    false with every loss, so it would pass any pair).

    Raises:
        ScenarioError: another shape, or a NaN (naming the observer and the source).

    Example:
        >>> from accounting.papers.muffliato import PairwiseClaim
        >>> claimed_bounds(PairwiseClaim(2.0, "me", "flat", by_distance=lambda d: 0.5), 0, np.array([0, 1]), 2).tolist()
        [inf, 0.5]
    """
    bounds = np.asarray(claim.bounds_for(v, distances), dtype=float)
    if bounds.shape != (num_agents,):
        raise ScenarioError(f"the pairwise claim's bounds for observer {v} have shape {bounds.shape}, expected "
                            f"({num_agents},): one per source agent")
    bad = np.flatnonzero(np.isnan(bounds))
    if bad.size:
        raise ScenarioError(f"the pairwise claim's bound from source {int(bad[0])} to observer {v} is NaN: not a bound")
    return bounds


def check_pairwise_claim(scenario: Any, claim: Any, rows: Any, *, max_witnesses: int = 5,
                         find_rounds: bool = True) -> ClaimCheck:
    """Verify a pairwise claim on every pair of the given leakage rows.

    Args:
        scenario: the scenario (distances; the realized schedule for witness rounds).
        claim: a :class:`accounting.papers.muffliato.PairwiseClaim` (``bounds_for(v, distances)``: column ``v``).
        rows: :class:`LeakageRow` s (e.g. from :func:`leakage_rows`, at the claim's order).
        max_witnesses: how many failing pairs to keep (largest excess first).
        find_rounds: locate the first round of each kept witness (one engine run, then binary search).

    Returns:
        The :class:`ClaimCheck`. A value above the claim is a witness even when it is a lower estimate,
        unless it exceeds the bound every view obeys (:func:`~.observer_bounds.affine_renyi_bound`: a numerical
        artifact, e.g. an infinity from a shift outside the numerical range; the verdict is then inconclusive) or,
        that bound infinite (no round-1 noise), it is an infinite lower estimate (an infinity from a noise-free
        release is exact per pair, :attr:`LeakageRow.exact`: a witness);
        a pass needs every value exact. On a random schedule (asynchronous or deadline timing, lossy links:
        :func:`deterministic_schedule` is false) the rows are one run's, and the claim is about the
        schedule-averaged divergence (the observer sees the schedule): one schedule's values neither pass nor
        refute it, so the verdict is ``inconclusive`` with the reason (the pairs above it are still listed).
        ``asyncdp privacy check --observer node:v`` bounds the averaged divergence over sampled runs.
    """
    from .observer_bounds import above_affine_bound, affine_renyi_bound

    pairs = failed = 0
    all_exact = True
    found: list[PairFailure] = []
    beyond: tuple[int, int, float, str] | None = None  # a value above what any view can leak: not a witness
    graph = gossip_graph(scenario)
    structural = affine_renyi_bound(scenario, claim.alpha)
    margin = witness_margin(structural)  # in the values' unit, the local budget
    for row in rows:
        dist = shortest_paths(scenario, row.v, graph)
        bounds = claimed_bounds(claim, row.v, dist, len(row.values))
        all_exact &= row.kind == "exact"
        for u in range(len(row.values)):
            if u == row.v:
                continue
            pairs += 1
            sure = row.kind == "exact" or (row.exact is not None and bool(row.exact[u]))
            if above_affine_bound(row.values[u], structural) or (math.isinf(row.values[u]) and not sure):
                # every view of a rule verified affine leaks at most alpha Delta^2 / (2 s_1^2): above it the value is
                # no lower bound of the truth (e.g. a shift outside the numerical range of an ambiguous view); nor is
                # an infinite lower estimate when that bound is infinite too (no round-1 noise; an infinity from a
                # noise-free release is exact, a witness)
                beyond = beyond or (u, row.v, float(row.values[u]), row.kind)
                continue
            if row.values[u] > bounds[u] + margin:
                failed += 1
                found.append(PairFailure(u, row.v, int(dist[u]), float(bounds[u]), float(row.values[u]), None))
    found.sort(key=lambda f: -(f.exact - f.claimed))
    kept = found[:max_witnesses]
    if kept and find_rounds:
        kept = [PairFailure(f.u, f.v, f.distance, f.claimed, f.exact, r)
                for f, r in zip(kept, _witness_rounds(scenario, kept, claim.alpha, margin))]
    verdict = "violation" if failed else ("pass" if all_exact and beyond is None else "inconclusive")
    reason = ""
    if beyond is not None and not failed:
        u, v, value, kind = beyond
        why = ("the view has directions at rounding level" if kind == "lower estimate" else
               "a value the model computed against the structure it verified")
        reason = (f"pair u={u} -> v={v}: the computed loss ({value:.6g}) exceeds the bound alpha Delta^2 / (2 s_1^2) = "
                  f"{structural:.6g} that every view obeys under the verified structure: a numerical artifact, no "
                  f"witness ({why})") if math.isfinite(structural) else (
                  f"pair u={u} -> v={v}: the computed loss is infinite and only a lower estimate (the view has "
                  "directions at rounding level: the shift lies outside their numerical range) and, without round-1 "
                  "noise, no bound holds on every view: it may be a numerical artifact or a true infinite loss (a "
                  "noise-free release too faint to certify), which this view's figures do not tell apart: no witness")
    if not deterministic_schedule(scenario):
        verdict = "inconclusive"
        reason = ("these values are one run's realized schedule, and the schedule is random (timing or lossy links): "
                  "the claim bounds the divergence averaged over schedules, which one schedule neither shows below "
                  "nor above it (use asyncdp privacy check --observer node:v: confidence bounds over sampled runs)")
    return ClaimCheck(verdict, pairs, failed, tuple(kept), getattr(claim, "statement", ""), reason, float(claim.alpha))


def deterministic_schedule(scenario: Any) -> bool:
    """Whether every run has the same schedule: lockstep timing and lossless links.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> deterministic_schedule(Muffliato.example_scenario())
        True
    """
    links = scenario.links
    return isinstance(scenario.timing, Lockstep) and not links.overrides and links.default == LinkModel()


def _witness_rounds(scenario: Any, failures: list[PairFailure], alpha: float, margin: float) -> list[int | None]:
    """The first round of each failing pair: on the streaming path for a lockstep Muffliato scenario (rounds
    ``steps + 2``: the noising round and the first exchange come first), else on one engine run's schedule."""
    sens = float(scenario.problem.domain.diameter)
    model = _streaming_model(scenario)
    if model is not None:
        import scipy.sparse as sp

        from accounting.network.muffliato import exact_pairwise_loss

        sigma, gamma = model
        w = sp.csr_array(scenario.topology.weights(2))

        def exceeds(f: PairFailure, steps: int) -> bool:
            row = exact_pairwise_loss(w, f.v, steps, gamma, alpha=alpha, sigma=sigma / sens,
                                      include_first_exchange=True)
            return bool(row.exact[f.u] > f.claimed + margin)

        out: list[int | None] = []
        for f in failures:
            top = scenario.horizon - 2
            if not exceeds(f, top):
                out.append(None)
                continue
            lo, hi = 1, top
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if exceeds(f, mid) else (mid + 1, hi)
            out.append(lo + 2)
        return out
    result = scenario.run("simpy")
    sched = linear_schedule(result, scenario)
    return [run_witness_round(result, sched, f.u, f.v, f.claimed, alpha, sens, margin) for f in failures]


def pairwise_claim_of(scenario: Any) -> Any:
    """The pairwise claim the scenario's paper declares (``pairwise_claim(scenario)`` in the paper's ``privacy``
    module, next to the paper's rule class, which a user's subclass of it inherits), or ``None``.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> pairwise_claim_of(Muffliato.example_scenario()).alpha
        2.0
    """
    from ..papers import paper_of

    paper = paper_of(scenario.algorithm)
    if paper is None:
        return None
    # the paper's own rule class in the rule's MRO: a user's subclass inherits the paper's claim, as it inherits
    # its claimed_privacy (its own module, the user's script, has no privacy module)
    rule_class = next((c for c in type(scenario.algorithm).__mro__ if c in paper.rules), type(scenario.algorithm))
    rule_module = rule_class.__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(f"{rule_module}.privacy")
    except ImportError:
        return None
    fn = getattr(module, "pairwise_claim", None)
    return None if fn is None else fn(scenario)


def affine_summary(check: AffineCheck) -> str:
    """One line for reports."""
    return ("affine in the noise (verified on the run)" if check.ok else f"not affine: {check.reason}")

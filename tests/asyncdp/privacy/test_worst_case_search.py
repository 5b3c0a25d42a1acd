"""The batched worst-case search: derandomized, at least its starts and draws, batched, and exact.

:func:`~asyncdp.privacy.pair_search.search_pairs` evaluates its candidates a
batch per stacked replay; the stacked linear costs
(:mod:`asyncdp.privacy.stacked`) and the replay's gather
(:mod:`accounting.scheduled_replay`) take shortcuts that must give each
candidate exactly what its own computation gives. The references below are
computed by other code: each candidate's own replay, each family's own
gradient, an explicit loop over the schedule's entries.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp import Async, LinkModel, Links, LogNormalLatency
from asyncdp.privacy.behavior import EngineRuns
from asyncdp.privacy.constructed import CandidateRuns, constructed_replays
from asyncdp.papers import GradientClass
from asyncdp.privacy.context import small_example
from asyncdp.privacy import (candidate_evaluation, candidate_pairs, pair_search, search_evidence, search_objective,
                             worst_case)

LOSSY = Links(LinkModel(latency=LogNormalLatency(median=0.4, sigma=0.8), loss=0.2))


def _case(timing=None):
    pair, ctx = small_example(runs=40)
    sc = pair.scenario if timing is None else pair.scenario.replace(timing=timing, links=LOSSY)
    if timing is not None:
        from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare

        ctx = prepare(ScenarioPair(sc, pair.adjacent.replace(timing=timing, links=LOSSY)), CheckOptions(runs=40))
    return sc, ctx


def _starts(sc, ctx, objective):
    fam = candidate_evaluation._family(sc, 0)
    prepared = CandidateRuns(ctx.engine_runs(0), fam.rows(ctx.engine_runs(0), 16))
    scored = candidate_evaluation._evaluate_all(fam, prepared, sc, fam.extremes(sc, None), 16, objective, None)
    scored.sort(key=lambda c: (-c.objective, -c.loss))
    return prepared, scored


@pytest.mark.parametrize("timing", [None, Async(rate=1.0)], ids=["lockstep", "async"])
def test_the_same_inputs_give_the_same_pair(timing):
    sc, ctx = _case(timing)
    objective = search_objective._objective_of(ctx, sc)
    found = []
    for _ in range(2):  # fresh runs each time: nothing carried over but the inputs
        prepared, scored = _starts(sc, ctx, objective)
        found.append(pair_search.search_pairs(prepared, sc, 0, examples=6, start=scored, objective=objective))
    assert found[0] == found[1]
    assert found[0].objective == found[0].objective  # evaluated (not nan)


def test_the_draws_follow_the_check_seed(monkeypatch):
    sc, ctx = _case()
    objective = search_objective._objective_of(ctx, sc)
    evaluate_all = candidate_evaluation._evaluate_all
    drawn: list = []

    def spy(fam, cand, scenario, candidates, *args, **kwargs):
        drawn[-1].extend(np.concatenate([c[2], c[3]]).tolist() for c in candidates if c[0] == "search: drawn")
        return evaluate_all(fam, cand, scenario, candidates, *args, **kwargs)

    monkeypatch.setattr(pair_search, "_evaluate_all", spy)
    for seed in (0, 0, 1):
        drawn.append([])
        prepared, scored = _starts(sc, ctx, objective)
        pair_search.search_pairs(prepared, sc, 0, examples=5, seed=seed, start=scored, objective=objective)
    assert len(drawn[0]) == 5 and drawn[0] == drawn[1]  # the same seed: the same draws
    assert all(a != b for a, b in zip(drawn[0], drawn[2]))  # another seed: other draws (continuous uniforms)


@pytest.mark.parametrize("timing", [None, Async(rate=1.0)], ids=["lockstep", "async"])
def test_the_search_is_at_least_its_best_start_and_every_draw_each_by_its_own_replay(timing, monkeypatch):
    sc, ctx = _case(timing)
    objective = search_objective._objective_of(ctx, sc)
    prepared, scored = _starts(sc, ctx, objective)
    drawn = []
    evaluate_all = candidate_evaluation._evaluate_all

    def spy(fam, cand, scenario, candidates, *args, **kwargs):
        drawn.extend(c for c in candidates if c[0] == "search: drawn")
        return evaluate_all(fam, cand, scenario, candidates, *args, **kwargs)

    monkeypatch.setattr(pair_search, "_evaluate_all", spy)
    found = pair_search.search_pairs(prepared, sc, 0, examples=7, start=scored, objective=objective)
    assert len(drawn) == 7  # every draw evaluated (none degenerate)
    runs = ctx.engine_runs(0)
    own = []
    for _, _, g, gp in drawn + [(None, None, c.gradient, c.gradient_prime) for c in scored[:pair_search.SEARCH_STARTS]]:
        # its own replay, on the same 8 runs
        losses, _ = candidate_evaluation.constructed_losses(runs, sc, 0, g, gp, max_runs=8)
        own.append((objective(losses), float(np.max(losses))))
    assert (found.objective, found.loss) >= max(own)
    assert found.loss == pytest.approx(max(candidate_evaluation.constructed_losses(
        runs, sc, 0, found.gradient, found.gradient_prime, max_runs=8)[0]), rel=0, abs=0)


def test_the_search_replays_a_batch_per_iteration_and_each_candidate_once(monkeypatch):
    sc, ctx = _case()
    objective = search_objective._objective_of(ctx, sc)
    prepared, scored = _starts(sc, ctx, objective)
    stacks = []
    monkeypatch.setattr(candidate_evaluation, "constructed_replays",
                        lambda runs, cands, pinned: stacks.append(len(cands)) or constructed_replays(runs, cands, pinned))
    pair_search.search_pairs(prepared, sc, 0, examples=10, start=scored, objective=objective)
    assert len(stacks) == pair_search.CLIMB_ITERATIONS  # the starts were read from the extremal evaluation
    moves = 2 * 2 * sc.problem.dim  # each coordinate of each direction, both ways
    assert stacks[0] >= 10 + moves  # the draws and the first climb, together
    assert sum(stacks) >= 10 + pair_search.CLIMB_ITERATIONS * moves - len(scored)  # a move may land on an extremal pair
    keys = list(prepared.known)
    assert len(keys) == len(set(keys))


def test_runs_shared_by_two_agents_or_scenarios_give_each_candidate_its_own_losses():
    sc, ctx = _case()
    runs = ctx.engine_runs(0)
    shared = CandidateRuns(runs, candidate_evaluation._family(sc, 0).rows(runs, 16))
    g = np.array([0.3, -0.4])
    other = sc.replace(problem=sc.problem.adjacent(1, address=[0.9, -0.9]))  # another scenario, the same runs
    for agent, scenario in ((0, sc), (2, sc), (2, other)):
        got, _ = candidate_evaluation.constructed_losses(shared, scenario, agent, g, -g, max_runs=8)
        # its own runs: nothing shared
        own, _ = candidate_evaluation.constructed_losses(runs, scenario, agent, g, -g, max_runs=8)
        np.testing.assert_array_equal(got, own)
    assert not np.array_equal(candidate_evaluation.constructed_losses(runs, sc, 0, g, -g, max_runs=8)[0],
                              candidate_evaluation.constructed_losses(runs, sc, 2, g, -g, max_runs=8)[0])  # they do differ

def test_the_climb_moves_every_coordinate_both_ways_and_stays_in_the_class():
    sc, _ = _case()
    fam = candidate_evaluation._family(sc, 0)
    c = candidate_evaluation.CandidatePair("x", 0, (0.6 * fam.cls.bound, 0.8 * fam.cls.bound), (-fam.cls.bound, 0.0))
    moves = pair_search._moves(fam, c, 0.5, lambda t0: "m")
    assert len(moves) == 4 * sc.problem.dim
    for _, t0, g, gp in moves:
        assert t0 is None
        assert np.linalg.norm(g) == pytest.approx(fam.cls.bound) and np.linalg.norm(gp) == pytest.approx(fam.cls.bound)
    # moving u's first coordinate up: the new g is the normalized (0.6 + 0.5, 0.8)
    want = fam.cls.bound * np.array([1.1, 0.8]) / np.linalg.norm([1.1, 0.8])
    assert any(np.allclose(g, want) and np.allclose(gp, c.gradient_prime) for _, _, g, gp in moves)


def test_round_moves_also_change_the_round_within_the_class():
    from asyncdp.papers.dpsda.rule import DPSDAC

    sc = DPSDAC.example_scenario().replace(horizon=6)
    fam = candidate_evaluation._family(sc, None)
    g = np.ones(sc.problem.dim) * fam.cls.bound / np.sqrt(sc.problem.dim)
    first = pair_search._moves(fam, candidate_evaluation.CandidatePair("x", None, tuple(g), tuple(-g), round_index=1),
                               0.25, lambda t0: t0)
    middle = pair_search._moves(fam, candidate_evaluation.CandidatePair("x", None, tuple(g), tuple(-g), round_index=3),
                                0.25, lambda t0: t0)
    assert sorted({t0 for _, t0, _, _ in first}) == [1, 2]  # round 0 is not in the class
    assert sorted({t0 for _, t0, _, _ in middle}) == [2, 3, 4]
    assert len(middle) == 4 * sc.problem.dim + 2


def test_stacked_linear_rounds_give_each_candidates_own_gradients_bit_for_bit():
    from asyncdp.papers.dpsda.rule import DPSDAC
    from asyncdp.privacy.stacked import StackedCosts
    from asyncdp.problems.online import LinearRound

    sc = DPSDAC.example_scenario().replace(horizon=6)
    base = sc.problem.costs
    rng = np.random.default_rng(3)
    fams = [LinearRound(base, t0, rng.normal(size=sc.problem.dim)) for t0 in (1, 2, 2, 4)]
    size, n = 3, sc.problem.num_agents
    stacked = StackedCosts(fams, size)
    assert stacked._linear is not None  # the shortcut is taken
    x = rng.normal(size=(len(fams) * size, n, sc.problem.dim))
    agents = np.arange(n)
    for t in (1, 2, 3, 4):
        want = np.concatenate([f.gradient(agents, x[k * size:(k + 1) * size], round_index=t)
                               for k, f in enumerate(fams)])
        got = stacked.gradient(agents, x, round_index=t)
        np.testing.assert_array_equal(got, want)
    every = StackedCosts([LinearRound(base, 2, g) for g in rng.normal(size=(2, sc.problem.dim))], size)
    x2 = x[:2 * size]
    np.testing.assert_array_equal(every.gradient(agents, x2, round_index=2), np.concatenate(
        [f.gradient(agents, x2[k * size:(k + 1) * size], round_index=2) for k, f in enumerate(every._costs)]))
    np.testing.assert_array_equal(stacked.gradient(agents, x), np.concatenate(  # the sum over rounds: own calls
        [f.gradient(agents, x[k * size:(k + 1) * size]) for k, f in enumerate(fams)]))


def test_a_stacked_gradient_the_families_reject_raises_what_they_raise():
    from asyncdp.errors import CostValueError
    from asyncdp.privacy.stacked import StackedCosts
    from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic

    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.5], [-1.0, 2.0]])
    fams = [LinearOverride(base, 1, [1.0, -2.0]), LinearOverride(base, 1, [0.5, 3.0])]
    x = np.zeros((4, 3, 2))
    x[3, 2, 0] = np.inf  # agent 2's point in the second candidate's second run
    with pytest.raises(CostValueError) as own:
        fams[1].gradient(np.arange(3), x[2:])
    with pytest.raises(CostValueError) as stacked:
        StackedCosts(fams, 2).gradient(np.arange(3), x)
    assert str(stacked.value) == str(own.value)


@pytest.mark.parametrize("unicast", [False, True], ids=["broadcast", "unicast"])
def test_the_gather_reads_exactly_the_scheduled_entries(unicast):
    from accounting.round_gather import _gather, gather_index

    rng = np.random.default_rng(11)
    runs, horizon, n, d = 4, 6, 3, 2
    shape = (runs, horizon, n, n, d) if unicast else (runs, horizon, n, d)
    y = rng.normal(size=shape)
    src = rng.integers(0, horizon + 1, size=(runs, n, n))
    t = 3
    want = np.zeros((runs, n, n, d))
    for r in range(runs):
        for i in range(n):
            for j in range(n):
                if src[r, i, j] > 0 and i != j:  # the self term is added apart
                    want[r, i, j] = y[r, src[r, i, j] - 1, j, i] if unicast else y[r, src[r, i, j] - 1, j]
    index = gather_index(src)
    np.testing.assert_array_equal(_gather(y, src, t, unicast, index), want)
    np.testing.assert_array_equal(_gather(y, src, t, unicast, index), want)  # the cached row numbers again
    strided = np.asfortranarray(y)  # not C-ordered: the plain fancy index
    np.testing.assert_array_equal(_gather(strided, src, t, unicast, index), want)
    r, i, j = next(zip(*np.nonzero((src > 0) & ~np.eye(n, dtype=bool)[None])))
    missing = y.copy()
    if unicast:
        missing[r, src[r, i, j] - 1, j, i] = np.nan
    else:
        missing[r, src[r, i, j] - 1, j] = np.nan
    from accounting.errors import AccountingError

    with pytest.raises(AccountingError, match=f"round {t}: receiver {i} combined sender {j}'s message"):
        _gather(missing, src, t, unicast, index)


def test_a_slices_reads_ahead_are_its_runs_own():
    from accounting.schedule_reads import later_reads, reads_ahead
    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.constructed import DenseSchedules

    sc, _ = _case()
    sc = sc.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 9, seed=5)
    own = [runs.schedules[r] for r in range(9)]
    dense = DenseSchedules(tuple(own), sc.horizon)
    n = sc.problem.num_agents
    written = np.zeros((sc.horizon, n), dtype=bool)
    written[:, 0] = True
    checked = 0
    for part, rows in ((dense[2:7], range(2, 7)), (dense[1::3], range(1, 9, 3)), (dense, range(9))):
        want = later_reads([own[r] for r in rows], sc.horizon)  # computed on those runs alone
        got = part.ahead_entries()
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
        for readers in (None, np.arange(n) == 1):
            expect = reads_ahead([own[r] for r in rows], sc.horizon, written, readers)
            assert part.reads_ahead(written, readers) == expect
            checked += expect
    assert checked  # some slice does read agent 0's later messages: something to tell apart


@pytest.mark.parametrize("unicast", [False, True], ids=["broadcast", "unicast"])
def test_a_tiled_gather_index_reads_what_the_index_of_the_tiled_rounds_reads(unicast):
    from accounting.round_gather import _gather, gather_index, tiled_gather_index

    rng = np.random.default_rng(12)
    runs, horizon, n, d = 3, 5, 3, 2
    src = rng.integers(0, horizon + 1, size=(runs, n, n))
    one = gather_index(src)
    for copies in (5, 2, 7):  # more copies, then fewer (the first rows of the kept ones), then more again
        shape = (copies * runs, horizon, n, n, d) if unicast else (copies * runs, horizon, n, d)
        y = rng.normal(size=shape)
        tiled = np.concatenate([src] * copies)
        want = _gather(y, tiled, 2, unicast, gather_index(tiled))
        np.testing.assert_array_equal(_gather(y, tiled, 2, unicast, tiled_gather_index(one, copies)), want)
        assert (want != 0).any()
        np.testing.assert_array_equal(tiled_gather_index(one, copies).idx, gather_index(tiled).idx)  # plain path


def test_candidates_given_by_linear_costs_are_replayed_without_building_their_families(monkeypatch):
    from asyncdp.papers.dpsda.rule import DPSDAC
    from asyncdp.privacy.stacked import LinearCosts
    from asyncdp.problems.online import LinearRound

    sc = DPSDAC.example_scenario().replace(horizon=6)
    from asyncdp.privacy.behavior import run_engine

    runs = run_engine(sc, 6, seed=0)
    fam = candidate_evaluation._family(sc, None)
    prepared = CandidateRuns(runs, fam.rows(runs, runs.runs))
    chosen = fam.extremes(sc, None)[::7][:5]
    base = candidate_pairs._bound_base(sc)
    built = []
    init = LinearRound.__init__
    monkeypatch.setattr(LinearRound, "__init__", lambda self, *a: built.append(a[1]) or init(self, *a))
    cands = [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen]
    assert all(isinstance(c.costs, LinearCosts) for c in cands) and not built
    got = constructed_replays(prepared.runs, cands, fam.pinned(sc))
    assert len(built) <= 2  # one family answers the base's structure (blocks, mask) for every candidate
    monkeypatch.setattr(LinearRound, "__init__", init)
    for (_, t0, g, gp), (losses, per_round) in zip(chosen, got):
        (own, own_rounds), = constructed_replays(prepared.runs, [fam.scenarios(sc, t0, g, gp)], fam.pinned(sc))
        np.testing.assert_array_equal(losses, own)
        np.testing.assert_array_equal(per_round, own_rounds)
    assert len({float(x[0].sum()) for x in got}) > 1


def test_linear_costs_reject_what_their_family_rejects():
    from asyncdp.errors import ProblemError
    from asyncdp.papers.dpsda.rule import DPSDAC
    from asyncdp.privacy.stacked import LinearCosts
    from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic
    from asyncdp.problems.online import LinearRound

    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.5]])
    for _ in range(2):  # (the second time the base and index are known: only the gradient is checked anew)
        for agent, g in ((2, [1.0, 0.0]), (0, [np.nan, 0.0]), (0, [1.0, 0.0, 0.0]), (0, [np.inf, -np.inf])):
            with pytest.raises(ProblemError):
                LinearOverride(base, agent, g)
            with pytest.raises(ProblemError):
                LinearCosts(LinearOverride, base, agent, g)
        LinearOverride(base, 1, [1e308, 1e308])  # finite entries (whose sum overflows): accepted, not built
        assert LinearCosts(LinearOverride, base, 1, [1e308, 1e308])._built is None
        assert LinearCosts(LinearOverride, base, 1, [1.0, -2.0])._built is None
    loss = DPSDAC.example_scenario().problem.costs
    with pytest.raises(ProblemError):
        LinearCosts(LinearRound, loss, 0, np.ones(loss.dim))  # rounds are 1-based
    fine = LinearCosts(LinearRound, loss, 2, np.ones(loss.dim))
    assert fine._built is None and fine.family().round_index == 2


def test_dense_rounds_of_a_list_of_schedules_are_each_runs_own_in_order():
    from accounting.schedule_reads import dense_round

    class One:
        def __init__(self, k):
            self.k = k

        def dense(self, t):
            return np.full((2, 2), float(self.k)), np.full((2, 2), t + self.k)

    objs = [One(k) for k in range(12)]
    rng = np.random.default_rng(2)
    for trial in range(60):  # repeated objects (lockstep runs share one), all distinct, any order
        pick = rng.permutation(12)[:rng.integers(1, 12)] if trial % 2 else rng.integers(0, 12, size=rng.integers(1, 20))
        w, src = dense_round([objs[k] for k in pick], 3)
        assert w[:, 0, 0].tolist() == [float(k) for k in pick] and src.dtype == np.int64
        assert src[:, 1, 1].tolist() == [3 + int(k) for k in pick]


def test_in_many_dimensions_the_climb_moves_a_bounded_number_of_coordinates(monkeypatch):
    import topology
    from asyncdp import Scenario
    from asyncdp.papers.huang2015.rule import Huang2015
    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
    from asyncdp.problems.problem import rendezvous_problem

    dim = 40
    rng = np.random.default_rng(0)
    problem = rendezvous_problem(rng.uniform(-1, 1, size=(3, dim)))
    weights = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    sc = Scenario(problem, topology.static(weights), Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.6), horizon=4, seed=1)
    adj = sc.replace(problem=problem.adjacent(0, address=-np.ones(dim)))
    ctx = prepare(ScenarioPair(sc, adj), CheckOptions(runs=20))
    moved = []
    evaluate_all = candidate_evaluation._evaluate_all

    def spy(fam, cand, scenario, candidates, *args, **kwargs):
        moved.append(sum(1 for c in candidates if c[0] == "search: hill climb"))
        return evaluate_all(fam, cand, scenario, candidates, *args, **kwargs)

    monkeypatch.setattr(pair_search, "_evaluate_all", spy)
    fam = candidate_evaluation._family(sc, 0)
    start = [candidate_evaluation.CandidatePair(label, 0, tuple(g), tuple(gp))
             for label, g, gp in candidate_pairs.extremal_pairs(sc, 0)[:3]]
    pair_search.search_pairs(ctx.engine_runs(0), sc, 0, examples=5, start=start)
    climbs = [m for m in moved if m]
    assert len(climbs) == pair_search.CLIMB_ITERATIONS
    # not 4 * 40 per point
    assert all(0 < m <= pair_search.CLIMB_POINTS * 4 * pair_search.CLIMB_COORDINATES for m in climbs)
    assert fam is not None and dim > pair_search.CLIMB_COORDINATES


def _fails(*args, **kwargs):
    from accounting.errors import AccountingError

    raise AccountingError("a drawn candidate's construction does not settle")


def test_a_search_that_cannot_replay_a_candidate_keeps_the_extremal_witness(monkeypatch):
    from dataclasses import dataclass

    from asyncdp import Huang2015

    @dataclass(frozen=True)
    class Overclaiming(Huang2015):  # the claim is half the epsilon the noise is calibrated for
        def claimed_privacy(self, horizon):
            return self.epsilon / 2.0, 0.0

    pair, _ = small_example()
    rule = Overclaiming(epsilon=1.0, c=0.05, q=0.2, p=0.6)
    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare

    over = ScenarioPair(pair.scenario.replace(algorithm=rule), pair.adjacent.replace(algorithm=rule))
    ctx = prepare(over, CheckOptions(runs=40))
    whole = worst_case.search_worst_case(over, ctx)
    assert whole.witness is not None and whole.witness["pair"].startswith("sign pattern")  # an extremal pair
    monkeypatch.setattr(worst_case, "search_pairs", _fails)
    got = worst_case.search_worst_case(over, ctx)
    assert got.witness == whole.witness  # the extremal pairs' witness is kept
    # a subclass of a seed rule holds the published lemma as its author's assumption, tested like a user's
    assert "paper 'huang2015', inherited by the subclass Overclaiming" in got.doubt
    assert got.reasons[0].startswith("worst-case search: the search beyond the extremal pairs cannot replay")


def test_a_users_record_whose_search_cannot_replay_a_candidate_is_at_best_inconclusive(monkeypatch):
    import runpy
    from pathlib import Path

    from asyncdp.privacy import check_privacy

    ex = runpy.run_path(str(Path(__file__).resolve().parents[3] / "examples" / "own_paper_private_dgd.py"))
    sc, adj = ex["variant"]("correct")
    monkeypatch.setattr(worst_case, "search_pairs", _fails)
    report = check_privacy(sc, adj, runs=300, search_examples=5)
    assert report.verdict == "inconclusive" and report.witness is None  # it passes when the search runs
    assert any("was tested against the extremal pairs of its adjacency class only" in r for r in report.reasons)
    monkeypatch.setattr(worst_case, "_evaluate_all", _fails)  # not even the extremal pairs
    report = check_privacy(sc, adj, runs=300, search_examples=5)
    assert report.verdict == "inconclusive"
    assert any("was not tested against the worst case of an adjacency class" in r for r in report.reasons)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_lemma_check_reports_the_largest_excess_of_every_evaluated_pair(monkeypatch, seed):
    """_lemma_exceeded looks at every evaluated pair's rounds (a vectorized pass finds the pairs that exceed
    somewhere): the witness is the pair, run and round of the largest ratio to the lemma, as a plain search over
    every entry (written out here) finds; pairs of another agent or horizon are not looked at."""
    from asyncdp.privacy import roundoff
    from asyncdp.privacy.constructed import CandidateRuns

    rng = np.random.default_rng(seed)
    horizon = 5
    bounds = rng.uniform(0.5, 2.0, horizon)
    slack = np.full(horizon, 1e-9)
    monkeypatch.setattr(search_evidence, "_round_bounds", lambda ctx, h, agent: bounds)
    monkeypatch.setattr(roundoff, "_roundoff_budget", lambda ctx, runs: slack)
    evaluated = CandidateRuns.__new__(CandidateRuns)
    evaluated.rows = list(range(16))
    evaluated.known = {}
    evaluated.kinked = {}  # (no kinked pair among them)
    for k in range(40):
        rows = int(rng.choice([2, 8, 16]))
        per_round = rng.uniform(0.0, 1.0, (rows, horizon)) * bounds * 0.99
        if rng.random() < 0.3:  # exceeds somewhere
            per_round[rng.integers(rows), rng.integers(horizon)] = bounds.max() * rng.uniform(1.01, 3.0)
        if rng.random() < 0.1:
            per_round[0, 0] = np.nan
        agent = 0 if k % 7 else 1
        width = horizon if k % 11 else horizon + 1
        g = rng.normal(size=2)
        if width != horizon:  # another horizon's pair
            per_round = np.pad(per_round, ((0, 0), (0, 1)))
        evaluated.known[(agent, 99, None, g.tobytes(), (-g).tobytes())] = (per_round.sum(axis=1), per_round)
    allowed = bounds * (1 + 1e-9) + 1e-12 + slack
    want = None
    for key, (_, pr) in evaluated.known.items():
        if key[0] != 0 or pr.shape[1] != horizon or not (pr > allowed).any():
            continue
        r, t = np.unravel_index(int(np.nanargmax(pr - allowed)), pr.shape)
        if want is None or pr[r, t] / bounds[t] > want[0]:
            want = (pr[r, t] / bounds[t], key, int(t) + 1)
    assert want is not None or seed != 0  # (the draws of seed 0 exceed somewhere)
    fam = candidate_evaluation._Family(GradientClass(1.0, "l2"), 0)
    ctx = SimpleNamespace(claim_form=None, paper=None)
    runs = EngineRuns("simpy", tuple(range(16)), {}, (None,) * 16, False)
    got = search_evidence._lemma_exceeded(ctx, fam, evaluated, SimpleNamespace(horizon=horizon), runs)
    if want is None:
        assert got is None
    else:
        witness, _ = got
        assert witness["ratio"] == want[0] and witness["round"] == want[2]
        assert witness["gradient"] == np.frombuffer(want[1][3]).tolist()


@pytest.mark.parametrize("focus", [None, 2])
@pytest.mark.parametrize("gaussian", [False, True], ids=["largest-loss", "profile"])
def test_candidates_scored_together_are_each_scored_as_alone(focus, gaussian):
    """_evaluate_all scores a batch's candidates at once (their losses read together, every objective and largest
    loss computed for all of them): each CandidatePair equals _evaluate's of that candidate on its own runs, a
    candidate repeated in the batch included."""
    sc, ctx = _case()
    fam = candidate_evaluation._family(sc, 0)
    objective = search_objective._Objective(0.5, 1e-3 if gaussian else 0.0, gaussian)
    chosen = fam.extremes(sc, None)[:5]
    chosen = chosen + [("again", *chosen[1][1:])] + [("drawn", None, 0.3 * chosen[0][2], -0.7 * chosen[2][3])]
    runs = ctx.engine_runs(0)
    together = candidate_evaluation._evaluate_all(fam, CandidateRuns(runs, range(6)), sc, chosen, 6, objective, focus)
    alone = [candidate_evaluation._evaluate(fam, CandidateRuns(runs, range(6)), sc, label, t0, g, gp, 6, objective,
                                            focus)
             for label, t0, g, gp in chosen]
    assert together == alone
    assert len({c.objective for c in alone}) > 2  # something to tell apart


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
           st.lists(st.lists(st.floats(-1.0, 1.0), min_size=n, max_size=n), min_size=1, max_size=6),
           st.lists(st.lists(st.floats(-1.0, 1.0), min_size=n, max_size=n), min_size=6, max_size=6))),
       st.sampled_from(["l1", "l2"]), st.sampled_from(["each", "difference"]), st.floats(0.1, 10.0))
@settings(max_examples=60, deadline=None)
def test_scaling_the_moves_together_gives_each_ones_own_scaling(rows, norm, kind, bound):
    """_Family.scaled_rows (the hill climb's moves scaled together) equals _Family.scaled of each row, bit for bit,
    degenerate rows (norm below 1e-6: zeros) included."""
    us = np.array(rows[0] + [[0.0] * len(rows[0][0])])
    vs = np.array(rows[1][:len(us) - 1] + [rows[1][0]])
    fam = candidate_evaluation._Family(GradientClass(bound, norm, kind=kind), 0)
    together = fam.scaled_rows(us, vs)
    assert together[-1] is None  # the zero row
    for (u, v), got in zip(zip(us, vs), together):
        g, gp = fam.scaled(u, v)
        if g is None or gp is None:
            assert got is None
        else:
            assert got is not None and g.tobytes() == got[0].tobytes() and gp.tobytes() == got[1].tobytes()

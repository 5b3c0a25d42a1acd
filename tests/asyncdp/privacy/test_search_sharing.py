"""The worst-case search's shared work gives what each step computes on its own, value for value.

Each shortcut is compared with the plain computation it replaces, computed by other code: both problems' steps
in one stacked call (``asyncdp.privacy.paired_rules.Paired``) against each candidate's own replay
(:func:`~asyncdp.privacy.constructed.constructed_replay`); stacked groups of linear and kinked costs against each
family's own gradient; the kinked pairs' references read from the extremal evaluation, and the kinked pairs
replayed with the other agents' extremal pairs, against their own replays; a round every run shares
(:meth:`~asyncdp.privacy.constructed.DenseSchedules.shared_round`) against the gathered combinations; the
stacked linear gradient's checks against the base family's own call.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncdp.privacy.constructed as constructed
from asyncdp import Async, LinkModel, Links, LogNormalLatency
from asyncdp.errors import CostValueError
from asyncdp.privacy.behavior import EngineRuns, run_engine
from asyncdp.privacy.constructed import CandidateRuns, DenseSchedules, constructed_replay, constructed_replays
from asyncdp.privacy.context import small_example
from asyncdp.privacy.kinked import KinkedOverride
from asyncdp.privacy.paired_rules import Paired
from asyncdp.privacy.stacked_costs import StackedCosts
from asyncdp.privacy.stacked_gradients import LinearCosts
from asyncdp.problems.costs import AgentOverride, LinearOverride, RendezvousQuadratic
from asyncdp.privacy import (candidate_evaluation, candidate_pairs, kinked_search, other_agent_pairs, pair_search,
                             search_evidence, search_objective)

LOSSY = Links(LinkModel(latency=LogNormalLatency(median=0.4, sigma=0.8), loss=0.2))


def _lockstep():
    sc = small_example()[0].scenario
    return sc, CandidateRuns(run_engine(sc, 6, seed=4), range(6))


def _counting_pairs(monkeypatch):
    made = []
    real = Paired.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Paired, "__init__", counted)
    return made


def _assert_each_is_its_own_replay(prepared, sc, chosen, agent, got):
    """Every stacked candidate's losses, per-round contributions and constructed transcript equal its own replay's."""
    for k, (_, _, g, gp) in enumerate(chosen):
        built, alone = constructed_replay(prepared.runs, *candidate_pairs.candidate_scenarios(sc, agent, g, gp), agent)
        np.testing.assert_array_equal(got[k][0], alone.losses)
        np.testing.assert_array_equal(got[k][1], alone.per_round)
        for c, m in got.transcript(k).items():
            np.testing.assert_array_equal(m, built[c])


def test_both_problems_steps_at_once_give_each_candidates_own_replay(monkeypatch):
    """Lockstep runs settle in one pass, so the stack takes both problems' steps in one call (Paired): every
    candidate's losses, per-round contributions and constructed transcript are those of its own replay."""
    sc, prepared = _lockstep()
    fam, base = candidate_evaluation._family(sc, 0), candidate_pairs._bound_base(sc)
    chosen = fam.extremes(sc, None)[:5]
    made = _counting_pairs(monkeypatch)
    got = constructed_replays(prepared.runs, [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen], 0)
    assert made == [1]  # the paired rule was used
    _assert_each_is_its_own_replay(prepared, sc, chosen, 0, got)
    assert len({float(got[k][0].max()) for k in range(len(chosen))}) > 1  # different candidates to tell apart


@pytest.mark.parametrize("seed", [0, 3])
def test_a_one_pass_under_asynchronous_reads_ahead_takes_both_problems_steps_at_once(monkeypatch, seed):
    """Where only other agents read the pinned agent's messages ahead (``"pinned"``), the first pass keeps no
    states, so the stack takes both problems' steps in one call (Paired); when it settles (the other agents'
    releases unmoved), every candidate's losses, per-round contributions and transcript are its own replay's."""
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    prepared = CandidateRuns(run_engine(sc, 8, seed=seed), range(8))
    fam, base = candidate_evaluation._family(sc, 1), candidate_pairs._bound_base(sc)
    assert constructed._one_pass(prepared.runs, base, 1) == "pinned"
    chosen = fam.extremes(sc, None)[:4]
    made = _counting_pairs(monkeypatch)
    got = constructed_replays(prepared.runs, [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen], 1)
    assert made == [1]  # one replay, with the paired rule
    _assert_each_is_its_own_replay(prepared, sc, chosen, 1, got)


def test_paired_rules_called_out_of_order_refuse():
    sc = small_example()[0].scenario
    costs = sc.problem.costs
    from asyncdp.privacy.stacked import Stacked

    both = Stacked(sc.algorithm.bind(sc.problem), [LinearOverride(costs, 0, [1.0, 0.0]),
                                                   LinearOverride(costs, 0, [0.0, 1.0])],
                   sc.problem.domain, None, sc.initial_points(), 2)
    pair = Paired(both, 2)
    with pytest.raises(ValueError, match="before the problem's"):
        pair.q.initial_state(2)
    p, q = pair.p.initial_state(2), pair.q.initial_state(2)
    mixed = {"y": np.zeros((2, 3, 2))}
    with pytest.raises(ValueError, match="out of order"):
        pair.q.next_state(q, mixed, 1)
    p2 = pair.p.next_state(p, mixed, 1)
    with pytest.raises(ValueError, match="before both problems"):
        pair.p.message_means(p2, 2)
    with pytest.raises(ValueError, match="one chunk"):
        pair.p.initial_state(3)


def test_a_stack_of_linear_then_kinked_costs_gives_each_familys_own_gradients():
    base = RendezvousQuadratic([[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]])
    linear = [LinearCosts(LinearOverride, base, 1, g) for g in ([1.0, 0.0, 0.0], [0.0, -2.0, 0.5])]
    kinked = [KinkedOverride(base, 1, axis, c, 1.5, 1e-3) for axis, c in ((0, 0.3), (2, -1.0))]
    stacked = StackedCosts(linear + kinked + [linear[0]], 4)
    assert stacked._groups is not None and [g[:2] for g in stacked._groups] == [(0, 2), (2, 4), (4, 5)]
    x = np.random.default_rng(0).normal(size=(20, 2, 3)) * 3
    got = stacked.gradient(np.arange(2), x)
    fams = [c.family() if isinstance(c, LinearCosts) else c for c in linear + kinked + [linear[0]]]
    want = np.concatenate([f.gradient(np.arange(2), x[4 * k:4 * (k + 1)]) for k, f in enumerate(fams)])
    assert np.array_equal(got, want)
    assert isinstance(stacked, AgentOverride) and not isinstance(stacked, LinearOverride)  # what all of them are
    x[5, 1, 0] = np.inf  # an infinite point: each family's own call names it
    with pytest.raises(CostValueError):
        stacked.gradient(np.arange(2), x)


def test_the_kinked_references_read_from_the_extremal_evaluation_are_their_own_transcripts(monkeypatch):
    sc, prepared = _lockstep()
    ctx = small_example()[1]
    fam = candidate_evaluation._family(sc, 0)
    references = kinked_search._kinked_references(fam, sc)
    keep = {candidate_evaluation._key(t0, g, gp) for t0, g, gp in references}
    candidate_evaluation._evaluate_all(fam, prepared, sc, fam.extremes(sc, None), 6,
                                       search_objective._objective_of(ctx, sc), None, keep)
    kept = kinked_search._kept_transcripts(fam, prepared, sc, references, candidate_evaluation._KINKED_RUNS)
    assert kept is not None and len(kept) == len(references) == 4
    base = candidate_pairs._bound_base(sc)
    own = constructed.constructed_transcripts(prepared.prefix(candidate_evaluation._KINKED_RUNS),
                                              [fam.candidate(base, sc, t0, g, gp) for t0, g, gp in references], 0)
    for a, b in zip(kept, own):
        assert a.keys() == b.keys() and all(np.array_equal(a[c], b[c], equal_nan=True) for c in a)
    # the kinked pairs then replay no reference: the same pairs as from the references' own replay
    monkeypatch.setattr(kinked_search, "constructed_transcripts",
                        lambda *a, **k: pytest.fail("a reference was replayed"))
    with_kept = kinked_search._kinked_candidates(fam, prepared, sc, kept_only=True)
    monkeypatch.undo()
    fresh = kinked_search._kinked_candidates(fam, CandidateRuns(prepared.runs, range(6)), sc)
    assert with_kept and [p for _, p, _ in with_kept] == [p for _, p, _ in fresh]


def test_kinked_pairs_replayed_with_the_other_agents_record_what_their_own_replay_gives(monkeypatch):
    sc, prepared = _lockstep()
    ctx = small_example()[1]
    fam = candidate_evaluation._family(sc, 0)
    objective = search_objective._objective_of(ctx, sc)
    keep = {candidate_evaluation._key(t0, g, gp) for t0, g, gp in kinked_search._kinked_references(fam, sc)}
    candidate_evaluation._evaluate_all(fam, prepared, sc, fam.extremes(sc, None), 6, objective, None, keep)
    found = kinked_search._kinked_candidates(fam, prepared, sc, kept_only=True)
    fams = [candidate_evaluation._family(sc, j) for j in (1, 2)]
    other_agent_pairs._stack_other_agents(fams, [f.extremes(sc, None) for f in fams], prepared, sc,
                           [(key, c, 0) for key, _, c in found])
    assert set(prepared.spare) == {key for key, _, _ in found}
    assert not any(key in prepared.known for key, _, _ in found)  # kept apart until the lemma's check reads them
    monkeypatch.setattr(kinked_search, "_kinked_replays", lambda *a, **k: pytest.fail("the kinked pairs were replayed"))
    kinked_search._evaluate_kinked(fam, prepared, sc)
    monkeypatch.undo()
    alone = CandidateRuns(prepared.runs, range(6))
    candidate_evaluation._evaluate_all(fam, alone, sc, fam.extremes(sc, None), 6, objective, None)
    kinked_search._evaluate_kinked(fam, alone, sc)
    assert alone.kinked.keys() == prepared.kinked.keys() and len(alone.kinked) > 0
    for key in alone.kinked:
        np.testing.assert_array_equal(prepared.known[key][0], alone.known[key][0])
        np.testing.assert_array_equal(prepared.known[key][1], alone.known[key][1])


def test_a_round_every_run_shares_is_combined_alike():
    sc, prepared = _lockstep()
    dense = prepared.runs.schedules
    assert isinstance(dense, DenseSchedules) and dense.shared_round(2) is not None
    async_runs = run_engine(sc.replace(timing=Async(rate=1.0), links=LOSSY), 6, seed=1)
    assert CandidateRuns(async_runs, range(6)).runs.schedules.shared_round(2) is None
    p, q = candidate_pairs.candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    _, shared = constructed_replay(prepared.runs, p, q, 0)

    class Gathered(DenseSchedules):  # the same runs, no shared rounds: every combination gathered
        def shared_round(self, t):
            return None

    raw = run_engine(sc, 6, seed=4)
    plain = EngineRuns(raw.engine, raw.seeds, raw.messages, Gathered(constructed._picked(raw.schedules, list(range(6))),
                                                                     sc.horizon), raw.unicast)
    _, gathered = constructed_replay(plain, p, q, 0)
    np.testing.assert_array_equal(shared.losses, gathered.losses)
    np.testing.assert_array_equal(shared.per_round, gathered.per_round)


def test_tiled_rounds_are_the_copied_rounds_for_any_number_of_copies():
    sc, prepared = _lockstep()
    dense = prepared.runs.schedules[:4]
    w, src = dense.dense_runs(3)
    for copies in (5, 2, 7):
        tw, tsrc = dense.tiled_round(3, copies)
        assert np.array_equal(tw, np.concatenate([w] * copies)) and np.array_equal(tsrc, np.concatenate([src] * copies))


def test_the_stacked_linear_gradient_is_the_base_familys_and_raises_what_it_raises():
    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    stacked = StackedCosts([LinearCosts(LinearOverride, base, 1, [1.0, -1.0]),
                            LinearCosts(LinearOverride, base, 1, [0.5, 0.5])], 3)
    x = np.random.default_rng(1).normal(size=(6, 3, 2))
    got = stacked.gradient(np.arange(3), x)
    want = np.concatenate([LinearOverride(base, 1, g).gradient(np.arange(3), x[3 * k:3 * k + 3])
                           for k, g in enumerate(([1.0, -1.0], [0.5, 0.5]))])
    assert np.array_equal(got, want)
    x[4, 2, 1] = np.nan
    with pytest.raises(CostValueError):
        stacked.gradient(np.arange(3), x)

    class Loud(RendezvousQuadratic):  # a family with its own public gradient: never bypassed
        def gradient(self, agents, x, *, round_index=None):
            return 2.0 * super().gradient(agents, x, round_index=round_index)

    loud = Loud([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    stacked = StackedCosts([LinearCosts(LinearOverride, loud, 1, [1.0, -1.0]),
                            LinearCosts(LinearOverride, loud, 1, [0.5, 0.5])], 3)
    y = np.zeros((6, 3, 2))
    assert np.array_equal(stacked.gradient(np.arange(3), y)[:, 0], 2.0 * base.gradient(np.zeros(6, dtype=int), y[:, 0]))


def test_kinked_round_pairs_taken_along_by_a_search_batch_record_what_their_own_replay_gives(monkeypatch):
    """Under a round class on lockstep runs (one distinct schedule: the search and the kinked pairs read the same
    runs) the kinked pairs ride along with the search's next stacked replay; the lemma's check then reads their
    losses, which are those of their own replay."""
    from asyncdp.papers.dpsda.rule import DPSDAC

    sc = DPSDAC.example_scenario().replace(horizon=6)
    runs = run_engine(sc, 6, seed=0)
    fam = candidate_evaluation._family(sc, None)
    ctx = small_example()[1]
    objective = search_objective._objective_of(ctx, sc)

    def prepared():
        cand = CandidateRuns(runs, fam.rows(runs, 16))
        keep = {candidate_evaluation._key(t0, g, gp) for t0, g, gp in kinked_search._kinked_references(fam, sc)}
        candidate_evaluation._evaluate_all(fam, cand, sc, fam.extremes(sc, None), 16, objective, None, keep)
        return cand

    shared = prepared()
    assert shared.prefix(candidate_evaluation._KINKED_RUNS).runs == shared.prefix(8).runs  # one distinct schedule
    found = kinked_search._kinked_round_candidates(fam, shared, sc, None, kept_only=True)
    assert found
    ahead = [(key, c, None, shared.prefix(candidate_evaluation._KINKED_RUNS).runs) for key, _, c in found]
    batch = [("x", t0, 0.5 * g, -0.25 * gp) for _, t0, g, gp in fam.extremes(sc, None)[:6]]
    candidate_evaluation._evaluate_all(fam, shared, sc, batch, 8, objective, None, ahead=ahead)
    assert not ahead and set(shared.spare) == {key for key, _, _ in found}
    monkeypatch.setattr(kinked_search, "_kinked_replays", lambda *a, **k: pytest.fail("the kinked pairs were replayed"))
    kinked_search._evaluate_kinked(fam, shared, sc)
    monkeypatch.undo()
    alone = prepared()
    kinked_search._evaluate_kinked(fam, alone, sc)
    assert alone.kinked.keys() == shared.kinked.keys() and len(alone.kinked) == len(found)
    for key in alone.kinked:
        np.testing.assert_array_equal(shared.known[key][0], alone.known[key][0])
        np.testing.assert_array_equal(shared.known[key][1], alone.known[key][1])


@pytest.mark.parametrize("timing", [None, Async(rate=1.0)], ids=["lockstep", "async"])
def test_candidates_on_their_own_numbers_of_runs_get_their_own_replays_values(timing):
    """A stack whose candidates are evaluated on different numbers of runs (each its first ones): every
    candidate's losses, per-round contributions and transcript are those of its own replay of its runs."""
    sc = small_example()[0].scenario
    if timing is not None:
        sc = sc.replace(timing=timing, links=LOSSY)
    prepared = CandidateRuns(run_engine(sc, 6, seed=3), range(6))
    fam, base = candidate_evaluation._family(sc, 0), candidate_pairs._bound_base(sc)
    chosen = fam.extremes(sc, None)[:4]
    sizes = [6, 2, 4, 1]
    got = constructed_replays(prepared.runs, [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen], 0,
                              sizes=sizes)
    for k, ((_, _, g, gp), size) in enumerate(zip(chosen, sizes)):
        built, alone = constructed_replay(prepared.prefix(size), *candidate_pairs.candidate_scenarios(sc, 0, g, gp), 0)
        np.testing.assert_array_equal(got[k][0], alone.losses)
        np.testing.assert_array_equal(got[k][1], alone.per_round)
        for c, m in got.transcript(k).items():
            np.testing.assert_array_equal(m, built[c])
    with pytest.raises(ValueError, match="sizes"):
        constructed_replays(prepared.runs, [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen], 0,
                            sizes=[6, 7, 1, 1])


def _asynchronous_example():
    """:func:`small_example` under lossy asynchronous timing (other agents read a pinned agent's messages ahead:
    one pass is ``"pinned"``, not ``"settled"``)."""
    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare, small_pair

    pair = small_pair()
    pair = ScenarioPair(*(sc.replace(timing=Async(rate=1.0), links=LOSSY) for sc in (pair.scenario, pair.adjacent)))
    return pair, prepare(pair, CheckOptions(runs=200))


@pytest.mark.parametrize("timing", ["lockstep", "async"])
def test_the_other_agents_and_kinked_pairs_ridden_along_by_a_search_batch_are_their_own_evaluations(monkeypatch,
                                                                                                      timing):
    """One agent's class: the other agents' extremal pairs and the kinked pairs ride along with the search's
    next stacked replay (each on its own first runs, pinned to its own agent; under asynchronous timing where
    one pass gives each pinned agent's values); the steps that use them then replay nothing and record what
    their own replays give."""
    pair, ctx = small_example() if timing == "lockstep" else _asynchronous_example()
    sc = pair.scenario
    fam = candidate_evaluation._family(sc, 0)
    objective = search_objective._objective_of(ctx, sc)
    runs = ctx.engine_runs(0)
    fams = [candidate_evaluation._family(sc, j) for j in other_agent_pairs.other_agents(sc.problem.num_agents, 0)]
    extremes = [f.extremes(sc, None) for f in fams]

    def prepared():
        cand = CandidateRuns(runs, fam.rows(runs, 16))
        keep = {candidate_evaluation._key(t0, g, gp) for t0, g, gp in kinked_search._kinked_references(fam, sc)}
        scored = candidate_evaluation._evaluate_all(fam, cand, sc, fam.extremes(sc, None), 16, objective, None, keep)
        return cand, max(scored, key=pair_search._rank)

    shared, best = prepared()
    assert ctx.sensitivity is not None and not search_evidence._refutes(ctx, runs, best, sc)
    ahead = other_agent_pairs._others_ahead(ctx, fam, shared, sc, best)
    riding = {e[0] for e in ahead}
    assert len(riding) == sum(map(len, extremes)) + len(kinked_search._kinked_candidates(fam, shared, sc,
                                                                                         kept_only=True))
    batch = [("x", None, 0.5 * g, -0.25 * gp) for _, _, g, gp in fam.extremes(sc, None)[:6]]
    candidate_evaluation._evaluate_all(fam, shared, sc, batch, 8, objective, None, ahead=ahead)
    assert not ahead and set(shared.spare) == riding
    for module in (other_agent_pairs, candidate_evaluation, kinked_search):  # every stacked replay of the search
        monkeypatch.setattr(module, "constructed_replays", lambda *a, **k: pytest.fail("replayed again"))
    monkeypatch.setattr(kinked_search, "_kinked_replays", lambda *a, **k: pytest.fail("replayed again"))
    other_agent_pairs._stack_other_agents(fams, extremes, shared, sc)
    ridden = [candidate_evaluation._evaluate_all(f, shared, sc, e, other_agent_pairs._OTHER_AGENT_RUNS, objective,
                                                 None) for f, e in zip(fams, extremes)]
    kinked_search._evaluate_kinked(fam, shared, sc)
    monkeypatch.undo()
    alone, _ = prepared()
    own = [candidate_evaluation._evaluate_all(f, alone, sc, e, other_agent_pairs._OTHER_AGENT_RUNS, objective, None)
           for f, e in zip(fams, extremes)]
    kinked_search._evaluate_kinked(fam, alone, sc)
    assert ridden == own
    for key in alone.known:
        np.testing.assert_array_equal(shared.known[key][0], alone.known[key][0])
        np.testing.assert_array_equal(shared.known[key][1], alone.known[key][1])
    assert alone.kinked.keys() == shared.kinked.keys() and alone.kinked

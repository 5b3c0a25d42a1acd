"""The worst-case search's shortcuts give what the plain computation gives, value for value.

:func:`asyncdp.privacy.constructed.constructed_replay` takes a candidate's
loss from the construction pass that finds the transcript settled, instead of
replaying the settled transcript again; :class:`~asyncdp.privacy.constructed.DenseSchedules`
serves every replay the dense rounds computed once. Both must change nothing:
the references below are the plain path (the pinned construction repeated
until settled, then :func:`~asyncdp.privacy.behavior.replay_runs` of its
output; each run's own ``dense(t)``), computed by other code than the
shortcut.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncdp import Async, LinkModel, Links, LogNormalLatency
from asyncdp.engine.schedule import RealizedSchedule
from asyncdp.privacy.behavior import EngineRuns, replay_runs, run_engine
from asyncdp.privacy.constructed import CandidateRuns, DenseSchedules, constructed_replay, constructed_replays
from asyncdp.privacy.context import small_example
from asyncdp.privacy.candidate_evaluation import constructed_losses
from asyncdp.privacy.candidate_pairs import candidate_scenarios
from asyncdp.privacy import candidate_evaluation, candidate_pairs, other_agent_pairs, search_objective

LOSSY = Links(LinkModel(latency=LogNormalLatency(median=0.4, sigma=0.8), loss=0.2))


def _plain_construction(runs, p, agent):
    """The pinned replay repeated until its output is its input, and the number of passes it took."""
    built = None
    for passes in range(1, p.horizon + 2):
        nxt = replay_runs(runs, p, algorithm=p.algorithm, pin_agent=agent, messages=built).messages
        if built is not None and all(np.array_equal(nxt[c], built[c], equal_nan=True) for c in nxt):
            return nxt, passes
        built = {c: np.array(m) for c, m in nxt.items()}
    raise AssertionError("did not settle")


@pytest.mark.parametrize("timing", [None, Async(rate=1.0)], ids=["lockstep", "async"])
def test_the_settled_pass_gives_the_losses_of_replaying_the_settled_transcript(timing):
    base = small_example()[0].scenario
    sc = base if timing is None else base.replace(timing=timing, links=LOSSY)
    runs = run_engine(sc, 12, seed=3)
    p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    want_messages, passes = _plain_construction(runs, p, 0)
    want = replay_runs(runs, p, q, algorithm=p.algorithm, messages=want_messages)
    got_messages, got = constructed_replay(CandidateRuns(runs, range(12)).runs, p, q, 0)
    assert passes >= 2  # the construction's check that nothing changes is one pass at least
    for c in want_messages:
        np.testing.assert_array_equal(got_messages[c], want_messages[c])
    _assert_same_losses(got, want)
    assert (got.losses > 0).all()  # the pinned agent's releases move: a loss to compare


ROUNDING = 1e-12
"""Tolerance of a one pass's losses against the plain path's under asynchronous reads ahead. A round's
contribution is the sum over every agent's releases of log p_P - log p_P'; the other agents' terms cancel
(same means under both problems), but in the one pass they are evaluated at states computed from
not-yet-constructed messages, so the two sums round differently: at most a few ulps of the largest term
(N d = 6 terms of size at most about 100 here, 6 * 100 * 2^-52 < 1.5e-13)."""


def _assert_same_losses(got, want):
    np.testing.assert_allclose(got.per_round, want.per_round, rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(got.losses, want.losses, rtol=0, atol=ROUNDING * want.per_round.shape[1])


def _read_ahead_runs(sc, runs: int) -> EngineRuns:
    """Runs whose schedule has agent 1 combine agent 0's message of round ``t + 2`` in round ``t`` and agent 2
    agent 1's of round ``t + 1`` (agent 0 keeps to itself, so the causal order is acyclic): pinning every agent,
    one pass constructs agent 1's messages from agent 0's recorded ones, so the construction needs more passes."""
    n, horizon = sc.problem.num_agents, sc.horizon
    assert n == 3
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    senders = []
    for t in range(1, horizon + 1):
        s = np.where(weights > 0, t, 0)
        s[1, 0], s[2, 1] = min(t + 2, horizon), min(t + 1, horizon)
        senders.append(s)
    sched = RealizedSchedule.from_dense([weights] * horizon, senders)
    y = np.random.default_rng(5).normal(size=(runs, horizon, n, sc.problem.dim))
    return EngineRuns("batch", tuple(range(runs)), {"y": y}, (sched,) * runs, False)


def test_with_read_ahead_the_construction_takes_more_passes_and_the_settled_pass_still_gives_the_losses():
    sc = small_example()[0].scenario
    runs = _read_ahead_runs(sc, 4)
    p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    pinned = [0, 1, 2]
    want_messages, passes = _plain_construction(runs, p, pinned)
    want = replay_runs(runs, p, q, algorithm=p.algorithm, messages=want_messages)
    got_messages, got = constructed_replay(CandidateRuns(runs, range(4)).runs, p, q, pinned)
    assert passes >= 3
    np.testing.assert_array_equal(got_messages["y"], want_messages["y"])
    np.testing.assert_array_equal(got.per_round, want.per_round)
    assert (got.losses > 0).all()


def test_dense_schedules_are_each_runs_own_dense_rounds_for_every_slice():
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 6, seed=1)
    dense = DenseSchedules(tuple(runs.schedules[r] for r in range(6)), sc.horizon)
    for t in range(1, sc.horizon + 1):
        for part, rows in ((dense, range(6)), (dense[2:5], range(2, 5)), (dense[1:][1:3], range(2, 4))):
            w, src = part.dense_runs(t)
            assert w.shape[0] == src.shape[0] == len(part) == len(rows)
            for k, r in enumerate(rows):
                w_r, s_r = runs.schedules[r].dense(t)
                np.testing.assert_array_equal(w[k], w_r)
                np.testing.assert_array_equal(src[k], s_r)



def test_lockstep_runs_sharing_one_schedule_read_its_rounds_once_and_get_the_same_losses():
    """Lockstep runs share one schedule object: the candidate runs read it as a SharedSchedule (each round once,
    not every run's copy stacked and compared), with the same rounds, shared rounds, reads ahead and losses as the
    runs' schedules read one by one."""
    from asyncdp.privacy.behavior import SharedSchedule

    sc = small_example()[0].scenario
    runs = run_engine(sc, 9, seed=4)
    assert len({id(s) for s in runs.schedules}) == 1  # (lockstep: one schedule object for every run)
    cand = CandidateRuns(runs, range(9))
    plain = DenseSchedules(tuple(runs.schedules), sc.horizon)
    assert isinstance(cand.runs.schedules._schedules, SharedSchedule)
    for t in range(1, sc.horizon + 1):
        for got, want in ((cand.runs.schedules, plain), (cand.runs.schedules[3:7], plain[3:7])):
            assert got.shared_round(t) is want.shared_round(t) is not None  # (kept by value: the same round)
    for a, b in zip(cand.runs.schedules.ahead_entries(), plain.ahead_entries()):
        np.testing.assert_array_equal(a, b)
    assert not any(isinstance(k, int) for k in cand.runs.schedules._cache)  # no round of every run stacked
    for t in range(1, sc.horizon + 1):
        for a, b in zip(cand.runs.schedules[3:7].dense_runs(t), plain[3:7].dense_runs(t)):
            np.testing.assert_array_equal(a, b)
    p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    base = EngineRuns(runs.engine, runs.seeds, runs.messages, plain, runs.unicast, batch_rows=runs.batch_rows)
    (got, got_rounds), = constructed_replays(cand.runs, [(p, q)], 0)
    (want, want_rounds), = constructed_replays(base, [(p, q)], 0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_rounds, want_rounds)
    assert (got > 0).all()

def test_a_candidates_losses_on_the_first_runs_do_not_depend_on_how_many_runs_were_prepared():
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 10, seed=2)
    alone, rows = constructed_losses(runs, sc, 0, [1.0, 0.0], [0.0, -1.0], max_runs=4)
    p, q = candidate_scenarios(sc, 0, [1.0, 0.0], [0.0, -1.0])
    _, out = constructed_replay(CandidateRuns(runs, range(10)).prefix(4), p, q, 0)
    assert rows == [0, 1, 2, 3]
    np.testing.assert_array_equal(out.losses, alone)


def test_reads_ahead_names_exactly_the_schedules_whose_later_written_messages_are_read():
    sc = small_example()[0].scenario
    runs = _read_ahead_runs(sc, 2)
    dense = DenseSchedules(runs.schedules, sc.horizon)
    written = np.zeros((sc.horizon, 3), dtype=bool)
    assert not dense.reads_ahead(written)  # nothing written: nothing read too early
    written[:, 2] = True  # agent 2's messages: nobody reads them ahead
    assert not dense.reads_ahead(written)
    written[:, 0] = True  # agent 1 reads agent 0's round t + 2 message in round t
    assert dense.reads_ahead(written)
    only_last = np.zeros_like(written)
    only_last[sc.horizon - 1, 1] = True  # agent 2 reads agent 1's last message in the round before it
    assert dense.reads_ahead(only_last)
    assert not DenseSchedules(small_example()[0].scenario and run_engine(sc, 3, seed=0).schedules,
                              sc.horizon).reads_ahead(np.ones((sc.horizon, 3), dtype=bool))  # lockstep: never


def test_a_candidate_met_again_on_fewer_runs_reads_its_first_rows_and_they_are_what_a_replay_gives(monkeypatch):
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 12, seed=4)
    fam = candidate_evaluation._family(sc, 0)
    prepared = CandidateRuns(runs, range(12))
    wide, _, _ = candidate_evaluation._losses(fam, prepared, sc, None, np.array([0.6, 0.8]), np.array([-0.6, -0.8]), 12)
    fresh, _, rows = candidate_evaluation._losses(fam, runs, sc, None, np.array([0.6, 0.8]), np.array([-0.6, -0.8]), 5)
    calls = []
    monkeypatch.setattr(candidate_evaluation, "constructed_replays",
                        lambda *a, **k: calls.append(a) or constructed_replays(*a, **k))
    again, _, rows_again = candidate_evaluation._losses(fam, prepared, sc, None, np.array([0.6, 0.8]),
                                                        np.array([-0.6, -0.8]), 5)
    other, _, _ = candidate_evaluation._losses(fam, prepared, sc, None, np.array([0.8, 0.6]), np.array([-0.6, -0.8]), 5)
    assert len(calls) == 1  # the known candidate was not replayed; the other one was
    assert rows == rows_again == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(again, fresh)
    np.testing.assert_array_equal(again, wide[:5])
    assert not np.array_equal(other, again)


def _one_agent_case():
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 10, seed=6)
    return candidate_evaluation._family(sc, 0), sc, runs


def _round_case():
    from asyncdp.papers.dpsda.rule import DPSDAC

    sc = DPSDAC.example_scenario().replace(horizon=6)
    runs = run_engine(sc, 6, seed=0)
    return candidate_evaluation._family(sc, None), sc, runs


@pytest.mark.parametrize("case", [_one_agent_case, _round_case], ids=["one agent, async", "round adjacency"])
def test_stacked_candidates_get_exactly_the_losses_of_their_own_replays(case):
    fam, sc, runs = case()
    prepared = CandidateRuns(runs, fam.rows(runs, runs.runs))
    chosen = fam.extremes(sc, None)[:3]
    pairs = [fam.scenarios(sc, t0, g, gp) for _, t0, g, gp in chosen]
    stacked = constructed_replays(prepared.runs, pairs, fam.pinned(sc))
    assert len(stacked) == 3
    for (p, q), (losses, per_round) in zip(pairs, stacked):
        _, alone = constructed_replay(prepared.runs, p, q, fam.pinned(sc))
        np.testing.assert_array_equal(losses, alone.losses)
        np.testing.assert_array_equal(per_round, alone.per_round)
    assert not np.array_equal(stacked[0][0], stacked[1][0])  # different candidates: something to tell apart


def test_a_group_whose_stacked_replay_fails_is_evaluated_one_candidate_at_a_time(monkeypatch):
    fam, sc, runs = _one_agent_case()
    chosen = fam.extremes(sc, None)[:4]
    objective = search_objective._objective_of(small_example()[1], sc)
    together = candidate_evaluation._evaluate_all(fam, CandidateRuns(runs, range(10)), sc, chosen, 10, objective, None)

    def broken(*args, **kwargs):
        raise ValueError("no stacking")

    monkeypatch.setattr(candidate_evaluation, "constructed_replays", broken)
    apart = candidate_evaluation._evaluate_all(fam, CandidateRuns(runs, range(10)), sc, chosen, 10, objective, None)
    assert together == apart and len(apart) == 4


def test_only_the_pinned_agents_reads_decide_the_one_pass_plan():
    from asyncdp.privacy.constructed import _one_pass

    sc = small_example()[0].scenario
    runs = CandidateRuns(_read_ahead_runs(sc, 2), range(2)).runs
    p, _ = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    assert _one_pass(runs, p, 2) == "settled"  # nobody reads agent 2's messages ahead
    assert _one_pass(runs, p, 0) == "pinned"  # agent 1 reads agent 0's ahead; agent 0 reads only its own
    assert _one_pass(runs, p, 1) == "pinned"  # agent 2 reads agent 1's ahead; agent 1 reads unwritten ones
    assert _one_pass(runs, p, [0, 1]) is None  # agent 1, pinned, reads pinned agent 0's message ahead


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_pass_under_asynchronous_reads_ahead_gives_the_plain_constructions_values(seed):
    """Async runs where other agents read the pinned agent's later messages: the one pass equals the plain path
    (repeated passes, then a replay of the settled transcript), messages, rounds and losses."""
    from asyncdp.privacy.constructed import _one_pass

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 16, seed=seed)
    prepared = CandidateRuns(runs, range(16)).runs
    p, q = candidate_scenarios(sc, 1, [0.6, -0.8], [-1.0, 0.0])
    assert _one_pass(prepared, p, 1) == "pinned"  # the other agents read agent 1's later messages
    want_messages, _ = _plain_construction(runs, p, 1)
    want = replay_runs(runs, p, q, algorithm=p.algorithm, messages=want_messages)
    got_messages, got = constructed_replay(prepared, p, q, 1)
    for c in want_messages:
        np.testing.assert_array_equal(got_messages[c], want_messages[c])  # the constructed messages: exact
    _assert_same_losses(got, want)
    assert (want.losses > 0).all()
    (stacked, per_round), = constructed_replays(prepared, [(p, q)], 1)
    np.testing.assert_array_equal(stacked, got.losses)  # stacked or alone: the same operations
    np.testing.assert_array_equal(per_round, got.per_round)


def test_when_other_agents_releases_move_the_one_pass_falls_back_to_repeated_passes(monkeypatch):
    """The one pass is used only when the pass shows the other agents' releases unmoved between the problems;
    otherwise the passes repeat until the transcript settles, with the same values as the plain path."""
    import asyncdp.privacy.constructed as constructed

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 16, seed=0)
    prepared = CandidateRuns(runs, range(16)).runs
    p, q = candidate_scenarios(sc, 1, [0.6, -0.8], [-1.0, 0.0])
    import accounting.scheduled_replay as sr

    passes = []
    real = sr.scheduled_replay
    monkeypatch.setattr(sr, "scheduled_replay", lambda *a, **k: passes.append(1) or real(*a, **k))
    monkeypatch.setattr(constructed, "_others_unmoved", lambda out, pinned: False)
    want_messages, _ = _plain_construction(runs, p, 1)
    want = replay_runs(runs, p, q, algorithm=p.algorithm, messages=want_messages)
    got_messages, got = constructed.constructed_replay(prepared, p, q, 1)
    assert len(passes) >= 2
    np.testing.assert_array_equal(got_messages["y"], want_messages["y"])
    np.testing.assert_array_equal(got.losses, want.losses)


def test_pinned_agents_as_a_numpy_array_are_agents_not_runs():
    """``pinned`` given as a NumPy array of agents (a ``Sequence[int]``) is the same construction as a list, also
    where one pass is ``"pinned"`` (it is not read as one pinned agent per run of a stack)."""
    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    prepared = CandidateRuns(run_engine(sc, 16, seed=0), range(16)).runs
    p, q = candidate_scenarios(sc, 1, [0.6, -0.8], [-1.0, 0.0])
    from asyncdp.privacy.constructed import _one_pass

    assert _one_pass(prepared, p, 1) == "pinned"
    _, want = constructed_replay(prepared, p, q, [1])
    _, got = constructed_replay(prepared, p, q, np.array([1]))
    np.testing.assert_array_equal(got.losses, want.losses)
    np.testing.assert_array_equal(got.per_round, want.per_round)


def test_other_agents_unmoved_is_every_other_release_equal_with_nan_equal_to_nan():
    """:func:`~asyncdp.privacy.constructed._others_unmoved` against the plain comparison (the pinned agents'
    releases deleted, then ``numpy.array_equal`` with NaN equal to NaN), run by run for one agent per run."""
    from types import SimpleNamespace

    from asyncdp.privacy.constructed import _others_unmoved, _RunChecks

    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(2, 5))
        shape = (int(rng.integers(1, 4)), 2, n) + ((n,) if rng.random() < 0.3 else ()) + (2,)  # (unicast: N, N)
        r = rng.integers(0, 3, shape).astype(float)
        rp = np.where(rng.random(shape) < 0.05, rng.integers(0, 3, shape), r)
        nan = rng.random(shape) < 0.2
        r[nan] = np.nan
        rp[nan & (rng.random(shape) < 0.7)] = np.nan
        out = SimpleNamespace(residuals={"y": r}, residuals_prime={"y": rp})
        pinned = sorted({int(j) for j in rng.integers(0, n, int(rng.integers(1, n)))})

        def plain(a, b, agents):
            return np.array_equal(np.delete(a, agents, axis=2), np.delete(b, agents, axis=2), equal_nan=True)

        assert _others_unmoved(out, pinned) == plain(r, rp, pinned)
        per_run = rng.integers(-1, n, shape[0])  # (-1: a run not compared)
        assert _others_unmoved(out, _RunChecks(per_run)) == all(plain(r[k:k + 1], rp[k:k + 1], [int(j)])
                                                     for k, j in enumerate(per_run) if j >= 0)


def test_every_run_of_a_batch_is_read_from_the_batch_itself():
    """The check's every run (the worst pair's and the other agents' replays on all of them) reads the engine's
    batch of schedules as it is, not a copy of its columns (checked again, its entries sorted by round again):
    the same rounds."""
    from asyncdp.privacy.constructed import _picked

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 6, seed=2)
    assert hasattr(runs.schedules, "dense_runs")
    assert _picked(runs.schedules, list(range(6))) is runs.schedules
    assert len(_picked(runs.schedules, [1, 2, 3])) == 3 and _picked(runs.schedules, [0, 1]) is not runs.schedules
    every = CandidateRuns(runs, range(6)).runs.schedules
    for t in range(1, sc.horizon + 1):
        w, src = every.dense_runs(t)
        for r in range(6):
            want_w, want_src = runs.schedules[r].dense(t)
            np.testing.assert_array_equal(w[r], want_w)
            np.testing.assert_array_equal(src[r], want_src)
        assert every.shared_round(t) is None  # (lossy asynchronous runs: no round every run shares)


def test_every_round_at_once_is_each_rounds_dense_schedule():
    """The candidates' replays read every round of a batch from one scatter of its columns
    (``RealizedSchedules.dense_rounds``): the arrays the batch's own ``dense_runs(t)`` gives, round by round, also
    where an entry repeats a receiver and sender of its run and round (the later one is written last in both)."""
    from asyncdp.engine.schedule import RealizedSchedules

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    batch = run_engine(sc, 9, seed=3).schedules
    repeated = RealizedSchedules(2, 2, np.array([0, 3, 4]), np.array([1, 1, 2, 2]), np.array([0, 0, 1, 1]),
                                 np.array([1, 1, 0, 0]), np.array([0.25, 0.5, 0.75, 1.0]), np.array([1, 1, 2, 1]))
    for schedules in (batch, batch[2:7], repeated):
        w, s = schedules.dense_rounds()
        assert w.shape == (schedules.horizon, len(schedules), schedules.num_agents, schedules.num_agents)
        for t in range(1, schedules.horizon + 1):
            want_w, want_s = schedules.dense_runs(t)
            np.testing.assert_array_equal(w[t - 1], want_w)
            np.testing.assert_array_equal(s[t - 1], want_s)
            assert s.dtype == want_s.dtype and w.dtype == want_w.dtype
    assert repeated.dense_rounds()[0][0, 0, 0, 1] == 0.5  # (the run's later entry of the pair)
    cached = CandidateRuns(run_engine(sc, 9, seed=3), range(9)).runs.schedules
    np.testing.assert_array_equal(cached.dense_runs(4)[1], batch.dense_runs(4)[1])


def test_schedules_made_on_access_are_each_runs_own():
    """A batch's schedules are views made on access: grouping or caching them by identity must not mistake a
    freed view's reused id for the same schedule."""
    from types import SimpleNamespace

    from accounting.schedule_reads import dense_round
    from asyncdp.privacy.profiles import pair_profile

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 8, seed=6)
    batch = runs.schedules  # the batch engine's columns: every access makes a new view

    class MadeOnAccess:  # the same views, read one by one (no dense_runs)
        def __len__(self) -> int:
            return len(batch)

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(batch)

    own = [batch[r] for r in range(8)]
    for t in range(1, sc.horizon + 1):
        w, src = dense_round(MadeOnAccess(), t)
        for r in range(8):
            w_r, s_r = own[r].dense(t)
            np.testing.assert_array_equal(w[r], w_r)
            np.testing.assert_array_equal(src[r], s_r)
    ctx = SimpleNamespace(focus=None, epsilon_claimed=1.0, delta_claimed=1e-5, state_magnitude=0.0)
    shifts = {"y": np.arange(8 * sc.horizon * 3 * 2, dtype=float).reshape(8, sc.horizon, 3, 2)}  # vary by run
    out = pair_profile(ctx, shifts, sc, SimpleNamespace(runs=8, schedules=batch, messages=runs.messages),
                       schedule_confidence=0.99, escort_error=0.005)
    assert "sampled once" in out.reason  # eight runs, eight schedules


@pytest.mark.parametrize("case", [_one_agent_case, _round_case], ids=["one agent, async", "round adjacency"])
def test_candidates_given_by_their_costs_run_each_step_once_and_get_their_own_replays_losses(case, monkeypatch):
    fam, sc, runs = case()
    prepared = CandidateRuns(runs, fam.rows(runs, runs.runs))
    chosen = fam.extremes(sc, None)[::5][:6]
    base = candidate_pairs._bound_base(sc)
    cands = [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen]
    steps = []
    from asyncdp.privacy import stack_runs

    original = stack_runs.Blocks.next_state
    monkeypatch.setattr(stack_runs.Blocks, "next_state",
                        lambda self, *a: steps.append(1) or original(self, *a))
    stacked = constructed_replays(prepared.runs, cands, fam.pinned(sc))
    assert not steps  # every step ran once for all candidates (no candidate's own rule was needed) ...
    assert all(c._built is None for c in cands)  # ... and no candidate's problems were built
    for (_, t0, g, gp), (losses, per_round) in zip(chosen, stacked):
        _, alone = constructed_replay(prepared.runs, *fam.scenarios(sc, t0, g, gp), fam.pinned(sc))
        np.testing.assert_array_equal(losses, alone.losses)
        np.testing.assert_array_equal(per_round, alone.per_round)
    assert len({float(x[0].sum()) for x in stacked}) > 1  # different candidates: something to tell apart


def test_a_step_the_stacked_problem_cannot_answer_is_taken_by_each_candidates_own_rule(monkeypatch):
    # from round 3 on the algorithm reads the problem's constants, which differ between candidates (the gradient
    # bound grows with ||g||): those steps must run with each candidate's own problem, and the losses stay exact
    fam, sc, runs = _one_agent_case()
    prepared = CandidateRuns(runs, fam.rows(runs, runs.runs))
    chosen = [c for c in fam.extremes(sc, None)][:4]
    cls = type(sc.algorithm)
    update = cls.update
    read = []

    def reading(self, state, mixed, t, agents, problem):
        if t >= 3:
            read.append(problem.constants.gradient_bound)
        return update(self, state, mixed, t, agents, problem)

    monkeypatch.setattr(cls, "update", reading)
    base = candidate_pairs._bound_base(sc)
    cands = [fam.candidate(base, sc, t0, g, gp) for _, t0, g, gp in chosen]
    stacked = constructed_replays(prepared.runs, cands, fam.pinned(sc))
    assert all(c._built is not None for c in cands) and read  # the problems were built for those steps
    for (_, t0, g, gp), (losses, per_round) in zip(chosen, stacked):
        _, alone = constructed_replay(prepared.runs, *fam.scenarios(sc, t0, g, gp), fam.pinned(sc))
        np.testing.assert_array_equal(losses, alone.losses)
        np.testing.assert_array_equal(per_round, alone.per_round)


def test_stacked_costs_answer_per_run_gradients_and_only_what_every_candidate_shares():
    from asyncdp.privacy.stacked_costs import StackedCosts, Unstackable
    from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic

    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.5], [-1.0, 2.0]])
    fams = [LinearOverride(base, 1, [1.0, -2.0]), LinearOverride(base, 1, [0.5, 3.0])]
    stacked = StackedCosts(fams, 4)
    x = np.random.default_rng(0).normal(size=(8, 3, 2))
    agents = np.arange(3)
    want = np.concatenate([fams[0].gradient(agents, x[:4]), fams[1].gradient(agents, x[4:])])
    np.testing.assert_array_equal(stacked.gradient(agents, x), want)
    assert stacked.gradient(agents, x)[5, 1].tolist() == [0.5, 3.0]
    assert isinstance(stacked, LinearOverride) and stacked.num_agents == 3 and stacked.agent == 1
    with pytest.raises(Unstackable):
        getattr(stacked, "linear_gradient")  # noqa: B009 - differs between the candidates
    with pytest.raises(Unstackable):
        getattr(stacked, "optimum")  # noqa: B009 - a method: which candidate's?
    with pytest.raises(Unstackable):
        stacked.gradient(agents, x[:4])  # not one point per run of the stack
    with pytest.raises(Unstackable):  # 8 points for 8 agents, or one per run? not told apart
        StackedCosts([LinearOverride(RendezvousQuadratic(np.zeros((8, 2))), 1, g) for g in ([1.0, 0], [0, 1.0])],
                      4).gradient(np.arange(8), x[:, 0])
    one_agent = stacked.gradient(2, x[:, 0])  # one agent's point on every run: each candidate's runs
    np.testing.assert_array_equal(one_agent, np.concatenate([fams[0].gradient(2, x[:4, 0]),
                                                             fams[1].gradient(2, x[4:, 0])]))


def _late_read_ahead_runs(sc, runs: int) -> EngineRuns:
    """As :func:`_read_ahead_runs`, but the reads of later rounds start in round 3 (agent 1 reads agent 0's message
    of round ``t + 2``, agent 2 agent 1's of round ``t + 1``): the passes after the second change nothing
    before round 3."""
    n, horizon = sc.problem.num_agents, sc.horizon
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    senders = []
    for t in range(1, horizon + 1):
        s = np.where(weights > 0, t, 0)
        if t >= 3:
            s[1, 0], s[2, 1] = min(t + 2, horizon), min(t + 1, horizon)
        senders.append(s)
    sched = RealizedSchedule.from_dense([weights] * horizon, senders)
    y = np.random.default_rng(7).normal(size=(runs, horizon, n, sc.problem.dim))
    return EngineRuns("batch", tuple(range(runs)), {"y": y}, (sched,) * runs, False)


@pytest.mark.parametrize("case", ["late reads ahead", "round adjacency 0", "round adjacency 1", "one agent"])
def test_passes_resumed_where_a_changed_message_is_first_read_ahead_give_the_plain_constructions_values(
        case, monkeypatch):
    """Constructions that take repeated passes: the passes after the second resume at the first round that
    reads ahead a message the previous pass changed, and stop as soon as no such read is left (no pass only to
    see that nothing changes); the transcript and its losses are the plain path's, entry for entry."""
    import accounting.scheduled_replay as sr
    import asyncdp.privacy.constructed as constructed
    from asyncdp.papers.dpsda.rule import DPSDAC

    if case == "late reads ahead":  # every agent pinned, a chain of reads ahead from round 3 on
        sc = small_example()[0].scenario
        runs = _late_read_ahead_runs(sc, 4)
        p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
        pinned = [0, 1, 2]
    elif case.startswith("round adjacency"):  # every agent pinned, asynchronous runs
        sc = DPSDAC.example_scenario().replace(horizon=6, timing=Async(rate=1.0), links=LOSSY)
        fam = candidate_evaluation._family(sc, None)
        (_, t0, g, gp), = fam.extremes(sc, None)[:1]
        p, q = fam.scenarios(sc, t0, g, gp)
        pinned = fam.pinned(sc)
        runs = run_engine(sc, 8, seed=int(case[-1]))
    else:  # one agent, asynchronous runs, the one pass refused
        sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
        p, q = candidate_scenarios(sc, 1, [0.6, -0.8], [-1.0, 0.0])
        pinned = 1
        monkeypatch.setattr(constructed, "_one_pass", lambda runs, p, pinned: None)
        runs = run_engine(sc, 8, seed=0)
    calls = []
    real = sr.scheduled_replay
    monkeypatch.setattr(sr, "scheduled_replay", lambda *a, **k: calls.append(k.get("resume")) or real(*a, **k))
    got_messages, got = constructed_replay(CandidateRuns(runs, range(runs.runs)).runs, p, q, pinned)
    monkeypatch.setattr(sr, "scheduled_replay", real)
    want_messages, passes = _plain_construction(runs, p, pinned)
    want = replay_runs(runs, p, q, algorithm=p.algorithm, messages=want_messages)
    resumed = [r[0] for r in calls if r is not None]
    assert len(calls) == max(2, passes - 1)  # the first pass runs without P' (no losses): then one per change
    assert len(resumed) == max(0, passes - 3)  # the passes after the second resume ...
    if case == "late reads ahead":
        assert passes >= 4 and min(resumed) >= 3  # ... where the first changed message is read ahead
    for c in want_messages:
        np.testing.assert_array_equal(got_messages[c], want_messages[c])
    np.testing.assert_array_equal(got.per_round, want.per_round)
    for c in want.residuals_prime:
        np.testing.assert_array_equal(got.residuals_prime[c], want.residuals_prime[c])


def test_a_candidate_the_stack_refuses_is_evaluated_by_the_plain_construction(monkeypatch):
    fam, sc, runs = _one_agent_case()
    g, gp = [0.6, -0.8], [-1.0, 0.0]
    stacked, rows = constructed_losses(runs, sc, 0, g, gp, max_runs=6)

    def refuse(*args, **kwargs):
        raise ValueError("stacked candidates are replayed as one chunk")

    monkeypatch.setattr(candidate_evaluation, "constructed_replays", refuse)
    plain, rows_plain = constructed_losses(runs, sc, 0, g, gp, max_runs=6)
    _, alone = constructed_replay(CandidateRuns(runs, range(6)).runs, *candidate_scenarios(sc, 0, g, gp), 0)
    assert rows == rows_plain == list(range(6))
    np.testing.assert_array_equal(stacked, plain)
    np.testing.assert_array_equal(plain, alone.losses)


def test_dense_schedules_keep_each_rounds_gather_index_for_every_slice():
    from accounting.round_gather import gather_index

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 6, seed=1)
    dense = DenseSchedules(tuple(runs.schedules[r] for r in range(6)), sc.horizon)
    for t in range(1, sc.horizon + 1):
        for part in (dense, dense[2:5], dense[1:][1:3]):
            got, want = part.gather_index(t), gather_index(part.dense_runs(t)[1])
            assert part.gather_index(t) is got  # kept
            for name in ("rr", "idx", "jj", "ii", "used"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
            assert got.any_used == want.any_used


@pytest.mark.parametrize("case", [_one_agent_case, _round_case], ids=["one agent, async", "round adjacency"])
def test_any_stack_of_candidates_gets_each_candidates_own_losses(case):
    # a property over the stacked steps: whatever the candidates (their gradients, the changed round), each one's
    # losses in the stack are those of its own construction and replay, entry for entry
    from hypothesis import given, settings
    from hypothesis import strategies as st

    fam, sc, runs = case()
    prepared = CandidateRuns(runs, fam.rows(runs, 4))
    base = candidate_pairs._bound_base(sc)
    n = sc.problem.dim
    vec = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=n, max_size=n)
    rounds = st.sampled_from(fam.rounds) if fam.rounds else st.none()

    @settings(max_examples=8, deadline=None)
    @given(st.lists(st.tuples(rounds, vec, vec), min_size=1, max_size=4))
    def check(drawn):
        chosen = [(t0, g, gp) for t0, u, v in drawn for g, gp in [fam.scaled(u, v)] if g is not None and gp is not None]
        if not chosen:
            return
        stacked = constructed_replays(prepared.runs, [fam.candidate(base, sc, *c) for c in chosen], fam.pinned(sc))
        for c, (losses, per_round) in zip(chosen, stacked):
            _, alone = constructed_replay(prepared.runs, *fam.scenarios(sc, *c), fam.pinned(sc))
            np.testing.assert_array_equal(losses, alone.losses)
            np.testing.assert_array_equal(per_round, alone.per_round)

    check()


def _three_agent_lockstep():
    sc = small_example()[0].scenario
    runs = run_engine(sc, 6, seed=4)
    return sc, CandidateRuns(runs, range(6))


def test_candidates_pinned_to_different_agents_in_one_stack_get_their_own_replays_losses():
    sc, prepared = _three_agent_lockstep()
    base = candidate_pairs._bound_base(sc)
    chosen = [(j, t0, g, gp) for j in (1, 2, 0)
              for _, t0, g, gp in candidate_evaluation._family(sc, j).extremes(sc, None)[:2]]
    stacked = constructed_replays(prepared.runs, [candidate_evaluation._family(sc, j).candidate(base, sc, t0, g, gp)
                                                  for j, t0, g, gp in chosen], 1, pins=[j for j, *_ in chosen])
    for (j, _, g, gp), (losses, per_round) in zip(chosen, stacked):
        _, alone = constructed_replay(prepared.runs, *candidate_scenarios(sc, j, g, gp), j)
        np.testing.assert_array_equal(losses, alone.losses)
        np.testing.assert_array_equal(per_round, alone.per_round)
    assert len({stacked[k][0].tobytes() for k in range(len(chosen))}) > 1  # something to tell apart


def test_per_candidate_pins_need_one_per_candidate_and_a_one_pass_construction():
    sc, prepared = _three_agent_lockstep()
    fam = candidate_evaluation._family(sc, 1)
    one = fam.candidate(candidate_pairs._bound_base(sc), sc, *fam.extremes(sc, None)[0][1:])
    with pytest.raises(ValueError, match="pins: 2 agents for 1 candidates"):
        constructed_replays(prepared.runs, [one], 1, pins=[1, 2])
    asynchronous = sc.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(asynchronous, 10, seed=6)
    from asyncdp.privacy.constructed import _one_pass

    agent = next((j for j in range(3) if _one_pass(runs, asynchronous, j) != "settled"), None)
    assert agent is not None  # (the lossy asynchronous runs read some agent's message ahead)
    fam_a = candidate_evaluation._family(asynchronous, agent)
    cand = fam_a.candidate(candidate_pairs._bound_base(asynchronous), asynchronous,
                           *fam_a.extremes(asynchronous, None)[0][1:])
    with pytest.raises(ValueError, match="one pass settles each"):
        constructed_replays(runs, [cand], agent, pins=[agent])


def _asynchronous_candidates(seed):
    """Lossy asynchronous runs on which every agent's one pass is ``"pinned"`` (other agents read its messages
    ahead), and two extremal candidates of each agent."""
    from asyncdp.privacy.constructed import _one_pass

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    prepared = CandidateRuns(run_engine(sc, 8, seed=seed), range(8))
    base = candidate_pairs._bound_base(sc)
    assert [_one_pass(prepared.runs, base, j) for j in range(3)] == ["pinned"] * 3
    chosen = [(j, t0, g, gp) for j in (1, 2, 0)
              for _, t0, g, gp in candidate_evaluation._family(sc, j).extremes(sc, None)[:2]]
    cands = [candidate_evaluation._family(sc, j).candidate(base, sc, t0, g, gp) for j, t0, g, gp in chosen]
    return sc, prepared, chosen, cands


@pytest.mark.parametrize("seed", [0, 6])
def test_candidates_pinned_to_different_agents_stack_under_asynchronous_reads_ahead(seed):
    """Where one pass gives each pinned agent's settled values (``"pinned"``: only other agents read its
    messages ahead), candidates of different agents stack in one replay, each with its own replay's values."""
    sc, prepared, chosen, cands = _asynchronous_candidates(seed)
    sizes = [8, 3] * 3  # each on its own first runs, as the search's riders are
    stacked = constructed_replays(prepared.runs, cands, 1, pins=[j for j, *_ in chosen], sizes=sizes)
    for (j, _, g, gp), (losses, per_round), size in zip(chosen, stacked, sizes):
        _, alone = constructed_replay(prepared.prefix(size), *candidate_scenarios(sc, j, g, gp), j)
        np.testing.assert_array_equal(losses, alone.losses)
        np.testing.assert_array_equal(per_round, alone.per_round)
    assert len({stacked[k][0].tobytes() for k in range(len(chosen))}) == len(chosen)  # something to tell apart


def test_a_stack_of_agents_whose_one_pass_moves_another_agent_is_refused(monkeypatch):
    """A block whose other agents' releases move on the one pass would take more passes in its own replay: the
    stack of several pinned agents is refused (its callers then replay each agent's candidates on their own)."""
    import asyncdp.privacy.constructed as constructed

    checked = []
    real = constructed._others_unmoved

    def moved(out, pinned):
        checked.append(np.asarray(pinned.agents).copy())
        return False if isinstance(pinned, constructed._RunChecks) else real(out, pinned)

    monkeypatch.setattr(constructed, "_others_unmoved", moved)
    _, prepared, chosen, cands = _asynchronous_candidates(0)
    with pytest.raises(ValueError, match="one pass settles each"):
        constructed_replays(prepared.runs, cands, 1, pins=[j for j, *_ in chosen])
    np.testing.assert_array_equal(checked[0], np.repeat([j for j, *_ in chosen], 8))  # each run's own agent


def test_other_agents_stacked_losses_are_each_agents_own_evaluations(monkeypatch):
    sc, _ = _three_agent_lockstep()
    runs = run_engine(sc, 6, seed=4)
    fams = [candidate_evaluation._family(sc, j) for j in (1, 2)]
    extremes = [f.extremes(sc, None) for f in fams]
    objective = search_objective._objective_of(small_example()[1], sc)
    stacked_runs = CandidateRuns(runs, range(6))
    calls = []
    real = constructed_replays
    for module in (other_agent_pairs, candidate_evaluation):  # the stacked replays, then _evaluate_all's
        monkeypatch.setattr(module, "constructed_replays", lambda *a, **k: calls.append(1) or real(*a, **k))
    other_agent_pairs._stack_other_agents(fams, extremes, stacked_runs, sc)
    replays = len(calls)
    together = [candidate_evaluation._evaluate_all(f, stacked_runs, sc, e, other_agent_pairs._OTHER_AGENT_RUNS,
                                                   objective, None) for f, e in zip(fams, extremes)]
    assert len(calls) == replays  # every candidate was known: nothing replayed again
    assert replays < len(fams)  # both agents' candidates in fewer replays than one per agent
    apart = [candidate_evaluation._evaluate_all(f, CandidateRuns(runs, range(6)), sc, e,
                                                other_agent_pairs._OTHER_AGENT_RUNS, objective, None)
             for f, e in zip(fams, extremes)]
    assert together == apart and sum(map(len, apart)) == sum(map(len, extremes))


def test_run_pins_must_name_one_agent_per_run():
    from accounting.errors import AccountingError
    from accounting.replay_inputs import RunPins

    sc = small_example()[0].scenario
    runs = run_engine(sc, 4, seed=1)
    with pytest.raises(AccountingError, match="RunPins needs one agent in 0..2 per run"):
        replay_runs(runs, sc, algorithm=sc.algorithm.bind(sc.problem), pin_agent=RunPins(np.array([0, 1, 3, 0])))


def test_stacked_costs_of_candidates_changing_different_agents_answer_each_ones_gradients():
    from asyncdp.privacy.stacked_costs import StackedCosts, Unstackable
    from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic

    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.5], [-1.0, 2.0]])
    fams = [LinearOverride(base, 1, [1.0, -2.0]), LinearOverride(base, 2, [0.5, 3.0]), LinearOverride(base, 0, [-1, 1])]
    stacked = StackedCosts(fams, 3)
    assert stacked._linear is not None and stacked._linear.kind == "agents"  # answered in one call
    x = np.random.default_rng(1).normal(size=(9, 3, 2))
    agents = np.arange(3)
    want = np.concatenate([f.gradient(agents, x[3 * k:3 * k + 3]) for k, f in enumerate(fams)])
    np.testing.assert_array_equal(stacked.gradient(agents, x), want)
    assert stacked.gradient(agents, x)[4, 2].tolist() == [0.5, 3.0]  # run 4: the second candidate's agent 2
    some = np.array([2, 2, 0])  # (agents repeated, one missing: each run's columns of its own agent)
    np.testing.assert_array_equal(stacked.gradient(some, x), np.concatenate(
        [f.gradient(some, x[3 * k:3 * k + 3]) for k, f in enumerate(fams)]))
    np.testing.assert_array_equal(stacked.gradient(1, x[:, 1]),
                                  np.concatenate([f.gradient(1, x[3 * k:3 * k + 3, 1]) for k, f in enumerate(fams)]))
    assert stacked.num_agents == 3
    with pytest.raises(Unstackable):
        getattr(stacked, "agent")  # noqa: B009 - differs between the candidates


def _shaped_runs(runs, horizon, agents, dim, unicast=False):
    """What :func:`~asyncdp.privacy.constructed.stack_size` reads of engine runs: their count and message shape."""
    from types import SimpleNamespace

    shape = (runs, horizon, agents, agents, dim) if unicast else (runs, horizon, agents, dim)
    return SimpleNamespace(runs=runs, unicast=unicast, messages={"x": np.empty(shape)})


@pytest.mark.parametrize("horizon", [50, 100, 200, 400])
def test_the_stack_keeps_both_budgets_and_the_replays_do_not_multiply_with_the_horizon(horizon):
    """huang2015 at N=50, d=10, 8 runs (the search's): each stacked replay walks all T rounds at a fixed cost per
    round, so a stack that shrank as 1/T made the replays' count grow with T and the search's cost with T^2 (one
    budget for both shapes gave 2 candidates a stack at T=100 and 1 at T=200). The per-round gather keeps its
    budget (one chunk); the kept rounds have their own."""
    from asyncdp.privacy.constructed import STACK_ENTRIES, STACK_HORIZON_ENTRIES, stack_size

    runs, agents, dim = 8, 50, 10
    size = stack_size(_shaped_runs(runs, horizon, agents, dim))
    assert size * runs * agents * agents * dim <= STACK_ENTRIES
    assert size == 1 or size * runs * horizon * agents * dim <= STACK_HORIZON_ENTRIES
    # the largest stack both budgets allow: one more candidate breaks one of them
    assert (size + 1) * runs * agents * agents * dim > STACK_ENTRIES or \
        (size + 1) * runs * horizon * agents * dim > STACK_HORIZON_ENTRIES
    assert size == min(STACK_ENTRIES // (runs * agents * agents * dim),
                       STACK_HORIZON_ENTRIES // (runs * horizon * agents * dim)) or size == 1
    if horizon <= 200:  # 800k kept entries a candidate at T=200: at least 5 to a stack (the one budget gave 1)
        assert size >= 5


def test_a_unicast_stack_counts_every_links_message():
    from asyncdp.privacy.constructed import STACK_ENTRIES, STACK_HORIZON_ENTRIES, stack_size

    runs, horizon, agents, dim = 4, 30, 10, 3
    size = stack_size(_shaped_runs(runs, horizon, agents, dim, unicast=True))
    width = agents * dim
    assert size == min(STACK_ENTRIES // (runs * agents * agents * width),
                       STACK_HORIZON_ENTRIES // (runs * horizon * agents * width))


def test_the_search_finds_the_same_pair_whatever_the_stack_holds(monkeypatch):
    """The stack's budgets decide only how the candidates are grouped into replays: every candidate gets its own
    replay's values, so the search's evidence is the same with one candidate a replay."""
    import asyncdp.privacy.constructed as constructed
    from asyncdp.privacy.worst_case import search_worst_case

    grouped = search_worst_case(*small_example(runs=40, search_examples=4))
    monkeypatch.setattr(constructed, "STACK_HORIZON_ENTRIES", 1)
    alone = search_worst_case(*small_example(runs=40, search_examples=4))
    assert grouped.figures == alone.figures and grouped.witness == alone.witness
    assert grouped.reasons == alone.reasons


def test_lockstep_runs_too_many_to_keep_every_runs_rounds_keep_the_one_pass_construction(monkeypatch):
    """Runs sharing one schedule keep ``T x N x N`` rounds (the shared schedule's), not ``T x R x N x N``: above
    DENSE_CACHE_ENTRIES for the runs but not for one schedule, they are still read as DenseSchedules (nothing kept
    per run), so a lockstep construction still settles in one pass. They were read as recorded instead: every
    candidate took two construction passes (huang2015 at N=50, T=200, 16 runs: 8e6 entries), and candidates pinned
    to different agents no longer stacked. The losses are the same either way."""
    import accounting.scheduled_replay as sr
    import asyncdp.privacy.constructed as constructed

    sc = small_example()[0].scenario
    runs = run_engine(sc, 9, seed=4)
    n = sc.problem.num_agents
    p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    want, want_rounds = constructed_replays(CandidateRuns(runs, range(9)).runs, [(p, q)], 0)[0]
    passes = []
    real = sr.scheduled_replay
    monkeypatch.setattr(sr, "scheduled_replay", lambda *a, **k: passes.append(1) or real(*a, **k))
    monkeypatch.setattr(constructed, "DENSE_CACHE_ENTRIES", sc.horizon * 9 * n * n - 1)  # every run's: no room
    cand = CandidateRuns(runs, range(9))
    assert isinstance(cand.runs.schedules, DenseSchedules)
    (got, got_rounds), = constructed_replays(cand.runs, [(p, q)], 0)
    assert len(passes) == 1  # one pass settles a lockstep construction
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_rounds, want_rounds)
    for t in range(1, sc.horizon + 1):  # asked for every run's rounds, copies or gather index: given, not kept
        cand.runs.schedules.dense_runs(t), cand.runs.schedules.tiled_round(t, 3), cand.runs.schedules.gather_index(t)
    assert not any(isinstance(k, int) or (isinstance(k, tuple) and k[0] in ("tiled", "index"))
                   for k in cand.runs.schedules._cache)
    monkeypatch.setattr(constructed, "DENSE_CACHE_ENTRIES", sc.horizon * n * n - 1)  # not even one schedule's
    assert not isinstance(CandidateRuns(runs, range(9)).runs.schedules, DenseSchedules)


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_lockstep_runs_past_the_dense_budget_get_the_recorded_readings_losses(mode, monkeypatch):
    """Lockstep runs sharing one schedule, read as DenseSchedules that keep nothing per run (past
    DENSE_CACHE_ENTRIES), as DenseSchedules keeping every run's rounds, and as recorded (not even one schedule's
    rounds fit): the same losses to the bit. Unicast replays gather every round (no shared round), so they read
    the rounds the DenseSchedules compute again on each call."""
    import asyncdp.privacy.constructed as constructed

    sc = small_example()[0].scenario.replace(mode=mode)
    runs = run_engine(sc, 9, seed=2)
    assert runs.unicast == (mode == "unicast")
    n = sc.problem.num_agents
    p, q = candidate_scenarios(sc, 0, [0.6, -0.8], [-1.0, 0.0])
    got = {}
    for name, budget in [("kept", None), ("not kept", sc.horizon * 9 * n * n - 1), ("recorded", sc.horizon * n * n - 1)]:
        if budget is not None:
            monkeypatch.setattr(constructed, "DENSE_CACHE_ENTRIES", budget)
        cand = CandidateRuns(runs, range(9))
        assert isinstance(cand.runs.schedules, DenseSchedules) == (name != "recorded")
        got[name] = constructed_replays(cand.runs, [(p, q), (q, p)], 0)
    for name in ("not kept", "recorded"):
        for (losses, rounds), (want, want_rounds) in zip(got[name], got["kept"]):
            np.testing.assert_array_equal(losses, want)
            np.testing.assert_array_equal(rounds, want_rounds)


def test_runs_each_with_its_own_schedule_past_the_dense_budget_are_read_as_recorded(monkeypatch):
    """Only runs sharing one schedule object keep ``T x N x N`` rounds once: asynchronous runs over lossy links
    each have their own schedule, so past DENSE_CACHE_ENTRIES for all of them they are read as recorded even
    when one run's rounds would fit (DenseSchedules would rebuild every run's rounds on each call)."""
    import asyncdp.privacy.constructed as constructed

    sc = small_example()[0].scenario.replace(timing=Async(rate=1.0), links=LOSSY)
    runs = run_engine(sc, 6, seed=1)
    n = sc.problem.num_agents
    monkeypatch.setattr(constructed, "DENSE_CACHE_ENTRIES", sc.horizon * 6 * n * n - 1)
    assert not isinstance(CandidateRuns(runs, range(6)).runs.schedules, DenseSchedules)
    monkeypatch.setattr(constructed, "DENSE_CACHE_ENTRIES", sc.horizon * 6 * n * n)
    assert isinstance(CandidateRuns(runs, range(6)).runs.schedules, DenseSchedules)

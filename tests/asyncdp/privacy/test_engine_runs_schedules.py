"""The checker reads the batch engine's schedules of all runs at once (``BatchResult.schedules()``), never run by run.

Each test compares the columns path with the per-run path it replaced (``batch.schedule(r)`` for every run):
the same schedules, the same replay to the bit, and the same privacy report; and the per-run path is made to
raise while the check runs, so a return to it fails here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from asyncdp import Async, Deadline, Huang2015, LinkModel, Links, LogNormalLatency, load_script
from asyncdp.engine.batch_engine import BatchResult
from asyncdp.engine.links import ExponentialLatency
from asyncdp.engine.schedule import RealizedSchedule, RealizedSchedules
from asyncdp.privacy import behavior, check_privacy, context
from asyncdp.privacy.behavior import EngineRuns, replay_runs, run_engine, run_seeds

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_rendezvous.py"
LOSSY = Links(LinkModel(LogNormalLatency(0.2, 0.5), loss=0.1), {(1, 0): LinkModel(ExponentialLatency(0.5),
                                                                                  reorder=True)})
BASE = Huang2015.example_scenario(seed=3)
TIMED = {
    "async": BASE.replace(timing=Async(rate=1.0, staleness=2), links=LOSSY),
    "async unicast": BASE.replace(timing=Async(rate=2.0), links=LOSSY, mode="unicast"),
    "deadline stale": BASE.replace(timing=Deadline(deadline=0.5, drift=0.3, missing="stale"), links=LOSSY),
}


def _per_run(scenario, runs, *, seed=0, side=0, **kw):
    """The per-run path this module guards against: ``batch.schedule(r)`` for every run (the old ``run_engine``)."""
    out = _ORIGINAL(scenario, runs, seed=seed, side=side, **kw)
    if out.engine != "batch" or isinstance(out.schedules, tuple):
        return out
    batch = scenario.replace(seed=run_seeds(seed, side, runs)[0]).run("batch", runs=runs, keep="all",
                                                                       transcripts=True)
    return EngineRuns(out.engine, out.seeds, out.messages, tuple(batch.schedule(r) for r in range(runs)),
                      out.unicast, out.noise)


_ORIGINAL = run_engine


def _no_per_run_schedules(monkeypatch):
    def refuse(self, r):
        raise AssertionError(f"BatchResult.schedule({r}) called: the checker rebuilt a run's schedule")

    monkeypatch.setattr(BatchResult, "schedule", refuse)


@pytest.mark.parametrize("case", sorted(TIMED))
def test_engine_runs_hold_every_runs_schedule_as_columns(case, monkeypatch):
    sc = TIMED[case]
    expected = _per_run(sc, 6, seed=4, side=1)
    _no_per_run_schedules(monkeypatch)
    runs = run_engine(sc, 6, seed=4, side=1)
    assert runs.engine == "batch" and isinstance(runs.schedules, RealizedSchedules)
    assert list(runs.schedules) == list(expected.schedules)
    assert len({len(s) for s in expected.schedules}) > 1  # the runs' schedules differ: the run order matters
    for name in expected.messages:
        np.testing.assert_array_equal(runs.messages[name], expected.messages[name])
    adj = sc.replace(problem=sc.problem.adjacent(0, address=[-1.0, -1.0])) if case != "async unicast" else None
    fast, slow = replay_runs(runs, sc, adj), replay_runs(expected, sc, adj)
    for name in slow.residuals:
        np.testing.assert_array_equal(fast.residuals[name], slow.residuals[name])
    if adj is not None:
        np.testing.assert_array_equal(fast.per_round, slow.per_round)
        assert np.isfinite(fast.losses).all() and np.ptp(fast.losses) > 0


def test_lockstep_lossless_runs_share_one_schedule(monkeypatch):
    _no_per_run_schedules(monkeypatch)
    runs = run_engine(BASE, 5, seed=2)
    assert isinstance(runs.schedules, tuple) and all(s is runs.schedules[0] for s in runs.schedules)
    assert runs.schedules[0] == BASE.run(engine="batch", runs=2).schedules()[1]


def test_views_of_the_columns_are_the_runs_schedules():
    batch = TIMED["async"].run(engine="batch", runs=4)
    every = batch.schedules()
    for r, view in enumerate(every):
        rebuilt = RealizedSchedule(*(getattr(view, a) for a in ("num_agents", "horizon", "round", "receiver",
                                                                 "sender", "weight", "sender_round")))
        assert view == rebuilt and view.max_age == rebuilt.max_age
        for t in (1, batch.horizon):
            w, src = every.dense_runs(t)
            np.testing.assert_array_equal(w[r], rebuilt.dense(t)[0])
            np.testing.assert_array_equal(src[r], rebuilt.dense(t)[1])
            assert view.matrix(t).nnz == rebuilt.matrix(t).nnz


@pytest.mark.parametrize("timing", ["async", "deadline"])
def test_the_check_gives_the_same_report_without_per_run_schedules(timing, monkeypatch):
    ex = load_script(EXAMPLE, names=("scenario", "adjacent"))
    chosen = Async(rate=1.0) if timing == "async" else Deadline(period=1.0, deadline=0.8, drift=0.05,
                                                                missing="renormalize")
    links = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
    sc, adj = (ex[k].replace(timing=chosen, links=links, horizon=12) for k in ("scenario", "adjacent"))
    with monkeypatch.context() as m:  # before: every run's schedule rebuilt one by one
        m.setattr(context, "run_engine", _per_run)
        m.setattr(behavior, "run_engine", _per_run)
        before = check_privacy(sc, adj, runs=80, search_examples=3).to_dict()
    _no_per_run_schedules(monkeypatch)
    after = check_privacy(sc, adj, runs=80, search_examples=3).to_dict()
    assert after["engine"] == "batch" and after["replay_runs"] == 80
    assert after == before


def test_runs_sharing_one_schedule_replay_as_one_batch_exactly_as_one_by_one():
    """Lockstep runs share one schedule object: replayed as a SharedSchedule batch, the residuals under both
    problems and every run's loss equal the replay that reads the schedule run by run (the plain sequence)."""
    from accounting.scheduled_replay import scheduled_replay
    from asyncdp.privacy.behavior import AlgorithmChannelRule, SharedSchedule, declared_noise, replay_runs, run_engine
    from asyncdp.privacy.context import small_example

    pair, ctx = small_example(runs=30)
    runs = run_engine(pair.scenario, 30, seed=2)
    assert len({id(s) for s in runs.schedules}) == 1  # lockstep, lossless: one shared schedule
    batch = replay_runs(runs, pair.scenario, pair.adjacent, algorithm=ctx.algorithm)
    sc, adj = pair.scenario, pair.adjacent

    class OneByOne(list):  # a plain sequence the replay cannot take as a batch (the path before SharedSchedule)
        pass

    plain = scheduled_replay(runs.messages, OneByOne(runs.schedules), declared_noise(ctx.algorithm, sc.horizon),
                             AlgorithmChannelRule(ctx.algorithm, sc.problem, sc.initial_points()),
                             AlgorithmChannelRule(ctx.algorithm, adj.problem, adj.initial_points()))
    assert np.array_equal(batch.per_round, plain.per_round) and np.abs(plain.per_round).max() > 0
    for c in plain.residuals:
        assert np.array_equal(batch.residuals[c], plain.residuals[c], equal_nan=True)
        assert np.array_equal(batch.residuals_prime[c], plain.residuals_prime[c], equal_nan=True)
    half = SharedSchedule(runs.schedules[0], 30)[10:25]
    assert len(half) == 15 and all(a.shape == (15, 3, 3) for a in half.dense_runs(1))


class _Toy:
    """A schedule with stale reads and unused links: receiver ``i`` combines sender ``j``'s round ``src[i, j]``."""

    def dense(self, t):
        w = np.array([[0.5, 0.25, 0.25], [0.0, 0.6, 0.4], [0.3, 0.0, 0.7]])
        src = np.array([[t, max(t - 1, 1), t], [0, t, t], [max(t - 2, 1), 0, t]])
        return w, np.where(w > 0, src, 0)


class _Mean:
    """The replay rule ``x -> mixed / 2 + shift`` (its message is its state)."""

    def __init__(self, shift):
        self.shift = shift

    def initial_state(self, runs):
        return np.zeros((runs, 3, 2))

    def message_means(self, state, t):
        return {"y": state}

    def next_state(self, state, mixed, t):
        return mixed["y"] / 2 + self.shift


@pytest.mark.parametrize("unicast", [False, True])
def test_a_shared_schedule_gathers_exactly_what_the_per_run_schedules_gather(unicast):
    """SharedSchedule's gather index (one (N, N) index for every run) against the replay that stacks each run's
    schedule (the plain sequence): the same residuals and losses to the bit, stale reads and unicast included."""
    from accounting.replay_inputs import ChannelNoise
    from accounting.scheduled_replay import scheduled_replay
    from asyncdp.privacy.behavior import SharedSchedule

    runs, horizon = 40, 4
    rng = np.random.default_rng(3)
    shape = (runs, horizon, 3, 3, 2) if unicast else (runs, horizon, 3, 2)
    messages = {"y": rng.normal(size=shape)}
    noise = {"y": ChannelNoise("laplace", np.full(horizon, 0.5))}
    one = _Toy()

    def replay(schedules):
        return scheduled_replay(messages, schedules, noise, _Mean(0.1), _Mean(-0.2), unicast=unicast)

    shared, plain = replay(SharedSchedule(one, runs)), replay([one] * runs)
    assert np.array_equal(shared.per_round, plain.per_round) and np.abs(plain.per_round).max() > 0
    assert np.array_equal(shared.residuals["y"], plain.residuals["y"], equal_nan=True)
    assert np.array_equal(shared.residuals_prime["y"], plain.residuals_prime["y"], equal_nan=True)


@pytest.mark.parametrize("width", [1, 2, 5])
@pytest.mark.parametrize("oddity", [None, "inf", "nan_unread"])
def test_a_shared_round_combines_exactly_what_the_per_run_schedules_combine(width, oddity):
    """The replay's shared-round path (no gather: one column per sender) against the plain sequence, to the bit:
    every message width (d = 1 takes the general path), an infinite message (the general path computes it) and a
    missing message nobody reads (agent 1's round-4 message)."""
    from accounting.replay_inputs import ChannelNoise
    from accounting.scheduled_replay import scheduled_replay
    from asyncdp.privacy.behavior import SharedSchedule

    runs, horizon = 25, 4
    rng = np.random.default_rng(11)
    messages = {"y": rng.normal(size=(runs, horizon, 3, width)) * 10.0 ** rng.uniform(-3, 3, (runs, horizon, 3, 1))}
    if oddity == "inf":
        messages["y"][7, 1, 2, 0] = np.inf  # read by receivers 0 and 1 in round 2
    noise = {"y": ChannelNoise("gaussian", np.full(horizon, 0.7))}

    class Unread(_Toy):  # nobody reads sender 1 in round 4: its round-4 message may be missing
        def dense(self, t):
            w, src = super().dense(t)
            if t == 4:
                w, src = w.copy(), src.copy()
                w[0, 0] += w[0, 1]
                w[0, 1], src[0, 1] = 0.0, 0
                w[1, 1] = 0.0  # nor does agent 1 itself
            return w, src

    one = Unread() if oddity == "nan_unread" else _Toy()
    if oddity == "nan_unread":
        messages["y"][:, 3, 1] = np.nan

    class Wide(_Mean):
        def initial_state(self, runs):
            return np.zeros((runs, 3, width))

    def replay(schedules):
        return scheduled_replay(messages, schedules, noise, Wide(0.1), Wide(-0.2))

    shared, plain = replay(SharedSchedule(one, runs)), replay([one] * runs)
    assert np.array_equal(shared.per_round, plain.per_round, equal_nan=True)
    finite = np.isfinite(plain.per_round[:, :3])
    assert finite.all() if oddity != "inf" else not finite[7].all() and finite[:7].all()
    assert np.nanmax(np.abs(plain.per_round[:, :3])) > 0
    assert np.array_equal(shared.residuals["y"], plain.residuals["y"], equal_nan=True)
    assert np.array_equal(shared.residuals_prime["y"], plain.residuals_prime["y"], equal_nan=True)


def test_a_shared_schedule_names_a_missing_message_as_the_per_run_schedules_do():
    from accounting.errors import AccountingError
    from accounting.replay_inputs import ChannelNoise
    from accounting.scheduled_replay import scheduled_replay
    from asyncdp.privacy.behavior import SharedSchedule

    runs, horizon = 5, 3
    messages = {"y": np.random.default_rng(4).normal(size=(runs, horizon, 3, 2))}
    messages["y"][3, 0, 1] = np.nan  # run 3: agent 1's round-1 message is missing; agent 0 combines it in round 2
    noise = {"y": ChannelNoise("laplace", np.full(horizon, 0.5))}
    errors = []
    for schedules in (SharedSchedule(_Toy(), runs), [_Toy()] * runs):
        with pytest.raises(AccountingError) as exc:
            scheduled_replay(messages, schedules, noise, _Mean(0.0))
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "run 3" in errors[0]


@pytest.mark.parametrize("width", [1, 3])
def test_rounds_every_run_has_alike_replay_as_the_general_path_does(monkeypatch, width):
    """A batch whose runs happen to combine alike (equal (W, S) in every run, found by value) is combined as one
    shared round: the same residuals and losses, to the bit, as the general gather (forced by a threshold no batch
    reaches), stale reads and unused links included."""
    import accounting.replay_chunk as chunk
    from accounting.replay_inputs import ChannelNoise
    from accounting.scheduled_replay import scheduled_replay

    runs, horizon = 40, 4
    rng = np.random.default_rng(5)
    messages = {"y": rng.normal(size=(runs, horizon, 3, width))}
    noise = {"y": ChannelNoise("laplace", np.full(horizon, 0.5))}

    class Wide(_Mean):
        def initial_state(self, runs):
            return np.zeros((runs, 3, width))

    def replay():
        return scheduled_replay(messages, [_Toy() for _ in range(runs)], noise, Wide(0.1), Wide(-0.2))

    found = replay()
    monkeypatch.setattr(chunk, "_SHARED_RUNS", 10**9)
    general = replay()
    assert np.abs(general.per_round).max() > 0
    assert np.array_equal(found.per_round, general.per_round)
    assert np.array_equal(found.residuals["y"], general.residuals["y"], equal_nan=True)
    assert np.array_equal(found.residuals_prime["y"], general.residuals_prime["y"], equal_nan=True)


def test_a_kept_shared_round_is_keyed_by_value_and_owns_its_arrays():
    """shared_round keeps one SharedRound per (W, S) value: equal rounds share it, a changed W gets its own, and a
    later change of the caller's arrays does not reach the kept one."""
    from accounting.shared_rounds import shared_round

    w = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    src = np.where(w > 0, 2, 0)
    first = shared_round(w, src)
    assert shared_round(w.copy(), src.copy()) is first
    y = np.random.default_rng(0).normal(size=(4, 3, 3, 2))
    want = first.others(y)
    w[1, 0] = 9.0  # the caller's array changes: the kept round does not
    assert shared_round(w, src) is not first
    assert np.array_equal(first.others(y), want)
    assert np.array_equal(want[:, 1], 0.25 * y[:, 1, 0] + 0.25 * y[:, 1, 2])


def test_the_kept_shared_rounds_stay_within_their_byte_budget_and_are_read_only():
    """Many distinct rounds evict the oldest (the kept bytes never exceed the budget); a round too large to keep
    is made but not kept; a kept round's arrays cannot be written."""
    import accounting.shared_rounds as sr

    n = 60  # about 0.14 MiB per round
    rng = np.random.default_rng(1)
    first = None
    for k in range(600):  # about 85 MiB of rounds against the 64 MiB budget
        w = np.full((n, n), 1.0 / n)
        w[0, 0] += k * 1e-9
        got = sr.shared_round(w, np.ones((n, n), dtype=np.int64))
        first = got if first is None else first
        assert sr._SHARED_SIZE["bytes"] <= sr._SHARED_KEPT_BYTES
    assert sum(size for _, size in sr._SHARED_KEPT.values()) == sr._SHARED_SIZE["bytes"]
    w0 = np.full((n, n), 1.0 / n)
    assert sr.shared_round(w0, np.ones((n, n), dtype=np.int64)) is not first  # the oldest was evicted
    assert not first.w.flags.writeable and not first.src.flags.writeable
    big = rng.random((500, 500))  # about 9.5 MiB with its key: more than an eighth of the budget
    src = np.ones((500, 500), dtype=np.int64)
    assert sr.shared_round(big, src) is not sr.shared_round(big, src)

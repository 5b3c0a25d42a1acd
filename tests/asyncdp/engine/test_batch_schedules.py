"""``BatchResult.schedules()``: every run's realized schedule at once, equal to the per-run ``schedule(r)``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from asyncdp import Huang2015
from asyncdp.engine.links import ExponentialLatency, LinkModel, Links, LogNormalLatency
from asyncdp.engine.schedule import RealizedSchedule, RealizedSchedules
from asyncdp.engine.timing import Async, Deadline, Lockstep
from asyncdp.errors import ScenarioError

BASE = Huang2015.example_scenario(seed=3)
LOSSY = Links(LinkModel(LogNormalLatency(0.3, 0.6), loss=0.3), {(1, 0): LinkModel(ExponentialLatency(0.5), reorder=True)})
CASES = {
    "async": BASE.replace(timing=Async(rate=1.0, staleness=2), links=LOSSY),
    "async unicast": BASE.replace(timing=Async(rate=2.0), links=LOSSY, mode="unicast"),
    "deadline stale": BASE.replace(timing=Deadline(deadline=0.5, drift=0.3, missing="stale"), links=LOSSY),
    "lockstep lossy": BASE.replace(timing=Lockstep("renormalize"), links=LOSSY),
    "lockstep lossless": BASE,
    "lockstep unicast": BASE.replace(mode="unicast"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_schedules_equal_the_per_run_schedules(case):
    batch = CASES[case].run(engine="batch", runs=7)
    every = batch.schedules()
    assert isinstance(every, RealizedSchedules) and len(every) == every.runs == 7
    singles = [batch.schedule(r) for r in range(7)]
    assert list(every) == singles
    assert every[6] == singles[6] and every.run(0) == singles[0]
    assert every == RealizedSchedules.stack(singles)
    lengths = [len(s) for s in singles]
    assert np.diff(every.offsets).tolist() == lengths
    assert np.array_equal(every.run_index, np.repeat(np.arange(7), lengths))
    if case.startswith(("async", "deadline", "lockstep lossy")):  # the runs' schedules differ
        assert len({len(s) for s in singles}) > 1 or any(a != singles[0] for a in singles[1:])
    assert pickle.loads(pickle.dumps(every)) == every
    assert list(every[2:5]) == singles[2:5] and list(every[::3]) == singles[::3] and len(every[7:]) == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_round_of_the_dense_runs_is_each_runs_dense_round(case):
    # the rounds are grouped once (flat indices, round bounds) and every later round reads the grouping: each
    # round, in any order of calls, is what each run's own schedule gives
    batch = CASES[case].run(engine="batch", runs=7)
    every, singles = batch.schedules(), [batch.schedule(r) for r in range(7)]
    for t in [batch.horizon, 1, *range(2, batch.horizon)]:
        w, src = every.dense_runs(t)
        assert w.shape == src.shape == (7, every.num_agents, every.num_agents) and src.dtype == np.int64
        for r, single in enumerate(singles):
            np.testing.assert_array_equal(w[r], single.dense(t)[0])
            np.testing.assert_array_equal(src[r], single.dense(t)[1])
    with pytest.raises(ScenarioError, match=f"round must be <= {batch.horizon}"):
        every.dense_runs(batch.horizon + 1)


def test_run_zero_of_the_columns_is_the_simpy_schedule():
    sc = CASES["async"]
    assert sc.run(engine="batch", runs=3).schedules()[0] == sc.run().schedule


def test_refusals_and_validation():
    with pytest.raises(ScenarioError, match="keep='all'"):
        CASES["async"].run(engine="batch", runs=2, keep="final").schedules()
    every = CASES["deadline stale"].run(engine="batch", runs=2).schedules()
    with pytest.raises(ScenarioError, match=r"run must be < 2 \(the number of runs\), got 2"):
        every[2]
    cols = every._columns()[1:]
    with pytest.raises(ScenarioError, match="offsets must rise from 0"):
        RealizedSchedules(every.num_agents, every.horizon, [0, 5], *cols)
    with pytest.raises(ScenarioError, match="one length"):
        RealizedSchedules(every.num_agents, every.horizon, every.offsets, *cols[:-1], cols[-1][:-1])
    with pytest.raises(ScenarioError, match="no schedules"):
        RealizedSchedules.stack([])
    one = RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)])
    other = RealizedSchedule.from_dense([np.eye(3)], [np.eye(3, dtype=int)])
    with pytest.raises(ScenarioError, match="different num_agents or horizon"):
        RealizedSchedules.stack([one, other])

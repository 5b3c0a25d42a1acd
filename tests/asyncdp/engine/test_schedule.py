"""The realized schedule: its record, and the premise exact replay rests on.

Premise (asyncdp.privacy.behavior): the schedule of a run is drawn from the
link and clock streams only, so it does not change when the private data or
the privacy noise change.
"""

from __future__ import annotations

import numpy as np
import pytest

import topology
from asyncdp import Huang2015, Scenario, rendezvous_problem
from asyncdp import Lockstep
from asyncdp.engine.links import Links, LinkModel, LogNormalLatency
from asyncdp.engine.schedule import RealizedSchedule
from asyncdp.engine.timing import Async, Deadline
from asyncdp.errors import ScenarioError
from asyncdp.noise import SeededNoise


def _scenario(timing, links=None, seed=4):
    problem = rendezvous_problem([[1.0, 1.0], [0.0, 0.5], [-0.5, 0.0], [0.3, -0.8]])
    w = topology.static(np.array([[0.4, 0.2, 0.2, 0.2], [0.2, 0.4, 0.2, 0.2], [0.2, 0.2, 0.4, 0.2],
                                  [0.2, 0.2, 0.2, 0.4]]))
    return Scenario(problem, w, Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.6), horizon=8, seed=seed,
                    timing=timing, links=links or Links())


LOSSY = Links(LinkModel(latency=LogNormalLatency(median=0.3, sigma=0.8), loss=0.3))
TIMINGS = {
    "deadline-renormalize": (Deadline(period=1.0, missing="renormalize"), LOSSY),
    "deadline-stale": (Deadline(period=1.0, missing="stale"), LOSSY),
    "async-lossy": (Async(rate=1.0), LOSSY),
}


def test_lockstep_schedule_is_the_topology():
    sc = _scenario(Lockstep())
    res = sc.run()
    assert res.schedule == RealizedSchedule.lockstep(sc.topology, sc.horizon)
    for t in range(1, sc.horizon + 1):
        w, rounds = res.schedule.dense(t)
        np.testing.assert_array_equal(w, sc.topology.weights(t).toarray())
        assert set(np.unique(rounds[w > 0])) == {t}


@pytest.mark.parametrize("name", sorted(TIMINGS))
def test_schedule_matches_realized_mixing(name):
    timing, links = TIMINGS[name]
    res = _scenario(timing, links).run()
    for t in range(1, res.horizon + 1):
        np.testing.assert_array_equal(res.schedule.matrix(t).toarray(), res.realized.weights(t).toarray())
    # under deadline timing a receiver can only have received messages of rounds up to its own
    if isinstance(timing, Deadline):
        assert (res.schedule.sender_round <= res.schedule.round).all()


@pytest.mark.parametrize("name", sorted(TIMINGS))
def test_schedule_does_not_depend_on_data_or_noise(name):
    timing, links = TIMINGS[name]
    sc = _scenario(timing, links)
    base = sc.run().schedule
    assert base.max_age >= 0 and len(base) > 0
    other_data = sc.replace(problem=sc.problem.adjacent(0, address=[-1.0, -1.0])).run().schedule
    other_noise = sc.replace(noise=SeededNoise(sc.seed + 1000)).run().schedule
    assert base == other_data
    assert base == other_noise
    # and it does depend on the link/clock seed (the test can fail)
    assert sc.replace(seed=sc.seed + 1, noise=SeededNoise(sc.seed)).run().schedule != base


def test_async_uses_messages_of_other_rounds():
    res = _scenario(Async(rate=1.0), LOSSY).run()
    assert (res.schedule.sender_round != res.schedule.round).any()


def test_bad_columns_raise():
    with pytest.raises(ScenarioError, match="rounds must lie"):
        RealizedSchedule(2, 1, [2], [0], [0], [1.0], [1])
    with pytest.raises(ScenarioError, match="one length"):
        RealizedSchedule(2, 1, [1, 1], [0], [0], [1.0], [1])
    with pytest.raises(ScenarioError, match="round must be <= 1"):
        RealizedSchedule(2, 1, [1], [0], [0], [1.0], [1]).dense(2)


def test_pickle_round_trip():
    import pickle

    res = _scenario(Async(rate=1.0), LOSSY).run()
    assert pickle.loads(pickle.dumps(res.schedule)) == res.schedule


def test_released_messages_are_the_batch_engines_and_the_transcripts():
    """Result.messages holds every release: equal to a one-run batch's, and to the transcript where a link carried it."""
    sc = _scenario(Lockstep()).replace(topology=topology.static(np.array(
        [[0.5, 0.5, 0.0, 0.0], [0.25, 0.5, 0.25, 0.0], [0.0, 0.5, 0.5, 0.0], [0.2, 0.2, 0.2, 0.4]])))
    res = sc.run()
    batch = sc.run("batch", runs=1, transcripts=True)
    np.testing.assert_array_equal(res.messages["y"], batch.messages["y"][0])
    obs = res.transcript.observations("y")
    for (t, i), payload in obs.items():
        np.testing.assert_array_equal(res.messages["y"][t - 1, i], payload)
    assert len(obs) < sc.horizon * 4  # agent 3 sends to nobody: its broadcasts are not on any link
    assert res.messages["y"].shape == (sc.horizon, 4, 2) and not np.isnan(res.messages["y"]).any()
    assert sc.replace(record_transcript=False).run().messages is None

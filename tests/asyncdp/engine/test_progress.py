"""Progress reports of the SimPy engine (``run_simpy(progress=...)``, ``Scenario.run(progress=...)``)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import topology
from asyncdp import Huang2015
from asyncdp.engine.links import LinkModel, Links, LogNormalLatency
from asyncdp.engine.simpy_engine import PROGRESS_REPORTS, run_simpy
from asyncdp.engine.timing import Async, Deadline, Lockstep
from asyncdp.errors import ScenarioError
from asyncdp.problems.problem import rendezvous_problem
from asyncdp.scenario import Scenario

LOSSY = Links(LinkModel(LogNormalLatency(0.1, 0.5), loss=0.1))


def _scenario(n_agents: int, horizon: int, timing, links=None) -> Scenario:
    addresses = np.random.default_rng(0).uniform(-1.0, 1.0, size=(n_agents, 2))
    seq = topology.from_networkx([nx.cycle_graph(n_agents)], "metropolis", periodic=True)
    return Scenario(rendezvous_problem(addresses), seq, Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), timing=timing,
                    links=links or Links(), horizon=horizon, seed=3, record_transcript=False)


@pytest.mark.parametrize("timing, links", [
    (Lockstep(), None),
    (Lockstep(missing="stale"), LOSSY),
    (Deadline(deadline=0.5, missing="renormalize"), LOSSY),
    (Async(rate=2.0), LOSSY),
])
@pytest.mark.parametrize("n_agents, horizon", [(5, 3), (20, 30), (50, 40)])
def test_reports_go_from_zero_to_every_agent_round_and_change_nothing(timing, links, n_agents, horizon):
    sc = _scenario(n_agents, horizon, timing, links)
    calls: list[tuple[int, int]] = []
    with_progress = run_simpy(sc, progress=lambda done, total: calls.append((done, total)))
    total = n_agents * horizon
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    done = [d for d, _ in calls]
    assert all(b > a for a, b in zip(done, done[1:]))  # strictly increasing: no report repeated
    assert {t for _, t in calls} == {total}
    assert len(calls) <= PROGRESS_REPORTS + 2
    steps = np.diff(done)
    assert steps.max() <= max(1, total // PROGRESS_REPORTS)  # never a long silence
    plain = run_simpy(sc)
    np.testing.assert_array_equal(with_progress.trajectory, plain.trajectory)
    np.testing.assert_array_equal(with_progress.times, plain.times)


def test_progress_through_the_scenario_and_refused_by_the_batch_engine():
    sc = _scenario(4, 3, Lockstep())
    calls: list[int] = []
    sc.run(progress=lambda done, total: calls.append(done))
    assert calls[0] == 0 and calls[-1] == 12
    with pytest.raises(ScenarioError, match="progress is a SimPy engine option"):
        sc.run(engine="batch", runs=2, progress=lambda done, total: None)


@pytest.mark.parametrize("bad", [1, "bar", True])
def test_progress_must_be_callable(bad):
    with pytest.raises(ScenarioError, match=f"progress must be a callable progress\\(done, total\\) or None, got {bad!r}"):
        run_simpy(_scenario(4, 3, Lockstep()), progress=bad)

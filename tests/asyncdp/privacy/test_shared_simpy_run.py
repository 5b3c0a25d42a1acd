"""The check's preparation and its engine cross-check share one SimPy run when the ledger draws nothing from the seed.

``prepare`` composes the ledger of one SimPy run; the engine runs compare the batch engine's run 0 with the
SimPy run of its seed. Under lockstep rounds on lossless links with a fixed latency every seed's run releases
the same ledger, so the check reads the ledger from that SimPy run and runs the SimPy engine once for both. These
tests pin the premise (the ledger does not depend on the seed there, and does elsewhere), that the ledger is the
one of the scenario's own seed, and that the cross-check still compares the right run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asyncdp.engine.simpy_engine as simpy_engine
from asyncdp import ConstantLatency, Deadline, LinkModel, Links, LogNormalLatency
from asyncdp.errors import ScenarioError
from asyncdp.privacy.behavior import engine_disagreement, run_engine, run_seeds, seed_free_ledger, simpy_run0
from asyncdp.privacy.context import CheckOptions, prepare, small_example


def _own_seed_ledger(scenario):
    return list(scenario.replace(record_transcript=False).run().ledger)


@settings(max_examples=10, deadline=None)
@given(seed_a=st.integers(0, 2**31 - 1), seed_b=st.integers(0, 2**31 - 1),
       delay=st.sampled_from([0.0, 0.25, 1.5]))
def test_lockstep_fixed_latency_ledgers_do_not_depend_on_the_seed(seed_a, seed_b, delay):
    pair, _ = small_example(runs=2)
    sc = pair.scenario.replace(links=Links(LinkModel(latency=ConstantLatency(delay))))
    assert seed_free_ledger(sc)
    assert list(sc.replace(seed=seed_a).run().ledger) == list(sc.replace(seed=seed_b).run().ledger)


def test_random_latency_loss_or_clocks_make_the_ledger_seed_dependent():
    pair, _ = small_example(runs=2)
    sc = pair.scenario
    random_latency = sc.replace(links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5))))
    lossy = sc.replace(links=Links(LinkModel(loss=0.3)), timing=Deadline(period=1.0, deadline=0.8,
                                                                         missing="renormalize"))
    deadline = sc.replace(timing=Deadline(period=1.0, deadline=0.8, missing="renormalize"))
    for other in (random_latency, lossy, deadline):
        assert not seed_free_ledger(other)
    # the premise fails there: two seeds release at other times
    times = [[r.time for r in random_latency.replace(seed=s).run().ledger] for s in (1, 2)]
    assert times[0] != times[1]


def test_prepare_reads_the_own_seed_ledger_and_runs_simpy_once(monkeypatch):
    pair, _ = small_example(runs=2)
    calls = []
    original = simpy_engine.run_simpy

    def counting(scenario, **kwargs):
        calls.append(int(scenario.seed))
        return original(scenario, **kwargs)

    monkeypatch.setattr(simpy_engine, "run_simpy", counting)  # (Scenario.run imports it on each call)
    ctx = prepare(pair, CheckOptions(runs=20))
    runs = ctx.engine_runs(0)
    seed0 = run_seeds(0, 0, 1)[0]
    assert calls == [seed0], calls  # the one SimPy run: run 0's seed, for the ledger and the cross-check
    assert runs.engine == "batch" and runs.disagreement is None
    monkeypatch.undo()
    assert list(ctx.ledger) == _own_seed_ledger(pair.scenario)


def test_prepare_keeps_the_own_seed_run_where_the_ledger_depends_on_the_seed():
    pair, _ = small_example(runs=2)
    sc = pair.scenario.replace(links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5))))
    adj = pair.adjacent.replace(links=sc.links)
    ctx = prepare(type(pair)(sc, adj), CheckOptions(runs=5))
    assert "simpy0" not in ctx.cache
    assert list(ctx.ledger) == _own_seed_ledger(sc)


def test_a_shared_run_of_another_seed_is_refused():
    pair, _ = small_example(runs=2)
    runs = run_engine(pair.scenario, 3, seed=0)
    with pytest.raises(ScenarioError, match="seed"):
        engine_disagreement(pair.scenario, runs, simpy_run0(pair.scenario, runs.seeds[0] + 1))
    with pytest.raises(ScenarioError, match="transcript"):
        engine_disagreement(pair.scenario, runs,
                            pair.scenario.replace(seed=runs.seeds[0], record_transcript=False).run())
    shared = simpy_run0(pair.scenario, runs.seeds[0])
    assert engine_disagreement(pair.scenario, runs, shared) is None
    # the shared run is compared for real: another run's messages in its place are a disagreement
    shared.messages["y"][...] = np.asarray(shared.messages["y"]) + 1.0
    assert "round 1, agent 0" in engine_disagreement(pair.scenario, runs, shared)

"""The batch engine's two random-stream layouts of run 0: the SimPy engine's, and the vectorized one of large runs.

The SimPy layout draws run 0's clocks from one stream per agent and its links
from one stream per link (run 0 is the SimPy run of the seed); the vectorized
layout draws run 0 from stream ``(6, 0)``, as every run ``r >= 1`` draws from
``(6, r)``. Both are draws of the same model, so the distributions of what a
run produces must agree: a two-sample Kolmogorov-Smirnov test at level
0.001 (confidence 99.9%) compares the final optimality errors and the
numbers of lost messages of 400 runs in each layout (run 0 of 400 seeds in
the SimPy layout, the 400 runs of one vectorized batch of another seed).
With fixed seeds the outcome is deterministic; a control shows the same test
rejects a model with a different loss probability (0.3 against 0.2) at the
same size, so it has the power to fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp

from asyncdp import Huang2015
from asyncdp.engine import batch_draws
from asyncdp.engine.batch_draws import run_rng
from asyncdp.engine.links import LinkModel, Links, LogNormalLatency
from asyncdp.engine.timing import Async, Deadline
from asyncdp.errors import ScenarioError

ALPHA = 0.001
RUNS = 400
BASE = Huang2015.example_scenario(seed=0).replace(horizon=15)
TIMINGS = {"deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, jitter=0.05), "async": Async(rate=1.0)}


def lossy(loss: float) -> Links:
    return Links(LinkModel(LogNormalLatency(0.2, 0.5), loss=loss))


def simpy_layout_sample(sc, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Run 0 of ``runs`` seeds in the SimPy layout (the SimPy runs of those seeds): final errors and losses."""
    out = [sc.replace(seed=s).run(engine="batch", runs=1, keep="final", layout="simpy") for s in range(runs)]
    return np.array([b.optimality_error[0, -1] for b in out]), np.array([int(b.messages_lost[0]) for b in out])


def vectorized_sample(sc, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    batch = sc.replace(seed=seed).run(engine="batch", runs=runs, keep="final", layout="vectorized")
    return np.asarray(batch.optimality_error[:, -1]), np.asarray(batch.messages_lost)


@pytest.mark.parametrize("timing", sorted(TIMINGS))
def test_the_layouts_give_the_same_distributions(timing):
    sc = BASE.replace(timing=TIMINGS[timing], links=lossy(0.2))
    err_a, lost_a = simpy_layout_sample(sc, RUNS)
    err_b, lost_b = vectorized_sample(sc, RUNS, seed=10_000)
    assert ks_2samp(err_a, err_b).pvalue > ALPHA
    assert ks_2samp(lost_a, lost_b).pvalue > ALPHA  # discrete: the KS test is conservative
    # the control: a loss probability of 0.3 instead of 0.2 is rejected on the lost-message counts
    _, lost_c = vectorized_sample(sc.replace(links=lossy(0.3)), RUNS, seed=20_000)
    assert ks_2samp(lost_a, lost_c).pvalue < ALPHA


def test_vectorized_run_zero_draws_from_stream_6_0():
    sc = BASE.replace(timing=TIMINGS["deadline"], links=lossy(0.2), seed=5)
    vec = sc.run(engine="batch", runs=3, layout="vectorized")
    simpy = sc.run(engine="batch", runs=3, layout="simpy")
    assert vec.metadata["stream_layout"] == "vectorized" and simpy.metadata["stream_layout"] == "simpy"
    assert np.array_equal(vec.trajectory[1:], simpy.trajectory[1:])  # runs r >= 1: stream (6, r) in both
    assert np.array_equal(simpy.trajectory[0], sc.run().trajectory)  # run 0 of the SimPy layout: the SimPy run
    # run 0 of the vectorized layout: stream (6, 0), in the documented order (drifts, jitters, loss uniforms)
    rng = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(6, 0)))
    assert rng.random() == run_rng(5, 0).random()  # run_rng(seed, 0) is that stream
    rng = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(6, 0)))
    n, t = sc.problem.num_agents, sc.horizon
    rng.uniform(-0.05, 0.05, n)
    rng.uniform(0.0, 0.05, (t, n))
    assert int(vec.messages_lost[0]) == int((rng.random(int(vec.messages_sent)) < 0.2).sum())


@pytest.mark.parametrize("timing", ["deadline", "async"])
def test_one_vectorized_run_is_run_zero_of_a_larger_batch(timing):
    # a one-run vectorized batch keeps the latency draws in the model's own array (no copy): same run
    sc = BASE.replace(timing=TIMINGS[timing], links=lossy(0.2), seed=7)
    one = sc.run(engine="batch", runs=1, layout="vectorized")
    three = sc.run(engine="batch", runs=3, layout="vectorized")
    assert np.array_equal(one.trajectory[0], three.trajectory[0])
    assert np.array_equal(one.times[0], three.times[0]) and int(one.messages_lost[0]) == int(three.messages_lost[0])
    assert one.run(0).ledger == three.run(0).ledger


def test_auto_switches_above_the_link_threshold_with_a_warning(monkeypatch):
    sc = BASE.replace(timing=Async(), links=lossy(0.2), seed=2)
    assert sc.run(engine="batch", runs=2).metadata["stream_layout"] == "simpy"  # small: the SimPy layout
    monkeypatch.setattr(batch_draws, "VECTORIZED_ABOVE_LINKS", 3)
    with pytest.warns(UserWarning, match=r"vectorized stream layout \(\d+ links > 3\).*layout='simpy'"):
        auto = sc.run(engine="batch", runs=2)
    assert auto.metadata["stream_layout"] == "vectorized"
    assert np.array_equal(auto.final, sc.run(engine="batch", runs=2, layout="vectorized").final)


def test_bad_layouts_are_refused():
    sc = BASE.replace(timing=Async())
    with pytest.raises(ScenarioError, match=r"layout must be one of \('auto', 'simpy', 'vectorized'\), got 'fast'"):
        sc.run(engine="batch", layout="fast")
    with pytest.raises(ScenarioError, match="layout='vectorized': a batch engine option"):
        sc.run(layout="vectorized")

"""The batch engine under Async timing equals the SimPy engine, and its runs ``r >= 1`` are seeded runs of the model.

Tolerance: none (as ``test_batch_deadline.py``, whose comparison this file
reuses). A one-run batch draws each agent's waits from its clock stream and
each link's draws from its link stream (run 0 of any batch does), adds the
waits in order as SimPy's ``now + wait``, decides exact-time ties between a
delivery and a wake-up by SimPy's event order, renormalizes with the same
sums and mixes with a row-order sparse product. So the trajectory, times,
schedule, ledger, staleness, message counts and every transcript row must be
equal, not close (DPSDA to 1e-12: its vectorized update may differ in the
last bit, documented in :mod:`asyncdp.engine.batch_deadline`).

The scenarios (Hypothesis): every registered algorithm on its example
scenario and Huang et al. on 2-5 agents and several graphs, Poisson clocks
of two rates, staleness limits, an ``Async`` subclass whose waits fall on a
grid of 1/4 or 1/2 with constant latencies on the same grid (exact ties
between deliveries and wake-ups), every latency model, loss 0 or 0.3, FIFO
or reordering links, per-link overrides, broadcast and unicast.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp import REGISTRY, Huang2015, metrics
from asyncdp.engine.batch_draws import run_rng
from asyncdp.engine.links import (CallableLatency, ConstantLatency, ExponentialLatency, LinkModel, Links,
                                  LogNormalLatency, ZeroLatency)
from asyncdp.engine.timing import Async
from asyncdp.noise import SeededNoise
from asyncdp.scenario import Scenario


def _load(filename: str, name: str):
    """A test module beside this file (the suite imports test files by path, not as a package)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


deadline_tests = _load("test_batch_deadline.py", "asyncdp_tests_batch_deadline")
builders = deadline_tests.builders
run_engines, assert_batch_is_the_run = deadline_tests.run_engines, deadline_tests.assert_batch_is_the_run


def registered_algorithms() -> list[str]:
    """Every registered algorithm's name (the one place these tests enumerate the algorithms)."""
    return sorted(REGISTRY)


def example_scenario(name: str, seed: int = 0) -> Scenario:
    """The example scenario of the registered algorithm ``name``."""
    return REGISTRY[name].example_scenario(seed=seed)


@dataclass(frozen=True)
class GridAsync(Async):
    """Waits of 1, 2 or 3 steps of ``grid`` (one draw per wake-up): wake-ups fall on a grid of exact times."""

    grid: float = 0.25

    def sample_wait(self, rng: np.random.Generator) -> float:
        return self.grid * int(rng.integers(1, 4))


TIMINGS = st.one_of(
    st.builds(Async, rate=st.sampled_from((0.5, 1.0, 3.0)), staleness=st.sampled_from((None, 1, 2, 4))),
    st.builds(GridAsync, staleness=st.sampled_from((None, 1, 2)), grid=st.sampled_from((0.25, 0.5))),
)
MODELS = deadline_tests.MODELS


@st.composite
def scenarios(draw) -> Scenario:
    horizon = draw(st.integers(3, 9))
    which = draw(st.sampled_from(("huang2015-small",) + tuple(registered_algorithms())))
    if which == "huang2015-small":
        base = builders.huang_scenario(draw(st.integers(2, 5)),
                                       draw(st.sampled_from(("ring", "complete", "directed"))), horizon)
    else:
        base = example_scenario(which)
        base = base.replace(horizon=min(horizon, base.horizon))
    overrides = deadline_tests.draw_overrides(draw, base.problem.num_agents)
    return base.replace(timing=draw(TIMINGS), links=Links(draw(MODELS), overrides),
                        mode=draw(st.sampled_from(("broadcast", "unicast"))), seed=draw(st.integers(0, 2**16)))


@settings(max_examples=60)
@given(scenarios())
def test_one_run_async_batch_equals_the_simpy_run(sc: Scenario) -> None:
    out = run_engines(sc)
    if out is not None:
        assert_batch_is_the_run(*out, sc)


@pytest.mark.parametrize("name", registered_algorithms())
@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_every_algorithm_on_a_lossy_async_network(name, mode):
    """Each paper's example scenario, Poisson clocks, lognormal latency, 20% loss, one slow reordering link."""
    base = example_scenario(name, seed=1)
    sc = base.replace(timing=Async(rate=1.0, staleness=3),
                      links=Links(LinkModel(LogNormalLatency(0.2, 0.5), loss=0.2),
                                  {(0, 1): LinkModel(ExponentialLatency(0.4), loss=0.5, reorder=True)}),
                      mode=mode, horizon=min(base.horizon, 10), seed=7)
    single, batch = run_engines(sc)
    assert single.messages_lost > 0  # the test exercises loss
    assert_batch_is_the_run(single, batch, sc)


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_messages_of_rounds_ahead_and_behind(mode):
    """Poisson clocks drift apart: receivers combine messages of later rounds (dependency order) and older ones."""
    sc = builders.huang_scenario(5, "complete", 30).replace(
        timing=Async(rate=1.0), links=Links(LinkModel(ExponentialLatency(0.3), loss=0.3)), seed=1, mode=mode)
    single, batch = run_engines(sc)
    sched = single.schedule
    assert (sched.sender_round > sched.round).sum() > 10 and (sched.sender_round < sched.round).sum() > 10
    assert_batch_is_the_run(single, batch, sc)


def test_exact_ties_between_deliveries_and_wake_ups():
    """Waits and latency on one grid: deliveries land exactly on wake-ups, and SimPy's order decides them."""
    sc = builders.huang_scenario(4, "complete", 8).replace(timing=GridAsync(grid=0.5),
                                                          links=Links(LinkModel(ConstantLatency(0.5))), seed=3)
    single, batch = run_engines(sc)
    assert builders.exact_ties(single) > 10
    assert_batch_is_the_run(single, batch, sc)
    zero = sc.replace(links=Links(LinkModel(ZeroLatency())), mode="unicast")  # sends at other agents' wake-ups
    single, batch = run_engines(zero)
    assert builders.exact_ties(single) > 10
    assert_batch_is_the_run(single, batch, zero)


def test_callable_latency_staleness_and_unicast_overrides():
    sc = builders.huang_scenario(4, "ring", 12).replace(
        timing=Async(rate=2.0, staleness=1),
        links=Links(LinkModel(CallableLatency(lambda rng: 0.1 + 0.5 * rng.random()), loss=0.2),
                    {(1, 0): LinkModel(ConstantLatency(0.9))}), mode="unicast", seed=4)
    single, batch = run_engines(sc)
    assert single.staleness.max() >= 1
    assert_batch_is_the_run(single, batch, sc)


def test_sample_waits_equals_sample_wait_calls():
    """The vectorized waits are the single draws; a subclass's ``sample_wait`` is honoured."""
    for timing in (Async(rate=0.7), GridAsync(grid=0.25)):
        a, b = np.random.default_rng(5), np.random.default_rng(5)
        many = timing.sample_waits(a, 50)
        assert many.tolist() == [timing.sample_wait(b) for _ in range(50)]
        assert a.random() == b.random()  # the streams end at the same place
    assert set(GridAsync(grid=0.25).sample_waits(np.random.default_rng(0), 40).tolist()) == {0.25, 0.5, 0.75}


def test_async_runs_beyond_the_first_are_seeded_and_do_not_depend_on_the_batch_size():
    sc = example_scenario("huang2015", seed=2).replace(
        timing=Async(rate=1.0), links=Links(LinkModel(LogNormalLatency(0.3, 0.8), loss=0.3)))
    small, large = sc.run(engine="batch", runs=2, transcripts=True), sc.run(engine="batch", runs=4, transcripts=True)
    assert np.array_equal(small.trajectory, large.trajectory[:2])
    assert small.schedule(1) == large.schedule(1) != large.schedule(2)
    assert small.run(1).ledger == large.run(1).ledger
    assert large.schedule(0) == sc.run().schedule
    # run 1's wake-ups: the cumulative sums of the first T * N draws of stream (6, 1), row t - 1 for wake-up t
    waits = run_rng(sc.seed, 1).exponential(1.0, (sc.horizon, sc.problem.num_agents))
    assert np.array_equal(large.times[1, 1:], np.cumsum(waits, axis=0))
    assert large.messages_lost.shape == (4,) and len(set(large.messages_lost.tolist())) > 1
    lean = sc.run(engine="batch", runs=4, keep="final")
    assert np.array_equal(lean.final, large.final)
    assert np.array_equal(large.final, large.trajectory[:, -1])  # the final states are the last round's
    # the curves, computed over blocks of rounds, are the metrics of each round's decisions (both keeps)
    for t in range(sc.horizon + 1):
        x = large.trajectory[:, t]
        for res in (large, lean):
            assert np.array_equal(res.optimality_error[:, t], metrics.optimality_error(x, large.optimum))
            assert np.array_equal(res.deviation[:, t], metrics.deviation(x))
    assert np.array_equal(large.optimality_error[0], sc.run().optimality_error())


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_run_zero_of_a_many_run_async_batch_is_the_simpy_run(mode):
    """The batch's stores are laid out by round, then run: with ``R > 1`` run 0 is still the SimPy run (states,
    transcript, schedule), and every other run is the same run in a batch of another size."""
    sc = builders.huang_scenario(5, "complete", 12).replace(
        timing=Async(rate=1.0), links=Links(LinkModel(ExponentialLatency(0.3), loss=0.3)), seed=6, mode=mode)
    single = sc.run()
    assert (single.schedule.sender_round > single.schedule.round).any()  # messages of rounds ahead: levels
    batch, other = (sc.run(engine="batch", runs=r, transcripts=True) for r in (5, 3))
    assert_batch_is_the_run(single, batch, sc)
    assert np.array_equal(batch.trajectory[:3], other.trajectory)
    for name, arr in batch.messages.items():
        assert np.array_equal(arr[:3], other.messages[name], equal_nan=True)
    assert np.array_equal(batch.staleness[:3], other.staleness)
    assert not np.array_equal(batch.trajectory[1], batch.trajectory[2])


def _replay(sc: Scenario, batch, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Run ``r`` recomputed one combine at a time from its realized schedule and row ``r`` of the noise blocks.

    Broadcast Huang et al.: ``y_i(t) = x_i(t - 1) + M_t w_i(t)`` and ``x_i(t) = update(sum_k w_k y_k)``, the
    sum over the schedule's entries of ``(t, i)`` in their order from 0 (as the SimPy engine mixes), the rule
    called on one agent's point. Shares no code of the batch engine but the schedule. Returns the trajectory
    ``(T + 1, N, n)`` and the messages ``(T, N, n)``.
    """
    alg, problem = sc.algorithm.bind(sc.problem), sc.problem
    n_agents, horizon, runs = problem.num_agents, sc.horizon, batch.runs
    sched = batch.schedule(r)
    noise = SeededNoise(sc.seed)
    std = {t: noise.broadcast(t, 0, "laplace", (runs, n_agents, problem.dim))[r] for t in range(1, horizon + 1)}
    x0 = sc.initial_points()
    x: dict[tuple[int, int], np.ndarray] = {(0, i): np.array(x0[i], dtype=float) for i in range(n_agents)}
    y: dict[tuple[int, int], np.ndarray] = {}

    def message(t: int, i: int) -> np.ndarray:
        if (t, i) not in y:
            y[t, i] = alg.message({"x": state(t - 1, i)}, t, {"y": std[t][i]}, i, problem)["y"]
        return y[t, i]

    def state(t: int, i: int) -> np.ndarray:
        if (t, i) not in x:
            recv, send, weight, src = sched.entries(t)
            z = np.zeros(problem.dim)
            for j, w, s in zip(send[recv == i].tolist(), weight[recv == i].tolist(), src[recv == i].tolist()):
                z = z + w * message(s, j)
            x[t, i] = alg.update({"x": state(t - 1, i)}, {"y": z}, t, i, problem)["x"]
        return x[t, i]

    traj = np.array([[state(t, i) for i in range(n_agents)] for t in range(horizon + 1)])
    return traj, np.array([[message(t, i) for i in range(n_agents)] for t in range(1, horizon + 1)])


def test_every_run_of_an_async_batch_is_the_replay_of_its_schedule():
    """Each run ``r`` (not only run 0, the SimPy run) is its own schedule and noise row, replayed combine by combine."""
    sc = builders.huang_scenario(4, "complete", 10).replace(
        timing=Async(rate=1.0), links=Links(LinkModel(ExponentialLatency(0.3), loss=0.3)), seed=8)
    batch = sc.run(engine="batch", runs=4, transcripts=True)
    ahead = 0
    for r in range(batch.runs):
        traj, messages = _replay(sc, batch, r)
        assert np.array_equal(batch.trajectory[r], traj), r
        assert np.array_equal(batch.messages["y"][r], messages), r
        sched = batch.schedule(r)
        ahead += int((sched.sender_round > sched.round).sum())
    assert ahead > 0  # some combines read messages of rounds ahead (the dependency-level path)


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_keep_final_without_transcripts_gives_the_same_runs(mode):
    """``keep="final"`` skips the staleness and (unicast) the transcript layout: the states are unchanged."""
    sc = example_scenario("huang2015", seed=5).replace(
        timing=Async(rate=1.0, staleness=3), links=Links(LinkModel(LogNormalLatency(0.3, 0.8), loss=0.2)), mode=mode)
    full, lean = sc.run(engine="batch", runs=5, transcripts=True), sc.run(engine="batch", runs=5, keep="final")
    assert lean.messages is None and lean.staleness is None and full.staleness.max() > 0
    assert np.array_equal(lean.final, full.final) and np.array_equal(lean.final, sc.run(engine="batch", runs=5,
                                                                                         keep="all").final)
    assert np.array_equal(lean.optimality_error, full.optimality_error)
    assert np.array_equal(lean.messages_lost, full.messages_lost)


@pytest.mark.slow
def test_async_batch_equals_simpy_exhaustively():
    """Every combination of a grid of scenarios, async timings, latencies, losses and modes (minutes).

    Each combination runs once, on its own seed; odd seeds use reordering links.
    """
    import itertools

    timings = [Async(rate=r, staleness=s) for r in (0.5, 2.0) for s in (None, 1, 3)]
    timings += [GridAsync(grid=g, staleness=s) for g in (0.25, 0.5) for s in (None, 1)]
    latencies = [ZeroLatency(), ConstantLatency(0.25), ConstantLatency(1.0), ExponentialLatency(0.3),
                 LogNormalLatency(0.5, 0.0), LogNormalLatency(0.5, 0.5)]
    bases = [builders.huang_scenario(n, g, 6) for n in (2, 3, 5) for g in ("ring", "complete", "directed")]
    bases += [example_scenario(name).replace(horizon=6) for name in registered_algorithms()]
    combinations = itertools.product(bases, timings, latencies, (0.0, 0.3), ("broadcast", "unicast"))
    for seed, (base, timing, latency, loss, mode) in enumerate(combinations):
        sc = base.replace(timing=timing, links=Links(LinkModel(latency, loss=loss, reorder=seed % 2 == 1)), mode=mode,
                          seed=seed)
        out = run_engines(sc)
        if out is not None:
            assert_batch_is_the_run(*out, sc)


@dataclass(frozen=True)
class Float32Start(Huang2015):
    """Huang et al. with a float32 initial state, kept as ``0.1`` of the next state (numpy's promotion: float64
    from round 1 on)."""

    def initial_state(self, x0, agents, problem):
        return {k: np.asarray(v, dtype=np.float32) for k, v in super().initial_state(x0, agents, problem).items()}

    def update(self, state, mixed, t, agents, problem):
        return {"x": 0.9 * super().update(state, mixed, t, agents, problem)["x"] + 0.1 * state["x"]}


@pytest.mark.xfail(strict=True, reason="under Async timing the batch engine does not compute a rule that starts "
                   "from a float32 state in the dtypes the SimPy engine does (the two runs end about 1e-8 apart; "
                   "under lockstep and deadline timing they agree bit for bit); a fix needs the async path's state "
                   "arrays to keep the dtype each agent's state has at each round")
def test_a_float32_initial_state_runs_alike_on_both_engines_under_async_timing():
    sc = example_scenario("huang2015", seed=2).replace(algorithm=Float32Start(epsilon=1.0, c=0.3, q=0.8, p=0.9),
                                                       timing=Async(rate=1.0), horizon=6)
    assert np.array_equal(sc.run(engine="batch", runs=2).trajectory[0], sc.run().trajectory)

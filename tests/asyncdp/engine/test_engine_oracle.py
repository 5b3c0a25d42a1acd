"""The fast SimPy engine equals the plain one-event-per-delivery oracle (``oracle_engine.py``).

The real engine (:mod:`asyncdp.engine.simpy_engine`) keeps messages in
in-flight lists and reproduces SimPy's tie order by hand, mixes with 0-d
weight arrays, and its rules clip with Python-float sums and multiply by 0-d
factors. The oracle does none of that: one SimPy event per delivery, a sparse
matrix-vector product for the mixing, ``np.linalg.norm`` for the clipping and
Python floats for the factors. Both share the rules, the noise layout, the
link streams and the clocks, so they must compute the same run.

Tolerance: none. Every fast path claims *identical* results, and the oracle's
plain forms perform the same IEEE operations in the same order, so every
compared number must be equal:

* the order in which messages reach an agent is a tie rule, not arithmetic;
* the mixing ``sum_j w_ij * m_j`` is added in column order by the engine and
  by scipy's CSR product alike (the product starts from ``0.0``, and
  ``0.0 + a == a``; at most the sign of a zero could differ, which
  ``np.array_equal`` ignores);
* multiplying by a 0-d array or by the same Python float is one IEEE product;
* ``clip_l2`` claims the bits of ``v * (bound / max(sqrt(add.reduce(v * v)),
  bound))``, which is what ``np.linalg.norm(v, axis=-1)`` computes.

A dense BLAS product (``w @ X``) would instead agree only to round-off
(blocked sums, fused multiply-adds); the oracle avoids it so that a wrong tie
decision, which changes a result by O(1), cannot hide behind a tolerance.

Which runs: Hypothesis draws the algorithm (every entry of
``asyncdp.REGISTRY`` on its example scenario, plus Huang et al. on
2-5 agents and several graphs), the timing (lockstep with each missing policy,
deadline with each policy, drift and jitter, async with Poisson wake-ups and
async with wake-ups on a grid), the latency (zero, constant, exponential,
lognormal; FIFO or reordering links), the loss (0 or 0.3), the mode and the
seed. Constant latencies on the grid of deadlines and wake-ups make many
deliveries coincide exactly with a combine: those are the ties the fast
engine orders by hand.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topology
from asyncdp import REGISTRY, Huang2015
from asyncdp.engine.links import ConstantLatency, ExponentialLatency, LinkModel, Links, LogNormalLatency, ZeroLatency
from asyncdp.engine.timing import Async, Deadline, Lockstep
from asyncdp.errors import MessageLostError
from asyncdp.problems.problem import rendezvous_problem
from asyncdp.scenario import Scenario


def _load_oracle():
    """``oracle_engine.py`` beside this file (the suite imports test files by path, not as a package)."""
    name = "asyncdp_tests_oracle_engine"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("oracle_engine.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


oracle = _load_oracle()


@dataclass(frozen=True)
class GridAsync(Async):
    """Async timing whose waits are 1, 2 or 3 steps of ``grid`` (one draw per wake-up, as ``Async``).

    Wake-ups and constant latencies then fall on one grid of exactly
    representable times, so deliveries coincide with wake-ups exactly.
    """

    grid: float = 0.25

    def sample_wait(self, rng: np.random.Generator) -> float:
        return self.grid * int(rng.integers(1, 4))


# --------------------------------------------------------------------------- comparison


def run_both(scenario: Scenario):
    """``(engine result, oracle result)``, or the two ``MessageLostError`` messages if both raise."""
    try:
        real = scenario.run()
    except MessageLostError as exc:
        real = exc
    try:
        plain = oracle.run_oracle(scenario)
    except MessageLostError as exc:
        plain = exc
    if isinstance(real, Exception) or isinstance(plain, Exception):
        assert type(real) is type(plain), (real, plain)
        assert str(real) == str(plain)
        return None, None
    return real, plain


def assert_same_run(real, plain, horizon: int) -> None:
    """Every output the engine claims to compute exactly is equal (see the module docstring)."""
    assert np.array_equal(real.trajectory, plain.trajectory), np.abs(real.trajectory - plain.trajectory).max()
    assert np.array_equal(real.times, plain.times)
    realized = np.array([real.realized.dense(t) for t in range(1, horizon + 1)])
    assert np.array_equal(realized, plain.realized)
    assert np.array_equal(real.staleness, plain.staleness)
    assert (real.messages_sent, real.messages_lost) == (plain.messages_sent, plain.messages_lost)
    assert real.ledger == plain.ledger
    rows = list(real.transcript)
    assert len(rows) == len(plain.transcript)
    for k, (a, b) in enumerate(zip(rows, plain.transcript)):
        assert (a.round, a.sender, a.receiver, a.channel, a.send_time, a.lost, a.message_id) == (
            b.round, b.sender, b.receiver, b.channel, b.send_time, b.lost, b.message_id), k
        both_nan = math.isnan(a.receive_time) and math.isnan(b.receive_time)
        assert a.receive_time == b.receive_time or (a.lost and both_nan), k
        assert np.array_equal(a.payload, b.payload), k


def exact_ties(real) -> int:
    """Deliveries whose arrival time equals a combine time of their receiver."""
    combines = [set(real.times[1:, j].tolist()) for j in range(real.times.shape[1])]
    return sum(1 for r in real.transcript if not r.lost and r.receive_time in combines[r.receiver])


# --------------------------------------------------------------------------- scenarios


def _graph(kind: str, n: int) -> topology.GraphSequence:
    if kind == "ring":
        g = nx.cycle_graph(n) if n > 2 else nx.path_graph(n)
        return topology.from_networkx([g], "metropolis", periodic=True)
    if kind == "complete":
        return topology.from_networkx([nx.complete_graph(n)], "metropolis", periodic=True)
    # directed and time-varying: agent i listens to itself and to i + 1, then to i + 2 (doubly stochastic)
    mats = [0.5 * np.eye(n) + 0.5 * np.roll(np.eye(n), k % n or 1, axis=1) for k in (1, 2)]
    return topology.periodic(mats)


def huang_scenario(n: int, graph: str, horizon: int) -> Scenario:
    addresses = np.random.default_rng(n).uniform(-1.0, 1.0, size=(n, 2))
    return Scenario(rendezvous_problem(addresses), _graph(graph, n), Huang2015(epsilon=1.0, c=0.3, q=0.8, p=0.9),
                    horizon=horizon)


def registry_scenario(name: str, horizon: int) -> Scenario:
    base = REGISTRY[name].example_scenario(seed=0)
    return base.replace(horizon=min(horizon, base.horizon))


def deadline(d: float, drift: float, jitter: float, missing: str) -> Deadline:
    if d == 1.0:  # deadline * period + jitter <= period * (1 - drift) leaves no room
        drift = jitter = 0.0
    return Deadline(period=1.0, deadline=d, drift=drift, jitter=jitter, missing=missing)


MISSING = ("renormalize", "stale")
TIMINGS = st.one_of(
    st.builds(Lockstep, st.sampled_from((None,) + MISSING)),
    st.builds(deadline, st.sampled_from((0.25, 0.5, 0.75, 1.0)), st.sampled_from((0.0, 0.1)),
              st.sampled_from((0.0, 0.1)), st.sampled_from(MISSING)),
    st.builds(Async, rate=st.sampled_from((0.5, 2.0)), staleness=st.sampled_from((None, 1, 2))),
    st.builds(GridAsync, staleness=st.sampled_from((None, 1)), grid=st.sampled_from((0.25, 0.5))),
)
# constant latencies on the grid of deadlines (multiples of 0.25) and wake-ups make exact-time ties
LATENCIES = st.one_of(
    st.just(ZeroLatency()),
    st.builds(ConstantLatency, st.sampled_from((0.25, 0.5, 0.75, 1.0))),
    st.builds(ExponentialLatency, st.sampled_from((0.3, 1.0))),
    st.builds(LogNormalLatency, st.just(0.5), st.sampled_from((0.0, 0.5))),
)


@st.composite
def scenarios(draw) -> Scenario:
    horizon = draw(st.integers(3, 8))
    which = draw(st.sampled_from(("huang2015-small",) + tuple(sorted(REGISTRY))))
    if which == "huang2015-small":
        base = huang_scenario(draw(st.integers(2, 5)), draw(st.sampled_from(("ring", "complete", "directed"))),
                              horizon)
    else:
        base = registry_scenario(which, horizon)
    links = Links(LinkModel(draw(LATENCIES), loss=draw(st.sampled_from((0.0, 0.3))), reorder=draw(st.booleans())))
    return base.replace(timing=draw(TIMINGS), links=links, mode=draw(st.sampled_from(("broadcast", "unicast"))),
                        seed=draw(st.integers(0, 2**16)))


# --------------------------------------------------------------------------- tests


@settings(max_examples=200)
@given(scenarios())
def test_fast_engine_equals_the_one_event_per_delivery_oracle(scenario: Scenario) -> None:
    real, plain = run_both(scenario)
    if real is not None:
        assert_same_run(real, plain, scenario.horizon)


def test_hand_made_ties_follow_simpy_scheduling_order() -> None:
    """Deliveries exactly at a combine: sent before the combine was scheduled counts, after does not.

    Deadline: every agent starts round ``t`` at ``t - 1`` in index order,
    sends, then schedules its combine at ``t - 1/2``; latency ``1/2`` puts every
    delivery exactly on the receivers' deadline. So agent ``i`` combines the
    messages of ``j < i`` (their deliveries were scheduled first) and misses
    those of ``j > i``. Written out here, then checked against both engines.
    """
    n, T = 4, 3
    sc = huang_scenario(n, "complete", T).replace(
        timing=Deadline(period=1.0, deadline=0.5, missing="renormalize"), links=Links(LinkModel(ConstantLatency(0.5))))
    real, plain = run_both(sc)
    assert_same_run(real, plain, T)
    assert exact_ties(real) == n * (n - 1) * T  # every delivery is a tie
    W = sc.topology.dense(1)
    for t in range(1, T + 1):
        for i in range(n):
            expected = np.zeros(n)
            expected[: i + 1] = W[i, : i + 1] / W[i, : i + 1].sum()
            np.testing.assert_allclose(plain.realized[t - 1, i], expected, rtol=0, atol=1e-15)

    # async on a grid with latency equal to the grid: arrivals coincide with wake-ups
    sc = huang_scenario(n, "ring", 6).replace(timing=GridAsync(grid=0.5), links=Links(LinkModel(ConstantLatency(0.5))),
                                             seed=3)
    real, plain = run_both(sc)
    assert_same_run(real, plain, 6)
    assert exact_ties(real) > 0


def test_exact_ties_under_the_stale_policy_go_both_ways() -> None:
    """Tie-prone settings of the Hypothesis grid produce both outcomes of a tie (so a wrong tie rule shows).

    Deadline ``1/4`` and latency ``1/4``: each round-``t`` delivery lands on its
    receiver's deadline; senders with a lower index count, the others are
    replaced by their round-``t - 1`` value (age 1) from round 2 on.
    """
    sc = huang_scenario(3, "complete", 4).replace(timing=Deadline(period=1.0, deadline=0.25, missing="stale"),
                                                 links=Links(LinkModel(ConstantLatency(0.25))))
    real, plain = run_both(sc)
    assert_same_run(real, plain, 4)
    assert exact_ties(real) > 0
    assert real.staleness.any() and not real.staleness.all()  # some ties counted, some fell back to stale values


def test_lockstep_loss_without_policy_raises_the_same_error() -> None:
    sc = huang_scenario(4, "ring", 5).replace(links=Links(LinkModel(loss=0.3)), seed=1)
    with pytest.raises(MessageLostError) as real:
        sc.run()
    with pytest.raises(MessageLostError) as plain:
        oracle.run_oracle(sc)
    assert str(real.value) == str(plain.value)


def test_oracle_plain_arithmetic_is_undone_after_the_run() -> None:
    from asyncdp.algorithms import clipping
    from asyncdp.papers.huang2015 import rule as huang2015

    before = huang2015.clip_l2
    with oracle.plain_arithmetic():
        assert huang2015.clip_l2 is oracle.plain_clip_l2
    assert huang2015.clip_l2 is before is clipping.clip_l2


@pytest.mark.slow
def test_fast_engine_equals_the_oracle_exhaustively() -> None:
    """Every combination of the Hypothesis grid's scenarios, timings, latencies, losses and modes (minutes).

    Each combination runs once, on its own seed; odd seeds use reordering links.
    """
    timings = [Lockstep(m) for m in (None,) + MISSING]
    timings += [deadline(d, drift, jitter, m) for d in (0.25, 0.5, 0.75, 1.0) for drift in (0.0, 0.1)
                for jitter in (0.0, 0.1) for m in MISSING]
    timings += [Async(rate=r, staleness=s) for r in (0.5, 2.0) for s in (None, 1, 2)]
    timings += [GridAsync(grid=g, staleness=s) for g in (0.25, 0.5) for s in (None, 1)]
    latencies = [ZeroLatency(), *(ConstantLatency(c) for c in (0.25, 0.5, 0.75, 1.0)), ExponentialLatency(0.3),
                 ExponentialLatency(1.0), LogNormalLatency(0.5, 0.0), LogNormalLatency(0.5, 0.5)]
    bases = [huang_scenario(n, g, 6) for n in (2, 3, 5) for g in ("ring", "complete", "directed")]
    bases += [registry_scenario(name, 6) for name in sorted(REGISTRY)]
    combinations = itertools.product(bases, timings, latencies, (0.0, 0.3), ("broadcast", "unicast"))
    for seed, (base, timing, latency, loss, mode) in enumerate(combinations):
        links = Links(LinkModel(latency, loss=loss, reorder=seed % 2 == 1))
        sc = base.replace(timing=timing, links=links, mode=mode, seed=seed)
        real, plain = run_both(sc)
        if real is not None:
            assert_same_run(real, plain, sc.horizon)

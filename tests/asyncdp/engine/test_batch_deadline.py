"""The batch engine under Deadline timing, and lockstep rounds over lossy links, equals the SimPy engine (issue 16).

Tolerance: none. A one-run batch draws its clocks and links from the SimPy
engine's streams (run 0 of any batch does), computes the same times with
the same float operations, decides exact-time ties by SimPy's event order,
renormalizes with the same sums in the same order, and mixes with a sparse
product that adds in row order from 0 (as the SimPy engine's loop). So the
trajectory, the times, the schedule, the ledger, the staleness, the message
counts and every transcript row must be equal, not close.

The scenarios (Hypothesis): every registered algorithm on its example
scenario and Huang et al. on 2-5 agents and several graphs (static, complete,
time-varying directed), deadline timing with every missing-message policy,
drift (up to 0.4: clocks rounds apart, stale messages of rounds ahead) and
jitter, lockstep rounds with every missing-message policy (None: the same
MessageLostError), deadlines on a grid of 1/4 with constant latencies on the
same grid (exact ties between arrivals and combines), every latency model,
loss 0 or 0.3, FIFO or reordering links, per-link overrides, broadcast and
unicast.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp import REGISTRY, InjectedNoise
from asyncdp.engine.batch_draws import run_rng
from asyncdp.engine.links import (CallableLatency, ConstantLatency, ExponentialLatency, LinkModel, Links,
                                  LogNormalLatency, ZeroLatency)
from asyncdp.engine.timing import Deadline, Lockstep
from asyncdp.errors import MessageLostError, ScenarioError, TimingError
from asyncdp.privacy.replay import transcript_array
from asyncdp.scenario import Scenario


def _oracle_tests():
    """``test_engine_oracle.py``'s scenario builders (the suite imports test files by path)."""
    name = "asyncdp_tests_engine_oracle_builders"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("test_engine_oracle.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


builders = _oracle_tests()

def run_engines(sc: Scenario):
    """``(SimPy result, one-run batch)``; None if both raise the same MessageLostError."""
    try:
        single = sc.run()
    except MessageLostError as exc:
        with pytest.raises(MessageLostError) as other:
            sc.run(engine="batch", transcripts=True)
        assert str(other.value) == str(exc)
        return None
    return single, sc.run(engine="batch", transcripts=True)


# Rules whose vectorized call computes the one-agent call's bits. DPSDA's update (prox of z / w, clipping
# norms over 14 coordinates) can differ in the last bit between an (n,)-shaped and an (R, N, n)-shaped call
# (observed: 4.4e-16 after a renormalized push-sum row), so its states and messages are compared to 1e-12.
BITWISE_RULES = {"huang2015", "showkatbakhsh", "wang-basar"}


def same(a, b, sc: Scenario) -> bool:
    if sc.algorithm.name in BITWISE_RULES:
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=1e-12, atol=1e-12)


def simpy_messages(single, name: str, sc: Scenario, shape: tuple) -> np.ndarray:
    """The SimPy transcript's messages on ``name`` in the batch's per-run layout (NaN where none was sent).

    The same as :func:`asyncdp.privacy.replay.transcript_array` (which sizes the array by the decision's dimension).
    """
    out = np.full(shape, np.nan)
    if sc.mode == "unicast":
        for (t, i, j), payload in single.transcript.observations_by_link(name).items():
            out[t - 1, i, j] = payload
    else:
        for (t, i), payload in single.transcript.observations(name).items():
            out[t - 1, i] = payload
    return out


def assert_batch_is_the_run(single, batch, sc: Scenario) -> None:
    view = batch.run(0)
    assert same(batch.trajectory[0], single.trajectory, sc)
    assert np.array_equal(view.times, single.times)
    assert view.schedule == single.schedule == batch.schedule(0)
    assert batch.ledger == single.ledger == view.ledger
    assert np.array_equal(view.staleness, single.staleness)
    assert (view.messages_sent, view.messages_lost) == (single.messages_sent, single.messages_lost)
    for t in range(1, sc.horizon + 1):
        assert np.array_equal(view.realized.weights(t).toarray(), single.realized.weights(t).toarray())
    # the checker's inputs: the batch's message arrays are the SimPy transcript where it has a message
    for name, arr in batch.messages.items():
        mine = arr[0]
        seen = simpy_messages(single, name, sc, mine.shape)
        if mine.shape[-1] == single.trajectory.shape[-1]:
            assert np.array_equal(seen, transcript_array(single, name, sc.mode), equal_nan=True)
        have = ~np.isnan(seen)
        assert same(mine[have], seen[have], sc), name
        if sc.mode == "unicast":  # NaN exactly where no message was sent
            assert np.array_equal(np.isnan(mine), ~have), name
    rows = list(view.transcript)
    assert len(rows) == len(single.transcript)
    for k, (a, b) in enumerate(zip(rows, single.transcript)):
        assert (a.round, a.sender, a.receiver, a.channel, a.send_time, a.lost, a.message_id) == (
            b.round, b.sender, b.receiver, b.channel, b.send_time, b.lost, b.message_id), k
        assert a.receive_time == b.receive_time or (a.lost and math.isnan(a.receive_time)
                                                    and math.isnan(b.receive_time)), k
        assert same(a.payload, b.payload, sc), k


MISSING = ("renormalize", "stale")


@st.composite
def deadlines(draw) -> Deadline:
    """Deadlines on a grid of 1/4 (ties with constant latencies), drift up to 0.4 (clocks rounds apart), jitter."""
    d = draw(st.sampled_from((0.25, 0.5, 0.75, 1.0)))
    jitter, drift = draw(st.sampled_from((0.0, 0.1))), draw(st.sampled_from((0.0, 0.1, 0.4)))
    if d + jitter > 1.0:
        jitter = 0.0
    if d + jitter > 1.0 - drift:  # deadline * period + jitter <= period * (1 - drift)
        drift = 0.0
    return Deadline(period=1.0, deadline=d, drift=drift, jitter=jitter, missing=draw(st.sampled_from(MISSING)))


LATENCIES = st.one_of(
    st.just(ZeroLatency()),
    st.builds(ConstantLatency, st.sampled_from((0.25, 0.5, 0.75, 1.0))),
    st.builds(ExponentialLatency, st.sampled_from((0.3, 1.0))),
    st.builds(LogNormalLatency, st.just(0.5), st.sampled_from((0.0, 0.5))),
)
MODELS = st.builds(LinkModel, LATENCIES, loss=st.sampled_from((0.0, 0.3)), reorder=st.booleans())


def draw_overrides(draw, n: int) -> dict[tuple[int, int], LinkModel]:
    """Up to two per-link models (a drawn sender and receiver among ``n`` agents; a self-link is skipped)."""
    overrides = {}
    for _ in range(draw(st.integers(0, 2))):
        s, r = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if s != r:
            overrides[(s, r)] = draw(MODELS)
    return overrides


@st.composite
def scenarios(draw) -> Scenario:
    horizon = draw(st.integers(3, 9))
    which = draw(st.sampled_from(("huang2015-small",) + tuple(sorted(REGISTRY))))
    if which == "huang2015-small":
        base = builders.huang_scenario(draw(st.integers(2, 5)),
                                       draw(st.sampled_from(("ring", "complete", "directed"))), horizon)
    else:
        base = builders.registry_scenario(which, horizon)
    overrides = draw_overrides(draw, base.problem.num_agents)
    links = Links(draw(MODELS), overrides)
    timing = draw(st.one_of(deadlines(), st.builds(Lockstep, st.sampled_from((None,) + MISSING))))
    return base.replace(timing=timing, links=links, mode=draw(st.sampled_from(("broadcast", "unicast"))),
                        seed=draw(st.integers(0, 2**16)))


@settings(max_examples=60)
@given(scenarios())
def test_one_run_batch_equals_the_simpy_run(sc: Scenario) -> None:
    out = run_engines(sc)
    if out is not None:
        assert_batch_is_the_run(*out, sc)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_every_algorithm_on_a_lossy_deadline_network(name, mode):
    """Each paper's example scenario, drift, jitter, lognormal latency, 20% loss, one slow link."""
    base = REGISTRY[name].example_scenario(seed=1)
    sc = base.replace(timing=Deadline(period=1.0, deadline=0.6, drift=0.02, jitter=0.1),
                      links=Links(LinkModel(LogNormalLatency(0.2, 0.5), loss=0.2),
                                  {(0, 1): LinkModel(ExponentialLatency(0.4), loss=0.5, reorder=True)}),
                      mode=mode, horizon=min(base.horizon, 10), seed=7)
    single, batch = run_engines(sc)
    assert single.messages_lost > 0  # the test exercises loss
    assert_batch_is_the_run(single, batch, sc)


def test_exact_ties_follow_simpy_order():
    """Latency 1/2 on deadline 1/2 with no drift or jitter: every delivery lands on its receiver's deadline."""
    sc = builders.huang_scenario(4, "complete", 3).replace(
        timing=Deadline(period=1.0, deadline=0.5), links=Links(LinkModel(ConstantLatency(0.5))))
    single, batch = run_engines(sc)
    assert_batch_is_the_run(single, batch, sc)
    assert builders.exact_ties(single) == 4 * 3 * 3
    w, _ = batch.schedule(0).dense(1)
    assert np.count_nonzero(w) == 4 + 3 + 2 + 1  # agent i combines the senders before it (SimPy's order)
    stale = sc.replace(timing=Deadline(period=1.0, deadline=0.25, missing="stale"),
                       links=Links(LinkModel(ConstantLatency(0.25))))
    single, batch = run_engines(stale)
    assert_batch_is_the_run(single, batch, stale)
    assert batch.staleness[0].any() and not batch.staleness[0].all()


def test_callable_latency_and_unicast_overrides():
    sc = builders.huang_scenario(4, "ring", 5).replace(
        timing=Deadline(period=1.0, deadline=0.7, jitter=0.2),
        links=Links(LinkModel(CallableLatency(lambda rng: 0.1 + 0.5 * rng.random()), loss=0.2),
                    {(1, 0): LinkModel(ConstantLatency(0.9))}), mode="unicast", seed=4)
    single, batch = run_engines(sc)
    assert_batch_is_the_run(single, batch, sc)


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_stale_messages_from_rounds_ahead(mode):
    """Strong drift: fast senders run rounds ahead, and a receiver reuses their later message (dependency order)."""
    sc = builders.huang_scenario(3, "complete", 30).replace(
        timing=Deadline(period=1.0, deadline=0.3, drift=0.5, missing="stale"),
        links=Links(LinkModel(ExponentialLatency(0.2), loss=0.5)), seed=1, mode=mode)
    single, batch = run_engines(sc)
    assert (single.schedule.sender_round > single.schedule.round).sum() > 3  # the case is exercised
    assert_batch_is_the_run(single, batch, sc)
    more = sc.run(engine="batch", runs=3, keep="final")  # runs r >= 1 too, without trajectories
    assert np.array_equal(more.final[0], single.trajectory[-1])
    assert not np.array_equal(more.final[1], more.final[2])


def test_runs_beyond_the_first_are_seeded_and_do_not_depend_on_the_batch_size():
    sc = REGISTRY["huang2015"].example_scenario(seed=2).replace(
        timing=Deadline(period=1.0, deadline=0.8, drift=0.05, missing="stale"),
        links=Links(LinkModel(LogNormalLatency(0.3, 0.8), loss=0.3)))
    small, large = sc.run(engine="batch", runs=2, transcripts=True), sc.run(engine="batch", runs=4, transcripts=True)
    assert np.array_equal(small.trajectory, large.trajectory[:2])
    assert small.schedule(1) == large.schedule(1) != large.schedule(2)
    assert small.run(1).ledger == large.run(1).ledger
    for name in small.messages:
        assert np.array_equal(small.messages[name], large.messages[name][:2])
    # run 0 is the SimPy run; run 1's clocks and links come from stream (6, 1)
    assert large.schedule(0) == sc.run().schedule
    drift = run_rng(sc.seed, 1).uniform(-0.05, 0.05, sc.problem.num_agents)
    assert not np.array_equal(drift, run_rng(sc.seed, 2).uniform(-0.05, 0.05, sc.problem.num_agents))
    assert large.messages_lost.shape == (4,) and len(set(large.messages_lost.tolist())) > 1


@dataclass(frozen=True)
class TwoPointDeadline(Deadline):
    """Drift ``+-drift`` and jitter ``0`` or ``jitter``, each one draw (a subclass's own clock distribution)."""

    def sample_drift(self, rng: np.random.Generator) -> float:
        return self.drift * float(rng.choice((-1.0, 1.0)))

    def sample_jitter(self, rng: np.random.Generator) -> float:
        return self.jitter * float(rng.integers(0, 2))


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_a_deadline_subclass_draws_its_own_clocks_in_every_run(mode):
    """The SimPy engine calls ``sample_drift`` and ``sample_jitter``; so must every run of the batch engine.

    Run 0 is the SimPy run; run ``r >= 1`` starts agent ``i``'s round ``t`` at ``round_start`` of the drifts
    and jitters the subclass draws from stream ``(6, r)`` (``N`` drift calls, then ``T * N`` jitter calls,
    row ``t - 1``: round ``t``), which take two values each, not the parent's uniform ones.
    """
    timing = TwoPointDeadline(period=1.0, deadline=0.5, drift=0.1, jitter=0.3)
    sc = builders.huang_scenario(4, "complete", 6).replace(
        timing=timing, links=Links(LinkModel(ConstantLatency(0.55))), seed=3, mode=mode)
    single, batch = run_engines(sc)
    assert_batch_is_the_run(single, batch, sc)
    n, horizon = sc.problem.num_agents, sc.horizon
    many = sc.run(engine="batch", runs=3, transcripts=True)
    for r in (1, 2):
        rng = run_rng(sc.seed, r)
        drift = [timing.sample_drift(rng) for _ in range(n)]
        jitter = np.array([timing.sample_jitter(rng) for _ in range(horizon * n)]).reshape(horizon, n)
        rows = [row for row in many.run(r).transcript]
        assert len(rows) == horizon * n * (n - 1)
        for row in rows:
            start = timing.round_start(row.round, drift[row.sender], jitter[row.round - 1, row.sender])
            assert math.isclose(row.send_time, start, rel_tol=0, abs_tol=1e-12), (r, row)


@dataclass(frozen=True)
class EarlyEvenDeadline(Deadline):
    """A subclass's own round times: a later start in odd rounds, an early combine (0.1 period) in even ones."""

    def round_start(self, k: int, drift_i: float, jitter_ik: float) -> float:
        return super().round_start(k, drift_i, jitter_ik) + (0.05 if k % 2 else 0.0)

    def combine_time(self, k: int, drift_i: float, jitter_ik: float) -> float:
        return self.round_start(k, drift_i, jitter_ik) + (0.1 if k % 2 == 0 else self.deadline) * self.period


@pytest.mark.parametrize("mode", ["broadcast", "unicast"])
def test_a_deadline_subclass_with_its_own_round_times_runs_alike_on_both_engines(mode):
    """A ``Deadline`` subclass overriding ``round_start`` and ``combine_time``: every batch run uses them, as the
    SimPy engine does (the batch engine used ``Deadline``'s formulas: combines of even rounds 0.8 later, messages the
    SimPy run missed were combined, final states 2.0 apart on the same seed)."""
    timing = EarlyEvenDeadline(period=1.0, deadline=0.9, drift=0.05, jitter=0.02)
    sc = builders.huang_scenario(4, "complete", 6).replace(
        timing=timing, links=Links(LinkModel(ConstantLatency(0.5), loss=0.2)), seed=3, mode=mode)
    single, batch = run_engines(sc)
    assert_batch_is_the_run(single, batch, sc)
    assert (single.times[2] < 1.2).all()  # round 2's early combine (Deadline's own: after 1.85)
    many = sc.run(engine="batch", runs=3)
    rng = run_rng(sc.seed, 2)
    drift, jitter = timing.sample_drifts(rng, 4), timing.sample_jitters(rng, 6 * 4).reshape(6, 4)
    assert np.array_equal(many.run(2).times[2], [timing.combine_time(2, d, j) for d, j in zip(drift, jitter[1])])


@dataclass(frozen=True)
class NaNCombineDeadline(Deadline):
    def combine_time(self, k: int, drift_i: float, jitter_ik: float) -> float:
        return math.nan if k == 3 else super().combine_time(k, drift_i, jitter_ik)


@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_nan_round_time_is_refused_by_every_engine(engine):
    """The SimPy engine read a NaN combine time as "now" (``max(0, nan)`` is 0) and ran on; now both engines
    name the timing, the method, the agent and the round."""
    sc = builders.huang_scenario(3, "ring", 4).replace(timing=NaNCombineDeadline(period=1.0, deadline=0.5))
    with pytest.raises(TimingError, match=r"^NaNCombineDeadline.combine_time returned nan for (run 0, )?agent 0, "
                                          r"round 3: .* not NaN$"):
        sc.run(engine=engine)


@dataclass(frozen=True)
class WhereDeadline(Deadline):
    """Combines early in even rounds, written with ``np.where``: its times are 0-d arrays."""

    def combine_time(self, k: int, drift_i: float, jitter_ik: float) -> float:
        return np.where(k % 2, super().combine_time(k, drift_i, jitter_ik), self.round_start(k, drift_i, jitter_ik) + 0.1)


@dataclass(frozen=True)
class PairDeadline(Deadline):
    def round_start(self, k: int, drift_i: float, jitter_ik: float) -> float:
        return np.array([super().round_start(k, drift_i, jitter_ik)] * 2)


def test_a_round_time_given_as_a_0d_array_is_a_number_on_both_engines():
    """``np.where`` returns a 0-d array: both engines ran such a subclass before round times were checked, and the
    check refused it as not a real number; it is one (the engines agree). Two values for one time are refused."""
    sc = builders.huang_scenario(4, "ring", 5).replace(timing=WhereDeadline(period=1.0, deadline=0.5), seed=2,
                                                       links=Links(LinkModel(ConstantLatency(0.2))))
    single, batch = run_engines(sc)
    assert_batch_is_the_run(single, batch, sc)
    assert (single.times[2] < 1.2).all()  # round 2's early combine
    with pytest.raises(TimingError, match=r"^PairDeadline.round_start returned array\(\[0., 0.\]\) for agent 0, "
                                          r"round 1: a round's start and combine times must be real numbers"):
        sc.replace(timing=PairDeadline(period=1.0, deadline=0.5)).run()


def test_batch_runs_equal_simpy_runs_fed_the_same_noise():
    """Run r of a batch uses row r of the noise blocks: with injected noise, run 0 is the SimPy run on row 0."""
    sc = REGISTRY["huang2015"].example_scenario(seed=1).replace(
        timing=Deadline(period=1.0, deadline=0.9, drift=0.05), links=Links(LinkModel(ExponentialLatency(0.3), loss=0.2)))
    rng = np.random.default_rng(0)
    blocks = {0: rng.laplace(size=(sc.horizon, 3, sc.problem.num_agents, 2))}
    batch = sc.replace(noise=InjectedNoise(broadcast=blocks)).run(engine="batch", runs=3)
    single = sc.replace(noise=InjectedNoise(broadcast={0: blocks[0][:, 0]})).run()
    assert np.array_equal(batch.trajectory[0], single.trajectory)
    assert batch.schedule(0) == single.schedule


def test_keep_final_and_refusals():
    sc = REGISTRY["huang2015"].example_scenario(seed=1).replace(
        timing=Deadline(), links=Links(LinkModel(ExponentialLatency(0.3), loss=0.2)))
    full, lean = sc.run(engine="batch", runs=3), sc.run(engine="batch", runs=3, keep="final")
    assert np.array_equal(full.final, lean.final) and lean.ledger == full.ledger == sc.run().ledger
    with pytest.raises(ScenarioError, match="keep='all'"):
        lean.schedule(0)
    # lockstep rounds over lossless links (here: unicast) mix with the topology's weights in every run
    uni = sc.replace(timing=Lockstep(), links=Links(), mode="unicast")
    assert uni.run(engine="batch", runs=2, keep="final").schedule(1) == uni.run().schedule


def test_run_data_pickles_and_rebuilds_the_schedule():
    """What a batch keeps per run is arrays and flags (no closures): it pickles, and rebuilds the same schedule."""
    import pickle

    from asyncdp.engine.batch_detail import run_ledger, run_schedule

    sc = builders.huang_scenario(4, "ring", 5).replace(
        timing=Deadline(period=1.0, deadline=0.5), links=Links(LinkModel(ConstantLatency(0.5), loss=0.2)), seed=3)
    batch = sc.run(engine="batch", runs=2, transcripts=True)
    detail = pickle.loads(pickle.dumps(batch.detail))
    assert run_schedule(detail, 1) == batch.schedule(1) and run_ledger(detail, 0) == sc.run().ledger


@pytest.mark.slow
def test_batch_equals_simpy_exhaustively():
    """Every combination of a grid of scenarios, timings, latencies, losses and modes (minutes).

    Each combination runs once, on its own seed; odd seeds use reordering links.
    """
    import itertools

    timings = [Lockstep(m) for m in (None,) + MISSING]
    for d, drift, jitter, m in itertools.product((0.25, 0.5, 1.0), (0.0, 0.4), (0.0, 0.1), MISSING):
        if d + jitter <= 1.0 - drift:
            timings.append(Deadline(period=1.0, deadline=d, drift=drift, jitter=jitter, missing=m))
    latencies = [ZeroLatency(), ConstantLatency(0.25), ConstantLatency(1.0), ExponentialLatency(0.3),
                 LogNormalLatency(0.5, 0.0), LogNormalLatency(0.5, 0.5)]
    bases = [builders.huang_scenario(n, g, 6) for n in (2, 3, 5) for g in ("ring", "complete", "directed")]
    bases += [builders.registry_scenario(name, 6) for name in sorted(REGISTRY)]
    combinations = itertools.product(bases, timings, latencies, (0.0, 0.3), ("broadcast", "unicast"))
    for seed, (base, timing, latency, loss, mode) in enumerate(combinations):
        sc = base.replace(timing=timing, links=Links(LinkModel(latency, loss=loss, reorder=seed % 2 == 1)), mode=mode,
                          seed=seed)
        out = run_engines(sc)
        if out is not None:
            assert_batch_is_the_run(*out, sc)


def test_stale_lockstep_batch_of_many_runs():
    """Enough runs that a round of the freshest-message table has more cells than 16-bit indices reach.

    Lockstep rounds over lossy links with ``missing="stale"``: run 0 is the SimPy run and runs 1, 2 are those
    of a three-run batch; no combine reads a message of a round ahead (the barrier), and some read older ones.
    """
    sc = REGISTRY["huang2015"].example_scenario(seed=2).replace(
        timing=Lockstep(missing="stale"), links=Links(LinkModel(ExponentialLatency(0.2), loss=0.4)))
    runs = 150
    batch = sc.run(engine="batch", runs=runs)
    links = set()
    for t in range(1, sc.horizon + 1):
        w = sp.coo_array(sc.topology.weights(t))
        links |= {(int(j), int(i)) for i, j in zip(w.row, w.col) if i != j}
    links = len(links)
    assert runs * links > 2**15 // (sc.horizon + 2)  # (T + 2) R L cells: beyond int16
    assert np.array_equal(batch.trajectory[0], sc.run().trajectory)
    assert np.array_equal(batch.trajectory[:3], sc.run(engine="batch", runs=3).trajectory)
    older = 0
    for r in (0, 1, runs - 1):
        sched = batch.schedule(r)
        assert (sched.sender_round <= sched.round).all()
        older += int((sched.sender_round < sched.round).sum())
    assert older > 0

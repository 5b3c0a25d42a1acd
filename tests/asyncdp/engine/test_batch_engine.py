"""The batch engine: same rule objects as the SimPy engine, so the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp import REGISTRY, Async, Deadline, InjectedNoise, LinkModel, Links, Lockstep
from asyncdp.algorithms.base import Algorithm, Channel, NoiseDeclaration
from asyncdp.errors import ScenarioError

RUNS = 4
METRICS = ("optimality_error", "deviation", "consensus_error")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_engines_agree_on_injected_noise(name):
    """Every registered algorithm: batch (R runs at once) == SimPy lockstep run by run, to 1e-10."""
    sc = REGISTRY[name].example_scenario(seed=3)
    alg = sc.algorithm.bind(sc.problem)
    rng = np.random.default_rng(17)
    blocks = {}
    for c, ch in enumerate(alg.channels):
        if ch.noisy:
            dim = alg.noise(1, ch.name).dimension
            draw = rng.laplace if ch.mechanism == "laplace" else rng.normal
            blocks[c] = draw(size=(sc.horizon, RUNS, sc.problem.num_agents, dim))
    batch = sc.replace(noise=InjectedNoise(broadcast=blocks)).run(engine="batch", runs=RUNS, transcripts=True)
    for r in range(RUNS):
        single = sc.replace(noise=InjectedNoise(broadcast={c: b[:, r] for c, b in blocks.items()})).run()
        assert np.abs(batch.trajectory[r] - single.trajectory).max() <= 1e-10
        assert batch.ledger == single.ledger
        # one metric API: row r of the batch's metrics is the SimPy run's, and batch.run(r) reads the same row
        view = batch.run(r)
        for metric in METRICS:
            b, s, v = getattr(batch, metric)()[r], getattr(single, metric)(), getattr(view, metric)()
            assert b.shape == s.shape == (sc.horizon + 1,)
            assert np.allclose(b, s, rtol=1e-8, atol=1e-10), metric
            assert np.array_equal(v, b), metric
        assert batch.horizon == single.horizon and np.array_equal(batch.final[r], batch.trajectory[r, -1])
        # the batch transcript of run r carries the same payloads as the SimPy transcript
        obs_b = batch.run(r).transcript.observations(alg.channels[0].name)
        obs_s = single.transcript.observations(alg.channels[0].name)
        assert obs_b.keys() == obs_s.keys()
        assert max(np.abs(obs_b[k] - obs_s[k]).max() for k in obs_s) <= 1e-10


@dataclass(frozen=True)
class TwoNoisyChannels(Algorithm):
    """Gossip of ``x`` on a Laplace channel ``a`` and of ``2 x`` on a Gaussian channel ``b`` (silent in even rounds)."""

    name: ClassVar[str] = "test-two-noisy-channels"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("a", "laplace"), Channel("b", "gaussian"))

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("laplace", 0.5, 2, 1.0) if channel == "a" else NoiseDeclaration(
            "gaussian", 0.3 * (t % 2), 2, 1.0)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"a": state["x"] + 0.5 * noise["a"], "b": 2 * state["x"] + 0.3 * (t % 2) * noise["b"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {"x": 0.5 * mixed["a"] + 0.25 * mixed["b"]}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]


def test_lockstep_ledger_of_several_noisy_channels_is_in_the_simpy_order():
    """Round by round, agent by agent, then channel: the batch ledger listed channel ``a`` of every agent first."""
    base = REGISTRY["huang2015"].example_scenario(seed=4)
    sc = base.replace(algorithm=TwoNoisyChannels(), horizon=3)
    batch, single = sc.run(engine="batch", runs=2), sc.run()
    assert np.array_equal(batch.trajectory[0], single.trajectory)
    n = sc.problem.num_agents
    expected = [(t, i, c) for t in (1, 2, 3) for i in range(n) for c in (("a", "b") if t % 2 else ("a",))]
    assert [(r.round, r.agent, r.channel) for r in single.ledger] == expected
    assert batch.ledger == single.ledger


def test_one_seeded_batch_run_is_the_simpy_run():
    sc = REGISTRY["huang2015"].example_scenario(seed=5)
    batch, single = sc.run(engine="batch", runs=1), sc.run()
    assert np.array_equal(batch.trajectory[0], single.trajectory)
    for metric in METRICS:  # same states, same formulas (asyncdp.metrics): the same numbers to the bit
        assert np.array_equal(getattr(batch, metric)[0], getattr(single, metric)()), metric
        assert np.array_equal(getattr(batch, metric)()[0], getattr(single, metric)[:]), metric


def test_keep_final_matches_keep_all_and_metrics():
    sc = REGISTRY["huang2015"].example_scenario(seed=1)
    full = sc.run(engine="batch", runs=6)
    lean = sc.run(engine="batch", runs=6, keep="final")
    assert lean.trajectory is None
    assert np.array_equal(full.final, lean.final) and np.array_equal(full.optimality_error, lean.optimality_error)
    xbar = full.trajectory.mean(axis=2)
    assert np.allclose(full.optimality_error, ((xbar - full.optimum) ** 2).sum(-1))
    dev = np.sqrt(((full.trajectory - xbar[:, :, None]) ** 2).sum(-1)).max(-1)
    assert np.allclose(full.deviation, dev)
    assert full.consensus_error().shape == (6, sc.horizon + 1)
    cons = full.consensus_error()[:, -1]
    assert (dev[:, -1] <= cons + 1e-12).all() and (cons <= 2 * dev[:, -1] + 1e-12).all()
    assert np.allclose(cons, [full.run(r).consensus_error()[-1] for r in range(6)])
    # keep="final" kept only the final states: its consensus error is theirs, one per run
    assert np.array_equal(lean.consensus_error(), cons)


def test_runs_are_independent_and_seeded():
    sc = REGISTRY["huang2015"].example_scenario(seed=2)
    a, b = sc.run(engine="batch", runs=3), sc.run(engine="batch", runs=3)
    assert np.array_equal(a.trajectory, b.trajectory)
    assert not np.array_equal(a.trajectory[0], a.trajectory[1])


def test_out_of_scope_scenarios_are_refused():
    sc = REGISTRY["huang2015"].example_scenario()
    # Deadline and Async timing and lossy or unicast lockstep rounds run (test_batch_deadline.py, test_batch_async.py)
    assert sc.replace(timing=Deadline(), links=Links(LinkModel(loss=0.1)), mode="unicast").run(engine="batch").runs == 1
    assert sc.replace(links=Links(LinkModel(loss=0.1)), timing=Lockstep("stale")).run(engine="batch").runs == 1
    assert sc.replace(mode="unicast").run(engine="batch").runs == 1
    assert sc.replace(timing=Async(), links=Links(LinkModel(loss=0.1))).run(engine="batch", runs=2).runs == 2
    with pytest.raises(ScenarioError, match="runs must be >= 1, got 0"):
        sc.run(engine="batch", runs=0)
    with pytest.raises(ScenarioError, match="runs must be an integer, got 2.0"):
        sc.run(engine="batch", runs=2.0)
    with pytest.raises(ScenarioError, match="keep must be one of"):
        sc.run(engine="batch", keep="some")
    with pytest.raises(ScenarioError, match="unknown engine 'gpu'"):
        sc.run(engine="gpu")
    with pytest.raises(ScenarioError, match="one run at a time"):
        sc.run(runs=2)
    with pytest.raises(ScenarioError, match="keep='all'"):
        sc.run(engine="batch", keep="final").run(0)
    with pytest.raises(ScenarioError, match=r"run index must be < 2 \(the number of runs\), got 2"):
        sc.run(engine="batch", runs=2).run(2)
    with pytest.raises(ScenarioError, match=r"run index \(in \[0, 2\)\) must be >= 0, got -1"):
        sc.run(engine="batch", runs=2).run(-1)


@dataclass(frozen=True)
class UndeclaredChannel(TwoNoisyChannels):
    """Also sends ``x`` itself on a channel ``secret`` it does not declare, and mixes it into the update."""

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {**super().message(state, t, noise, agents, problem), "secret": state["x"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {"x": 0.5 * mixed["a"] + 0.25 * mixed["b"] + 1e-3 * mixed["secret"]}


@dataclass(frozen=True)
class MissingChannel(TwoNoisyChannels):
    """Declares ``a`` and ``b`` but sends on ``a`` only."""

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"a": super().message(state, t, noise, agents, problem)["a"]}


@pytest.mark.parametrize("rule, got", [(UndeclaredChannel(), r"\['a', 'b', 'secret'\]"), (MissingChannel(), r"\['a'\]")])
@pytest.mark.parametrize("timing", [Lockstep(), Deadline(deadline=0.5, drift=0.2, missing="stale"), Async()])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_message_on_other_channels_than_declared_is_refused_by_every_engine(rule, got, timing, engine):
    """The batch engine mixed an undeclared channel (the SimPy engine dropped it: a KeyError in the update), so the
    two engines ran different rules; now both name the rule, round, agent and channels."""
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=rule, horizon=3, timing=timing)
    with pytest.raises(ScenarioError, match=rf"round 1, agents? \d.*returned the channels {got}, but the rule "
                                            r"declares \['a', 'b'\]"):
        sc.run(engine) if engine == "simpy" else sc.run(engine, runs=2)


@dataclass(frozen=True)
class NoNoiseInRoundTwo(TwoNoisyChannels):
    """Returns ``None`` from ``noise(2, "b")`` (meaning no noise there) instead of a declaration of scale 0."""

    def noise(self, t: int, channel: str) -> Any:
        return None if (t, channel) == (2, "b") else super().noise(t, channel)


@pytest.mark.parametrize("timing", [Lockstep(), Deadline(deadline=0.5, drift=0.2, missing="stale"), Async()])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_missing_noise_declaration_is_refused_by_every_engine_naming_round_and_channel(timing, engine):
    """Each engine failed with AttributeError: 'NoneType' object has no attribute 'to_release' (a traceback at
    ``asyncdp run``); the privacy check alone named it."""
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=NoNoiseInRoundTwo(), horizon=3,
                                                                   timing=timing)
    with pytest.raises(ScenarioError, match=r"noise\(2, 'b'\) returned None, but channel 'b' is noisy: every round "
                                            r"needs a NoiseDeclaration \(scale 0 for none\)"):
        sc.run(engine) if engine == "simpy" else sc.run(engine, runs=2)


@dataclass(frozen=True)
class DropsACoordinate(TwoNoisyChannels):
    """Sends channel ``b`` with its last coordinate cut off (``[..., :-1]``), fewer than its declared noise's."""

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        out = super().message(state, t, noise, agents, problem)
        return {**out, "b": out["b"][..., :-1]}


@pytest.mark.parametrize("timing", [Lockstep(), Async()])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_noisy_message_narrower_than_its_noise_is_refused_naming_agent_and_channel(timing, engine):
    """The run failed later, in the cost's gradient at the mixed value ("round 1: x must have shape (..., 2), got
    shape (1,)"), naming neither the agent, the channel nor the step."""
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=DropsACoordinate(), horizon=3,
                                                                   timing=timing)
    with pytest.raises(ScenarioError, match=r"round 1, agents? \d.*message\(\) returned on channel 'b' 1 coordinate"
                                            r"\(s\), but the round's noise declaration .* has 2"):
        sc.run(engine) if engine == "simpy" else sc.run(engine, runs=2)


@dataclass(frozen=True)
class SendsItsState(Algorithm):
    """Push-sum-like weights ``w`` sent on a noise-free channel and halved in place by the update.

    ``send`` says how ``w`` is sent: ``"copy"`` (the values at sending time, the truth), ``"view"``
    (``state["w"][...]``) or ``"itself"`` (the state's own array).
    """

    send: str = "copy"
    name: ClassVar[str] = "test-sends-its-state"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("w"))

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float)
        return {"x": x, "w": 1.0 + np.reshape(np.asarray(agents, dtype=float), np.shape(agents) + (1,)) + 0 * x[..., :1]}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("laplace", 0.5, 2, 1.0)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        w = {"copy": state["w"].copy(), "view": state["w"][...], "itself": state["w"]}[self.send]
        return {"y": state["x"] + 0.5 * noise["y"], "w": w}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        w = state["w"]
        w *= 0.5  # in place: the array a view (or the state itself) was sent from
        w += 0.5 * mixed["w"]
        return {"x": mixed["y"] * w, "w": w}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]


@pytest.mark.parametrize("send", ["view", "itself"])
@pytest.mark.parametrize("timing", [Lockstep(), Deadline(deadline=0.5, drift=0.3, missing="stale"), Async(rate=3.0)])
def test_a_message_is_what_was_sent_even_if_the_state_behind_it_changes_in_place(send, timing):
    """The SimPy engine handed receivers (and its transcript) the sender's array itself: a view of the state
    changed when the sender's update wrote into it (lockstep: final states off by 0.16), and the state's own
    array was frozen by the transcript (a bare 'output array is read-only'). Both engines now give the run of a
    rule that sends copies."""
    base = REGISTRY["huang2015"].example_scenario(seed=4).replace(horizon=4, timing=timing)
    truth = base.replace(algorithm=SendsItsState("copy")).run()
    sc = base.replace(algorithm=SendsItsState(send))
    single, batch = sc.run(), sc.run(engine="batch", runs=2)
    assert np.array_equal(single.trajectory, truth.trajectory)
    assert np.array_equal(batch.trajectory[0], truth.trajectory)
    assert all(np.array_equal(a.payload, b.payload) for a, b in zip(single.transcript, truth.transcript))


@dataclass(frozen=True)
class CountsInMessage(TwoNoisyChannels):
    """Keeps a round counter in the state and increments it in place inside message() (R must only read)."""

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {**super().initial_state(x0, agents, problem), "k": np.zeros(np.shape(x0)[:-1] + (1,))}

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        state["k"] += 1.0
        out = super().message(state, t, noise, agents, problem)
        return {"a": out["a"] + state["k"], "b": out["b"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "k": state["k"]}


@pytest.mark.xfail(strict=True, reason="a rule writing into its state inside message() (here a counter) runs that "
                   "write once per receiver on the SimPy engine in unicast mode, once per agent on the batch engine, "
                   "and on a gathered copy of the state on the batch engine's asynchronous path: the engines' final "
                   "states differ by up to 5. Freezing the state during message() makes it a named error but also "
                   "refuses tests/fixtures/noise_reuse.py, whose rule keeps its first noise draw this way on purpose "
                   "(the privacy check must call it a violation); the engines would have to replay R's writes alike")
@pytest.mark.parametrize("timing", [Lockstep(), Async(rate=3.0)])
def test_a_message_step_that_writes_into_the_state_runs_alike_on_both_engines(timing):
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=CountsInMessage(), horizon=3,
                                                                timing=timing, mode="unicast")
    assert np.array_equal(sc.run("batch", runs=2).trajectory[0], sc.run().trajectory)


@dataclass(frozen=True)
class GrowsItsState(TwoNoisyChannels):
    """Adds a momentum entry ``m`` to the state in its first update (initial_state has none)."""

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        out = super().message(state, t, noise, agents, problem)
        return {"a": out["a"] + state.get("m", 0.0), "b": out["b"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        x = super().update(state, mixed, t, agents, problem)["x"]
        return {"x": x, "m": 0.5 * state.get("m", 0.0) + 0.1 * x}


@pytest.mark.parametrize("timing", [Lockstep(), Async(rate=3.0)])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_an_update_that_adds_state_entries_is_refused_by_every_engine(timing, engine):
    """The batch engine's asynchronous path stores the initial state's entries only: a bare KeyError 'm' there,
    while the SimPy engine ran the rule; now every engine names the rule, round and entries."""
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=GrowsItsState(), horizon=3, timing=timing)
    with pytest.raises(ScenarioError, match=r"round 1, agents? \d.*update\(\) returned the state entries \['m', 'x'\], "
                                            r"but the state has \['x'\]"):
        sc.run(engine) if engine == "simpy" else sc.run(engine, runs=2)

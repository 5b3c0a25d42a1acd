"""From noise declarations to ledger records, in both engines; and an agent with nothing to combine."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import topology
from accounting.errors import PrivacyParameterError
from asyncdp import Huang2015
from asyncdp.algorithms.base import NoiseDeclaration
from asyncdp.errors import MessageLostError
from asyncdp.engine.links import LinkModel, Links
from asyncdp.problems.problem import rendezvous_problem
from asyncdp.scenario import Scenario
from asyncdp.engine.timing import Async, Lockstep

ADDRESSES = np.array([[0.5, 0.2], [-0.4, 0.1], [0.0, -0.6], [0.3, 0.3]])


class _ScaleAtRound3(Huang2015):
    """Huang2015 whose round-3 declaration has a chosen (bad) scale."""

    bad_scale = math.nan

    def noise(self, t, channel):
        decl = super().noise(t, channel)
        return replace(decl, scale=self.bad_scale) if t == 3 else decl


def _scenario(alg, **kw):
    ring = 0.5 * (np.eye(4) + np.roll(np.eye(4), 1, axis=0))
    return Scenario(rendezvous_problem(ADDRESSES), topology.static(ring), alg, horizon=6, seed=2, **kw)


def test_to_release_maps_scale_zero_to_nothing_and_copies_the_declaration():
    assert NoiseDeclaration("laplace", 0.0, 2, 1.0).to_release(1, 4, 0.5, "y") is None
    r = NoiseDeclaration("gaussian", 0.25, 3, 2.0).to_release(1, 4, 0.5, "w", receiver=2)
    assert (r.agent, r.round, r.time, r.mechanism, r.scale, r.dimension, r.claimed_sensitivity, r.channel,
            r.receiver) == (1, 4, 0.5, "gaussian", 0.25, 3, 2.0, "w", 2)


@pytest.mark.parametrize("scale", [math.nan, -0.5, math.inf])
def test_to_release_rejects_a_bad_scale_naming_agent_and_round(scale):
    with pytest.raises(PrivacyParameterError, match="agent 1, round 4: noise scale must be positive and finite"):
        NoiseDeclaration("laplace", scale, 2, 1.0).to_release(1, 4, 0.5, "y")


@pytest.mark.parametrize("scale", [math.nan, -1.0])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_engines_refuse_a_bad_declared_scale_instead_of_skipping_the_release(engine, scale):
    alg = _ScaleAtRound3(epsilon=1.0, c=0.2, q=0.8, p=0.9)
    object.__setattr__(alg, "bad_scale", scale)
    sc = _scenario(alg)
    with pytest.raises(PrivacyParameterError, match=r"round 3: noise scale must be positive and finite"):
        sc.run(engine=engine) if engine == "batch" else sc.run()


@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_noise_off_releases_nothing_and_noise_on_releases_every_round(engine):
    off = _scenario(Huang2015(epsilon=math.inf, c=0.2, q=0.8, p=0.9))
    on = _scenario(Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9))
    run = (lambda sc: sc.run(engine="batch")) if engine == "batch" else (lambda sc: sc.run())
    assert len(run(off).ledger) == 0
    led = run(on).ledger
    assert len(led) == 4 * 6
    assert sorted((r.round, r.agent) for r in led) == [(t, i) for t in range(1, 7) for i in range(4)]
    alg = on.algorithm.bind(on.problem)
    assert all(r.scale == alg.noise_scale(r.round) and r.claimed_sensitivity == alg.sensitivity(r.round - 1)
               for r in led)


def test_agent_with_no_self_weight_and_no_message_is_a_clear_error():
    shift = np.roll(np.eye(3), 1, axis=0)  # doubly stochastic, zero diagonal: every agent only listens
    sc = Scenario(rendezvous_problem(ADDRESSES[:3]), topology.static(shift), Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9),
                  timing=Lockstep(missing="renormalize"), links=Links(LinkModel(loss=1.0)), horizon=3, seed=0)
    with pytest.raises(MessageLostError, match=r"round 1: agent \d has nothing to combine"):
        sc.run()


def test_async_run_ledger_times_are_the_send_times():
    sc = _scenario(Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9), timing=Async(rate=2.0), record_transcript=True)
    r = sc.run()
    sends = {(int(t), int(s)): float(tm) for t, s, tm in zip(r.transcript.column("round"),
                                                                r.transcript.column("sender"),
                                                                r.transcript.column("send_time"))}
    assert len(r.ledger) == 4 * 6
    for rel in r.ledger:
        assert rel.time == sends[(rel.round, rel.agent)]


def test_huang2015_pickled_by_earlier_versions_still_schedules_noise():
    """Earlier versions had no memos (noise scales, round factors) in the instance state."""
    import pickle

    alg = Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9).bind(_scenario(Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9)).problem)
    state = {k: v for k, v in alg.__dict__.items() if k not in ("_scales", "_factors")}
    old = Huang2015.__new__(Huang2015)
    old.__setstate__(state)
    assert old == alg and old.noise_scale(3) == alg.noise_scale(3)
    x, noise = {"x": np.array([0.25, -0.5])}, {"y": np.array([1.0, -2.0])}
    assert np.array_equal(old.message(x, 3, noise, 0, None)["y"], alg.message(x, 3, noise, 0, None)["y"])
    again = pickle.loads(pickle.dumps(alg))
    assert again == alg and again.noise_scale(5) == alg.noise_scale(5)

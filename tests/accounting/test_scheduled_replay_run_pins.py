"""A replay pinned to one agent per run (:class:`accounting.replay_inputs.RunPins`) constructs each run as the
replay of that run alone, pinned to its agent, constructs it: the same transcript, losses and residuals to the bit
(missing messages, a noise-free round and both message layouts included)."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.replay_inputs import ChannelNoise, RunPins
from accounting.scheduled_replay import scheduled_replay


class _Sched:
    """Receivers combine their neighbours' messages of the same round (a 3-agent ring); in round 2 nobody reads
    agent 0's message (so it may be missing)."""

    def dense(self, t):
        w = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
        if t == 2:
            w = np.array([[0.0, 0.5, 0.5], [0.0, 0.5, 0.5], [0.0, 0.5, 0.5]])
        return w, np.where(w > 0, t, 0)


class _Rule:
    """``x -> tanh(mixed) + shift``, its messages are ``x`` (on a unicast channel: ``x`` to every receiver)."""

    def __init__(self, shift):
        self.shift = shift

    def initial_state(self, runs):
        return np.zeros((runs, 3, 2))

    def message_means(self, state, t):
        return {"y": state}

    def next_state(self, state, mixed, t):
        return np.tanh(mixed["y"]) + self.shift


@pytest.mark.parametrize("unicast", [False, True])
def test_run_pins_construct_each_run_as_its_own_pinned_replay(unicast):
    runs, horizon = 12, 5
    rng = np.random.default_rng(7)
    shape = (runs, horizon, 3, 3, 2) if unicast else (runs, horizon, 3, 2)
    y = rng.normal(size=shape)
    y[2, 1, 0] = np.nan  # nothing observed (and nothing reads it): stays missing in the construction
    scales = np.full(horizon, 0.8)
    scales[2] = 0.0  # a round released without noise: every agent's message is its noise-free value
    noise = {"y": ChannelNoise("laplace", scales)}
    agents = rng.integers(0, 3, size=runs)
    agents[2] = 0  # run 2 is pinned to the agent whose round-2 message is missing
    schedules = [_Sched()] * runs
    rule, rule_p = _Rule(0.1), _Rule(-0.3)
    both = scheduled_replay({"y": y}, schedules, noise, rule, rule_p, unicast=unicast, pin_agent=RunPins(agents))
    noisy = both.per_round[:, scales > 0]  # (the noise-free round: P's values, probability 0 under P')
    assert np.isfinite(noisy).all() and np.abs(noisy).max() > 0 and np.isposinf(both.per_round[:, 2]).all()
    assert np.isnan(both.messages["y"][2, 1, 0]).all()
    for r in range(runs):
        alone = scheduled_replay({"y": y[r:r + 1]}, schedules[:1], noise, rule, rule_p, unicast=unicast,
                                 pin_agent=int(agents[r]))
        assert both.messages["y"][r].tobytes() == alone.messages["y"][0].tobytes()
        assert both.per_round[r].tobytes() == alone.per_round[0].tobytes()
        assert both.residuals["y"][r].tobytes() == alone.residuals["y"][0].tobytes()
    assert not np.array_equal(both.messages["y"], y, equal_nan=True)  # something was constructed


@pytest.mark.parametrize("unicast", [False, True])
def test_pinning_every_agent_in_order_constructs_what_any_order_constructs(unicast):
    """Every agent pinned in order (read as a slice of the messages) against the same agents in another order
    (an index array): the same transcript, losses and residuals to the bit, a noise-free round included."""
    runs, horizon = 6, 4
    rng = np.random.default_rng(9)
    shape = (runs, horizon, 3, 3, 2) if unicast else (runs, horizon, 3, 2)
    y = rng.normal(size=shape)
    scales = np.array([0.5, 0.0, 0.7, 0.9])
    noise = {"y": ChannelNoise("gaussian", scales)}
    rule, rule_p = _Rule(0.2), _Rule(-0.1)
    got = [scheduled_replay({"y": y}, [_Sched()] * runs, noise, rule, rule_p, unicast=unicast, pin_agent=pins)
           for pins in ([0, 1, 2], [2, 0, 1])]
    assert not np.array_equal(got[0].messages["y"], y)
    assert got[0].messages["y"].tobytes() == got[1].messages["y"].tobytes()
    assert got[0].per_round.tobytes() == got[1].per_round.tobytes()
    assert got[0].residuals["y"].tobytes() == got[1].residuals["y"].tobytes()

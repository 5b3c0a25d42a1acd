"""``scheduled_replay(..., losses=False)``: the residuals under both problems without the privacy losses.

The realized shifts need ``y - mu_P`` and ``y - mu_P'`` only; the replay then skips the noisy releases' density
ratios. Everything it returns is what the full replay returns (compared to the bit), and it refuses the same
transcripts (a noise-free release matching neither problem, a run matching ``P`` alone in one noise-free round
and ``P'`` alone in another).
"""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import AccountingError
from accounting.replay_inputs import ChannelNoise
from accounting.scheduled_replay import scheduled_replay
from asyncdp.privacy.behavior import replay_runs, run_engine
from asyncdp.privacy.context import small_example


def _same_arrays(a, b):
    assert set(a) == set(b)
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=True), k


@pytest.mark.parametrize("engine", ["batch", "simpy"])
def test_residuals_only_are_the_full_replay_s(engine):
    pair, ctx = small_example(runs=2)
    runs = run_engine(pair.adjacent, 40 if engine == "batch" else 4, seed=3, side=1, engine=engine)
    full = replay_runs(runs, pair.scenario, pair.adjacent, algorithm=ctx.algorithm)
    part = replay_runs(runs, pair.scenario, pair.adjacent, algorithm=ctx.algorithm, losses=False)
    assert full.losses is not None and np.isfinite(full.losses).all() and np.abs(full.losses).max() > 0
    assert part.losses is None and part.per_round is None
    _same_arrays(full.residuals, part.residuals)
    _same_arrays(full.residuals_prime, part.residuals_prime)
    assert full.noise_free_mismatch == part.noise_free_mismatch


class _Const:
    """x stays at ``c``; the message is x on a noise-free channel ``"w"`` and on a noisy channel ``"y"``."""

    def __init__(self, c):
        self.c = c

    def initial_state(self, runs):
        return np.full((runs, 2, 1), self.c)

    def message_means(self, x, t):
        return {"y": x, "w": x}

    def next_state(self, x, mixed, t):
        return x


class _Sched:
    def dense(self, t):
        return np.full((2, 2), 0.5), np.full((2, 2), t)


def _noise():
    return {"y": ChannelNoise("laplace", np.ones(2)), "w": ChannelNoise(None)}


@pytest.mark.parametrize("losses", [True, False])
def test_the_same_transcripts_are_refused(losses):
    y = np.zeros((1, 2, 2, 1))
    # round 1's noise-free values are P's (0), round 2's are P''s (1): probability 0 under both
    w = np.zeros((1, 2, 2, 1))
    w[0, 1] = 1.0
    with pytest.raises(AccountingError, match="only P in one noise-free round and only P' in another"):
        scheduled_replay({"y": y, "w": w}, [_Sched()], _noise(), _Const(0.0), _Const(1.0), losses=losses)
    # a noise-free release matching neither problem
    with pytest.raises(AccountingError, match="equal neither problem"):
        scheduled_replay({"y": y, "w": w + 5.0}, [_Sched()], _noise(), _Const(0.0), _Const(1.0), losses=losses)


def test_residuals_only_is_refused_with_a_draw_or_a_resume():
    y = {"y": np.zeros((1, 2, 2, 1))}
    full = scheduled_replay(y, [_Sched()], {"y": ChannelNoise("laplace", np.ones(2))}, _Const(0.0), _Const(1.0),
                            record=True)
    with pytest.raises(AccountingError, match="losses=False"):
        scheduled_replay(y, [_Sched()], {"y": ChannelNoise("laplace", np.ones(2))}, _Const(0.0), _Const(1.0),
                         resume=(2, full), losses=False)

"""A replay's losses do not depend on the process's string hashing: the channels' density terms are added in the
messages' order (a set of channel names, iterated in hash order, would add three channels' terms in an order
that changes with ``PYTHONHASHSEED``, and the sums in their last bits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import numpy as np
from accounting.replay_inputs import ChannelNoise
from accounting.scheduled_replay import scheduled_replay

N, T, R, d = 3, 4, 40, 2
CHANNELS = ["alpha", "beta", "gamma"]


class Rule:
    def __init__(self, shift):
        self.shift = shift

    def initial_state(self, runs):
        return np.zeros((runs, N, d)) + 0.1

    def message_means(self, x, t):
        out = {}
        for k, c in enumerate(CHANNELS):
            m = np.sin(x * (k + 1)) + 0.3 * k
            m[:, 0] += self.shift * (k + 1)
            out[c] = m
        return out

    def next_state(self, x, mixed, t):
        s = 0.5 * x
        for c in CHANNELS:
            s = s + 0.7 * mixed[c]
        return s


class Batch:
    def __init__(self, w, s):
        self.w, self.s = w, s

    def __len__(self):
        return self.w.shape[0]

    def __getitem__(self, sl):
        return Batch(self.w[sl], self.s[sl])

    def dense_runs(self, t):
        return self.w[:, t - 1], self.s[:, t - 1]


rng = np.random.default_rng(7)
w1 = rng.random((T, N, N))
w1 /= w1.sum(-1, keepdims=True)
s1 = np.stack([rng.integers(0, t + 1, size=(N, N)) for t in range(1, T + 1)])
w = np.broadcast_to(w1, (R,) + w1.shape).copy()
s = np.broadcast_to(s1, (R,) + s1.shape).copy()
msgs = {c: rng.normal(size=(R, T, N, d)) * 3 for c in CHANNELS}
noise = {c: ChannelNoise("gaussian", np.full(T, 0.37)) for c in CHANNELS}
out = scheduled_replay(msgs, Batch(w, s), noise, Rule(0.0), Rule(0.9137))
print(out.per_round.tobytes().hex())
'''


def test_three_channels_give_the_same_losses_under_every_string_hashing():
    root = Path(__file__).resolve().parents[2]
    got = set()
    for seed in ("0", "1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120,
                              check=True)
        got.add(done.stdout.strip())
    assert len(got) == 1

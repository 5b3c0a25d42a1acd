"""accounting.prober.probe_many (many probes refined in one loop) and the refinement's flat stop.

``probe_many`` shares only the cost of the refinement: every probe keeps its
own generator, samples, starts and search, so each result must be exactly
(bit for bit) that of ``probe_sensitivity`` on the same arguments alone,
whatever the other probes are (other dimensions, flat objectives, rules that
refuse batches and are refined by Nelder-Mead).

The flat stop: a start whose every candidate ties its value in three
consecutive iterations, and which has not moved in the last n + 1, stops. On a rule whose two updates never differ every
start is flat at once, so the refinement makes three iterations (two rule
calls each) instead of halving its step from 5e-2 to 1e-10 (29 iterations).
"""

from __future__ import annotations

import numpy as np
import pytest

from accounting.prober import AdjacentPair, ProbeRequest, probe_many, probe_sensitivity


def bump(c, width, n):
    """``U(z; s) = z - s exp(-|z - c|^2 / (2 width^2)) e``: a smooth peak at ``c``."""
    c = np.asarray(c, dtype=float)

    def rule(z, t, s):
        phi = np.exp(-np.sum((z - c) ** 2, axis=-1, keepdims=True) / (2 * width * width))
        return z - s * phi * np.linspace(1.0, 0.5, n)
    return rule


def projected(n):
    """A gradient step projected on the L2 ball of radius 1 (kinks at the sphere)."""
    a = np.linspace(-0.8, 0.6, n)

    def rule(z, t, s):
        y = z - 0.4 * (1 + s) * (z - a) - s * np.tanh(z)
        norm = np.sqrt(np.sum(y * y, axis=-1, keepdims=True))
        return y * np.minimum(1.0, 1.0 / np.maximum(norm, 1e-300))
    return rule


def unchanged(z, t, s):
    """Both problems move ``z`` the same way: the change is 0 everywhere (a flat objective)."""
    return 0.5 * z


def clipped_plateau(z, t, s):
    """``min(bump, 0.3)``: a plateau at the maximum, whose starts tie their neighbours."""
    phi = np.exp(-np.sum((z - 0.2) ** 2, axis=-1, keepdims=True) / 0.08)
    return z - s * np.minimum(phi, 0.3)


def one_at_a_time(rule):
    def single(z, t, s):
        if np.ndim(z) != 1:
            raise ValueError("one point at a time")
        return rule(z, t, s)
    return single


REQUESTS = [
    ProbeRequest(AdjacentPair(bump([0.3, -0.4], 0.1, 2), 0.0, 1.0, t=1, n=2), norm="l1", samples=300, seed=0),
    ProbeRequest(AdjacentPair(unchanged, 0.0, 1.0, t=1, n=2), norm="l2", samples=300, seed=1),
    ProbeRequest(AdjacentPair(projected(2), 0.0, 1.0, t=1, n=2), norm="linf", samples=300, seed=2),
    ProbeRequest(AdjacentPair(bump([1.5, -2.0, 0.5], 0.3, 3), 0.0, 1.0, t=2, n=3), norm="l2", samples=300, seed=3),
    ProbeRequest(AdjacentPair(clipped_plateau, 0.0, 1.0, t=1, n=3), norm="l1", samples=300, seed=4),
    ProbeRequest(AdjacentPair(one_at_a_time(bump([0.1, 0.2], 0.2, 2)), 0.0, 1.0, t=1, n=2), samples=100, seed=5),
    ProbeRequest(AdjacentPair(projected(2), 0.0, 1.0, t=1, n=2), norm="l1", samples=300, seed=6, refine=False),
]


def alone(req):
    return probe_sensitivity(req.pair, norm=req.norm, samples=req.samples, seed=req.seed,
                             radius_factor=req.radius_factor, refine=req.refine, claimed=req.claimed)


def same(a, b):
    return (a.max_found == b.max_found and np.array_equal(a.witness_z, b.witness_z)
            and a.evaluations == b.evaluations and a.samples == b.samples and a.violation == b.violation)


def test_every_result_is_that_of_its_probe_alone():
    together = probe_many(REQUESTS)
    assert len(together) == len(REQUESTS)
    for req, got in zip(REQUESTS, together):
        assert same(got, alone(req)), req


@pytest.mark.parametrize("order", [[1, 0], [0, 2, 1], [4, 3, 0], [2, 2]])
def test_a_result_does_not_depend_on_the_other_probes(order):
    reference = [alone(REQUESTS[k]) for k in order]
    for got, want in zip(probe_many([REQUESTS[k] for k in order]), reference):
        assert same(got, want)


def test_an_empty_list_gives_no_results():
    assert probe_many([]) == []


class Counting:
    def __init__(self, rule):
        self.rule, self.calls = rule, 0

    def update(self, z, t, s):
        self.calls += 1
        return self.rule(z, t, s)


def test_a_flat_objective_stops_after_three_iterations():
    rule = Counting(unchanged)
    res = probe_sensitivity(AdjacentPair(rule, 0.0, 1.0, t=1, n=2), samples=200)
    assert res.max_found == 0.0
    # sampling: 2 batch calls + 2 rows checked x 2 costs; refinement: 3 iterations x 2 costs; the witness: 2
    assert rule.calls == 2 + 4 + 3 * 2 + 2


def test_a_plateau_is_reached_and_its_flat_starts_stop():
    rule = Counting(clipped_plateau)
    res = probe_sensitivity(AdjacentPair(rule, 0.0, 1.0, t=1, n=3), norm="l1", samples=300)
    assert res.max_found == pytest.approx(0.3 * 3, rel=1e-12)
    # without the flat stop every start halves its step from 5e-2 to below 1e-10: 29 iterations at least
    assert rule.calls < 2 + 4 + 29 * 2 + 2


def clipped_ridge(z, t, s):
    """A rendezvous-like clipped step: the change saturates on a plateau whose rim the box corners touch."""
    g = 2 * (z - s)
    norm = np.sqrt(np.sum(g * g, axis=-1, keepdims=True))
    return np.clip(z - 0.1 * g * np.minimum(1.0, 1.5 / np.maximum(norm, 1e-300)), -1.0, 1.0)


STOP_FAMILIES = [
    (clipped_plateau, 3, "l1"),
    (clipped_ridge, 2, "l1"),
    (projected(3), 3, "l2"),
    (bump([0.5, -0.5], 0.05, 2), 2, "linf"),  # narrow: most starts lie where the bump underflows to 0
    (unchanged, 2, "l1"),
]


@pytest.mark.parametrize("rule,n,norm", STOP_FAMILIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_flat_stop_changes_no_result(monkeypatch, rule, n, norm, seed):
    """With the flat stop and without it (monkeypatched off), the same maximum up to the tie tolerance: a stopped
    start only skips iterations whose candidates all tie its value to rel 1e-13 (it could still creep by such ties,
    so its point may differ by that much), and the other starts keep their draws and paths."""
    import accounting.prober as prober

    pair = AdjacentPair(rule, 0.0, 1.0, t=1, n=n)
    with_stop = probe_sensitivity(pair, norm=norm, seed=seed, samples=300)
    monkeypatch.setattr(prober, "_FLAT_STOP", 10**9)
    without = probe_sensitivity(pair, norm=norm, seed=seed, samples=300)
    assert with_stop.max_found == pytest.approx(without.max_found, rel=1e-12, abs=1e-12)
    assert with_stop.evaluations <= without.evaluations


def ramp_to_shelf_with_far_bump(z, t, s):
    """A ramp up to a shelf (``z_0 + z_1 / 2 >= 0.2``, flat), and a broad bump (radius 2.7) far from the shelf, at
    a point only the drift of a start that climbed the ramp reaches (``x + 2 (x - x_{-n-1})``, four iterations
    after the start's neighbourhood turned flat; found by recording the search's candidates on this rule without
    the bump, seed 3, n = 4)."""
    base = np.maximum(np.clip(z[..., 0] + 0.5 * z[..., 1], None, 0.2), 0.0) + 1.0
    d = np.sqrt(np.sum((z - np.array([23.50266423, -3.89022361, 1.27857991, 16.39662058])) ** 2, axis=-1))
    return z - s * (base + np.maximum(0.0, 1.0 - d / 2.7))[..., None] * np.full(4, 0.25)


def test_the_flat_stop_waits_for_the_drift(monkeypatch):
    """A start whose neighbourhood is flat still has drift candidates far away until it has not moved for n + 1
    iterations (its ring of past iterates holds the climb): the flat stop must not skip them. Here the drift of the
    iterations after the third flat one finds the bump (2.2 against the shelf's 1.2) that no other candidate sees."""
    import accounting.prober as prober

    pair = AdjacentPair(ramp_to_shelf_with_far_bump, 0.0, 1.0, t=1, n=4)
    monkeypatch.setattr(prober, "_FLAT_STOP", 10**9)
    without = probe_sensitivity(pair, norm="l1", seed=3, samples=5)
    assert without.max_found > 1.5  # the bump is found (the shelf alone gives 1.2)
    monkeypatch.setattr(prober, "_FLAT_STOP", 3)
    with_stop = probe_sensitivity(pair, norm="l1", seed=3, samples=5)
    assert with_stop.max_found == pytest.approx(without.max_found, rel=1e-12)

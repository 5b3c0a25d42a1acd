"""Tests for accounting.prober on rules whose exact worst case is derived here.

Rendezvous-like rule (Huang, Mitra and Vaidya, ICDCN 2015, Example 2): ``U(z; a) = clip_[-1,1]^2(z - gamma * 2 (z - a))``
with ``a = (1, 1)``, ``a' = (-1, -1)``. Per coordinate, ``u = (1 - 2 gamma) z + 2 gamma a_k``,
so before clipping ``u - u' = 2 gamma (a_k - a'_k) = 4 gamma`` for every ``z``. Clipping to
``[-1, 1]`` is monotone and 1-Lipschitz, so ``|clip(u) - clip(u')|`` is the length of
``[u', u] ∩ [-1, 1]``, at most ``min(4 gamma, 2)``; it is attained when the interval
``[u', u]`` is inside ``[-1, 1]`` (``gamma <= 1/2``, any ``z`` in the box) or covers it
(``gamma >= 1/2``, ``z`` in the box). Hence the exact L1 maximum over all of ``R^2`` is
``2 min(4 gamma, 2)``: ``8 gamma = 2 gamma ||a - a'||_1`` for ``gamma <= 1/2``, reduced by
clipping to ``4`` above. Lemma 4 bounds it by ``2 C2 sqrt(n) gamma = 16 gamma`` with
``C2 = 4 sqrt 2``, ``n = 2``: a factor-2 slack (the triangle inequality ``||g - g'|| <= 2 C2``
where here ``||g - g'||_2 = 4 sqrt 2 = C2``).

Tolerances: the prober must reach 99% of the derived maximum (the brief's bar); it can never
exceed it by more than rounding (rel 1e-12), because every reported value is attained.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.prober import AdjacentPair, FunctionRule, ProbeResult, UpdateRule, probe_sensitivity

A, A_PRIME = np.array([1.0, 1.0]), np.array([-1.0, -1.0])
C2 = 4 * math.sqrt(2)


def rendezvous(gamma):
    def rule(z, t, a):
        return np.clip(z - gamma * 2 * (z - a), -1.0, 1.0)
    return rule


def exact_max(gamma):
    return 2 * min(4 * gamma, 2.0)


def l1(rule, z, t, a, b):
    return float(np.abs(rule(z, t, a) - rule(z, t, b)).sum())


@pytest.mark.parametrize("gamma", [0.05, 0.3, 0.75])
def test_rendezvous_reaches_but_never_exceeds_the_exact_maximum(gamma):
    rule = rendezvous(gamma)
    res = probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=1, n=2, domain_box=(-1, 1)))
    assert isinstance(res, ProbeResult)
    assert 0.99 * exact_max(gamma) <= res.max_found <= exact_max(gamma) * (1 + 1e-12)
    # the reported value is attained at the witness
    assert res.max_found == pytest.approx(l1(rule, res.witness_z, 1, A, A_PRIME), rel=1e-12)
    if gamma == 0.75:
        assert res.max_found < 2 * gamma * 4  # clipping reduced it below 2 gamma ||a - a'||_1


def test_half_the_true_value_is_a_violation_with_a_reproducible_witness():
    gamma = 0.1
    rule = rendezvous(gamma)
    res = probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=3, n=2), claimed=exact_max(gamma) / 2)
    assert res.violation
    assert res.ratio_to_claim == pytest.approx(2.0, rel=1e-9)
    assert l1(rule, res.witness_z, 3, A, A_PRIME) == pytest.approx(res.max_found, rel=1e-12)
    assert l1(rule, res.witness_z, 3, A, A_PRIME) > res.claimed


def test_lemma4_bound_holds_with_factor_two_slack():
    gamma = 0.1
    lemma4 = 2 * C2 * math.sqrt(2) * gamma  # = 16 gamma
    res = probe_sensitivity(AdjacentPair(rendezvous(gamma), A, A_PRIME, t=1, n=2), claimed=lemma4)
    assert not res.violation
    assert 0.495 <= res.ratio_to_claim <= 0.5 * (1 + 1e-12)


def test_worst_case_outside_the_domain_is_found():
    """Unclipped gradient step on costs ``s ||z - b||^2`` that differ in curvature (s = 1 vs 2).

    ``U(z; s) - U(z; s') = 2 gamma (s' - s)(z - b)``, whose L1 norm grows without bound off the
    domain; its supremum over the domain ``[-1, 1]^2`` is ``2 gamma (1.5 + 1.5) = 6 gamma``
    (at ``z = (-1, -1)``, with ``b = (0.5, 0.5)``). A bound checked only on the domain would
    accept ``6 gamma``; the prober must refute it with a witness outside the box.
    """
    gamma, b = 0.1, np.array([0.5, 0.5])

    def rule(z, t, s):
        return z - gamma * 2 * s * (z - b)

    in_domain_sup = 6 * gamma
    res = probe_sensitivity(AdjacentPair(rule, 1.0, 2.0, t=1, n=2, domain_box=(-1, 1)), claimed=in_domain_sup)
    assert res.violation
    assert not res.witness_in_domain
    assert np.max(np.abs(res.witness_z)) > 1.0
    # at least the value at the corner (-3, -3) of the default search box (radius_factor 3)
    assert res.max_found >= 2 * gamma * (3.5 + 3.5)
    assert res.max_found == pytest.approx(2 * gamma * np.abs(res.witness_z - b).sum(), rel=1e-12)


def test_clipped_gradient_keeps_lemma4_even_outside():
    """Lemma 4 of Huang, Mitra and Vaidya (ICDCN 2015) made exact: clip the gradient to L2 norm C2 (z can roam)."""
    gamma = 0.1

    def rule(z, t, a):
        g = 2 * (z - a)
        norm = np.linalg.norm(g, axis=-1, keepdims=True)
        return z - gamma * g * np.minimum(1.0, C2 / np.maximum(norm, 1e-300))

    lemma4 = 2 * C2 * math.sqrt(2) * gamma
    res = probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=1, n=2), claimed=lemma4)
    assert not res.violation  # evidence only: the prober cannot prove a bound
    assert res.max_found >= 0.99 * 8 * gamma  # the in-domain value 8 gamma is still found


def test_refinement_climbs_a_narrow_peak():
    """``U(z; s) = z - gamma s phi(z) e`` with a Gaussian bump phi of width 0.1 at ``b``.

    The L1 difference is ``gamma |s - s'| phi(z) ||e||_1``, maximal (= 0.2 here) only at ``z = b``.
    """
    gamma, b, w, e = 0.1, np.array([0.3, -0.2]), 0.1, np.array([1.0, 1.0])

    def rule(z, t, s):
        phi = np.exp(-np.sum((z - b) ** 2, axis=-1, keepdims=True) / (2 * w * w))
        return z - gamma * s * phi * e

    pair = AdjacentPair(rule, 0.0, 1.0, t=1, n=2)
    peak = gamma * 1.0 * 2.0
    rough = probe_sensitivity(pair, samples=300, refine=False)
    fine = probe_sensitivity(pair, samples=300, refine=True)
    assert fine.max_found >= (1 - 1e-6) * peak
    assert fine.max_found <= peak * (1 + 1e-12)
    assert rough.max_found < fine.max_found
    np.testing.assert_allclose(fine.witness_z, b, atol=1e-3)


class Counting:
    """An UpdateRule object that counts calls; ``batch`` says whether it accepts (k, n) arrays."""

    def __init__(self, gamma, batch):
        self.gamma, self.batch, self.calls = gamma, batch, 0

    def update(self, z, t, a):
        self.calls += 1
        if not self.batch and np.ndim(z) != 1:
            raise ValueError("one point at a time")
        return np.clip(z - self.gamma * 2 * (z - a), -1.0, 1.0)


def test_batches_are_used_when_accepted_and_results_agree():
    batched, looped = Counting(0.1, True), Counting(0.1, False)
    assert isinstance(batched, UpdateRule)
    r1 = probe_sensitivity(AdjacentPair(batched, A, A_PRIME, t=1, n=2), refine=False, samples=500)
    r2 = probe_sensitivity(AdjacentPair(looped, A, A_PRIME, t=1, n=2), refine=False, samples=500)
    assert batched.calls <= 10  # 2 batch calls + 2 rows checked x 2 costs + the witness
    assert looped.calls >= 2 * 500
    assert r1.max_found == pytest.approx(r2.max_found, rel=1e-12)
    assert r1.samples == r2.samples


def test_a_rule_that_mixes_batch_rows_falls_back_to_a_loop():
    gamma = 0.1

    def mixing(z, t, a):  # correct for one point; a whole-array norm mixes the rows of a batch
        return z - gamma * (z - a) * np.linalg.norm(z)

    def single_only(z, t, a):
        if np.ndim(z) != 1:
            raise ValueError("one point at a time")
        return mixing(z, t, a)

    r1 = probe_sensitivity(AdjacentPair(mixing, A, A_PRIME, t=1, n=2), samples=400)
    r2 = probe_sensitivity(AdjacentPair(single_only, A, A_PRIME, t=1, n=2), samples=400)
    assert r1.max_found == pytest.approx(r2.max_found, rel=1e-12)
    np.testing.assert_allclose(r1.witness_z, r2.witness_z, rtol=1e-12)


def test_closures_are_wrapped_and_identical_costs_give_zero():
    pair = AdjacentPair(rendezvous(0.1), A, A, t=1, n=2)
    assert isinstance(pair.rule, FunctionRule)
    res = probe_sensitivity(pair, claimed=0.0, samples=100)
    assert res.max_found == 0.0 and not res.violation


def test_other_norms_and_box_shapes():
    gamma = 0.1  # no clipping inside the box: difference (0.4, 0.4) everywhere there
    res2 = probe_sensitivity(AdjacentPair(rendezvous(gamma), A, A_PRIME, t=1, n=2, domain_box=([-1, -1], [1, 1])),
                             norm="l2", samples=200)
    assert res2.max_found == pytest.approx(4 * gamma * math.sqrt(2), rel=1e-12)
    resinf = probe_sensitivity(AdjacentPair(rendezvous(gamma), A, A_PRIME, t=1, n=2), norm="linf", samples=200)
    assert resinf.max_found == pytest.approx(4 * gamma, rel=1e-12)


def test_deterministic_for_a_seed():
    pair = AdjacentPair(rendezvous(0.3), A, A_PRIME, t=1, n=2)
    a, b = probe_sensitivity(pair, seed=5, samples=300), probe_sensitivity(pair, seed=5, samples=300)
    assert a.max_found == b.max_found
    np.testing.assert_array_equal(a.witness_z, b.witness_z)


PAIR = AdjacentPair(lambda z, t, a: z - 0.1 * (z - a), A, A_PRIME, t=1, n=2)
BAD_PROBE = [
    (dict(norm="l3"), "norm", "'l3'"),
    (dict(samples=0), "samples", "0"),
    (dict(radius_factor=0.5), "radius_factor", "0.5"),
    (dict(claimed=-1.0), "claimed", "-1.0"),
    (dict(claimed=math.inf), "claimed", "inf"),
]


@pytest.mark.parametrize("kwargs,name,value", BAD_PROBE)
def test_bad_probe_arguments_name_parameter_and_value(kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        probe_sensitivity(PAIR, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


BAD_PAIR = [
    (dict(n=0), "n", "0"),
    (dict(t=-2), "t", "-2"),
    (dict(domain_box=(1.0, -1.0)), "domain_box", "(1.0, -1.0)"),
    (dict(domain_box=(0.0, 1.0, 2.0)), "domain_box", "(0.0, 1.0, 2.0)"),
]


@pytest.mark.parametrize("kwargs,name,value", BAD_PAIR)
def test_bad_pairs_name_parameter_and_value(kwargs, name, value):
    args = dict(rule=rendezvous(0.1), cost=A, cost_prime=A_PRIME, t=1, n=2) | kwargs
    with pytest.raises(PrivacyParameterError) as info:
        AdjacentPair(**args)
    msg = str(info.value)
    assert name in msg and value in msg, msg


def test_non_callable_rule_and_wrong_output_shape():
    with pytest.raises(PrivacyParameterError, match="rule must have an update"):
        AdjacentPair(42, A, A_PRIME, t=1, n=2)
    for rule, shapes in ((lambda z, t, a: np.zeros(3 if a[0] > 0 else 2), r"\(3,\) and \(2,\)"),
                         (lambda z, t, a: np.float64(z.sum()), r"\(\) and \(\)")):
        with pytest.raises(AccountingError, match=r"one vector of the same shape \(m,\).*" + shapes):
            probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=1, n=2), samples=10)


@pytest.mark.parametrize("batch", [True, False])
def test_a_value_narrower_than_the_point_is_probed(batch):
    """A rule's probed value may have fewer coordinates than ``z`` (a one-coordinate channel of a 2-D state).

    ``U(z; a) = clip(<a, z>, -1, 1)``, one coordinate: with ``a' = -a`` the L1 change is ``2 min(|<a, z>|, 1)``,
    exactly 2 wherever ``|<a, z>| >= 1`` (the corner ``(1, 1)`` of the box). The prober raised "rule.update must
    return shape (2,)" for it, so the privacy check of every rule with such a channel stopped there.
    """
    def rule(z, t, a):
        if not batch and np.ndim(z) != 1:
            raise ValueError("one point at a time")
        return np.clip(np.asarray(z) @ a, -1.0, 1.0)[..., None]

    res = probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=1, n=2, domain_box=(-1, 1)), samples=200, claimed=1.0)
    assert res.max_found == 2.0 and res.violation
    assert l1(rule, res.witness_z, 1, A, A_PRIME) == 2.0


def test_a_float32_rule_attaining_its_bound_is_not_refuted_by_float32_round_off():
    """A rule computing in float32 (memory at scale) rounds each output to float32's spacing (about 6e-8 near 0.5),
    2^29 times float64's: the rendezvous rule in float32 attains its exact maximum ``8 gamma`` up to that round-off,
    which the comparison allows (it refuted the correct rule with '0.400000 > 0.4'); half the bound still refutes."""
    gamma = 0.05

    def rule32(z, t, a):
        return np.clip(np.float32(z) - np.float32(gamma * 2) * (np.float32(z) - np.float32(a)), -1.0, 1.0)

    pair = AdjacentPair(rule32, A, A_PRIME, t=1, n=2, domain_box=(-1, 1))
    res = probe_sensitivity(pair, claimed=exact_max(gamma))
    assert res.max_found > exact_max(gamma) * (1 + 1e-9)  # float32 round-off above the real maximum
    assert res.roundoff >= res.max_found - exact_max(gamma)
    assert not res.violation
    half = probe_sensitivity(pair, claimed=exact_max(gamma) / 2)
    assert half.violation and half.ratio_to_claim == pytest.approx(2.0, rel=1e-6)


def test_a_float32_rule_exceeding_its_bound_by_ten_float32_ulps_is_refuted():
    """The float32 allowance is 4 z.size = 8 ulps of float32 at the state's scale (about 1.4 here): the rendezvous
    rule in float32 attains ``8 gamma`` (up to round-off), so a claim 10 such ulps below it is refuted."""
    gamma = 0.05

    def rule32(z, t, a):
        return np.clip(np.float32(z) - np.float32(gamma * 2) * (np.float32(z) - np.float32(a)), -1.0, 1.0)

    claimed = exact_max(gamma) - 10 * float(np.spacing(np.float32(1.4)))
    res = probe_sensitivity(AdjacentPair(rule32, A, A_PRIME, t=1, n=2, domain_box=(-1, 1)), claimed=claimed)
    assert res.violation and res.max_found >= exact_max(gamma)


def test_the_allowance_is_the_precision_of_the_witness_outputs_not_of_other_points():
    """A float64 rule with a real excess of 2e-6 of its bound (8e-7) that answers in float16 only outside its box
    (never the witness) was passed with float16's allowance (0.0078, capped at 4e-6): the precision is read from the
    outputs at the witness, float64 here (allowance 2e-15)."""
    gamma = 0.05 * (1 + 2e-6)

    def rule(z, t, a):
        out = np.clip(z - 2 * gamma * (z - a), -1.0, 1.0)
        return out.astype(np.float16) if np.any(np.abs(z) > 1) else out

    res = probe_sensitivity(AdjacentPair(rule, A, A_PRIME, t=1, n=2, domain_box=(-1, 1)), claimed=exact_max(0.05))
    assert res.witness_in_domain and res.max_found == pytest.approx(exact_max(gamma), rel=1e-12)
    assert res.violation


def test_a_coarse_precision_covers_at_most_a_small_share_of_the_bound():
    """A float16 rule (dim 10, far points near 100) moves its output by about 0.16 where the claim is 0.005; its
    float16 round-off allowance (0.6) covered the 31-fold excess. A coarser precision covers at most
    ``ROUNDOFF_SHARE`` of the bound: the rule's outputs really move that much."""
    d, gamma = 10, 0.05
    a, a_prime = np.full(d, 0.01), np.full(d, -0.01)

    def rule16(z, t, a):
        z16 = z.astype(np.float16)
        return z16 - np.float16(2 * gamma) * (z16 - a.astype(np.float16))

    pair = AdjacentPair(rule16, a, a_prime, t=1, n=d, domain_box=(-1, 1))
    res = probe_sensitivity(pair, claimed=0.005, norm="l1", samples=100)
    assert res.roundoff > res.max_found > 0.005 * 10 and res.violation

"""Tests for accounting.papers.huang2015, Huang, Mitra and Vaidya (ICDCN 2015): sensitivity bounds, claims, recomputed epsilons.

Moved from tests/accounting/test_sensitivity.py and test_theorems.py (one file per paper).
The expected values are computed in the tests, independently of the module. Tolerances:
a sensitivity is a product of at most five floating-point factors (relative rounding error
below 1e-15), so single closed forms use rel=1e-12; a loop of at most 400 terms accumulates
a relative rounding error below 400 * 2.2e-16 < 1e-13, so loop-vs-closed-form comparisons
use rel=1e-10.
"""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from accounting.errors import PrivacyParameterError
from accounting.ledger import Ledger, Release
from accounting.claims import verify
from accounting.papers.huang2015 import (
    huang2015_sensitivity,
    huang2015_release_sensitivity,
    huang2015_claim,
    huang2015_noise_scale,
    huang2015_effective_epsilon,
    huang2015_effective_epsilon_from_ledger,
)

REL = 1e-12
# Example 2 of Huang, Mitra and Vaidya (ICDCN 2015): grad ||x - a||^2 = 2(x - a), |x - a| <= 2 sqrt 2 on [-1,1]^2
C2_EX2 = 4 * math.sqrt(2)


# -- Huang, Mitra and Vaidya (ICDCN 2015) --------------------------------------------------
def test_huang_hand_values():
    # 2 * 4 sqrt2 * sqrt2 * 0.1 = 1.6 ; then times q = 0.5 per round
    kw = dict(C2=C2_EX2, n=2, c=0.1, q=0.5)
    assert huang2015_sensitivity(0, **kw) == 0.0
    assert huang2015_sensitivity(1, **kw) == pytest.approx(1.6, rel=REL)
    assert huang2015_sensitivity(2, **kw) == pytest.approx(0.8, rel=REL)
    assert huang2015_sensitivity(3, **kw) == pytest.approx(0.4, rel=REL)


def test_huang_release_is_shifted_by_one_round():
    kw = dict(C2=C2_EX2, n=2, c=0.1, q=0.5)
    assert huang2015_release_sensitivity(1, **kw) == 0.0  # y(1) masks x(0)
    for t in range(2, 12):
        assert huang2015_release_sensitivity(t, **kw) == huang2015_sensitivity(t - 1, **kw)
    assert huang2015_release_sensitivity(2, **kw) == pytest.approx(1.6, rel=REL)


@given(
    t=st.integers(1, 200),
    C2=st.floats(1e-3, 1e3),
    n=st.integers(1, 50),
    c=st.floats(1e-3, 10),
    q=st.floats(0.01, 0.99),
)
def test_huang_is_geometric(t, C2, n, c, q):
    kw = dict(C2=C2, n=n, c=c, q=q)
    d1 = huang2015_sensitivity(1, **kw)
    assert d1 == pytest.approx(2 * C2 * math.sqrt(n) * c, rel=REL)
    assert huang2015_sensitivity(t + 1, **kw) == pytest.approx(q * huang2015_sensitivity(t, **kw), rel=1e-10)


# -- independent Huang, Mitra and Vaidya (ICDCN 2015) helpers ------------------------------
def _delta(t, C2, n, c, q):
    """Lemma 4 written out: Delta(t) = 2 C2 sqrt(n) c q^(t-1), Delta(0) = 0."""
    return 0.0 if t == 0 else 2 * C2 * math.sqrt(n) * c * q ** (t - 1)


def _scale(t, eps, C2, n, c, q, p, schedule):
    """Eq. (8) (power t-1) or the Theorem 5 proof (power t)."""
    power = t - 1 if schedule == "eq8" else t
    return 2 * C2 * math.sqrt(n) * c * p**power / (eps * (p - q))


def _partial_sum(T, eps, C2, n, c, q, p, schedule):
    """sum_{t=2}^{T} Delta(t-1)/M_t by an explicit loop (y(t) masks x(t-1)).

    Each term is exp(log Delta(t-1) - log M_t): Delta and M_t on their own underflow
    to 0 for long horizons (e.g. p = 1/16, t = 269), their ratio does not.
    """
    power = (lambda t: t - 1) if schedule == "eq8" else (lambda t: t)
    log_k = math.log(2 * C2 * math.sqrt(n) * c)
    total = 0.0
    for t in range(2, T + 1):
        log_delta = log_k + (t - 2) * math.log(q)  # Delta(t-1), Lemma 4
        log_scale = log_k + power(t) * math.log(p) - math.log(eps * (p - q))  # M_t, eq. (8) or the proof
        total += math.exp(log_delta - log_scale)
    return total


def test_partial_sum_helper_matches_the_direct_ratio_where_nothing_underflows():
    c, q, p, T = 0.3, 0.5, 0.8, 40
    for schedule in ("eq8", "theorem5-proof"):
        direct = sum(_delta(t - 1, C2_EX2, 2, c, q) / _scale(t, 0.7, C2_EX2, 2, c, q, p, schedule)
                     for t in range(1, T + 1))
        assert _partial_sum(T, 0.7, C2_EX2, 2, c, q, p, schedule) == pytest.approx(direct, rel=1e-12)


@st.composite
def cqp(draw):
    c = draw(st.floats(1e-3, 5.0))
    q = draw(st.floats(0.01, 0.95))
    p = draw(st.floats(q, 0.999, exclude_min=True))
    assume(p - q > 1e-6)
    return c, q, p


# -- Huang, Mitra and Vaidya (ICDCN 2015) --------------------------------------------------
@given(params=cqp(), eps=st.floats(0.01, 10.0), C2=st.floats(0.1, 10.0), n=st.integers(1, 10))
def test_huang_limits_eq8_is_epsilon_and_proof_is_epsilon_over_p(params, eps, C2, n):
    c, q, p = params
    kw = dict(epsilon=eps, c=c, q=q, p=p, C2=C2, n=n)
    # the sums go through p - q, whose rounding error (half an ulp of p) is amplified by p / (p - q) in
    # relative terms; a few roundings more for the series and the division
    rel = 1e-12 + 16 * sys.float_info.epsilon * p / (p - q)
    # geometric series written independently: first term eps (p-q)/p (eq8) or eps (p-q)/p^2 (proof), ratio q/p
    r = q / p
    assert huang2015_effective_epsilon(**kw, schedule="eq8") == pytest.approx(eps * (p - q) / p / (1 - r), rel=rel)
    assert huang2015_effective_epsilon(**kw, schedule="theorem5-proof") == pytest.approx(
        eps * (p - q) / p**2 / (1 - r), rel=rel
    )
    assert huang2015_effective_epsilon(**kw, schedule="eq8") == pytest.approx(eps, rel=rel)
    assert huang2015_effective_epsilon(**kw, schedule="theorem5-proof") == pytest.approx(eps / p, rel=rel)


@given(params=cqp(), T=st.integers(1, 400), schedule=st.sampled_from(["eq8", "theorem5-proof"]))
def test_huang_finite_horizon_equals_loop(params, T, schedule):
    c, q, p = params
    kw = dict(epsilon=0.7, c=c, q=q, p=p, C2=C2_EX2, n=2)
    expected = _partial_sum(T, 0.7, C2_EX2, 2, c, q, p, schedule)
    assert huang2015_effective_epsilon(**kw, schedule=schedule, horizon=T) == pytest.approx(expected, rel=1e-10, abs=0)


@pytest.mark.parametrize("schedule", ["eq8", "theorem5-proof"])
def test_huang_partial_sums_increase_to_the_limit(schedule):
    c, q, p, eps = 0.2, 0.6, 0.8, 1.0
    kw = dict(epsilon=eps, c=c, q=q, p=p, C2=C2_EX2, n=2, schedule=schedule)
    limit = huang2015_effective_epsilon(**kw)
    # up to T = 80 the increment limit (q/p)^(T-1) (1 - q/p) >= 1e-11 is far above rounding (1e-16),
    # so the partial sums must increase strictly; beyond that they may saturate at the limit in floats
    values = [huang2015_effective_epsilon(**kw, horizon=T) for T in range(1, 81)]
    assert values[0] == 0.0  # y(1) masks x(0): nothing leaks
    assert all(b > a for a, b in zip(values, values[1:]))
    assert all(v < limit for v in values)
    # the gap is limit * (q/p)^(T-1); it is a difference of two numbers close to limit (< 1.3), so its
    # absolute rounding error is a few ulps of 1.3, i.e. < 1e-15: abs=1e-14
    for T in (2, 10, 50, 80):
        assert limit - values[T - 1] == pytest.approx(limit * (q / p) ** (T - 1), rel=0, abs=1e-14)
    far = huang2015_effective_epsilon(**kw, horizon=400)
    assert values[-1] < far <= limit and far == pytest.approx(limit, rel=1e-15)


@pytest.mark.parametrize("schedule", ["eq8", "theorem5-proof"])
def test_huang_from_scales_matches_closed_form(schedule):
    c, q, p, eps, T = 0.1, 0.5, 0.9, 0.5, 80
    scales = [_scale(t, eps, C2_EX2, 2, c, q, p, schedule) for t in range(1, T + 1)]
    got = huang2015_effective_epsilon_from_ledger(scales, C2=C2_EX2, n=2, c=c, q=q)
    closed = huang2015_effective_epsilon(epsilon=eps, c=c, q=q, p=p, C2=C2_EX2, n=2, schedule=schedule, horizon=T)
    assert got == pytest.approx(closed, rel=1e-10)
    # the module's own scale function agrees with the schedule written here
    assert huang2015_noise_scale(7, epsilon=eps, C2=C2_EX2, n=2, c=c, q=q, p=p, schedule=schedule) == pytest.approx(
        scales[6], rel=1e-12
    )


def _release(agent, t, scale, claimed=math.nan, receiver=None):
    return Release(agent=agent, round=t, time=float(t), mechanism="laplace", scale=scale, dimension=2,
                   claimed_sensitivity=claimed, receiver=receiver)


def test_huang_from_ledger_uses_independent_sensitivity_and_worst_agent():
    c, q, p, eps, T = 0.1, 0.5, 0.8, 1.0, 40
    scales = [_scale(t, eps, C2_EX2, 2, c, q, p, "eq8") for t in range(1, T + 1)]
    # agent 0 follows eq. (8); agent 1 uses half the noise; both claim an absurdly small sensitivity
    led = Ledger([_release(0, t, m, claimed=1e-12) for t, m in enumerate(scales, 1)]
                 + [_release(1, t, m / 2, claimed=1e-12) for t, m in enumerate(scales, 1)])
    expected_agent0 = _partial_sum(T, eps, C2_EX2, 2, c, q, p, "eq8")
    got = huang2015_effective_epsilon_from_ledger(led, C2=C2_EX2, n=2, c=c, q=q)
    assert got == pytest.approx(2 * expected_agent0, rel=1e-10)
    # two unicast copies with independent noise per round count twice
    uni = Ledger([_release(0, t, m, receiver=j) for t, m in enumerate(scales, 1) for j in (1, 2)])
    assert huang2015_effective_epsilon_from_ledger(uni, C2=C2_EX2, n=2, c=c, q=q) == pytest.approx(
        2 * expected_agent0, rel=1e-10
    )
    assert huang2015_effective_epsilon_from_ledger(Ledger(), C2=C2_EX2, n=2, c=c, q=q) == 0.0


def test_huang_from_ledger_rejects_gaussian_and_wrong_dimension():
    g = Ledger([Release(0, 2, 2.0, "gaussian", 1.0, 2)])
    with pytest.raises(PrivacyParameterError, match="agent 0, round 2.*'gaussian'"):
        huang2015_effective_epsilon_from_ledger(g, C2=1.0, n=2, c=0.1, q=0.5)
    d = Ledger([Release(0, 2, 2.0, "laplace", 1.0, 3)])
    with pytest.raises(PrivacyParameterError, match="dimension 3 != n=2"):
        huang2015_effective_epsilon_from_ledger(d, C2=1.0, n=2, c=0.1, q=0.5)
    with pytest.raises(PrivacyParameterError, match=r"scales\[1\] \(M_2\) must be > 0, got -1.0"):
        huang2015_effective_epsilon_from_ledger([1.0, -1.0], C2=1.0, n=2, c=0.1, q=0.5)


def test_huang_verdicts():
    claim = huang2015_claim(1.0, c=0.1, q=0.5, p=0.8)
    assert (claim.epsilon, claim.delta, claim.per) == (1.0, 0.0, "run")
    kw = dict(epsilon=1.0, c=0.1, q=0.5, p=0.8, C2=C2_EX2, n=2)
    ok = verify(claim, huang2015_effective_epsilon(**kw, schedule="eq8"))
    assert ok.holds and abs(ok.gap) < 1e-12
    bad = verify(claim, huang2015_effective_epsilon(**kw, schedule="theorem5-proof"))
    assert not bad.holds
    assert bad.gap == pytest.approx(1.0 / 0.8 - 1.0, rel=1e-12)
    assert "VIOLATED" in bad.message
    # finite horizons under eq. (8) stay below the claim
    assert verify(claim, huang2015_effective_epsilon(**kw, horizon=25)).holds


# -- validation ----------------------------------------------------------------------
BAD_SENSITIVITY = [
    (huang2015_sensitivity, (-1,), dict(C2=1.0, n=2, c=0.1, q=0.5), "t", "-1"),
    (huang2015_sensitivity, (1,), dict(C2=-1.0, n=2, c=0.1, q=0.5), "C2", "-1.0"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=0, c=0.1, q=0.5), "n", "0"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=2, c=-0.1, q=0.5), "c", "-0.1"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=2, c=0.1, q=1.5), "q", "1.5"),
    (huang2015_sensitivity, (1,), dict(C2=float("nan"), n=2, c=0.1, q=0.5), "C2", "nan"),
    (huang2015_release_sensitivity, (0,), dict(C2=1.0, n=2, c=0.1, q=0.5), "t", "0"),
]


@pytest.mark.parametrize("fn,args,kwargs,name,value", BAD_SENSITIVITY)
def test_bad_sensitivity_inputs_name_parameter_and_value(fn, args, kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


BAD_CLAIMS = [
    (lambda: huang2015_claim(-1.0), "epsilon", "-1.0"),
    (lambda: huang2015_claim(1.0, q=0.5, p=0.4), "p", "0.4"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.5, p=1.0, C2=1.0, n=2), "p", "1.0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.0, p=0.5, C2=1.0, n=2), "q", "0.0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.3, p=0.5, C2=1.0, n=2, horizon=0), "horizon", "0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.3, p=0.5, C2=1.0, n=2, schedule="p^t"),
     "schedule", "'p^t'"),
]


@pytest.mark.parametrize("call,name,value", BAD_CLAIMS)
def test_bad_claim_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg


def test_bool_is_not_an_integer():
    with pytest.raises(PrivacyParameterError, match="t must be an integer, got True"):
        huang2015_sensitivity(True, C2=1.0, n=2, c=0.1, q=0.5)

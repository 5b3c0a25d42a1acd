"""Tests for accounting.theorems: claims, effective epsilons, and the verifier.

The expected values are computed in the tests, independently of the module:
loops over the rounds with the schedules written out here, and closed forms
of the geometric series. Tolerances: a loop of at most 400 terms accumulates
a relative rounding error below 400 * 2.2e-16 < 1e-13, so loop-vs-closed-form
comparisons use rel=1e-10; single closed forms use rel=1e-12.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from accounting.errors import PrivacyParameterError
from accounting.ledger import Ledger, Release
from accounting.theorems import (
    Claim,
    dpsda_claim,
    dpsda_effective_epsilon,
    huang2015_claim,
    huang2015_effective_epsilon,
    huang2015_effective_epsilon_from_ledger,
    huang2015_noise_scale,
    showkatbakhsh_alpha,
    showkatbakhsh_claim,
    showkatbakhsh_effective_epsilon,
    showkatbakhsh_kappa,
    showkatbakhsh_noise_scales,
    verify,
    wang_basar_claim,
    wang_basar_effective_epsilon,
    wang_basar_variance_threshold,
)

C2_EX2 = 4 * math.sqrt(2)


# -- independent seed-003 helpers ----------------------------------------------------------
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


# -- seed 003 ------------------------------------------------------------------------------
@given(params=cqp(), eps=st.floats(0.01, 10.0), C2=st.floats(0.1, 10.0), n=st.integers(1, 10))
def test_huang_limits_eq8_is_epsilon_and_proof_is_epsilon_over_p(params, eps, C2, n):
    c, q, p = params
    kw = dict(epsilon=eps, c=c, q=q, p=p, C2=C2, n=n)
    # geometric series written independently: first term eps (p-q)/p (eq8) or eps (p-q)/p^2 (proof), ratio q/p
    r = q / p
    assert huang2015_effective_epsilon(**kw, schedule="eq8") == pytest.approx(eps * (p - q) / p / (1 - r), rel=1e-12)
    assert huang2015_effective_epsilon(**kw, schedule="theorem5-proof") == pytest.approx(
        eps * (p - q) / p**2 / (1 - r), rel=1e-12
    )
    assert huang2015_effective_epsilon(**kw, schedule="eq8") == pytest.approx(eps, rel=1e-12)
    assert huang2015_effective_epsilon(**kw, schedule="theorem5-proof") == pytest.approx(eps / p, rel=1e-12)


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


# -- seed 000 ------------------------------------------------------------------------------
def test_showkatbakhsh_kappa_and_scales_hand_values():
    eps, delta, G, c, T = 4.0, 1e-3, 2.0, 0.01, 100
    kappa = eps**2 / (4 * G**2 * (eps + 2 * math.log(2 / delta)))
    assert showkatbakhsh_kappa(eps, delta, G=G) == pytest.approx(kappa, rel=1e-12)
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    for t in (1, 7, 100):
        assert M[t - 1] ** 2 == pytest.approx((2 / kappa) * c**2 * math.sqrt(T) / t**1.5, rel=1e-12)


@given(eps=st.floats(0.05, 10.0), delta=st.floats(1e-12, 0.5), T=st.integers(1, 300),
       c=st.floats(1e-3, 10.0), G=st.floats(0.1, 10.0))
def test_showkatbakhsh_schedule_alpha_and_verdict(eps, delta, T, c, G):
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    kappa = eps**2 / (4 * G**2 * (eps + 2 * math.log(2 / delta)))
    # sum_t (2 eta_t G)^2 / M_t^2 = 4 G^2 kappa/(2 sqrt T) sum_t t^(-1/2)
    expected = 4 * G**2 * kappa / (2 * math.sqrt(T)) * sum(t**-0.5 for t in range(1, T + 1))
    alpha = showkatbakhsh_alpha(M, c=c, G=G)
    assert alpha == pytest.approx(expected, rel=1e-10)
    assert alpha < eps**2 / (eps + 2 * math.log(2 / delta))  # Theorem 1's condition
    claim = showkatbakhsh_claim(eps, delta, T=T, c=c, G=G)
    assert verify(claim, showkatbakhsh_effective_epsilon(M, delta=delta, c=c, G=G), delta).holds


@given(eps=st.floats(0.01, 20.0), delta=st.floats(1e-12, 0.9))
def test_showkatbakhsh_threshold_alpha_certifies_epsilon(eps, delta):
    # one round with alpha exactly at Theorem 1's threshold: Delta(1) = 2 c G, M_1 = Delta(1)/sqrt(alpha)
    alpha = eps**2 / (eps + 2 * math.log(2 / delta))
    c, G = 0.3, 1.7
    m1 = 2 * c * G / math.sqrt(alpha)
    got = showkatbakhsh_effective_epsilon([m1], delta=delta, c=c, G=G)
    assert got <= eps * (1 + 1e-12)
    # and the tail bound of eqs. (47)-(49) at that epsilon is <= delta
    assert 2 * math.exp(-((got - alpha / 2) ** 2) / (2 * alpha)) <= delta * (1 + 1e-9)


def test_showkatbakhsh_too_little_noise_is_caught():
    eps, delta, T, c, G = 1.0, 1e-5, 200, 0.05, 1.0
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    claim = showkatbakhsh_claim(eps, delta, T=T, c=c, G=G)
    assert verify(claim, showkatbakhsh_effective_epsilon(M, delta=delta, c=c, G=G), delta).holds
    bad = verify(claim, showkatbakhsh_effective_epsilon(M / 2, delta=delta, c=c, G=G), delta)
    assert not bad.holds and bad.gap > 0.5


# -- seed 001 ------------------------------------------------------------------------------
def test_wang_basar_thresholds_hand_values():
    eps, delta, lam = 0.5, 1e-3, 0.02
    base = 2 * math.log(1.25 / delta) / eps**2
    th = wang_basar_variance_threshold
    assert th(eps, delta, lam_k=lam, kind="gradient") == pytest.approx(base * lam**2, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="gradient", form="consistent") == pytest.approx(base, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="sample", nu=3.0, n_i=160) == pytest.approx(
        base * 9 * lam**2 / 160**2, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="sample", nu=3.0, n_i=160, form="consistent") == pytest.approx(
        base * 9 / 160**2, rel=1e-12)
    for form in ("printed", "consistent"):
        assert th(eps, delta, lam_k=lam, kind="variable", form=form) == pytest.approx(base / lam**2, rel=1e-12)


@pytest.mark.parametrize("lam", [0.02, 0.3])
@pytest.mark.parametrize("kind", ["gradient", "sample"])
def test_wang_basar_printed_theorems_4_5_fail_by_one_over_lambda(kind, lam):
    eps, delta = 0.5, 1e-3
    kw = dict(nu=2.0, n_i=160) if kind == "sample" else {}
    var = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind=kind, **kw)
    claim = wang_basar_claim(eps, delta, noise_variance=var, lam_k=lam, kind=kind, **kw)
    assert claim.per == "iteration"
    got = wang_basar_effective_epsilon(delta=delta, noise_variance=var, lam_k=lam, kind=kind, **kw)
    assert got == pytest.approx(eps / lam, rel=1e-12)
    v = verify(claim, got, delta)
    assert not v.holds and v.gap == pytest.approx(eps / lam - eps, rel=1e-12)
    # the consistent threshold is exactly enough
    var_ok = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind=kind, form="consistent", **kw)
    assert verify(claim, wang_basar_effective_epsilon(delta=delta, noise_variance=var_ok, lam_k=lam, kind=kind,
                                                      **kw), delta).holds


def test_wang_basar_theorem6_holds_as_printed():
    eps, delta, lam = 0.5, 1e-3, 0.02
    var = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind="variable")
    claim = wang_basar_claim(eps, delta, noise_variance=var, lam_k=lam, kind="variable")
    got = wang_basar_effective_epsilon(delta=delta, noise_variance=var, lam_k=lam, kind="variable")
    assert verify(claim, got, delta).holds and got == pytest.approx(eps, rel=1e-12)


def test_wang_basar_claim_below_threshold_raises():
    with pytest.raises(PrivacyParameterError, match=r"noise_variance=1e-09 is below Theorem 5"):
        wang_basar_claim(0.5, 1e-3, noise_variance=1e-9, lam_k=0.02, kind="gradient")


# -- seed 004 ------------------------------------------------------------------------------
def test_dpsda_claim_levels():
    run, rnd = dpsda_claim(0.5, 500), dpsda_claim(0.5, 500, per="round")
    assert (run.epsilon, run.per) == (250.0, "run")
    assert (rnd.epsilon, rnd.per) == (0.5, "round")


def test_dpsda_node_level_matches_claim_network_level_does_not():
    n, L_hat, eps, T = 7, 1.3, 0.5, 50
    sigma = 2 * n * L_hat / eps  # the paper's sigma(t) = Delta/epsilon with Lemma 1's Delta
    claim = dpsda_claim(eps, T)
    node = dpsda_effective_epsilon([sigma] * T, n=n, L_hat=L_hat, level="node")
    net = dpsda_effective_epsilon([sigma] * T, n=n, L_hat=L_hat, level="network")
    assert node == pytest.approx(T * eps, rel=1e-10)
    assert net == pytest.approx(n * T * eps, rel=1e-10)
    assert verify(claim, node).holds
    v = verify(claim, net)
    assert not v.holds and v.gap == pytest.approx((n - 1) * T * eps, rel=1e-10)
    # per round, at network level, with sigma = 2 n^2 L_hat / eps: exactly eps
    assert dpsda_effective_epsilon([2 * n * n * L_hat / eps], n=n, L_hat=L_hat) == pytest.approx(eps, rel=1e-12)


# -- claims, verdicts and validation ---------------------------------------------------------
def test_verify_delta_and_tolerance():
    claim = Claim("p", "s", 1.0, 1e-5, "run")
    assert verify(claim, 1.0 + 1e-12, 1e-5).holds  # within rtol = 1e-9
    assert not verify(claim, 1.0 + 1e-6, 1e-5).holds
    v = verify(claim, 0.5, 2e-5)
    assert not v.holds and v.delta_gap == pytest.approx(1e-5) and v.gap == -0.5
    assert not verify(claim, math.inf).holds


BAD = [
    (lambda: Claim("p", "s", 0.0, 0.0, "run"), "epsilon", "0.0"),
    (lambda: Claim("p", "s", 1.0, 1.0, "run"), "delta", "1.0"),
    (lambda: Claim("p", "s", 1.0, 0.0, "epoch"), "per", "'epoch'"),
    (lambda: verify(Claim("p", "s", 1.0, 0.0, "run"), -1.0), "computed_epsilon", "-1.0"),
    (lambda: verify(Claim("p", "s", 1.0, 0.0, "run"), 1.0, 1.5), "computed_delta", "1.5"),
    (lambda: huang2015_claim(-1.0), "epsilon", "-1.0"),
    (lambda: huang2015_claim(1.0, q=0.5, p=0.4), "p", "0.4"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.5, p=1.0, C2=1.0, n=2), "p", "1.0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.0, p=0.5, C2=1.0, n=2), "q", "0.0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.3, p=0.5, C2=1.0, n=2, horizon=0), "horizon", "0"),
    (lambda: huang2015_effective_epsilon(epsilon=1.0, c=0.1, q=0.3, p=0.5, C2=1.0, n=2, schedule="p^t"),
     "schedule", "'p^t'"),
    (lambda: showkatbakhsh_claim(1.0, 0.0, T=10, c=1.0, G=1.0), "delta", "0.0"),
    (lambda: showkatbakhsh_claim(1.0, 1e-3, T=0, c=1.0, G=1.0), "T", "0"),
    (lambda: showkatbakhsh_effective_epsilon([1.0], delta=2.0, c=1.0, G=1.0), "delta", "2.0"),
    (lambda: wang_basar_claim(1.5, 1e-3, noise_variance=1.0, lam_k=0.1), "epsilon", "1.5"),
    (lambda: wang_basar_effective_epsilon(delta=1e-3, noise_variance=0.0, lam_k=0.1), "noise_variance", "0.0"),
    (lambda: wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, form="other"), "form", "'other'"),
    (lambda: dpsda_claim(1.0, 0), "T", "0"),
    (lambda: dpsda_claim(1.0, 5, per="iteration"), "per", "'iteration'"),
    (lambda: dpsda_effective_epsilon([1.0], n=3, L_hat=1.0, level="edge"), "level", "'edge'"),
    (lambda: dpsda_effective_epsilon([0.0], n=3, L_hat=1.0), "scales[0]", "0.0"),
]


@pytest.mark.parametrize("call,name,value", BAD)
def test_bad_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg

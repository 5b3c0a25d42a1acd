"""Tests of accounting.mechanisms: closed forms, the analytic Gaussian against a numeric integral, inverses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import integrate, stats

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.mechanisms import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_epsilon_classic,
    gaussian_sigma,
    gaussian_sigma_classic,
    laplace_epsilon,
    laplace_scale,
)


def quad_delta(sensitivity: float, sigma: float, epsilon: float) -> tuple[float, float]:
    """delta = E[(1 - e^{eps - L})_+] with the privacy loss L ~ N(mu^2/2, mu^2), by quadrature.

    Under the unshifted Gaussian the loss of Gaussian vs Gaussian shifted by the
    sensitivity is L = (Delta^2 - 2 x Delta) / (2 sigma^2) ~ N(mu^2/2, mu^2),
    mu = Delta / sigma. Substituting L = eps + u integrates over u in [0, inf).
    Returns (value, quad's absolute error estimate).
    """
    mu = sensitivity / sigma
    mean = mu * mu / 2

    def integrand(u: float) -> float:
        return -math.expm1(-u) * stats.norm.pdf(epsilon + u, loc=mean, scale=mu)

    val, err = integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-11, limit=200)
    return val, err


# --------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("sens,scale", [(1.0, 1.0), (2.0, 0.5), (0.3, 7.0), (0.0, 3.0), (5, 2)])
def test_laplace_epsilon_closed_form(sens, scale):
    assert laplace_epsilon(sens, scale) == sens / scale


@pytest.mark.parametrize("sens,eps", [(1.0, 1.0), (2.0, 0.5), (0.3, 7.0)])
def test_laplace_scale_inverts_epsilon(sens, eps):
    b = laplace_scale(sens, eps)
    assert b == sens / eps
    assert laplace_epsilon(sens, b) == pytest.approx(eps, rel=1e-15)


# --------------------------------------------------------------------------- classic Gaussian


@pytest.mark.parametrize("sens,eps,delta", [(1.0, 0.5, 1e-5), (2.0, 0.1, 1e-8), (0.7, 0.99, 0.01)])
def test_classic_sigma_closed_form(sens, eps, delta):
    expected = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
    # same formula evaluated in the same order: equal up to one rounding
    assert gaussian_sigma_classic(sens, eps, delta) == pytest.approx(expected, rel=1e-15)
    assert gaussian_epsilon_classic(sens, expected, delta) == pytest.approx(eps, rel=1e-14)


@pytest.mark.parametrize("sens,eps,delta", [(1.0, 0.5, 1e-5), (2.0, 0.1, 1e-8), (0.7, 0.99, 0.01)])
def test_classic_calibration_is_valid_and_looser_than_analytic(sens, eps, delta):
    sigma_c = gaussian_sigma_classic(sens, eps, delta)
    # the exact delta at the classic sigma meets the target (Dwork-Roth is a valid, loose bound)
    assert gaussian_delta(sens, sigma_c, eps) <= delta
    # so the analytic (exact) calibration needs no more noise, and strictly less here
    assert gaussian_sigma(sens, eps, delta) < sigma_c


def test_classic_refuses_epsilon_at_least_one():
    with pytest.raises(PrivacyParameterError, match=r"epsilon must be < 1.*got 1\.5"):
        gaussian_sigma_classic(1.0, 1.5, 1e-5)
    with pytest.raises(PrivacyParameterError, match=r"epsilon = .* >= 1.*only holds for epsilon < 1"):
        gaussian_epsilon_classic(1.0, 0.5, 1e-5)


# --------------------------------------------------------------------------- analytic Gaussian


@pytest.mark.parametrize(
    "sens,sigma,eps",
    [(1, 1, 0.5), (1, 2, 1.0), (2, 1, 3.0), (0.5, 1, 0.1), (1, 0.5, 5.0),
     (1, 1, 20.0), (3, 1, 40.0), (1, 1, 35.0), (40, 1, 800.0), (40, 1, 1000.0)],
)
def test_gaussian_delta_matches_numeric_integral(sens, sigma, eps):
    d = gaussian_delta(sens, sigma, eps)
    q, err = quad_delta(sens, sigma, eps)
    # quad is asked for 1e-11 relative accuracy and reports err; the closed form
    # is evaluated in log space with ~|log delta| * 1e-16 relative error
    # (<= 1e-13 here). 1e-10 relative leaves margin; a wrong sign in either term
    # or a missing e^eps changes delta by orders of magnitude.
    assert abs(d - q) <= 10 * err + 1e-10 * q
    assert 0 < d < 1


def test_gaussian_delta_stable_where_naive_formula_fails():
    # e^800 overflows: the textbook formula evaluates to nan; the log-space one is exact
    mu, eps = 40.0, 800.0
    with np.errstate(all="ignore"):
        naive = stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
    assert not np.isfinite(naive)
    assert gaussian_delta(mu, 1.0, eps) == pytest.approx(quad_delta(mu, 1.0, eps)[0], rel=1e-10)


def test_small_mu_one_point_equals_the_array_form_bit_for_bit():
    # the root finders evaluate one point at a time and take only the branch it needs: the same operations as
    # the array form (both branches everywhere), so the same float, at z1 > 0, z1 <= 0, 0, +-inf and nan
    from accounting.mechanisms import _log_gaussian_delta_small_mu

    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.normal(size=300) * 10.0 ** rng.uniform(-12, 3, 300), [0.0, np.inf, -np.inf, np.nan]])
    boundary = []
    for mu in (1e-9, 1e-4, 0.05, 0.3, 0.4999):
        points = np.append(xs, mu * mu / 2)  # z1 = x / mu - mu / 2 is 0 exactly at mu = 0.3 (the second form)
        boundary.append((mu * mu / 2) / mu - mu / 2 == 0)
        array = _log_gaussian_delta_small_mu(mu, points)
        one = [_log_gaussian_delta_small_mu(mu, np.asarray(x)) for x in points]
        assert (array > -np.inf).any() and (array == -np.inf).any()  # both outcomes are exercised
        assert np.array_equal(np.array(one), array, equal_nan=True), mu
        assert all(isinstance(v, np.ndarray) and v.shape == () and v.dtype == float for v in one)
    assert any(boundary)


def test_gaussian_delta_decreases_in_epsilon_and_increases_in_sensitivity():
    eps = [0.1, 0.5, 1, 2, 4, 8]
    ds = [gaussian_delta(1.0, 1.0, e) for e in eps]
    assert all(a > b for a, b in zip(ds, ds[1:]))
    assert gaussian_delta(0.5, 1.0, 1.0) < gaussian_delta(1.0, 1.0, 1.0) < gaussian_delta(2.0, 1.0, 1.0)


@given(
    sens=st.floats(0.01, 100),
    mu=st.floats(0.05, 10),
    eps=st.floats(0.01, 20),
)
def test_gaussian_epsilon_and_sigma_invert_delta(sens, mu, eps):
    sigma = sens / mu
    d = gaussian_delta(sens, sigma, eps)
    assume(1e-250 < d < 1 - 1e-9)
    e_rt = gaussian_epsilon(sens, sigma, d)
    s_rt = gaussian_sigma(sens, eps, d)
    # safe side: the returned epsilon / sigma meet the target delta (to rounding of delta, 1e-12)
    assert gaussian_delta(sens, sigma, e_rt) <= d * (1 + 1e-12)
    assert gaussian_delta(sens, s_rt, eps) <= d * (1 + 1e-12)
    # accuracy: the roots are bracketed to 1e-13 relative; the inverse problem
    # amplifies delta's ~1e-15 relative error by 1 / |d log delta / d eps|,
    # observed worst 2e-10 (eps) and 4e-12 (sigma) over 3000 draws; 1e-6 leaves
    # margin while the classic calibration would miss by > 1e-2
    assert e_rt == pytest.approx(eps, rel=1e-6, abs=1e-6)
    assert s_rt == pytest.approx(sigma, rel=1e-6)


def test_gaussian_epsilon_zero_when_delta_already_met():
    # total variation 2 Phi(mu/2) - 1 = 0.004 for mu = 0.01 is below delta = 0.5
    assert gaussian_epsilon(0.01, 1.0, 0.5) == 0.0
    assert gaussian_epsilon(0.0, 1.0, 1e-5) == 0.0
    assert gaussian_delta(0.0, 1.0, 1.0) == 0.0


def test_gaussian_epsilon_is_infinite_where_mu_squared_overflows():
    # mu = 1e160: epsilon >= mu^2 / 2 - mu sqrt(2 ln 1e5) ~ 5e319, past the largest float; the root finder's bracket
    # was mu^2 = inf and it raised a bare ValueError (also through a Gaussian-only ledger's PLD epsilon)
    from accounting.composition import pld_epsilon
    from accounting.ledger import Ledger, Release

    assert gaussian_epsilon(1.0, 1e-160, 1e-5) == math.inf
    assert pld_epsilon(Ledger([Release(0, 1, 1.0, "gaussian", 1e-160, 1)]), 1.0, 1e-5) == math.inf
    assert math.isfinite(gaussian_epsilon(1.0, 1e-150, 1e-5))


def test_gaussian_epsilon_known_value():
    # Balle & Wang (2018): sigma = 1, Delta = 1, delta = 1e-5 gives epsilon ~ 4.377 (vs classic: invalid, > 1)
    assert gaussian_epsilon(1.0, 1.0, 1e-5) == pytest.approx(4.377178, abs=1e-6)
    assert gaussian_delta(1.0, 1.0, 4.377178095681324) == pytest.approx(1e-5, rel=1e-9)


# --------------------------------------------------------------------------- validation


BAD_CALLS = [
    (laplace_epsilon, (-1.0, 1.0), "sensitivity", "-1.0"),
    (laplace_epsilon, (float("nan"), 1.0), "sensitivity", "nan"),
    (laplace_epsilon, (1.0, 0.0), "scale", "0.0"),
    (laplace_epsilon, (1.0, -2.0), "scale", "-2.0"),
    (laplace_scale, (1.0, 0.0), "epsilon", "0.0"),
    (laplace_scale, (1.0, -0.5), "epsilon", "-0.5"),
    (laplace_scale, (1.0, float("nan")), "epsilon", "nan"),
    (laplace_scale, (0.0, 1.0), "sensitivity", "0.0"),
    (gaussian_sigma_classic, (1.0, 0.5, 0.0), "delta", "0.0"),
    (gaussian_sigma_classic, (1.0, 0.5, 1.0), "delta", "1.0"),
    (gaussian_sigma_classic, (1.0, -0.5, 1e-5), "epsilon", "-0.5"),
    (gaussian_epsilon_classic, (1.0, 0.0, 1e-5), "sigma", "0.0"),
    (gaussian_delta, (1.0, 1.0, 0.0), "epsilon", "0.0"),
    (gaussian_delta, (1.0, -1.0, 1.0), "sigma", "-1.0"),
    (gaussian_delta, (-0.1, 1.0, 1.0), "sensitivity", "-0.1"),
    (gaussian_epsilon, (1.0, 1.0, 1.5), "delta", "1.5"),
    (gaussian_epsilon, (1.0, 1.0, float("nan")), "delta", "nan"),
    (gaussian_epsilon, (1.0, 1.0, -1e-5), "delta", "-1e-05"),
    (gaussian_sigma, (1.0, float("nan"), 1e-5), "epsilon", "nan"),
    (gaussian_sigma, (1.0, 1.0, 0.0), "delta", "0.0"),
    (gaussian_sigma, (0.0, 1.0, 1e-5), "sensitivity", "0.0"),
    (gaussian_sigma, (1.0, float("inf"), 1e-5), "epsilon", "inf"),
    (gaussian_sigma, ("1", 1.0, 1e-5), "sensitivity", "'1'"),
]


@pytest.mark.parametrize("fn,args,name,value", BAD_CALLS, ids=[f"{c[0].__name__}-{c[2]}-{c[3]}" for c in BAD_CALLS])
def test_bad_inputs_raise_naming_parameter_and_value(fn, args, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args)
    msg = str(info.value)
    assert name in msg and value in msg
    assert isinstance(info.value, AccountingError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: laplace_epsilon(-1.0, 1.0), r"^sensitivity must be >= 0, got -1\.0$"),
        (lambda: laplace_epsilon(1.0, 0.0), r"^scale must be > 0, got 0\.0$"),
        (lambda: gaussian_delta(1.0, math.inf, 1.0), r"^sigma must be finite, got inf$"),
        (lambda: gaussian_epsilon(1.0, 1.0, 1.0), r"^delta must lie in \(0, 1\), got 1\.0$"),
        (lambda: gaussian_sigma(1.0, True, 1e-5), r"^epsilon must be a real number, got True$"),
        (lambda: gaussian_epsilon(1.0, 1.0, math.nan), r"^delta must be finite, got nan$"),
    ],
)
def test_bad_arguments_name_parameter_and_value(call, message):
    """The checks come from topology.validation and raise PrivacyParameterError naming parameter and value."""
    with pytest.raises(PrivacyParameterError, match=message):
        call()

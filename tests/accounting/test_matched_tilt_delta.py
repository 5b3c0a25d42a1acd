"""The exact Gaussian ``delta(epsilon)`` less the margin of tilted draws that kept every release's shift.

A pair whose second release's shift vanishes beyond a threshold ``b`` (a projection the runs never reach) against
the fixed-shift closed form: :func:`accounting.tilted_replay.tilted_scheduled_transcripts` with ``offsets`` moves
each release by the tilt times its offset and reports, per run, whether every shift kept its offset;
:func:`accounting.profiles.matched_tilt_delta_lower` turns the count into a certified bound. Independent truth: the
pair's ``delta(epsilon)`` by numerical integration over the first release (the second is a Gaussian pair given it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.profiles import gaussian_profile_delta, matched_tilt_delta_lower
from accounting.replay_inputs import ChannelNoise
from accounting.tilted_replay import tilted_scheduled_transcripts
from accounting.tilting import chernoff_log_cap, chernoff_tilt

C, EPS, B = 1.0, 3.0, 2.5  # unit noise; the tilt centres the first release at 1.29, so 11% of draws pass B
MU = C * math.sqrt(2.0)


class Switch:
    """One agent, two releases: the first at ``a``, the second at ``a`` while the first is below ``B``, else at 0."""

    def __init__(self, a: float) -> None:
        self.a = a

    def initial_state(self, runs):
        return np.full((runs, 1, 1), self.a)

    def message_means(self, x, t):
        return {"y": x}

    def next_state(self, x, mixed, t):
        return self.a * (mixed["y"] < B)


class One:
    def dense(self, t):
        return np.ones((1, 1)), np.full((1, 1), t)


def draw(runs: int, seed: int, offsets: float = C, tolerance: float = 1e-9):
    lam = chernoff_tilt(EPS, gaussian_mus=[MU])
    return tilted_scheduled_transcripts({"y": np.zeros((runs, 2, 1, 1))}, [One()] * runs,
                                        {"y": ChannelNoise("gaussian", np.ones(2))}, Switch(0.0), Switch(-C),
                                        epsilon=EPS, mu_bound=MU, seed=seed, tilt=lam,
                                        offsets={"y": np.full((runs, 2, 1, 1), offsets)},
                                        tolerance={"y": tolerance}), lam


def truth() -> float:
    """``E_{y1}[h(mu_2(y1), EPS - L_1(y1))]``, ``h`` the Gaussian profile at any real epsilon (``(1 - e^x)_+`` at 0)."""

    def h(mu: float, x: float) -> float:
        if mu == 0:
            return max(0.0, -math.expm1(x))
        return float(norm.cdf(-x / mu + mu / 2) - math.exp(x) * norm.cdf(-x / mu - mu / 2))

    def f(y: float) -> float:
        return float(norm.pdf(y)) * h(C if y < B else 0.0, EPS - (C * y + C * C / 2))

    return integrate.quad(f, -12, B, limit=200)[0] + integrate.quad(f, B, 20, limit=200)[0]


def test_fixed_offsets_give_the_proposal_exact_weights_and_report_the_shifts_kept():
    got, lam = draw(4000, 0)
    y1 = got.messages["y"][:, 0, 0, 0]
    np.testing.assert_array_equal(got.matched, y1 < B)
    np.testing.assert_allclose(got.realized_mu, MU, rtol=1e-12)  # the offsets' mu
    # the weights are the density ratio of P to the proposal (each release moved by lam C): log p - log q
    z = got.messages["y"][:, :, 0, 0]
    want = (-(z**2) / 2 + (z - lam * C) ** 2 / 2).sum(axis=1)
    np.testing.assert_allclose(got.log_weights, want, rtol=1e-10, atol=1e-10)


def test_the_bound_holds_where_the_shifts_change_under_the_tilt_and_ignoring_misses_would_not():
    true = truth()
    closed = gaussian_profile_delta(MU, EPS)
    assert true == pytest.approx(0.03022, abs=1e-5) and closed - true > 1e-3
    n, error = 400, 0.05
    lam = chernoff_tilt(EPS, gaussian_mus=[MU])
    # a bound counting every draw as kept (a check of mu alone: these draws keep the offsets' mu) exceeds the truth
    assert matched_tilt_delta_lower(MU, EPS, lam, n, 0, error).lower > true
    bounds = []
    for seed in range(10):
        got, _ = draw(n, seed)
        misses = int((~got.matched).sum())
        assert 20 < misses < 80  # 11% of the draws pass B
        bounds.append(matched_tilt_delta_lower(MU, EPS, lam, n, misses, error).lower)
    # each bound fails with probability <= 0.05; here far less (cap q is ~6x the true deficit): none may fail
    assert max(bounds) <= true, bounds
    assert min(bounds) > 0.4 * true  # and still says something


class Rise(Switch):
    """The second release at ``a`` only once the first reaches ``1``: its shift vanishes where ``P`` puts its mass."""

    def next_state(self, x, mixed, t):
        return self.a * (mixed["y"] >= 1.0)


def test_a_tilt_beyond_the_chernoff_one_certifies_nothing_where_p_loses_the_shift():
    # tilt 5 at epsilon 0.5 (Chernoff's: 0.39) puts every draw past the threshold, where the shift holds, but P's
    # mass below it loses the second shift: the truth (0.2414) is far below the closed form (0.4001). The missed part
    # E_P[g 1_(not S)] is bounded by cap Q(not S), and this tilt's cap is e^24.8: a cap clipped at 1 certified 0.39
    eps, lam, n = 0.5, 5.0, 400

    def f(y: float) -> float:
        x = eps - (C * y + C * C / 2)
        rest = float(norm.cdf(-x / C + C / 2) - math.exp(x) * norm.cdf(-x / C - C / 2)) if y >= 1.0 \
            else max(0.0, -math.expm1(x))
        return float(norm.pdf(y)) * rest

    true = integrate.quad(f, -12, 1.0, limit=200)[0] + integrate.quad(f, 1.0, 20, limit=200)[0]
    assert true == pytest.approx(0.2414, abs=1e-4) and gaussian_profile_delta(MU, eps) > true + 0.1
    got = tilted_scheduled_transcripts({"y": np.zeros((n, 2, 1, 1))}, [One()] * n,
                                       {"y": ChannelNoise("gaussian", np.ones(2))}, Rise(0.0), Rise(-C),
                                       epsilon=eps, mu_bound=MU, seed=0, tilt=lam,
                                       offsets={"y": np.full((n, 2, 1, 1), C)}, tolerance={"y": 1e-9})
    misses = int((~got.matched).sum())
    assert misses < 5  # the tilt keeps the shift almost everywhere it draws
    assert matched_tilt_delta_lower(MU, eps, lam, n, misses, 0.05).lower <= true


def test_without_misses_the_margin_is_cap_times_the_clopper_pearson_bound():
    lam = chernoff_tilt(4.0, gaussian_mus=[1.0])
    b = matched_tilt_delta_lower(1.0, 4.0, lam, 1000, 0, 0.0125)
    cap = math.exp(chernoff_log_cap(lam, 4.0, gaussian_mus=[1.0]))
    assert b.lower == pytest.approx(gaussian_profile_delta(1.0, 4.0) - cap * (1 - 0.0125 ** (1 / 1000)), rel=1e-9)
    assert b.confidence == pytest.approx(0.9875) and b.method == "exact profile less the tilt margin"
    assert b.lower > 0.95 * gaussian_profile_delta(1.0, 4.0)


def test_round_off_allowances_lower_the_bound():
    lam = chernoff_tilt(4.0, gaussian_mus=[1.0])
    plain = matched_tilt_delta_lower(1.0, 4.0, lam, 1000, 0, 0.0125).lower
    drift = matched_tilt_delta_lower(1.0, 4.0, lam, 1000, 0, 0.0125, drift=0.1).lower
    spread = matched_tilt_delta_lower(1.0, 4.0, lam, 1000, 0, 0.0125, spread=1e-4).lower
    assert drift < plain and spread < plain
    # the spread's allowance is sqrt(2 * 700 * spread) = 0.374 on the loss
    assert spread == pytest.approx(matched_tilt_delta_lower(1.0, 4.0, lam, 1000, 0, 0.0125,
                                                            drift=math.sqrt(1400e-4)).lower, rel=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"mu": 0.0}, "mu"), ({"epsilon": -1.0}, "epsilon"), ({"error": 1.0}, "error"), ({"misses": 5, "draws": 4}, "misses"),
    ({"drift": float("nan")}, "drift"),
])
def test_bad_input_is_named(kwargs, match):
    args = {"mu": 1.0, "epsilon": 1.0, "tilt": 1.0, "draws": 4, "misses": 0, "error": 0.1} | kwargs
    with pytest.raises(PrivacyParameterError, match=match):
        matched_tilt_delta_lower(**args)


def test_offsets_of_the_wrong_shape_or_without_a_tolerance_are_refused():
    with pytest.raises(AccountingError, match="offsets of shape"):
        tilted_scheduled_transcripts({"y": np.zeros((3, 2, 1, 1))}, [One()] * 3,
                                     {"y": ChannelNoise("gaussian", np.ones(2))}, Switch(0.0), Switch(-C),
                                     epsilon=EPS, mu_bound=MU, offsets={"y": np.ones((3, 2, 1))}, tolerance={"y": 0.0})
    with pytest.raises(AccountingError, match="without a tolerance"):
        tilted_scheduled_transcripts({"y": np.zeros((3, 2, 1, 1))}, [One()] * 3,
                                     {"y": ChannelNoise("gaussian", np.ones(2))}, Switch(0.0), Switch(-C),
                                     epsilon=EPS, mu_bound=MU, offsets={"y": np.ones((3, 2, 1, 1))})

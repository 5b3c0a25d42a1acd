"""Tests of topology.checks.constants: theorem constants and empirical contraction."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from topology.checks.constants import (
    ContractionResult,
    dpsda_c_theta,
    empirical_contraction,
    nedic_ozdaglar,
    push_sum_gamma,
    push_sum_lambda,
    push_sum_log_one_minus_lambda,
    push_sum_one_minus_lambda,
)
from topology.errors import ParameterError
from topology.sequence import from_matrices, generated, periodic, static
from topology.weights import metropolis

HALF = np.array([[0.75, 0.25], [0.25, 0.75]])  # eigenvalues 1 and 1/2
PUSH = np.array([[1.0, 0.5], [0.0, 0.5]])  # node 1 pushes half its mass to node 0


# ---------------------------------------------------------------------------
# closed-form constants
# ---------------------------------------------------------------------------
class TestNedicOzdaglar:
    def test_hand_values(self):
        theta, beta = nedic_ozdaglar(1.0, 2)  # beta = 1 - 1/16
        assert beta == 0.9375
        assert theta == pytest.approx(256 / 225, rel=1e-15)
        theta, beta = nedic_ozdaglar(0.5, 5)  # beta = 1 - 0.5/100
        assert beta == pytest.approx(0.995, rel=1e-15)
        assert theta == pytest.approx(1 / 0.995**2, rel=1e-15)

    @pytest.mark.parametrize("eta", [0.0, -0.1, 1.5, float("nan"), float("inf"), True, "0.5"])
    def test_bad_eta(self, eta):
        with pytest.raises(ParameterError, match="eta"):
            nedic_ozdaglar(eta, 3)

    @pytest.mark.parametrize("n", [0, -2, 2.0, True])
    def test_bad_num_nodes(self, n):
        with pytest.raises(ParameterError, match="num_nodes"):
            nedic_ozdaglar(0.5, n)


class TestDpsdaCTheta:
    def test_hand_values(self):
        assert dpsda_c_theta(0.5, 2) == 1 - 0.5 / 16
        assert dpsda_c_theta(1, 7) == pytest.approx(1 - 1 / 196, rel=1e-15)

    def test_bad_parameters(self):
        with pytest.raises(ParameterError, match="phi"):
            dpsda_c_theta(0.0, 3)
        with pytest.raises(ParameterError, match="phi"):
            dpsda_c_theta(2.0, 3)
        with pytest.raises(ParameterError, match="n must"):
            dpsda_c_theta(0.5, 0)


class TestPushSumLambda:
    def test_hand_values(self):
        assert push_sum_lambda(2, 1) == 0.75
        assert push_sum_lambda(2, 2) == pytest.approx(math.sqrt(15) / 4, rel=1e-15)
        assert push_sum_lambda(3, 1) == pytest.approx(1 - 1 / 27, rel=1e-15)
        assert push_sum_lambda(1, 3) == 0.0
        assert push_sum_one_minus_lambda(1, 3) == 1.0
        assert push_sum_log_one_minus_lambda(1, 3) == 0.0

    def test_one_minus_lambda_moderate(self):
        assert push_sum_one_minus_lambda(2, 1) == 0.25
        expected = 1 - (1 - 2.0**-6) ** (1 / 3)  # x = 1/64: no cancellation problem
        assert push_sum_one_minus_lambda(2, 3) == pytest.approx(expected, rel=1e-12)
        assert push_sum_log_one_minus_lambda(2, 3) == pytest.approx(math.log(expected), rel=1e-12)

    def test_astronomically_close_to_one(self):
        # n = 7, B = 4 (the experiments of Cheng, Liao and Li, arXiv 2022): 1 - lambda = 7**-28 / 4 (1 + O(7**-28))
        assert push_sum_lambda(7, 4) == 1.0
        assert push_sum_one_minus_lambda(7, 4) == pytest.approx(7.0**-28 / 4, rel=1e-12)
        assert push_sum_log_one_minus_lambda(7, 4) == pytest.approx(-28 * math.log(7) - math.log(4), rel=1e-14)

    def test_log_survives_underflow(self):
        assert push_sum_one_minus_lambda(1000, 1) == 0.0  # below the smallest float
        assert push_sum_log_one_minus_lambda(1000, 1) == pytest.approx(-1000 * math.log(1000), rel=1e-14)
        assert push_sum_log_one_minus_lambda(50, 3) == pytest.approx(-150 * math.log(50) - math.log(3), rel=1e-14)

    @pytest.mark.parametrize(
        "fn", [push_sum_lambda, push_sum_one_minus_lambda, push_sum_log_one_minus_lambda]
    )
    def test_bad_parameters(self, fn):
        with pytest.raises(ParameterError, match="n must"):
            fn(0, 2)
        with pytest.raises(ParameterError, match="B must"):
            fn(3, 0)
        with pytest.raises(ParameterError, match="B must"):
            fn(3, 1.5)
        with pytest.raises(ParameterError, match="n must"):
            fn(True, 1)


class TestPushSumGamma:
    def test_hand_value(self):
        # w(1) = A 1 = (1.5, 0.5); w(2) = A w(1) = (1.75, 0.25)
        seq = static(PUSH)
        assert push_sum_gamma(seq, horizon=1) == 0.5
        assert push_sum_gamma(seq, horizon=2) == 0.25

    def test_varying_sequence(self):
        other = PUSH[::-1, ::-1]  # node 0 pushes half to node 1
        # w(1) = (1.5, 0.5); w(2) = other @ w(1) = (0.75, 1.25)
        assert push_sum_gamma(from_matrices([PUSH, other])) == 0.5
        assert push_sum_gamma(from_matrices([PUSH, other, other])) == 0.375  # w(3) = (0.375, 1.625)

    def test_doubly_stochastic_gives_one(self):
        assert push_sum_gamma(static(HALF), horizon=5) == pytest.approx(1.0, abs=1e-15)

    def test_horizon_needed_for_infinite(self):
        with pytest.raises(ParameterError, match="horizon"):
            push_sum_gamma(generated(2, lambda t: PUSH))


# ---------------------------------------------------------------------------
# empirical contraction
# ---------------------------------------------------------------------------
class TestEmpiricalContraction:
    def test_two_node_doubly(self):
        # HALF^t = 1/2 [[1 + 2^-t, 1 - 2^-t], ...]: |Phi_ij - 1/2| = 2^-t / 2, t = k + 1
        res = empirical_contraction(static(HALF), horizon=6)
        assert isinstance(res, ContractionResult)
        expected = 0.5 ** np.arange(1, 7) / 2
        np.testing.assert_allclose(res.deviations, expected, rtol=1e-12)
        assert res.rate == pytest.approx(0.5, rel=1e-12)
        assert res.exact and res.columns_used == 2
        assert res.kind == "doubly" and res.start == 0

    def test_column_kind_push_sum(self):
        # PUSH^t = [[1, 1 - 2^-t], [0, 2^-t]]: both rows spread by 2^-t
        res = empirical_contraction(static(PUSH), horizon=5, kind="column")
        np.testing.assert_allclose(res.deviations, 0.5 ** np.arange(1, 6), rtol=1e-12)
        assert res.rate == pytest.approx(0.5, rel=1e-12)

    def test_row_kind_consensus(self):
        # PUSH^T is row-stochastic; (PUSH^T)^t = [[1, 0], [1 - 2^-t, 2^-t]]: both columns spread by 2^-t
        res = empirical_contraction(static(PUSH.T), horizon=5, kind="row")
        np.testing.assert_allclose(res.deviations, 0.5 ** np.arange(1, 6), rtol=1e-12)
        assert res.rate == pytest.approx(0.5, rel=1e-12)

    def test_start_offsets_the_product(self):
        # round 1 is the identity; from start=1 the products are HALF^(k+1)
        seq = from_matrices([np.eye(2), HALF, HALF, HALF])
        from_zero = empirical_contraction(seq, start=0)
        np.testing.assert_allclose(from_zero.deviations, [0.5, 0.25, 0.125, 0.0625], rtol=1e-12)
        from_one = empirical_contraction(seq, start=1)
        assert from_one.start == 1
        np.testing.assert_allclose(from_one.deviations, [0.25, 0.125, 0.0625], rtol=1e-12)

    def test_sampled_columns_lazy_complete(self):
        # W = (1-a) I + a J/N: Phi_t - J/N = (1-a)^t (I - J/N); max deviation (1-a)^t (1 - 1/N)
        n, a = 250, 0.4
        w = (1 - a) * np.eye(n) + a / n
        res = empirical_contraction(static(w), horizon=4)
        assert not res.exact and res.columns_used == 64
        expected = (1 - a) ** np.arange(1, 5) * (1 - 1 / n)
        np.testing.assert_allclose(res.deviations, expected, rtol=1e-10)
        assert res.rate == pytest.approx(1 - a, rel=1e-10)
        few = empirical_contraction(static(w), horizon=2, max_columns=5, seed=3)
        assert few.columns_used == 5 and not few.exact
        everything = empirical_contraction(static(w), horizon=2, max_columns=10_000)
        assert everything.exact and everything.columns_used == n

    def test_rate_edge_cases(self):
        single = empirical_contraction(static(HALF), horizon=1)
        assert single.deviations.shape == (1,) and math.isnan(single.rate)
        uniform = empirical_contraction(static(np.full((3, 3), 1 / 3)), horizon=4)
        assert np.all(uniform.deviations < 1e-15) and uniform.rate == 0.0

    def test_deviations_read_only(self):
        res = empirical_contraction(static(HALF), horizon=3)
        with pytest.raises(ValueError):
            res.deviations[0] = 1.0

    def test_bad_parameters(self):
        seq = static(HALF)
        with pytest.raises(ParameterError, match="kind"):
            empirical_contraction(seq, horizon=3, kind="rows")
        for start in (-1, 3, 1.0):
            with pytest.raises(ParameterError, match="start"):
                empirical_contraction(seq, horizon=3, start=start)
        for cols in (0, 2.5):
            with pytest.raises(ParameterError, match="max_columns"):
                empirical_contraction(seq, horizon=3, max_columns=cols)
        with pytest.raises(ParameterError, match="horizon"):
            empirical_contraction(generated(2, lambda t: HALF))

    @given(st.data())
    def test_matches_dense_products(self, data):
        n = data.draw(st.integers(1, 5), label="n")
        horizon = data.draw(st.integers(1, 6), label="horizon")
        kind = data.draw(st.sampled_from(["doubly", "row", "column"]), label="kind")
        start = data.draw(st.integers(0, horizon - 1), label="start")
        entries = st.floats(0.0, 1.0, allow_nan=False)
        mats = [np.array(data.draw(st.lists(entries, min_size=n * n, max_size=n * n))).reshape(n, n)
                for _ in range(horizon)]
        res = empirical_contraction(from_matrices(mats), kind=kind, start=start)
        phi = np.eye(n)
        expected = []
        for t in range(start + 1, horizon + 1):
            phi = mats[t - 1] @ phi
            if kind == "doubly":
                expected.append(np.abs(phi - 1 / n).max())
            elif kind == "row":
                expected.append((phi.max(axis=0) - phi.min(axis=0)).max())
            else:
                expected.append((phi.max(axis=1) - phi.min(axis=1)).max())
        np.testing.assert_allclose(res.deviations, expected, rtol=1e-9, atol=1e-12)
        assert res.exact


# ---------------------------------------------------------------------------
# Nedić–Ozdaglar bound holds empirically (Huang, Mitra and Vaidya, ICDCN 2015, Lemma 6)
# ---------------------------------------------------------------------------
@st.composite
def connected_graphs(draw: st.DrawFn, n: int) -> nx.Graph:
    """A random connected undirected graph on ``0..n-1``: a random tree plus extra edges."""
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for i in range(1, n):
        g.add_edge(i, draw(st.integers(0, i - 1)))
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n))
    g.add_edges_from((u, v) for u, v in extra if u != v)
    return g


@st.composite
def doubly_stochastic_sequences(draw: st.DrawFn) -> tuple[list[sp.csr_array], int, int]:
    """Metropolis weights on 1-4 random connected graphs, cycled; a horizon and a start."""
    n = draw(st.integers(2, 6), label="n")
    period = draw(st.integers(1, 4), label="period")
    mats = [metropolis(draw(connected_graphs(n))) for _ in range(period)]
    horizon = draw(st.integers(1, 400), label="horizon")
    start = draw(st.integers(0, horizon - 1), label="start")
    return mats, horizon, start


def _eta(mats: list[sp.csr_array]) -> float:
    """Smallest positive weight over the rounds, straight from the stored entries."""
    return min(float(np.min(w.toarray()[w.toarray() > 0])) for w in mats)


@given(doubly_stochastic_sequences())
def test_nedic_ozdaglar_bound_holds(case):
    mats, horizon, start = case
    n = mats[0].shape[0]
    theta, beta = nedic_ozdaglar(_eta(mats), n)
    res = empirical_contraction(periodic(mats), horizon=horizon, start=start)
    assert res.exact
    t_minus_s = np.arange(1, horizon - start + 1)
    assert np.all(res.deviations <= theta * beta**t_minus_s)


def test_nedic_ozdaglar_bound_can_fail_without_connectivity():
    # two isolated nodes (eta = 1): the deviation stays at 1/2 while the bound decays
    theta, beta = nedic_ozdaglar(1.0, 2)
    res = empirical_contraction(static(np.eye(2)), horizon=40)
    bound = theta * beta ** np.arange(1, 41)
    assert np.all(res.deviations == 0.5)
    assert not np.all(res.deviations <= bound)


def test_large_sampled_run_is_fast():
    # N = 1000 ring (metropolis), 300 rounds, 64 sampled columns
    w = metropolis(nx.cycle_graph(1000))
    res = empirical_contraction(static(w), horizon=300)
    assert res.columns_used == 64 and not res.exact
    # a column e_j spreads like a lazy random walk: deviation decreasing, still far from 0
    assert np.all(np.diff(res.deviations) <= 1e-15)
    assert 0.01 < res.deviations[-1] < 0.1



@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nedic_ozdaglar(0.0, 3), r"^eta must be in \(0, 1\], got 0\.0$"),
        (lambda: nedic_ozdaglar("0.5", 3), r"^eta must be a real number, got '0\.5'$"),
        (lambda: nedic_ozdaglar(0.5, 0), r"^num_nodes must be >= 1, got 0$"),
        (lambda: dpsda_c_theta(math.nan, 3), r"^phi must be finite, got nan$"),
        (lambda: push_sum_lambda(3, 1.5), r"^B must be an integer, got 1\.5$"),
        (lambda: empirical_contraction(static([[0.5, 0.5], [0.5, 0.5]]), horizon=3, start=3),
         r"^start must be < horizon \(3\), got 3$"),
        (lambda: empirical_contraction(static([[0.5, 0.5], [0.5, 0.5]]), horizon=3, start=True),
         r"^start must be an integer, got True$"),
        (lambda: empirical_contraction(static([[0.5, 0.5], [0.5, 0.5]]), horizon=3, max_columns=0),
         r"^max_columns must be >= 1, got 0$"),
    ],
)
def test_bad_arguments_name_parameter_and_value(call, message):
    """The checks come from topology.validation: ParameterError naming parameter and value."""
    with pytest.raises(ParameterError, match=message):
        call()

"""Muffliato per-pair values: the authors' convention and the exact values, hand-derived on the 6-node path.

Closed form (6-node path 0-1-2-3-4-5, plain gossip, T = 3 steps, the authors'
convention: steps 1..3, first exchange excluded; alpha = 2, sigma = 1).
``W`` puts 1/3 on every edge (diagonal 2/3 at the ends, 1/3 inside). Node 5
sees its neighbour 4's values ``M_t[4, :] (x + xi)``, t = 1, 2, 3:

    W[4, :]   = (0, 0, 0, 1, 1, 1) / 3
    W^2[4, :] = (0, 0, 1, 2, 3, 3) / 9
    W^3[4, :] = (0, 1, 3, 6, 8, 9) / 27

(``W^3[4, j] = sum_i W^2[4, i] W[i, j]``: e.g. ``j = 4``: (2 + 3 + 3)/27).
Exact: node 5 knows ``xi_5``; on columns 0..4 the rows are, up to scale,
``a = (0, 0, 0, 1, 1)``, ``b = (0, 0, 1, 2, 3)``, ``c = (0, 1, 3, 6, 8)``. They
live in coordinates 1..4 and span the 3-dimensional subspace orthogonal
there to ``n = (-1, 1, 1, -1)`` (``n.a = -1 + 1 = 0``, ``n.b = 1 + 2 - 3 = 0``,
``n.c = -1 + 3 + 6 - 8 = 0``). So ``||P e_u||^2 = 1 - n_u^2/|n|^2 = 3/4`` for
``u = 1..4`` and 0 for ``u = 0``; ``D_2(u -> 5) = 3/4`` resp. 0.

Authors' sum, ``sum_t (M_t[4, u] / ||M_t[4, :]||)^2`` with ``||W[4]||^2 = 3/9``,
``||W^2[4]||^2 = 23/81``, ``||W^3[4]||^2 = 191/729``:
``u = 0``: 0; ``u = 1``: 1/191; ``u = 2``: 1/23 + 9/191; ``u = 3``: 1/3 + 4/23 + 36/191;
``u = 4``: 1/3 + 9/23 + 64/191 > 1, capped at 1.

With the first exchange included, node 5 also sees ``x_4 + xi_4``: ``e_4`` and
then ``a, b, c`` give ``e_3, e_2, e_1``: ``D_2 = 1`` for ``u = 1..4``.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import networkx as nx
import numpy as np
import scipy.sparse as sp
import pytest

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.network.muffliato import (
    authors_pairwise_loss,
    exact_pairwise_loss,
    observer_row,
    pairwise_rows,
    witness_round,
)
from accounting.network.muffliato_gossip import (
    chebyshev_gamma,
    gossip_rows,
    hamilton_weights,
    muffliato_schedule,
    muffliato_steps,
    spectral_gap,
)
from accounting.network.muffliato_graphs import distances_from, erdos_renyi_connected, grid, hypercube, random_geometric
from accounting.network.row_space import row_space_basis
from accounting.network.observers import Observer, pairwise_losses


@pytest.fixture
def path6():
    return hamilton_weights(nx.path_graph(6))


def test_path6_gossip_rows_are_the_hand_written_ones(path6):
    rows = {t: r[0] for t, r in gossip_rows(path6, [4], 3)}
    np.testing.assert_allclose(rows[1], np.array([0, 0, 0, 1, 1, 1]) / 3, atol=1e-15)
    np.testing.assert_allclose(rows[2], np.array([0, 0, 1, 2, 3, 3]) / 9, atol=1e-15)
    np.testing.assert_allclose(rows[3], np.array([0, 1, 3, 6, 8, 9]) / 27, atol=1e-15)


def test_path6_exact_matches_the_closed_form(path6):
    exact = exact_pairwise_loss(path6, 5, 3).exact
    np.testing.assert_allclose(exact[:5], [0.0, 0.75, 0.75, 0.75, 0.75], atol=1e-12)
    assert math.isinf(exact[5])


def test_path6_exact_with_first_exchange_matches_the_closed_form(path6):
    exact = exact_pairwise_loss(path6, 5, 3, include_first_exchange=True).exact
    np.testing.assert_allclose(exact[:5], [0.0, 1.0, 1.0, 1.0, 1.0], atol=1e-12)


def test_path6_authors_values_match_the_closed_form(path6):
    expected = [F(0), F(1, 191), F(1, 23) + F(9, 191), F(1, 3) + F(4, 23) + F(36, 191),
                min(F(1), F(1, 3) + F(9, 23) + F(64, 191))]
    got = authors_pairwise_loss(path6, 5, 3)
    np.testing.assert_allclose(got[:5], [float(x) for x in expected], rtol=1e-12, atol=1e-15)


def test_exact_above_authors_is_a_witness_on_the_path(path6):
    # the authors' sum is below the exact loss for u = 1 and 2 (1/191 < 3/4): a witness against the figure
    row = observer_row(path6, 5, 3)
    assert row.authors is not None
    assert (row.exact[1:3] > row.authors[1:3]).all()


@pytest.mark.parametrize("accelerated", [False, True])
def test_streaming_exact_equals_the_generic_observer(accelerated):
    # two implementations: the streamed rows of W's polynomials, and the generic LinearSchedule view
    g = nx.connected_watts_strogatz_graph(7, 2, 0.4, seed=3)
    w = hamilton_weights(g)
    gamma = chebyshev_gamma(spectral_gap(w)) if accelerated else None
    sched = muffliato_schedule(w, 3, sigma=1.5, gamma=gamma)
    for v in range(7):
        generic = pairwise_losses(sched, Observer.node(v))
        stream = exact_pairwise_loss(w, v, 3, gamma, sigma=1.5, include_first_exchange=True).exact
        for u in range(7):
            if u != v:
                assert stream[u] == pytest.approx(generic[u].renyi(2.0), abs=1e-9), (u, v)


def test_chebyshev_rows_follow_the_recursion():
    g = nx.cycle_graph(6)
    w = hamilton_weights(g)
    gamma = 1.3
    dense = w.toarray()
    m_prev, m_cur = np.eye(6), dense.copy()
    expected = {0: m_prev, 1: m_cur}
    for t in range(2, 5):
        m_prev, m_cur = m_cur, gamma * dense @ m_cur + (1 - gamma) * m_prev
        expected[t] = m_cur
    for t, rows in gossip_rows(w, [0, 3], 4, gamma):
        np.testing.assert_allclose(rows, expected[t][[0, 3]], atol=1e-14)


def test_authors_constants():
    # hypercube of dimension d with these weights: I - W = L / (d + 1), L's eigenvalues 2j: gap 2/(d+1)
    w = hamilton_weights(hypercube(4))
    assert spectral_gap(w) == pytest.approx(2 / 5, abs=1e-12)
    # gap 1/6 (dimension 11): log(2048) / sqrt(1/6) = 18.68 -> 19; plain: log(2048) * 6 = 45.7 -> 46
    assert muffliato_steps(2048, 1.0, 1 / 6) == 19
    assert muffliato_steps(2048, 1.0, 1 / 6, accelerated=False) == 46
    # sigma = 0.4: log(2048 / 0.16 * 0.25) = log(3200) = 8.07; / sqrt(0.25) -> 17
    assert muffliato_steps(2048, 0.4, 0.25) == 17
    assert chebyshev_gamma(0.19) == pytest.approx(2 * (1 - math.sqrt(0.19 * 0.9525)) / 0.905**2, rel=1e-14)


def test_hamilton_weights_by_hand():
    # star with centre 0 and leaves 1, 2, 3: degrees 3, 1, 1, 1; edge weights 1/(3 + 1)
    w = hamilton_weights(nx.star_graph(3)).toarray()
    assert w[0, 1] == pytest.approx(0.25) and w[1, 1] == pytest.approx(0.75) and w[0, 0] == pytest.approx(0.25)


def test_figure_graphs():
    h = hypercube(11)
    assert h.number_of_nodes() == 2048 and all(d == 11 for _, d in h.degree())
    gr = grid(45)
    assert gr.number_of_nodes() == 2025 and sorted(gr.neighbors(46)) == [1, 45, 47, 91]
    er1, er2 = erdos_renyi_connected(300, seed=5), erdos_renyi_connected(300, seed=5)
    assert nx.is_connected(er1) and sorted(er1.edges()) == sorted(er2.edges())
    assert nx.is_connected(random_geometric(300, 0.15, seed=1))
    with pytest.raises(AccountingError, match="not connected"):
        random_geometric(50, 0.01, seed=0)
    with pytest.raises(AccountingError, match="no connected"):
        erdos_renyi_connected(50, p=0.001, seed=0, max_draws=3)
    assert distances_from(nx.path_graph(4), 1).tolist() == [1, 0, 1, 2]


def test_streaming_rows_and_errors(path6):
    rows = list(pairwise_rows(path6, [5, 0], 3))
    assert [r.v for r in rows] == [5, 0]
    np.testing.assert_allclose(rows[0].exact[:5], [0.0, 0.75, 0.75, 0.75, 0.75], atol=1e-12)
    with pytest.raises(AccountingError, match="observer node"):
        exact_pairwise_loss(path6, 6, 3)
    with pytest.raises(PrivacyParameterError, match="alpha"):
        authors_pairwise_loss(path6, 0, 3, alpha=1.0)
    with pytest.raises(PrivacyParameterError, match="steps"):
        list(gossip_rows(path6, [0], -1))
    with pytest.raises(PrivacyParameterError, match="spectral gap"):
        chebyshev_gamma(0.0)


def test_witness_rounds_on_the_path(path6):
    # exact loss to node 5 after steps 1..t (rows a; a, b; a, b, c of the module docstring):
    # u = 1: 0, 0, 3/4 vs authors 1/191 -> step 3; u = 2: 0, 2/3, 3/4 vs 1/23 + 9/191 = 0.091 -> step 2;
    # u = 3: 1/2, 2/3, 3/4 vs 1/3 + 4/23 + 36/191 = 0.695 -> step 3; u = 4: at most 3/4 vs the cap 1 -> none
    assert [witness_round(path6, u, 5, 3) for u in (1, 2, 3, 4)] == [3, 2, 3, None]
    with pytest.raises(AccountingError, match="other than the observer"):
        witness_round(path6, 5, 5, 3)


@pytest.mark.parametrize("graph", [hypercube(5), nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=2)])
@pytest.mark.parametrize("first", [False, True])
def test_gram_schmidt_and_svd_routes_agree(graph, first):
    # the streamed block Gram-Schmidt basis and the general one-SVD computation of the same view;
    # graphs with exact linear dependencies between the rows (the hypercube's W has 6 distinct eigenvalues)
    w = hamilton_weights(graph)
    gap = spectral_gap(w)
    steps = muffliato_steps(graph.number_of_nodes(), 1.0, gap)
    gamma = chebyshev_gamma(gap)
    for v in (0, 7):
        gs = exact_pairwise_loss(w, v, steps, gamma, include_first_exchange=first)
        sv = exact_pairwise_loss(w, v, steps, gamma, include_first_exchange=first, method="svd")
        assert gs.rank == sv.rank and gs.view_dim == sv.view_dim
        np.testing.assert_allclose(gs.exact, sv.exact, atol=1e-8)


def test_hypercube_node_learns_its_neighbours_antipodes():
    """Closed form on the 4-cube: far nodes are not protected.

    ``W = I - L/5`` has the five distinct eigenvalues ``1 - 2j/5``, j = 0..4, none zero. For a
    node ``w``, the vectors ``W^t e_w`` lie in the 5-dimensional space of functions that depend only
    on the distance to ``w`` (the spheres ``S_k(w)``, k = 0..4, are unions of whole orbits of the cube's
    symmetries fixing ``w``), and ``t = 1..5`` span it: their coefficients on the eigenspaces are
    ``lambda_j^t``, a Vandermonde matrix times ``diag(lambda_j)``, invertible. So node ``v`` learns,
    for each neighbour ``w``, the sum of ``x + xi`` over each sphere around ``w``, in particular over
    ``S_4(w)``, the single antipode of ``w``: the full local loss ``alpha / (2 sigma^2) = 1``. The
    antipodes of ``v``'s four neighbours are the four nodes at distance 3 from ``v``.
    """
    g = hypercube(4)
    w = hamilton_weights(g)
    dist = distances_from(g, 0)
    row = observer_row(w, 0, 5, None)
    assert row.authors is not None and row.dropped == 0
    far = np.flatnonzero(dist == 3)
    assert far.size == 4
    np.testing.assert_allclose(row.exact[far], 1.0, atol=1e-9)
    assert (row.authors[far] < 0.9).all()  # the authors' sum says they are protected: a witness against the figure


def test_rows_from_worker_processes_are_the_same_rows_in_order():
    # observers are independent: two processes give the same values, in the order asked for
    g = nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=2)
    w = hamilton_weights(g)
    gamma = chebyshev_gamma(spectral_gap(w))
    order = [29, 3, 0, 17, 8, 11]
    here = list(pairwise_rows(w, order, 6, gamma))
    pooled = list(pairwise_rows(w, order, 6, gamma, workers=2))
    assert [r.v for r in pooled] == order
    for a, b in zip(here, pooled):
        assert a.rank == b.rank and a.dropped == b.dropped
        np.testing.assert_array_equal(a.exact, b.exact)
        assert a.authors is not None and b.authors is not None
        np.testing.assert_array_equal(a.authors, b.authors)
    with pytest.raises(AccountingError, match="workers"):
        list(pairwise_rows(w, order, 6, gamma, workers=0))


def test_rows_do_not_depend_on_the_number_of_workers_on_a_graph_large_enough_for_threaded_blas():
    """Before: workers=1 ran BLAS multithreaded, the workers single-threaded: 128-node rows differed by 1.7e-13,
    although ``asyncdp reproduce muffliato-fig1a --workers`` says the values do not depend on it."""
    g = random_geometric(128, 0.07 * np.sqrt(16.0), seed=0)
    w = hamilton_weights(g)
    gamma = chebyshev_gamma(spectral_gap(w))
    order = [1, 2]
    here = list(pairwise_rows(w, order, 40, gamma))
    pooled = list(pairwise_rows(w, order, 40, gamma, workers=2))
    for a, b in zip(here, pooled):
        np.testing.assert_array_equal(a.exact, b.exact)


def test_row_space_basis_keeps_exact_dependencies_out_and_weak_directions_counted():
    # rows (1, 1, 0), (2, 2, 0): one direction; a third row 1e-12 off it is ambiguous at rank_rtol 1e-10
    # (above rounding, below the tolerance): dropped, not kept
    rows = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [1.0, 1.0, 1e-12 * math.sqrt(8)]])
    q, dropped = row_space_basis([rows], batch_rows=1)
    assert q.shape == (3, 1) and dropped == 1
    np.testing.assert_allclose(np.sum(q**2, axis=1), [0.5, 0.5, 0.0], atol=1e-15)
    # many batches: the buffer grows past its first capacity and stays orthonormal
    big = np.random.default_rng(0).standard_normal((300, 250))
    q, dropped = row_space_basis([big[i:i + 7] for i in range(0, 300, 7)], batch_rows=5)
    assert q.shape == (250, 250) and dropped == 0
    np.testing.assert_allclose(q.T @ q, np.eye(250), atol=1e-12)


def test_row_space_basis_matches_the_one_svd_projector_on_nearly_dependent_batches():
    # rows that later batches mostly repeat (a smooth decaying spectrum, as gossip rows have): the single
    # projection of each batch, the QR of its residual and the SVD of the small factor must give the
    # projector of one SVD of all rows (singular values from 1 down to 1e-6, far above the tolerance)
    rng = np.random.default_rng(4)
    left = rng.standard_normal((400, 60))
    right = np.linalg.qr(rng.standard_normal((300, 60)))[0]
    rows = (left * np.logspace(0, -6, 60)) @ right.T
    q, dropped = row_space_basis([rows[i:i + 9] for i in range(0, 400, 9)], batch_rows=40)
    assert q.shape == (300, 60) and dropped == 0
    np.testing.assert_allclose(q @ q.T, right @ right.T, atol=1e-9)
    np.testing.assert_allclose(q.T @ q, np.eye(60), atol=1e-12)


def test_row_space_basis_does_not_depend_on_the_memory_order_of_the_blocks():
    # the batch is factored in place through its transpose: Fortran-ordered blocks must give the same basis
    rows = np.random.default_rng(5).standard_normal((90, 30)) @ np.random.default_rng(6).standard_normal((30, 70))
    blocks = [rows[i:i + 10] for i in range(0, 90, 10)]
    q_c, d_c = row_space_basis(blocks, batch_rows=25)
    q_f, d_f = row_space_basis([np.asfortranarray(b) for b in blocks], batch_rows=25)
    assert q_c.shape == (70, 30) and d_c == d_f == 0
    np.testing.assert_array_equal(q_c, q_f)


@pytest.mark.parametrize("first", [False, True])
def test_observer_row_in_one_pass_equals_the_two_separate_computations(first):
    # observer_row accumulates the authors' sum from the same gossip rows as the exact values
    g = nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=7)
    w = hamilton_weights(g)
    gamma = chebyshev_gamma(spectral_gap(w))
    for v in (0, 13):
        row = observer_row(w, v, 9, gamma, alpha=3.0, sigma=0.7, eps_local=0.8, include_first_exchange=first)
        ex = exact_pairwise_loss(w, v, 9, gamma, alpha=3.0, sigma=0.7, include_first_exchange=first)
        au = authors_pairwise_loss(w, v, 9, gamma, alpha=3.0, sigma=0.7, eps_local=0.8)
        assert row.authors is not None and (row.rank, row.dropped, row.view_dim) == (ex.rank, ex.dropped, ex.view_dim)
        np.testing.assert_array_equal(row.exact, ex.exact)
        np.testing.assert_allclose(row.authors, au, rtol=1e-14, atol=0)
    with pytest.raises(PrivacyParameterError, match="eps_local"):
        observer_row(w, 0, 9, gamma, eps_local=0.0)


def test_a_link_of_weight_below_rounding_level_makes_the_row_a_lower_estimate():
    # path 0 - 1 - 2 with W[0, 1] = 1e-17: node 2 sees x_1' and 1e-17 x_0' + x_1' / 2 + x_2' / 2 and knows x_2', so in
    # exact arithmetic it solves for x_0': loss 1. The direction is below rounding level: the value is not exact
    faint = 1e-17
    w = np.array([[1.0 - faint, faint, 0.0], [faint, 0.5 - faint, 0.5], [0.0, 0.5, 0.5]])
    row = exact_pairwise_loss(sp.csr_array(w), 2, 2, include_first_exchange=True)
    assert row.dropped > 0 and row.exact[0] < 1e-12, row  # 0 found for u = 0: a lower estimate of 1


def test_a_faint_link_to_a_node_seen_strongly_elsewhere_makes_the_row_a_lower_estimate():
    # nodes 0 and 1 reach node 2 through node 3 with equal weights (only x_0' + x_1'); node 4, a neighbour of 2, has a
    # link of weight 1e-17 to node 0: x_4(1) - 0.6 x_4' - 0.4 x_2' = 1e-17 x_0', so in exact arithmetic node 2 solves for
    # x_0' (loss 1). No column of the view is faint, and the row space kept has only x_0' + x_1' (0.5 found)
    w = np.zeros((5, 5))
    for a, b, weight in [(0, 3, 0.1), (1, 3, 0.1), (2, 3, 0.2), (2, 4, 0.4), (0, 4, 1e-17)]:
        w[a, b] = w[b, a] = weight
    np.fill_diagonal(w, 1.0 - w.sum(axis=1))
    row = exact_pairwise_loss(sp.csr_array(w), 2, 5, include_first_exchange=True)
    assert row.dropped > 0 and row.exact[0] == pytest.approx(0.5), row
    w[0, 4] = w[4, 0] = 0.0  # without the link: the same value, exact
    np.fill_diagonal(w, 0.0)
    np.fill_diagonal(w, 1.0 - w.sum(axis=1))
    row = exact_pairwise_loss(sp.csr_array(w), 2, 5, include_first_exchange=True)
    assert row.dropped == 0 and row.exact[0] == pytest.approx(0.5), row


def test_svd_method_treats_a_faint_link_as_the_default_does():
    # path 0 - 1 - 2 with W[0, 1] = 1e-17 (tests/asyncdp/privacy/test_red_faint_link.py): the direction carrying
    # x_0' in node 2's view is at rounding level. The default reports a lower estimate (dropped > 0); the svd method
    # raised AccountingError ("the mean shift leaves range(C)") for the pair 0 -> 2
    faint = 1e-17
    w = sp.csr_array(np.array([[1.0 - faint, faint, 0.0], [faint, 0.5 - faint, 0.5], [0.0, 0.5, 0.5]]))
    for include in (False, True):
        default = exact_pairwise_loss(w, 2, 2, include_first_exchange=include)
        svd = exact_pairwise_loss(w, 2, 2, include_first_exchange=include, method="svd")
        assert default.dropped > 0 and svd.dropped > 0  # not exact: lower estimates
        np.testing.assert_allclose(svd.exact[:2], default.exact[:2], atol=1e-12)

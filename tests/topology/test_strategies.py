"""Tests of topology.strategies: each strategy produces what it promises.

Properties are checked directly with numpy and networkx; the Metropolis tests
check topology.weights.metropolis against its definition on drawn graphs.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import find, given
from hypothesis import strategies as st

from topology.errors import ParameterError
from topology.sequence import GraphSequence
from topology.strategies import (
    b_connected_sequences,
    column_stochastic_sequences,
    connected_undirected_graphs,
    doubly_stochastic_matrices,
    metropolis_sequences,
    strongly_connected_digraphs,
)
from topology.weights import metropolis

TOL = 1e-12


def digraph_of(adj: np.ndarray) -> nx.DiGraph:
    """[i, j] != 0, i != j: edge j -> i."""
    g = nx.DiGraph()
    g.add_nodes_from(range(adj.shape[0]))
    recv, send = np.nonzero(adj)
    g.add_edges_from((int(s), int(r)) for r, s in zip(recv, send) if r != s)
    return g


def window_union(seq: GraphSequence, start: int, B: int) -> np.ndarray:
    return sum(seq.dense(t) > 0 for t in range(start, start + B))


# -- graphs ---------------------------------------------------------------------
@given(strongly_connected_digraphs(min_nodes=1, max_nodes=8))
def test_strongly_connected_digraphs(pattern):
    assert isinstance(pattern, sp.csr_array) and pattern.dtype == bool
    n = pattern.shape[0]
    assert pattern.shape == (n, n) and 1 <= n <= 8
    assert not pattern.diagonal().any()
    assert nx.is_strongly_connected(digraph_of(pattern.toarray()))


@given(connected_undirected_graphs(min_nodes=3, max_nodes=7))
def test_connected_undirected_graphs(pattern):
    a = pattern.toarray()
    assert 3 <= a.shape[0] <= 7
    assert np.array_equal(a, a.T) and not np.diag(a).any()
    assert nx.is_connected(nx.from_numpy_array(a.astype(int)))


@given(connected_undirected_graphs())
def test_metropolis_weights_on_connected_graphs(pattern):
    w = metropolis(pattern).toarray()
    a = pattern.toarray()
    n = a.shape[0]
    assert (w >= 0).all()
    assert np.abs(w - w.T).max() <= TOL
    assert np.abs(w.sum(axis=0) - 1).max() <= TOL
    assert np.abs(w.sum(axis=1) - 1).max() <= TOL
    assert (np.diag(w) > 0).all()
    # off-diagonal entries from the definition 1 / max(d_i, d_j), self-inclusive degrees
    deg = a.sum(axis=1) + 1
    expected = np.where(a, 1.0 / np.maximum.outer(deg, deg), 0.0)
    off = ~np.eye(n, dtype=bool)
    assert np.abs(w[off] - expected[off]).max(initial=0.0) <= TOL


def test_graph_strategies_shrink_to_small_graphs():
    smallest = find(strongly_connected_digraphs(max_nodes=8), lambda a: True)
    assert smallest.shape == (2, 2) and smallest.nnz == 2
    tree = find(connected_undirected_graphs(max_nodes=8), lambda a: a.shape[0] >= 5)
    assert tree.shape == (5, 5) and tree.nnz == 2 * 4  # a spanning tree: 4 undirected edges
    cycle = find(strongly_connected_digraphs(max_nodes=8), lambda a: a.shape[0] >= 4)
    assert cycle.nnz == 4  # the bare Hamiltonian cycle


# -- doubly stochastic matrices --------------------------------------------------
@given(
    st.data(),
    st.sampled_from([0.05, 0.1, 0.3, 0.5, 1.0]),
)
def test_doubly_stochastic_matrices(data, min_weight):
    w = data.draw(doubly_stochastic_matrices(min_nodes=1, max_nodes=7, min_weight=min_weight))
    assert isinstance(w, np.ndarray) and w.ndim == 2 and w.shape[0] == w.shape[1]
    assert 1 <= w.shape[0] <= 7
    assert (w >= 0).all()
    assert np.abs(w.sum(axis=0) - 1).max() <= TOL
    assert np.abs(w.sum(axis=1) - 1).max() <= TOL
    assert (np.diag(w) >= min_weight).all()
    assert (w[w > 0] >= min_weight).all()
    if min_weight == 1.0:
        assert np.array_equal(w, np.eye(w.shape[0]))


@given(doubly_stochastic_matrices(min_nodes=2, max_nodes=7, min_weight=0.2, irreducible=True))
def test_irreducible_doubly_stochastic(w):
    assert nx.is_strongly_connected(digraph_of(w))
    assert np.abs(w.sum(axis=0) - 1).max() <= TOL and np.abs(w.sum(axis=1) - 1).max() <= TOL
    assert (w[w > 0] >= 0.2).all()


def test_doubly_stochastic_not_always_identity():
    w = find(doubly_stochastic_matrices(min_nodes=3, max_nodes=3), lambda m: not np.allclose(m, np.eye(3)))
    assert w.shape == (3, 3)


# -- sequences ---------------------------------------------------------------------
@given(st.data(), st.integers(1, 4))
def test_b_connected_sequences(data, B):
    seq = data.draw(b_connected_sequences(B, max_nodes=7))
    assert isinstance(seq, GraphSequence)
    horizon = seq.length if seq.length is not None else 2 * seq.period
    assert horizon % B == 0
    if seq.period is not None:
        assert seq.period % B == 0
    for k in range(horizon // B):
        assert nx.is_strongly_connected(digraph_of(window_union(seq, k * B + 1, B)))
    for t in range(1, horizon + 1):
        w = seq.dense(t)
        assert (w >= 0).all() and (np.diag(w) > 0).all()
        assert np.abs(w.sum(axis=1) - 1).max() <= TOL


@given(st.data(), st.integers(1, 4))
def test_column_stochastic_sequences(data, B):
    seq = data.draw(column_stochastic_sequences(B, max_nodes=6))
    horizon = seq.length if seq.length is not None else seq.period
    for k in range(horizon // B):
        assert nx.is_strongly_connected(digraph_of(window_union(seq, k * B + 1, B)))
    for t in range(1, horizon + 1):
        w = seq.dense(t)
        assert np.abs(w.sum(axis=0) - 1).max() <= TOL
        assert (np.diag(w) > 0).all()
        # uniform push-sum weights: column j is 1/(out-degree + 1) on its support
        for j in range(w.shape[0]):
            support = w[:, j] > 0
            assert np.allclose(w[support, j], 1.0 / support.sum(), atol=TOL)


def test_b_connected_sequences_rounds_can_be_disconnected():
    seq = find(
        b_connected_sequences(3, min_nodes=3, max_nodes=5),
        lambda s: not nx.is_strongly_connected(digraph_of(s.dense(1) > 0)),
    )
    assert not nx.is_strongly_connected(digraph_of(seq.dense(1) > 0))
    assert nx.is_strongly_connected(digraph_of(window_union(seq, 1, 3)))


@given(st.data(), st.integers(1, 3))
def test_metropolis_sequences(data, B):
    seq = data.draw(metropolis_sequences(max_nodes=7, B=B))
    assert not seq.directed
    horizon = seq.length if seq.length is not None else seq.period
    for k in range(horizon // B):
        u = window_union(seq, k * B + 1, B)
        assert nx.is_connected(nx.from_numpy_array((u > 0).astype(int)))
    for t in range(1, horizon + 1):
        w = seq.dense(t)
        assert np.abs(w - w.T).max() <= TOL
        assert np.abs(w.sum(axis=0) - 1).max() <= TOL and np.abs(w.sum(axis=1) - 1).max() <= TOL
        assert (w >= 0).all() and (np.diag(w) > 0).all()
        if B == 1:
            assert nx.is_connected(nx.from_numpy_array((w > 0).astype(int)))


# -- validation --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: strongly_connected_digraphs(min_nodes=0), r"min_nodes .* got 0"),
        (lambda: strongly_connected_digraphs(min_nodes=5, max_nodes=3), r"min_nodes=5 exceeds max_nodes=3"),
        (lambda: connected_undirected_graphs(max_nodes=2.5), r"max_nodes .* got 2\.5"),
        (lambda: doubly_stochastic_matrices(min_weight=0), r"min_weight must be in \(0, 1\], got 0"),
        (lambda: doubly_stochastic_matrices(min_weight=1.5), r"min_weight .* got 1\.5"),
        (lambda: doubly_stochastic_matrices(min_weight=float("nan")), r"min_weight .* got nan"),
        (lambda: doubly_stochastic_matrices(min_weight=0.6, irreducible=True), r"irreducible=True needs min_weight <= 0\.5"),
        (lambda: b_connected_sequences(0), r"B must be an integer >= 1, got 0"),
        (lambda: b_connected_sequences(2, rule="metropolis"), r"'metropolis' needs undirected"),
        (lambda: b_connected_sequences(2, max_windows=0), r"max_windows .* got 0"),
        (lambda: column_stochastic_sequences(-1), r"B .* got -1"),
        (lambda: metropolis_sequences(B=0), r"B .* got 0"),
    ],
)
def test_bad_parameters_raise_at_creation(call, match):
    with pytest.raises(ParameterError, match=match):
        call()

"""Tests of topology.generators.b_connected: B-connectivity, minimality, weights, validation.

Connectivity is checked independently with networkx on the links read off the
weight matrices (``W[i, j] > 0``, ``i != j``: link ``j -> i``).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from topology.generators.b_connected import (
    CHENG2022_FIG2_EDGE_GROUPS,
    b_connected_edge_groups,
    b_connected_sequence,
    cheng2022_fig2_sequence,
)
from topology.errors import ParameterError


def edges_of(w: np.ndarray) -> set[tuple[int, int]]:
    """Directed links (sender, receiver) of a dense weight matrix."""
    recv, send = np.nonzero(w > 0)
    return {(int(s), int(r)) for r, s in zip(recv, send) if r != s}


def union_graph(seq, rounds, directed=True) -> nx.Graph:
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_nodes_from(range(seq.num_nodes))
    for t in rounds:
        g.add_edges_from(edges_of(seq.dense(t)))
    return g


def connected(g: nx.Graph) -> bool:
    return nx.is_strongly_connected(g) if g.is_directed() else nx.is_connected(g)


@st.composite
def n_and_b(draw, directed=True):
    n = draw(st.integers(2, 10))
    b = draw(st.integers(1, n if directed else n - 1))
    return n, b, draw(st.integers(0, 2**32))


@given(n_and_b())
def test_directed_windows_connected_and_minimal(params):
    n, b, seed = params
    seq = b_connected_sequence(n, b, seed=seed)
    assert seq.period == b and seq.num_nodes == n
    for start in range(1, 2 * b + 2):  # fixed and sliding windows, across period boundaries
        assert connected(union_graph(seq, range(start, start + b)))
        if b >= 2:
            assert not connected(union_graph(seq, range(start, start + b - 1)))
            assert not connected(union_graph(seq, [start]))
    # every union of a full window has exactly N links (a Hamiltonian cycle)
    cycle = union_graph(seq, range(1, b + 1))
    assert cycle.number_of_edges() == n
    assert all(d == 1 for _, d in cycle.in_degree()) and all(d == 1 for _, d in cycle.out_degree())
    # default weights are column-stochastic (push-sum), with positive diagonal
    for t in range(1, b + 1):
        w = seq.dense(t)
        assert (w >= 0).all() and (np.diag(w) > 0).all()
        assert np.abs(w.sum(axis=0) - 1).max() <= 1e-12


@given(n_and_b(directed=False))
def test_undirected_windows_connected_and_minimal(params):
    n, b, seed = params
    seq = b_connected_sequence(n, b, seed=seed, directed=False)
    assert not seq.directed
    for start in range(1, 2 * b + 2):
        assert connected(union_graph(seq, range(start, start + b), directed=False))
        if b >= 2:
            assert not connected(union_graph(seq, range(start, start + b - 1), directed=False))
    tree = union_graph(seq, range(1, b + 1), directed=False)
    assert nx.is_tree(tree)
    for t in range(1, b + 1):
        w = seq.dense(t)
        assert np.abs(w - w.T).max() <= 1e-12
        assert np.abs(w.sum(axis=0) - 1).max() <= 1e-12 and np.abs(w.sum(axis=1) - 1).max() <= 1e-12
        assert (w >= 0).all() and (np.diag(w) > 0).all()


def test_b_equals_one_every_round_strongly_connected():
    seq = b_connected_sequence(6, 1, seed=3)
    for t in (1, 2, 9):
        assert connected(union_graph(seq, [t]))


def test_period_and_determinism():
    a = b_connected_sequence(8, 3, seed=10)
    b = b_connected_sequence(8, 3, seed=10)
    c = b_connected_sequence(8, 3, seed=11)
    for t in range(1, 7):
        assert np.array_equal(a.dense(t), b.dense(t))
        assert np.array_equal(a.dense(t), a.dense(t + 3))
    assert any(not np.array_equal(a.dense(t), c.dense(t)) for t in range(1, 4))


def test_edge_groups_partition_the_cycle():
    groups = b_connected_edge_groups(9, 4, seed=5)
    assert len(groups) == 4 and all(groups)
    flat = [e for g in groups for e in g]
    assert len(flat) == len(set(flat)) == 9
    g = nx.DiGraph(flat)
    assert nx.is_strongly_connected(g) and g.number_of_nodes() == 9
    seq = b_connected_sequence(9, 4, seed=5)
    for t, group in enumerate(groups, start=1):
        assert edges_of(seq.dense(t)) == set(group)


@given(n_and_b(), st.booleans())
def test_extra_edges_keep_b_connectivity(params, directed):
    n, b, seed = params
    if not directed:
        b = max(1, min(b, n - 1))
    seq = b_connected_sequence(n, b, seed=seed, minimal=False, extra_edge_prob=0.3, directed=directed)
    assert seq.period is None
    for start in range(1, 2 * b + 2):
        assert connected(union_graph(seq, range(start, start + b), directed=directed))
    again = b_connected_sequence(n, b, seed=seed, minimal=False, extra_edge_prob=0.3, directed=directed)
    for t in (3, 1, 2):
        assert np.array_equal(seq.dense(t), again.dense(t))


def test_extra_edges_appear_and_full_probability_gives_complete_rounds():
    base = b_connected_sequence(7, 3, seed=1)
    some = b_connected_sequence(7, 3, seed=1, minimal=False, extra_edge_prob=0.3)
    full = b_connected_sequence(7, 3, seed=1, minimal=False, extra_edge_prob=1.0)
    extra = 0
    for t in range(1, 10):
        assert edges_of(base.dense(t)) <= edges_of(some.dense(t))
        extra += len(edges_of(some.dense(t)) - edges_of(base.dense(t)))
        assert len(edges_of(full.dense(t))) == 42
    assert extra > 0
    same = b_connected_sequence(7, 3, seed=1, minimal=False)  # no extra edges: the minimal one
    assert all(np.array_equal(same.dense(t), base.dense(t)) for t in range(1, 4))


def test_rules():
    row = b_connected_sequence(6, 2, seed=0, rule="row-stochastic").dense(1)
    assert np.abs(row.sum(axis=1) - 1).max() <= 1e-12
    with pytest.raises(ParameterError, match="metropolis"):
        b_connected_sequence(6, 2, seed=0, rule="metropolis")


def test_length():
    seq = b_connected_sequence(5, 2, seed=0, length=6)
    assert seq.length == 6
    with pytest.raises(IndexError):
        seq.weights(7)


# -- stand-in for Fig. 2 of Cheng, Liao and Li (arXiv 2022) --------------------------
EXPECTED_FIG2 = [  # our construction, 1-based labels, converted by hand to 0-based
    {(0, 1), (2, 3)},  # E0 = {1->2, 3->4}
    {(1, 2), (4, 5)},  # E1 = {2->3, 5->6}
    {(3, 4), (5, 6)},  # E2 = {4->5, 6->7}
    {(6, 0), (1, 4)},  # E3 = {7->1, 2->5}
]


def test_cheng2022_fig2_directed():
    seq = cheng2022_fig2_sequence()
    assert seq.num_nodes == 7 and seq.period == 4
    assert [set(g) for g in CHENG2022_FIG2_EDGE_GROUPS] == EXPECTED_FIG2
    for t in range(1, 9):
        w = seq.dense(t)
        assert edges_of(w) == EXPECTED_FIG2[(t - 1) % 4]
        assert np.abs(w.sum(axis=0) - 1).max() <= 1e-12
        assert not nx.is_weakly_connected(union_graph(seq, [t]))
    for start in range(1, 6):
        assert connected(union_graph(seq, range(start, start + 4)))
        assert not connected(union_graph(seq, range(start, start + 3)))
    # push-sum weight of 7 -> 1 in round 4: node 7 splits its mass over itself and node 1
    assert seq.dense(4)[0, 6] == pytest.approx(0.5)


def test_cheng2022_fig2_undirected():
    seq = cheng2022_fig2_sequence(directed=False)
    assert not seq.directed
    for t in range(1, 5):
        w = seq.dense(t)
        assert np.abs(w - w.T).max() <= 1e-12 and np.abs(w.sum(axis=0) - 1).max() <= 1e-12
        assert not connected(union_graph(seq, [t], directed=False))
    assert connected(union_graph(seq, range(1, 5), directed=False))
    # documented: not minimal, any 3 consecutive rounds are already connected
    assert all(connected(union_graph(seq, range(s, s + 3), directed=False)) for s in range(1, 5))
    with pytest.raises(ParameterError, match="metropolis"):
        cheng2022_fig2_sequence(rule="metropolis", directed=True)


# -- validation ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_nodes": 5, "B": 0}, r"B must be an integer >= 1, got 0"),
        ({"num_nodes": 5, "B": -2}, r"B must be .* got -2"),
        ({"num_nodes": 5, "B": 2.0}, r"B must be .* got 2\.0"),
        ({"num_nodes": 5, "B": 6}, r"B=6 is too large.*B <= num_nodes"),
        ({"num_nodes": 5, "B": 5, "directed": False}, r"B=5 is too large.*B <= num_nodes - 1"),
        ({"num_nodes": 1, "B": 1}, r"num_nodes must be an integer >= 2, got 1"),
        ({"num_nodes": 5, "B": 2, "seed": -1}, r"seed .* got -1"),
        ({"num_nodes": 5, "B": 2, "extra_edge_prob": 0.2}, r"extra_edge_prob=0\.2 needs minimal=False"),
        ({"num_nodes": 5, "B": 2, "minimal": False, "extra_edge_prob": 2}, r"extra_edge_prob .* got 2"),
        ({"num_nodes": 5, "B": 2, "length": 0}, r"length .* got 0"),
        ({"num_nodes": 5, "B": 2, "rule": "bogus"}, r"unknown weight rule 'bogus'"),
    ],
)
def test_bad_parameters(kwargs, match):
    kwargs.setdefault("seed", 0)
    with pytest.raises(ParameterError, match=match):
        b_connected_sequence(**kwargs)


def test_bad_parameters_edge_groups():
    with pytest.raises(ParameterError, match=r"B=4 is too large"):
        b_connected_edge_groups(3, 4, seed=0)


def test_former_name_still_works():
    import topology

    assert topology.paper004_fig2_sequence is topology.cheng2022_fig2_sequence

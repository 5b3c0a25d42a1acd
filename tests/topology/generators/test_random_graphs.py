"""Tests of topology.generators.random_graphs: determinism, random access, distributions, validation.

Expected values are computed here with numpy / scipy / networkx, never with
the code under test. Statistical checks use fixed seeds (so they are
reproducible) and acceptance regions from ``scipy.stats.binom.interval`` at a
stated level, i.e. a correct implementation fails a given check for a random
seed with probability at most ``1 - level``.
"""

from __future__ import annotations


import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform
from scipy.stats import binom

from topology.errors import ParameterError
from topology.generators.random_graphs import erdos_renyi, link_failures, random_geometric, round_rng

LEVEL = 0.999


def links(w: sp.csr_array) -> np.ndarray:
    """Dense boolean off-diagonal link pattern of a weight matrix."""
    a = w.toarray() > 0
    np.fill_diagonal(a, False)
    return a


def digraph(pattern: np.ndarray) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(pattern.shape[0]))
    recv, send = np.nonzero(pattern)
    g.add_edges_from(zip(send.tolist(), recv.tolist()))
    return g


def assert_doubly_stochastic_symmetric(w: np.ndarray) -> None:
    assert (w >= 0).all()
    assert np.abs(w - w.T).max() <= 1e-12
    assert np.abs(w.sum(axis=0) - 1).max() <= 1e-12
    assert np.abs(w.sum(axis=1) - 1).max() <= 1e-12
    assert (np.diag(w) > 0).all()


def in_interval(count: int, trials: int, prob: float, level: float = LEVEL) -> bool:
    lo, hi = binom.interval(level, trials, prob)
    return lo <= count <= hi


# -- determinism and random access ------------------------------------------------
CONSTRUCTORS = {
    "er": lambda seed: erdos_renyi(12, 0.3, seed=seed),
    "er-directed": lambda seed: erdos_renyi(12, 0.3, seed=seed, directed=True),
    "er-connected": lambda seed: erdos_renyi(12, 0.3, seed=seed, connected=True),
    "failures": lambda seed: link_failures(nx.petersen_graph(), 0.4, seed=seed),
    "failures-directed": lambda seed: link_failures(nx.DiGraph(nx.cycle_graph(8)), 0.4, seed=seed),
    "geometric": lambda seed: random_geometric(15, 0.4, seed=seed),
}


@pytest.mark.parametrize("make", CONSTRUCTORS.values(), ids=CONSTRUCTORS.keys())
def test_same_seed_gives_identical_matrices(make):
    a, b = make(5), make(5)
    for t in range(1, 9):
        wa, wb = a.weights(t), b.weights(t)
        assert (wa != wb).nnz == 0


@pytest.mark.parametrize("make", CONSTRUCTORS.values(), ids=CONSTRUCTORS.keys())
def test_different_seeds_differ(make):
    a, b = make(5), make(6)
    assert any((a.weights(t) != b.weights(t)).nnz for t in range(1, 9))


@pytest.mark.parametrize("make", CONSTRUCTORS.values(), ids=CONSTRUCTORS.keys())
def test_round_depends_only_on_seed_and_round(make):
    forward = [make(11).dense(t) for t in range(1, 25)]  # fresh object per round: no shared cache
    shuffled = make(11)
    order = np.random.default_rng(0).permutation(np.arange(1, 25))
    for t in order:  # 24 rounds > the 16-entry cache, so some rounds are regenerated
        assert np.array_equal(shuffled.dense(int(t)), forward[t - 1])
    again = make(11)
    for t in (24, 3, 24, 1):
        assert np.array_equal(again.dense(t), forward[t - 1])
    # consecutive rounds are different graphs
    assert any(not np.array_equal(forward[t], forward[t + 1]) for t in range(23))


def test_finite_and_infinite_agree_and_finite_stops():
    finite = erdos_renyi(10, 0.4, seed=3, length=5)
    infinite = erdos_renyi(10, 0.4, seed=3)
    assert finite.length == 5 and infinite.length is None
    for t in range(1, 6):
        assert np.array_equal(finite.dense(t), infinite.dense(t))
    with pytest.raises(IndexError):
        finite.weights(6)


def test_round_rng_layout():
    a = round_rng(4, 9).random(5)
    b = np.random.default_rng(np.random.SeedSequence([4, 9])).random(5)
    assert np.array_equal(a, b)


# -- Erdos-Renyi -------------------------------------------------------------------
def test_erdos_renyi_undirected_edge_frequency():
    n, p, rounds = 20, 0.3, 200
    seq = erdos_renyi(n, p, seed=123)
    counts = np.zeros((n, n), dtype=int)
    for t in range(1, rounds + 1):
        a = links(seq.weights(t))
        assert np.array_equal(a, a.T)
        counts += a
    pairs = n * (n - 1) // 2
    iu = np.triu_indices(n, 1)
    total = int(counts[iu].sum())
    assert in_interval(total, rounds * pairs, p), total
    # every single pair, Bonferroni-corrected so that the whole test has level LEVEL
    lo, hi = binom.interval(1 - (1 - LEVEL) / pairs, rounds, p)
    assert ((counts[iu] >= lo) & (counts[iu] <= hi)).all()


def test_erdos_renyi_directed_links_independent():
    n, p, rounds = 15, 0.4, 200
    seq = erdos_renyi(n, p, seed=7, directed=True)
    ordered = n * (n - 1)
    unordered = ordered // 2
    total = both = 0
    for t in range(1, rounds + 1):
        a = links(seq.weights(t))
        total += int(a.sum())
        both += int(np.triu(a & a.T, 1).sum())
    assert in_interval(total, rounds * ordered, p), total
    # the two directions of a pair are independent: both present with prob p^2
    assert in_interval(both, rounds * unordered, p * p), both


def test_erdos_renyi_default_weights():
    und = erdos_renyi(15, 0.3, seed=1).dense(2)
    assert_doubly_stochastic_symmetric(und)
    # Metropolis value on one link, from the definition
    a = links(sp.csr_array(und))
    deg = a.sum(axis=1) + 1
    i, j = map(int, np.argwhere(a)[0])
    assert und[i, j] == pytest.approx(1 / max(deg[i], deg[j]), abs=1e-15)
    d = erdos_renyi(15, 0.3, seed=1, directed=True).dense(2)
    assert np.abs(d.sum(axis=1) - 1).max() <= 1e-12
    col = erdos_renyi(15, 0.3, seed=1, directed=True, rule="column-stochastic").dense(2)
    assert np.abs(col.sum(axis=0) - 1).max() <= 1e-12
    assert np.array_equal(col > 0, d > 0)  # the rule changes weights, not links


def test_erdos_renyi_extremes():
    assert links(erdos_renyi(6, 0.0, seed=0).weights(3)).sum() == 0
    full = links(erdos_renyi(6, 1.0, seed=0, directed=True).weights(3))
    assert full.sum() == 30
    assert links(erdos_renyi(1, 1.0, seed=0).weights(1)).sum() == 0


@pytest.mark.parametrize("directed", [False, True])
def test_erdos_renyi_connected_rounds(directed):
    n, p = 12, 0.15  # G(12, 0.15) is often disconnected, so resampling is exercised
    seq = erdos_renyi(n, p, seed=2, directed=directed, connected=True)
    raw = erdos_renyi(n, p, seed=2, directed=directed)
    check = nx.is_strongly_connected if directed else (lambda g: nx.is_connected(g.to_undirected()))
    raw_disconnected = 0
    for t in range(1, 31):
        assert check(digraph(links(seq.weights(t))))
        raw_disconnected += not check(digraph(links(raw.weights(t))))
    assert raw_disconnected > 0


def test_erdos_renyi_connected_failure_names_round():
    seq = erdos_renyi(40, 0.001, seed=0, connected=True, max_tries=3)
    with pytest.raises(ParameterError, match=r"round 2: .*max_tries=3"):
        seq.weights(2)
    with pytest.raises(ParameterError, match=r"p=0\.0"):
        erdos_renyi(3, 0.0, seed=0, connected=True)


def test_erdos_renyi_large_sparse_edge_count():
    # speed is measured in benchmarks/; here only the edge count of the sparse sampler
    n, rounds = 1000, 300
    seq = erdos_renyi(n, 5 / n, seed=0)
    edges = sum(links(seq.weights(t)).sum() // 2 for t in range(1, rounds + 1))
    pairs = n * (n - 1) // 2
    assert in_interval(int(edges), rounds * pairs, 5 / n), edges


# -- link failures -----------------------------------------------------------------
def test_link_failures_undirected_frequency_and_symmetry():
    base = nx.petersen_graph()
    q, rounds = 0.3, 300
    seq = link_failures(base, q, seed=9)
    base_pat = nx.to_numpy_array(base, nodelist=range(10)) > 0
    survived = np.zeros((10, 10), dtype=int)
    for t in range(1, rounds + 1):
        w = seq.dense(t)
        assert_doubly_stochastic_symmetric(w)
        a = links(sp.csr_array(w))
        assert not (a & ~base_pat).any()  # never a link outside the base
        survived += a
    m = base.number_of_edges()
    total = int(np.triu(survived, 1).sum())
    assert in_interval(total, rounds * m, 1 - q), total


def test_link_failures_directed_directions_fail_independently():
    base = nx.DiGraph(nx.complete_graph(6))  # both directions of every pair
    q, rounds = 0.5, 200
    seq = link_failures(base, q, seed=4)
    assert seq.directed
    asymmetric = 0
    for t in range(1, rounds + 1):
        a = links(seq.weights(t))
        asymmetric += int(np.triu(a != a.T, 1).sum())
    # a pair is one-way iff exactly one direction failed: prob 2 q (1 - q)
    assert in_interval(asymmetric, rounds * 15, 2 * q * (1 - q)), asymmetric


def test_link_failures_matrix_base_and_extremes():
    ring = np.roll(np.eye(5, dtype=int), 1, axis=0)  # [i, i-1]: link i-1 -> i
    never = link_failures(ring, 0.0, seed=0)
    assert never.directed
    for t in (1, 7):
        assert np.array_equal(links(never.weights(t)), ring.astype(bool))
        assert np.abs(never.dense(t).sum(axis=1) - 1).max() <= 1e-12
    always = link_failures(ring, 1.0, seed=0)
    assert np.array_equal(always.dense(3), np.eye(5))


def test_link_failures_undirected_pattern_inferred_and_override():
    sym = nx.to_numpy_array(nx.cycle_graph(5))
    assert not link_failures(sym, 0.2, seed=0).directed
    assert link_failures(sym, 0.2, seed=0, directed=True).directed
    with pytest.raises(ParameterError, match="directed=False"):
        link_failures(np.roll(np.eye(5), 1, axis=0), 0.2, seed=0, directed=False)


# -- random geometric --------------------------------------------------------------
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_random_geometric_matches_documented_positions(dim):
    n, radius, seed = 30, 0.3, 17
    seq = random_geometric(n, radius, seed=seed, dim=dim)
    for t in (1, 2, 5):
        pts = np.random.default_rng(np.random.SeedSequence([seed, t])).random((n, dim))
        expected = squareform(pdist(pts)) <= radius
        np.fill_diagonal(expected, False)
        w = seq.dense(t)
        assert np.array_equal(links(sp.csr_array(w)), expected)
        assert_doubly_stochastic_symmetric(w)


def test_random_geometric_static_positions_from_round_one():
    n, radius, seed = 25, 0.35, 2
    seq = random_geometric(n, radius, seed=seed, mobile=False)
    pts = np.random.default_rng(np.random.SeedSequence([seed, 1])).random((n, 2))
    expected = squareform(pdist(pts)) <= radius
    np.fill_diagonal(expected, False)
    for t in (1, 2, 40):
        assert np.array_equal(links(seq.weights(t)), expected)
    assert seq.period == 1


def test_random_geometric_large_radius_is_complete():
    assert links(random_geometric(8, 1.5, seed=0).weights(1)).sum() == 56


# -- validation ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: erdos_renyi(0, 0.5, seed=0), r"num_nodes .* got 0"),
        (lambda: erdos_renyi(2.5, 0.5, seed=0), r"num_nodes .* got 2\.5"),
        (lambda: erdos_renyi(5, 1.5, seed=0), r"p must be a probability .* got 1\.5"),
        (lambda: erdos_renyi(5, -0.1, seed=0), r"p must be .* got -0\.1"),
        (lambda: erdos_renyi(5, float("nan"), seed=0), r"p must be .* got nan"),
        (lambda: erdos_renyi(5, 0.5, seed=-1), r"seed .* got -1"),
        (lambda: erdos_renyi(5, 0.5, seed=1.5), r"seed .* got 1\.5"),
        (lambda: erdos_renyi(5, 0.5, seed=0, length=0), r"length .* got 0"),
        (lambda: erdos_renyi(5, 0.5, seed=0, max_tries=0), r"max_tries .* got 0"),
        (lambda: erdos_renyi(5, 0.5, seed=0, directed="yes"), r"directed .* got 'yes'"),
        (lambda: erdos_renyi(5, 0.5, seed=0, directed=True, rule="metropolis"), r"'metropolis' needs undirected"),
        (lambda: erdos_renyi(5, 0.5, seed=0, rule="nonsense"), r"unknown weight rule 'nonsense'"),
        (lambda: link_failures(nx.cycle_graph(4), 1.2, seed=0), r"failure_prob .* got 1\.2"),
        (lambda: link_failures(nx.cycle_graph(4), 0.1, seed=0, keep_self=False), r"keep_self=False"),
        (lambda: link_failures(nx.DiGraph(nx.cycle_graph(4)), 0.1, seed=0, rule="lazy-max-degree"), r"lazy-max-degree"),
        (lambda: link_failures(nx.Graph(), 0.1, seed=0), r"no nodes"),
        (lambda: random_geometric(5, 0.0, seed=0), r"radius .* got 0\.0"),
        (lambda: random_geometric(5, -1, seed=0), r"radius .* got -1"),
        (lambda: random_geometric(5, float("inf"), seed=0), r"radius .* got inf"),
        (lambda: random_geometric(5, 0.2, seed=0, dim=0), r"dim .* got 0"),
        (lambda: random_geometric(-3, 0.2, seed=0), r"num_nodes .* got -3"),
    ],
)
def test_bad_parameters(call, match):
    with pytest.raises(ParameterError, match=match):
        call()

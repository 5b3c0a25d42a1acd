"""Graph sequences and single-matrix validation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import topology as T
from topology.audit import AssumptionSet, EachRound
from topology.errors import (
    EmptySequenceError,
    InvalidMatrixError,
    NodeCountMismatchError,
    ParameterError,
    RoundIndexError,
)


def test_orientation_and_networkx_view():
    w = [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    seq = T.static(w)
    g = seq.graph(1)
    assert g.has_edge(1, 0) and not g.has_edge(0, 1)  # W[0, 1] > 0: link 1 -> 0
    assert g[1][0]["weight"] == 0.5
    assert seq.pattern(1).toarray().tolist() == [[False, True, False], [False] * 3, [False] * 3]


def test_periodic_finite_and_generated():
    a, b = np.eye(2), np.full((2, 2), 0.5)
    per = T.periodic([a, b])
    assert per.period == 2 and per.length is None
    assert np.array_equal(per.dense(5), a) and np.array_equal(per.dense(6), b)
    fin = T.from_matrices([a, b])
    assert fin.length == 2 and [t for t, _ in fin.rounds()] == [1, 2]
    with pytest.raises(RoundIndexError, match="round 3 is past the last round"):
        fin.weights(3)
    calls = []
    gen = T.generated(2, lambda t: calls.append(t) or (a if t % 2 else b))
    assert np.array_equal(gen.dense(3), a) and np.array_equal(gen.dense(3), a)
    assert calls == [3]  # cached
    assert gen.take(4).length == 4


def test_from_networkx_with_edge_weights_and_rule():
    g = nx.DiGraph()
    g.add_weighted_edges_from([(0, 1, 0.25), (1, 1, 0.75), (0, 0, 1.0)])
    seq = T.from_networkx([g])
    assert seq.dense(1).tolist() == [[1.0, 0.0], [0.25, 0.75]]  # edge 0 -> 1 weight goes to W[1, 0]
    ring = T.from_networkx([nx.cycle_graph(["a", "b", "c"])], rule="metropolis")
    assert np.allclose(ring.dense(1), np.full((3, 3), 1 / 3))
    with pytest.raises(NodeCountMismatchError, match="round 2"):
        T.from_networkx([nx.path_graph(3), nx.path_graph(4)], rule="metropolis")


def test_input_validation_names_round_entry_and_value():
    with pytest.raises(InvalidMatrixError, match=r"round 2: entry \[1, 0\] is negative: -0\.5"):
        T.from_matrices([np.eye(2), [[1.0, 0.0], [-0.5, 1.0]]])
    with pytest.raises(InvalidMatrixError, match=r"round 1: entry \[0, 1\] is non-finite: nan"):
        T.from_matrices([[[1.0, np.nan], [0.0, 1.0]]])
    with pytest.raises(InvalidMatrixError, match="square"):
        T.static(np.ones((2, 3)))
    with pytest.raises(InvalidMatrixError, match="ragged"):
        T.static([[1.0, 0.0], [1.0]])
    with pytest.raises(NodeCountMismatchError, match="round 2: matrix has 3 nodes, the sequence has 2"):
        T.from_matrices([np.eye(2), np.eye(3)])
    with pytest.raises(EmptySequenceError):
        T.from_matrices([])
    with pytest.raises(RoundIndexError, match="rounds start at 1"):
        T.static(np.eye(2)).weights(0)
    with pytest.raises(ParameterError, match="horizon is required"):
        T.generated(2, lambda t: np.eye(2)).resolve_horizon(None)
    with pytest.raises(ParameterError, match="length must be a positive integer"):
        T.GraphSequence(2, lambda t: np.eye(2), length=2.5)


def test_as_weight_matrix_does_not_modify_callers_matrix():
    m = sp.csr_array((np.array([1.0, 0.0, 1.0]), (np.array([0, 0, 1]), np.array([0, 1, 1]))), shape=(2, 2))
    T.as_weight_matrix(m)
    assert m.nnz == 3


def test_integer_labels_are_agents_whatever_their_insertion_order():
    # a graph built from an edge list inserts its nodes in the order the edges name them; node k must be agent k
    # (row k), as the engines and the observers number agents: a cycle 3 -> 1 -> 0 -> 2 put node 3 in row 0, and
    # a strong-connectivity witness named rows, not the nodes the user wrote
    g = nx.DiGraph([(3, 1), (1, 0), (0, 2), (2, 3)])
    g.remove_edge(2, 3)  # node 3 hears nobody
    for seq in (T.from_networkx([g], rule="row-stochastic"), T.from_networkx([nx.DiGraph((u, v, {"weight": 1.0}) for u, v in g.edges)])):
        w = seq.dense(1)
        assert w[0, 1] > 0 and w[2, 0] > 0 and w[1, 3] > 0  # i receives from j: W[i, j]
    res = T.check_strongly_connected(T.from_networkx([g], rule="row-stochastic").weights(1))
    target, source = (int(x) for x in res.witness.replace("node ", "").split(" unreachable from "))
    assert not nx.has_path(g, source, target)  # true of the nodes the user wrote
    assert T.pattern_from_networkx(nx.Graph([(2, 0), (0, 1)])).toarray().astype(int).tolist() == [
        [0, 1, 1], [1, 0, 0], [1, 0, 0]]
    labelled = T.from_networkx([nx.cycle_graph(["b", "a", "c"])], rule="metropolis")
    assert labelled.num_nodes == 3  # other labels: the graph's order


def test_integer_labels_other_than_0_to_n_minus_1_are_sorted_not_taken_in_insertion_order():
    # 1-based labels from an edge list (3 -> 1 -> 2 -> 3, node 3 inserted first): node 3 was agent 0, so agent 0's
    # data sat at the node the user numbered 3, the engines running silently another assignment than the user's
    g = nx.DiGraph([(3, 1), (1, 2), (2, 3)])
    g.add_edge(3, 4)  # node 4 hears node 3 only
    weighted = nx.DiGraph((u, v, {"weight": 0.5}) for u, v in [*g.edges, *((k, k) for k in g.nodes)])
    for seq in (T.from_networkx([g], rule="row-stochastic"), T.from_networkx([weighted])):
        w = seq.dense(1)
        links = {(j + 1, i + 1) for i, j in zip(*np.nonzero(w)) if i != j}  # back to the user's labels
        assert links == set(g.edges)
    assert T.pattern_from_networkx(g).toarray()[3, 2]  # 3 -> 4: row of node 4 (agent 3), column of node 3


def test_a_round_function_that_raises_is_named_with_its_round():
    # a 0-based round function (rounds are 1-based): round 2 asks for mats[2]; the audit blamed its first step
    # ("step 'nonnegative' ... raised IndexError"), an engine gave a bare IndexError traceback
    mats = [np.eye(2), np.full((2, 2), 0.5)]
    seq = T.generated(2, lambda t: mats[t])
    with pytest.raises(ParameterError, match=r"round 2: the sequence's round function raised IndexError"):
        seq.weights(2)
    steps = (EachRound(T.check_nonnegative, "nonnegative", "every weight >= 0"),)
    spec = AssumptionSet("mine", "my notes", steps, "doubly")
    with pytest.raises(ParameterError, match=r"round 2: the sequence's round function raised IndexError"):
        T.audit(T.generated(2, lambda t: mats[t]), spec)


def test_an_iterator_of_rounds_is_refused_by_name_not_read_for_ever():
    # an endless generator of rounds: list() of it filled the memory (no error, no end); a finite one is refused
    # too (nothing tells the two apart), and the message points to generated() for rounds without end
    def rounds():
        while True:
            yield np.eye(2)

    def graphs():
        while True:
            yield nx.cycle_graph(3)

    for build in (lambda: T.from_matrices(rounds()), lambda: T.periodic(itertools.cycle([np.eye(2)])),
                  lambda: T.from_networkx(graphs(), rule="metropolis")):
        with pytest.raises(ParameterError, match=r"got an iterator \((generator|cycle)\), which may never end.*generated"):
            build()
    assert T.from_matrices(np.stack([np.eye(2)] * 3)).length == 3  # an array of rounds is a sequence, not an iterator


def test_one_matrix_given_for_a_list_of_rounds_is_named_as_such():
    # from_matrices(W): W's rows were read as rounds, and the error said only "round 1: weight matrix must be 2-D"
    w = np.full((3, 3), 1 / 3)
    for build in (lambda: T.from_matrices(w), lambda: T.periodic(w.tolist())):
        with pytest.raises(InvalidMatrixError, match=r"round 1 is a row of numbers, not a matrix: .*static\(W\)"):
            build()
    assert T.from_matrices([w]).length == 1 and T.from_matrices([sp.csr_array(w)]).length == 1


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_a_complex_weight_is_refused_not_cast_to_its_real_part(kind):
    # numpy's cast to float dropped the imaginary part with only a ComplexWarning
    w = np.array([[0.5, 0.5], [0.5, 0.5]], dtype=complex)
    w[1, 0] += 0.25j
    with pytest.raises(InvalidMatrixError, match=r"round 1: entry \[1, 0\] is complex"):
        T.static(w if kind == "dense" else sp.csr_array(w))
    assert T.static(np.real(w) + 0j).dense(1).tolist() == [[0.5, 0.5], [0.5, 0.5]]  # no imaginary part: exact


def test_a_round_function_that_is_not_deterministic_in_the_round_is_refused():
    # a researcher's random graph per round drawn from one shared generator: each call of round t gives another
    # graph, so once round 1 has left the sequence's cache the audit, the engines and every rerun saw other
    # graphs (a scenario run twice with one seed gave trajectories 1.04 apart); a second, different matrix for
    # a round is an error naming it
    rng = np.random.default_rng(0)

    def shared(t):
        return T.metropolis(nx.erdos_renyi_graph(6, 0.5, seed=int(rng.integers(1 << 31))))

    seq = T.generated(6, shared)
    seq.weights(1)
    for t in range(2, 40):  # round 1 leaves the cache
        seq.weights(t)
    with pytest.raises(ParameterError, match=r"round 1: .*round function gave another weight matrix"):
        seq.weights(1)
    # a function of the round alone is asked again as often as needed; the same matrix in another form is the same
    same = T.generated(6, lambda t: T.metropolis(nx.erdos_renyi_graph(6, 0.5, seed=t)) if t % 2
                       else T.metropolis(nx.erdos_renyi_graph(6, 0.5, seed=t)).toarray().tolist())
    first = [same.dense(t) for t in range(1, 40)]
    assert all(np.array_equal(same.dense(t), w) for t, w in zip(range(1, 40), first))


def test_a_round_function_that_is_not_callable_is_named_at_construction():
    with pytest.raises(ParameterError, match="round_function must be a callable.*generator"):
        T.generated(2, (m for m in [np.eye(2)]))


def test_from_networkx_without_a_rule_refuses_an_edge_without_a_numeric_weight():
    # networkx reads a missing weight as 1: a directed ring whose weights sit under another key ("w") became a
    # permutation matrix (doubly stochastic) silently; the edge is named instead
    g = nx.DiGraph()
    g.add_edges_from([(0, 0, {"weight": 0.5}), (1, 1, {"weight": 0.5}), (0, 1, {"weight": 0.5}), (1, 0, {"w": 0.5})])
    with pytest.raises(ParameterError, match=r"round 1: edge 1 -> 0 has no 'weight' attribute"):
        T.from_networkx([g])
    # read from a CSV: text; a flag: networkx's 1; a Fraction is a real number but not one scipy takes
    for bad, shown in (("0.5", "'0.5'"), (True, "True"), (Fraction(1, 2), r"Fraction\(1, 2\)")):
        g[1][0]["weight"] = bad
        with pytest.raises(ParameterError, match=f"round 1: edge 1 -> 0 has weight {shown}, not an int or float"):
            T.from_networkx([g])
    g[1][0]["weight"] = 0.5
    assert T.from_networkx([g]).dense(1).tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_a_sequence_over_validated_matrices_is_not_fingerprinted(monkeypatch):
    # from_matrices, periodic and static hold private validated copies, deterministic by construction; the round
    # checksum cost more than the matrix's own validation on every cache miss (an audit of 1000 rounds asks each
    # round 5 times: a fifth of its time), so these skip it while a user's round function keeps it
    from topology import sequence as S

    calls = []
    monkeypatch.setattr(S, "_fingerprint", lambda mat: calls.append(mat) or np.uint64(1))
    ring = T.metropolis(nx.cycle_graph(5))
    seqs = (T.from_matrices([ring] * 40), T.periodic([ring, np.eye(5)] * 20), T.static(ring),
            T.from_networkx([nx.cycle_graph(5)] * 40, rule="metropolis"), T.generated(5, lambda t: ring).take(40))
    calls.clear()  # take() asked the generated sequence's 40 rounds
    for seq in seqs:
        for _ in range(2):  # the second pass misses the cache on every round
            for t in range(1, 41):
                seq.weights(t)
    assert calls == []
    T.generated(5, lambda t: ring).weights(1)
    assert len(calls) == 1


def test_a_round_function_giving_one_matrix_in_another_form_on_each_call_is_accepted():
    # the fingerprint is of the canonical CSR form: dense or sparse, unsorted column indices, explicit zeros,
    # 64-bit indices, duplicates summing to the weight, float32 of an exact weight are all the same matrix
    w = T.metropolis(nx.cycle_graph(4)).toarray()  # weights 1/3
    c = sp.csr_array(w)
    rev = np.concatenate([c.indices[a:b][::-1] for a, b in zip(c.indptr[:-1], c.indptr[1:])])
    vals = np.concatenate([c.data[a:b][::-1] for a, b in zip(c.indptr[:-1], c.indptr[1:])])
    unsorted = sp.csr_array((vals, rev, c.indptr.copy()), shape=c.shape)
    assert not unsorted.has_sorted_indices
    coo = sp.coo_array(w)
    zeros = sp.coo_array((np.r_[coo.data, 0.0], (np.r_[coo.row, 0], np.r_[coo.col, 2])), shape=w.shape)
    wide = sp.csr_array((c.data, c.indices.astype(np.int64), c.indptr.astype(np.int64)), shape=c.shape)
    halves = sp.coo_array((np.r_[coo.data / 2, coo.data / 2], (np.r_[coo.row, coo.row], np.r_[coo.col, coo.col])),
                          shape=w.shape)
    forms = [w, w.tolist(), c, unsorted, zeros, wide, halves, sp.csc_array(w), sp.csr_matrix(w)]
    calls = iter(range(10**6))
    seq = T.generated(4, lambda t: forms[next(calls) % len(forms)] if t == 1 else np.eye(4))
    for _ in range(len(forms)):
        assert np.array_equal(seq.dense(1), w)
        for t in range(2, 20):  # round 1 leaves the cache
            seq.weights(t)
    half = np.full((2, 2), 0.5)
    single = iter([half, half.astype(np.float32)] * 5)
    seq = T.generated(2, lambda t: next(single) if t == 1 else np.eye(2))
    seq.weights(1)
    for t in range(2, 20):
        seq.weights(t)
    assert seq.dense(1).tolist() == half.tolist()


def test_parallel_edges_of_a_multigraph_without_a_rule_are_refused_not_summed():
    # networkx adds parallel edges' weights into one matrix entry: 0.5 + 0.5 read as a weight of 1
    g = nx.MultiDiGraph()
    g.add_weighted_edges_from([(0, 0, 0.5), (1, 1, 0.5), (0, 1, 0.5), (0, 1, 0.5), (1, 0, 0.5)])
    with pytest.raises(ParameterError, match=r"round 1: edge 0 -> 1 appears 2 times \(a multigraph\)"):
        T.from_networkx([g])
    single = nx.MultiDiGraph()
    single.add_weighted_edges_from([(0, 0, 0.5), (1, 1, 0.5), (0, 1, 0.5), (1, 0, 0.5)])
    assert T.from_networkx([single]).dense(1).tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_a_dataframe_labelled_in_two_orders_is_refused_not_read_by_position():
    pd = pytest.importorskip("pandas")
    w = [[0.9, 0.1, 0.0], [0.0, 0.5, 0.5], [0.2, 0.0, 0.8]]
    good = pd.DataFrame(w, index=["a", "b", "c"], columns=["a", "b", "c"])
    assert T.from_matrices([good]).dense(1).tolist() == w
    swapped = good.loc[["b", "a", "c"], ["a", "b", "c"]]  # rows reordered: by position, b's row would be agent 0's
    with pytest.raises(InvalidMatrixError, match=r"round 1: a DataFrame whose row labels \['b', 'a', 'c'\]"):
        T.from_matrices([swapped])

"""Tests of the assumption audit (topology.audit)."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topology
from topology.audit import AssumptionSet, BStronglyConnected, EachRound
from topology.errors import ParameterError
from topology.strategies import metropolis_sequences
from asyncdp.papers import assumption_set

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_RULES = ("huang2015", "showkatbakhsh", "wang-basar", "dpsda-c", "dpsda-ps")


def _ring(n: int) -> topology.GraphSequence:
    return topology.from_networkx([nx.cycle_graph(n)], rule="metropolis", periodic=True)


@given(seq=metropolis_sequences(min_nodes=3, max_nodes=7), data=st.data())
def test_one_defective_round_is_reported_exactly(seq, data):
    """Break the column sums of one round: the audit names that round and the true column sum."""
    horizon = seq.resolve_horizon(None) if seq.length is not None else 2 * seq.period
    mats = [seq.dense(t) for t in range(1, horizon + 1)]
    bad = data.draw(st.integers(1, horizon), label="defective round")
    n = mats[0].shape[0]
    i = data.draw(st.integers(0, n - 1), label="row")
    j = data.draw(st.integers(0, n - 1).filter(lambda k: k != i), label="column")
    w = mats[bad - 1].copy()
    shift = min(w[i, i], 0.5) / 2  # keeps every entry nonnegative, rows still sum to 1
    w[i, j] += shift
    w[i, i] -= shift
    mats[bad - 1] = w
    report = topology.audit(topology.from_matrices(mats), assumption_set("huang2015"))
    ds = next(a for a in report.assumptions if a.name == "doubly_stochastic")
    assert not ds.holds
    assert ds.first_failure_round == bad
    m = re.fullmatch(rf"round {bad}: column (\d+) sums to (\S+)", ds.witness)
    assert m, ds.witness
    col = int(m.group(1))
    assert col in (i, j)
    assert float(m.group(2)) == pytest.approx(w[:, col].sum(), abs=1e-9)
    # the other assumptions are unaffected
    assert next(a for a in report.assumptions if a.name == "nonnegative").holds


def test_connected_ring_passes_every_algorithm_but_dpsda_ps_reports_b1():
    for name in SEED_RULES:
        report = topology.audit(_ring(6), assumption_set(name))
        assert report.all_hold, (name, report.to_table())
    ps = topology.audit(_ring(6), assumption_set("dpsda-ps"))
    assert ps.constants["B"] == 1


def test_huang2015_constants_match_lemma6():
    report = topology.audit(_ring(5), assumption_set("huang2015"))
    eta = 1 / 3  # Metropolis on a ring: every weight is 1/3
    assert report.constants["eta"] == pytest.approx(eta)
    beta = 1 - eta / (4 * 25)
    assert report.constants["beta"] == pytest.approx(beta)
    assert report.constants["theta"] == pytest.approx(beta**-2)
    assert report.constants["empirical_rate"] <= beta


def test_showkatbakhsh_beta_is_second_eigenvalue_modulus():
    w = topology.metropolis(nx.cycle_graph(6)).toarray()
    eig = np.sort(np.linalg.eigvalsh(w))
    report = topology.audit(topology.static(w), assumption_set("showkatbakhsh"))
    assert report.constants["beta"] == pytest.approx(max(abs(eig[-2]), abs(eig[0])))


def test_time_varying_sequence_fails_static_for_fixed_graph_algorithms():
    seq = topology.from_networkx([nx.cycle_graph(5), nx.complete_graph(5)], rule="metropolis", periodic=True)
    for name in ("showkatbakhsh", "wang-basar"):
        static = next(a for a in topology.audit(seq, assumption_set(name)).assumptions if a.name == "static")
        assert not static.holds and static.first_failure_round == 2
        assert static.witness.startswith("round 2: entry [")


def test_dpsda_ps_on_b_connected_sequence():
    seq = topology.b_connected_sequence(8, 3, seed=4)
    report = topology.audit(seq, assumption_set("dpsda-ps"))
    assert report.all_hold
    assert report.constants["minimal_B_fixed"] == 3
    assert 0 < report.constants["gamma"] <= 1
    # forcing a window that is too short fails with a window witness
    short = topology.audit(seq, assumption_set("dpsda-ps"), B=2)
    bsc = next(a for a in short.assumptions if a.name == "b_strongly_connected")
    assert not bsc.holds and bsc.witness.startswith("window [1, 2]: node ")


def test_dpsda_ps_rejects_row_stochastic_weights():
    seq = topology.from_networkx([nx.path_graph(4).to_directed()], rule="row-stochastic", periodic=True)
    cs = next(a for a in topology.audit(seq, assumption_set("dpsda-ps")).assumptions if a.name == "column_stochastic")
    assert not cs.holds and cs.first_failure_round == 1 and "column" in cs.witness


def test_dpsda_c_flags_paper_row_weights():
    # the paper's 1/deg_i weights are row stochastic but not symmetric on an irregular graph
    seq = topology.from_networkx([nx.star_graph(3)], rule="row-stochastic", periodic=True)
    report = topology.audit(seq, assumption_set("dpsda-c"))
    failed = {a.name for a in report.failed()}
    assert {"symmetric", "doubly_stochastic"} <= failed


def test_report_json_and_table():
    report = topology.audit(_ring(4), assumption_set("huang2015"), horizon=7)
    d = json.loads(report.to_json())
    assert set(d) == {"algorithm", "horizon", "assumptions", "constants", "all_hold"}
    assert d["horizon"] == 7 and d["algorithm"] == "huang2015"
    assert {tuple(sorted(a)) for a in d["assumptions"]} == {
        ("description", "first_failure_round", "holds", "name", "witness")
    }
    table = report.to_table()
    assert "huang2015" in table and "doubly_stochastic" in table


def test_bad_input():
    with pytest.raises(ParameterError, match="assumptions must be a topology.AssumptionSet.*'huang2015'"):
        topology.audit(_ring(4), "huang2015")  # names are resolved by asyncdp.papers, not by topology
    with pytest.raises(ParameterError, match="include no B-strong connectivity"):
        topology.audit(_ring(4), assumption_set("huang2015"), B=2)
    with pytest.raises(ParameterError, match="contraction must be"):
        AssumptionSet("mine", "me", (), "rows")
    with pytest.raises(ParameterError, match="run"):
        AssumptionSet("mine", "me", ("not a step",), "doubly")
    with pytest.raises(ParameterError, match="B must be >= 1, got 0"):
        topology.audit(_ring(4), assumption_set("dpsda-ps"), B=0)
    with pytest.raises(ParameterError, match="B must be an integer, got 1.5"):
        topology.audit(_ring(4), assumption_set("dpsda-ps"), B=1.5)
    with pytest.raises(ParameterError, match="horizon"):
        topology.audit(_ring(4), assumption_set("huang2015"), horizon=0)
    # a list of matrices, a matrix or a networkx graph is not a sequence: named (it was an AttributeError)
    for thing, kind in (([np.eye(2)] * 2, "list"), (np.eye(2), "ndarray"), (nx.cycle_graph(3), "Graph")):
        with pytest.raises(ParameterError, match=f"sequence must be a topology.GraphSequence.*got {kind}"):
            topology.audit(thing, assumption_set("huang2015"))


def test_example_audit_new_topology_matches_networkx(capsys):
    module = runpy.run_path(str(EXAMPLES / "audit_new_topology.py"))
    reports = module["main"]()
    out = capsys.readouterr().out
    assert all(f"audit of {name}" in out for name in SEED_RULES) and set(SEED_RULES) <= set(reports)
    graphs = module["corridor_graphs"]()
    first_disconnected = next(t for t, g in enumerate(graphs, start=1) if not nx.is_connected(g))
    sc = next(a for a in reports["huang2015"].assumptions if a.name == "strongly_connected")
    assert sc.first_failure_round == first_disconnected
    u, v = map(int, re.search(r"node (\d+) unreachable from node (\d+)", sc.witness).groups())
    assert not nx.has_path(graphs[first_disconnected - 1], v, u)


def test_every_paper_declares_its_assumption_set_in_topology_terms():
    """Each seed rule's set is declared by its accountant module; a user's own set audits the same way."""
    from accounting.papers import dpsda, huang2015
    from topology.checks.constants import CONTRACTION_KINDS

    assert assumption_set("huang2015") is huang2015.ASSUMPTIONS
    assert assumption_set("dpsda-ps") is dpsda.ASSUMPTIONS_PS and assumption_set("dpsda-c") is dpsda.ASSUMPTIONS_C
    for name in SEED_RULES:
        spec = assumption_set(name)
        assert spec.name == name and spec.contraction in CONTRACTION_KINDS and spec.steps
        report = topology.audit(_ring(5), spec)
        assert report.algorithm == name
        assert len(report.assumptions) >= len([s for s in spec.steps if type(s).__name__ == "EachRound"])
    assert assumption_set("dpsda-ps").uses_b and not assumption_set("dpsda-c").uses_b
    mine = AssumptionSet("my-rule", "my notes", (
        EachRound(topology.check_strongly_connected, "strongly_connected", "every round strongly connected"),
        BStronglyConnected()), "column")
    path = topology.from_networkx([nx.path_graph(4)], rule="metropolis", periodic=True)
    report = topology.audit(path, mine, B=1)
    assert report.algorithm == "my-rule" and report.all_hold


def _fixed_windows_truth(mats: list[np.ndarray], B: int) -> bool:
    """Independent truth for a periodic sequence (period ``len(mats)``): networkx on the union graph of every
    fixed window ``[kB+1, (k+1)B]`` over ``lcm(P, B)`` rounds (after which the windows repeat)."""
    import math

    P = len(mats)
    n = mats[0].shape[0]
    for k in range(math.lcm(P, B) // B):
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        for t in range(k * B + 1, (k + 1) * B + 1):
            w = mats[(t - 1) % P]
            g.add_edges_from((j, i) for i in range(n) for j in range(n) if i != j and w[i, j] > 0)
        if not nx.is_strongly_connected(g):
            return False
    return True


def _alternating(period: int) -> list[np.ndarray]:
    """Two nodes, column stochastic: odd rounds only the link 0 -> 1, even rounds only 1 -> 0."""
    a01 = np.array([[0.5, 0.0], [0.5, 1.0]])
    a10 = np.array([[1.0, 0.5], [0.0, 0.5]])
    return [a01 if t % 2 else a10 for t in range(1, period + 1)]


def test_periodic_sequence_b_windows_are_checked_at_every_offset_in_the_period():
    # period 101 (odd): the default horizon is 101 rounds, whose fixed windows of 2 are [1,2] .. [99,100], all
    # {0 -> 1, 1 -> 0}; the sequence's window [101, 102] is rounds 101 and 1, twice 0 -> 1: not strongly
    # connected (and so every 202 rounds). The audit said B = 2 holds and reported minimal B 2.
    mats = _alternating(101)
    assert not _fixed_windows_truth(mats, 2) and _fixed_windows_truth(mats, 3)
    rep = topology.audit(topology.periodic(mats), assumption_set("dpsda-ps"), B=2)
    res = {a.name: a for a in rep.assumptions}["b_strongly_connected"]
    assert not res.holds and res.first_failure_round == 101
    assert res.witness == "window [101, 102]: node 0 unreachable from node 1"
    assert rep.constants["minimal_B_fixed"] == 3
    free = topology.audit(topology.periodic(mats), assumption_set("dpsda-ps"))
    assert free.constants["B"] == 3 and free.all_hold
    # an explicit horizon is audited as asked (the first 101 rounds: their windows hold)
    assert topology.audit(topology.periodic(mats), assumption_set("dpsda-ps"), 101, B=2).all_hold


@settings(max_examples=20, deadline=None)
@given(period=st.integers(51, 60), B=st.integers(1, 5), data=st.data())
def test_periodic_b_connectivity_verdict_equals_the_union_graphs_truth(period, B, data):
    # random 3-node rounds (each link present or not, column stochastic with a self weight); the default
    # horizon (2 periods) is shorter than lcm(period, B) for most B: the windows past it must be examined too
    n = 3
    mats = []
    for _ in range(period):
        links = data.draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))
        pat = np.array(links, dtype=float).reshape(n, n)
        np.fill_diagonal(pat, 1.0)
        mats.append(pat / pat.sum(axis=0))
    rep = topology.audit(topology.periodic(mats), assumption_set("dpsda-ps"), B=B, empirical=False)
    res = {a.name: a for a in rep.assumptions}["b_strongly_connected"]
    assert res.holds == _fixed_windows_truth(mats, B)
    smallest = next((b for b in range(1, 2 * period + 1) if _fixed_windows_truth(mats, b)), None)
    assert rep.constants["minimal_B_fixed"] == smallest


def test_dpsda_ps_flags_column_stochastic_weights_below_one_over_n():
    # a column-stochastic, strongly connected matrix whose link weights are 1e-6: every other assumption holds
    # and the audit derives lambda = 0.75 (n = 2, B = 1), but the products mix at rate 1 - 2e-6, so Lemma 6's
    # bound |[A(t:s)]_ij - phi_i| <= beta lambda^(t-s) (phi = 1/2 here) is false from t - s = 5 on.
    e = 1e-6
    a = np.array([[1 - e, e], [e, 1 - e]])
    rep = topology.audit(topology.static(a), assumption_set("dpsda-ps"), horizon=20)
    lam, beta = rep.constants["lambda"], rep.constants["beta"]
    assert np.abs(np.linalg.matrix_power(a, 5) - 0.5).max() > beta * lam**5  # the bound really fails
    res = {r.name: r for r in rep.assumptions}
    assert not rep.all_hold and [r.name for r in rep.failed()] == ["weights_at_least_1_over_n"]
    assert res["weights_at_least_1_over_n"].first_failure_round == 1
    assert res["weights_at_least_1_over_n"].witness == "round 1: entry [0, 1] = 1e-06 is below 1/N = 0.5"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), data=st.data())
def test_uniform_push_sum_weights_meet_the_one_over_n_floor(n, data):
    # the paper's uniform weighting 1/deg_j^out never falls below 1/n; moving mass inside one column to a
    # weight below 1/n is flagged at that entry
    links = data.draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))
    pat = np.array(links, dtype=float).reshape(n, n)
    np.fill_diagonal(pat, 1.0)
    a = pat / pat.sum(axis=0)
    assert topology.check_weights_at_least_inverse_n(a).holds
    j = data.draw(st.integers(0, n - 1))
    rows = np.flatnonzero(a[:, j])
    if rows.size > 1:
        i, k = rows[0], rows[1]
        b = a.copy()
        b[k, j] += b[i, j] - 1e-3 / n
        b[i, j] = 1e-3 / n
        res = topology.check_weights_at_least_inverse_n(b)
        assert not res.holds and res.value == pytest.approx(1e-3 / n)


@pytest.mark.parametrize("name", ["huang2015", "dpsda-c"])
def test_a_round_without_weights_fails_the_weight_bound_at_that_round(name):
    # an all-zero round is valid input (no node keeps anything): the audit raised "W has no positive entry"
    # instead of reporting the weight bound (and the other assumptions) as failing; the failure also always
    # named round 1
    w = topology.metropolis(nx.cycle_graph(4)).toarray()
    rep = topology.audit(topology.from_matrices([w, w, np.zeros((4, 4)), w]), assumption_set(name))
    res = {r.name: r for r in rep.assumptions}
    bound = res["min_weight_eta" if name == "huang2015" else "min_weight_phi"]
    assert not bound.holds and bound.first_failure_round == 3
    assert bound.witness.startswith("round 3: node 0 has self-weight 0;")
    assert not res["doubly_stochastic"].holds and res["doubly_stochastic"].first_failure_round == 3


@pytest.mark.parametrize("name", ["showkatbakhsh", "dpsda-c", "muffliato"])
def test_symmetric_audits_fail_a_one_way_link_below_the_tolerance(name):
    w = np.array([[1 - 1e-10, 1e-10], [0.0, 1.0]])  # node 1 never hears node 0
    rep = topology.audit(topology.static(w), assumption_set(name), horizon=3)
    assert "symmetric" in {a.name for a in rep.failed()}


def test_muffliato_audit_needs_one_gossip_matrix_after_the_noising_round():
    # Muffliato gossips with one fixed W after the local noising round (its pairwise claim is computed from it);
    # a sequence alternating two symmetric doubly stochastic matrices was reported to meet every assumption
    path = topology.metropolis(nx.path_graph(6)).toarray()
    ring = topology.metropolis(nx.cycle_graph(6)).toarray()
    eye = np.eye(6)
    spec = assumption_set("muffliato")
    varying = topology.audit(topology.from_matrices([eye, path, ring, path]), spec)
    static = {a.name: a for a in varying.assumptions}["static"]
    assert not static.holds and static.first_failure_round == 3
    assert static.witness.startswith("round 3: entry [")
    odd_first = topology.audit(topology.from_matrices([ring, path, path]), spec)
    assert [(a.name, a.first_failure_round) for a in odd_first.failed()] == [("static", 1)]
    assert "neither the identity nor the matrix of round 2" in odd_first.failed()[0].witness
    for good in ([eye, path, path, path], [path] * 4):
        assert topology.audit(topology.from_matrices(good), spec).all_hold
    assert topology.audit(topology.periodic([path]), spec).all_hold


def test_muffliato_audit_needs_a_connected_gossip_graph_after_the_noising_round():
    # Muffliato gossips on a connected graph (its step count and convergence need a spectral gap > 0); the
    # identity, or a symmetric doubly stochastic W in two pieces, was reported to meet every assumption
    spec = assumption_set("muffliato")
    eye = np.eye(4)
    pieces = np.kron(np.eye(2), np.full((2, 2), 0.5))  # nodes {0, 1} and {2, 3} never mix
    path = topology.metropolis(nx.path_graph(4)).toarray()
    for bad in ([eye] * 3, [eye, pieces, pieces], [pieces] * 3):
        rep = topology.audit(topology.from_matrices(bad), spec)
        assert [(a.name, a.first_failure_round) for a in rep.failed()] == [("connected", 2)]
        assert "node 2 is not connected to node 0" in rep.failed()[0].witness or bad[1] is eye
    # round 1 (the local noising round) may be the identity; a horizon of the noising round alone has no gossip
    assert topology.audit(topology.from_matrices([eye, path, path]), spec).all_hold
    assert topology.audit(topology.from_matrices([eye]), spec).all_hold


def test_each_round_from_a_later_first_round_skips_the_earlier_rounds_only():
    from topology.checks.properties import check_connected_undirected, check_each_round

    path = topology.metropolis(nx.path_graph(3)).toarray()
    seq = topology.from_matrices([np.eye(3), path, np.eye(3)])
    assert check_each_round(seq, check_connected_undirected).first_failure_round == 1
    assert check_each_round(seq, check_connected_undirected, first=2).first_failure_round == 3
    assert check_each_round(seq, check_connected_undirected, first=4).holds  # past the horizon: nothing examined
    with pytest.raises(topology.ParameterError, match="first must be an integer >= 1, got 0"):
        check_each_round(seq, check_connected_undirected, first=0)


def test_a_spectral_assumption_covers_every_round_not_round_1_only():
    # a user's own set with a spectral step (no Static step) on a time-varying sequence: the mixing norm of round 1
    # (a ring, 0.5) was reported for the sequence, and the assumption held, while round 2 is disconnected (norm 1)
    from topology.audit import AssumptionSet, Spectral

    ring = topology.metropolis(nx.cycle_graph(5)).toarray()
    split = np.eye(5)  # five components: ||W - 11^T/N|| = 1
    spec = AssumptionSet("mine", "my notes", (Spectral(topology.mixing_norm, "eta", "eta_below_one",
                                                       "||W - 11^T/N||_2", "every W_t contracts"),), "doubly")
    rep = topology.audit(topology.periodic([ring, ring, split]), spec)
    res = rep.assumptions[0]
    assert not res.holds and res.first_failure_round == 3 and res.witness.startswith("round 3: ||W - 11^T/N||_2 = 1")
    assert rep.constants["eta"] == pytest.approx(1.0)
    # the constant is the largest value, not the first failing round's: every node hears node 0 only in round 3
    star = np.zeros((5, 5))
    star[:, 0] = 1.0  # W - 11^T/N = 1 (e_0 - 1/N)^T: norm sqrt(N) ||e_0 - 1/N|| = sqrt(N - 1) = 2
    worse = topology.audit(topology.periodic([ring, split, star]), spec)
    assert worse.assumptions[0].first_failure_round == 2 and worse.constants["eta"] == pytest.approx(2.0)
    ok = topology.audit(topology.periodic([ring, topology.metropolis(nx.complete_graph(5)).toarray()]), spec)
    assert ok.all_hold and ok.constants["eta"] == pytest.approx(topology.mixing_norm(ring))  # the largest


def test_a_symmetric_only_spectral_step_fails_on_a_round_that_is_not_symmetric():
    # a user's set with only this step audited a directed ring as "all hold" (the step gave no result, and the
    # table of no rows raised TypeError); on a sequence of symmetric and unsymmetric rounds it skipped the latter
    from topology.audit import Spectral
    from topology.checks import properties as P

    spec = AssumptionSet("mine", "my notes", (Spectral(P.second_eigenvalue_modulus, "beta", "beta_below_one",
                                                       "beta(W)", "beta < 1", symmetric_only=True),), "doubly")
    directed = 0.5 * np.eye(5)
    directed[(np.arange(5) + 1) % 5, np.arange(5)] += 0.5
    rep = topology.audit(topology.static(directed), spec)
    assert not rep.all_hold
    assert rep.assumptions[0].witness.startswith("round 1: W is not symmetric (")
    assert "FAILS" in rep.to_table()
    ring = topology.metropolis(nx.cycle_graph(5)).toarray()
    mixed = topology.audit(topology.periodic([ring, directed]), spec)
    assert mixed.assumptions[0].first_failure_round == 2
    assert topology.audit(topology.periodic([ring]), spec).all_hold


def test_an_assumption_set_without_steps_is_refused():
    with pytest.raises(ParameterError, match="AssumptionSet mine: no steps"):
        AssumptionSet("mine", "my notes", (), "doubly")


def test_a_users_check_that_raises_is_one_error_naming_the_check_and_its_round():
    seq = topology.from_matrices([np.full((2, 2), 0.5), np.eye(2)])

    def no_identity(w):  # a user's check with a bug: divides by the off-diagonal mass
        off = float(w.sum() - w.diagonal().sum())
        return topology.checks.properties.CheckResult("no_identity", 1.0 / off > 0, None, None)

    spec = AssumptionSet("mine", "my notes", (EachRound(no_identity, "no_identity", "a user's check"),), "doubly")
    with pytest.raises(ParameterError, match=r"check 'no_identity' raised at round 2: ZeroDivisionError"):
        topology.audit(seq, spec)


def test_a_users_spectral_measure_that_raises_is_one_error_naming_the_step_and_the_round():
    # a Spectral step measures every round's matrix: the error names the round it raised on (round 3 here)
    from topology.audit import Spectral

    def measure(w):
        if w.diagonal().max() == 1.0:
            raise RuntimeError("not converged")
        return 0.5

    spec = AssumptionSet("mine", "my notes", (Spectral(measure, "eta", "eta_below_one", "eta < 1", "mixing"),),
                         "doubly")
    ring = topology.metropolis(nx.cycle_graph(4)).toarray()
    with pytest.raises(ParameterError, match=r"step 'eta_below_one' of the assumptions of mine raised at round 3: "
                                             r"RuntimeError: not converged"):
        topology.audit(topology.from_matrices([ring, ring, np.eye(4)]), spec)


def test_a_library_function_that_refuses_a_rounds_matrix_inside_a_users_step_names_the_round():
    # a TopologyError raised by the measure or check itself (second_eigenvalue_modulus on a one-way link, the
    # smallest positive weight of an all-zero round) went through without the step or the round
    from topology.audit import Spectral
    from topology.checks import properties as P

    ring = topology.metropolis(nx.cycle_graph(4)).toarray()
    one_way = ring.copy()
    one_way[0, 1], one_way[0, 0] = 0.0, one_way[0, 0] + one_way[0, 1]
    spec = AssumptionSet("mine", "my notes", (Spectral(P.second_eigenvalue_modulus, "beta", "beta_below_one",
                                                       "beta < 1", "mixing"),), "doubly")
    with pytest.raises(ParameterError, match=r"step 'beta_below_one' of the assumptions of mine raised at round 3: "
                                             r"ParameterError: second_eigenvalue_modulus needs a symmetric W"):
        topology.audit(topology.from_matrices([ring, ring, one_way]), spec)

    def heavy(w):
        return P.CheckResult("heavy", P.min_positive_weight(w) > 0.1)

    spec = AssumptionSet("mine", "my notes", (EachRound(heavy, "heavy", "positive weights above 0.1"),), "doubly")
    with pytest.raises(ParameterError, match=r"check 'heavy' at round 2: W has no positive entry"):
        topology.audit(topology.from_matrices([ring, np.zeros((4, 4))]), spec)

"""The privacy check as a pipeline: each step gives one Evidence, one verdict function combines them."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

import asyncdp.privacy as privacy
import asyncdp.privacy.check as check_module
import asyncdp.privacy.steps as steps_module
from asyncdp import LinkModel, Links
from asyncdp.cli import main
from asyncdp.errors import ScenarioError
from asyncdp.privacy import STEPS, CheckContext, Evidence, PrivacyCheckReport, check_privacy, decide
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare, small_example
from asyncdp.privacy.evidence import CHECKED_AGAINST, find_figure

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# what each default step must report: (method, checked against, figure names)
EXPECTED = {
    steps_module.compose_basic: ("basic composition", "declaration", {"epsilon_ledger"}),
    steps_module.compose_pld: ("PLD", "declaration", {"epsilon_tight"}),
    steps_module.compose_pld_at_claim: ("PLD at the claimed delta", "declaration",
                                        {"epsilon_at_claimed_delta", "delta_claimed"}),
    steps_module.focus_per_iteration: ("per-iteration focus", "declaration", {"focus_round"}),
    steps_module.state_claim_form: ("claim form", "declaration",
                                    {"claim_form", "claim", "claim_conversion", "delta_meaning", "claim_scope",
                                     "claim_confirmed"}),
    steps_module.check_coverage: ("sensitivity coverage", "realized behavior",
                                  {"coverage_max_ratio", "coverage_uncovered"}),
    steps_module.probe_update: ("sensitivity prober", "constructed worst case",
                                {"sensitivity_probe_max", "sensitivity_probe_ratio", "sensitivity_probe_lemma_ratio"}),
    steps_module.check_conformance: ("noise conformance", "realized behavior",
                                     {"engine", "conformance_tests", "conformance_rejected",
                                      "conformance_min_scale_ratio", "conformance_by_draws", "noise_draws_checked",
                                      "noise_draws_mismatched", "noise_draws_unresolved"}),
    steps_module.replay_exactly: ("exact replay", "realized behavior",
                                  {"replay_max_loss", "replay_exceed_fraction", "replay_runs"}),
    steps_module.audit_blackbox: ("black-box audit", "realized behavior",
                                  {"empirical_epsilon_lower_bound", "blackbox_delta_lower_bound"}),
    steps_module.search_worst_case: ("worst-case adjacency search", "constructed worst case",
                                     {"worst_case_loss", "worst_case_pair", "worst_case_objective",
                                      "worst_case_delta_lower", "worst_pair_script"}),
}


@pytest.fixture(scope="module")
def example() -> tuple[ScenarioPair, CheckContext]:
    return small_example(runs=300, search_examples=5)


def test_the_default_steps_are_the_documented_ones_in_order():
    assert tuple(EXPECTED) == STEPS


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.__name__)
def test_each_step_returns_typed_evidence_on_a_small_pair(step, example):
    pair, ctx = example
    evidence = step(pair, ctx)
    method, against, names = EXPECTED[step]
    assert type(evidence) is Evidence
    assert evidence.method == method and evidence.checked_against == against
    assert set(evidence.figures) == names
    # huang2015 with the eq. (8) schedule keeps its claim: no step refutes it on this pair
    assert evidence.witness is None
    assert all(isinstance(r, str) for r in evidence.reasons)


def test_step_figures_on_the_small_pair(example):
    pair, ctx = example
    basic = steps_module.compose_basic(pair, ctx)
    assert basic.bound == basic.figures["epsilon_ledger"] <= ctx.epsilon_claimed * (1 + 1e-9)
    assert steps_module.compose_pld(pair, ctx).bound is None  # PLD at the option's delta is no bound at the claim
    assert steps_module.compose_pld_at_claim(pair, ctx).bound is None  # pure claim: no PLD at the claimed delta
    replay = steps_module.replay_exactly(pair, ctx)
    assert replay.figures["replay_runs"] == 300 and 0 < replay.figures["replay_max_loss"] <= 1 + 1e-9


def test_replay_applies_to_lossy_asynchronous_runs(example):
    from asyncdp import Async

    pair, _ = example
    timing, links = Async(rate=1.0), Links(LinkModel(loss=0.2))
    lossy = ScenarioPair(pair.scenario.replace(timing=timing, links=links),
                         pair.adjacent.replace(timing=timing, links=links))
    ctx = prepare(lossy, CheckOptions(runs=60))
    evidence = steps_module.replay_exactly(lossy, ctx)
    assert evidence.figures["replay_runs"] == 60 and 0 < evidence.figures["replay_max_loss"] <= 1 + 1e-9
    assert ctx.engine_runs(0).engine == "batch"  # the batch engine runs async timing


def test_replay_step_says_why_it_does_not_apply(example):
    import numpy as np

    pair, _ = example
    ctx = prepare(pair, CheckOptions(runs=30, engine="simpy"))
    ctx.engine_runs(0).messages["y"][0, 0, 1] = np.nan  # agent 1's round-1 message missing from run 0
    evidence = steps_module.replay_exactly(pair, ctx)
    assert evidence.figures == {"replay_max_loss": None, "replay_exceed_fraction": None, "replay_runs": 0}
    assert evidence.reasons[0].startswith("no exact replay: round 1: receiver 0 combined sender 1's message")
    conformance = steps_module.check_conformance(pair, ctx)
    assert conformance.doubt is not None and "cannot be replayed" in conformance.doubt
    # and the verdict cannot pass on unverified noise
    assert decide([steps_module.compose_basic(pair, ctx), conformance], ctx.epsilon_claimed).verdict == \
        "inconclusive"


def test_a_broadcast_no_link_carries_is_still_observed(example):
    """The papers' observation map counts every broadcast; both engines record it (Result.messages)."""
    import numpy as np

    import topology

    pair, _ = example
    w = topology.static(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]]))  # agent 2 sends to nobody
    silent = ScenarioPair(pair.scenario.replace(topology=w), pair.adjacent.replace(topology=w))
    for engine in ("simpy", "batch"):
        ctx = prepare(silent, CheckOptions(runs=30, engine=engine))
        assert not np.isnan(ctx.engine_runs(0).messages["y"]).any()
        assert steps_module.replay_exactly(silent, ctx).figures["replay_runs"] == 30


def _bound(eps: float, method: str = "basic composition") -> Evidence:
    return Evidence(method, "declaration", {"epsilon_ledger": eps}, bound=eps)


def _witness(kind: str) -> Evidence:
    return Evidence("exact replay", "declaration", {}, witness={"kind": kind}, reasons=(f"{kind} refutes",))


def test_verdict_a_violation_witness_wins_over_a_passing_bound():
    d = decide([_bound(0.5), _witness("replay")], 1.0)
    assert d.verdict == "violation" and d.witness == {"kind": "replay"}
    assert d.reasons == ("replay refutes",) and d.epsilon_accountant == 0.5


def test_verdict_reports_the_first_witness_in_step_order():
    d = decide([_witness("sensitivity"), _bound(0.5), _witness("replay")], 1.0)
    assert d.witness == {"kind": "sensitivity"}
    assert d.reasons == ("sensitivity refutes", "replay refutes")


def test_verdict_passes_on_the_smallest_bound():
    assert decide([_bound(3.0), _bound(0.9, "PLD at the claimed delta")], 1.0).verdict == "pass"
    assert decide([_bound(1.0 + 1e-12)], 1.0).verdict == "pass"  # within the relative tolerance


def test_verdict_no_claim_when_the_claimed_epsilon_is_infinite():
    d = decide([_bound(0.5)], math.inf)
    assert d.verdict == "no-claim"
    assert d.reasons[-1].startswith("the algorithm claims no finite epsilon")
    assert decide([_bound(0.5), _witness("replay")], math.inf).verdict == "violation"


def test_verdict_inconclusive_when_nothing_refutes_and_no_bound_implies_the_claim():
    pld = Evidence("PLD at the claimed delta", "declaration", {"delta_claimed": 1e-3}, bound=2.5)
    d = decide([_bound(6.9), pld, Evidence("black-box audit", "declaration", {})], 1.0)
    assert d.verdict == "inconclusive" and d.witness is None
    assert d.reasons == ("the accountant's epsilon 2.5 (best of basic composition and PLD at the claimed delta "
                         "0.001, independent sensitivity) exceeds the claimed 1",)
    assert decide([Evidence("black-box audit", "declaration", {})], 1.0).verdict == "inconclusive"  # no bound


def test_verdict_rejects_what_is_not_evidence():
    with pytest.raises(ScenarioError, match="evidence must hold Evidence items"):
        decide([{"bound": 0.1}], 1.0)
    with pytest.raises(ScenarioError, match="epsilon_claimed must be a real number"):
        decide([], "1")


def test_evidence_is_immutable_and_checked():
    e = Evidence("m", "realized behavior", {"x": 1.0}, witness={"kind": "k"}, reasons=["r"])
    assert e.reasons == ("r",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.method = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        e.figures["x"] = 2.0  # type: ignore[index]
    with pytest.raises(ScenarioError, match=r"checked_against must be one of .* got 'realized'"):
        Evidence("m", "realized", {})  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match="method must be a nonempty string"):
        Evidence("", "declaration", {})
    assert set(CHECKED_AGAINST) == {"declaration", "realized behavior", "constructed worst case"}
    assert json.loads(json.dumps(Evidence("m", "declaration", {"e": math.inf}).to_dict()))["figures"] == {"e": "inf"}
    assert find_figure([Evidence("a", "declaration", {"x": None}), Evidence("b", "declaration", {"x": 2})], "x") is None


def _fake_step(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """A new method: refutes every claim (to show that the verdict sees it)."""
    return Evidence("fake method", "realized behavior", {"fake_figure": 7.0}, witness={"kind": "fake"},
                    reasons=("fake method refutes the claim",))


def test_adding_a_method_is_adding_a_step(monkeypatch, example):
    pair, _ = example
    monkeypatch.setattr(steps_module, "STEPS", STEPS + (_fake_step,))
    report = check_privacy(pair.scenario, pair.adjacent, runs=300)
    assert [e.method for e in report.evidence][-1] == "fake method"
    assert report.verdict == "violation" and report.witness == {"kind": "fake"}
    assert report.reasons[-1] == "fake method refutes the claim"
    monkeypatch.undo()
    plain = check_privacy(pair.scenario, pair.adjacent, runs=300)
    assert plain.verdict == "pass" and len(plain.evidence) == len(STEPS)
    only = check_privacy(pair.scenario, pair.adjacent, runs=300, steps=(steps_module.compose_basic, _fake_step))
    assert [e.method for e in only.evidence] == ["basic composition", "fake method"]


def test_report_fields_come_from_the_evidence(example):
    pair, _ = example
    report = check_privacy(pair.scenario, pair.adjacent, runs=300)
    for name in ("epsilon_ledger", "epsilon_tight", "sensitivity_probe_max", "replay_max_loss", "replay_runs",
                 "empirical_epsilon_lower_bound"):
        assert getattr(report, name) == find_figure(report.evidence, name)
    assert "evidence" not in report.to_dict()  # the table and to_dict list the dataclass fields only
    assert PrivacyCheckReport(**{f.name: getattr(report, f.name)
                                 for f in dataclasses.fields(report)}).evidence == ()


def test_check_options_are_validated(example):
    pair, _ = example
    with pytest.raises(ScenarioError, match="check_privacy: runs must be >= 1, got 0"):
        check_privacy(pair.scenario, pair.adjacent, runs=0)
    with pytest.raises(ScenarioError, match="confidence"):
        CheckOptions(confidence=1.0)
    with pytest.raises(ScenarioError, match="probe_rounds"):
        CheckOptions(probe_rounds=1.5)


def test_check_module_exports_the_check_only():
    """No re-exports for old paths: each name lives in (and is imported from) its own module."""
    assert set(check_module.__all__) == {"check_privacy", "sensitivity_source", "theorem_verdict"}
    assert privacy.check_privacy is check_module.check_privacy
    for name in ("find_changed_agent", "independent_sensitivity", "_adapter", "_replayable", "_finite"):
        assert not hasattr(check_module, name), name


def test_cli_json_carries_the_evidence(tmp_path):
    out = tmp_path / "check.json"
    assert main(["privacy", "check", str(EXAMPLES / "privacy_check_rendezvous.py"), "--runs", "200",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [e["method"] for e in report["evidence"]] == [EXPECTED[s][0] for s in STEPS]
    assert [e["checked_against"] for e in report["evidence"]] == [EXPECTED[s][1] for s in STEPS]
    assert report["evidence"][0]["figures"]["epsilon_ledger"] == report["epsilon_ledger"]


def test_the_prober_reads_each_rounds_noise_declaration_once_however_often_it_evaluates():
    import dataclasses as _dc

    import numpy as np

    from asyncdp.papers.huang2015.rule import Huang2015
    from asyncdp.privacy.sensitivity import message_pair, update_pair

    calls: list[int] = []

    @_dc.dataclass(frozen=True)
    class Counting(Huang2015):
        def noise(self, t, channel):
            calls.append(t)
            return super().noise(t, channel)

    pair, _ = small_example()
    alg = Counting(**{f.name: getattr(pair.scenario.algorithm, f.name) for f in _dc.fields(Huang2015)})
    sc, adj = pair.scenario.replace(algorithm=alg), pair.adjacent.replace(algorithm=alg)
    for probe in (update_pair(sc, adj, 0, 1), message_pair(sc, adj, 0, 2)):
        calls.clear()
        first = probe.rule.update(np.zeros(2), probe.t, sc.problem)
        for z in np.linspace(-1.0, 1.0, 40):
            probe.rule.update(np.full(2, z), probe.t, sc.problem)
        assert len(calls) == len(set(calls)) <= 2  # once per round read, not once per evaluation
        np.testing.assert_array_equal(probe.rule.update(np.zeros(2), probe.t, sc.problem), first)


@pytest.mark.parametrize("adjacency", ["agent", "round"])
def test_basic_composition_step_equals_the_plain_composition_per_scope(adjacency, monkeypatch):
    """compose_basic (agents of equal ratios share one computation) gives the largest plain basic composition,
    per agent or network-wide, with one root search per distinct Gaussian ratio and not one per agent."""
    from accounting import composition, mechanisms

    pair, ctx = small_example(runs=20, delta=1e-5)
    ctx = dataclasses.replace(ctx, delta_claimed=1e-5, cache={})
    # the same releases as Gaussian ones (their epsilons are root searches)
    ctx = dataclasses.replace(ctx, ledger=type(ctx.ledger)([dataclasses.replace(r, mechanism="gaussian")
                                                            for r in ctx.ledger]))
    if adjacency == "round":
        ctx = dataclasses.replace(ctx, changed_agent=None)
    scope = composition.per_agent if adjacency == "agent" else composition.network_wide
    plain = scope(ctx.ledger, composition.basic_composition, sensitivity=ctx.release_sensitivity, delta=1e-5)
    calls = []
    original = mechanisms._gaussian_epsilon_mu
    monkeypatch.setattr("accounting.composition.inputs._gaussian_epsilon_mu",
                        lambda *a: calls.append(a) or original(*a))
    got = steps_module.compose_basic(pair, ctx).figures["epsilon_ledger"]
    assert got == max(plain.values() if adjacency == "agent" else [plain]) > 0
    assert len(ctx.scopes()) == (len(ctx.ledger.agents) if adjacency == "agent" else 1) > 0
    assert len(calls) == len(set(calls)) > 0  # each distinct (ratio, delta share) once


@pytest.mark.parametrize("adjacency", ["agent", "round"])
def test_the_shared_pld_equals_one_composition_per_delta(adjacency, monkeypatch):
    """The context's PLD (composed once, read at both deltas; agents of equal ratios shared) equals the plain
    composition at each delta, per agent or network-wide; both compositions steps compose once together."""
    from accounting import composition

    pair, ctx = small_example(runs=20, delta=1e-5)
    if adjacency == "round":  # the scope of round adjacency: the whole ledger, network-wide
        ctx = dataclasses.replace(ctx, changed_agent=None, cache={})
    scope = composition.per_agent if adjacency == "agent" else composition.network_wide
    for d in (1e-5, 1e-3):
        plain = scope(ctx.ledger, composition.pld_epsilon, sensitivity=ctx.release_sensitivity, delta=d,
                      value_discretization_interval=1e-3)
        assert ctx.pld_epsilon(d, 1e-3) == max(plain.values() if adjacency == "agent" else [plain]) > 0
    calls = []
    original = composition.pld_epsilon_table
    monkeypatch.setattr(composition, "pld_epsilon_table", lambda *a, **k: calls.append(a) or original(*a, **k))
    fresh = dataclasses.replace(ctx, cache={}, delta_claimed=1e-4)
    tight = steps_module.compose_pld(pair, fresh).figures["epsilon_tight"]
    at_claim = steps_module.compose_pld_at_claim(pair, fresh).figures["epsilon_at_claimed_delta"]
    assert len(calls) == 1 and tight == fresh.pld_epsilon(1e-5, 1e-3) and at_claim == fresh.pld_epsilon(1e-4, 1e-3)
    assert at_claim < tight  # at the claimed delta 1e-4, larger than the option's 1e-5, epsilon is smaller


def test_no_claim_on_gaussian_noise_is_not_reported_as_a_pure_claim():
    """Wang–Başar with ``noise_variance=0.5`` has some ``eps_k >= 1``: the rule claims nothing, ``(inf, 0)``. The
    basic composition said "the claim has delta = 0: Gaussian noise is never pure DP" (a claim it never made)."""
    import numpy as np

    from asyncdp.papers.wang_basar.rule import WangBasar

    sc = WangBasar.example_scenario().replace(horizon=3)
    assert sc.algorithm.claimed_privacy(sc.horizon) == (math.inf, 0.0)
    y = np.array(sc.problem.costs.measurements[0])
    y[1] += 0.25  # the gradients differ by 1 in l1: in the class
    pair = ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, measurement=y)))
    ev = steps_module.compose_basic(pair, prepare(pair, CheckOptions(runs=20)))
    assert ev.figures["epsilon_ledger"] == math.inf
    assert not any("claim has delta = 0" in r for r in ev.reasons), ev.reasons


def test_the_round_off_budget_of_the_check_s_runs_is_computed_once(monkeypatch, example):
    """The exact replay and the worst-case search subtract the same budget from the losses of the scenario's runs:
    computed once per check (its values are the function's)."""
    from asyncdp.privacy import roundoff

    pair, _ = example
    calls = []
    original = roundoff._roundoff_budget
    monkeypatch.setattr(roundoff, "_roundoff_budget",
                        lambda ctx, runs: calls.append(runs) or original(ctx, runs))
    ctx = prepare(pair, CheckOptions(runs=30))
    steps_module.replay_exactly(pair, ctx)
    steps_module.search_worst_case(pair, ctx)
    assert len(calls) == 1 and calls[0] is ctx.engine_runs(0)
    assert (ctx.cache["roundoff_budget"][1] == original(ctx, ctx.engine_runs(0))).all()

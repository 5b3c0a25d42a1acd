"""The contract every discovered paper meets (asyncdp.papers), the seed papers' and any installed paper's alike.

Parametrized over every paper :func:`asyncdp.papers.papers` discovers, and
every rule of it. The clauses:

* required of every paper: named Algorithm subclasses as rules, rule names
  that find the paper (by name, class and object, through the MRO); a
  sensitivity lemma that gives one finite, nonnegative value per release and
  per noisy channel on the rule's example scenario, without reading the
  rule's ``noise()`` declarations; the rule pickles to an
  equal rule that behaves the same; both engines agree on a short example;
  the engine runs replay exactly and their noise conforms to the declaration;
* optional for a user's paper (:data:`asyncdp.papers.OPTIONAL_PARTS`; the
  seed papers provide them all, :func:`test_seed_papers_provide_every_optional_part`):
  ``example_scenario`` (the clauses that need a scenario are skipped without
  it), ``claimed_scale`` (the noise the claim prescribes is the noise the rule
  declares), ``claim_check`` (runs and does not report a violation on the
  example), ``assumptions`` (``topology.audit`` runs on the example and every
  assumption holds on a fixed Metropolis ring), ``adjacency`` (a
  :class:`~asyncdp.papers.GradientClass`, or a :class:`~asyncdp.papers.RoundClass`
  for online losses), ``reproductions`` (each loads),
  ``accountant`` (the accountant's record names the rule and its mechanism).

:func:`test_the_contract_holds_for_a_paper_installed_through_an_entry_point`
runs this module again in a fresh interpreter with a small third-party package
(``tests/fixtures/third_party``: the package and its ``*.dist-info`` with the
entry point) on the path: its paper is discovered and meets the same contract.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import networkx as nx
import numpy as np
import pytest

import topology
from asyncdp import InjectedNoise
from asyncdp.algorithms import Algorithm
from asyncdp.papers import (OPTIONAL_PARTS, REGISTRY, GradientClass, Paper, PaperError, RoundClass, ValueClass,
                            find_paper, get_paper, paper_of, papers, registered)
from asyncdp.problems.costs import RendezvousQuadratic

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEED_PAPERS = ("dpsda", "huang2015", "showkatbakhsh", "wang-basar")
PAIRS = [(p.name, r.name) for p in sorted(papers().values(), key=lambda p: p.name) for r in p.rules]
IDS = [f"{p}:{r}" for p, r in PAIRS]
RUNS = 2
SHORT = 6  # rounds of the engine comparison and the pickled-rule run


def _example(rule_name: str, seed: int = 3) -> Any:
    rule = REGISTRY[rule_name]
    try:
        return rule.example_scenario(seed=seed)
    except NotImplementedError:
        pytest.skip(f"optional clause: {rule_name} has no example_scenario")


def _optional(paper: Paper, part: str) -> Any:
    value = getattr(paper, part)
    if value is None or value == ():
        assert part in OPTIONAL_PARTS
        pytest.skip(f"optional clause: paper {paper.name!r} has no {part}")
    return value


# -- required of every paper -----------------------------------------------------------------------
def test_rule_names_are_unique_and_every_rule_finds_its_paper():
    names = [r for _, r in PAIRS]
    assert len(names) == len(set(names)) and set(names) <= set(REGISTRY)  # scripts may register more meanwhile
    assert set(SEED_PAPERS) <= set(papers())
    for paper_name, rule_name in PAIRS:
        rule = REGISTRY[rule_name]
        assert get_paper(rule_name).name == get_paper(rule).name == get_paper(paper_name).name == paper_name
        assert isinstance(rule.name, str) and issubclass(rule, Algorithm)


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_lemma_gives_each_release_of_each_noisy_channel_a_sensitivity(paper_name, rule_name):
    paper = get_paper(paper_name)
    sc = _example(rule_name)
    sens = paper.sensitivity(sc)
    assert set(sens) == {c.name for c in REGISTRY[rule_name].noisy_channels()}
    for values in sens.values():
        assert values.shape == (sc.horizon,)
        assert np.isfinite(values).all() and (values >= 0).all()
    assert max(v.max() for v in sens.values()) > 0


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_lemma_never_reads_the_rules_noise_declarations(paper_name, rule_name, monkeypatch):
    """The lemma is computed from declared constants and parameters: with ``noise()`` disabled it gives the same."""
    paper = get_paper(paper_name)
    sc = _example(rule_name)
    before = paper.sensitivity(sc)

    def refuse(self, t, channel):
        raise AssertionError(f"the lemma of {paper_name} read {rule_name}.noise({t}, {channel!r})")

    for klass in type(sc.algorithm).__mro__:
        if "noise" in vars(klass):
            monkeypatch.setattr(klass, "noise", refuse)
    after = paper.sensitivity(sc)
    assert set(after) == set(before) and all(np.array_equal(after[c], before[c]) for c in before)


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_rule_pickles_to_an_equal_rule_that_behaves_the_same(paper_name, rule_name):
    sc = _example(rule_name).replace(horizon=SHORT)
    rule = sc.algorithm
    copy = pickle.loads(pickle.dumps(rule))
    assert type(copy) is type(rule) and copy == rule
    bound, bound_copy = rule.bind(sc.problem), copy.bind(sc.problem)
    for ch in bound.noisy_channels():
        assert [bound.noise(t, ch.name) for t in range(1, SHORT + 1)] == [
            bound_copy.noise(t, ch.name) for t in range(1, SHORT + 1)]
    assert np.array_equal(sc.replace(algorithm=copy).run().trajectory, sc.run().trajectory)


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_both_engines_agree_on_a_short_example(paper_name, rule_name):
    """The engine-equivalence check of test_batch_engine on SHORT rounds: batch (R runs) == SimPy, run by run."""
    sc = _example(rule_name).replace(horizon=SHORT)
    alg = sc.algorithm.bind(sc.problem)
    rng = np.random.default_rng(11)
    blocks = {}
    for c, ch in enumerate(alg.channels):
        if ch.noisy:
            draw = rng.laplace if ch.mechanism == "laplace" else rng.normal
            blocks[c] = draw(size=(sc.horizon, RUNS, sc.problem.num_agents, alg.noise(1, ch.name).dimension))
    batch = sc.replace(noise=InjectedNoise(broadcast=blocks)).run(engine="batch", runs=RUNS)
    for r in range(RUNS):
        single = sc.replace(noise=InjectedNoise(broadcast={c: b[:, r] for c, b in blocks.items()})).run()
        assert np.abs(batch.trajectory[r] - single.trajectory).max() <= 1e-10
        assert batch.ledger == single.ledger


@pytest.mark.parametrize("timing", ["deadline", "async"])
@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_engine_runs_replay_exactly_and_their_noise_conforms(paper_name, rule_name, timing):
    """Every paper's runs replay on their realized schedules under asynchrony and lossy links, every channel
    included, and the released noise conforms to the declaration (family-wise confidence 0.999)."""
    from accounting.conformance import noise_conformance
    from asyncdp import Async, Deadline, LinkModel, Links
    from asyncdp.privacy.behavior import declared_noise, replay_runs, run_engine

    sc = _example(rule_name)
    sc = sc.replace(horizon=min(sc.horizon, 8), links=Links(LinkModel(loss=0.2)),
                    timing=Deadline(period=1.0, deadline=0.8) if timing == "deadline" else Async(rate=1.0))
    runs = run_engine(sc, 40, seed=1)
    out = replay_runs(runs, sc)
    alg = sc.algorithm.bind(sc.problem)
    declared = {c: (d.mechanism, d.scales) for c, d in declared_noise(alg, sc.horizon).items() if d.mechanism}
    assert set(out.residuals) == set(declared) and set(runs.messages) == {c.name for c in alg.channels}
    assert all(v is None for v in out.noise_free_mismatch.values())
    report = noise_conformance(out.residuals, declared, confidence=0.999)
    assert report.tests > 0 and not report.rejected


# -- optional for a user's paper ---------------------------------------------------------------------
@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_claimed_noise_is_what_the_accountant_recomputes_from_its_sensitivity(paper_name, rule_name):
    claimed_scale = _optional(get_paper(paper_name), "claimed_scale")
    sc = _example(rule_name)
    alg = sc.algorithm.bind(sc.problem)
    (channel,) = [c.name for c in alg.noisy_channels()]
    rounds = sorted({2, 3, sc.horizon // 2, sc.horizon})
    declared = np.array([alg.noise(t, channel).scale for t in rounds])
    recomputed = np.array([claimed_scale(sc, t) for t in rounds])
    assert declared[:2].min() > 0  # the example is noisy, so the comparison means something
    np.testing.assert_allclose(recomputed, declared, rtol=1e-9, atol=0)
    # a rule declaring other noise than its claim needs is caught by the same comparison
    assert claimed_scale(sc, 2) != pytest.approx(1.5 * declared[0], rel=1e-3)


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_claim_check_runs_and_the_example_keeps_its_claim(paper_name, rule_name):
    check = _optional(get_paper(paper_name), "claim_check")
    sc = _example(rule_name)
    alg = sc.algorithm.bind(sc.problem)
    eps, delta = alg.claimed_privacy(sc.horizon)
    message = check(sc, eps, delta)
    assert isinstance(message, str) and "VIOLATED" not in message, message


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_topology_audit_runs_on_the_example_and_passes_a_metropolis_ring(paper_name, rule_name):
    """The audit runs on the example's own sequence (some examples are time-varying on purpose, so any verdict),
    and every assumption holds on a fixed Metropolis ring, which meets every seed paper's assumptions."""
    paper = get_paper(paper_name)
    _optional(paper, "assumptions")
    assumptions = paper.assumption_set(rule_name)
    assert isinstance(assumptions, topology.AssumptionSet) and assumptions.name == rule_name
    sc = _example(rule_name)
    report = topology.audit(sc.topology, assumptions, horizon=sc.horizon)
    assert report.algorithm == rule_name and report.horizon == sc.horizon and report.assumptions
    ring = topology.from_networkx([nx.cycle_graph(5)], rule="metropolis", periodic=True)
    ring_report = topology.audit(ring, assumptions, horizon=SHORT)
    assert ring_report.all_hold, ring_report.to_table()


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_adjacency_class_is_a_gradient_round_or_value_class(paper_name, rule_name):
    adjacency = _optional(get_paper(paper_name), "adjacency")
    sc = _example(rule_name)
    cls = adjacency(sc)
    if isinstance(cls, ValueClass):  # a rule reading the private values themselves (Muffliato's addresses)
        assert isinstance(sc.problem.costs, RendezvousQuadratic)
        return
    # online losses (costs with num_rounds) change by round: round adjacency; otherwise one agent's cost
    online = getattr(sc.problem.costs, "num_rounds", None) is not None
    assert isinstance(cls, RoundClass if online else GradientClass) and cls.bound > 0 and cls.norm in ("l1", "l2")


@pytest.mark.parametrize("paper_name", sorted(papers()))
def test_reproductions_load(paper_name):
    for rep in _optional(get_paper(paper_name), "reproductions"):
        function, table = rep.load()
        assert callable(function) and callable(table)


@pytest.mark.parametrize("paper_name,rule_name", PAIRS, ids=IDS)
def test_accountant_record_names_the_rule_and_its_mechanism(paper_name, rule_name):
    accountant = _optional(get_paper(paper_name), "accountant")
    assert rule_name in accountant.names
    assert {c.mechanism for c in REGISTRY[rule_name].noisy_channels()} == {accountant.mechanism}


def test_seed_papers_provide_every_optional_part():
    for name in SEED_PAPERS:
        paper = get_paper(name)
        assert registered()[name].published and registered()[name].origin == "asyncdp"
        for part in ("claim_check", "assumptions", "reproductions", "claimed_scale", "accountant", "adjacency"):
            assert getattr(paper, part), (name, part)
        assert all(callable(r.example_scenario) for r in paper.rules)


def test_every_reproduction_belongs_to_exactly_one_paper():
    from asyncdp.reproduce import EXPERIMENT_NAMES

    owned = [rep.name for p in papers().values() for rep in p.reproductions]
    assert sorted(owned) == sorted(EXPERIMENT_NAMES) and len(owned) == len(set(owned))


# -- lookup through the MRO, and what is missing fails clearly -----------------------------------------
class MyRule(Algorithm):
    """A user's own rule without a paper record (never run: only its name is looked up)."""

    name: ClassVar[str] = "my-rule"


def test_a_subclass_of_a_paper_rule_uses_that_paper_unless_it_registers_its_own():
    from asyncdp import Huang2015

    class Tuned(Huang2015):
        name: ClassVar[str] = "tuned-huang"

    assert paper_of(Tuned) is paper_of(Tuned(epsilon=1.0, c=0.1, q=0.5, p=0.6)) is get_paper("huang2015")
    assert find_paper(MyRule) is None and find_paper("my-rule") is None
    with pytest.raises(PaperError, match=r"no paper record for 'my-rule'; known: .*huang2015"):
        get_paper(MyRule)


@pytest.mark.parametrize("kwargs,match", [
    (dict(name="x", rules=(), lemma=len), "rules must name at least one"),
    (dict(name="x", rules=(object,), lemma=len), "must be an Algorithm subclass"),
    (dict(name="x", rules=(MyRule,), lemma=None), "has no sensitivity lemma"),
    (dict(name="", rules=(MyRule,), lemma=len), "non-empty name"),
    (dict(name="x", rules=(MyRule,), lemma=len, adjacency=3), "adjacency must be callable"),
    (dict(name="x", rules=(MyRule,), lemma=len, assumptions="huang2015"), "assumptions must be a topology"),
])
def test_a_malformed_record_is_a_paper_error(kwargs, match):
    with pytest.raises(PaperError, match=match):
        Paper(**kwargs)


def test_the_contract_holds_for_a_paper_installed_through_an_entry_point():
    """This module again, in a fresh interpreter whose path holds a third-party package and its dist-info."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(FIXTURES / "third_party"),
                                                                      os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "pytest", __file__, "-n", "0", "-v", "-p", "no:cacheprovider", "-k",
                          "fixture or rule_names_are_unique"],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[3])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    lines = out.stdout.splitlines()

    def outcome(test: str) -> str:
        found = [line for line in lines if f"{test}[fixture-paper" in line]
        assert found, f"{test} did not run for the fixture paper:\n" + out.stdout[-2000:]
        return found[0]

    # the required clauses ran and passed for the installed paper; its missing optional parts were skipped
    for test in ("test_lemma_gives_each_release_of_each_noisy_channel_a_sensitivity",
                 "test_lemma_never_reads_the_rules_noise_declarations",
                 "test_both_engines_agree_on_a_short_example",
                 "test_adjacency_class_is_a_gradient_round_or_value_class",
                 "test_rule_pickles_to_an_equal_rule_that_behaves_the_same"):
        assert "PASSED" in outcome(test)
    for test in ("test_claim_check_runs_and_the_example_keeps_its_claim", "test_reproductions_load",
                 "test_topology_audit_runs_on_the_example_and_passes_a_metropolis_ring"):
        assert "SKIPPED" in outcome(test)

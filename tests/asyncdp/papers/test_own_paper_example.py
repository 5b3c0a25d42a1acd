"""The worked example of a user's own paper (examples/own_paper_private_dgd.py): pass, two violations, an audit.

The privacy checks run at family-wise confidence 0.95 (the check's default): a correct claim gets a
statistical witness with probability at most 0.05, and the seeds are fixed.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from asyncdp.cli import main
from asyncdp.papers import get_paper, paper_of, registered
from asyncdp.privacy import check_privacy

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "own_paper_private_dgd.py"


@pytest.fixture(scope="module")
def ex() -> dict:
    return runpy.run_path(str(EXAMPLE))


def test_the_file_registers_its_paper_once_however_often_it_runs(ex):
    again = runpy.run_path(str(EXAMPLE))  # a re-executed script: the same source, no conflict
    paper = get_paper("private-dgd")
    assert paper is again["PAPER"] and registered()["private-dgd"].origin == str(EXAMPLE)
    assert registered()["private-dgd"].published is False
    # the half-noise rule subclasses PrivateDGD and uses its record; the small-lemma rule registered its own
    assert paper_of(again["HalfNoiseDGD"]()) is paper
    assert paper_of(again["SmallLemmaDGD"]()).name == "private-dgd-small-lemma"


def test_the_lemma_reads_parameters_not_declarations(ex):
    sc = ex["scenario"]
    sens = get_paper("private-dgd").sensitivity(sc)["y"]
    alg = sc.algorithm.bind(sc.problem)
    expected = 2 * alg.step * alg.clip * np.sqrt(2)
    assert sens[0] == 0 and np.allclose(sens[1:], expected)
    # the declaration agrees for the correct rule; the small-lemma rule declares half of it
    assert alg.noise(3, "y").claimed_sensitivity == pytest.approx(expected, rel=1e-12)
    small = ex["SmallLemmaDGD"](rounds=20).bind(sc.problem)
    assert small.noise(3, "y").claimed_sensitivity == pytest.approx(expected / 2, rel=1e-12)


def test_correct_version_passes_and_the_report_names_the_users_lemma(ex):
    sc, adj = ex["variant"]("correct")
    report = check_privacy(sc, adj, runs=600, search_examples=5)
    assert report.verdict == "pass" and report.witness is None
    assert report.epsilon_ledger == pytest.approx(sc.algorithm.epsilon, rel=1e-9)
    assert report.paper == "private-dgd"
    assert "the user's own lemma in paper record 'private-dgd'" in report.sensitivity_source
    assert "not a published paper's" in report.sensitivity_source and "Nedić and Ozdaglar" in report.sensitivity_source
    by_method = {e.method: e for e in report.evidence}
    assert by_method["worst-case adjacency search"].figures["worst_case_loss"] <= report.epsilon_claimed
    assert by_method["sensitivity prober"].figures["sensitivity_probe_lemma_ratio"] <= 1 + 1e-9
    assert "holds" in report.theorem or "ok" in report.theorem.lower()


def test_half_the_declared_noise_is_a_violation(ex):
    sc, adj = ex["variant"]("half-noise")
    report = check_privacy(sc, adj, runs=600, search_examples=0)
    assert report.verdict == "violation"
    assert report.conformance_min_scale_ratio is not None and report.conformance_min_scale_ratio < 0.75


def test_a_lemma_too_small_by_two_is_refuted_by_the_worst_case_pair(ex):
    sc, adj = ex["variant"]("small-lemma")
    report = check_privacy(sc, adj, runs=600, search_examples=5)
    assert report.verdict == "violation"
    # the reported witness is the prober's, on the class's own pair: the user's pair moves releases twice the
    # lemma's bound, in the runs (coverage) and at a constructed input, but its gradients exceed the class's bound
    # there (a rule that does not clip would not be covered on it: coverage's doubt); the same step on the class's
    # extremal linear pair (gradients g and -g of norm C) moves the release twice the bound: a witness of the class
    w = report.witness
    assert w["kind"] == "sensitivity" and w["pair"].startswith("the class's pair (along the pair's gradient difference)")
    assert w["value"] == pytest.approx(2 * w["claimed"], rel=1e-3)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    assert coverage.witness is None and "the check cannot tell which" in coverage.doubt
    worst = next(e for e in report.evidence if e.method == "worst-case adjacency search")
    assert worst.witness is not None and worst.witness["kind"] == "worst-case"
    # the constructed pair loses about twice the claimed epsilon (up to the box's projections)
    assert worst.figures["worst_case_loss"] > 1.5 * report.epsilon_claimed
    assert "'private-dgd-small-lemma'" in report.sensitivity_source


def test_topology_audit_of_the_users_digraph_names_the_failed_assumption(ex, tmp_path, capsys):
    import topology

    report = topology.audit(ex["user_digraph"](), ex["ASSUMPTIONS"])
    assert [a.name for a in report.failed()] == ["doubly_stochastic"]
    failed = report.failed()[0]
    assert failed.first_failure_round == 2 and failed.witness == "round 2: column 0 sums to 2"
    # the same through the command line, naming the paper by its script
    path = tmp_path / "digraph.json"
    topology.save_sequence(ex["user_digraph"](), path)
    assert main(["topology", "audit", str(path), "--algorithm", f"{EXAMPLE}:private-dgd", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "private-dgd" and not out["all_hold"]
    # the file defines two papers: naming none is ambiguous, one error line
    assert main(["topology", "audit", str(path), "--algorithm", str(EXAMPLE)]) == 2
    assert "defines papers ['private-dgd', 'private-dgd-small-lemma']: name one" in capsys.readouterr().err
    # --B applies to a user's paper whose assumptions include B-strong connectivity
    assert main(["topology", "audit", str(path), "--algorithm", f"{EXAMPLE}:private-dgd", "--B", "2"]) == 0
    assert "B                          2" in capsys.readouterr().out


def test_the_cli_checks_the_example_script(capsys):
    assert main(["privacy", "check", str(EXAMPLE), "--runs", "300", "--search-examples", "0"]) == 0
    out = capsys.readouterr().out
    assert "verdict                        pass" in out and "the user's own lemma" in out


def _readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Bring your own algorithm")
    return text[start:text.index("\n## ", start)]


def test_the_readme_section_runs(ex, tmp_path, monkeypatch, capsys):
    """The README's "Bring your own algorithm" code: its snippet gives the example's lemma; its commands run."""
    import asyncdp.papers

    section = _readme_section()
    snippet = section.split("```python\n")[1].split("```")[0]
    monkeypatch.setattr(asyncdp.papers, "register", lambda paper: paper)  # the example registered it already
    namespace = {"PrivateDGD": ex["PrivateDGD"], "ASSUMPTIONS": ex["ASSUMPTIONS"]}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    sc = ex["scenario"]
    np.testing.assert_array_equal(namespace["PAPER"].sensitivity(sc)["y"], get_paper("private-dgd").sensitivity(sc)["y"])
    assert namespace["PAPER"].adjacency(sc) == get_paper("private-dgd").adjacency(sc)
    monkeypatch.chdir(tmp_path)
    commands = [line.split("#")[0].split() for line in section.split("```bash\n")[1].split("```")[0].splitlines()]
    for argv in commands:
        if argv[0] == "asyncdp" and argv[1] != "privacy":  # the privacy check runs in its own test above
            argv = [a.replace("examples/", f"{ROOT / 'examples'}/") for a in argv[1:]]
            assert main(argv) == 0, argv
    assert "b_strongly_connected" in capsys.readouterr().out


def test_without_an_adjacency_class_a_users_paper_is_at_best_inconclusive(ex):
    from dataclasses import dataclass
    from typing import ClassVar

    from asyncdp.papers import Paper, register, unregister

    @dataclass(frozen=True)
    class Classless(ex["PrivateDGD"]):
        name: ClassVar[str] = "private-dgd-classless"

    register(Paper("private-dgd-classless", (Classless,), lemma=ex["lemma"], reference="test"), origin="test")
    try:
        sc, adj = ex["variant"]("correct")
        rule = Classless(rounds=sc.horizon)
        report = check_privacy(sc.replace(algorithm=rule), adj.replace(algorithm=rule), runs=300, search_examples=0)
        assert report.verdict == "inconclusive" and report.witness is None
        assert report.epsilon_accountant <= report.epsilon_claimed * (1 + 1e-9)  # the bound alone would pass
        assert any("was not tested against the worst case of an adjacency class" in r for r in report.reasons)
    finally:
        unregister("private-dgd-classless")

"""A user's paper on the command line: ``asyncdp run`` warnings, and one error line for each bad input."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest

from asyncdp import Huang2015
from asyncdp.cli import main
from asyncdp.errors import SweepError
from asyncdp.papers import registered, unregister

HEADER = textwrap.dedent("""\
    import numpy as np
    from typing import ClassVar
    import topology
    from asyncdp import Huang2015, Scenario, rendezvous_problem
    from asyncdp.papers import GradientClass, Paper, register
    from topology.audit import AssumptionSet, EachRound

    class TunedHuang(Huang2015):
        name: ClassVar[str] = "cli-tuned-huang"

    problem = rendezvous_problem([[0.5, 0.5], [0.0, 0.0], [-0.5, 0.2]])
    """)


def _script(tmp_path: Path, body: str, name: str = "my_paper.py") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("asyncdp: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(autouse=True)
def _forget_cli_papers():
    yield
    for name in ("cli-tuned-huang",):
        if name in registered():
            unregister(name)


def test_run_warns_on_a_user_papers_failed_assumption(tmp_path, capsys):
    script = _script(tmp_path, """\
        STRONG = AssumptionSet("cli-tuned-huang", "my notes", (
            EachRound(topology.check_strongly_connected, "strongly_connected", "every round strongly connected"),
        ), "doubly")
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma=lambda sc: np.zeros(sc.horizon),
                       assumptions=STRONG))
        w = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0.5]])  # a path: not strongly connected
        scenario = Scenario(problem, topology.static(w), TunedHuang(epsilon=1.0, c=0.1, q=0.5, p=0.6), horizon=4)
        """)
    assert main(["run", str(script)]) == 0
    err = capsys.readouterr().err
    assert "asyncdp: warning: the topology breaks assumption strongly_connected of cli-tuned-huang" in err
    assert "round 1:" in err


def test_assumptions_keyed_by_a_misspelt_rule_name_are_an_error_not_a_silent_skip(tmp_path, capsys):
    # keyed "cli_tuned_huang" for the rule "cli-tuned-huang": the rule had no assumptions, so `asyncdp run` audited
    # nothing and warned of nothing on a path that is not strongly connected
    script = _script(tmp_path, """\
        STRONG = AssumptionSet("cli-tuned-huang", "my notes", (
            EachRound(topology.check_strongly_connected, "strongly_connected", "every round strongly connected"),
        ), "doubly")
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma=lambda sc: np.zeros(sc.horizon),
                       assumptions={"cli_tuned_huang": STRONG}))
        w = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0.5]])  # a path: not strongly connected
        scenario = Scenario(problem, topology.static(w), TunedHuang(epsilon=1.0, c=0.1, q=0.5, p=0.6), horizon=4)
        """)
    assert main(["run", str(script)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "assumptions name rule 'cli_tuned_huang', which is not one of its rules ['cli-tuned-huang']" in line


@pytest.mark.parametrize("body,match", [
    ("PAPER = Paper('cli-tuned-huang', (), lemma=len)\n", "rules must name at least one Algorithm subclass"),
    ("PAPER = Paper('cli-tuned-huang', (TunedHuang,), lemma=None)\n", "has no sensitivity lemma"),
    ("register(Paper('huang2015', (TunedHuang,), lemma=len))\n",
     "two different papers are registered under the name 'huang2015'"),
])
def test_a_bad_record_is_one_error_line(tmp_path, capsys, body, match):
    script = _script(tmp_path, body + "scenario = Huang2015.example_scenario()\nadjacent = scenario\n")
    assert main(["privacy", "check", str(script), "--runs", "10"]) == 2
    assert match in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("lemma,match", [
    ("lambda sc: np.full(sc.horizon, np.nan)", "round 1 is nan; it must be finite and >= 0"),
    ("lambda sc: -np.ones(sc.horizon)", "round 1 is -1.0; it must be finite and >= 0"),
    ("lambda sc: np.ones(3)", r"one value per release, shape (4,), for channel 'y'; got shape (3,)"),
])
def test_a_bad_lemma_value_is_one_error_line(tmp_path, capsys, lemma, match):
    script = _script(tmp_path, f"""\
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma={lemma}))
        w = np.full((3, 3), 1 / 3)
        scenario = Scenario(problem, topology.static(w), TunedHuang(epsilon=1.0, c=0.1, q=0.5, p=0.6), horizon=4,
                            seed=1)
        adjacent = scenario.replace(problem=problem.adjacent(0, address=[-0.5, -0.5]))
        """)
    assert main(["privacy", "check", str(script), "--runs", "10", "--search-examples", "0"]) == 2
    assert match in _one_error_line(capsys.readouterr().err)


def test_a_claim_check_that_raises_is_one_error_line_naming_the_paper(tmp_path, capsys):
    # it raised out of check_privacy after every step had run: a traceback (exit 1)
    script = _script(tmp_path, """\
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma=lambda sc: np.full(sc.horizon, 0.1),
                       claim_check=lambda sc, eps, delta: sc.algorithm.no_such_claim))
        w = np.full((3, 3), 1 / 3)
        scenario = Scenario(problem, topology.static(w), TunedHuang(epsilon=1.0, c=0.1, q=0.5, p=0.6), horizon=4,
                            seed=1)
        adjacent = scenario.replace(problem=problem.adjacent(0, address=[-0.5, -0.5]))
        """)
    assert main(["privacy", "check", str(script), "--runs", "10", "--search-examples", "0"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "paper 'cli-tuned-huang': the claim check raised AttributeError:" in line
    assert "no_such_claim" in line


def test_an_adjacency_class_that_raises_is_one_error_line_naming_the_paper(tmp_path, capsys):
    # the lemma's errors were one line naming the paper; the adjacency's were a traceback (exit 1)
    script = _script(tmp_path, """\
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma=lambda sc: np.full(sc.horizon, 0.1),
                       adjacency=lambda sc: GradientClass(sc.problem.constants.no_such_bound)))
        w = np.full((3, 3), 1 / 3)
        scenario = Scenario(problem, topology.static(w), TunedHuang(epsilon=1.0, c=0.1, q=0.5, p=0.6), horizon=4,
                            seed=1)
        adjacent = scenario.replace(problem=problem.adjacent(0, address=[-0.5, -0.5]))
        """)
    assert main(["privacy", "check", str(script), "--runs", "10", "--search-examples", "0"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "paper 'cli-tuned-huang': the adjacency class raised AttributeError:" in line


def test_topology_audit_of_a_paper_without_assumptions_is_one_error_line(tmp_path, capsys):
    script = _script(tmp_path, "PAPER = Paper('cli-tuned-huang', (TunedHuang,), lemma=len)\n")
    ring = tmp_path / "ring.json"
    assert main(["topology", "generate", "static", "--graph", "ring", "--nodes", "4", "-o", str(ring)]) == 0
    capsys.readouterr()
    assert main(["topology", "audit", str(ring), "--algorithm", str(script)]) == 2
    assert "declares no topology assumptions" in _one_error_line(capsys.readouterr().err)
    assert main(["topology", "audit", str(ring), "--algorithm", "huang2015", "--B", "2"]) == 2
    assert "--B applies only to algorithms whose assumptions include B-strong connectivity" in _one_error_line(
        capsys.readouterr().err)
    assert main(["topology", "audit", str(ring), "--algorithm", "nope"]) == 2
    assert "no paper record for 'nope'" in _one_error_line(capsys.readouterr().err)


def _build(rule: Huang2015, c: float) -> object:
    return Huang2015.example_scenario().replace(algorithm=rule)


def test_an_unpicklable_user_rule_under_a_process_executor_is_one_clear_error():
    from asyncdp.experiments.sweep import sweep

    class Local(Huang2015):  # defined in a function: cannot be pickled by reference
        name: ClassVar[str] = "cli-local"

    factory = functools.partial(_build, Local(epsilon=1.0, c=0.1, q=0.5, p=0.6))
    with pytest.raises(SweepError, match="executor 'processes' ships the factory to other processes, but it cannot "
                                         "be pickled"):
        sweep(factory, {"c": [0.1]}, executor="processes")


def test_topology_audit_finds_a_paper_registered_by_a_script_named_by_a_relative_path(tmp_path, capsys, monkeypatch):
    # The script calls register(...) without keeping the record in a module-level name. register records the
    # script's resolved path as the origin, and load_source compared it with the path as typed: named relative to
    # the working directory, the script "defined no paper" (an absolute path worked).
    script = _script(tmp_path, """\
        register(Paper("cli-tuned-huang", (TunedHuang,), lemma=lambda sc: np.zeros(sc.horizon),
                       assumptions=AssumptionSet("cli-tuned-huang", "my notes", (
                           EachRound(topology.check_strongly_connected, "strongly_connected", "strongly connected"),
                       ), "doubly")))
        """)
    monkeypatch.chdir(tmp_path)
    assert main(["topology", "generate", "static", "--graph", "ring", "--nodes", "4", "-o", "ring.json"]) == 0
    capsys.readouterr()
    assert main(["topology", "audit", "ring.json", "--algorithm", script.name]) == 0, capsys.readouterr().err
    assert "strongly_connected" in capsys.readouterr().out

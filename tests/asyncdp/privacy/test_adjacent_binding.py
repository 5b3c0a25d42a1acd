"""The mechanism may not depend on the data through anything but the costs its R and U steps read.

A rule reads constants (a gradient bound, a smoothness) from the problem it is bound to, and calibrates its noise
with them. The check replays both problems with the rule bound to the scenario's problem, so an adjacent problem
that declares other constants, or a rule whose binding reads the private costs, runs another mechanism on the
adjacent data than the one the check models. The found case: Showkatbakhsh, Karakus and Diggavi's two-stage rule
(claim (1, 1e-3)) on its example, with the adjacent problem declaring a gradient bound 10% looser: its noise std
is then 10% larger on every one of the 180 released coordinates of an adjacent run, a mechanism the check never
modelled, and the check said `pass`. Such a pair is refused now (exit 2), naming what differs; so is a rule whose
binding reads the private costs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from accounting.errors import AdjacencyError, PrivacyParameterError
from asyncdp import Huang2015
from asyncdp.cli import main
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import small_pair
from asyncdp.problems.problem import Problem


def _showkatbakhsh_pair() -> tuple[Any, Any]:
    sc = Showkatbakhsh.example_scenario()
    centers = np.asarray(sc.problem.costs.centers[0], dtype=float)
    return sc, sc.replace(problem=sc.problem.adjacent(0, center=0.5 * centers))


def test_an_adjacent_problem_with_other_declared_constants_is_refused():
    sc, adj = _showkatbakhsh_pair()
    assert check_privacy(sc, adj, runs=200).verdict == "pass"  # the honest pair (Problem.adjacent keeps constants)
    looser = dataclasses.replace(adj.problem.constants, gradient_bound=1.1 * adj.problem.constants.gradient_bound)
    bad = adj.replace(problem=Problem(adj.problem.domain, adj.problem.costs, looser))
    # the independent fact: the rule bound to each problem declares a different noise std
    a, b = sc.algorithm.bind(sc.problem), bad.algorithm.bind(bad.problem)
    name = a.channels[0].name
    stds = [(a.noise(t, name).scale, b.noise(t, name).scale) for t in range(1, sc.horizon + 1)]
    assert any(x != y for x, y in stds)
    with pytest.raises(AdjacencyError, match="in gradient_bound: .*declare different constants"):
        check_privacy(sc, bad, runs=200)


@dataclass(frozen=True)
class ReadsItsData(Huang2015):
    """Huang2015 whose binding takes its noise factor from agent 0's private cost (its gradient at the origin)."""

    name: ClassVar[str] = "huang2015-reads-its-data-test"
    boost: float = 1.0

    def bind(self, problem: Any) -> ReadsItsData:
        bound = super().bind(problem)
        g = problem.costs.gradient(np.array([0]), np.zeros((1, problem.dim)))
        return dataclasses.replace(bound, boost=1.5 if float(g.sum()) > 0 else 1.0)

    def noise_scale(self, t: int) -> float:
        return self.boost * super().noise_scale(t)


def _reads_its_data_pair() -> tuple[Any, Any]:
    pair = small_pair(ReadsItsData)
    return pair.scenario, pair.adjacent


def test_a_rule_whose_binding_reads_the_private_costs_is_refused():
    sc, adj = _reads_its_data_pair()
    assert sc.algorithm.bind(sc.problem).boost != adj.algorithm.bind(adj.problem).boost
    with pytest.raises(AdjacencyError, match="boost"):
        check_privacy(sc, adj, runs=50)


def test_the_command_line_refuses_it_in_one_line(tmp_path, capsys):
    script = tmp_path / "pair.py"
    script.write_text(
        "import dataclasses\n"
        "from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh\n"
        "from asyncdp.problems.problem import Problem\n"
        "scenario = Showkatbakhsh.example_scenario()\n"
        "p = scenario.problem.adjacent(0, center=0.5 * scenario.problem.costs.centers[0])\n"
        "loose = dataclasses.replace(p.constants, gradient_bound=1.1 * p.constants.gradient_bound)\n"
        "adjacent = scenario.replace(problem=Problem(p.domain, p.costs, loose))\n")
    assert main(["privacy", "check", str(script), "--runs", "50"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("asyncdp: error: ") and "declare different constants" in err[0]


@dataclass(frozen=True)
class NanRoundSchedule(Huang2015):
    """Huang2015 whose noise schedule is NaN in round 3 (a schedule that divides 0 by 0 in one round)."""

    name: ClassVar[str] = "test-huang-nan-round"

    def noise_scale(self, t: int) -> float:
        return float("nan") if t == 3 else super().noise_scale(t)  # a new NaN object each call


def test_a_nan_noise_scale_is_named_by_round_not_taken_for_a_binding_that_reads_the_data():
    """Both bindings declare NaN in round 3; ``NaN != NaN`` made the check refuse the pair as "the rule's binding
    reads the problem, so the two datasets run different mechanisms" (a NoiseDeclaration with NaN against the
    same one). The engines' own check names the round and the value."""
    pair = small_pair(NanRoundSchedule)
    with pytest.raises(PrivacyParameterError, match=r"round 3: noise scale must be positive and finite, got nan"):
        check_privacy(pair.scenario, pair.adjacent, runs=50)

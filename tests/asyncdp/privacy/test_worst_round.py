"""The worst-case search under round adjacency (online losses): DPSDA's adjacency class is searched, not skipped.

Cheng, Liao and Li (arXiv 2022), Def. 1: two loss sequences differ in one
round. The dpsda paper record declares the class (a :class:`RoundClass`:
the changed round's gradients have L2 norm at most the problem's ``L``) and
the worst-case search (:mod:`asyncdp.privacy.worst_case`) builds its
extremal pairs on the realized schedules.

Expected values are derived by hand from eqs. (11)-(14) with every message
pinned to its noise-free value (the constructed transcript): release
``t0 + 1`` loses ``N * ||u(t0) - u'(t0)||_1 / sigma``, and every release's
loss is ``>= 0``.
"""

from __future__ import annotations

import math
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from asyncdp import Box, Scenario
from asyncdp.papers import Paper, RoundClass, get_paper, register, registered, unregister
from asyncdp.papers.dpsda import privacy as dpsda_privacy
from asyncdp.papers.dpsda.rule import DPSDAC, DPSDAPS
from asyncdp.problems.costs import FunctionClass
from asyncdp.problems.online import LinearRound, UserOnlineLoss, online_problem
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.worst_case import search_worst_case
from asyncdp.privacy.candidate_pairs import extremal_round_pairs

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
WORST = "worst-case adjacency search"


def _worst(report: Any) -> Any:
    return next(e for e in report.evidence if e.method == WORST)


@pytest.fixture(scope="module")
def build():
    return runpy.run_path(str(EXAMPLES / "privacy_check_dpsda.py"))["build"]


def test_the_dpsda_record_declares_round_adjacency_with_the_problems_gradient_bound():
    for rule in (DPSDAC, DPSDAPS):
        sc = rule.example_scenario()
        cls = get_paper("dpsda").adjacency(sc)
        assert cls == RoundClass(sc.problem.constants.gradient_bound, "l1")


@pytest.mark.parametrize("rule,params,verdict", [
    ("dpsda-c", dict(clip=True, level="network"), "pass"),      # examples/privacy_check_dpsda.py
    ("dpsda-ps", dict(clip=True, level="network"), "pass"),
    ("dpsda-c", dict(clip=False, level="node"), "violation"),   # examples/privacy_check_dpsda_paper.py
])
def test_the_search_runs_on_the_shipped_dpsda_pair_and_keeps_the_verdict(build, rule, params, verdict):
    sc, adj = build(rule, **params)
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == verdict, report.reasons
    worst = _worst(report)
    assert not any("no RoundClass" in r or "no adjacency class" in r for r in worst.reasons), worst.reasons
    assert worst.figures["worst_pair_script"] and worst.figures["worst_case_pair"].startswith("round ")
    loss = worst.figures["worst_case_loss"]
    # release t0+1 alone: N * ||g - g'||_1 / sigma with the sign pattern g = L s / sqrt(N) (unclipped: |g_k| < L_hat)
    n, lip = sc.problem.num_agents, sc.problem.constants.gradient_bound
    sigma = sc.algorithm.bind(sc.problem).noise(2, "h").scale
    assert loss >= n * 2 * lip * math.sqrt(n) / sigma * (1 - 1e-9)
    # the worst pair in the class stays within the run-level claim T * epsilon (the paper's rule is refuted by
    # its declaration and the accountant, not by the run-level loss)
    assert loss <= report.epsilon_claimed and worst.witness is None


def test_the_worst_pair_script_rebuilds_a_round_adjacent_pair(build):
    from asyncdp.privacy import find_changed_round

    sc, adj = build("dpsda-c", clip=True, level="network")
    worst = _worst(check_privacy(sc, adj, runs=50, search_examples=2))
    text = worst.figures["worst_pair_script"]
    namespace: dict[str, Any] = {"base": sc}
    exec(text.replace("base = ...  # the scenario that was checked\n", ""), namespace)
    label = worst.figures["worst_case_pair"]
    assert label.startswith("round "), label  # every round-adjacent pair's label names its changed round
    t0 = int(label.split(",")[0].removeprefix("round "))
    assert find_changed_round(namespace["scenario"], namespace["adjacent"]) == t0


# -- a scenario on which a 2x too small noise shows ------------------------------------------------------------
C = 1.0   # the clipping bound L_hat; every round's loss has ||grad||_2 <= C sqrt(N) = L
N = 3
HORIZON = 3


def _l1_loss() -> UserOnlineLoss:
    """``f_t(x) = C ||x||_1``: a subgradient ``C sign(x)`` that flips between the two sides of 0."""
    return UserOnlineLoss(lambda t, x: C * float(np.abs(x).sum()), lambda t, x: C * np.sign(x),
                          FunctionClass(gradient_bound=C * math.sqrt(N)), dim=N, num_rounds=HORIZON, num_nodes=N,
                          name="l1")


@dataclass(frozen=True)
class HalfNoiseDPSDAC(DPSDAC):
    """DPSDA-C whose declared sensitivity, hence its noise, is half Lemma 1's (declaration and noise consistent)."""

    name: ClassVar[str] = "test-dpsda-c-half"

    def sensitivity(self) -> float:
        return 0.5 * super().sensitivity()


def _pair(rule: type) -> tuple[Scenario, Scenario]:
    loss = _l1_loss()
    problem = online_problem(loss, Box(-1.0, 1.0, dim=N))
    # the user's own pair is mild (round 1's subgradient moves by at most 0.2 C, within L): only the class's
    # worst case is not
    other = loss.with_round(1, value_fn=lambda t, x: C * float(0.9 * np.abs(x).sum() + 0.1 * x.sum()),
                            gradient_fn=lambda t, x: C * (0.9 * np.sign(x) + 0.1))
    sc = Scenario(problem, topology.static(np.full((N, N), 1.0 / N)), rule(epsilon=1.0, L_hat=C, level="network"),
                  horizon=HORIZON, seed=3)
    return sc, sc.replace(problem=online_problem(other, Box(-1.0, 1.0, dim=N)))


@pytest.fixture()
def half_lemma_paper():
    """A user's record for the half-noise rule whose lemma is half of Lemma 1 (too small by 2)."""
    register(Paper("test-dpsda-half-lemma", (HalfNoiseDPSDAC,), lemma=lambda sc: 0.5 * dpsda_privacy.sensitivity(sc),
                   reference="half of Cheng, Liao and Li's Lemma 1", adjacency=dpsda_privacy.round_class),
             origin="test_worst_round")
    yield
    if "test-dpsda-half-lemma" in registered():
        unregister("test-dpsda-half-lemma")


def test_extremal_pairs_change_every_round_that_reaches_a_release():
    sc, _ = _pair(DPSDAC)
    pairs = extremal_round_pairs(sc)
    # 2^3 sign patterns and 2 * 3 coordinates at each of the rounds 1..T-1
    assert len(pairs) == (2**N + 2 * N) * (HORIZON - 1)
    assert {t0 for _, t0, _, _ in pairs} == set(range(1, HORIZON))
    assert all(np.linalg.norm(g) == pytest.approx(C * math.sqrt(N)) and np.array_equal(gp, -g)
               for _, _, g, gp in pairs)


def test_a_long_horizon_tries_the_early_rounds_and_the_users_round():
    from asyncdp.privacy.candidate_pairs import EXTREMAL_ROUNDS

    sc = DPSDAC.example_scenario()  # 12 rounds
    rounds = {t0 for _, t0, _, _ in extremal_round_pairs(sc, changed_round=11)}
    assert rounds == set(range(1, EXTREMAL_ROUNDS + 1)) | {11}
    assert {t0 for _, t0, _, _ in extremal_round_pairs(sc, changed_round=12)} == set(range(1, EXTREMAL_ROUNDS + 1))


def test_linear_round_keeps_every_other_round():
    loss = _l1_loss()
    lin = LinearRound(loss, 2, [1.0, 2.0, 3.0])
    x = np.array([0.5, -0.5, 0.0])
    assert lin.round_gradient(2, x).tolist() == [1.0, 2.0, 3.0]
    assert lin.round_gradient(1, x).tolist() == (C * np.sign(x)).tolist()
    assert lin.function_class(Box(-1.0, 1.0, dim=N)).gradient_bound == pytest.approx(math.sqrt(14))


def test_the_correct_rule_attains_two_epsilon_and_passes():
    sc, adj = _pair(DPSDAC)
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    worst = _worst(report)
    # releases 2 and 3 each lose N * N * 2 C / sigma = epsilon (sigma = 2 N^2 C / epsilon): 2 of the claimed 3
    assert worst.figures["worst_case_loss"] == pytest.approx(2.0, rel=1e-9)
    assert worst.witness is None and report.verdict == "pass", report.reasons


@pytest.mark.parametrize("variant", ["noise halved", "lemma too small by 2"])
def test_too_little_noise_is_refuted_by_the_worst_round_pair(variant, request):
    if variant == "lemma too small by 2":
        request.getfixturevalue("half_lemma_paper")
    sc, adj = _pair(HalfNoiseDPSDAC)
    pair = ScenarioPair(sc, adj)
    ctx = prepare(pair, CheckOptions(runs=50, search_examples=0))
    evidence = search_worst_case(pair, ctx)
    # half the noise: each of releases 2 and 3 loses 2 epsilon, 4 > the claimed 3
    assert evidence.figures["worst_case_loss"] == pytest.approx(4.0, rel=1e-9)
    assert evidence.witness is not None and evidence.witness["kind"] == "worst-case"
    assert evidence.witness["round"] == 1 and evidence.witness["agent"] is None
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == "violation"
    assert _worst(report).witness is not None
    if variant == "lemma too small by 2":  # the lemma and the noise agree: only behavior against the lemma sees it
        assert "'test-dpsda-half-lemma'" in report.sensitivity_source
        others = [e for e in report.evidence if e.witness is not None and e.method not in (WORST, "sensitivity coverage")]
        assert not others, [(e.method, e.reasons) for e in others]


def test_round_class_rows_pick_the_first_runs_when_schedules_are_made_on_access():
    """A batch's schedules are fresh views on every access (distinct runs, distinct schedules): the runs the
    search evaluates are the first ones, whatever ids the freed views had; shared schedule objects (lockstep)
    count once."""
    from types import SimpleNamespace

    from asyncdp.privacy.candidate_evaluation import _Family

    class MadeOnAccess:
        def __len__(self) -> int:
            return 12

        def __iter__(self):  # type: ignore[no-untyped-def]
            return (SimpleNamespace(run=r) for r in range(12))

    family = _Family(RoundClass(1.0), None)
    assert family.rows(SimpleNamespace(schedules=MadeOnAccess(), runs=12), 6) == list(range(6))
    shared = SimpleNamespace()
    assert family.rows(SimpleNamespace(schedules=(shared,) * 12, runs=12), 6) == [0]

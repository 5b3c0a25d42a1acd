"""A per-iteration claim is audited in every round, not only its focus round: a noise-free flag from round 11 on.

``FarFlagDGD`` is the private distributed gradient rule of ``examples/own_paper_private_dgd.py`` (Laplace noise,
the user's lemma ``2 alpha C sqrt(n)`` per release from round 2) with ``claim_level = "iteration"`` and the exact
per-iteration claim ``lemma / b``; after a burn-in of half the horizon every agent also broadcasts, noise-free, a
flag "far from my target" (its local gradient's norm above 14.2). Agent 0's target moves from the center of the box
``[-5, 5]^2`` to ``(4, 4)``. Under the scenario the flag never fires: a state ``x`` of the box has ``||x|| <= 5
sqrt(2)``, so ``||grad f_0(x)|| = 2 ||x|| <= 10 sqrt(2) < 14.2``; under the adjacent problem it fires in almost
every run. Given a past whose state under the adjacent problem is far from ``(4, 4)``, round 11's release is
``1`` under one problem and ``0`` under the other: an infinite loss, so the per-iteration claim is false (pure, and
with any delta below that past's probability).

The check said ``pass``: its replay audited the focus round (round 2, the largest declared sensitivity/scale) only,
coverage compares the ledger's noisy releases with the lemma, and the worst-case search's costs of the class
(gradients of norm at most ``C = 1``) never raise the flag. A pure per-iteration claim now bounds the largest
round's loss (a witness, exact given the declared noise); with delta > 0 every other round's losses are audited
too, at a Bonferroni share (a certified fraction of runs with an infinite loss above delta is a witness).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp.algorithms import Channel
from asyncdp.privacy import check_privacy

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")

FAR = 14.2
"""The flag's gradient norm: above ``2 * 5 sqrt(2)``, the largest under the scenario's target (the box's center)."""


_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


@dataclass(frozen=True)
class FarFlagDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD with a noise-free "far from my target" flag from round ``rounds // 2 + 1`` on; claims ``delta``."""

    delta: float = 0.0
    name: ClassVar[str] = "private-dgd-far-flag-test"
    claim_level: ClassVar[str] = "iteration"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("far", None))

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        g = problem.costs.gradient(agents, x, round_index=t)
        far = (np.linalg.norm(g, axis=-1, keepdims=True) > FAR) & (t > self.rounds // 2)
        return {"y": x + self.scale() * noise["y"], "far": far.astype(float)}

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.lemma_value() / self.scale(), self.delta


def _pair(delta: float) -> tuple[Any, Any]:
    problem = EX["problem"].adjacent(0, address=[0.0, 0.0])
    sc = EX["scenario"].replace(problem=problem, algorithm=FarFlagDGD(rounds=EX["HORIZON"], delta=delta))
    return sc, sc.replace(problem=problem.adjacent(0, address=[4.0, 4.0]))


def test_the_flag_never_fires_under_the_scenario_and_almost_always_under_the_adjacent_problem():
    """The truth: an event of probability 0 under the scenario and near 1 under the adjacent problem."""
    assert 2 * 5 * math.sqrt(2) < FAR
    flagged = []
    for sc in _pair(0.0):
        far = np.asarray(sc.run("batch", runs=200, keep="all", transcripts=True).messages["far"])[:, :, 0, 0]
        assert not far[:, : EX["HORIZON"] // 2].any()  # never in the burn-in
        flagged.append(float((far > 0).any(axis=1).mean()))
    assert flagged[0] == 0.0 and flagged[1] > 0.9


def test_a_pure_per_iteration_claim_is_refuted_by_a_later_round():
    report = check_privacy(*_pair(0.0), runs=100, seed=0)
    assert report.verdict == "violation", report.reasons
    assert report.replay_max_loss == math.inf
    witness = report.witness
    assert witness is not None and witness["kind"] == "replay" and witness["round"] > EX["HORIZON"] // 2


def test_an_approximate_per_iteration_claim_is_refuted_by_a_later_round():
    """With delta = 1e-3 the infinite losses of rounds 11-20 were a doubt (``inconclusive``); the fraction of runs with
    an infinite round-t loss estimates the average over pasts of P(E_h | h) <= delta, and its certified lower bound
    is far above 1e-3: a witness naming the round."""
    report = check_privacy(*_pair(1e-3), runs=200, seed=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w is not None and w["kind"] == "replay" and w["round"] > EX["HORIZON"] // 2
    assert w["claim_form"] == "approximate" and w["delta_lower"] > 1e-3 and w["infinite_loss_runs"] > 0
    assert 0.95 < w["confidence"] < 1.0 and "Bonferroni" in w["method"]


def test_a_nan_round_does_not_hide_the_runs_other_rounds():
    """The pure claim's largest round loss: a round whose loss is undefined (NaN) in every run made the max NaN,
    read as 0, so rounds 11-20's infinite losses were no witness; the NaN doubt stays."""
    import dataclasses

    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
    from asyncdp.privacy.exact_replay import replay_exactly

    pair = ScenarioPair(*_pair(0.0))
    ctx = prepare(pair, CheckOptions(runs=100, seed=0))
    replay = ctx.realized_replay()
    per_round = replay.per_round.copy()
    per_round[:, 0] = np.nan  # round 1 undefined in every run
    ctx.cache["replay"] = dataclasses.replace(replay, per_round=per_round, losses=per_round.sum(axis=1))
    e = replay_exactly(pair, ctx)
    assert e.witness is not None and e.witness["round"] > EX["HORIZON"] // 2 and e.witness["loss"] == math.inf
    assert e.doubt is not None and "undefined (NaN) privacy loss" in e.doubt


@pytest.mark.parametrize("timing", ["lockstep", "deadline", "async"])
def test_correct_per_iteration_rules_are_not_refuted(timing):
    """WangBasar's Gaussian rule with its own per-iteration claim (delta 1e-3, calibrated at Var = 400) and the
    own-paper Laplace rule with claim_level = "iteration" (its exact per-round claim): every round is audited."""
    from asyncdp import Async, Deadline
    from asyncdp.papers.wang_basar.rule import WangBasar

    t = {"lockstep": None, "deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
         "async": Async(rate=1.0)}[timing]
    sc = WangBasar.example_scenario(seed=1).replace(algorithm=WangBasar(noise_variance=400.0, delta=1e-3))
    sc = sc if t is None else sc.replace(timing=t)
    y0 = sc.problem.costs.measurements[0]
    adj = sc.replace(problem=sc.problem.adjacent(0, measurement=y0 + np.array([0.05, 0.0, 0.0])))
    rule = IterationDGD(rounds=EX["HORIZON"])
    own = [s.replace(algorithm=rule) for s in (EX["scenario"], EX["adjacent"])]
    for a, b in ((sc, adj), own if t is None else [s.replace(timing=t) for s in own]):
        report = check_privacy(a, b, runs=100, seed=0)
        assert report.verdict == "pass", report.reasons


@dataclass(frozen=True)
class IterationDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """The correct PrivateDGD claiming, per iteration, one round's exact Laplace epsilon (lemma / b)."""

    name: ClassVar[str] = "private-dgd-iteration-test"
    claim_level: ClassVar[str] = "iteration"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.lemma_value() / self.scale(), 0.0

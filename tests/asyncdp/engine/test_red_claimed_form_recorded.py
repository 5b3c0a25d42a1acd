"""A rule's ``claimed_form`` is the claim the engines record (``asyncdp run``'s summary, a sweep's columns).

The privacy check reads ``claimed_form(horizon)`` as the rule's claim when the rule defines it, but the engines
recorded ``claimed_privacy(horizon)`` alone: a rule stating ``(1, 1e-3)``-DP through ``claimed_form`` (with the
base ``claimed_privacy``, ``(inf, 0)``) ran with ``epsilon_claimed inf`` and ``delta_claimed 0`` in ``asyncdp run``,
and a sweep's ``epsilon_accountant`` was NaN (a Gaussian ledger at a claimed delta of 0), while ``asyncdp privacy
check`` tested ``(1, 1e-3)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from accounting.claim_forms import ApproxDP, ZeroConcentratedDP
from asyncdp.algorithms.base import Algorithm
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh


@dataclass(frozen=True)
class _FormOnly(Showkatbakhsh):
    claim: object = None

    def claimed_privacy(self, horizon):
        return Algorithm.claimed_privacy(self, horizon)  # the base rule's: no (epsilon, delta) claim

    def claimed_form(self, horizon):
        return self.claim


def _scenario(claim):
    base = Showkatbakhsh.example_scenario()
    alg = base.algorithm
    return base.replace(algorithm=_FormOnly(epsilon=alg.epsilon, delta=alg.delta, T=alg.T, T2=alg.T2, claim=claim))


@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_the_run_records_the_claimed_form(engine):
    result = _scenario(ApproxDP(1.0, 1e-3)).run(engine)
    assert (result.claimed_epsilon, result.claimed_delta) == (1.0, 1e-3)


def test_a_renyi_or_zcdp_form_keeps_claimed_privacy():
    summary = _scenario(ZeroConcentratedDP(0.5)).run().summary()
    assert (summary["epsilon_claimed"], summary["delta_claimed"]) == ("inf", 0.0)


def test_the_sweep_columns_follow_the_claimed_form():
    from asyncdp.experiments.sweep import sweep

    df = sweep(lambda: _scenario(ApproxDP(1.0, 1e-3)), {}, runs=2, seed=0)
    assert (df["epsilon_claimed"] == 1.0).all()
    assert all(math.isfinite(v) and v > 0 for v in df["epsilon_accountant"])

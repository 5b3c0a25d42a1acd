"""``assert_private`` decides a pure claim on the pair itself, as the search decides its worst pair: not ``pass``-able.

``UnderDGD`` is the private gradient rule of ``examples/own_paper_private_dgd.py`` (Laplace noise of scale ``b`` on
each release from round 2, the user's lemma ``2 alpha C sqrt(n)`` in L1) adding and declaring ``b / 1.5`` while it
claims the epsilon of ``b``. The truth on the pair ``g = C (1, 1) / sqrt(2)``, ``g' = -g`` of agent 1 (linear costs:
given the past, each of agent 1's releases from round 2 moves by exactly ``alpha (g - g')``, of L1 norm ``2 alpha C
sqrt(2)``, the lemma): a product of Laplace mechanisms, pure epsilon ``(T - 1) * lemma / (b / 1.5) = 1.5 epsilon``
(closed form; attained wherever each release lies beyond both means), so the claim ``epsilon`` is false.

``asyncdp privacy check`` on the pair says ``violation`` (its search's constructed transcript). ``assert_private``
said ``inconclusive``: it replaces the search with :func:`~asyncdp.privacy.properties.decide_pair`, which left a
pure claim to the exact replay of random runs (their largest loss about 1.0 here, the worst transcripts being far
in the tails); with ``allow_inconclusive=True``, as the docs' property of a weak claim uses it, the property passed.
The pair's constructed transcript now decides a pure claim (exact; a correct claim's pair stays ``pass``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import Phase, given, settings

from asyncdp.privacy.properties import PrivacyPropertyError, assert_private
from asyncdp.privacy.strategies import adjacent_scenarios
from asyncdp.privacy.candidate_pairs import candidate_scenarios

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")
_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


@dataclass(frozen=True)
class UnderDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """Adds and declares ``b / factor``; claims the epsilon of ``b`` (PrivateDGD's record, through the MRO)."""

    factor: float = 1.5
    name: ClassVar[str] = "private-dgd-under-test"

    def scale(self) -> float:
        return super().scale() / self.factor


def _pair(factor: float):
    sc = EX["scenario"].replace(algorithm=UnderDGD(rounds=EX["HORIZON"], factor=factor))
    g = np.array([1.0, 1.0]) * EX["scenario"].algorithm.clip / math.sqrt(2)
    return candidate_scenarios(sc, 1, g, -g)


def test_the_pairs_pure_epsilon_is_the_factor_times_the_claim():
    p, _ = _pair(1.5)
    rule = p.algorithm.bind(p.problem)
    lemma = 2 * rule.step * rule.clip * math.sqrt(2)  # ||alpha (g - g')||_1, the lemma's value
    truth = (p.horizon - 1) * lemma / rule.scale()
    assert truth == pytest.approx(1.5 * rule.claimed_privacy(p.horizon)[0], rel=1e-12)


def test_assert_private_refutes_an_under_noised_pure_claim_on_its_pair():
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(*_pair(1.5), runs=200, allow_inconclusive=True)
    report = failure.value.report
    assert report.verdict == "violation"
    assert report.witness["kind"] == "pair" and report.witness["agent"] == 1
    assert 1.0 < report.witness["loss"] <= 1.5 + 1e-9  # an exact loss of the pair, within its pure epsilon
    assert "agent 1 changed" in str(failure.value)


def test_the_correct_claim_on_the_same_pair_passes():
    assert assert_private(*_pair(1.0), runs=200).verdict == "pass"


def test_the_documented_property_of_a_weak_claim_fails_with_a_witness():
    """The docs' property with ``allow_inconclusive=True`` over the class's drawn pairs: the first pair drawn, the
    extremal one along coordinate 0 (``+-C e_0``: pure epsilon ``1.5 / sqrt(2)`` of the claim), is refuted."""
    sc = EX["scenario"].replace(algorithm=UnderDGD(rounds=EX["HORIZON"], factor=1.5))

    @settings(max_examples=5, deadline=None, derandomize=True, database=None, phases=[Phase.generate])
    @given(adjacent_scenarios(sc))
    def prop(pair):
        p, q, _ = pair
        assert_private(p, q, runs=100, allow_inconclusive=True)

    with pytest.raises(PrivacyPropertyError) as failure:
        prop()
    assert failure.value.report.verdict == "violation" and failure.value.report.witness["kind"] == "pair"


@dataclass(frozen=True)
class WarmUpDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """Per-iteration claim ``factor * lemma / b``; plain averaging (no gradient step) before round ``warm``.

    Each round's release given the past is a Laplace mechanism of L1 sensitivity at most the lemma, attained on the
    pair's transcripts once the gradient steps start (``z`` between the two addresses, both clipped gradients of
    norm ``C`` and opposite): the pair's per-iteration epsilon is ``lemma / b``. The ledger's focus round is round 2
    (every round from 2 has the lemma's ratio), where this pair's releases do not differ at all."""

    factor: float = 1.0
    warm: int = 5
    name: ClassVar[str] = "private-dgd-warm-up-per-iteration-test"
    claim_level: ClassVar[str] = "iteration"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.factor * self.lemma_value() / self.scale(), 0.0

    def update(self, state, mixed, t, agents, problem):
        if t < self.warm:
            return {"x": problem.domain.project(mixed["y"])}
        return super().update(state, mixed, t, agents, problem)


def _warm_up_pair(factor: float):
    rule = WarmUpDGD(rounds=EX["HORIZON"], factor=factor)
    return EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule)


def test_a_per_iteration_pure_claim_is_decided_on_the_pairs_largest_round():
    """5% below the pair's per-iteration epsilon: refuted by a round after the warm-up. The pair's constructed loss
    was read in the ledger's focus round only (round 2, loss 0 on this pair): ``inconclusive``, which the weak-claim
    property accepts; the search reads its pairs' largest round, and so does the pair now."""
    p, q = _warm_up_pair(0.95)
    rule = p.algorithm.bind(p.problem)
    truth = rule.lemma_value() / rule.scale()
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(p, q, runs=200, allow_inconclusive=True)
    report = failure.value.report
    assert report.verdict == "violation" and report.witness["kind"] == "pair"
    assert 0.95 * truth < report.witness["loss"] <= truth * (1 + 1e-9)  # one round's exact loss, within the truth


def test_the_correct_per_iteration_claim_on_the_warm_up_pair_passes():
    assert assert_private(*_warm_up_pair(1.0), runs=200).verdict == "pass"

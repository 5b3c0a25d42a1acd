"""A correct per-iteration pure claim is not a violation: the worst pair's loss is read per round.

``PerIterationDGD`` is the private distributed gradient rule of ``examples/own_paper_private_dgd.py`` (Laplace
noise of scale ``b``, the user's lemma ``2 alpha C sqrt(n)`` per release from round 2) with ``claim_level =
"iteration"`` and the claim ``2 alpha C sqrt(n) / b`` (pure): each round's release, given the past, is the
Laplace mechanism on a value of L1 sensitivity ``2 alpha C sqrt(n)`` (the lemma, which the worst-case search and
the prober test), so the claim is exact (Dwork and Roth, 2014, Thm. 3.6), ``1/19`` with 20 rounds.

The worst-case search compared the constructed transcript's loss over the *whole run* (18 releases, ``18/19``)
with this per-iteration epsilon and reported a ``violation`` with confidence 1. The per-iteration claim is now
compared with the largest loss of one round's releases.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from asyncdp.privacy import check_privacy

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")


_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


@dataclass(frozen=True)
class PerIterationDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD claiming ``factor`` times the exact per-iteration epsilon ``lemma / b``."""

    factor: float = 1.0
    name: ClassVar[str] = "private-dgd-per-iteration-test"
    claim_level: ClassVar[str] = "iteration"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.factor * self.lemma_value() / self.scale(), 0.0


def _pair(factor: float) -> tuple[Any, Any]:
    rule = PerIterationDGD(rounds=EX["HORIZON"], factor=factor)
    return EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule)


def test_the_per_iteration_claim_is_exact():
    sc, _ = _pair(1.0)
    alg = sc.algorithm.bind(sc.problem)
    assert alg.lemma_value() == pytest.approx(2 * 0.1 * 1.0 * math.sqrt(2.0))
    assert alg.claimed_privacy(sc.horizon)[0] == pytest.approx(1 / 19)


def test_a_correct_per_iteration_pure_claim_passes():
    report = check_privacy(*_pair(1.0), runs=1000, seed=0)
    assert report.verdict == "pass", report.reasons
    assert report.worst_case_loss <= 1 / 19 * (1 + 1e-6)


def test_a_per_iteration_pure_claim_below_the_truth_is_a_violation():
    """10% below the exact per-iteration epsilon: one round's constructed release loses ``1/19`` given its past."""
    report = check_privacy(*_pair(0.9), runs=1000, seed=0)
    assert report.verdict == "violation", report.reasons

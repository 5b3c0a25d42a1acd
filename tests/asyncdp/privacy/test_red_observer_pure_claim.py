"""``privacy check --observer node:V`` on a pure claim or a claim per iteration: the observer line's verdict.

Truth: node 1 of the 6-node path (Muffliato, sigma 1, values in [0, 1]) combines ``y_0(2) = x_0 + xi_0`` in the
first exchange, so its view of agent 0 is Gaussian with ``mu >= 1``: ``delta(epsilon) > 0`` for every finite
epsilon, so no pure claim ``(epsilon, 0)`` holds against it. The line compared the claim's epsilon with the view's
epsilon at ``--delta`` (4.89 at 1e-6) and printed "the claim (5, 0) holds against this observer".
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import numpy as np

from asyncdp.cli.privacy import _observer_section, observer_claim_line
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.observers import parse_observer
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.problem import Problem


@dataclass(frozen=True)
class _PureClaim(Muffliato):
    """Muffliato, claiming pure DP: false for Gaussian noise."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 5.0, 0.0


def test_a_pure_claim_fails_against_a_node_whose_view_is_gaussian():
    scenario = replace(Muffliato.example_scenario(), algorithm=_PureClaim(sigma=1.0))
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
    args = argparse.Namespace(seed=0, delta=1e-6, runs=10, confidence=0.95)
    text = _observer_section(scenario, adjacent, parse_observer("node:1"), args)
    assert "the claim (5, 0) fails against this observer" in text and "holds" not in text


def test_the_observer_line_reads_the_claims_delta_and_level():
    # pure: holds only for a view that carries nothing
    assert "(5, 0) holds" in observer_claim_line(0.0, 0.0, 1e-6, "5", 5.0, 0.0)
    assert "(5, 0) fails" in observer_claim_line(1e-12, 1e-3, 1e-6, "5", 5.0, 0.0)
    # approximate: the exact epsilon at the claim's delta
    assert "holds" in observer_claim_line(1.0, 4.9, 1e-6, "5", 5.0, 1e-6)
    assert "fails" in observer_claim_line(1.0, 5.1, 1e-6, "5", 5.0, 1e-6)
    # per iteration: the whole view above the claim says nothing about one iteration's part
    line = observer_claim_line(1.0, 5.1, 1e-6, "5", 5.0, 1e-6, "iteration")
    assert "no verdict" in line and "fails" not in line and "holds" not in line
    assert "holds" in observer_claim_line(1.0, 4.9, 1e-6, "5", 5.0, 1e-6, "iteration")

"""A noise-free channel that releases private data: a witness, and a doubt that names the data as a cause.

``GradientReporting`` is Huang et al.'s rule (ICDCN 2015, eq. 5) with a second channel ``g`` declared noise-free
that releases the agent's gradient at its state. Under the rendezvous cost ``||x - a_i||^2`` the gradient
``2 (x - a_0)`` moves with agent 0's address, so the first release of ``g`` tells the two problems apart with
certainty: the privacy loss is infinite and the claim ``epsilon = 1`` is false. The adjacent scenario's noise-free
releases are compared with their values under the scenario's problem; the mismatch was reported as "undeclared
randomness" alone, which points the user at the wrong cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from asyncdp import Huang2015
from asyncdp.algorithms import Channel
from asyncdp.privacy import check_privacy


@dataclass(frozen=True)
class GradientReporting(Huang2015):
    """Huang2015 that also releases ``grad f_i(x_i)`` on a noise-free channel ``g``."""

    name: ClassVar[str] = "huang-gradient-reporting-test"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("g", None))

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        out = super().message(state, t, noise, agents, problem)
        out["g"] = problem.costs.gradient(agents, state["x"], round_index=t)
        return out

    def noise(self, t: int, channel: str) -> Any:
        return super().noise(t, "y") if channel == "y" else None


def test_a_noise_free_channel_of_private_data_is_a_violation_and_the_doubt_names_the_data():
    base = Huang2015.example_scenario(seed=0).replace(horizon=8)
    a = base.algorithm
    scenario = base.replace(algorithm=GradientReporting(epsilon=a.epsilon, c=a.c, q=a.q, p=a.p))
    adjacent = scenario.replace(problem=scenario.problem.adjacent(0, address=[-1.0, -1.0]))
    report = check_privacy(scenario, adjacent, runs=200)
    assert report.verdict == "violation"
    assert report.witness is not None and report.witness["loss"] == float("inf")
    doubt = next(r for e in report.evidence for r in e.reasons if "channel 'g'" in r and "noise-free" in r)
    assert "reads the private data" in doubt, doubt

"""A rule with a noisy channel narrower than its state (a scalar next to a 2-D release) is checked, not an error.

``MonitoredDGD`` is the private gradient rule of ``examples/own_paper_private_dgd.py`` that also releases its
clipped loss, ``v_i = clip(f_i(x_i), 0, B) + Lap(b_v)``, one coordinate (a loss curve the agents report; Laplace
mechanism, Dwork, McSherry, Nissim and Smith, TCC 2006). Its lemma: ``v`` moves by at most ``B`` in every round (a
value clipped to ``[0, B]``), so its 20 releases add ``20 B / b_v = 0.5`` to the example's 1 (basic composition):
the claim ``1.5`` is true. ``HalfLemmaDGD`` claims ``B / 2`` for ``v`` and the composition ``1.25``, which is
false (closed form): for ``f_0 = <g, x>`` and ``f_0' = <-g, x>`` (``||g|| = C``, in the class), given the earlier
releases agent 0's mixed value ``z`` is the same under both, its state is ``z - a g`` or ``z + a g`` and its loss
``<g, z> - a C`` or ``-<g, z> - a C``: clipped, ``B`` and 0 wherever ``<g, z> >= B + a C``, a set of ``z`` the
Laplace noise reaches with positive probability. There the next release of ``v`` moves by ``B``, twice what the
lemma allows.

The sensitivity prober required the probed value to have the state's shape, and the check stopped on both rules
with "rule.update must return shape (2,) for z of shape (2,), got (1,) and (1,)" (exit 2); under deadline timing
on lossy links the worst-case search's kinked pairs then read coordinate 1 of ``v`` (IndexError).

``TwinDGD`` releases only a channel wider than its state, ``y = (x, x) + Lap(2 b)^(2n)``, and mixes the mean of
its two halves: each release moves by twice the example's lemma in L1 and carries twice its noise, so its claim
``epsilon = 1`` is the example's (true). With no channel as wide as the state the kinked pairs have no point to
read a kink from: the search stopped with "generator raised StopIteration".
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp.algorithms import Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.engine.links import ExponentialLatency, LinkModel, Links
from asyncdp.engine.timing import Deadline
from asyncdp.papers import Paper, register
from asyncdp.privacy import check_privacy

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")
B, B_V = 1.0, 40.0
"""The loss's clipping bound and the Laplace scale of channel ``v``."""


@dataclass(frozen=True)
class MonitoredDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD that also releases its clipped loss on a one-coordinate Laplace channel ``v``."""

    name: ClassVar[str] = "private-dgd-monitored-test"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("v", "laplace"))
    lemma_v: ClassVar[float] = B

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        if channel == "y":
            return super().noise(t, channel)
        return NoiseDeclaration("laplace", B_V, 1, self.lemma_v)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        v = np.clip(problem.costs.value(agents, x), 0.0, B)[..., None]
        return {"y": x + self.scale() * noise["y"], "v": v + B_V * noise["v"]}

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return super().claimed_privacy(horizon)[0] + horizon * self.lemma_v / B_V, 0.0


@dataclass(frozen=True)
class HalfLemmaDGD(MonitoredDGD):
    """Believes the clipped loss moves by ``B / 2``."""

    name: ClassVar[str] = "private-dgd-monitored-half-test"
    lemma_v: ClassVar[float] = B / 2


@dataclass(frozen=True)
class TwinDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD releasing its state twice on one channel ``y`` of ``2 n`` coordinates (twice the noise)."""

    name: ClassVar[str] = "private-dgd-twin-test"

    def scale(self) -> float:
        return 2 * super().scale()

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("laplace", self.scale(), 2 * self.dim, 0.0 if t == 1 else 2 * self.lemma_value())

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        return {"y": np.concatenate([x, x], axis=-1) + self.scale() * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = 0.5 * (mixed["y"][..., :self.dim] + mixed["y"][..., self.dim:])
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), self.clip)
        return {"x": problem.domain.project(z - self.step * g)}


def _lemma(rule: type[MonitoredDGD]) -> Any:
    return lambda sc: {"y": EX["lemma"](sc), "v": np.full(sc.horizon, rule.lemma_v)}


@pytest.fixture(autouse=True, scope="module")
def _papers() -> None:
    """The script's records and the two rules' own, registered for this module's tests only (conftest drops them)."""
    example_scripts.register_again(_PAPERS)
    for rule in (MonitoredDGD, HalfLemmaDGD):
        register(Paper(rule.name, (rule,), lemma=_lemma(rule), reference="a test's own lemma",
                       adjacency=EX["adjacency"]), origin=__file__)
    register(Paper(TwinDGD.name, (TwinDGD,), lemma=lambda sc: {"y": 2 * EX["lemma"](sc)},
                   reference="twice the example's lemma", adjacency=EX["adjacency"]), origin=__file__)


def _pair(rule: type[MonitoredDGD]) -> tuple[Any, Any]:
    alg = rule(rounds=EX["HORIZON"])
    return EX["scenario"].replace(algorithm=alg), EX["adjacent"].replace(algorithm=alg)


def test_the_half_lemma_fails_in_closed_form():
    """Agent 0's next clipped loss under the class's pair ``<g, x>``, ``<-g, x>`` from a mixed value with ``<g, z> = 2``
    (the module docstring's formula)."""
    alg = _pair(MonitoredDGD)[0].algorithm
    g = alg.clip * np.array([1.0, 1.0]) / np.sqrt(2.0)
    z = 2.0 * g / (alg.clip ** 2)
    x, x_prime = z - alg.step * g, z + alg.step * g  # the clipped gradients are g and -g
    assert np.clip(g @ x, 0.0, B) - np.clip(-g @ x_prime, 0.0, B) == B > HalfLemmaDGD.lemma_v


def test_a_correct_rule_with_a_scalar_channel_passes():
    report = check_privacy(*_pair(MonitoredDGD), runs=200, seed=0)
    assert report.verdict == "pass", report.reasons
    assert report.epsilon_claimed == pytest.approx(1.5)


def test_a_correct_rule_with_a_scalar_channel_passes_under_deadline_timing_on_lossy_links():
    """The worst-case search's kinked pairs read their kinks from the points ``y`` (``v`` has one coordinate: an
    IndexError stopped the check)."""
    timing = dict(timing=Deadline(missing="stale"), links=Links(LinkModel(latency=ExponentialLatency(0.5), loss=0.2)))
    sc, adj = _pair(MonitoredDGD)
    report = check_privacy(sc.replace(**timing), adj.replace(**timing), runs=200, seed=0)
    assert report.verdict == "pass", report.reasons


def test_a_lemma_too_small_for_the_scalar_channel_is_refuted():
    report = check_privacy(*_pair(HalfLemmaDGD), runs=200, seed=0)
    assert report.verdict == "violation", report.reasons
    # the example's own pair has gradients beyond the class where the prober finds its move of v; the same step on
    # the class's extremal linear pair moves v by B, twice the lemma: the prober's witness, of the class
    w = report.witness
    assert (w["kind"], w["channel"]) == ("sensitivity", "v") and w["pair"].startswith("the class's pair")
    assert HalfLemmaDGD.lemma_v < w["value"] <= B


def test_a_correct_rule_whose_only_channel_is_wider_than_its_state_passes():
    alg = TwinDGD(rounds=EX["HORIZON"])
    report = check_privacy(EX["scenario"].replace(algorithm=alg), EX["adjacent"].replace(algorithm=alg), runs=200,
                           seed=0)
    assert report.verdict == "pass", report.reasons
    assert report.epsilon_claimed == pytest.approx(1.0)

"""A rule that draws its noise from ``numpy.random`` instead of the engine's draws is refused, not refuted.

``OwnNoiseDGD`` is the private distributed gradient rule of ``examples/own_paper_private_dgd.py`` with its
Laplace noise drawn by the rule itself (``numpy.random.Generator.laplace`` at the declared scale), a plausible
slip. Its releases are those of the correct rule (fresh Laplace noise of the declared scale), whose claim holds
(the example's ``pass``): the claim is true. The check replays every release from the state and the engine's
noise (the noise-free value is the R step with zero noise), so for this rule the "noise-free" values are fresh
noise: it reported ``violation`` with a coverage witness (a round-1 release moving by tens where the lemma allows
0), a replay loss above 60 and a prober witness, all false. The check now calls the rule's R and U steps twice on
each agent's initial state and refuses a rule whose output differs (``ScenarioError`` naming the agent, round and
channel).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp.algorithms.clipping import clip_l2
from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import run_engine
from asyncdp.privacy.context import check_deterministic

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")

_RNG = np.random.default_rng(0)


_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


@dataclass(frozen=True)
class OwnNoiseDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD drawing its Laplace noise itself (the declared scale), not from the engine's ``noise``."""

    name: ClassVar[str] = "private-dgd-own-noise-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        return {"y": x + _RNG.laplace(0.0, self.scale(), size=x.shape)}


def test_a_rule_drawing_its_own_noise_is_refused_with_the_agent_round_and_channel():
    rule = OwnNoiseDGD(rounds=EX["HORIZON"])
    with pytest.raises(ScenarioError, match=r"under the scenario, .*agent 0.*round 1.*channel 'y'.*randomness"):
        check_privacy(EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule), runs=50, seed=0)


@dataclass(frozen=True)
class AdjacentOwnNoiseDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD: agent 0 draws Laplace noise of its own on top of the engine's where its gradient's first entry is > 0.

    Agent 0 starts at ``x_0 = 0``: ``grad f_0(x_0) = 2 (x_0 - a_0)`` is ``(-2, -2)`` under the scenario's target
    ``(1, 1)`` and ``(2, 2)`` under the adjacent one's ``(-1, -1)``: in round 1 agent 0 draws under the adjacent
    problem only.
    """

    name: ClassVar[str] = "private-dgd-adjacent-own-noise-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        g = problem.costs.gradient(agents, x, round_index=t)
        up = (g[..., :1] > 0) & (np.reshape(agents, np.shape(agents) + (1,)) == 0)
        return {"y": x + self.scale() * noise["y"] + up * _RNG.laplace(0.0, self.scale(), size=x.shape)}


def test_randomness_drawn_under_the_adjacent_problem_only_is_refused():
    rule = AdjacentOwnNoiseDGD(rounds=EX["HORIZON"])
    sc, adj = EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule)
    x0 = sc.initial_points()[0]
    ups = [s.problem.costs.gradient(0, x0, round_index=1)[0] > 0 for s in (sc, adj)]
    assert list(x0) == [0.0, 0.0] and ups == [False, True]  # the own draw: under the adjacent problem only
    with pytest.raises(ScenarioError, match=r"under the adjacent scenario, .*agent 0 in round 1 .*channel 'y'.*randomness"):
        check_deterministic(adj, rule.bind(adj.problem), run_engine(adj, 1, seed=0), "adjacent scenario")
    # (the scenario's runs reach a positive gradient entry later, so the check refuses it there first)
    with pytest.raises(ScenarioError, match=r"under the (adjacent )?scenario, .*agent 0.*channel 'y'.*randomness"):
        check_privacy(sc, adj, runs=50, seed=0)


@dataclass(frozen=True)
class InPlaceDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """The correct PrivateDGD stepping in place on the mixed value the engine hands its update (a fresh array)."""

    name: ClassVar[str] = "private-dgd-in-place-test"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        z -= self.step * clip_l2(problem.costs.gradient(agents, z, round_index=t), self.clip)
        return {"x": problem.domain.project(z)}


@dataclass(frozen=True)
class TaggedDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """The correct PrivateDGD with state entries numpy cannot test for NaN (a string and ``None``)."""

    name: ClassVar[str] = "private-dgd-tagged-test"

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {**super().initial_state(x0, agents, problem), "phase": "descent", "note": None}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "phase": state["phase"], "note": None}


@pytest.mark.parametrize("cls", [InPlaceDGD, TaggedDGD], ids=["update in place on mixed", "non-numeric entries"])
def test_a_correct_deterministic_rule_is_not_refused(cls):
    """Both rules release what PrivateDGD releases (the example's ``pass``); the determinism check refused the first
    (its two update calls shared one mixed value, stepped twice) and raised a TypeError on the second."""
    rule = cls(rounds=EX["HORIZON"])
    report = check_privacy(EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule), runs=200,
                           seed=0)
    assert report.verdict == "pass", report.reasons


@dataclass(frozen=True)
class LateOwnNoiseDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD drawing its Laplace noise itself (the declared scale) from round ``start`` on, the engine's before."""

    start: int = 2
    name: ClassVar[str] = "private-dgd-late-own-noise-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        if t < self.start:
            return {"y": x + self.scale() * noise["y"]}
        return {"y": x + _RNG.laplace(0.0, self.scale(), size=x.shape)}


@pytest.mark.parametrize("start", [2, 7])
def test_randomness_drawn_from_a_later_round_on_is_refused_with_that_round(start):
    """Its releases are the correct rule's (the claim holds); round 1 is deterministic, so the determinism check of
    round 1 alone let it through and every replay read the fresh draws as a shift of the data: ``violation``."""
    rule = LateOwnNoiseDGD(rounds=EX["HORIZON"], start=start)
    with pytest.raises(ScenarioError, match=rf"under the scenario, message\(\) of agent 0 in round {start} returned "
                                            r"different values on channel 'y'.*randomness"):
        check_privacy(EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule), runs=50, seed=0)


@dataclass(frozen=True)
class RoundReadingDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """The correct PrivateDGD whose state counts the rounds it has seen (read from ``t``) and steps in place."""

    name: ClassVar[str] = "private-dgd-round-reading-test"

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {**super().initial_state(x0, agents, problem), "seen": np.zeros(np.shape(x0)[:-1])}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        seen = state["seen"]
        seen += 1.0  # in place on the state the engine hands it
        assert np.all(seen == t)
        return {**super().update(state, mixed, t, agents, problem), "seen": seen}


@pytest.mark.parametrize("cls", [InPlaceDGD, TaggedDGD, RoundReadingDGD],
                         ids=["update in place on mixed", "non-numeric entries", "state counts rounds in place"])
def test_every_round_of_a_correct_rule_passes_the_determinism_check(cls):
    rule = cls(rounds=EX["HORIZON"])
    sc = EX["scenario"].replace(algorithm=rule)
    for engine in ("batch", "simpy"):
        assert check_deterministic(sc, rule.bind(sc.problem), run_engine(sc, 2, seed=0, engine=engine)) is None

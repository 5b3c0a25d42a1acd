"""A rule whose releases under the adjacent data alone drop rare noise draws is never `pass`.

``FarTruncDGD`` is the private gradient rule of ``examples/own_paper_private_dgd.py`` (Laplace noise of scale ``b``,
pure ``epsilon = 1`` over 20 rounds; it inherits the example's paper record), except that an agent whose data lies
in the far negative corner (its cost's gradient at the origin above 0.95 in both coordinates: agent 0's address
``(-1, -1)`` of the adjacent problem, no agent of the scenario's) drops a standard draw beyond ``|z| > K``,
``K = 9.2``: that coordinate is released at its noise-free value ("noise outliers are dropped").

Independent truth (closed form): under ``P'`` each of agent 0's 40 released coordinates (20 rounds, 2 coordinates)
equals its noise-free value with probability ``e^-K`` (standard Laplace draws, independent), so some release of a
run does with probability ``1 - (1 - e^-K)^40 = 0.40%``. That value is the adjacent rule's noise-free value, which
an observer computes from the earlier releases (round 1's is the public ``x(0)``). Under ``P`` a coordinate equals
it with probability 0 (a continuous Laplace draw must hit one point). So ``delta(epsilon) >= 0.004`` for every
``epsilon``: the pure claim ``(1, 0)`` is false.

The check compared the scenario's releases with their engine draws and probed the R step under both problems with
one standard draw per run and coordinate (shared by the rounds): under ``P'`` that tests 2,000 draws of agent 0,
none beyond ``K`` on most seeds, while the adjacent runs released 40,000. It said ``pass`` (seeds 0, 1 and 3). The
adjacent scenario's releases are now compared with their draws as well.

``FarTagDGD`` keeps its noise but sends its round ``t`` on a public channel ``c``, as ``t + 1e-11`` in a round
where a far agent's draw is beyond ``K`` (below the replay's matching tolerance ``1e-9 (1 + t)``): under ``P'`` some
round does in 0.40% of the runs (the same closed form), under ``P`` never, so again ``delta(epsilon) >= 0.004``.
The scenario's noise-free releases were compared with their replayed values to round-off, the adjacent scenario's
only to that tolerance: ``pass``. They are now compared as the scenario's. ``FarUlpDGD`` moves the tag by one
floating-point spacing, within the round-off a correct rule may show: still ``pass`` (a known limitation, xfail).
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
from asyncdp.privacy.behavior import run_engine

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")
K = 9.2


_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


@dataclass(frozen=True)
class FarTruncDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD whose agents in the far negative corner drop their noise beyond ``|z| > K``."""

    name: ClassVar[str] = "private-dgd-far-trunc-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        far = np.all(problem.costs.gradient(agents, np.zeros_like(x)) > 0.95, axis=-1, keepdims=True)
        z = np.where(far & (np.abs(noise["y"]) > K), 0.0, noise["y"])
        return {"y": x + self.scale() * z}


@dataclass(frozen=True)
class FarTagDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD that also sends its round on a public channel, off by ``1e-11`` after a far agent's outlier draw."""

    name: ClassVar[str] = "private-dgd-far-tag-test"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("c"))

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        far = np.all(problem.costs.gradient(agents, np.zeros_like(x)) > 0.95, axis=-1, keepdims=True)
        tag = np.any(far & (np.abs(noise["y"]) > K), axis=-1, keepdims=True)
        return {"y": x + self.scale() * noise["y"], "c": np.where(tag, self.tagged(t), float(t))}

    def tagged(self, t: int) -> float:
        """The round as released after a far agent's outlier draw."""
        return t + 1e-11


@dataclass(frozen=True)
class FarUlpDGD(FarTagDGD):
    """FarTagDGD whose tagged round is one floating-point spacing above ``t`` (within the round-off allowance)."""

    name: ClassVar[str] = "private-dgd-far-ulp-test"

    def tagged(self, t: int) -> float:
        return float(np.nextafter(float(t), np.inf))


def _pair(rule_type: type = FarTruncDGD) -> tuple[Any, Any]:
    rule = rule_type(rounds=EX["HORIZON"])
    return EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule)


def test_the_claim_is_false_in_closed_form():
    sc, adj = _pair()
    alg = sc.algorithm.bind(sc.problem)
    assert alg.claimed_privacy(sc.horizon) == (1.0, 0.0)
    far = [np.all(p.costs.gradient(np.arange(5), np.zeros((5, 2))) > 0.95, axis=-1) for p in (sc.problem, adj.problem)]
    assert not far[0].any() and far[1].tolist() == [True, False, False, False, False]
    per_run = 1.0 - (1.0 - math.exp(-K)) ** (sc.horizon * 2)
    assert per_run == pytest.approx(0.0040, abs=5e-5)
    # the check's adjacent runs hold such draws of agent 0 (so the event is there to be seen)
    runs = run_engine(adj, 1000, seed=0, side=1)
    assert runs.noise is not None and int((np.abs(runs.noise["y"][:, :, 0]) > K).sum()) >= 1


def test_releases_that_drop_rare_draws_under_the_adjacent_data_are_not_passed():
    report = check_privacy(*_pair(), runs=1000, seed=0)
    assert report.verdict != "pass", report.reasons
    assert any(r.startswith("the adjacent scenario's runs: noise draws:") for r in report.reasons), report.reasons


def test_a_public_channel_moved_below_the_matching_tolerance_under_the_adjacent_data_is_not_passed():
    assert 1e-11 < 1e-9 * (1 + 1) and 20 + 1e-11 != 20.0  # below the tolerance, and a different number
    report = check_privacy(*_pair(FarTagDGD), runs=1000, seed=0)
    assert report.verdict != "pass", report.reasons
    assert any(r.startswith("the adjacent scenario's runs: channel 'c'") for r in report.reasons), report.reasons


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known limitation: a noise-free release is compared with its replayed value "
                   "only to the round-off a correct rule may show (2 t N spacings, roundoff._gap_allowance); a value "
                   "moved by less on rare draws under one side only is not seen (nor on the scenario's side)")
def test_a_public_channel_moved_within_the_roundoff_allowance_under_the_adjacent_data_is_not_passed():
    """The same closed form as ``FarTagDGD`` (``delta >= 0.004``): the tag is a different float, 1 spacing of ``t``."""
    assert all(FarUlpDGD.tagged(None, t) != float(t) for t in range(1, 21))  # type: ignore[arg-type]
    report = check_privacy(*_pair(FarUlpDGD), runs=1000, seed=0)
    assert report.verdict != "pass", report.reasons

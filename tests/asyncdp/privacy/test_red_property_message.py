"""A failed privacy property names what differs between the pair's costs: the drawn pair's scenarios print alike.

Hypothesis reports a failing pair by its repr, in which a cost family names only its size
(``LinearOverride(num_agents=4, dim=2)`` for both ``P`` and ``P'``), and ``PrivacyPropertyError`` named the
changed agent but not the costs: the failing pair could not be read off the report. Its message now has a
``costs:`` line with the parts of the two families' descriptions (``to_dict``) that differ.
"""

from __future__ import annotations

import sys

import numpy as np

import pytest

import topology
from accounting.errors import AdjacencyError
from asyncdp import rendezvous_problem
from asyncdp.papers import GradientClass
from asyncdp.privacy.properties import PrivacyPropertyError, assert_private
from asyncdp.privacy.kinked import KinkedOverride
from asyncdp.privacy.candidate_pairs import candidate_scenarios, pair_with_costs
from asyncdp.problems.costs import LinearOverride

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py


class LongStepDGD(noisy_dgd.NoisyDGD):
    """Agent 2's step three times the lemma's from round 2 on (a rule that treats one agent differently)."""

    name = "test-red-property-message-long-step"

    def update(self, state, mixed, t, agents, problem):
        return noisy_dgd.scaled_step(mixed, t, agents, problem, agent=2, factor=3.0, since=2)


@pytest.fixture(scope="module")
def base():
    with noisy_dgd.registered((LongStepDGD,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        yield noisy_dgd.rendezvous_pair(LongStepDGD(), topology.static(noisy_dgd.ring(4)), 6)[0]


def test_the_message_names_the_two_gradients(base):
    p, q = candidate_scenarios(base, 2, [0.6, 0.8], [-0.6, 0.2])
    assert repr(p.problem.costs) == repr(q.problem.costs)  # why the message must say it
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(p, q, runs=50)
    assert 'costs: {"gradient": [0.6, 0.8]} vs {"gradient": [-0.6, 0.2]}' in str(failure.value)


def test_the_message_names_the_moved_address(base):
    q = base.replace(problem=base.problem.adjacent(2, address=[0.5, 0.5]))
    own = base.problem.costs.addresses[2].tolist()
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(base, q, runs=50)
    assert f'costs: {{"addresses": {{"[2]": {own}}}}} vs {{"addresses": {{"[2]": [0.5, 0.5]}}}}' in str(failure.value)


def test_an_adjacent_scenario_of_another_size_names_both_sizes(base):
    """A pair of 4 and 5 agents: the error says so (it said only that the sizes must agree)."""
    five = base.replace(problem=rendezvous_problem(np.zeros((5, 2)), low=-50.0, high=50.0),
                        topology=topology.static(noisy_dgd.ring(5)))
    with pytest.raises(AdjacencyError, match="got 4 agents in dimension 2 vs 5 in dimension 2"):
        assert_private(base, five, runs=10)


def test_a_family_that_cannot_describe_itself_still_reports_the_verdict(base, monkeypatch):
    """A user's cost family whose ``to_dict`` raises: the message names that error, the failure stays the check's."""
    p, q = candidate_scenarios(base, 2, [0.6, 0.8], [-0.6, 0.2])

    def broken(self):
        raise NotImplementedError("no description")

    monkeypatch.setattr(type(p.problem.costs), "to_dict", broken)
    with pytest.raises(PrivacyPropertyError, match="(?s)violation.*costs: not described \\(LinearOverride.to_dict "
                                                   "raised NotImplementedError\\('no description'\\)\\)"):
        assert_private(p, q, runs=50)


def test_two_families_of_different_kinds_show_their_own_fields_not_the_shared_base(base):
    """A linear against a kinked cost: the kinked side's fields come first, not cut off after the shared base."""
    p, q = pair_with_costs(base, lambda costs, build: build(costs), lambda c: LinearOverride(c, 2, [0.6, 0.8]),
                           lambda c: KinkedOverride(c, 2, 0, 0.3, 1.0, 0.5, 1.0))
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(p, q, runs=50)
    assert ('costs: {"type": "LinearOverride", "gradient": [0.6, 0.8]} vs {"type": "KinkedOverride", "axis": 0, '
            '"position": 0.3, "scale": 1.0, "width": 0.5, "sign": 1.0}') in str(failure.value)


def test_descriptions_that_do_not_tell_the_pair_apart_are_said_to_be_alike(base, monkeypatch):
    p, q = candidate_scenarios(base, 2, [0.6, 0.8], [-0.6, 0.2])
    monkeypatch.setattr(type(p.problem.costs), "to_dict", lambda self: {"type": "LinearOverride"})
    with pytest.raises(PrivacyPropertyError, match="costs: their descriptions \\(LinearOverride.to_dict\\) are alike"):
        assert_private(p, q, runs=50)


def test_a_long_vector_is_shown_by_its_differing_entries(base, monkeypatch):
    """A description holding 10^5 numbers that differ in two entries far apart: the line names those entries (it
    printed the vector's first 300 characters, which did not reach them, after a JSON round trip of the whole)."""
    p, q = candidate_scenarios(base, 2, [0.6, 0.8], [-0.6, 0.2])
    data = np.linspace(0.0, 1.0, 100_000)
    other = data.copy()
    other[[5, 70_000]] = [-1.0, -2.0]
    monkeypatch.setattr(type(p.problem.costs), "to_dict",
                        lambda self: {"data": data if self is p.problem.costs else other})
    with pytest.raises(PrivacyPropertyError) as failure:
        assert_private(p, q, runs=50)
    line = next(x for x in str(failure.value).splitlines() if x.startswith("costs:"))
    assert line == (f'costs: {{"data": {{"[5]": {float(data[5])!r}, "[70000]": {float(data[70_000])!r}}}}} vs '
                    '{"data": {"[5]": -1.0, "[70000]": -2.0}}')

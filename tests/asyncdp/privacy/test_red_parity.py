"""What the check does for a seed paper's own rule it must not skip for a user's rule that only inherits its record.

``TripleMuffliato`` subclasses Muffliato and changes the message step: round 1 releases ``3 x_i + sigma xi``
instead of ``x_i + sigma xi``. It finds Muffliato's record through its MRO, so the check composed its ledger with
Muffliato's *published* lemma (sensitivity: the domain's diameter) and, Muffliato's record declaring no adjacency
class, skipped the worst-case search without a doubt (a published lemma was trusted), so a user's pair that moves
the value a little passed every behavioural test. Muffliato's record now declares its value class, whose pair
0 vs 1 shows round 1's release moving 3 times the lemma's sensitivity (a witness).

Independent truth (closed form): Muffliato's adjacency is two values anywhere in the domain ``[0, 1]``. For
``x_0 = 0`` vs ``x_0' = 1`` agent 0's round-1 release is ``N(3 x_0, 1)``: a Gaussian mechanism with ``mu = 3``;
every later release is a noise-free function of round 1's releases (post-processing). Its exact
``(epsilon, 1e-6)`` curve gives ``epsilon = 18.16``, above the claimed 14.82 (Muffliato's RDP conversion for
``mu = 1``). The claim is false; the check said ``pass``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from asyncdp.papers import find_registered
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy import check_privacy




@dataclass(frozen=True)
class TripleMuffliato(Muffliato):
    """Muffliato whose round-1 message carries three times the private value."""

    name: ClassVar[str] = "test-triple-muffliato"

    def message(self, state: Any, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        s = self.noise_scale(t)
        x = 3.0 * state["x"] if t == 1 else state["x"]
        return {"y": x + s * noise["y"] if s else x.copy()}


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of the Gaussian mechanism with shift/sigma ``mu`` at ``delta`` (Balle and Wang 2018)."""
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 200)


def _pair(rule: type) -> tuple[Any, Any]:
    base = Muffliato.example_scenario()
    scenario = base.replace(algorithm=rule(sigma=1.0))
    p = scenario.problem
    return scenario, scenario.replace(problem=p.adjacent(0, address=np.asarray(p.costs.addresses[0]) + 0.05))


def test_a_subclass_changing_the_message_does_not_pass_on_the_inherited_published_lemma():
    scenario, adjacent = _pair(TripleMuffliato)
    eps_claimed, delta = scenario.algorithm.bind(scenario.problem).claimed_privacy(scenario.horizon)
    assert _gaussian_epsilon(3.0, delta) > eps_claimed  # the truth: x_0 = 0 vs 1 breaks the claim
    report = check_privacy(scenario, adjacent, runs=200, search_examples=0)
    # Muffliato's value class (one agent's value anywhere in [0, 1]): the pair 0 vs 1 moves round 1's release by 3
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert (w["kind"], w["against"], w["round"], w["ratio"]) == ("sensitivity", "lemma", 1, pytest.approx(3.0))
    assert "inherited by the subclass TripleMuffliato" in report.sensitivity_source
    assert report.theorem.endswith("(the theorem of paper 'muffliato' for its rule; TripleMuffliato is a subclass of "
                                   "it, which it need not cover)")


def test_the_seed_rule_itself_keeps_its_pass():
    scenario, adjacent = _pair(Muffliato)
    eps_claimed, delta = scenario.algorithm.bind(scenario.problem).claimed_privacy(scenario.horizon)
    assert _gaussian_epsilon(1.0, delta) <= eps_claimed
    assert check_privacy(scenario, adjacent, runs=200, search_examples=0).verdict == "pass"


def test_published_for_is_the_rule_not_its_subclass():
    found = find_registered(TripleMuffliato)
    assert found.published and found.paper.name == "muffliato"
    assert found.published_for(Muffliato) and not found.published_for(TripleMuffliato(sigma=1.0))



def test_the_observer_upper_bound_of_a_subclass_says_it_rests_on_the_inherited_lemma():
    """``TripleMuffliato`` is not the verified affine rule, so an observer gets the eavesdropper's composition bound
    with Muffliato's lemma, ``D_2 = 2 diam^2 / 2 = 1``, labelled an upper bound; the truth for node 1 (agent 0's
    neighbour on the path) is at least the divergence of agent 0's round-1 release, ``N(3 x_0, 1)`` for ``x_0 = 0``
    vs ``1``: ``D_2 = 2 * 3^2 / 2 = 9``. The figure now says what it rests on."""
    from asyncdp.privacy.observers import pairwise_figures

    scenario, _ = _pair(TripleMuffliato)
    fig = pairwise_figures(scenario, "node:1", sources=[0])
    assert fig.rows[0].kind == "upper bound" and fig.rows[0].renyi < 9.0  # the lemma's bound, below the truth
    assert any("rests on the lemma of paper 'muffliato' inherited by the subclass TripleMuffliato" in n
               for n in fig.notes)

"""A paper's pairwise claim verified for an observer's pairs (``privacy check --observer node:v``).

Closed forms used below (alpha = 2, sigma = 1, sensitivity 1, so the full local release is
``alpha / (2 sigma^2) = 1``):

* 6-node path, lockstep: node 5 receives ``x_4 + xi_4`` (the first exchange) and then ``W^t`` rows of
  the noisy inputs; with T = 3 gossip steps its view determines ``x_u + xi_u`` for ``u = 1..4``
  (see the module docstring of ``tests/accounting/network/test_muffliato.py``): loss 1, while the
  authors' per-pair value from ``u = 1`` is ``1/191`` (the claim is too small).
* Complete graph ``K_4``: every observer receives ``x_u + xi_u`` from every ``u`` in the first exchange
  (loss 1); the authors' value is ``min(1, 3 neighbours x T steps x 1/4) = 1`` for ``T >= 2``
  (``W = J/4``, each ``M_t[w, u] / ||M_t[w, :]|| = 1/2``): the claim is exactly right.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import networkx as nx
import pytest

from asyncdp.cli import main
from asyncdp.engine.timing import Async, Lockstep
from asyncdp.errors import ScenarioError
from asyncdp.privacy.observer_claim import check_observer_claim

from .test_observers import _scenario


def test_too_small_claim_is_a_violation_with_pair_and_round():
    sc = _scenario(nx.path_graph(6), 5, static=False)  # noising round, first exchange, 3 gossip steps
    r = check_observer_claim(sc, "node:5")
    assert r is not None and r.verdict == "violation" and r.method == "exact" and r.confidence == 1.0
    by_u = {f.u: f for f in r.failures}
    assert 1 in by_u and by_u[1].distance == 4
    assert by_u[1].exact == pytest.approx(1.0, abs=1e-9) and by_u[1].claimed == pytest.approx(1 / 191, rel=1e-9)
    assert by_u[1].round is not None and 2 <= by_u[1].round <= 5


def test_correct_claim_passes_on_the_complete_graph():
    sc = _scenario(nx.complete_graph(4), 4, static=False)
    for obs in ("node:2", "nodes:0,3"):
        r = check_observer_claim(sc, obs)
        assert r is not None and r.verdict == "pass" and r.failed == 0, r.to_table()
        assert r.pairs == 3 * len(obs.split(":")[1].split(","))


def test_sampled_schedules_under_lossy_links_and_async():
    # random schedules: a violation rests on a lower confidence bound of the schedule-averaged divergence
    # (Jensen + Hoeffding), a pass on the upper confidence bound. Lossy lockstep on the path: most runs lose
    # none of node 5's inputs and it learns x_1 + xi_1 (loss 1) against the claimed 1/191
    small = _scenario(nx.path_graph(6), 5, static=False, timing=Lockstep(missing="renormalize"), loss=0.1, seed=1)
    r = check_observer_claim(small, "node:5", runs=40, confidence=0.9)
    assert r is not None and r.method == "sampled schedules" and r.runs == 40 and r.confidence == 0.9
    assert r.verdict == "violation" and r.failures
    f = r.failures[0]
    assert f.exact > f.claimed and f.round is not None
    complete = _scenario(nx.complete_graph(4), 4, static=False, timing=Async(), loss=0.2, seed=1)
    ok = check_observer_claim(complete, "node:1", runs=10)
    assert ok is not None and ok.verdict != "violation" and ok.failed == 0


def test_no_claim_check_for_the_eavesdropper_or_a_link_and_bad_input():
    sc = _scenario(nx.path_graph(4), 4, static=False)
    assert check_observer_claim(sc, "eavesdropper") is None and check_observer_claim(sc, "link:0,1") is None
    with pytest.raises(ScenarioError, match="confidence"):
        check_observer_claim(sc, "node:1", confidence=1.0)
    lossy = _scenario(nx.path_graph(4), 4, static=False, loss=0.3)
    with pytest.raises(ScenarioError, match="runs"):
        check_observer_claim(lossy, "node:1", runs=1)


SCRIPT = """
from dataclasses import replace
import networkx as nx
import numpy as np
from accounting.network.muffliato_gossip import hamilton_weights
from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Lockstep
from asyncdp.papers.muffliato.rule import Muffliato, muffliato_topology
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario

graph = nx.{graph}
values = np.linspace(0.1, 0.9, graph.number_of_nodes())[:, None]
scenario = Scenario(Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values)),
                    muffliato_topology(hamilton_weights(graph)), Muffliato(sigma=1.0), horizon={horizon}, seed=0,
                    timing=Lockstep(), links=Links(LinkModel()))
changed = values.copy()
changed[0] = 1.0 - changed[0]
adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(changed)))
"""


@pytest.mark.parametrize("graph, horizon, expected", [("path_graph(6)", 5, "violation"),
                                                      ("complete_graph(4)", 4, "pass")])
def test_cli_check_reports_the_pairwise_claim_in_text_and_json(tmp_path: Path, capsys, graph, horizon, expected):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT.format(graph=graph, horizon=horizon))
    out = tmp_path / "r.json"
    code = main(["privacy", "check", str(script), "--runs", "60", "--search-examples", "0", "--observer", "node:3",
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert "pairwise claim for observer node:3 (order 2" in text and f"): {expected}:" in text
    data = json.loads(out.read_text())
    pc = data["pairwise_claim"]
    assert pc["verdict"] == expected and pc["method"] == "exact" and pc["confidence"] == 1.0
    if expected == "violation":
        assert code == 1 and data["verdict"] == "violation" and "witness u=" in text
        w = pc["witnesses"][0]
        assert w["v"] == 3 and w["value"] > w["claimed"] and w["round"] is not None and not math.isnan(w["value"])
    else:
        assert data["verdict"] == data["verdict_without_pairwise_claim"] and pc["failed"] == 0


def test_a_rule_that_is_not_affine_leaves_the_claim_inconclusive_with_the_reason():
    import numpy as np

    from asyncdp.papers.muffliato.rule import Muffliato

    class ClippedMuffliato(Muffliato):
        def message(self, state, t, noise, agents, problem):
            out = super().message(state, t, noise, agents, problem)
            return {"y": np.clip(out["y"], 0.0, 1.0)}

    ClippedMuffliato.__module__ = Muffliato.__module__  # the paper's record (and its pairwise claim) applies
    from dataclasses import replace

    sc = _scenario(nx.path_graph(5), 4, static=False)
    clipped = replace(sc, algorithm=ClippedMuffliato(sigma=1.0))
    r = check_observer_claim(clipped, "node:4")
    assert r is not None and r.verdict == "inconclusive" and r.failed == 0
    assert "not affine in the noise" in r.reason and "does not respond linearly" in r.reason

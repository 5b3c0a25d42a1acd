"""Red team: Muffliato's pairwise claim on a topology that is not one fixed gossip matrix from round 2 on.

Complete graph on 6 nodes (Hamilton weights ``W = 1/6`` everywhere), rounds: the identity (local noising), ``W``
(the first exchange), ``W`` (one gossip step), then the identity up to horizon 8 (idle rounds: no link, no
message, plain gossip leaves every state as it is). The run is the paper's protocol with one gossip step. Every
node is a neighbour of every other and receives its raw noisy value in the first exchange: the exact loss of
every pair is the local budget 1, above the authors' value for one step, 5/6. The claim was evaluated at
``horizon - 2 = 6`` steps of ``W`` (capped at 1): the idle rounds were counted as steps and the check passed.
The authors' values describe ``T`` steps of one fixed ``W``: on another topology there is no claim to verify.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import topology
from accounting.network.muffliato import authors_pairwise_loss
from accounting.network.muffliato_gossip import hamilton_weights
from asyncdp.errors import TopologyMismatchError
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.network import leakage_rows, pairwise_claim_of
from asyncdp.privacy.observer_claim import check_observer_claim
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario


def _idle_after_one_step() -> Scenario:
    w = hamilton_weights(nx.complete_graph(6)).toarray()
    rounds = {2: w, 3: w}
    seq = topology.generated(6, lambda t: rounds.get(t, np.eye(6)))
    values = np.random.default_rng(0).uniform(0.0, 1.0, size=(6, 1))
    return Scenario(Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values)), seq, Muffliato(sigma=1.0),
                    horizon=8, seed=0)


def test_idle_rounds_are_not_counted_as_gossip_steps_of_the_papers_claim():
    sc = _idle_after_one_step()
    w = sp.csr_array(sc.topology.weights(2))
    assert authors_pairwise_loss(w, 0, 1)[1] == pytest.approx(5 / 6)  # the paper's value for the one step run
    row = next(iter(leakage_rows(sc, observers=[0])))
    assert row.kind == "exact" and row.values[1] == pytest.approx(1.0)  # above it
    with pytest.raises(TopologyMismatchError, match="round 4 uses another matrix"):
        pairwise_claim_of(sc)
    result = check_observer_claim(sc, "node:0", find_rounds=False)
    assert result.verdict == "inconclusive" and "round 4" in result.reason, result.to_table()


SCRIPT = """
import networkx as nx, numpy as np, topology
from accounting.network.muffliato_gossip import hamilton_weights
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario
w = hamilton_weights(nx.complete_graph(6)).toarray()
rounds = {2: w, 3: w}
seq = topology.generated(6, lambda t: rounds.get(t, np.eye(6)))
problem = Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(np.linspace(0.1, 0.9, 6)[:, None]))
scenario = Scenario(problem, seq, Muffliato(sigma=1.0), horizon=8, seed=0)
"""


def test_the_network_command_says_why_the_papers_claim_is_not_checked(tmp_path, capsys):
    from asyncdp.cli import main

    script = tmp_path / "idle.py"
    script.write_text(SCRIPT)
    code = main(["privacy", "network", str(script), "--out", str(tmp_path / "net")])
    text = capsys.readouterr().out
    assert code == 3 and "inconclusive: not checked" in text and "round 4 uses another matrix" in text, text

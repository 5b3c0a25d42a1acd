"""Red team: what the observer report says when the pairwise claim is not checked, for colluding observers, and
for a loss the model computes above the bound every view obeys.

* Muffliato on a topology that is not one fixed gossip matrix (idle rounds after one gossip step): the paper states
  no pairwise claim for the run (``TopologyMismatchError``). The report showed ``alpha`` as NaN (``"nan"`` in
  ``--json``), "0 of 5 pairs above it" and, under random timing, "sampled schedules: 0 runs": there is no order, no
  pair was checked and no run was made.
* ``nodes:S``: the claim is checked member by member (the docs say so); the table line did not.
* ``pairwise_figures`` ran seed 0 by default, not the scenario's seed.
* A loss computed above the bound every view obeys was printed "D_alpha=inf [lower estimate]".
"""

from __future__ import annotations

import json

import networkx as nx

from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Lockstep
from asyncdp.privacy.observer_claim import check_observer_claim
from asyncdp.privacy.observers import pairwise_figures

from .test_observers import _scenario
from .test_red_faint_link import _faint_path
from .test_red_pairwise_scope import _idle_after_one_step


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_a_claim_the_paper_does_not_state_for_the_run_has_no_order_and_no_runs():
    sc = _idle_after_one_step()
    for scenario in (sc, sc.replace(timing=Lockstep(missing="renormalize"), links=Links(LinkModel(loss=0.05)))):
        r = check_observer_claim(scenario, "node:0", find_rounds=False)
        assert r.verdict == "inconclusive" and r.alpha is None and r.runs == 0 and not r.checked
        table = r.to_table()
        assert "nan" not in table and "0 runs" not in table and "0 of 5 pairs" not in table, table
        assert "no Renyi order" in table and "its 5 pairs not checked [no run]" in table, table
        data = _strict(json.dumps(r.to_dict(), allow_nan=False))
        assert data["alpha"] is None and data["runs"] == 0 and data["checked"] is False
        assert "round 4 uses another matrix" in data["reason"] and "no Renyi order" in data["reason"]


def test_a_colluding_set_is_said_to_be_checked_member_by_member():
    sc = _scenario(nx.complete_graph(4), 4, static=False)
    joint = check_observer_claim(sc, "nodes:0,3").to_table().splitlines()[0]
    assert "checked member by member" in joint and "not the 2 members' joint view" in joint, joint
    single = check_observer_claim(sc, "node:2").to_table().splitlines()[0]
    assert "member by member" not in single, single


def test_pairwise_figures_run_the_scenarios_seed_by_default():
    # lossy links: the realized schedule depends on the seed. The default ran seed 0 whatever the scenario's seed,
    # so node 5's figures were another schedule's (loss 1 from u = 2 under seed 0, 0.8 on the scenario's seed 5)
    sc = _scenario(nx.path_graph(6), 5, static=False, timing=Lockstep(missing="renormalize"), loss=0.3, seed=5)
    default = [r.renyi for r in pairwise_figures(sc, "node:5").rows]
    assert default == [r.renyi for r in pairwise_figures(sc, "node:5", seed=5).rows]
    assert default != [r.renyi for r in pairwise_figures(sc, "node:5", seed=0).rows]


FAINT_SCRIPT = """
from dataclasses import replace
import numpy as np
from asyncdp.papers.muffliato.rule import Muffliato, muffliato_topology
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario
w = np.array([[1.0 - 1e-17, 1e-17, 0.0], [1e-17, 0.5 - 1e-17, 0.5], [0.0, 0.5, 0.5]])
values = np.array([[0.2], [0.5], [0.9]])
scenario = Scenario(Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values)), muffliato_topology(w),
                    Muffliato(sigma=1.0), horizon=4, seed=0)
changed = values.copy()
changed[0] = 1.0
adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(changed)))
"""


def test_a_loss_above_the_structural_bound_is_reported_as_that_bound_not_as_a_lower_estimate(tmp_path, capsys):
    # the faint link of test_red_faint_link: node 2's computed loss from node 0 is inf (the shift outside the
    # numerical range of a view with a direction at 1e-17). The observer section printed "D_alpha=inf [lower
    # estimate]"; every view of the verified structure leaks at most alpha Delta^2 / (2 sigma^2) = 1, which holds
    from asyncdp.cli import main

    fig = pairwise_figures(_faint_path(), "node:2", sources=[0, 2])
    row, own = fig.rows
    assert row.kind == "structural bound" and row.renyi == 1.0 and "computed inf" in row.reason, fig.to_table()
    assert own.kind == "exact" and own.renyi == float("inf")  # node 2 holds its own datum: a true infinity
    lossy = _faint_path().replace(timing=Lockstep(missing="renormalize"), links=Links(LinkModel(loss=0.05)))
    (avg,) = pairwise_figures(lossy, "node:2", sources=[0], runs=3).rows  # was an "exact" inf over schedules
    assert avg.kind == "structural bound" and avg.renyi == 1.0, avg
    script = tmp_path / "faint.py"
    script.write_text(FAINT_SCRIPT)
    out = tmp_path / "r.json"
    main(["privacy", "check", str(script), "--runs", "40", "--search-examples", "0", "--observer", "node:2",
          "--json", str(out)])
    text = capsys.readouterr().out
    assert "D_alpha <= 1  eps <= " in text and "D_alpha=inf" not in text, text
    data = _strict(out.read_text())
    assert data["observer"]["rows"][0]["kind"] == "structural bound" and data["observer"]["rows"][0]["renyi"] == 1.0

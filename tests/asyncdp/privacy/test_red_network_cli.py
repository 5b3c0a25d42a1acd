"""Red team: ``asyncdp privacy network``'s exit code when the paper's pairwise claim is not checked, and its JSON.

The epilog says exit 0 means "done, and the pairwise claim holds or there is none". Muffliato's example
scenario (6-node path, sigma 1, values in [0, 1]) states a pairwise claim of order 2 that is false: node 1
receives agent 3's noisy value through agent 2 in the gossip steps, an exact loss of 1 (the local budget)
against the claimed 0.79 (``--alpha 2`` exits 1 with that witness; the test reads the same verdict from
:func:`~asyncdp.privacy.observer_claim.check_observer_claim`). With ``--alpha 3`` the matrix is of another
order, the claim was not checked, and the command exited 0: the code said the false claim holds.
"""

from __future__ import annotations

import json

from asyncdp.cli import main
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.network import leakage_rows
from asyncdp.privacy.network_outputs import write_leakage
from asyncdp.privacy.observer_claim import check_observer_claim

from .test_red_faint_link import _faint_path

SCRIPT = """
from asyncdp.papers.muffliato.rule import Muffliato
scenario = Muffliato.example_scenario()
"""


def test_a_claim_of_another_order_than_the_matrix_is_not_checked_and_not_passed(tmp_path, capsys):
    script = tmp_path / "muff.py"
    script.write_text(SCRIPT)
    truth = check_observer_claim(Muffliato.example_scenario(), "node:1", find_rounds=False)
    assert truth.verdict == "violation" and truth.alpha == 2.0  # the claim is false (exact, order 2)
    code = main(["privacy", "network", str(script), "--out", str(tmp_path / "a3"), "--alpha", "3"])
    text = capsys.readouterr().out
    assert code == 3, text
    assert "pairwise claim: inconclusive: not checked" in text and "rerun with --alpha 2" in text, text


def test_an_infinite_loss_is_written_as_a_string_in_the_by_distance_curve(tmp_path):
    """The faint-link path (tests/asyncdp/privacy/test_red_faint_link.py) on the engine schedule's path: node 2's
    computed loss from agent 0 is an infinity (a numerical artifact, labelled a lower estimate). The rows wrote it
    as ``"inf"``, but the loss-against-distance curve's mean and max at distance 2 were written as ``Infinity``,
    which no strict JSON reader accepts."""
    sc = _faint_path()
    rows = write_leakage(sc, leakage_rows(sc, fast=False), tmp_path, plot=False)
    assert rows[2].values[0] == float("inf")

    def refuse(name: str) -> None:
        raise ValueError(f"non-strict JSON constant {name}")

    data = json.loads((tmp_path / "leakage.json").read_text(), parse_constant=refuse)
    assert data["by_distance"][1] == {"distance": 2, "mean": "inf", "max": "inf", "pairs": 2}


def test_the_pairwise_claims_json_names_its_form_beside_method_and_confidence():
    """A witness's JSON gave the method and the confidence but not the claim's form (the central witnesses do)."""
    r = check_observer_claim(Muffliato.example_scenario(), "node:1", find_rounds=False).to_dict()
    assert (r["claim_form"], r["alpha"], r["method"], r["confidence"]) == ("renyi", 2.0, "exact", 1.0)
    assert r["witnesses"]


def test_a_sampled_witness_round_is_a_round_of_the_run_not_a_global_step():
    """An asynchronous run's schedule is re-indexed in global steps (``N T`` of them, one combination each); the
    witness's first round was that step: "from round 40" on a run of 10 rounds (6 agents, 60 steps). It is now the
    round of the message whose release makes the loss exceed (for agent 5 -> node 1 on seeds 0-3 it was checked by
    hand to be the first round ``r`` at which the exact loss of node 1's view restricted to the messages of rounds
    ``<= r`` delivered to it exceeds 0.27, computed without the schedule's re-indexing: 10, 5, 10, none)."""
    from asyncdp.engine.timing import Async

    sc = Muffliato.example_scenario().replace(timing=Async(), horizon=10)
    r = check_observer_claim(sc, "node:1", runs=30)
    assert r.verdict == "violation" and r.method == "sampled schedules", r.to_table()
    # round 1 is the identity (no message delivered): the first message that can carry agent 5's value is of round 2
    assert all(2 <= f.round <= sc.horizon for f in r.failures), r.to_table()


def test_the_network_commands_claim_line_names_the_order():
    """``privacy network``'s claim line gave the statement but not the order of the Renyi bounds it checks (the
    observer's line in ``privacy check`` does)."""
    from asyncdp.privacy.network import check_pairwise_claim, pairwise_claim_of

    sc = Muffliato.example_scenario()
    table = check_pairwise_claim(sc, pairwise_claim_of(sc), list(leakage_rows(sc, observers=[1])),
                                 find_rounds=False).to_table()
    assert table.startswith("pairwise claim (Renyi divergence of order 2; "), table


def test_a_violation_of_the_pairwise_claim_alone_has_a_top_level_witness(tmp_path, capsys):
    """``privacy check --observer node:3`` on Muffliato's example: the central claim holds, the pairwise claim
    fails, the verdict is ``violation``; ``--json``'s top-level ``witness`` was null (a script reading it found no
    counterexample to a violation). It is now the pairwise claim's first witness, saying whose it is and what
    qualifies it; the text's verdict line names it."""
    from .test_network import SCRIPT as CHECK_SCRIPT

    script = tmp_path / "s.py"
    script.write_text(CHECK_SCRIPT)
    out = tmp_path / "r.json"
    code = main(["privacy", "check", str(script), "--runs", "20", "--search-examples", "0", "--observer", "node:3",
                 "--json", str(out)])
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert code == 1 and data["verdict"] == "violation" and data["verdict_without_pairwise_claim"] != "violation"
    w, first = data["witness"], data["pairwise_claim"]["witnesses"][0]
    assert w is not None and w["kind"] == "pairwise claim", data["witness"]
    assert (w["claim_form"], w["alpha"], w["method"], w["confidence"]) == ("renyi", 2.0, "exact", 1.0)
    assert {k: w[k] for k in first} == first
    assert f"verdict with the pairwise claim: violation (witness: the pairwise claim's, u={first['u']} -> v=3" in text


def test_an_asynchronous_witness_round_is_the_first_round_whose_messages_exceed():
    """The hand-check of 174ece6 encoded: the round is the first ``r`` such that node ``v``'s view restricted to the
    messages of rounds ``<= r`` delivered to it exceeds the bound (values found by a linear scan over ``r`` of that
    restricted view, Muffliato's example under ``Async()``, horizon 10). The round of the message released at the
    step where the step-ordered view exceeds is another quantity: on seed 3, ``0 -> 3`` at 0.16, agent 2's round-9
    message is released (step 31) before agent 4's round-8 one (step 37), and the view of rounds ``<= 8`` already
    exceeds: the witness said "from round 9"."""
    from asyncdp.engine.timing import Async
    from asyncdp.privacy.network import run_witness_round
    from asyncdp.privacy.linear_model import linear_schedule

    base = Muffliato.example_scenario().replace(timing=Async(), horizon=10)

    def found(seed: int, u: int, v: int, bound: float) -> int | None:
        sc = base.replace(seed=seed)
        res = sc.run("simpy")
        return run_witness_round(res, linear_schedule(res, sc), u, v, bound, 2.0, 1.0, 1e-6)

    assert [found(seed, 5, 1, 0.27) for seed in range(4)] == [10, 5, 10, None]
    assert (found(3, 0, 3, 0.16), found(5, 0, 3, 0.16)) == (8, 7)

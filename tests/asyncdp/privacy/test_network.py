"""The pairwise leakage matrix, pairwise claims and the command line (``privacy network``, ``check --observer``)."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np

from accounting.network.muffliato_gossip import chebyshev_gamma, hamilton_weights, spectral_gap
from accounting.papers.muffliato import PairwiseClaim

from asyncdp.cli import main
from asyncdp.papers.muffliato.reproduce.fig1a import format_fig1a_table, reproduce_fig1a
from asyncdp.reproduce.muffliato_fig1a import asynchronous_series
from asyncdp.privacy.network import check_pairwise_claim, leakage_rows

from .test_observers import _scenario


def test_streaming_path_equals_the_engine_schedule_accelerated():
    g = nx.path_graph(6)
    gamma = chebyshev_gamma(spectral_gap(hamilton_weights(g)))
    sc = _scenario(g, 6, gamma=gamma, static=False)
    fast = np.array([r.values for r in leakage_rows(sc)])
    slow = np.array([r.values for r in leakage_rows(sc, fast=False)])
    assert [r.path for r in leakage_rows(sc, observers=[0])] == ["streaming (lockstep)"]
    np.testing.assert_allclose(fast, slow, atol=1e-9)
    assert np.isinf(np.diag(fast)).all()


def test_pairwise_claim_fails_with_witness_pair_and_round_and_passes_when_loose():
    sc = _scenario(nx.path_graph(5), 4, static=False)
    rows = list(leakage_rows(sc))
    loose = check_pairwise_claim(sc, PairwiseClaim(2.0, "test", "loose", by_distance=lambda d: 1.0), rows)
    assert loose.verdict == "pass" and loose.failed == 0 and loose.pairs == 20
    tight = check_pairwise_claim(sc, PairwiseClaim(2.0, "test", "tight", by_distance=lambda d: 0.5 ** d), rows)
    assert tight.verdict == "violation" and tight.failures
    w = tight.failures[0]
    assert w.exact > w.claimed and w.round is not None and 2 <= w.round <= 4


SCRIPT = """
from dataclasses import replace
import numpy as np
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.problems.problem import Problem
from asyncdp.problems.costs import RendezvousQuadratic
scenario = Muffliato.example_scenario()
values = np.array(scenario.problem.costs.addresses)
values[0] = 1.0 - values[0]
adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
"""


def test_cli_network_writes_matrix_and_checks_the_papers_claim(tmp_path: Path, capsys):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out = tmp_path / "net"
    code = main(["privacy", "network", str(script), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 1 and "witness u=" in text  # the authors' per-pair values are exceeded on the path
    data = json.loads((out / "leakage.json").read_text())
    assert len(data["rows"]) == 6 and data["rows"][0]["values"][0] == "inf"
    assert {p.name for p in out.iterdir()} >= {"leakage.csv", "leakage.png", "by_distance.csv", "by_distance.png"}
    assert main(["privacy", "network", str(script), "--out", str(out), "--alpha", "0.5"]) == 2


def test_cli_check_with_node_observer(tmp_path: Path, capsys):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    code = main(["privacy", "check", str(script), "--runs", "100", "--search-examples", "0", "--observer", "node:3"])
    text = capsys.readouterr().out
    # the local claim holds, but the paper's pairwise claim (the authors' per-pair values) fails at node 3
    assert code == 1 and "verdict with the pairwise claim: violation" in text
    assert "observer node:3 (changed agent 0)" in text and "[exact]" in text
    # the first line is the command's verdict (exit code 1), not the eavesdropper check's "pass" below it
    assert text.splitlines()[0].startswith("verdict with the pairwise claim: violation (the check below, of the "
                                           "eavesdropper's view: pass;")
    assert main(["privacy", "check", str(script), "--observer", "node:17"]) == 2


def test_fig1a_both_series_and_witnesses_on_small_graphs(tmp_path: Path):
    graphs = {"path": nx.path_graph(6), "cycle": nx.cycle_graph(8)}
    s = reproduce_fig1a(tmp_path, graphs=graphs, witnesses=2)
    assert (tmp_path / "fig1a.png").exists() and (tmp_path / "fig1a.csv").exists()
    path = next(g for g in s["graphs"] if g["graph"] == "path")
    assert path["observers_above"] >= 1 and path["witnesses"][0]["step"] is not None
    assert set(s["curves"]["cycle"]) == {"distance", "authors", "exact"}
    assert "witness path" in format_fig1a_table(s)


def test_fig1a_asynchronous_series_is_bounded_by_the_local_release():
    a = asynchronous_series(side=3, runs=2)
    assert a["n"] == 9 and a["distance"] == [1, 2, 3, 4]
    for key in ("lockstep", "async", "async_upper"):
        assert all(0.0 <= x <= 1.0 + 1e-9 for x in a[key]), key  # alpha/(2 sigma^2) = 1: the full local release
    assert all(e <= u + 1e-12 for e, u in zip(a["async"], a["async_upper"]))


def test_witness_rounds_of_the_streaming_path_equal_the_engine_schedules():
    from asyncdp.papers.muffliato.rule import Muffliato
    from asyncdp.privacy.network import pairwise_claim_of, witness_round
    from asyncdp.privacy.linear_model import linear_schedule

    sc = Muffliato.example_scenario()
    check = check_pairwise_claim(sc, pairwise_claim_of(sc), leakage_rows(sc))
    assert check.verdict == "violation" and len(check.failures) == 5
    sched = linear_schedule(sc.run(), sc)
    engine = [witness_round(sched, f.u, f.v, f.claimed, 2.0, 1.0) for f in check.failures]
    assert [f.round for f in check.failures] == engine
    assert all(r is not None and 2 <= r <= sc.horizon for r in engine)



def test_a_users_subclass_inherits_the_papers_pairwise_claim():
    """A subclass defined outside the paper's folder (a user's script) is held to the paper's pairwise claim, as
    it is to the claimed_privacy it inherits; the lookup used to read the subclass's own module and found none."""
    import dataclasses

    from asyncdp.papers.muffliato.rule import Muffliato
    from asyncdp.privacy.network import pairwise_claim_of

    @dataclasses.dataclass(frozen=True)
    class Tuned(Muffliato):
        pass

    sc = Muffliato.example_scenario()
    own = pairwise_claim_of(sc)
    fields = {f.name: getattr(sc.algorithm, f.name) for f in dataclasses.fields(sc.algorithm) if f.init}
    inherited = pairwise_claim_of(sc.replace(algorithm=Tuned(**fields)))
    assert inherited is not None and inherited.alpha == own.alpha
    assert check_pairwise_claim(sc, inherited, leakage_rows(sc)).verdict == "violation"


CLIPPED = """
from dataclasses import replace
import numpy as np
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.problems.problem import Problem
from asyncdp.problems.costs import RendezvousQuadratic


class ClippedMuffliato(Muffliato):
    def message(self, state, t, noise, agents, problem):
        out = super().message(state, t, noise, agents, problem)
        return {"y": np.clip(out["y"], 0.0, 1.0)}


base = Muffliato.example_scenario()
scenario = replace(base, algorithm=ClippedMuffliato(sigma=1.0))
values = np.array(base.problem.costs.addresses)
values[0] = 1.0 - values[0]
adjacent = replace(scenario, problem=Problem(base.problem.domain, RendezvousQuadratic(values)))
"""


def test_cli_check_observer_of_a_rule_that_is_not_affine_gives_bounds(tmp_path: Path, capsys):
    script = tmp_path / "clipped.py"
    script.write_text(CLIPPED)
    main(["privacy", "check", str(script), "--runs", "100", "--search-examples", "0", "--observer", "link:0,1"])
    text = capsys.readouterr().out
    assert "[upper bound]" in text and "does not respond linearly" in text
    assert "black-box lower bound from the observer's view (100 runs per side" in text


def test_cli_workers_option_is_checked(tmp_path: Path, capsys):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    assert main(["privacy", "network", str(script), "--out", str(tmp_path / "n"), "--workers", "0"]) == 2
    assert "argument --workers: value must be >= 1, got 0" in capsys.readouterr().err
    assert main(["reproduce", "huang2015-fig1", "--workers", "2", "--out", str(tmp_path / "h")]) == 2
    assert "experiment 'huang2015-fig1' has no option --workers" in capsys.readouterr().err

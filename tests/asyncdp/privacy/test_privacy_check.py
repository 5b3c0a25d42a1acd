"""End-to-end privacy checks: the simulator's ledger and transcripts judged by the independent accountant."""

from __future__ import annotations

import json
import math
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, target
from scipy import stats

import topology
from accounting.errors import AdjacencyError
from accounting.replay import replay_loss, sample_transcripts
from asyncdp.privacy.behavior import replay_runs, run_engine, run_origin
from asyncdp.privacy.candidate_evaluation import constructed_loss
from accounting.papers.huang2015 import huang2015_effective_epsilon
from asyncdp import Huang2015, load_script
from asyncdp.cli import main
from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy, find_changed_agent, replay_rule, replay_setup, transcript_array
from asyncdp.privacy.strategies import adjacent_rendezvous_pairs

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
C2 = 4 * math.sqrt(2)
REQUIRED = {"epsilon_claimed", "delta_claimed", "epsilon_ledger", "epsilon_tight", "sensitivity_probe_max",
            "replay_max_loss", "replay_exceed_fraction", "empirical_epsilon_lower_bound", "confidence", "verdict",
            "witness"}


def _example(name):
    return load_script(EXAMPLES / name, names=("scenario", "adjacent"))


def test_default_schedule_passes_and_replay_stays_below_epsilon_on_1e4_transcripts():
    ex = _example("privacy_check_rendezvous.py")
    sc, adj = ex["scenario"], ex["adjacent"]
    report = check_privacy(sc, adj, runs=2000)
    assert report.verdict == "pass" and report.witness is None
    assert report.epsilon_ledger <= 1.0 + 1e-9
    setup, P, Pp = replay_setup(sc), replay_rule(sc), replay_rule(adj)
    losses = replay_loss(sample_transcripts(setup, P, 10_000, seed=42), setup, P, Pp)
    assert losses.max() <= sc.algorithm.epsilon * (1 + 1e-9)
    # the prober sees Lemma 4's factor-2 slack on the quadratic: |U - U'|_1 reaches half the bound
    assert 0.49 <= report.sensitivity_probe_ratio <= 0.5 + 1e-9


def test_theorem5_proof_schedule_is_a_violation_with_a_reproducible_witness():
    ex = _example("privacy_check_broken_schedule.py")
    sc, adj = ex["scenario"], ex["adjacent"]
    alg = sc.algorithm
    report = check_privacy(sc, adj, runs=2000, seed=0)
    assert report.verdict == "violation"
    # the accountant reports epsilon / p (finite-horizon partial sum, computed independently)
    expected = huang2015_effective_epsilon(epsilon=alg.epsilon, c=alg.c, q=alg.q, p=alg.p, C2=C2, n=2,
                                           schedule="theorem5-proof", horizon=sc.horizon)
    assert report.epsilon_ledger == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(alg.epsilon / alg.p * (1 - (alg.q / alg.p) ** (sc.horizon - 1)))
    # the engine's runs replayed exactly exceed the claim; with noise scales down to 1e-15 (p = 0.6, T = 30),
    # round-off can move a run's loss by up to ~0.8, so the proof comes from the constructed worst pair,
    # whose loss (about epsilon / p with the whole Lemma 4 bound) clears that margin
    assert report.replay_max_loss > alg.epsilon
    assert any("round-off" in r for r in report.reasons)
    w = report.witness
    assert w["kind"] == "worst-case" and w["loss"] > alg.epsilon
    # reproducible: the same engine runs (seed layout of asyncdp.privacy.behavior) give the same figures
    runs = run_engine(sc, 2000, seed=w["seed"])
    assert runs.engine == w["engine"]
    assert run_origin(runs, w["run"]) == {k: w[k] for k in ("run_seed", "batch_row") if k in w}
    assert constructed_loss(runs, sc, w["agent"], w["gradient"], w["gradient_prime"], max_runs=16)[0] == \
        pytest.approx(w["loss"], rel=1e-12)
    again = replay_runs(runs, sc, adj).losses
    assert again.max() == pytest.approx(report.replay_max_loss, rel=1e-12)
    # and the lockstep replay of accounting.replay agrees on those engine transcripts
    setup, P, Pp = replay_setup(sc), replay_rule(sc), replay_rule(adj)
    np.testing.assert_allclose(replay_loss(runs.messages["y"], setup, P, Pp), again, rtol=1e-9, atol=1e-9)


def test_simpy_transcript_is_replayed_exactly():
    """Prop. 3 of Huang, Mitra and Vaidya (ICDCN 2015): the run is a deterministic function of its messages; replay recovers x(T)."""
    ex = _example("privacy_check_rendezvous.py")
    sc = ex["scenario"]
    result = sc.run()
    y = transcript_array(result)
    rule, setup = replay_rule(sc), replay_setup(sc)
    x = rule.initial_state(1)
    for t in range(1, sc.horizon + 1):
        assert np.allclose(rule.message_mean(x, t)[0], result.trajectory[t - 1], atol=1e-12)
        x = rule.next_state(x, np.einsum("ij,rjk->rik", setup.matrix(t).toarray(), y[t - 1][None]), t)
    assert np.allclose(x[0], result.trajectory[-1], atol=1e-12)
    loss = replay_loss(y, setup, rule, replay_rule(ex["adjacent"]))
    assert loss.shape == (1,) and loss[0] <= sc.algorithm.epsilon


def _two_out_neighbours(n):
    w = np.eye(n) / 3
    for i in range(n):
        w[(i + 1) % n, i] += 1 / 3
        w[(i + 2) % n, i] += 1 / 3
    return topology.static(w)


def test_unicast_spends_out_degree_times_more_and_replay_agrees():
    ex = _example("privacy_check_rendezvous.py")
    g = _two_out_neighbours(ex["scenario"].problem.num_agents)  # every agent has out-degree 2
    runs, z = 20_000, stats.norm.ppf(0.9995)
    out = {}
    for mode in ("broadcast", "unicast"):
        sc = ex["scenario"].replace(topology=g, mode=mode)
        adj = ex["adjacent"].replace(topology=g, mode=mode)
        report = check_privacy(sc, adj, runs=200, search_examples=0)  # unicast runs on the SimPy engine
        assert report.replay_max_loss <= report.epsilon_ledger * (1 + 1e-9)
        if mode == "broadcast":
            assert report.verdict == "pass"
        else:  # two noised copies of each state: the worst pair's constructed transcript spends up to 2 epsilon
            assert report.verdict == "violation" and report.witness["kind"] == "worst-case"
            assert 1.0 < report.witness["loss"] <= 2.0 * (1 + 1e-9)
        setup, P, Pp = replay_setup(sc), replay_rule(sc), replay_rule(adj)
        losses = replay_loss(sample_transcripts(setup, P, runs, seed=5, mode=mode), setup, P, Pp)
        out[mode] = (report, losses)
    (rb, lb), (ru, lu) = out["broadcast"], out["unicast"]
    assert len(ru.reasons) >= 1 and ru.epsilon_ledger == pytest.approx(2 * rb.epsilon_ledger, rel=1e-12)
    eps = ex["scenario"].algorithm.epsilon
    assert lb.max() <= eps * (1 + 1e-9) and lu.max() <= 2 * eps * (1 + 1e-9)
    assert lu.max() > lb.max()  # the second copy is really spent
    # each copy masks the same state difference, so E[L] doubles (up to projection effects);
    # check at the 99.9% level with the standard errors of both means
    se = math.sqrt(lu.var() / runs + 4 * lb.var() / runs)
    assert abs(lu.mean() - 2 * lb.mean()) <= z * se


@settings(max_examples=25, deadline=None)
@given(pair=adjacent_rendezvous_pairs())
def test_property_eq8_replay_loss_never_exceeds_epsilon(pair):
    sc, adj, _ = pair
    setup, P, Pp = replay_setup(sc), replay_rule(sc), replay_rule(adj)
    losses = replay_loss(sample_transcripts(setup, P, 200, seed=sc.seed), setup, P, Pp)
    target(float(losses.max() / sc.algorithm.epsilon), label="loss / epsilon")
    assert losses.max() <= sc.algorithm.epsilon * (1 + 1e-9)


class _QuarterNoise(Huang2015):
    """Negative control: a quarter of the eq. (8) noise (the real loss reaches ~2 epsilon)."""

    def noise_scale(self, t: int) -> float:
        return super().noise_scale(t) / 4


class _UnderclaimedSensitivity(Huang2015):
    """Negative control: claims a quarter of Lemma 4's sensitivity (the update really moves by half)."""

    def sensitivity(self, t: int) -> float:
        return super().sensitivity(t) / 4


def test_negative_controls_are_caught():
    ex = _example("privacy_check_rendezvous.py")
    sc, adj = ex["scenario"], ex["adjacent"]
    quiet = _QuarterNoise(epsilon=1.0, c=0.05, q=0.2, p=0.6)
    r = check_privacy(sc.replace(algorithm=quiet), adj.replace(algorithm=quiet), runs=2000)
    assert r.verdict == "violation" and r.witness["kind"] == "replay" and r.witness["loss"] > 1.0
    assert r.epsilon_ledger == pytest.approx(4 * (1 - (0.2 / 0.6) ** (sc.horizon - 1)), rel=1e-9)
    under = _UnderclaimedSensitivity(epsilon=1.0, c=0.05, q=0.2, p=0.6)
    r = check_privacy(sc.replace(algorithm=under), adj.replace(algorithm=under), runs=500)
    assert r.verdict == "violation" and r.witness["kind"] == "sensitivity"
    assert r.witness["value"] == pytest.approx(2 * r.witness["claimed"], rel=1e-3)


def test_bad_input():
    ex = _example("privacy_check_rendezvous.py")
    sc, adj = ex["scenario"], ex["adjacent"]
    assert find_changed_agent(sc, adj) == 0
    two = adj.replace(problem=adj.problem.adjacent(1, address=[0.0, 0.0]))
    with pytest.raises(AdjacencyError, match=r"more than one agent's cost: agents \[0, 1\]"):
        find_changed_agent(sc, two)
    with pytest.raises(AdjacencyError, match="differ in topology at round 1"):
        find_changed_agent(sc, adj.replace(topology=_two_out_neighbours(sc.problem.num_agents)))
    with pytest.raises(AdjacencyError, match="same costs for every agent"):
        find_changed_agent(sc, sc)
    with pytest.raises(AdjacencyError, match="differ in horizon"):
        find_changed_agent(sc, adj.replace(horizon=5))
    inf = Huang2015(epsilon=math.inf, c=0.05, q=0.2, p=0.6)
    with pytest.raises(ScenarioError, match="no noisy values"):
        check_privacy(sc.replace(algorithm=inf), adj.replace(algorithm=inf), runs=100)


def test_cli_privacy_check(tmp_path, capsys):
    out = tmp_path / "check.json"
    assert main(["privacy", "check", str(EXAMPLES / "privacy_check_rendezvous.py"), "--runs", "400",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert REQUIRED <= set(report) and report["verdict"] == "pass"
    assert "verdict" in capsys.readouterr().out
    bad = tmp_path / "two.py"
    bad.write_text(
        "from pathlib import Path\nfrom asyncdp import load_script\n"
        f"d = load_script(Path({str(EXAMPLES / 'privacy_check_rendezvous.py')!r}), names=('scenario', 'adjacent'))\n"
        "scenario = d['scenario']\nadjacent = d['adjacent'].replace(problem=d['adjacent'].problem.adjacent(1, "
        "address=[0.0, 0.0]))\n"
    )
    proc = subprocess.run([sys.executable, "-m", "asyncdp", "privacy", "check", str(bad), "--runs", "100"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("asyncdp: error: adjacent scenarios differ in more")
    assert "Traceback" not in proc.stderr


def test_examples_run(capsys):
    assert runpy.run_path(str(EXAMPLES / "privacy_check_rendezvous.py"))["main"]()["verdict"] == "pass"
    assert runpy.run_path(str(EXAMPLES / "privacy_check_broken_schedule.py"))["main"]()["verdict"] == "violation"
    assert "witness" in capsys.readouterr().out


def test_a_claim_check_that_rejects_the_scenario_passes_its_error_through():
    # the lemma and the adjacency pass a ScenarioError through; the claim check wrapped it in a PaperError that
    # blamed the paper ("paper 'muffliato': the claim check raised ScenarioError: ...") for the scenario's fault
    import dataclasses
    import types

    from asyncdp.errors import ScenarioError
    from asyncdp.papers import PaperError, find_registered
    from asyncdp.papers.muffliato.rule import Muffliato
    from asyncdp.privacy.check import theorem_verdict

    def rejects(sc, eps, delta):
        raise ScenarioError("this claim needs a bounded domain")

    def broken(sc, eps, delta):
        raise KeyError("typo")

    found = find_registered(Muffliato)
    sc = Muffliato.example_scenario()

    def ctx(check):
        return types.SimpleNamespace(paper=dataclasses.replace(found, paper=dataclasses.replace(found.paper,
                                                                                                  claim_check=check)),
                                     algorithm=sc.algorithm, delta_claimed=1e-6, no_sensitivity=None)

    with pytest.raises(ScenarioError, match="^this claim needs a bounded domain$") as got:
        theorem_verdict(sc, ctx(rejects), 1.0)
    assert not isinstance(got.value, PaperError)
    with pytest.raises(PaperError, match="paper 'muffliato': the claim check raised KeyError"):
        theorem_verdict(sc, ctx(broken), 1.0)

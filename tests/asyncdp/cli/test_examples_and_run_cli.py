"""The runnable examples and the ``asyncdp run`` command."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np

import topology
from asyncdp.cli import main
from asyncdp.papers import assumption_set

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REQUIRED_KEYS = {"consensus_error", "optimality_error", "releases", "messages_sent", "messages_lost",
                 "realized_doubly_stochastic", "epsilon_claimed"}


def test_huang2015_rendezvous_example(capsys):
    out = runpy.run_path(str(EXAMPLES / "huang2015_rendezvous.py"))["main"]()
    text = capsys.readouterr().out
    private, exact = out["private"], out["exact"]
    n, t = private.trajectory.shape[1], private.horizon
    assert len(private.ledger) == n * t  # broadcast: one release per agent and round
    assert len(exact.ledger) == 0  # epsilon = inf: nothing noised
    # noise-free run reaches consensus. With no noise, x(s) = W_s x(s-1) + e(s)
    # with ||e_i(s)|| <= gamma_s C2 (clipped gradient, non-expansive projection),
    # and x(0) is common, so ||x_i(T) - x_k(T)|| <= sum_s 2 N dev(T, s) gamma_s C2,
    # where dev(T, s) = max_ij |Phi(T, s)_ij - 1/N| is computed exactly below.
    alg = exact.metadata["algorithm_params"]
    c2 = 4 * np.sqrt(2)
    graphs = runpy.run_path(str(EXAMPLES / "huang2015_rendezvous.py"))["graphs"]
    dev = [topology.empirical_contraction(graphs, horizon=t, start=s).deviations[-1] for s in range(1, t)]
    dev.append(1 - 1 / n)  # Phi(T, T) = I
    steps = alg["c"] * alg["q"] ** np.arange(t)  # gamma_1 .. gamma_T
    bound = float(np.sum(2 * n * np.asarray(dev) * steps * c2))
    assert exact.consensus_error()[-1] <= bound
    assert bound < 1e-3  # far below the initial spread (the check is not vacuous)
    lo, hi = -1.0, 1.0
    assert ((private.trajectory >= lo) & (private.trajectory <= hi)).all()
    assert "all assumptions hold" in text
    # the reader is told the result is noise-dominated, with the noise-free run's error beside it
    free = float(exact.optimality_error()[-1])
    assert f"the same run without privacy noise (same seed, links and clocks): {free:.3g}" in text
    assert "-> noise-dominated" in text and private.optimality_error()[-1] >= 10 * free


def test_async_lossy_links_example(capsys):
    out = runpy.run_path(str(EXAMPLES / "async_lossy_links.py"))["main"]()
    text = capsys.readouterr().out
    base, lossy = out["lockstep"], out["lossy"]
    assert lossy.messages_lost > 0 and base.messages_lost == 0
    assert base.realized_doubly_stochastic() and not lossy.realized_doubly_stochastic()
    audit = topology.audit(lossy.realized, assumption_set("huang2015"))
    ds = next(a for a in audit.assumptions if a.name == "doubly_stochastic")
    assert not ds.holds and f"round {ds.first_failure_round}:" in text
    # the same seed gives the same privacy noise under both timings: the
    # first broadcast (masking the common x(0)) is identical
    y_base = base.transcript.observations("y")
    y_lossy = lossy.transcript.observations("y")
    assert all(np.array_equal(y_base[(1, i)], y_lossy[(1, i)]) for i in range(base.trajectory.shape[1]))
    assert f"||xbar - x*||^2 = {lossy.optimality_error()[-1]:.3g}" in text and "-> " in text


def test_run_cli_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    ledger = tmp_path / "ledger.json"
    code = main(["run", str(EXAMPLES / "huang2015_rendezvous.py"), "--horizon", "12", "--seed", "4",
                 "--json", str(out), "--ledger", str(ledger)])
    assert code == 0
    table = capsys.readouterr().out
    summary = json.loads(out.read_text())
    assert REQUIRED_KEYS <= set(summary)
    assert summary["releases"] == 10 * 12 and summary["horizon"] == 12
    assert summary["metadata"]["seed"] == 4
    assert "optimality_error" in table
    from accounting import Ledger

    assert len(Ledger.load(ledger)) == 120


def test_run_cli_json_is_strict_json_for_a_claim_of_no_privacy(tmp_path, capsys):
    """epsilon = inf (no privacy, a documented setting): the metadata's algorithm parameters were written as the bare
    token Infinity, which strict JSON parsers (jq, JavaScript, ...) reject; reproduce and privacy check write "inf"."""
    script, out = tmp_path / "s.py", tmp_path / "run.json"
    script.write_text("from asyncdp import Huang2015\n"
                      "scenario = Huang2015.example_scenario().replace(\n"
                      "    algorithm=Huang2015(epsilon=float('inf'), c=0.2, q=0.8, p=0.9), horizon=3)\n")
    assert main(["run", str(script), "--json", str(out)]) == 0
    capsys.readouterr()

    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    summary = json.loads(out.read_text(), parse_constant=refuse)
    assert summary["epsilon_claimed"] == "inf" and summary["metadata"]["algorithm_params"]["epsilon"] == "inf"


def test_run_cli_bad_scripts(tmp_path):
    no_scenario = tmp_path / "empty.py"
    no_scenario.write_text("x = 1\n")
    bad_param = tmp_path / "bad.py"
    bad_param.write_text(
        "from asyncdp import Huang2015\nalg = Huang2015(epsilon=-1.0, c=0.1, q=0.5, p=0.6)\n"
    )
    for script, needle in [(no_scenario, "does not define 'scenario'"), (bad_param, "epsilon must be > 0"),
                           (tmp_path / "missing.py", "no scenario script")]:
        proc = subprocess.run([sys.executable, "-m", "asyncdp", "run", str(script)], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("asyncdp: error:") and needle in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr


def test_run_cli_names_a_per_iteration_claim(tmp_path, capsys):
    """Wang and Basar claim (eps_k, delta) per iteration (claim_level "iteration"); ``asyncdp run`` recorded
    epsilon_claimed 0.34 for a 20-round run with nothing saying it bounds one round only, so it read as the run's
    guarantee (the run's own basic composition is about 5.7). The summary and its JSON now name the claim's level."""
    script, out = tmp_path / "s.py", tmp_path / "run.json"
    script.write_text("from asyncdp.papers.wang_basar.rule import WangBasar\n"
                      "scenario = WangBasar.example_scenario().replace(\n"
                      "    algorithm=WangBasar(noise_variance=200.0, delta=1e-5), horizon=20)\n")
    assert main(["run", str(script), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    summary = json.loads(out.read_text())
    assert 0 < summary["epsilon_claimed"] < 1 and summary["claim_level"] == "iteration"
    assert "claim_level                 iteration" in table
    assert main(["run", str(EXAMPLES / "huang2015_rendezvous.py"), "--horizon", "2", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["claim_level"] == "run"

"""Reproduction of seed 003's Fig. 1 (tuning, Theorem 10 bound, outputs) and ``asyncdp reproduce``."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest

from asyncdp.cli import main
from asyncdp.errors import AlgorithmParameterError
from asyncdp.reproduce import EXPERIMENTS
from asyncdp.reproduce.huang2015_fig1 import example2_scenario_factory, reproduce_fig1, theorem10_bound
from asyncdp.tuning import tune_huang2015


@pytest.fixture(scope="module")
def small_fig1(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig1")
    summary = reproduce_fig1(out, runs=300, tune_runs=40, epsilons=(0.1, 10.0), extension_epsilons=(1000.0,),
                             tune_cycles=1, grid_points=5, refine_steps=2)
    return out, summary


def test_outputs_and_documented_keys(small_fig1):
    out, summary = small_fig1
    assert {"fig1.csv", "fig1_summary.json", "fig1.png"} <= {p.name for p in out.iterdir()}
    on_disk = json.loads((out / "fig1_summary.json").read_text())
    for key in ("choices", "per_epsilon", "slope", "statements", "optimum_sq_norm"):
        assert key in on_disk
    for entry in on_disk["per_epsilon"]:
        for key in ("epsilon", "d", "ci_low", "ci_high", "c", "q", "p", "epsilon_claimed", "epsilon_accountant",
                    "bound_printed", "bound_corrected"):
            assert key in entry
        assert entry["ci_low"] <= entry["d"] <= entry["ci_high"]
    with (out / "fig1.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 300 * 3 and {"epsilon", "run", "sq_error"} <= set(rows[0])
    assert (out / "fig1.png").read_bytes()[:4] == b"\x89PNG"
    # every open choice is recorded
    choices = on_disk["choices"]
    assert any("horizon" in k.lower() or k == "T" for k in choices) and len(choices) >= 5


def test_d_decreases_with_epsilon_and_accountant_matches_eq8(small_fig1):
    _, summary = small_fig1
    entries = {e["epsilon"]: e for e in summary["per_epsilon"]}
    # the 95% CIs separate the noisiest level from epsilon = 1000
    assert entries[0.1]["ci_low"] > entries[1000.0]["ci_high"]
    horizon = summary["choices"]["horizon"] if "horizon" in summary["choices"] else summary["choices"]["T"]
    for e in summary["per_epsilon"]:
        # eq. (8): the accountant's epsilon is the finite-horizon partial sum eps (1 - (q/p)^(T-1))
        expected = e["epsilon"] * (1 - (e["q"] / e["p"]) ** (horizon - 1))
        assert e["epsilon_accountant"] == pytest.approx(expected, rel=1e-9)
        assert e["epsilon_accountant"] <= e["epsilon_claimed"] * (1 + 1e-12)


def test_theorem10_bound_by_hand():
    eps, c, q, p, C1, C2, C3, C4, n = 1.0, 0.25, 0.5, 0.75, 2.0, 1.0, 2.0, 2.0, 2
    bias = math.exp(-C3 * c / (1 - q))
    step = 2 * C2**2 * c**2 / (1 - q**2)
    noise1 = 8 * C2**2 * c**2 / (eps**2 * (p - q) ** 2 * (1 - p**2))
    noise2 = 16 * C2**2 * C4**2 * c**4 / (eps**2 * (p - q) ** 2 * (1 - p**2 * q**2))
    printed = 2 * C1 * bias + step + n * p**2 * (noise1 + noise2)
    corrected = C1**2 * bias + step + n**2 * (noise1 + noise2)
    kw = dict(C1=C1, C2=C2, C3=C3, C4=C4, n=n)
    assert theorem10_bound(eps, c, q, p, **kw) == pytest.approx(printed, rel=1e-12)
    assert theorem10_bound(eps, c, q, p, variant="corrected", **kw) == pytest.approx(corrected, rel=1e-12)
    with pytest.raises(AlgorithmParameterError, match="variant"):
        theorem10_bound(eps, c, q, p, variant="other", **kw)
    with pytest.raises(AlgorithmParameterError, match="p must be in"):
        theorem10_bound(eps, c, 0.5, 0.4, **kw)


def test_tuning_improves_on_common_random_numbers_and_respects_constraints():
    factory = example2_scenario_factory(horizon=30)
    start = (0.2, 0.5, 0.8)
    res = tune_huang2015(factory, 5.0, runs=60, seed=3, start=start, cycles=1, grid_points=5)
    assert 0 < res.c < 0.5 and 0 < res.q < res.p < 1
    # coordinate moves only accept improvements on the same (common) random numbers
    assert res.mse <= res.start_mse + 1e-15
    # the reported errors are reproducible simulations, not estimates
    again = tune_huang2015(factory, 5.0, runs=60, seed=3, start=start, cycles=1, grid_points=5)
    assert (again.c, again.q, again.p, again.mse) == (res.c, res.q, res.p, res.mse)


def test_cli_reproduce(tmp_path, capsys):
    assert "huang2015-fig1" in EXPERIMENTS
    assert main(["reproduce", "wang-basar-saddle", "--runs", "8", "--out", str(tmp_path)]) == 0
    assert any(p.suffix == ".json" for p in tmp_path.iterdir()) and capsys.readouterr().out
    proc = subprocess.run([sys.executable, "-m", "asyncdp", "reproduce", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    assert main(["reproduce", "wang-basar-saddle", "--tune-runs", "3", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("asyncdp: error: experiment 'wang-basar-saddle' has no option")

"""The reproductions of Figs. 1-4 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019): files, summaries, tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from asyncdp.errors import ScenarioError
from asyncdp.papers.showkatbakhsh import reproduce as rep


def test_reproductions_write_their_files(tmp_path):
    small = {
        1: dict(horizons=(1, 5, 20)),
        2: dict(epsilons=(2.0, 8.0), deltas=(1e-3,), T=20),
        3: dict(pcs=(0.3, 1.0), horizons=(10,), graphs=2),
        4: dict(points_per_node=(20, 80), T=20),
    }
    for k, opts in small.items():
        out = tmp_path / f"fig{k}"
        s = getattr(rep, f"reproduce_fig{k}")(out, runs=6, seed=1, **opts)
        assert set(rep.SUMMARY_KEYS) <= set(s)
        for kind in ("csv", "summary", "png"):
            assert Path(s["files"][kind]).is_file()
        on_disk = json.loads(Path(s["files"]["summary"]).read_text())
        assert on_disk["experiment"] == f"showkatbakhsh-fig{k}" and on_disk["choices"]["runs"] == 6
        assert on_disk["paper"].startswith("Showkatbakhsh, Karakus and Diggavi, ") and "arXiv 2019" in on_disk["paper"]
        assert all({"name", "holds", "criterion"} <= set(c) for c in on_disk["checks"])
        assert Path(s["files"]["csv"]).read_text().count("\n") == 1 + 6 * len(s["points"]) * (
            opts.get("graphs", 1))
        assert rep.format_table(s).startswith(f"showkatbakhsh-fig{k}")
    with pytest.raises(ScenarioError, match="runs must be >= 2, got 1"):
        rep.reproduce_fig1(tmp_path / "x", runs=1)


def test_package_keeps_the_single_modules_names_and_one_module_per_figure():
    old_all = {"N_NODES", "N_POINTS", "DIM", "RADIUS", "DATA_MEAN", "DATA_STD", "P_C", "EPSILON", "HORIZON",
               "STAGE2_ROUNDS", "RUNS", "DATA_SEED", "GRAPH_SEED", "DEFAULT_SEED", "FIG1_HORIZONS", "FIG2_EPSILONS",
               "FIG2_DELTAS", "FIG3_PCS", "FIG3_HORIZONS", "FIG3_GRAPHS", "FIG4_POINTS", "SUMMARY_KEYS",
               "generate_data", "fixed_er_graph", "privacy_gradient_bound", "linear_prediction", "simulate",
               "reproduce_fig1", "reproduce_fig2", "reproduce_fig3", "reproduce_fig4", "format_table"}
    assert old_all <= set(rep.__all__) and all(hasattr(rep, name) for name in old_all)
    from asyncdp.reproduce import EXPERIMENTS, TABLES

    for k in (1, 2, 3, 4):
        fn = EXPERIMENTS[f"showkatbakhsh-fig{k}"]
        assert fn is getattr(rep, f"reproduce_fig{k}")
        assert fn.__module__ == f"asyncdp.papers.showkatbakhsh.reproduce.fig{k}"
        assert TABLES[f"showkatbakhsh-fig{k}"] is rep.format_table


def test_fig3_interval_is_over_the_graphs_not_the_correlated_runs(tmp_path):
    """Runs on one random graph share it: the sem must be that of the per-graph means (from the CSV's raw runs)."""
    import numpy as np
    import pandas as pd

    s = rep.reproduce_fig3(tmp_path, runs=6, seed=1, pcs=(0.1, 1.0), horizons=(10,), graphs=3)
    raw = pd.read_csv(s["files"]["csv"])
    for p in s["points"]:
        per_graph = raw[raw["p_c"] == p["p_c"]].groupby("graph")["node1"].mean().to_numpy()
        assert np.isclose(p["node1"]["sem"], per_graph.std(ddof=1) / np.sqrt(3), rtol=1e-9)
        assert np.isclose(p["node1"]["mean"], per_graph.mean(), rtol=1e-12)
    # the paired drop is judged by Student's t over the 3 graphs (2 degrees of freedom: 4.30, not a normal 3)
    means = [raw[raw["p_c"] == pc].groupby("graph")["node1"].mean().to_numpy() for pc in (0.1, 1.0)]
    low, _ = stats.t.interval(0.95, 2, loc=(means[0] - means[1]).mean(), scale=stats.sem(means[0] - means[1]))
    drop = next(c for c in s["checks"] if c["name"] == "significant_drop_T=10")
    assert np.isclose(drop["ci_low"], low, rtol=1e-9) and drop["holds"] == (low > 0)


def test_a_grid_given_in_decreasing_order_gives_the_same_checks(tmp_path):
    """The checks compare neighbours along the grid: (80, 20) made 'error falls with N_i' FAIL on the same numbers."""
    up = rep.reproduce_fig4(tmp_path / "up", runs=6, seed=1, points_per_node=(20, 80), T=20)
    down = rep.reproduce_fig4(tmp_path / "down", runs=6, seed=1, points_per_node=(80, 20), T=20)
    assert [(c["name"], c["holds"]) for c in down["checks"]] == [(c["name"], c["holds"]) for c in up["checks"]]
    assert up["checks"][0]["holds"]
    with pytest.raises(ScenarioError, match="pcs repeats a value"):
        rep.reproduce_fig3(tmp_path / "x", runs=2, pcs=(0.3, 0.3))

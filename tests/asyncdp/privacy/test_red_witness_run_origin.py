"""A witness names the run it rests on so that it can be rerun, on either engine.

On the batch engine every run of one side comes from one batch of seed ``seeds[0]`` (row ``r`` is run ``r``), but
the witnesses reported ``run_seed = seeds[r]``, a seed no run was drawn from: ``scenario.replace(seed=run_seed)``
reran something else (other noise, other clocks and losses). A batch witness now names the batch's seed and its
row (``batch_row``), which rerun it exactly; a SimPy witness keeps its own seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asyncdp import Deadline, LinkModel, Links, LogNormalLatency, load_script
from asyncdp.privacy.behavior import run_engine, run_origin, run_seeds

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _lossy():
    ex = load_script(EXAMPLES / "privacy_check_rendezvous.py", names=("scenario", "adjacent"))
    return ex["scenario"].replace(timing=Deadline(period=1.0, deadline=0.8, missing="renormalize"),
                                  links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.2)),
                                  horizon=8)


def test_a_batch_runs_origin_reruns_it():
    sc = _lossy()
    runs = run_engine(sc, 4, seed=5, engine="batch")
    assert runs.engine == "batch"
    for r in (1, 3):
        o = run_origin(runs, r)
        again = sc.replace(seed=o["run_seed"]).run("batch", runs=o["batch_row"] + 1, keep="all", transcripts=True)
        np.testing.assert_array_equal(np.asarray(again.messages["y"])[o["batch_row"]], runs.messages["y"][r])


def test_a_simpy_runs_origin_is_its_seed():
    runs = run_engine(_lossy(), 2, seed=5, engine="simpy")
    assert run_origin(runs, 1) == {"run_seed": run_seeds(5, 0, 2)[1]}  # run r is the SimPy run of seeds[r]


def test_a_coverage_witness_names_the_run_it_rests_on():
    """The sensitivity-coverage witness named its run (index and side) but no seed: it could not be rerun. Rerunning
    its ``run_seed``/``batch_row`` on its side's scenario gives the released messages it rests on."""
    import dataclasses

    from asyncdp.privacy.context import small_example
    from asyncdp.privacy.coverage import check_coverage

    pair, ctx = small_example(runs=6)
    factor = 0.5 * check_coverage(pair, ctx).figures["coverage_max_ratio"]  # a lemma below the pair's own shifts
    weak = dataclasses.replace(ctx, sensitivity={c: s * factor for c, s in ctx.sensitivity.items()}, cache={})
    w = check_coverage(pair, weak).witness
    assert w is not None and w["kind"] == "coverage"
    sc = (pair.scenario, pair.adjacent)[w["side"]]
    again = sc.replace(seed=w["run_seed"]).run("batch", runs=w["batch_row"] + 1, transcripts=True)
    np.testing.assert_array_equal(np.asarray(again.messages["y"])[w["batch_row"]],
                                  ctx.engine_runs(w["side"]).messages["y"][w["run"]])

"""A witness names the engine run it rests on so that the run can be made again (asyncdp.privacy.behavior, Seeds).

On the batch engine the check's ``R`` runs are the rows of one batch of seed ``seeds[0]``; run ``r`` is not the
SimPy run of ``seeds[r]``. Witnesses reported ``run_seed = seeds[r]``: re-running that seed gave another run
(other noise, other losses and latencies), so the witness's run could not be reproduced. A batch run is now named
by its batch's seed and its row (``batch_row``, :func:`asyncdp.privacy.behavior.run_origin`).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from asyncdp import Deadline, LinkModel, Links
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import run_engine, run_origin

EXAMPLE = runpy.run_path(str(Path(__file__).parents[3] / "examples" / "privacy_check_weak_noise.py"))
TIMED = dict(timing=Deadline(deadline=0.5, drift=0.2, missing="stale"), links=Links(LinkModel(loss=0.3)))


def made_again(scenario, witness: dict) -> np.ndarray:
    """The released ``y`` of the run a witness names, rebuilt from the witness's fields alone."""
    sc = scenario.replace(seed=witness["run_seed"])
    if "batch_row" in witness:
        k = witness["batch_row"]
        return sc.run("batch", runs=k + 1, keep="all", transcripts=True).messages["y"][k]
    return sc.run().messages["y"]


def test_every_batch_run_is_named_by_its_batch_seed_and_row():
    sc = EXAMPLE["scenario"].replace(**TIMED)
    runs = run_engine(sc, 3, seed=5)
    assert runs.engine == "batch"
    for r in range(3):
        np.testing.assert_array_equal(made_again(sc, {"run": r, **run_origin(runs, r)}), runs.messages["y"][r])


def test_a_witness_on_a_batch_run_beyond_the_first_is_reproduced_from_its_fields():
    sc, adj = (EXAMPLE[k].replace(**TIMED) for k in ("scenario", "adjacent"))
    report = check_privacy(sc, adj, runs=40, seed=0)
    w = report.witness
    assert report.verdict == "violation" and w["engine"] == "batch" and w["run"] >= 1, w
    runs = run_engine(sc, 40, seed=w["seed"])
    np.testing.assert_array_equal(made_again(sc, w), runs.messages["y"][w["run"]])

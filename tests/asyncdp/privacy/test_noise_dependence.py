"""Noise that is reused across rounds (or agents) is named as dependence, never passed."""

from __future__ import annotations

import dataclasses

import numpy as np

from asyncdp.privacy.context import small_example
from asyncdp.privacy.realized import check_conformance, noise_dependence


def test_independent_laplace_noise_is_not_called_dependent():
    rng = np.random.default_rng(1)
    res = {"y": rng.laplace(size=(1000, 10, 4, 2))}
    assert noise_dependence(res, {"y": np.ones(10)}, 0.0125) is None


def test_one_draw_reused_in_every_round_is_found_with_its_rounds_and_agent():
    rng = np.random.default_rng(2)
    res = rng.laplace(size=(500, 6, 3, 2))
    res[:, 3] = res[:, 2]  # agent draws reused from round 3 to round 4
    out = noise_dependence({"y": res}, {"y": np.ones(6)}, 0.0125)
    assert out["across"] == "rounds" and out["rounds"] == [3, 4] and out["correlation"] > 0.99


def test_a_draw_shared_by_two_agents_is_found():
    rng = np.random.default_rng(3)
    res = rng.normal(size=(500, 4, 3, 1))
    res[:, 1, 2] = -res[:, 1, 1]  # noise that cancels between agents 1 and 2 in round 2
    out = noise_dependence({"y": res}, {"y": np.ones(4)}, 0.0125)
    assert out["across"] == "agents" and out["agents"] == [1, 2] and out["rounds"] == [2, 2]
    assert out["correlation"] < -0.99


def test_the_check_names_reused_noise_in_its_witness_and_never_passes():
    pair, ctx = small_example(runs=300)
    replay = ctx.realized_replay()
    res = np.array(replay.residuals["y"])
    res[:, 1:] = res[:, :1]  # every round releases the first round's draw again
    ctx.cache["replay"] = dataclasses.replace(replay, residuals={"y": res})
    e = check_conformance(pair, ctx)
    assert e.doubt is not None and "correlated across rounds" in e.doubt
    if e.witness is not None:  # a pooled rejection is reported as the dependence it is
        assert e.witness.get("round") is not None or e.witness["kind"] == "dependence"
        if e.witness["kind"] == "dependence":
            assert e.witness["rounds"] and e.witness["agents"] and e.witness["method"] and e.witness["claim_form"]

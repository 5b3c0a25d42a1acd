"""Sweep metric columns and summaries (asyncdp.experiments.summaries); summarize over a real sweep is tested in test_sweep.py."""

from __future__ import annotations

import math

import numpy as np
import pytest


def test_accountant_epsilon_uses_the_claimed_delta_for_gaussian_releases():
    from accounting import composition
    from accounting.ledger import Ledger, Release
    from asyncdp.experiments.summaries import _accountant_epsilon

    sens = {"y": np.array([0.5, 0.25])}  # the lemma's sensitivity of each release, per channel
    gauss = Ledger([Release(a, t, 0.0, "gaussian", 2.0, 1) for a in (0, 1) for t in (1, 2)])
    assert _accountant_epsilon(gauss, sens, 0.0) == math.inf  # Gaussian needs delta > 0
    want = composition.basic_composition(gauss.for_agent(0), lambda r: float(sens["y"][r.round - 1]), delta=1e-3)
    assert _accountant_epsilon(gauss, sens, 1e-3) == want > 0
    lap = Ledger([Release(0, t, 0.0, "laplace", 2.0, 1) for t in (1, 2)])
    assert _accountant_epsilon(lap, sens, 0.0) == 0.375 == _accountant_epsilon(lap, sens, 1e-3)
    assert math.isnan(_accountant_epsilon(lap, None, 0.0)) and math.isnan(_accountant_epsilon(Ledger([]), sens, 0))


def test_summarize_matches_numpy_and_keeps_a_nan_run():
    """Means and sems equal numpy's on the raw runs; a NaN run (diverged) makes the mean NaN, not a smaller sample."""
    import pandas as pd

    from asyncdp.experiments.summaries import summarize

    rng = np.random.default_rng(7)
    vals = rng.standard_normal((2, 5))
    vals[1, 3] = np.nan
    df = pd.DataFrame({"e": np.repeat([1.0, 2.0], 5), "point": np.repeat([0, 1], 5), "run": np.tile(range(5), 2),
                       "task_seed": 9, "m": vals.ravel(), "ok": np.tile([True, False, True, True, True], 2)})
    s = summarize(df)
    assert s["runs"].tolist() == [5, 5]
    assert np.isclose(s["m_mean"][0], vals[0].mean(), rtol=1e-15) and np.isclose(
        s["m_sem"][0], vals[0].std(ddof=1) / np.sqrt(5), rtol=1e-14)
    assert math.isnan(s["m_mean"][1]) and math.isnan(s["m_sem"][1])  # pandas alone gave the mean of 4 runs
    assert s["ok_mean"].tolist() == [0.8, 0.8]


def test_sweep_accountant_epsilon_is_network_wide_under_round_adjacency():
    """DPSDA's datum is one round's loss, which moves every agent's release (Cheng, Liao and Li, Def. 1).

    The sweep's ``epsilon_accountant`` must compose all agents' releases, as the privacy check does: with
    Laplace releases it is the sum of sensitivity / scale over the whole ledger (here 7 agents, so the old
    per-agent maximum was 7 times too small), never the largest agent's share.
    """
    import runpy

    from accounting import composition
    from asyncdp.experiments.summaries import _sensitivity
    from asyncdp.experiments.sweep import sweep

    build = runpy.run_path("examples/privacy_check_dpsda.py")
    scenario = build["scenario"]
    df = sweep(lambda k: scenario, {"k": [0]}, runs=1, seed=0, progress=False)
    res = scenario.run()  # lockstep rounds: the ledger (scales, rounds, agents) does not depend on the seed
    sens = _sensitivity(scenario)
    every = math.fsum(float(sens[r.channel][r.round - 1]) / r.scale for r in res.ledger)  # all Laplace releases
    assert {r.mechanism for r in res.ledger} == {"laplace"} and len(res.ledger.agents) == 7
    assert df["epsilon_accountant"].iloc[0] == pytest.approx(every, rel=1e-12)
    one = max(composition.per_agent(res.ledger, composition.basic_composition,
                                    sensitivity=lambda r: float(sens[r.channel][r.round - 1])).values())
    assert every > 6 * one  # the per-agent figure understated it


def test_a_gaussian_claim_without_a_delta_gets_an_accountant_figure_at_the_named_delta():
    """A rule claiming only zCDP is recorded as the pair (inf, 0); its Gaussian releases have no epsilon at delta 0,
    and the sweep's column was NaN with no delta named. It is now the basic composition at the privacy check's
    default delta, which ``delta_accountant`` names; a claim that states a delta keeps it."""
    from dataclasses import dataclass
    from typing import ClassVar

    from accounting import composition
    from accounting.claim_forms import ZeroConcentratedDP
    from asyncdp import Showkatbakhsh
    from asyncdp.experiments.summaries import ACCOUNTANT_DELTA
    from asyncdp.experiments.sweep import sweep
    from asyncdp.privacy import independent_sensitivity
    from asyncdp.privacy.sensitivity import release_sensitivity

    @dataclass(frozen=True)
    class OnlyZCDP(Showkatbakhsh):
        name: ClassVar[str] = "test-sweep-only-zcdp"

        def claimed_privacy(self, horizon: int) -> tuple[float, float]:
            return math.inf, 0.0

        def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
            return ZeroConcentratedDP(5.0)

    base = Showkatbakhsh.example_scenario(seed=1)
    zcdp = base.replace(algorithm=OnlyZCDP(**base.algorithm.params()))
    df = sweep(lambda k: zcdp, {"k": [0]}, runs=1)
    assert math.isinf(df["epsilon_claimed"].iloc[0]) and df["delta_accountant"].iloc[0] == ACCOUNTANT_DELTA == 1e-6
    res = zcdp.run()
    sens = release_sensitivity(independent_sensitivity(zcdp))
    want = max(composition.per_agent(res.ledger, composition.basic_composition, sensitivity=sens,
                                     delta=ACCOUNTANT_DELTA).values())
    assert df["epsilon_accountant"].iloc[0] == pytest.approx(want, rel=1e-12) and math.isfinite(want)
    stated = sweep(lambda k: base, {"k": [0]}, runs=1)
    assert stated["delta_accountant"].iloc[0] == base.algorithm.claimed_privacy(base.horizon)[1] == 1e-3


def test_a_pure_claim_of_gaussian_noise_is_read_at_delta_0_where_its_epsilon_is_infinite():
    """A finite epsilon with delta 0 is a pure claim, which Gaussian noise never meets: read at 1e-6 the column was
    finite (3.8 under a claim of 5), so the table showed a false claim as met."""
    from dataclasses import dataclass
    from typing import ClassVar

    from asyncdp import Showkatbakhsh
    from asyncdp.experiments.sweep import sweep

    @dataclass(frozen=True)
    class PureGaussian(Showkatbakhsh):
        name: ClassVar[str] = "test-sweep-pure-gaussian"

        def claimed_privacy(self, horizon: int) -> tuple[float, float]:
            return 5.0, 0.0

    base = Showkatbakhsh.example_scenario(seed=1)
    df = sweep(lambda k: base.replace(algorithm=PureGaussian(**base.algorithm.params())), {"k": [0]}, runs=1)
    assert (df["epsilon_claimed"].iloc[0], df["epsilon_accountant"].iloc[0], df["delta_accountant"].iloc[0]) == (
        5.0, math.inf, 0.0)

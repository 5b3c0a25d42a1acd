"""Sweep metric columns and summaries (asyncdp.experiments.summaries); summarize over a real sweep is tested in test_sweep.py."""

from __future__ import annotations

import math

import numpy as np


def test_accountant_epsilon_uses_the_claimed_delta_for_gaussian_releases():
    from accounting import composition
    from accounting.ledger import Ledger, Release
    from asyncdp.experiments.summaries import _accountant_epsilon

    sens = {"y": np.array([0.5, 0.25])}  # the lemma's sensitivity of each release, per channel
    gauss = Ledger([Release(a, t, 0.0, "gaussian", 2.0, 1) for a in (0, 1) for t in (1, 2)])
    assert math.isnan(_accountant_epsilon(gauss, sens, 0.0))  # Gaussian needs delta > 0
    want = composition.basic_composition(gauss.for_agent(0), lambda r: float(sens["y"][r.round - 1]), delta=1e-3)
    assert _accountant_epsilon(gauss, sens, 1e-3) == want > 0
    lap = Ledger([Release(0, t, 0.0, "laplace", 2.0, 1) for t in (1, 2)])
    assert _accountant_epsilon(lap, sens, 0.0) == 0.375 == _accountant_epsilon(lap, sens, 1e-3)
    assert math.isnan(_accountant_epsilon(lap, None, 0.0)) and math.isnan(_accountant_epsilon(Ledger([]), sens, 0))

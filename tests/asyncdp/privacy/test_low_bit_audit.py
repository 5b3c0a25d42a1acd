"""Correct Laplace and Gaussian rules on the shipped examples' pairs are not refuted by the low-bits score.

The privacy check's black-box audit reads the low mantissa bits of the
releases (accounting.auditing.lowbits); the rules that hide their data there
are in test_noise_additivity.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.auditing.certify import certify_event, per_bound_alpha
from accounting.auditing.lowbits import fit_low_bit_score
from accounting.auditing.sniper import choose_threshold_event
from asyncdp import load_script
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.blackbox_audit import transcript_features

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONFIDENCE = 0.999


def _gaussian_pair() -> tuple[Any, Any]:
    from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh

    spec = importlib.util.spec_from_file_location("gaussian", EXAMPLES / "privacy_check_gaussian_under_calibrated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make(1e-3, None, rule=Showkatbakhsh)


def _example_pair(name: str) -> tuple[Any, Any]:
    ex = load_script(EXAMPLES / name, names=("scenario", "adjacent"))
    return ex["scenario"], ex["adjacent"]


@pytest.mark.parametrize("make", [lambda: _example_pair("privacy_check_rendezvous.py"),
                                  lambda: _example_pair("privacy_check_dpsda.py"), _gaussian_pair],
                         ids=["huang2015-rendezvous", "dpsda", "showkatbakhsh-gaussian"])
def test_correct_rules_are_not_refuted_by_the_low_bits_score(make):
    """The score alone, on 2000 runs per side (a quarter fit it, half of the rest choose the threshold event of
    each order, the others certify it): the certified bounds stay within the claim. Statistical: four
    Clopper-Pearson bounds at (1 - CONFIDENCE) / 4 each; the runs are fixed by the check's seed."""
    sc, adj = make()
    pair = ScenarioPair(sc, adj)
    ctx = prepare(pair, CheckOptions(runs=2000, search_examples=0))
    eps, delta = ctx.epsilon_claimed, ctx.delta_claimed
    a, b = transcript_features(ctx, 0), transcript_features(ctx, 1)
    fit, select = 500, 1250
    score = fit_low_bit_score(a[:fit], b[:fit])
    sel, cert = (score(a[fit:select]), score(b[fit:select])), (score(a[select:]), score(b[select:]))
    alpha = per_bound_alpha(CONFIDENCE)
    rng = np.random.default_rng(0)
    for direction, (num, den), (cnum, cden) in ((1, sel, cert), (-1, sel[::-1], cert[::-1])):
        event, _ = choose_threshold_event(num, den, direction=direction, n_cert=num.size, n_cert_prime=den.size,
                                          epsilon=eps, delta=delta, alpha=alpha)
        k, k_prime = int(event.contains(cnum, rng).sum()), int(event.contains(cden, rng).sum())
        bound = certify_event(k, cnum.size, k_prime, cden.size, epsilon=eps, delta=delta, alpha=alpha)
        assert bound.epsilon_lower_bound <= eps and bound.delta_lower_bound <= delta, (event, k, k_prime)

"""Correct Gaussian mechanisms are never refuted by the witnesses the privacy check uses.

Every delta witness of the check is one of: the exact profile of a pair with
fixed shifts (:func:`accounting.refutation.refute`), the threshold-event
Clopper–Pearson bound on replayed losses (:func:`accounting.auditors.plrv_audit`
with ``lower_bound="thresholds"``), or importance sampling of tilted
transcripts (:func:`accounting.tilted_replay.tilted_transcripts` and
:func:`accounting.delta_bounds.importance_delta_lower`). Here each meets a
Gaussian pair whose claim is *exactly* its true profile (``epsilon =
epsilon_mu(delta)``, the tightest correct claim), drawn by Hypothesis with
``delta`` in ``[1e-8, 1e-2]``. The exact profile must never refute; each
statistical bound, at per-scenario confidence 0.999, refutes a correct claim
with probability at most 0.001. The properties are statistical tests, so their draws are fixed
(derandomized in every profile): under random draws 200 examples would fail now and then by design.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.auditors import plrv_audit
from accounting.delta_bounds import importance_delta_lower
from accounting.profiles import PrivacyProfile, gaussian_profile_epsilon
from accounting.refutation import refute
from accounting.replay import ReplaySetup
from accounting.tilted_replay import tilted_transcripts

CONFIDENCE = 0.999


class _Shift:
    """One agent whose message is a fixed value ``a`` every round (a Gaussian release shifted by ``a``)."""

    def __init__(self, a: float):
        self.a = a

    def initial_state(self, runs):
        return np.full((runs, 1, 1), self.a)

    def message_mean(self, x, t):
        return x

    def next_state(self, x, mixed, t):
        return x


scenarios = st.tuples(st.floats(0.05, 3.0), st.floats(-8.0, -2.0), st.integers(1, 4), st.integers(0, 2**31 - 1))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(scenarios)
def test_a_correct_gaussian_claim_is_never_refuted(scenario):
    # statistical: two bounds at 0.999 each, a false refutation has probability <= 0.002 per example (draws fixed)
    mu, log_delta, rounds, seed = scenario
    delta = 10.0**log_delta
    eps = gaussian_profile_epsilon(mu, delta)
    # the exact profile (no sampling error): never a witness against the exact claim
    assert not refute((eps, delta), profile=PrivacyProfile(mu)).refuted
    # replayed losses of a Gaussian pair: L ~ N(mu^2 / 2, mu^2) under P
    rng = np.random.default_rng(seed)
    losses = rng.normal(mu * mu / 2.0, mu, size=1000)
    assert not plrv_audit(losses, eps, delta, confidence=CONFIDENCE, lower_bound="thresholds").violation
    # importance sampling of tilted transcripts: `rounds` releases of shift mu / sqrt(rounds) each
    step = mu / np.sqrt(rounds)
    setup = ReplaySetup([np.eye(1)] * rounds, "gaussian", np.ones(rounds))
    t = tilted_transcripts(setup, _Shift(0.0), _Shift(step), 1000, epsilon=eps, mu_bound=mu, seed=seed)
    bound = importance_delta_lower(t.losses, t.log_weights, eps, confidence=CONFIDENCE, cap=t.cap)
    assert bound.lower <= delta


# 200 engine-level scenarios in every run (derandomized in CI): about 3 minutes on one core, one pytest-xdist worker
@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.floats(-8.0, -2.0), st.sampled_from(["lockstep", "deadline", "async"]), st.integers(0, 1000))
def test_the_check_never_refutes_a_correct_gaussian_rule_on_the_engine(log_delta, timing, seed):
    # statistical: the check at confidence 0.999 says violation with probability <= 0.001 per example (draws fixed)
    # engine-level: the correct two-stage rule of Showkatbakhsh, Karakus and Diggavi (arXiv 2019) on the example's
    # mean-estimation pair, every step of the check at confidence 0.999
    import importlib.util
    from pathlib import Path

    from asyncdp import Async, Deadline
    from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
    from asyncdp.privacy import check_privacy

    path = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_gaussian_under_calibrated.py"
    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    timings = {"lockstep": None, "deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
               "async": Async(rate=1.0)}
    scenario, adjacent = example.make(10.0**log_delta, timings[timing], rule=Showkatbakhsh)
    report = check_privacy(scenario, adjacent, runs=300, confidence=CONFIDENCE, seed=seed, search_examples=0)
    assert report.verdict != "violation", report.reasons

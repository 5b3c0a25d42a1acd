"""A push-sum rule whose noise-free weight carries the data below the replay's matching tolerance.

DPSDA-PS (Cheng, Liao and Li, arXiv 2022, eqs. (20)-(22)) sends its push-sum weight ``w_i`` noise-free. The
variant here sends ``w_i + 1e-9 sum_k y_i,k``: the primal estimate ``y_i`` is data-dependent from round 3 on (the
pair differs in round 2's loss), so under the same draws the released weights of the two problems differ by up to
``2e-10`` (the truth, read off the engine's runs below). A noise-free release that differs between the problems
given the same history has an infinite privacy loss, against the claim ``T epsilon = 6`` (pure). The replay read
a noise-free release as matching a problem within ``1e-9 (1 + |mean|)``, so both matched and the round's loss was
0: the check said `pass`. Now, where the two means differ by more than round-off, a release matches the nearer
only (``accounting.replay.noise_free_matches``) and the check finds the infinite loss.

A noise-free weight may also hide another channel's noise draw below the tolerance (``w + 1e-11 z``): both
problems' weights match and the loss is 0, yet the release reveals ``z``. The replay now measures each round's
largest gap in floating-point spacings (``accounting.replay_densities.noise_free_gap``, 0 for the correct rules
here); above the round-off allowance the check is ``inconclusive``.
"""

from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp import Async, ExponentialLatency, LinkModel, Links
from asyncdp.papers.dpsda.rule import DPSDAPS
from asyncdp.privacy import check_privacy

_EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_dpsda.py"


@dataclasses.dataclass(frozen=True)
class WeightCarriesEstimate(DPSDAPS):
    """DPSDA-PS whose noise-free weight message adds ``factor`` times the sum of the node's estimate ``y_i``."""

    factor: float = 1e-9
    name: ClassVar[str] = "test-ps-weight-carries-estimate"

    def message(self, state: Any, t: int, noise: Any, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        out = super().message(state, t, noise, agents, problem)
        return {"h": out["h"], "w": state["w"] + self.factor * state["y"].sum(axis=-1, keepdims=True)}


@dataclasses.dataclass(frozen=True)
class WeightReadsReleases(DPSDAPS):
    """DPSDA-PS whose weight update also reads the mixed noisy channel: post-processing of releases, correct."""

    name: ClassVar[str] = "test-ps-weight-reads-releases"

    def update(self, state: Any, mixed: Any, t: int, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        out = super().update(state, mixed, t, agents, problem)
        return {**out, "w": out["w"] * (1 + 1e-3 * np.tanh(mixed["h"].sum(axis=-1, keepdims=True)))}


def _pair(rule: type, timing: bool, **params: Any) -> tuple[Any, Any]:
    sc, adj = runpy.run_path(str(_EXAMPLE))["build"]("dpsda-ps", clip=True, level="network")
    extra: dict[str, Any] = {}
    if timing:
        extra = dict(timing=Async(rate=1.0, staleness=3),
                     links=Links(LinkModel(latency=ExponentialLatency(mean=0.3), loss=0.1)))
    alg = rule(epsilon=1.0, **params)
    return sc.replace(algorithm=alg, **extra), adj.replace(algorithm=alg, **extra)


@pytest.mark.parametrize(("timing", "factor"), [(False, 1e-9), (True, 1e-9), (False, 1e-11)],
                         ids=["lockstep", "async-lossy", "lockstep-1e-11"])
def test_a_weight_carrying_the_data_below_the_tolerance_is_a_violation(timing, factor):
    sc, adj = _pair(WeightCarriesEstimate, timing, factor=factor)
    # the truth: under the same draws the noise-free weights of the two problems differ, below the replay's
    # matching tolerance 1e-9 (1 + |w|) and by far more than round-off (a 64-spacing margin: 2.8e-14 at |w| < 2)
    w0 = sc.run(engine="batch", runs=60, transcripts=True).messages["w"]
    w1 = adj.run(engine="batch", runs=60, transcripts=True).messages["w"]
    gap = np.abs(w0 - w1).max()
    assert 10 * 64 * np.spacing(2.0) < gap < 1e-9
    report = check_privacy(sc, adj, runs=60, search_examples=0)
    assert report.verdict == "violation", report.reasons
    assert any("privacy loss inf" in r for r in report.reasons), report.reasons


def test_a_weight_that_post_processes_releases_still_passes():
    sc, adj = _pair(WeightReadsReleases, True)
    report = check_privacy(sc, adj, runs=60, search_examples=0)
    assert report.verdict == "pass", report.reasons


@dataclasses.dataclass(frozen=True)
class WeightCarriesNoise(DPSDAPS):
    """DPSDA-PS whose noise-free weight message adds ``1e-11`` times the standard draw of coordinate 0 of ``h``."""

    name: ClassVar[str] = "test-ps-weight-carries-noise"

    def message(self, state: Any, t: int, noise: Any, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        out = super().message(state, t, noise, agents, problem)
        return {"h": out["h"], "w": state["w"] + 1e-11 * noise["h"][..., :1]}


def test_a_weight_carrying_a_noise_draw_below_the_tolerance_does_not_pass():
    from asyncdp.privacy.behavior import run_engine

    sc, adj = _pair(WeightCarriesNoise, False)
    # the truth. A node's weight w_i(t) is public: 1 in round 1, then the round's weights times the weights sent
    # in the round before (lockstep, lossless). So (w sent - w_i(t)) / 1e-11 gives back the draw of h's
    # coordinate 0 to 1e-4, and h_0 minus sigma times it is z_0 to sigma 1e-4. Under the same draws z_0 differs
    # between the problems by far more: given the history, the two problems' (h_0, w) have disjoint supports
    # (delta = 1 at every epsilon), against the pure claim 6.
    runs = run_engine(sc, 10, seed=0)
    sent = runs.messages["w"][..., 0]
    public = np.ones_like(sent)
    for t in range(2, sc.horizon + 1):
        public[:, t - 1] = sent[:, t - 2] @ sc.topology.weights(t - 1).toarray().T
    drawn = (sent - public) / 1e-11
    assert np.abs(drawn - runs.noise["h"][..., 0]).max() < 1e-4
    honest = run_engine(sc.replace(algorithm=DPSDAPS(epsilon=1.0)), 10, seed=0)
    sigma = sc.algorithm.bind(sc.problem).noise_scale(1)
    other = run_engine(adj.replace(algorithm=DPSDAPS(epsilon=1.0)), 10, seed=0)
    assert np.abs(honest.messages["h"][..., 0] - other.messages["h"][..., 0]).max() > 10 * sigma * 1e-4
    report = check_privacy(sc, adj, runs=60, search_examples=0)
    assert report.verdict != "pass", report.reasons
    # the replay's gap of w is ~4e5 spacings of |w| <= 2 (1e-11 |z| / 4.4e-16), the allowance 2 t N = 14..84
    assert any("channel 'w' round" in r and "spacings of its magnitude" in r for r in report.reasons), report.reasons

"""A rule that scales the noise array it is handed in place is compared with the draw the engine made.

The noise conformance step skips its distribution and dependence tests when every release is its declared
scale times the standard draw the engine handed it (``conformance_by_draws``). That is sound only if the draw
it compares with is the one the engine made, not whatever the rule left in the array afterwards:
:class:`~asyncdp.privacy.behavior.RecordingNoise` keeps a copy of every block as it hands it out. Here
``Huang2015`` (Huang, Mitra and Vaidya, ICDCN 2015) halves its handed block in place and then adds it as eq.
(5) prescribes, so it releases ``x + (M_t / 2) z``. Were the recorded draw the mutated array, every release
would match it, the tests would be skipped and the under-noise would go unrefuted (measured with a recorder
that keeps the handed array itself: ``conformance_by_draws`` true, 0 mismatches, verdict ``inconclusive`` on
both engines instead of ``violation``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from asyncdp.papers.huang2015.rule import Huang2015
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import small_example


@dataclass(frozen=True)
class HalvesItsNoiseInPlace(Huang2015):
    """Huang2015 that halves the standard noise array it is handed, in place, before releasing it."""

    def message(self, state, t, noise, agents, problem):
        block = noise["y"]
        block *= 0.5  # the engine's own array
        return super().message(state, t, noise, agents, problem)


@pytest.mark.parametrize("engine", ["batch", "simpy"])
def test_noise_halved_in_place_mismatches_every_draw_and_is_refuted(engine):
    pair, _ = small_example()
    rule = HalvesItsNoiseInPlace(**{f.name: getattr(pair.scenario.algorithm, f.name)
                                    for f in dataclasses.fields(Huang2015)})
    runs = 200
    report = check_privacy(pair.scenario.replace(algorithm=rule), pair.adjacent.replace(algorithm=rule),
                           runs=runs, search_examples=0, engine=engine)
    noise = next(e for e in report.evidence if e.method == "noise conformance")
    released = runs * pair.scenario.horizon * pair.scenario.problem.num_agents * 2  # (R, T, N, d = 2), all sent
    # each release carries half its draw: |residual - M_t z| = M_t |z| / 2 exceeds the tolerance (1e-10 M_t)
    # unless |z| < 2e-10, and the other sign is three times farther off: every coordinate mismatches
    assert noise.figures["noise_draws_checked"] == released
    assert noise.figures["noise_draws_mismatched"] == released
    assert noise.figures["conformance_by_draws"] is False and noise.figures["conformance_tests"] > 0
    # the distribution tests then run and name the under-noise: the smallest per-release scale ratio (a mean absolute
    # standardized residual) is about 1/2, with standard error 0.5 / sqrt(samples) <= 0.025 (|z| of standard
    # Laplace noise has standard deviation 1; a release has 400 residuals): 0.75 is 10 errors away
    assert report.verdict == "violation"
    assert report.witness["kind"] in ("conformance", "worst-case")  # (at the released scale: released_scale)
    assert noise.figures["conformance_min_scale_ratio"] < 0.75

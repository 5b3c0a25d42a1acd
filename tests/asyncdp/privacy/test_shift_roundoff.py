"""A correct rule whose releases are large numbers is not refuted by the round-off of its realized shifts.

The rule is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` (lemma ``2 a C`` from round 2,
exact) on a rendezvous problem whose addresses and start lie near ``1e8``; agent 0's two addresses pull its
clipped gradient in opposite directions, so each realized shift of its release is the lemma exactly in real
arithmetic. The shift is a difference of two numbers near ``1e8`` (spacing ``1.5e-8``), so it carries a few
spacings of round-off, far above the comparison's relative tolerance of the lemma (``1e-9`` of 0.2): the coverage
step reported "shift 0.2 > bound 0.2" and the check said ``violation`` to a true claim. The same holds for a
rule whose states live near ``1e8`` and which releases offsets from them: its releases are small numbers, but its
shifts carry the round-off of the states (``OffsetReleases``). Where that round-off is not negligible against the
lemma's loss, the check says the comparison is unresolved instead of passing a lemma it cannot see exceeded.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import ZeroConcentratedDP
from accounting.profiles import gaussian_profile_epsilon
from asyncdp import Scenario, rendezvous_problem
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
HORIZON, OFFSET = 6, 1e8
# the independent truth: every release of agent 0 from round 2 on is a Gaussian mechanism of sensitivity 2 a C
# (the lemma, attained), so agent 0's releases are exactly rho-zCDP with this rho; the claim allows 1% more
RHO = (HORIZON - 1) * (2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA) ** 2 / 2


@dataclass(frozen=True)
class FarAway(noisy_dgd.NoisyDGD):
    name: ClassVar[str] = "test-far-away"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(1e-6), 1e-6

    def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
        return ZeroConcentratedDP(1.01 * RHO)


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    with noisy_dgd.registered((FarAway,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        yield


def test_a_shift_at_the_lemma_of_releases_near_1e8_is_not_a_violation():
    n = 4
    addresses = OFFSET + np.random.default_rng(3).uniform(-1.0, 1.0, size=(n, 2))
    addresses[0] = OFFSET + 1e3
    problem = rendezvous_problem(addresses, low=-2 * OFFSET, high=2 * OFFSET)
    sc = Scenario(problem, topology.static(noisy_dgd.ring(n)), FarAway(), horizon=HORIZON, seed=3,
                  x0=np.full((n, 2), OFFSET))
    adj = sc.replace(problem=problem.adjacent(0, address=np.full(2, OFFSET - 1e3)))
    report = check_privacy(sc, adj, runs=200, delta=1e-6)
    assert report.verdict != "violation", (report.witness, report.reasons)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    # the shifts reach the lemma (to round-off): the comparison is not vacuous
    assert coverage.figures["coverage_max_ratio"] == pytest.approx(1.0, abs=1e-6)


def test_a_rule_releasing_float32_is_not_refuted_by_the_rounding_of_its_releases():
    """Huang2015 releasing ``float32(x + M_t z)``: the rounding is post-processing of the Laplace mechanism's
    release, so the claim holds as it does for the float64 release; the worst-case search's lemma comparison
    allowed the round-off of float64 releases only, and a constructed round-10 loss over the lemma by float32
    rounding (ratio 1.05) was reported as an exact violation."""
    from asyncdp import Huang2015
    from asyncdp.privacy.context import small_pair

    @dataclass(frozen=True)
    class Float32Releases(Huang2015):
        name: ClassVar[str] = "huang2015-float32-test"

        def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
            y = super().message(state, t, noise, agents, problem)["y"]
            return {"y": np.asarray(y, dtype=np.float32).astype(np.float64)}

    pair = small_pair(Float32Releases)
    report = check_privacy(pair.scenario, pair.adjacent, runs=300)
    assert report.verdict != "violation", (report.witness, report.reasons)


@dataclass(frozen=True)
class Float32DGD(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` releasing ``float32(x + sigma z)``: post-processing of its Gaussian release (lemma ``2 a C``,
    exactly tight for a linear cost)."""

    name: ClassVar[str] = "test-float32-dgd"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 4.0, 1e-2

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        y = super().message(state, t, noise, agents, problem)["y"]
        return {"y": np.asarray(y, dtype=np.float32).astype(np.float64)}


def test_a_float32_release_on_an_exactly_tight_lemma_is_not_a_violation():
    # truth: float32 rounding is post-processing of the Gaussian release, whose shift is at most the lemma's
    # 2 a C = 0.2 (mu = 0.2 sqrt(9) = 0.6: epsilon(1e-2) ~ 0.9 < the claimed 4): the claim holds. The lemma
    # comparison allowed 4 float64 spacings of a shift, and float32 rounding moved a linear cost's shift of
    # exactly 0.2 by a float32 spacing: "violation" (ratio 1); float32 spacings now
    with noisy_dgd.registered((Float32DGD,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        sc, adj = noisy_dgd.rendezvous_pair(Float32DGD(), topology.static(noisy_dgd.ring(4)), 10)
        report = check_privacy(sc, adj, runs=200, confidence=0.999, search_examples=0)
    assert report.verdict != "violation", (report.witness, report.reasons)


@dataclass(frozen=True)
class Float32State(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` keeping its decision in float32 and releasing ``x + sigma z`` in float64: the noise-free
    release is a float32 number, computed in float32 arithmetic, so a shift of exactly ``2 a C`` in real
    arithmetic carries float32 round-off of the decision's magnitude."""

    name: ClassVar[str] = "test-float32-state"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 4.0, 1e-2

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        out = super().update(state, mixed, t, agents, problem)
        return {**out, "x": np.asarray(out["x"], dtype=np.float32)}


@pytest.mark.xfail(strict=True, reason="known limit: the lemma comparisons (the prober's radial pair, the "
                   "worst-case search) allow round-off in the precision of the released values (float64 here), "
                   "not in the precision the rule computes its state in; a float32 state moves the shift by a "
                   "float32 spacing of |x| (0.2000038 > 0.2 at |x| = 46)")
def test_a_float32_state_with_float64_releases_on_an_exactly_tight_lemma_is_not_a_violation():
    # truth: as for Float32DGD, each release is the Gaussian mechanism on a decision whose shift is the lemma's
    # 2 a C = 0.2 up to float32 rounding of the decision (relative 6e-8 of |x|): epsilon(1e-2) ~ 0.9 < the claimed
    # 4 (mu = 0.2 sqrt(9) = 0.6); the rounding is no leak, the claim holds
    with noisy_dgd.registered((Float32State,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        sc, adj = noisy_dgd.rendezvous_pair(Float32State(), topology.static(noisy_dgd.ring(4)), 10)
        report = check_privacy(sc, adj, runs=200, confidence=0.999, search_examples=0)
    assert report.verdict != "violation", (report.witness, report.reasons)


@dataclass(frozen=True)
class OffsetReleases(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` in a frame near ``1e8``: the states live near ``OFFSET``, the releases are offsets from it,
    ``y = (x - OFFSET) + sigma N(0, I)``, and ``z = OFFSET + sum_j W_ij y_j``. Step ``0.15`` is not a multiple
    of the spacing of ``1e8``: ``x = z -+ a g`` rounds to a shift ``2 a C`` + 1.2e-8 on every release."""

    name: ClassVar[str] = "test-offset-releases"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": (state["x"] - OFFSET) + noisy_dgd.SIGMA * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return super().update(state, {"y": OFFSET + mixed["y"]}, t, agents, problem)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        # twice the exact epsilon at 1e-5 of agent 0's releases at the lemma 2 a C (the step read when called)
        mu = math.sqrt(horizon - 1) * 2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA
        return 2.0 * gaussian_profile_epsilon(mu, 1e-5), 1e-5


def test_offsets_from_states_near_1e8_are_not_refuted_by_the_states_round_off(monkeypatch):
    # Independent truth (closed form): given the earlier releases, agent 0's release moves by the difference of
    # two states near 1e8 rounded once each, 2 a C + 1.2e-8 at most (relative 4e-8; 2 a C = 0.3 here), so the
    # releases compose into one Gaussian pair of mu' < 1.0000001 mu: the claim, twice epsilon(mu) at 1e-5, holds.
    # The round-off allowance of the lemma comparisons was the spacing of the released values (near 1, 2e-16),
    # and the worst case's linear extremal pair, at the lemma in real arithmetic, was "shift 0.3 > bound 0.3":
    # violation (also with a claim ten times epsilon(mu), and for the Laplace rule's exact pure claim).
    monkeypatch.setattr(noisy_dgd, "STEP", 0.15)
    with noisy_dgd.registered((OffsetReleases,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = _offset_report()
    assert report.verdict == "pass", (report.witness, report.reasons)


def _offset_report() -> Any:
    n = 4
    addresses = OFFSET + np.random.default_rng(7).uniform(-1.0, 1.0, size=(n, 2))
    addresses[0] = OFFSET + 1.0
    problem = rendezvous_problem(addresses, low=OFFSET - 50.0, high=OFFSET + 50.0)
    sc = Scenario(problem, topology.static(noisy_dgd.ring(n)), OffsetReleases(), horizon=HORIZON, seed=7,
                  x0=np.full((n, 2), OFFSET))
    adj = sc.replace(problem=problem.adjacent(0, address=np.full(2, OFFSET - 1.0)))
    return check_privacy(sc, adj, runs=200, search_examples=0)


def test_a_lemma_below_the_states_resolution_is_unresolved_not_passed(monkeypatch):
    # The round-off allowance above must not let a wrong lemma pass where it is as large as the lemma: states near
    # 1e8 (spacing 1.5e-8), step 1e-7 and noise 2e-7, and a lemma of half the true shift 2 a C = 2e-7 (each release
    # moves twice as far as the lemma, the claim composed from it is false). The shift 2e-7 lies within the
    # allowance (8 spacings, 1.2e-7) of the lemma 1e-7, so no comparison sees it: the check must say so.
    monkeypatch.setattr(noisy_dgd, "STEP", 1e-7)
    monkeypatch.setattr(noisy_dgd, "SIGMA", 2e-7)
    with noisy_dgd.registered((OffsetReleases,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__,
                              lemma=lambda sc: 0.5 * noisy_dgd.lemma(sc)):
        report = _offset_report()
    assert report.verdict != "pass"
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    assert coverage.doubt is not None and "are not seen" in coverage.doubt


@dataclass(frozen=True)
class TinySteps(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` with states and releases near 0: its round-off is far below the comparisons' floor 1e-12."""

    name: ClassVar[str] = "test-tiny-steps"


def test_a_lemma_below_the_comparisons_floor_is_unresolved_not_passed(monkeypatch):
    # The lemma comparisons allow at least 1e-12 (their floor) on top of the round-off. States and releases near 0
    # (round-off ~1e-29), step 1e-14 and noise 2e-14, a lemma of half the true shift 2 a C = 2e-14: each release
    # moves twice as far as the lemma, within the floor, so no comparison sees it. The doubt measured the round-off
    # alone (1e-29 per shift, nothing of the lemma's loss) and coverage said nothing.
    monkeypatch.setattr(noisy_dgd, "STEP", 1e-14)
    monkeypatch.setattr(noisy_dgd, "SIGMA", 2e-14)
    with noisy_dgd.registered((TinySteps,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__,
                              lemma=lambda sc: 0.5 * noisy_dgd.lemma(sc)):
        sc, adj = noisy_dgd.rendezvous_pair(TinySteps(), topology.static(noisy_dgd.ring(4)), HORIZON)
        report = check_privacy(sc, adj, runs=50, search_examples=0)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    assert coverage.figures["coverage_uncovered"] == 0  # the shifts 2e-14 lie within the floor of the lemma 1e-14
    assert coverage.doubt is not None and "are not seen" in coverage.doubt


@dataclass(frozen=True)
class FineFirstRound(noisy_dgd.NoisyDGD):
    """Noise ``1e-6`` in round 1 and 1 after it, each round's lemma the same multiple of its noise."""

    name: ClassVar[str] = "test-fine-first-round"

    def noise(self, t: int, channel: str) -> Any:
        from asyncdp.algorithms import NoiseDeclaration

        return NoiseDeclaration("gaussian", 1e-6 if t == 1 else 1.0, self.dim, 1e-6 if t == 1 else 1.0)


@pytest.mark.parametrize("focus, doubted", [(None, False), (0, True)])
def test_a_per_iteration_claim_weighs_the_round_off_of_each_round(focus, doubted):
    # 50 rounds, each with loss 1 under the lemma; an allowance of 1e-9 hides a loss of 1e-3 in round 1 (noise 1e-6)
    # and 1e-9 in each other: 2e-5 of the run's loss 50 (resolved for a claim over the run), but 1e-3 of the loss
    # of one round, which a per-iteration claim bounds (the sum over the rounds diluted it fifty-fold)
    from types import SimpleNamespace

    from asyncdp.privacy.coverage import _unresolved

    horizon = 50
    alg = FineFirstRound(dim=2)
    ctx = SimpleNamespace(algorithm=alg, focus=focus,
                          sensitivity={"y": np.array([1e-6] + [1.0] * (horizon - 1))})
    assert (_unresolved(ctx, horizon, 1e-9) is not None) == doubted


def test_a_zero_lemma_with_a_loss_the_allowance_can_hide_is_unresolved():
    # a lemma of 0 on every noisy round (the accountant's epsilon 0) with an allowance of 1e-9 against noise 1e-6:
    # shifts of 1e-9 (a loss of 1e-3 per round) pass unseen; the doubt read "no lemma loss" as nothing to hide
    from types import SimpleNamespace

    from asyncdp.privacy.coverage import _unresolved

    ctx = SimpleNamespace(algorithm=FineFirstRound(dim=2), focus=None, sensitivity={"y": np.zeros(3)})
    assert _unresolved(ctx, 3, 1e-9) is not None


def _float32_reference(values: np.ndarray) -> bool:
    """The whole-array definition: some finite value, and every finite value a float32 number."""
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        return bool(finite.size) and bool(np.all(finite.astype(np.float32).astype(np.float64) == finite))


@pytest.mark.parametrize("case", ["float32", "float64 first", "float64 beyond the head", "nan only", "empty",
                                  "inf and float32", "beyond float32's range in the tail", "head of nan"])
def test_release_spacing_reads_the_head_first_with_the_answer_of_the_whole_array(case):
    from asyncdp.privacy.roundoff import _FLOAT32_HEAD, _all_float32, release_spacing

    size = 3 * _FLOAT32_HEAD
    a = np.random.default_rng(5).normal(size=size).astype(np.float32).astype(float)
    if case == "float64 first":
        a[0] = 0.1
    elif case == "float64 beyond the head":
        a[_FLOAT32_HEAD + 7] = 0.1  # every value the head reads is a float32 number
    elif case == "nan only":
        a[:] = np.nan
    elif case == "empty":
        a = a[:0]
    elif case == "inf and float32":
        a[::3] = np.inf
    elif case == "beyond float32's range in the tail":
        a[-1] = 1e300
    elif case == "head of nan":
        a[:_FLOAT32_HEAD] = np.nan
        a[-1] = 0.1
    want = _float32_reference(a)
    assert _all_float32(a.reshape(-1, 3)) is want
    expected = np.spacing(np.float32(2.0)).astype(float) if want else np.spacing(2.0)
    assert release_spacing(a.reshape(-1, 3), 2.0) == expected


@pytest.mark.parametrize("values", [[0.5, -3.0, np.nan], [np.nan, np.nan], [], [np.inf, -0.0, np.nan], [-np.inf, 0.1]])
def test_coordinate_roundoff_takes_the_largest_finite_release(values):
    from asyncdp.privacy.coverage import coordinate_roundoff
    from asyncdp.privacy.roundoff import release_spacing

    a = np.abs(np.array(values, dtype=float))
    finite = a[np.isfinite(a)]
    want = 4.0 * float(release_spacing(a, max(float(finite.max()), 1.0))) if finite.size else 0.0
    assert coordinate_roundoff(np.array(values, dtype=float), 1.0) == want

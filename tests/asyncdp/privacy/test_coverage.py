"""No `pass` for a pair the accountant's sensitivity does not cover: realized shifts against the lemma."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from accounting.errors import AdjacencyError
from asyncdp.cli import main
from asyncdp.papers.wang_basar.rule import WangBasar
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare, small_example
from asyncdp.privacy.coverage import check_coverage, class_relation

WB_SCRIPT = '''
import numpy as np
from asyncdp.papers.wang_basar.rule import WangBasar
scenario = WangBasar.example_scenario(seed=1).replace(algorithm=WangBasar(noise_variance=400.0))
y0 = scenario.problem.costs.measurements[0]
adjacent = scenario.replace(problem=scenario.problem.adjacent(0, measurement=y0 + np.array({shift})))
'''


def _wang_basar_pair(shift):
    scenario = WangBasar.example_scenario(seed=1).replace(algorithm=WangBasar(noise_variance=400.0))
    y0 = scenario.problem.costs.measurements[0]
    return ScenarioPair(scenario, scenario.replace(problem=scenario.problem.adjacent(0, measurement=y0 + shift)))


def test_the_wang_basar_pair_outside_gradient_adjacency_is_refused_on_the_command_line(tmp_path, capsys):
    # agent 0's measurement moved by (0.5, -0.5, 0.5): its gradient moves by more than 1 in l1 (eq. 30's class),
    # so the round-1 message shift lam * ||g - g'||_2 exceeds the lemma's lam; this pair used to `pass`
    script = Path(tmp_path) / "pair.py"
    script.write_text(WB_SCRIPT.format(shift="[0.5, -0.5, 0.5]"))
    code = main(["privacy", "check", str(script), "--runs", "1000", "--search-examples", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("asyncdp: error:")
    for part in ("adjacency class", "'wang-basar'", "agent 0", "round 1", "shift 0.0447214 > the lemma's bound 0.02"):
        assert part in err[0]


def test_the_class_relation_is_checked_on_the_pair_directly():
    out = _wang_basar_pair(np.array([0.5, -0.5, 0.5]))
    ctx = prepare(out, CheckOptions(runs=50, search_examples=0))
    assert "two gradients differ by" in class_relation(out, ctx)
    with pytest.raises(AdjacencyError, match="adjacency class"):
        check_coverage(out, ctx)


def test_a_pair_inside_gradient_adjacency_is_covered_and_not_refused():
    # a measurement change small enough that the gradient difference stays below 1 in l1 at every point of the runs
    inside = _wang_basar_pair(np.array([0.01, 0.0, 0.0]))
    ctx = prepare(inside, CheckOptions(runs=50, search_examples=0))
    assert class_relation(inside, ctx) is None
    e = check_coverage(inside, ctx)
    assert e.witness is None and e.figures["coverage_uncovered"] == 0
    assert 0 < e.figures["coverage_max_ratio"] <= 1.0


def test_a_lemma_below_the_realized_shift_is_a_witness_against_it():
    pair, ctx = small_example(runs=50)
    honest = check_coverage(pair, ctx)
    assert honest.witness is None and honest.figures["coverage_max_ratio"] > 0
    # a lemma at half the largest realized ratio's bound cannot cover the pair's own shifts
    factor = 0.5 * honest.figures["coverage_max_ratio"]
    weak = dataclasses.replace(ctx, sensitivity={c: s * factor for c, s in ctx.sensitivity.items()}, cache={})
    e = check_coverage(pair, weak)
    w = e.witness
    assert w is not None and w["kind"] == "coverage" and w["against"] == "lemma"
    assert w["agent"] == ctx.changed_agent and w["shift"] > w["bound"]
    assert {"method", "confidence", "claim_form"} <= set(w)


def test_a_check_whose_lemma_misses_the_shift_never_passes(monkeypatch):
    import asyncdp.privacy.context as context_module

    pair, _ = small_example(runs=50)
    real = context_module.prepare

    def shrunk(p, options):
        ctx = real(p, options)
        return dataclasses.replace(ctx, sensitivity={c: s * 1e-3 for c, s in ctx.sensitivity.items()})

    import asyncdp.privacy.check as check_module

    monkeypatch.setattr(check_module, "prepare", shrunk)
    report = check_privacy(pair.scenario, pair.adjacent, runs=200, search_examples=0)
    assert report.verdict == "violation"
    assert any(e.method == "sensitivity coverage" and e.witness is not None for e in report.evidence)


def test_the_shifts_come_from_one_replay_of_each_scenarios_runs_under_both_problems(monkeypatch):
    from asyncdp.privacy import context, coverage
    from asyncdp.privacy.behavior import replay_runs

    pair, ctx = small_example(runs=60)
    replay = ctx.realized_replay()
    separate = replay_runs(ctx.engine_runs(0), pair.adjacent, algorithm=ctx.algorithm)  # P' as the rule
    assert replay.residuals_prime is not None
    np.testing.assert_array_equal(replay.residuals_prime["y"], separate.residuals["y"])

    # the adjacent scenario's runs are replayed once (under both problems at once); the scenario's never again
    runs1 = ctx.engine_runs(1)
    calls = []

    def only_the_adjacent_runs(runs, *args, **kwargs):
        if runs is not runs1:
            raise AssertionError("the shifts replayed the scenario's runs a second time")
        calls.append(runs)
        return replay_runs(runs, *args, **kwargs)

    monkeypatch.setattr(coverage, "replay_runs", only_the_adjacent_runs)
    monkeypatch.setattr(context, "replay_runs", only_the_adjacent_runs)  # CheckContext.adjacent_replay
    shifts = coverage.pair_shifts(pair, ctx)
    assert len(calls) == 1 and ctx.adjacent_replay() is ctx.adjacent_replay()
    np.testing.assert_array_equal(shifts["y"][:60], separate.residuals["y"] - replay.residuals["y"])
    side1_p = replay_runs(runs1, pair.scenario, algorithm=ctx.algorithm)
    side1_p_prime = replay_runs(runs1, pair.adjacent, algorithm=ctx.algorithm)
    np.testing.assert_allclose(shifts["y"][60:], side1_p_prime.residuals["y"] - side1_p.residuals["y"],
                               rtol=0, atol=1e-12)


def test_the_coverage_ratio_equals_the_largest_ratio_over_every_run():
    """The largest shift over the runs divided by its bound is the largest of every run's ratios (plain)."""
    from accounting.coverage import release_norms
    from asyncdp.privacy.coverage import pair_shifts

    pair, ctx = small_example(runs=60)
    e = check_coverage(pair, ctx)
    plain = 0.0
    for c, s in pair_shifts(pair, ctx).items():
        mags = release_norms(s, "laplace", c)  # huang2015 releases Laplace noise
        for r, t, i in zip(*np.nonzero(np.isfinite(mags))):
            bound = ctx.sensitivity[c][t] if i == ctx.changed_agent else 0.0
            ratio = mags[r, t, i] / bound if bound > 0 else (np.inf if mags[r, t, i] > 1e-12 else 0.0)
            plain = max(plain, ratio)
    assert plain > 0 and e.figures["coverage_max_ratio"] == plain


def test_a_shift_above_the_bound_on_a_pair_with_gradients_above_a_bounded_gradient_class_is_a_doubt():
    """A rule that does not clip, its lemma ``2 a C`` for costs with gradients of norm <= C (true on that class),
    and a user's pair whose gradients are about 80: its releases move more than the lemma's bound, but so would a
    clipping rule's with a wrong lemma, and a class ``kind="each"`` is never a refusal (clipping rules put every
    pair in it). It was a coverage witness and ``violation`` (the reason said only "the pair is not shown to lie
    outside"); it is a doubt naming the agent and the gradients' norm, and no coverage witness. The sensitivity
    prober probes the same pair and finds an update moving the release by far more than the rule's declared
    ``2 a C``, at an input where the pair's gradients are far above ``C`` too: a doubt as well, not a witness
    against the declaration. Nothing refutes this correct rule (which claims nothing: ``no-claim``, where both
    witnesses made it ``violation``)."""
    import sys

    import topology
    from asyncdp.papers import GradientClass

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]

    @dataclasses.dataclass(frozen=True)
    class Unclipped(noisy_dgd.NoisyDGD):
        name = "test-coverage-unclipped"

        def update(self, state, mixed, t, agents, problem):
            return noisy_dgd.unclipped_step(mixed, t, agents, problem)

    sc, _ = noisy_dgd.rendezvous_pair(Unclipped(), topology.static(noisy_dgd.ring(4)), 4)
    adj = sc.replace(problem=sc.problem.adjacent(0, address=[40.0, 40.0]))
    with noisy_dgd.registered([Unclipped], lambda s: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(sc, adj, runs=50, search_examples=0)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    assert coverage.witness is None and coverage.doubt is not None
    assert "agent 0's gradients reach L2 norm" in coverage.doubt and "the check cannot tell which" in coverage.doubt
    prober = next(e for e in report.evidence if e.method == "sensitivity prober")
    assert prober.witness is None and "(the probe's input)" in prober.doubt
    assert report.verdict == "no-claim" and report.witness is None


def test_a_shift_above_the_bound_on_a_pair_within_a_bounded_gradient_class_stays_a_witness():
    """The same unclipped rule under a class of gradients bounded by 1000 (which the tests' rendezvous pair meets at
    every released value: its gradients ``x - a`` stay within a few units) and a lemma of 0.001 per release, far
    below the pair's realized shift ``a |a_0 - a_0'| = 0.0141``: the shift is evidence against the lemma, a
    coverage witness and ``violation``."""
    import sys

    import topology
    from asyncdp.papers import GradientClass

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]

    @dataclasses.dataclass(frozen=True)
    class Unclipped(noisy_dgd.NoisyDGD):
        name = "test-coverage-unclipped-in-class"

        def update(self, state, mixed, t, agents, problem):
            return noisy_dgd.unclipped_step(mixed, t, agents, problem)

    def small_lemma(sc):
        out = np.full(sc.horizon, 1e-3)
        out[0] = 0.0
        return out

    sc, adj = noisy_dgd.rendezvous_pair(Unclipped(), topology.static(noisy_dgd.ring(4)), 4)
    with noisy_dgd.registered([Unclipped], lambda s: GradientClass(1e3, "l2"), origin=__file__, lemma=small_lemma):
        report = check_privacy(sc, adj, runs=50, search_examples=0)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    assert coverage.doubt is None and coverage.witness is not None and coverage.witness["kind"] == "coverage"
    assert report.verdict == "violation"


@pytest.mark.parametrize("momentum", [0.5, 0.0])
def test_a_clipping_rule_whose_lemma_ignores_its_momentum_is_refuted_by_pairs_of_the_class(momentum):
    """The coverage witness a bounded-gradient class loses is not the only one: a clipping rule with heavy-ball
    momentum ``m = b m + clip(g)``, ``x = z - a m``, moves a release by up to ``2 a C (1 + b + ... )`` given the
    released past, while its record keeps the fixture's lemma ``2 a C`` (too small by up to 2 for ``b = 1/2``). The
    prober probes one update from the same state on both sides, so it cannot see the momentum carried over; the
    user's pair (agent 0 moved from (1, 1) to (-40, -40)) has gradients far above ``C`` where it releases, so
    coverage reports a doubt. The worst-case search's realized shifts on the class's own (linear) pairs refute the
    lemma: ``violation``. Without momentum (``b = 0``: the lemma is true) nothing refutes it."""
    import sys

    import topology
    from asyncdp.algorithms.clipping import clip_l2
    from asyncdp.papers import GradientClass

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]

    @dataclasses.dataclass(frozen=True)
    class Momentum(noisy_dgd.NoisyDGD):
        name = "test-coverage-momentum"
        beta: float = 0.0

        def initial_state(self, x0, agents, problem):
            x = np.array(x0, dtype=float, copy=True)
            return {"x": x, "m": np.zeros_like(x)}

        def update(self, state, mixed, t, agents, problem):
            z = mixed["y"]
            m = self.beta * state["m"] + clip_l2(problem.costs.gradient(agents, z, round_index=t), noisy_dgd.CLIP)
            return {"x": problem.domain.project(z - noisy_dgd.STEP * m), "m": m}

    sc, _ = noisy_dgd.rendezvous_pair(Momentum(beta=momentum), topology.static(noisy_dgd.ring(4)), 6)
    adj = sc.replace(problem=sc.problem.adjacent(0, address=[-40.0, -40.0]))
    with noisy_dgd.registered([Momentum], lambda s: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(sc, adj, runs=50, search_examples=0)
    coverage = next(e for e in report.evidence if e.method == "sensitivity coverage")
    prober = next(e for e in report.evidence if e.method == "sensitivity prober")
    worst = next(e for e in report.evidence if e.method == "worst-case adjacency search")
    assert prober.witness is None
    if momentum:
        assert coverage.witness is None and "the check cannot tell which" in coverage.doubt
        assert report.verdict == "violation" and worst.witness is not None and worst.witness["against"] == "lemma"
        # the round-6 release carries 5 rounds of momentum: loss ratio (1 + 1/2 + ... + 1/16)^2 = 3.75 (Gaussian)
        assert worst.witness["ratio"] > 3
    else:
        assert coverage.doubt is None and worst.witness is None and report.witness is None


def test_witnesses_on_a_pair_outside_a_bounded_gradient_class_are_set_aside_for_a_correct_unclipped_rule():
    """The unclipped rule with an (epsilon, delta) claim true on its class (the Gaussian profile of ``T - 1``
    releases moved by ``2 a C``, times 1.05) and agent 0 moved to (40, 40): the exact replay's and the black-box
    audit's witnesses on that pair (its releases move 55 times the lemma's bound) made a correct claim a
    ``violation``; they rest on a pair outside the class, so they are doubts, and the verdict is ``inconclusive``.
    The near pair of the same rule (inside the class) passes."""
    import math
    import sys

    import topology
    from accounting.profiles import gaussian_profile_epsilon
    from asyncdp.papers import GradientClass

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    horizon = 4
    eps = 1.05 * gaussian_profile_epsilon(2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA
                                          * math.sqrt(horizon - 1), 1e-5)

    @dataclasses.dataclass(frozen=True)
    class UnclippedClaim(noisy_dgd.NoisyDGD):
        name = "test-coverage-unclipped-claim"

        def claimed_privacy(self, horizon):
            return (eps, 1e-5)

        def update(self, state, mixed, t, agents, problem):
            return noisy_dgd.unclipped_step(mixed, t, agents, problem)

    sc, near = noisy_dgd.rendezvous_pair(UnclippedClaim(), topology.static(noisy_dgd.ring(4)), horizon)
    far = sc.replace(problem=sc.problem.adjacent(0, address=[40.0, 40.0]))
    with noisy_dgd.registered([UnclippedClaim], lambda s: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        assert check_privacy(sc, near, runs=300).verdict == "pass"
        report = check_privacy(sc, far, runs=300)
    assert report.verdict == "inconclusive" and report.witness is None
    set_aside = [e for e in report.evidence if e.method in ("exact replay", "black-box audit")
                 and "its witness is on the user's pair" in (e.doubt or "")]
    assert set_aside, [(e.method, e.doubt) for e in report.evidence]


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_property_check_sets_aside_its_own_pair_witness_outside_a_bounded_gradient_class(mechanism):
    """``assert_private`` (the property check: the pair's own ``delta(epsilon)`` step in place of the worst-case
    search) on the correct unclipped rule with agent 0 moved to (40, 40): the pair step's witness rests on that pair
    too (Gaussian, (epsilon, delta): its realized shifts over the lemma, kind ``"sensitivity"``; Laplace, pure: its
    constructed transcripts' loss, kind ``"pair"``), so it is a doubt like the exact replay's: ``inconclusive``, not
    a ``violation`` of a claim true on the class. The near pair passes."""
    import math
    import sys

    import topology
    from accounting.profiles import gaussian_profile_epsilon
    from asyncdp.algorithms import Channel, NoiseDeclaration
    from asyncdp.papers import GradientClass
    from asyncdp.privacy.properties import assert_private

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    horizon, a, c = 4, noisy_dgd.STEP, noisy_dgd.CLIP
    l1 = 2 * a * c * math.sqrt(2)  # the L1 norm of a 2-d shift of L2 norm 2 a C, at most

    @dataclasses.dataclass(frozen=True)
    class UnclippedGaussian(noisy_dgd.NoisyDGD):
        name = "test-coverage-unclipped-property-gaussian"

        def claimed_privacy(self, horizon):
            return (1.05 * gaussian_profile_epsilon(2 * a * c / noisy_dgd.SIGMA * math.sqrt(horizon - 1), 1e-5), 1e-5)

        def update(self, state, mixed, t, agents, problem):
            return noisy_dgd.unclipped_step(mixed, t, agents, problem)

    @dataclasses.dataclass(frozen=True)
    class UnclippedLaplace(UnclippedGaussian):
        name = "test-coverage-unclipped-property-laplace"
        channels = (Channel("y", "laplace"),)

        def noise(self, t, channel):
            return NoiseDeclaration("laplace", 1.0, self.dim, 0.0 if t == 1 else l1)

        def message(self, state, t, noise, agents, problem):
            return {"y": state["x"] + noise["y"]}

        def claimed_privacy(self, horizon):
            return (1.05 * (horizon - 1) * l1, 0.0)

    def l1_lemma(sc):
        out = np.full(sc.horizon, l1)
        out[0] = 0.0
        return out

    rule, lemma = (UnclippedGaussian, noisy_dgd.lemma) if mechanism == "gaussian" else (UnclippedLaplace, l1_lemma)
    sc, near = noisy_dgd.rendezvous_pair(rule(), topology.static(noisy_dgd.ring(4)), horizon)
    far = sc.replace(problem=sc.problem.adjacent(0, address=[40.0, 40.0]))
    with noisy_dgd.registered([rule], lambda s: GradientClass(c, "l2"), origin=__file__, lemma=lemma):
        assert assert_private(sc, near, runs=100).verdict == "pass"
        report = assert_private(sc, far, runs=100, allow_inconclusive=True)
    assert report.verdict == "inconclusive" and report.witness is None
    pair_step = next(e for e in report.evidence if e.method == "the pair's delta(epsilon)")
    assert pair_step.witness is None and "its witness is on the user's pair" in pair_step.doubt


def test_the_prober_refutes_a_lemma_wrong_only_off_the_pairs_gradient_difference_on_the_class_directions():
    """A clipping rule that stretches the anti-diagonal ``v = (1, -1) / sqrt(2)`` of its clipped gradient three-fold
    (``x = z - a (I + 2 v v^T) clip(g)``: a release moves by up to ``6 a C``) under the fixture's lemma ``2 a C``,
    checked on agent 0 moved to (40, 40): the pair's gradient difference is along the diagonal, where the rule moves
    a release by ``2 a C`` exactly, so the class's pair along it alone left the prober's move on the far pair a
    doubt and the property check (no worst-case search) ``inconclusive``. The class's pairs along the coordinates
    (``||(I + 2 v v^T) e_1|| = sqrt 5``) refute the lemma: ``violation``, the prober's witness naming that pair."""
    import math
    import sys

    import topology
    from asyncdp.algorithms.clipping import clip_l2
    from asyncdp.papers import GradientClass
    from asyncdp.privacy.properties import PrivacyPropertyError, assert_private

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    v = np.array([1.0, -1.0]) / math.sqrt(2)

    @dataclasses.dataclass(frozen=True)
    class AntiDiagonal(noisy_dgd.NoisyDGD):
        name = "test-coverage-anti-diagonal"

        def claimed_privacy(self, horizon):
            return (10.0, 1e-5)

        def update(self, state, mixed, t, agents, problem):
            z = mixed["y"]
            g = clip_l2(problem.costs.gradient(agents, z, round_index=t), noisy_dgd.CLIP)
            return {"x": problem.domain.project(z - noisy_dgd.STEP * (g + 2 * (g @ v)[..., None] * v))}

    sc, _ = noisy_dgd.rendezvous_pair(AntiDiagonal(), topology.static(noisy_dgd.ring(4)), 4)
    far = sc.replace(problem=sc.problem.adjacent(0, address=[40.0, 40.0]))
    with noisy_dgd.registered([AntiDiagonal], lambda s: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        with pytest.raises(PrivacyPropertyError) as info:
            assert_private(sc, far, runs=100)
    report = info.value.report
    prober = next(e for e in report.evidence if e.method == "sensitivity prober")
    assert report.verdict == "violation" and prober.witness is not None
    assert prober.witness["pair"].startswith("the class's pair (") and "gradient difference" not in prober.witness["pair"]


def test_the_prober_refutes_a_lemma_wrong_only_in_a_narrow_cone_on_the_pairs_clipped_gradients():
    """A clipping rule that adds ``3 a <clip(g), v> v`` only where its clipped gradient lies within about 18 degrees
    of ``+-v = +-(1, -1) / sqrt(2)`` (a release moves by up to about ``5 a C`` under the lemma ``2 a C``), agent 0
    moved to (40, 40): no class pair along the pair's gradient difference, a coordinate or a diagonal enters the
    cone on one side only, so the prober's move on the far pair stayed a doubt (``inconclusive`` without the
    worst-case search). The pair's own two gradients at the prober's input, clipped to ``C``, are a pair of the
    class that the rule treats as it treats the user's: ``violation``, the prober's witness naming it."""
    import math
    import sys

    import topology
    from asyncdp.algorithms.clipping import clip_l2
    from asyncdp.papers import GradientClass
    from asyncdp.privacy.properties import PrivacyPropertyError, assert_private

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    v = np.array([1.0, -1.0]) / math.sqrt(2)

    @dataclasses.dataclass(frozen=True)
    class Cone(noisy_dgd.NoisyDGD):
        name = "test-coverage-cone"

        def claimed_privacy(self, horizon):
            return (10.0, 1e-5)

        def update(self, state, mixed, t, agents, problem):
            z = mixed["y"]
            g = clip_l2(problem.costs.gradient(agents, z, round_index=t), noisy_dgd.CLIP)
            c = (g @ v)[..., None]
            on = np.abs(c) > 0.95 * np.linalg.norm(g, axis=-1, keepdims=True)
            return {"x": problem.domain.project(z - noisy_dgd.STEP * (g + np.where(on, 3 * c * v, 0.0)))}

    sc, _ = noisy_dgd.rendezvous_pair(Cone(), topology.static(noisy_dgd.ring(4)), 4)
    far = sc.replace(problem=sc.problem.adjacent(0, address=[40.0, 40.0]))
    with noisy_dgd.registered([Cone], lambda s: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        with pytest.raises(PrivacyPropertyError) as info:
            assert_private(sc, far, runs=100)
    prober = next(e for e in info.value.report.evidence if e.method == "sensitivity prober")
    assert prober.witness is not None and prober.witness["pair"].startswith("the class's pair (the pair's gradients")

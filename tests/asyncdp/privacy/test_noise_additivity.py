"""A rule that uses its noise in another way than ``y = mu + s z`` never gets ``pass`` (asyncdp.privacy.additivity).

The attack: the changed agent flips the sign of its noise on coordinate 0 by
its private data times whether ``|z_1|`` exceeds its median. Every residual
is exactly the declared Laplace noise (marginals), uncorrelated across
coordinates, rounds and agents, and the noise-free value does not move; yet
``sign(r_0) sign(|r_1| - b ln 2)`` is the private sign on every release:
epsilon is infinite (closed form: an event of probability 1 under one
problem and 0 under the other). Before the probe the check said ``pass``.

Also: a channel drawing Gaussian noise whose declaration says Laplace (the
ledger would compose a pure epsilon for Gaussian noise) is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from accounting.replay_inputs import ChannelNoise
from asyncdp import Huang2015
from asyncdp.algorithms import Channel, NoiseDeclaration
from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy
from asyncdp.privacy.additivity import AdditivityProbe
from asyncdp.privacy.behavior import AlgorithmChannelRule, declared_noise
from asyncdp.privacy.context import small_example, small_pair
from asyncdp.privacy import candidate_evaluation, candidate_pairs


@dataclass(frozen=True)
class XorSign(Huang2015):
    """Huang2015 whose coordinate-0 noise has sign ``s * sign(|z_1| - ln 2)``, ``s`` the private sign."""

    name: ClassVar[str] = "huang2015-xor-sign-test"

    def initial_state(self, x0: Any, agents: Any, problem: Any) -> dict:
        st = super().initial_state(x0, agents, problem)
        g = problem.costs.gradient(agents, np.zeros_like(st["x"]))
        st["s"] = np.where(g[..., :1] < 0, -1.0, 1.0)
        return st

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        z = np.array(noise["y"], dtype=float, copy=True)
        z[..., :1] = np.abs(z[..., :1]) * state["s"] * np.sign(np.abs(z[..., 1:2]) - math.log(2.0))
        return {"y": state["x"] + self.noise_scale(t) * z}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "s": state["s"]}


@dataclass(frozen=True)
class Negated(Huang2015):
    """Releases ``x - M_t z``: the declared (symmetric) noise with a fixed sign, as correct as ``x + M_t z``."""

    name: ClassVar[str] = "huang2015-negated-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] - self.noise_scale(t) * noise["y"]}


@dataclass(frozen=True)
class PerAgentScale(Huang2015):
    """Agent ``i`` adds ``(1 + i) M_t z``: not the declared scale for agents ``i > 0``."""

    name: ClassVar[str] = "huang2015-per-agent-scale-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        factor = (1.0 + np.asarray(agents, dtype=float))[..., None]
        return {"y": state["x"] + self.noise_scale(t) * factor * noise["y"]}


@dataclass(frozen=True)
class GaussianAsLaplace(Huang2015):
    """The engine draws Gaussian noise (the channel), the ledger records Laplace (the declaration)."""

    name: ClassVar[str] = "huang2015-gaussian-as-laplace-test"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"),)


def _pair(rule: type[Huang2015]) -> tuple[Any, Any]:
    pair = small_pair(rule)
    return pair.scenario, pair.adjacent


def test_xor_sign_noise_is_an_infinite_loss_that_the_check_does_not_pass():
    sc, adj = _pair(XorSign)
    # the independent truth: on agent 0's round-1 release (x0 is public) the event has probability 1 under
    # one problem and 0 under the other, on every engine run of either
    from asyncdp.privacy.behavior import run_engine

    b = sc.algorithm.bind(sc.problem).noise_scale(1)
    x0 = sc.initial_points()[0]
    frequencies = []
    for side, s in ((0, sc), (1, adj)):
        r = run_engine(s, 200, seed=3, side=side).messages["y"][:, 0, 0, :] - x0
        frequencies.append(float(np.mean(np.sign(r[:, 0]) * np.sign(np.abs(r[:, 1]) - b * math.log(2.0)) > 0)))
    assert sorted(frequencies) == [0.0, 1.0]
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict != "pass"
    assert any("not the declared noise added to the noise-free value" in r and "coordinate 0" in r
               for r in report.reasons), report.reasons


def _probe(rule: type[Huang2015]) -> AdditivityProbe:
    sc, _ = _pair(rule)
    alg = sc.algorithm.bind(sc.problem)
    inner = AlgorithmChannelRule(alg, sc.problem, sc.initial_points())
    probe = AdditivityProbe(inner, declared_noise(alg, sc.horizon), np.random.default_rng(0), {}, "scenario")
    state = probe.initial_state(4)
    for t in range(1, sc.horizon + 1):
        mean = probe.message_means(state, t)
        assert np.array_equal(mean["y"], inner.message_means(state, t)["y"])  # the replay is unchanged
        state = probe.next_state(state, {"y": mean["y"]}, t)
    return probe


def test_the_probe_accepts_the_declared_noise_with_either_fixed_sign():
    assert _probe(Huang2015).finding is None and _probe(Huang2015).signs == {"y": 1.0}
    assert _probe(Negated).finding is None and _probe(Negated).signs == {"y": -1.0}


@pytest.mark.parametrize("rule, where", [(XorSign, "coordinate 0"), (PerAgentScale, "agent 1")])
def test_the_probe_names_the_release_that_is_not_mu_plus_s_z(rule, where):
    finding = _probe(rule).finding
    assert finding is not None and finding.startswith("round 1, channel 'y', ") and where in finding


@dataclass(frozen=True)
class HalfThenXorSign(XorSign):
    """Half the declared noise in rounds 1-4 (the declared family at another scale), :class:`XorSign` from round 5."""

    name: ClassVar[str] = "huang2015-half-then-xor-sign-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        if t >= 5:
            return super().message(state, t, noise, agents, problem)
        return {"y": state["x"] + 0.5 * self.noise_scale(t) * noise["y"]}


def test_the_probe_tells_a_rescaled_draw_from_noise_of_another_law():
    """A message that moves by one factor per agent times ``z`` is the declared family at another scale (its
    conformance witness stands); anything else is ``nonlinear`` (the witnesses that read the declared law are set
    aside). The probe goes on past a rescaled draw: a later round's other use of the noise is still found."""
    assert _probe(PerAgentScale).finding is not None and _probe(PerAgentScale).nonlinear is None
    xor = _probe(XorSign)
    assert xor.nonlinear is not None and xor.nonlinear == xor.finding
    late = _probe(HalfThenXorSign)
    assert late.finding.startswith("round 1, channel 'y', ") and late.nonlinear.startswith("round 5, channel 'y', ")


@dataclass(frozen=True)
class LateXorSign(XorSign):
    """:class:`XorSign` from round 5 on only: the first four rounds release the declared noise."""

    name: ClassVar[str] = "huang2015-late-xor-sign-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return super().message(state, t, noise, agents, problem) if t >= 5 else Huang2015.message(
            self, state, t, noise, agents, problem)


def test_the_realized_replays_probe_draws_one_block_and_still_finds_a_late_round():
    """On the realized runs every round is probed with one block of draws (``reuse``): a rule that misuses its
    noise from round 5 on is named at round 5, and the block is drawn once for every round and both
    problems."""
    sc, _ = _pair(LateXorSign)
    alg = sc.algorithm.bind(sc.problem)
    reuse: dict = {}
    probes = []
    for label in ("scenario", "adjacent"):
        inner = AlgorithmChannelRule(alg, sc.problem, sc.initial_points())
        probe = AdditivityProbe(inner, declared_noise(alg, sc.horizon), np.random.default_rng(0), {}, label,
                                reuse=reuse)
        state = probe.initial_state(8)
        for t in range(1, sc.horizon + 1):
            mean = probe.message_means(state, t)
            state = probe.next_state(state, {"y": mean["y"]}, t)
        probes.append(probe)
    assert sc.horizon >= 5
    for probe in probes:
        assert probe.finding is not None and probe.finding.startswith("round 5, channel 'y', ")
    assert len(reuse) == 1
    (block,) = reuse.values()
    assert block.shape == (8, sc.problem.num_agents, 2) and not block.flags.writeable


def test_noise_in_a_noise_free_channel_is_found():
    sc, _ = _pair(Huang2015)
    alg = sc.algorithm.bind(sc.problem)
    inner = AlgorithmChannelRule(alg, sc.problem, sc.initial_points())
    noise = {"y": ChannelNoise(None)}  # declared noise-free: the probe's noise must not move it
    probe = AdditivityProbe(inner, noise, np.random.default_rng(0), {}, "scenario")
    probe.message_means(probe.initial_state(2), 1)
    assert probe.finding is not None and "noise-free" in probe.finding


def test_a_declaration_whose_mechanism_is_not_the_channels_is_refused():
    sc, adj = _pair(GaussianAsLaplace)
    with pytest.raises(ScenarioError, match="channel 'y' draws gaussian noise but noise\\(1, 'y'\\) declares "
                                            "'laplace'"):
        check_privacy(sc, adj, runs=20, search_examples=0)


def test_a_declaration_of_the_wrong_type_is_refused():
    @dataclass(frozen=True)
    class NoDeclaration(Huang2015):
        name: ClassVar[str] = "huang2015-no-declaration-test"

        def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
            return None if t == 2 else super().noise(t, channel)

    sc, adj = _pair(NoDeclaration)
    with pytest.raises(ScenarioError, match="noise\\(2, 'y'\\) returned None"):
        check_privacy(sc, adj, runs=20, search_examples=0)


@dataclass(frozen=True)
class FoldOnAxis(Huang2015):
    """Agent 0 folds its noise to ``|z|`` when its gradient at the origin points along ``+e_0``: correct for the
    user's rendezvous costs, wrong for a linear cost of the class (the realized replay never meets it)."""

    name: ClassVar[str] = "huang2015-fold-on-axis-test"

    def initial_state(self, x0: Any, agents: Any, problem: Any) -> dict:
        st = super().initial_state(x0, agents, problem)
        g = problem.costs.gradient(agents, np.zeros_like(st["x"]))
        along = (g[..., 0] > 0) & (np.abs(g[..., 1]) <= 1e-9 * np.abs(g[..., 0])) & (np.asarray(agents) == 0)
        st["axis"] = along[..., None].astype(float)
        return st

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        z = np.where(state["axis"] > 0, np.abs(noise["y"]), noise["y"])
        return {"y": state["x"] + self.noise_scale(t) * z}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "axis": state["axis"]}


def test_noise_misused_only_on_another_pair_of_the_class_is_not_passed():
    from asyncdp.privacy.behavior import run_engine
    from asyncdp.problems.costs import LinearOverride
    from asyncdp.problems.problem import Problem

    sc, adj = _pair(FoldOnAxis)
    alg = sc.algorithm.bind(sc.problem)
    c2 = alg.gradient_bound if alg.gradient_bound is not None else alg._require_bound()[0]

    def linear(g: list[float]) -> Any:
        return sc.replace(problem=Problem(sc.problem.domain, LinearOverride(sc.problem.costs, 0, g)),
                          x0=sc.initial_points())

    # the independent truth on the class pair <C e_0, x> vs <-C e_0, x> (gradients of norm C): the event
    # {both coordinates of agent 0's round-1 release exceed the public x0} has probability 1 under the first
    # and 1/4 under the second, so epsilon >= ln 4 > 1 claimed. On 400 runs each: all 400, and at most 160
    # (Binomial(400, 1/4) exceeds 160 with probability below 1e-12)
    x0 = sc.initial_points()[0]
    counts = [int((run_engine(s, 400, seed=2, side=k).messages["y"][:, 0, 0, :] > x0).all(axis=1).sum())
              for k, s in enumerate((linear([c2, 0.0]), linear([-c2, 0.0])))]
    assert counts[0] == 400 and counts[1] <= 160
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict != "pass"
    assert any("pair coordinate 0 (+)" in r and "not its noise-free value plus the declared noise" in r
               for r in report.reasons), report.reasons


@dataclass(frozen=True)
class ThirdAgentSteps3x(Huang2015):
    """Agent 2 takes three times the step of eq. (7), with the declared noise: the claim holds for a change of
    agent 0's or 1's cost and not of agent 2's."""

    name: ClassVar[str] = "huang2015-third-agent-3x-test"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        from asyncdp.algorithms.clipping import clip_l2

        z = mixed["y"]
        c2 = self._require_bound()[0]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), c2)
        factor = np.where(np.asarray(agents) == 2, 3.0, 1.0)
        factor = factor[..., None] if np.ndim(factor) else factor
        return {"x": problem.domain.project(z - factor * self.step(t) * g)}


def test_a_rule_that_leaks_more_for_an_agent_the_pair_does_not_change_is_a_violation():
    from asyncdp.problems.costs import LinearOverride
    from asyncdp.problems.problem import Problem

    sc, adj = _pair(ThirdAgentSteps3x)
    alg = sc.algorithm.bind(sc.problem)
    c2, n = alg._require_bound()
    # the independent truth (closed form): on the noise-free transcript of P (agent 2's cost <g, x>, g = C2 (1, 1)
    # / sqrt 2; P': -g) every agent but agent 2 releases the same mean under both, and agent 2's release of round
    # t >= 2 moves by |mu - mu'|_1; the Laplace loss there is sum |mu - mu'|_1 / M_t, continuous in y, so every
    # transcript near it (a set of positive probability) has a loss near it: pure epsilon >= that sum
    g = c2 * np.ones(n) / math.sqrt(n)
    probs = [Problem(sc.problem.domain, LinearOverride(sc.problem.costs, 2, s * g)) for s in (1.0, -1.0)]
    agents = np.arange(sc.problem.num_agents)
    x = np.array(sc.initial_points(), dtype=float)
    loss, moved = 0.0, None
    for t in range(1, sc.horizon + 1):
        y = alg.message({"x": x}, t, {"y": np.zeros_like(x)}, agents, probs[0])["y"]
        if moved is not None:
            loss += float(np.abs(y[2] - moved).sum()) / alg.noise_scale(t)
        z = sc.topology.weights(t) @ y
        x, moved = (alg.update({"x": x}, {"y": z}, t, agents, probs[0])["x"],
                    alg.update({"x": x}, {"y": z}, t, agents, probs[1])["x"][2])
    assert loss > 1.5 * alg.claimed_privacy(sc.horizon)[0]
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == "violation"
    # the search evaluates the other agents' extremal pairs: agent 2's is the witness
    assert report.witness["kind"] == "worst-case" and report.witness["agent"] == 2
    assert report.witness["claim_form"] == "pure"  # the claim's own form, as every witness names it


def test_a_symmetric_rule_keeps_the_changed_agents_worst_pair():
    pair, _ = small_example(runs=200)
    report = check_privacy(pair.scenario, pair.adjacent, runs=200, search_examples=0)
    assert report.verdict == "pass"
    assert not any("worse than every pair of the user's changed agent" in r for r in report.reasons)


def test_a_claim_of_epsilon_zero_is_refused_in_one_line_naming_the_rule_and_horizon():
    sc, adj = _pair(Huang2015)

    @dataclass(frozen=True)
    class ZeroClaim(Huang2015):
        name: ClassVar[str] = "huang2015-zero-claim-test"

        def claimed_privacy(self, horizon: int) -> tuple[float, float]:
            return 0.0, 0.0

    rule = ZeroClaim(epsilon=sc.algorithm.epsilon, c=sc.algorithm.c, q=sc.algorithm.q, p=sc.algorithm.p)
    with pytest.raises(ScenarioError, match="huang2015-zero-claim-test: the claim \\(epsilon, delta\\) = "
                                            "\\(0.0, 0.0\\) for horizon 5 is not one the check can test: epsilon "
                                            "must be > 0"):
        check_privacy(sc.replace(algorithm=rule), adj.replace(algorithm=rule), runs=20, search_examples=0)


@dataclass(frozen=True)
class LowBitSign(Huang2015):
    """Writes the private sign into the least significant mantissa bit of coordinate 0 of every release from
    round 2 on: one unit in the last place, hidden from every real-valued comparison."""

    name: ClassVar[str] = "huang2015-low-bit-test"

    def initial_state(self, x0: Any, agents: Any, problem: Any) -> dict:
        st = super().initial_state(x0, agents, problem)
        st["bit"] = (problem.costs.gradient(agents, np.zeros_like(st["x"]))[..., :1] > 0).astype(np.uint64)
        return st

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        y = np.array(super().message(state, t, noise, agents, problem)["y"], dtype=np.float64)
        if t >= 2:
            bits = y.view(np.uint64)
            bits[..., :1] = (bits[..., :1] & ~np.uint64(1)) | state["bit"]
        return {"y": y}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "bit": state["bit"]}


def test_a_secret_in_the_least_significant_bit_is_a_violation_of_the_black_box_audit():
    """Every real-number method passes the rule (each release moves by one ulp); the black-box audit's low-bits
    score (Mironov, CCS 2012) reads the bit and certifies a loss above the claim."""
    from asyncdp.privacy.behavior import run_engine

    sc, adj = _pair(LowBitSign)
    # the independent truth: the bit is the private sign on every release of agent 0 from round 2 on, under
    # either problem, on every run: an event of probability 1 under one and 0 under the other (epsilon = inf)
    lsb = [int((run_engine(s, 100, seed=1, side=k).messages["y"][:, 1:, 0, 0].view(np.uint64) & np.uint64(1)).sum())
           for k, s in enumerate((sc, adj))]
    assert sorted(lsb) == [0, 100 * (sc.horizon - 1)]
    report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == "violation"
    assert report.witness["kind"] == "blackbox" and report.witness["event"].startswith("low-bits score"), \
        report.witness
    assert report.witness["epsilon_lower_bound"] > sc.algorithm.claimed_privacy(sc.horizon)[0]
    assert report.witness["claim_form"] == "pure"  # the claim's own form, as every witness names it
    assert any("lowest mantissa bits" in r and "Mironov" in r for r in report.reasons), report.reasons


def test_a_secret_in_the_last_bit_of_unicast_releases_is_refuted():
    """Under unicast the transcripts hold a NaN for every link that carries nothing (the same bits under both
    problems) and a release per link that does: the low-bits score reads them all."""
    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
    from asyncdp.privacy.blackbox_audit import audit_blackbox, transcript_features

    pair = small_pair(LowBitSign)
    pair = ScenarioPair(pair.scenario.replace(mode="unicast"), pair.adjacent.replace(mode="unicast"))
    ctx = prepare(pair, CheckOptions(runs=200, search_examples=0))
    a, b = transcript_features(ctx, 0), transcript_features(ctx, 1)
    # the independent truth: some released coordinate (agent 0 to a neighbour, coordinate 0, round >= 2) has bit
    # 0 set on every run of one problem and on none of the other; the links that carry nothing are NaN under both
    bit0 = [(v.view(np.uint64) & np.uint64(1)).mean(axis=0) for v in (a, b)]
    assert np.any(np.abs(bit0[0] - bit0[1]) == 1.0)
    assert np.array_equal(np.isnan(a).all(axis=0), np.isnan(b).all(axis=0)) and np.isnan(a).all(axis=0).any()
    e = audit_blackbox(pair, ctx)
    claim = pair.scenario.algorithm.claimed_privacy(pair.scenario.horizon)[0]
    assert e.witness is not None and e.witness["event"].startswith("low-bits score")
    assert e.figures["empirical_epsilon_lower_bound"] > claim


@dataclass(frozen=True)
class NaNUnderOneProblem(Huang2015):
    """Agent 0's round-3 release is NaN when its private sign is +1 (the adjacent problem), a number otherwise."""

    name: ClassVar[str] = "huang2015-nan-under-one-problem-test"

    def initial_state(self, x0: Any, agents: Any, problem: Any) -> dict:
        st = super().initial_state(x0, agents, problem)
        g = problem.costs.gradient(agents, np.zeros_like(st["x"]))
        st["nan"] = ((g[..., :1] > 0) & (np.asarray(agents) == 0)[..., None]).astype(float)
        return st

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        y = super().message(state, t, noise, agents, problem)["y"]
        return {"y": np.where(state["nan"] > 0, np.nan, y) if t == 3 else y}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        mixed = {k: np.nan_to_num(v) for k, v in mixed.items()}
        return {**super().update(state, mixed, t, agents, problem), "nan": state["nan"]}


def test_an_undefined_replay_loss_is_a_doubt_not_a_loss_of_zero():
    from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
    from asyncdp.privacy.exact_replay import replay_exactly

    sc, adj = _pair(NaNUnderOneProblem)
    # the independent truth: under the adjacent problem agent 0's round-3 release is NaN on every run, under the
    # scenario's on none: epsilon = inf
    from asyncdp.privacy.behavior import run_engine

    nan = [int(np.isnan(run_engine(s, 50, seed=1, side=k).messages["y"][:, 2, 0]).all(axis=-1).sum())
           for k, s in enumerate((sc, adj))]
    assert nan == [0, 50]
    pair = ScenarioPair(sc, adj)
    ctx = prepare(pair, CheckOptions(runs=50, search_examples=0))
    e = replay_exactly(pair, ctx)
    assert e.doubt is not None and "50 of 50 runs have an undefined (NaN) privacy loss (first: run 0, round 3)" \
        in e.doubt


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("rule, fold_at", [(Huang2015, None), (FoldOnAxis, 3), (FoldOnAxis, 1), (XorSign, None)])
def test_the_stacked_probe_of_several_scenarios_finds_what_one_replay_each_finds(monkeypatch, rule, fold_at, lazy):
    """probe_pairs replays the first pair's two problems and the scenarios after it in one stacked replay (every
    channel is noisy in every round): the same finding (the same release, the same standard noise ``z`` in its
    sentence; the user's pair's own finding under XorSign) as replaying them one at a time, and it is used; a
    scenario may be given by its cost family (``lazy``: a CandidateCosts, as the worst-case search gives them)."""
    from asyncdp.privacy import additivity
    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, adj = _pair(rule)
    alg = sc.algorithm.bind(sc.problem)
    c2 = alg.gradient_bound if alg.gradient_bound is not None else alg._require_bound()[0]
    gradients = [[0.0, c2], [0.0, -c2], [-c2, 0.0], [c2 / 2, c2 / 2], [-c2 / 2, c2 / 2]]
    if fold_at is not None:  # the pair whose cost FoldOnAxis misuses its noise for
        gradients.insert(fold_at - 1, [c2, 0.0])
    pairs: list[Any] = [("user", sc, adj)]
    fam, base = candidate_evaluation._Family(candidate_pairs.adjacency_class(sc), 0), candidate_pairs._bound_base(sc)
    pairs += [(f"g{k}", fam.candidate(base, sc, None, g, [-v for v in g]) if lazy else
               candidate_scenarios(sc, 0, g, [-v for v in g])[0], None) for k, g in enumerate(gradients)]
    runs = run_engine(sc, 2, seed=1)
    stacked_calls = []
    real = additivity._probe_stacked

    def spy(*args: Any, **kwargs: Any) -> Any:
        stacked_calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(additivity, "_probe_stacked", spy)
    stacked = additivity.probe_pairs(runs, pairs, alg, 5)
    assert stacked_calls == [2 + len(gradients)]  # the user's pair's two problems, then the others

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("one at a time")

    monkeypatch.setattr(additivity, "_probe_stacked", refuse)
    one_each = additivity.probe_pairs(runs, pairs[:1] + [(name, candidate_scenarios(sc, 0, g, [-v for v in g])[0],
                                                          None) for (name, _, _), g in zip(pairs[1:], gradients)],
                                      alg, 5)
    assert stacked == one_each
    assert additivity.probe_pairs(runs, pairs, alg, 5) == one_each  # one at a time from the candidates' costs
    if rule is XorSign:  # the user's pair already has the finding: nothing is stacked
        assert stacked is not None
    elif fold_at is None:
        assert stacked is None
    else:
        assert stacked is not None and f"pair g{fold_at - 1}, its scenario" in stacked and "z = " in stacked


@pytest.mark.parametrize("side", ["scenario", "adjacent"])
def test_the_stacked_probe_of_a_pair_finds_what_its_own_replay_of_both_problems_finds(monkeypatch, side):
    """The first pair's two problems, stacked with the scenarios after it (their draws alternating round by round
    as one replay of both draws them): the finding of the problem that misuses its noise (FoldOnAxis under a
    linear cost along +e_0, here only under ``side``'s problem) is the one the pair's own replay gives, the same
    release and the same standard noise in its sentence."""
    from asyncdp.privacy import additivity
    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, _ = _pair(FoldOnAxis)
    alg = sc.algorithm.bind(sc.problem)
    c2 = alg.gradient_bound if alg.gradient_bound is not None else alg._require_bound()[0]
    g = [c2, 0.0] if side == "scenario" else [-c2, 0.0]
    p, q = candidate_scenarios(sc, 0, g, [-v for v in g])
    others = [(f"g{k}", candidate_scenarios(sc, 0, h, [-v for v in h])[0], None)
              for k, h in enumerate([[0.0, c2], [0.0, -c2], [c2 / 2, c2 / 2]])]
    pairs: list[Any] = [("worst", p, q), *others]
    runs = run_engine(sc, 2, seed=4)
    calls = []
    real = additivity._probe_stacked

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("paired", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(additivity, "_probe_stacked", spy)
    stacked = additivity.probe_pairs(runs, pairs, alg, 7)
    assert calls == [True]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("one at a time")

    monkeypatch.setattr(additivity, "_probe_stacked", refuse)
    own = additivity.probe_pairs(runs, pairs, alg, 7)
    assert own is not None and f"pair worst, its {side}" in own and "z = " in own
    assert stacked == own


@dataclass(frozen=True)
class QuietRound(Huang2015):
    """Huang2015 whose round-3 releases carry no noise (scale 0): noise-free values of the private costs."""

    name: ClassVar[str] = "huang2015-quiet-round-test"

    def noise_scale(self, t: int) -> float:
        return 0.0 if t == 3 else super().noise_scale(t)


@pytest.mark.parametrize("which", ["user", "linear"])
def test_a_pair_with_noise_free_releases_is_probed_as_its_own_replay_probes_it(monkeypatch, which):
    """With a noise-free round, the pair's own replay (which computes its losses) fails when a recorded noise-free
    release equals neither problem's value (a linear pair of the class: agent 0's round-3 release differs from
    both) and not when it equals one of them (the user's pair): probe_pairs raises the same error, or gives the
    same finding, with the pair stacked as one at a time; the stacked replay is kept where it decides alike."""
    from accounting.errors import AccountingError
    from asyncdp.privacy import additivity
    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, adj = _pair(QuietRound)
    alg = sc.algorithm.bind(sc.problem)
    c2 = alg.gradient_bound if alg.gradient_bound is not None else alg._require_bound()[0]
    first = (sc, adj) if which == "user" else candidate_scenarios(sc, 0, [c2, 0.0], [-c2, 0.0])
    others = [(f"g{k}", candidate_scenarios(sc, 0, h, [-v for v in h])[0], None)
              for k, h in enumerate([[0.0, c2], [0.0, -c2], [c2 / 2, c2 / 2]])]
    pairs: list[Any] = [("first", *first), *others]
    runs = run_engine(sc, 2, seed=6)
    outcome = []
    real = additivity._probe_stacked

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            got = real(*args, **kwargs)
        except Exception as exc:
            outcome.append((kwargs.get("paired", False), type(exc).__name__))
            raise
        outcome.append((kwargs.get("paired", False), "returned"))
        return got

    def run() -> Any:
        try:
            return additivity.probe_pairs(runs, pairs, alg, 3)
        except AccountingError as exc:
            return f"raised: {exc}"

    monkeypatch.setattr(additivity, "_probe_stacked", spy)
    stacked = run()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("one at a time")

    monkeypatch.setattr(additivity, "_probe_stacked", refuse)
    assert stacked == run()
    if which == "linear":
        assert isinstance(stacked, str) and stacked.startswith("raised: round 3 is noise-free")
        assert outcome == [(True, "AccountingError")]  # the pair's own replay then raised it
    else:
        assert outcome == [(True, "returned")]


@dataclass(frozen=True)
class MidBitSign(Huang2015):
    """Writes the private sign into mantissa bit ``BIT`` of every coordinate of every release from round 2 on
    (set under one problem, cleared under the other): at most ``2**BIT`` units in the last place, hidden from
    every real-valued comparison, above the lowest bits."""

    name: ClassVar[str] = "huang2015-mid-bit-test"
    BIT: ClassVar[int] = 5

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        y = np.array(super().message(state, t, noise, agents, problem)["y"], dtype=np.float64)
        if t >= 2:
            bits, mask = y.view(np.uint64), np.uint64(1 << self.BIT)
            if problem.costs.gradient(0, np.zeros(y.shape[-1]))[0] > 0:
                bits |= mask
            else:
                bits &= ~mask
        return {"y": y}


@dataclass(frozen=True)
class EighthBitSign(MidBitSign):
    name: ClassVar[str] = "huang2015-eighth-bit-test"
    BIT: ClassVar[int] = 8


@pytest.mark.parametrize("rule", [MidBitSign, EighthBitSign], ids=["bit5", "bit8"])
def test_a_secret_in_a_middle_mantissa_bit_is_a_violation_of_the_black_box_audit(rule):
    """A secret above the lowest four bits (the sensitivity prober sees nothing: from round 2 on the lemma's
    bound dwarfs 2**8 ulp; the replay's real-number likelihoods move by nothing) was passed."""
    from asyncdp.privacy.behavior import run_engine

    sc, adj = _pair(rule)
    # the independent truth: bit BIT of every release from round 2 on is set on every run of one problem and
    # on none of the other: an event of probability 1 under one and 0 under the other (epsilon = inf)
    on = [int((run_engine(s, 100, seed=1, side=k).messages["y"][:, 1:].view(np.uint64)
               & np.uint64(1 << rule.BIT)).astype(bool).all()) for k, s in enumerate((sc, adj))]
    off = [int(not (run_engine(s, 100, seed=1, side=k).messages["y"][:, 1:].view(np.uint64)
                    & np.uint64(1 << rule.BIT)).any()) for k, s in enumerate((sc, adj))]
    assert sorted(on) == [0, 1] and sorted(off) == [0, 1] and on != off
    report = check_privacy(sc, adj, runs=1000, search_examples=0)
    assert report.verdict == "violation"
    assert report.witness["kind"] == "blackbox" and report.witness["event"].startswith("low-bits score")


@dataclass(frozen=True)
class ParitySign(Huang2015):
    """Writes the private sign as the parity of bit 0 of coordinates 0 and 1 of every release from round 2 on:
    bit 0 of coordinate 0 is a fair coin (bit 30 of the release), bit 0 of coordinate 1 that coin XOR the secret:
    each bit alone is a fair coin under both problems, only their XOR is the secret."""

    name: ClassVar[str] = "huang2015-parity-bit-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        y = np.array(super().message(state, t, noise, agents, problem)["y"], dtype=np.float64)
        if t >= 2:
            bits, one = y.view(np.uint64), np.uint64(1)
            secret = np.uint64(problem.costs.gradient(0, np.zeros(y.shape[-1]))[0] > 0)
            coin = (bits[..., 0] >> np.uint64(30)) & one  # a mantissa bit of the noisy value: a fair coin
            bits[..., 0] = (bits[..., 0] & ~one) | coin
            bits[..., 1] = (bits[..., 1] & ~one) | (coin ^ secret)
        return {"y": y}


@pytest.mark.xfail(strict=True, reason="the low-bits score is naive Bayes: it weighs each bit on its own, so a "
                   "secret that is the parity of two bits (each bit alone distributed alike under both problems) "
                   "is seen by no method of the check; it needs features of bit combinations that span the "
                   "release's coordinates (here bit 0 of coordinates 0 and 1; XORs of bit planes within one number "
                   "miss it) or a learned score on the bits. XOR features of every pair of coordinates' low bits "
                   "cost 30-120 ms per check at dpsda_paper's 294 numbers per release")
def test_a_secret_in_the_parity_of_two_low_bits_is_a_violation():
    from asyncdp.privacy.behavior import run_engine

    sc, adj = _pair(ParitySign)
    # the independent truth: the XOR of bit 0 of coordinates 0 and 1 of every release from round 2 on is 1 on
    # every run of one problem and 0 on every run of the other (epsilon = inf)
    par = []
    for k, s in enumerate((sc, adj)):
        u = run_engine(s, 100, seed=1, side=k).messages["y"][:, 1:].view(np.uint64)
        par.append(np.unique((u[..., 0] ^ u[..., 1]) & np.uint64(1)).tolist())
    assert sorted(par) == [[0], [1]]
    report = check_privacy(sc, adj, runs=1000, search_examples=0)
    assert report.verdict == "violation"


@pytest.mark.parametrize("gap", [0.0, 5e-10, 1e-9, 2e-9, 5e-7, 2e-6, np.nan, np.inf])
def test_the_probes_comparison_has_the_answer_of_its_full_tolerance(gap):
    from asyncdp.privacy.additivity import ADDITIVITY_RTOL, _within

    mu = np.array([[[1e3, -2.0]], [[0.0, 7.0]]])  # tolerances from 1e-9 (at 0) to about 2e-6 (at 1e3)
    for k in range(mu.size):
        expected = np.zeros_like(mu)
        diff = np.zeros_like(mu)
        diff.reshape(-1)[k] = gap
        got = mu + diff
        want = bool((np.abs(diff - expected) <= ADDITIVITY_RTOL * (np.abs(mu) + np.abs(got) + 1.0)).all())
        assert _within(diff, expected, mu, got) is want

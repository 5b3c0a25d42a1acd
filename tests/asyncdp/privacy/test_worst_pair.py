"""The worst-case search's objective (the privacy profile for delta > 0 claims) and the worst pair's run budget.

For a claim with ``delta > 0`` the search ranks candidate pairs by their
privacy profile at the claimed epsilon (the average over schedules of the
exact Gaussian profile of the shifts along the constructed transcript), not
by the largest constructed loss; the worst pair's engine runs follow a
sequential plan whose looks are fixed in advance, so a clear violation stops
at the first look and a correct claim keeps its verdict.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import asyncdp
from asyncdp import Async
from asyncdp.papers.huang2015.rule import Huang2015
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.candidate_evaluation import constructed_losses
from asyncdp.privacy.candidate_pairs import extremal_pairs
from asyncdp.privacy.search_objective import profile_objective, profile_objectives
from asyncdp.privacy.worst_case import search_worst_case

ROOT = Path(__file__).resolve().parents[3]


def _gaussian_delta(mu: float, eps: float) -> float:
    """Balle and Wang (ICML 2018), Thm 8, written out with scipy (independent of the code under test)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def test_the_profile_objective_averages_exact_gaussian_profiles_over_schedules():
    losses = [0.5 * 1.5**2, 0.5 * 0.3**2, math.inf]  # mu = 1.5, mu = 0.3, a noise-free release that moves
    want = (_gaussian_delta(1.5, 1.0) + _gaussian_delta(0.3, 1.0) + 1.0) / 3
    assert profile_objective(losses, 1.0, 1e-5, True) == pytest.approx(want, rel=1e-9)
    # pure claims and Laplace noise: the largest loss
    assert profile_objective(losses[:2], 1.0, 0.0, True) == pytest.approx(1.125)
    assert profile_objective(losses[:2], 1.0, 1e-5, False) == pytest.approx(1.125)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), schedules=st.integers(1, 20), seed=st.integers(0, 2**32 - 1),
       eps=st.sampled_from([0.0, 0.3, 1.0, 4.0]), delta=st.sampled_from([0.0, 1e-5, 1e-2]), gaussian=st.booleans())
def test_the_objectives_of_several_candidates_are_each_ones_own_bit_for_bit(rows, schedules, seed, eps, delta,
                                                                           gaussian):
    """The search scores a batch of candidates at once (profile_objectives): each value is exactly the one-at-a-time
    objective, including losses of 0, +inf and NaN (a NaN row's own call names what is wrong)."""
    rng = np.random.default_rng(seed)
    losses = rng.exponential(rng.choice([1e-3, 1.0, 30.0]), size=(rows, schedules))
    losses[rng.random(losses.shape) < 0.1] = 0.0
    losses[rng.random(losses.shape) < 0.05] = math.inf
    losses[rng.random(losses.shape) < 0.03] = math.nan

    def each() -> list[float]:
        return [profile_objective(row, eps, delta, gaussian) for row in losses]

    try:
        want = each()
    except Exception as exc:  # noqa: BLE001 - the same error, from the same row
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            profile_objectives(losses, eps, delta, gaussian)
        return
    got = profile_objectives(losses, eps, delta, gaussian)
    assert got.shape == (rows,)
    assert [float(v) for v in got] == want or np.array_equal(got, want, equal_nan=True)


def test_a_larger_largest_loss_can_have_the_smaller_profile():
    spiky = [0.5 * 3.0**2] + [0.5 * 0.1**2] * 15  # mu = 3 on one schedule, 0.1 on the others
    even = [0.5 * 1.5**2] * 16
    assert max(spiky) > max(even)
    assert profile_objective(spiky, 1.0, 1e-3, True) < profile_objective(even, 1.0, 1e-3, True)


def _example():
    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated",
                                                  ROOT / "examples" / "privacy_check_gaussian_under_calibrated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_search_picks_the_pair_with_the_largest_profile_not_the_largest_loss():
    # under Async timing the two-stage rule's shifts depend on the schedule: the extremal pair with the largest
    # constructed loss on one schedule is not the one with the largest average profile
    scenario, adjacent = _example().make(1e-5, Async(rate=1.0))
    pair = ScenarioPair(scenario, adjacent)
    ctx = prepare(pair, CheckOptions(runs=40, search_examples=0))
    runs = ctx.engine_runs(0)
    by_loss, by_profile = {}, {}
    for label, g, gp in extremal_pairs(scenario, 0):
        losses, _ = constructed_losses(runs, scenario, 0, g, gp, max_runs=16)
        by_loss[label] = float(np.max(losses))
        mus = np.sqrt(2.0 * np.asarray(losses))
        by_profile[label] = float(np.mean([_gaussian_delta(m, ctx.epsilon_claimed) for m in mus]))
    top_loss, top_profile = max(by_loss, key=by_loss.get), max(by_profile, key=by_profile.get)
    assert top_loss != top_profile  # the scenario distinguishes the two objectives
    evidence = search_worst_case(pair, ctx)
    assert evidence.figures["worst_case_pair"] == top_profile
    assert evidence.figures["worst_case_objective"] == pytest.approx(by_profile[top_profile], rel=1e-9)


@dataclass(frozen=True)
class Overclaim(Huang2015):
    """Huang et al.'s rule claiming ``(epsilon / 4, 1e-3)``: a quarter of the epsilon its Laplace noise gives."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return float(self.epsilon) / 4.0, 1e-3


@dataclass(frozen=True)
class Approximate(Huang2015):
    """Huang et al.'s rule claiming ``(epsilon, 1e-3)``: weaker than its (correct) pure claim."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return float(self.epsilon), 1e-3


def _rendezvous(rule: type):
    ex = asyncdp.load_script(ROOT / "examples" / "privacy_check_rendezvous.py", names=("scenario", "adjacent"))
    sc = ex["scenario"]
    alg = rule(**{f.name: getattr(sc.algorithm, f.name) for f in dataclasses.fields(sc.algorithm) if f.init})
    return sc.replace(algorithm=alg), ex["adjacent"].replace(algorithm=alg)


def _worst(report):
    return next(e for e in report.evidence if e.method == "worst-case adjacency search")


def test_a_clear_violation_stops_at_the_first_look():
    # Laplace noise and a projection active on the runs: neither an exact profile nor importance sampling applies,
    # so the worst pair's engine runs decide; the first look (a quarter of the budget) already refutes
    sc, adj = _rendezvous(Overclaim)
    report = check_privacy(sc, adj, runs=400, search_examples=2)
    worst = _worst(report)
    assert worst.witness is not None and "sequential looks at 100, 200, 400 runs" in worst.witness["method"]
    assert worst.figures["worst_case_runs"] == 100 < worst.figures["worst_case_runs_budget"] == 400
    assert worst.witness["runs"] == 100 and worst.witness["delta_lower"] > 1e-3
    assert report.verdict == "violation"
    assert report.worst_case_runs == 100 and report.to_dict()["worst_case_runs"] == 100


def test_a_correct_approximate_claim_keeps_its_verdict():
    sc, adj = _rendezvous(Approximate)
    report = check_privacy(sc, adj, runs=400, search_examples=2)
    worst = _worst(report)
    assert worst.witness is None and report.verdict == "pass", report.reasons
    assert 100 <= worst.figures["worst_case_runs"] <= 400


def test_each_look_replays_only_its_new_runs_and_decides_on_every_runs_exact_loss(monkeypatch):
    # the sequential plan decides at each look on the losses of every run so far; a run's loss is its own, so the
    # earlier looks' runs are not replayed again: the losses must be those of one replay of all the runs
    import asyncdp.privacy.worst_pair as wp
    from accounting.sequential import SequentialPlan
    from asyncdp.privacy.behavior import EngineRuns, replay_runs

    replays, decided = [], []
    monkeypatch.setattr(wp, "replay_runs", lambda runs, p, q=None, **k: replays.append((runs, p, q, k))
                        or replay_runs(runs, p, q, **k))
    decide = SequentialPlan.decide
    monkeypatch.setattr(SequentialPlan, "decide", lambda self, losses: decided.append(np.array(losses))
                        or decide(self, losses))
    sc, adj = _rendezvous(Approximate)
    report = check_privacy(sc, adj, runs=400, search_examples=2)
    looks = [r for r in replays if r[2] is not None and r[3].get("algorithm") is not None]
    assert len(decided) == len(looks) >= 2 and report.worst_case_runs == sum(r[0].runs for r in looks)
    top = np.finfo(float).max
    for k in range(len(looks)):
        parts = [r[0] for r in looks[:k + 1]]
        every = EngineRuns(parts[0].engine, sum((r.seeds for r in parts), ()),
                           {c: np.concatenate([r.messages[c] for r in parts]) for c in parts[0].messages},
                           sum((tuple(r.schedules) for r in parts), ()), parts[0].unicast)
        _, p, q, kwargs = looks[k]
        whole = replay_runs(every, p, q, **kwargs)
        np.testing.assert_array_equal(decided[k], np.nan_to_num(whole.losses, posinf=top, neginf=-top))


@pytest.mark.parametrize("timing", [None, Async(rate=1.0)], ids=["lockstep", "async"])
def test_the_tilted_transcripts_of_a_pair_taken_in_one_step_are_each_problems_own(timing):
    """The importance sampling replays the worst pair's two problems with one step of the algorithm for both
    (PairRules): the tilted transcripts, losses, weights and realized mu are bit for bit those of one rule per
    problem, also on a second pass over fewer runs (asynchronous timing: runs that read ahead settle later)."""
    from accounting.tilted_replay import tilted_scheduled_transcripts
    from asyncdp.privacy.behavior import AlgorithmChannelRule, declared_noise, run_engine, schedule_batch
    from asyncdp.privacy.profiles import _pair_rules
    from asyncdp.privacy.paired_rules import PairRules
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, _ = _example().make(1e-3, timing)
    g = extremal_pairs(sc, 0)[0][1]
    p, q = candidate_scenarios(sc, 0, g, -g)
    alg = p.algorithm.bind(p.problem)
    runs = run_engine(sc, 40, seed=2)
    paired = _pair_rules(alg, p, q)
    assert isinstance(paired, PairRules)  # the stacked rules are the ones used
    rules = (paired.p, paired.q)
    apart = (AlgorithmChannelRule(alg, p.problem, p.initial_points()),
             AlgorithmChannelRule(alg, q.problem, q.initial_points()))
    got = [tilted_scheduled_transcripts(runs.messages, schedule_batch(runs.schedules), declared_noise(alg, p.horizon), *r,
                                        epsilon=1.0, mu_bound=1.5, seed=5) for r in (rules, apart)]
    if timing is not None:
        assert got[1].passes > 1
    for field in ("losses", "log_weights", "realized_mu"):
        np.testing.assert_array_equal(getattr(got[0], field), getattr(got[1], field))
    for c in got[1].messages:
        np.testing.assert_array_equal(got[0].messages[c], got[1].messages[c])


def test_importance_sampling_replays_each_problem_alone_where_the_paired_replay_fails(monkeypatch):
    """A paired replay that fails (here: its rule refuses to be built) is replayed with each problem's own rule:
    the same bound as the paired replay's, not an error."""
    from types import SimpleNamespace

    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.profiles import scheduled_tilted_bound
    from asyncdp.privacy.paired_rules import PairRules
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, _ = _example().make(1e-3, None)
    g = extremal_pairs(sc, 0)[0][1]
    p, q = candidate_scenarios(sc, 0, g, -g)
    runs = run_engine(sc, 60, seed=4)
    ctx = SimpleNamespace(epsilon_claimed=1.0, focus=None)
    paired = scheduled_tilted_bound(ctx, p, q, runs, confidence=0.9, seed=3, mu=1.5)

    def refuse(self, runs):
        raise ValueError("no paired rule")

    monkeypatch.setattr(PairRules, "paired", refuse)
    alone = scheduled_tilted_bound(ctx, p, q, runs, confidence=0.9, seed=3, mu=1.5)
    assert paired[1] is None and alone[1] is None and paired[0] == alone[0] and paired[0].samples == 60


def test_importance_sampling_names_a_cap_that_underflows_instead_of_a_parameter_error():
    """At an epsilon far beyond mu the Chernoff cap on delta(epsilon) underflows to 0 (delta < 1e-308): nothing can
    be certified, and the reason says so (it was the bound's own 'cap must be > 0, got 0.0')."""
    from types import SimpleNamespace

    from asyncdp.privacy.behavior import run_engine
    from asyncdp.privacy.profiles import scheduled_tilted_bound
    from asyncdp.privacy.candidate_pairs import candidate_scenarios

    sc, _ = _example().make(1e-3, None)
    g = extremal_pairs(sc, 0)[0][1]
    p, q = candidate_scenarios(sc, 0, g, -g)
    runs = run_engine(sc, 20, seed=4)
    bound, why = scheduled_tilted_bound(SimpleNamespace(epsilon_claimed=2000.0, focus=None), p, q, runs,
                                        confidence=0.9, seed=3, mu=1.5)
    assert bound is None and "underflows to 0" in why and "nothing to certify" in why, why

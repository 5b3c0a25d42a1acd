"""Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Algorithm 1: rule, schedule, hand-over, privacy, reproductions.

Tolerances. Lockstep comparisons with a numpy implementation written here
use the same operations up to summation order; values are O(10) at most
(the box is [-1, 1]^2 and Stage-II messages carry noise of std < 3), so
round-off stays below ~1e-13 and the tests allow 1e-12.
"""

from __future__ import annotations

import json
import math
import runpy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import topology
from accounting.papers import showkatbakhsh as S

from accounting.replay import replay_loss, sample_transcripts
from asyncdp import Async, Deadline, FunctionClass, InjectedNoise, LinkModel, Links, Scenario, UserCost
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh, mean_estimation_problem
from asyncdp.cli import main as cli_main
from asyncdp.problems.domains import Box
from asyncdp.errors import AlgorithmParameterError, ConstantViolationError
from asyncdp.privacy import check_privacy, replay_rule, replay_setup, transcript_array
from asyncdp.papers.showkatbakhsh import privacy as adapter
from asyncdp.problems.problem import Problem
from asyncdp.papers.showkatbakhsh import reproduce as rep
from asyncdp.papers import assumption_set

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "showkatbakhsh_mean_estimation.py"
N, NI, P, R = 5, 8, 2, 1.0
TOL = 1e-12


def _graph():
    adj = np.zeros((N, N), dtype=bool)
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)]:
        adj[i, j] = adj[j, i] = True
    return topology.static(topology.laplacian(adj), directed=False)


def _setting(seed=0, T=6, T2=4, stage2="corrected", epsilon=1.0):
    data = np.random.default_rng(seed).uniform(-R, R, size=(N, NI, P))
    problem = mean_estimation_problem(data, R)
    # per-point G keeps the noise moderate, so projections are active only sometimes
    alg = Showkatbakhsh(epsilon=epsilon, delta=1e-3, T=T, T2=T2, stage2=stage2, gradient_bound=R * math.sqrt(P))
    return data, problem, Scenario(problem, _graph(), alg, horizon=alg.horizon, seed=seed)


def _reference(data, W, x0, noise, *, T, T2, epsilon, delta, G, stage2):
    """Algorithm 1 of Showkatbakhsh, Karakus and Diggavi in plain numpy (mu = L = N_i): eqs. (8), (9), (11), (12)."""
    m, ni = data.mean(axis=1), data.shape[1]
    c = (ni + ni) / (2 * ni * ni)
    kappa = epsilon**2 / (4 * G**2 * (epsilon + 2 * math.log(2 / delta)))

    def M(s):
        return math.sqrt(2 / kappa * c**2 * math.sqrt(T) / s**1.5) if 1 <= s <= T else 0.0

    x, traj, msgs, clipped = x0.copy(), [x0.copy()], [], []
    for t in range(1, T + T2 + 1):
        std = 0.0 if (t == T + 1 and stage2 == "as-printed") else M(t - 1)  # y(t) = x(t-1) + n(t-1)
        y = x + std * noise[t - 1]
        msgs.append(y)
        if t <= T:
            z = np.clip(W @ y, -R, R)                                        # (9)
            clipped.append(np.abs(W @ y) > R)
            x = np.clip(z - (c / t) * ni * (z - m), -R, R)                   # (8), grad f_i = N_i (z - m_i)
        else:
            x = W @ y                                                        # (12)
        traj.append(x)
    return np.array(traj), np.array(msgs), np.array(clipped)


@pytest.mark.parametrize("stage2", ["corrected", "as-printed"])
def test_rule_matches_numpy_algorithm1_in_both_engines(stage2):
    data, problem, sc = _setting(stage2=stage2)
    alg = sc.algorithm
    W = sc.topology.dense(1)
    noise = np.random.default_rng(11).standard_normal((alg.horizon, 3, N, P))
    batch = sc.replace(noise=InjectedNoise(broadcast={0: noise})).run(engine="batch", runs=3,
                                                                      transcripts=True)
    active = []
    for r in range(3):
        want, msgs, clipped = _reference(data, W, np.zeros((N, P)), noise[:, r], T=alg.T, T2=alg.T2, epsilon=alg.epsilon,
                                delta=alg.delta, G=alg.gradient_bound, stage2=stage2)
        single = sc.replace(noise=InjectedNoise(broadcast={0: noise[:, r]})).run()
        assert np.abs(single.trajectory - want).max() <= TOL
        assert np.abs(batch.trajectory[r] - want).max() <= TOL
        assert np.abs(transcript_array(single) - msgs).max() <= TOL
        active.append(clipped)
    # the comparison is not vacuous: the projection (9) is active at some points and not at others
    assert np.any(active) and not np.all(active)


def test_schedule_agrees_with_accounting_and_corollary_1():
    _, problem, sc = _setting(T=50, T2=3)
    alg = sc.algorithm.bind(problem)
    G = alg.gradient_bound
    assert alg.c == pytest.approx(1 / NI, rel=1e-15)
    assert alg.kappa == pytest.approx(S.showkatbakhsh_kappa(alg.epsilon, alg.delta, G=G), rel=1e-14)
    independent = S.showkatbakhsh_noise_scales(alg.epsilon, alg.delta, T=alg.T, c=alg.c, G=G)
    ours = np.array([alg.noise_std(s) for s in range(1, alg.T + 1)])
    assert np.allclose(ours, independent, rtol=1e-14, atol=0)
    for s in range(1, alg.T + 1):
        assert alg.state_sensitivity(s) == pytest.approx(S.showkatbakhsh_sensitivity(s, G=G, c=alg.c), rel=1e-14)
    # Corollary 1 with Theorem 2's schedule: sum eta^2/M^2 = (kappa/2) T^-1/2 sum t^-1/2 <= kappa
    t = np.arange(1, alg.T + 1)
    total = float(((alg.c / t) ** 2 / ours**2).sum())
    assert total == pytest.approx(alg.kappa / 2 / math.sqrt(alg.T) * (t**-0.5).sum(), rel=1e-12)
    assert total <= alg.kappa
    # the round mapping: round t declares M_(t-1) masking x(t-1)
    decl = [alg.noise(r, "y") for r in range(1, alg.horizon + 1)]
    assert (decl[0].scale, decl[0].claimed_sensitivity) == (0.0, 0.0)
    for r in range(2, alg.T + 2):
        assert decl[r - 1].scale == ours[r - 2] and decl[r - 1].claimed_sensitivity == alg.state_sensitivity(r - 1)
        assert decl[r - 1].mechanism == "gaussian" and decl[r - 1].dimension == P
    assert all((d.scale, d.claimed_sensitivity) == (0.0, 0.0) for d in decl[alg.T + 1:])
    printed = replace(alg, stage2="as-printed")
    assert printed.noise(alg.T + 1, "y").scale == 0.0
    assert printed.noise(alg.T + 1, "y").claimed_sensitivity == pytest.approx(2 * alg.c / alg.T * G)
    assert alg.claimed_privacy(alg.horizon) == (alg.epsilon, alg.delta)


@pytest.mark.parametrize("stage2", ["corrected", "as-printed"])
def test_stage2_is_noise_free_consensus_on_the_last_messages(stage2):
    _, problem, sc = _setting(T=6, T2=150, stage2=stage2)
    res = sc.run()
    T = sc.algorithm.T
    y = transcript_array(res)  # (T + T2, N, P); y[t-1] is round t's message
    W = sc.topology.dense(1)
    for t in range(T + 2, sc.horizon + 1):
        assert np.abs(y[t - 1] - res.trajectory[t - 1]).max() == 0  # y(t) = x(t-1): no noise
        assert np.abs(res.trajectory[t] - W @ res.trajectory[t - 1]).max() <= TOL
    handover = y[T] - res.trajectory[T]  # y(T+1) - x(T)
    if stage2 == "corrected":
        assert np.abs(handover).min() > 0  # the noisy last Stage-I message
    else:
        assert np.abs(handover).max() == 0  # x(T) released as is
    # consensus on the average of the last messages y(T+1) (beta^150 ~ 1e-13 here)
    assert np.abs(res.trajectory[-1] - y[T].mean(axis=0)).max() <= 1e-9
    # ledger: rounds 2..T+1 (corrected) or 2..T (as-printed), one release per agent
    rounds = sorted({r.round for r in res.ledger})
    assert rounds == list(range(2, T + (2 if stage2 == "corrected" else 1)))
    assert len(res.ledger) == N * len(rounds)


def test_graphs_satisfy_the_papers_network_assumptions():
    for seq in (_graph(), Showkatbakhsh.example_scenario(0).topology, rep.fixed_er_graph(10, 0.1, 3),
                runpy.run_path(str(EXAMPLE))["graph"]):
        report = topology.audit(seq, assumption_set("showkatbakhsh"))
        assert report.all_hold, report.failed
        assert report.constants["beta"] < 1


def test_async_and_deadline_timing_in_simpy():
    _, problem, sc = _setting(T=8, T2=4)
    lossy = Links(LinkModel(loss=0.2))
    for timing in (Deadline(missing="renormalize"), Deadline(missing="stale"), Async()):
        res = sc.replace(timing=timing, links=lossy).run()
        assert np.isfinite(res.trajectory).all()
        assert (np.abs(res.trajectory[: sc.algorithm.T + 1]) <= R).all()  # Stage I stays in X (projection)
        assert {r.round for r in res.ledger} == set(range(2, sc.algorithm.T + 2))
    assert sc.replace(timing=Async(), links=lossy).run().messages_lost > 0


def test_linear_recursion_behind_the_predictions():
    """No projection active (huge box): t e(t) = (t-1)(e(t-1) + nbar(t-1)) exactly, so T e(T) = sum s M_s nbar(s)."""
    data = np.random.default_rng(2).uniform(-1, 1, size=(N, NI, P))
    problem = Problem(Box(-1e6, 1e6, dim=P), mean_estimation_problem(data, 1.0).costs)
    alg = Showkatbakhsh(epsilon=2.0, delta=1e-3, T=12, gradient_bound=math.sqrt(P))
    noise = np.random.default_rng(3).standard_normal((12, N, P))
    res = Scenario(problem, _graph(), alg, horizon=12, seed=0, noise=InjectedNoise(broadcast={0: noise})).run()
    b = alg.bind(problem)
    e = res.trajectory[-1].mean(axis=0) - problem.optimum
    want = sum(s * b.noise_std(s) * noise[s].mean(axis=0) for s in range(1, 12)) / 12  # n(s) rides on round s+1
    assert np.abs(e - want).max() <= 1e-10
    stage1, released = rep.linear_prediction(b, N)
    m2 = np.array([b.noise_std(s) ** 2 for s in range(1, 13)])
    assert stage1 == pytest.approx(P / (N * 144) * float((np.arange(1, 12) ** 2 * m2[:-1]).sum()), rel=1e-14)
    assert released - stage1 == pytest.approx(P * m2[-1] / N, rel=1e-14)


def test_privacy_check_passes_corrected_and_flags_as_printed_with_witness():
    ex = runpy.run_path(str(EXAMPLE))
    sc, adj = ex["scenario"], ex["adjacent"]
    ok = check_privacy(sc, adj, runs=1000)
    assert ok.verdict == "pass" and ok.witness is None
    assert ok.epsilon_at_claimed_delta <= sc.algorithm.epsilon and "holds" in ok.theorem
    assert math.isfinite(ok.replay_max_loss) and ok.replay_max_loss < sc.algorithm.epsilon
    bad_alg = replace(sc.algorithm, stage2="as-printed")
    bad_sc, bad_adj = sc.replace(algorithm=bad_alg), adj.replace(algorithm=bad_alg)
    bad = check_privacy(bad_sc, bad_adj, runs=500, seed=5)
    T = sc.algorithm.T
    assert bad.verdict == "violation" and "VIOLATED" in bad.theorem
    w = bad.witness
    assert w["kind"] == "replay" and math.isinf(w["loss"]) and w["round"] == T + 1
    assert math.isinf(bad.epsilon_ledger) and any(f"[{T + 1}]" in r for r in bad.reasons)
    assert json.loads(json.dumps(bad.to_dict()))["witness"]["loss"] == "inf"
    # the witness is reproducible: same seed, same transcript, infinite loss exactly at round T + 1
    setup, P_, Pp = replay_setup(bad_sc), replay_rule(bad_sc), replay_rule(bad_adj)
    _, per_round = replay_loss(sample_transcripts(setup, P_, 500, seed=5), setup, P_, Pp, per_round=True)
    row = per_round[w["run"]]
    assert np.isposinf(row[T]) and np.isfinite(np.delete(row, T)).all()
    # without replay (deadline timing) the unnoised round still makes the accountant's epsilon infinite
    late = check_privacy(bad_sc.replace(timing=Deadline(missing="renormalize")),
                         bad_adj.replace(timing=Deadline(missing="renormalize")), runs=200)
    assert late.verdict != "pass" and math.isinf(late.epsilon_ledger)


def test_simpy_transcript_replays_with_noise_free_rounds():
    ex = runpy.run_path(str(EXAMPLE))
    sc, adj = ex["scenario"], ex["adjacent"]
    res = sc.run()
    rule, setup = replay_rule(sc), replay_setup(sc)
    assert (setup.scales == 0).sum() == 1 + sc.algorithm.T2 - 1  # round 1 and Stage II after T + 1
    total, per_round = replay_loss(transcript_array(res), setup, rule, replay_rule(adj), per_round=True)
    assert np.isfinite(total).all() and (per_round[0, setup.scales == 0] == 0).all()


def test_adapter_sensitivity_uses_the_problems_constants():
    ex = runpy.run_path(str(EXAMPLE))
    sc = ex["scenario"]
    G, T = sc.problem.constants.gradient_bound, sc.algorithm.T
    c = 1 / 50
    for alg in (sc.algorithm, replace(sc.algorithm, gradient_bound=0.01), replace(sc.algorithm, stage2="as-printed")):
        sens = adapter.sensitivity(sc.replace(algorithm=alg))
        assert sens.shape == (sc.horizon,) and sens[0] == 0 and (sens[T + 1:] == 0).all()
        assert np.allclose(sens[1:T + 1], 2 * c / np.arange(1, T + 1) * G, rtol=1e-14, atol=0)


def test_tight_accounting_beside_theorem_1():
    r = adapter.tight_accounting(1.0, 1e-5, T=200, c=0.01, G=2.0)
    assert r["epsilon_theorem1"] <= r["epsilon_paper"]
    assert r["epsilon_pld"] == pytest.approx(r["epsilon_exact"], rel=1e-12)  # Gaussian only: the closed form
    assert r["epsilon_pld"] < r["epsilon_rdp"] < r["epsilon_paper"]
    assert 0 < r["noise_factor"] < 1 and r["variance_factor"] == pytest.approx(r["noise_factor"] ** 2)
    assert r["epsilon_pld_scaled"] == pytest.approx(1.0, abs=2e-3)


def test_example_and_run_cli(capsys):
    out = runpy.run_path(str(EXAMPLE))["main"](runs=300)
    assert out["verdict"] == "pass" and out["error"] > out["error_stage1"] > 0
    assert cli_main(["run", str(EXAMPLE)]) == 0
    assert "optimality_error" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, needle", [
    (dict(epsilon=0.0), "epsilon must be > 0, got 0.0"),
    (dict(epsilon=float("nan")), "epsilon must be a real number, got nan"),
    (dict(epsilon="1"), "epsilon must be a real number, got '1'"),
    (dict(delta=0.0), r"delta must lie in \(0, 1\), got 0.0"),
    (dict(delta=1.0), r"delta must lie in \(0, 1\), got 1.0"),
    (dict(T=0), "T must be >= 1, got 0"),
    (dict(T=2.5), "T must be an integer, got 2.5"),
    (dict(T2=-1), "T2 must be >= 0, got -1"),
    (dict(stage2="printed"), "stage2 must be one of .* got 'printed'"),
    (dict(gradient_bound=-1.0), "gradient_bound must be > 0, got -1.0"),
    (dict(smoothness=1.0, strong_convexity=2.0), "strong_convexity mu=2.0 exceeds smoothness L=1.0"),
])
def test_bad_parameters_raise_naming_them(kwargs, needle):
    base = dict(epsilon=1.0, delta=1e-3, T=5)
    with pytest.raises(AlgorithmParameterError, match=needle):
        Showkatbakhsh(**{**base, **kwargs})


def test_bad_problem_and_unbound_use():
    fc = FunctionClass(gradient_bound=1.0, smoothness=2.0)  # no strong convexity
    costs = UserCost([lambda x: float(x @ x)], [lambda x: 2 * x], fc, dim=1)
    problem = Problem(Box(-1.0, 1.0, dim=1), costs)
    with pytest.raises(AlgorithmParameterError, match="needs strong_convexity .* the problem declares none"):
        Showkatbakhsh(epsilon=1.0, delta=1e-3, T=5).bind(problem)
    with pytest.raises(AlgorithmParameterError, match="call bind"):
        Showkatbakhsh(epsilon=1.0, delta=1e-3, T=5).noise(1, "y")
    with pytest.raises(AlgorithmParameterError, match=r"every data point must lie in \[-R, R\]\^p with R=0.5"):
        mean_estimation_problem(np.ones((2, 2, 1)), 0.5)
    with pytest.raises(AlgorithmParameterError, match=r"data must have shape \(N, N_i, p\)"):
        mean_estimation_problem(np.ones((2, 2)), 1.0)
    data = np.zeros((2, 3, 1))
    with pytest.raises(ConstantViolationError):
        mean_estimation_problem(np.full((2, 3, 1), -1.0), 1.0, mean_estimation_problem(data, 1.0).constants)

"""Wang and Başar (Automatica 2023): Algorithm 2, the §6 problems, the accountant's report and the reproductions."""

from __future__ import annotations

import json
import math
import runpy
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from accounting import mechanisms
from asyncdp import Async, Deadline, InjectedNoise, Scenario, ZeroNoise
from asyncdp.papers.wang_basar.rule import STEP_SCHEDULES, TwoPhaseStep, WangBasar
from asyncdp.cli import main
from asyncdp.errors import AlgorithmParameterError, ProblemError, ScenarioError
from asyncdp.privacy import check_privacy
from asyncdp.papers.wang_basar import privacy as adapter
from asyncdp.problems.nonconvex import (
    PAPER_KAPPA,
    PAPER_M,
    SPURIOUS_MINIMUM_APPROX,
    THETA_SADDLE_PAPER,
    THETA_STAR_PAPER,
    NonconvexEstimation,
    estimation_problem,
    ica_error,
    ica_problem,
    paper_measurements,
    stationary_point,
)
from asyncdp.papers.wang_basar import reproduce as rep
from asyncdp.problems.domains import Ball, Reals

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
W_RING = (np.eye(5) + np.roll(np.eye(5), 1, axis=1) + np.roll(np.eye(5), -1, axis=1)) / 3.0


def _grad_box(theta: np.ndarray) -> np.ndarray:
    """grad f_i on the box, straight from §6.1: -2 M^T Y_i + 2 M^T M theta + 3 kappa ||theta|| theta, (..., 5, 2)."""
    y = paper_measurements()
    r = np.linalg.norm(theta, axis=-1, keepdims=True)
    return -2.0 * y @ PAPER_M + 2.0 * theta @ (PAPER_M.T @ PAPER_M) + 3.0 * PAPER_KAPPA * r * theta


# --------------------------------------------------------------------------- the rule


def test_rule_matches_a_direct_numpy_algorithm2_on_injected_noise():
    """x^{k+1} = W (x^k - lam^k (g^k + sqrt(Var) xi^k)) (eq. 10), both engines, to 1e-12.

    Both sides do the same float operations up to their order: per step a few ulps of values <= 10
    (~1e-14), amplified by at most ||W|| (1 + lam ||hess f||) <= 1 + 0.02 * 13 per step, i.e. by
    1.26^25 ~ 300 over 25 steps: 1e-12 holds with margin. The iterates must stay in the box, where
    the printed formula (no extension) applies; the test checks that too.
    """
    sc = WangBasar.example_scenario(seed=4).replace(horizon=25, x0=np.random.default_rng(4).uniform(
        [-5.0, -2.0], [2.0, 2.0], size=(5, 2)))
    xi = np.random.default_rng(9).standard_normal((25, 2, 5, 2))  # (T, R, N, n)
    batch = sc.replace(noise=InjectedNoise(broadcast={0: xi})).run(engine="batch", runs=2)
    var = sc.algorithm.noise_variance
    for r in range(2):
        x = sc.initial_points().copy()
        ref = [x]
        for k in range(1, 26):
            lam = 0.02 if k <= 500 else 1.0 / k
            x = W_RING @ (x - lam * (_grad_box(x) + math.sqrt(var) * xi[k - 1, r]))
            ref.append(x)
        ref = np.array(ref)
        assert ((ref >= [-8, -3]) & (ref <= [4, 3])).all()
        assert np.abs(batch.trajectory[r] - ref).max() <= 1e-12
        single = sc.replace(noise=InjectedNoise(broadcast={0: xi[:, r]})).run()
        assert np.abs(single.trajectory - ref).max() <= 1e-12
    # the ledger declares the message's noise: std lam^k sqrt(Var), the paper's sensitivity lam^k (eq. 30)
    rel = batch.ledger.for_agent(0)
    assert [r.scale for r in rel] == pytest.approx([0.02 * math.sqrt(var)] * 25, rel=1e-15)
    assert {r.claimed_sensitivity for r in rel} == {0.02} and {r.mechanism for r in rel} == {"gaussian"}


def test_step_schedules_and_noise_declaration():
    est, ica = STEP_SCHEDULES["estimation"], STEP_SCHEDULES["ica"]
    assert (est(1), est(500), est(501), est(3000)) == (0.02, 0.02, 1 / 501, 1 / 3000)
    assert (ica(100), ica(101)) == (0.003, pytest.approx(0.3 / 101, rel=1e-15))
    alg = WangBasar(noise_variance=0.25, step=lambda k: 1.0 / (k + 1), dimension=3)
    decl = alg.noise(3, "v")
    assert (decl.mechanism, decl.dimension) == ("gaussian", 3)
    assert decl.scale == pytest.approx(0.25 * 0.5) and decl.claimed_sensitivity == pytest.approx(0.25)
    assert WangBasar(noise_variance=0.5, step=0.1, dimension=2).step_size(7) == 0.1
    assert json.dumps(alg.params())  # a callable schedule is rendered, not serialized
    assert WangBasar(noise_variance=1.0, step=TwoPhaseStep(0.5, 2, 2.0)).params()["step"]["type"] == "two-phase"


def test_sphere_and_domain_constraints_against_numpy():
    """constraint='sphere' normalizes after combining (ICA); 'domain' projects onto the box."""
    prob = ica_problem(3)
    a = prob.costs.mixing
    x0 = np.random.default_rng(0).standard_normal((5, 10))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    sc = Scenario(prob, rep.ring_graph(), WangBasar(noise_variance=0.0, step="ica", constraint="sphere"),
                  horizon=15, x0=x0, noise=ZeroNoise())
    traj = sc.run(engine="batch").trajectory[0]
    x, s = x0.copy(), prob.costs.samples
    for k in range(1, 16):
        g = np.stack([4.0 * np.mean((s[i] @ x[i])[:, None] ** 3 * s[i], axis=0) for i in range(5)])
        z = W_RING @ (x - STEP_SCHEDULES["ica"](k) * g)
        x = z / np.linalg.norm(z, axis=1, keepdims=True)
    assert np.abs(traj[-1] - x).max() <= 1e-12
    assert np.allclose(np.linalg.norm(traj[1:], axis=-1), 1.0, atol=1e-14)
    assert ica_error(traj[-1], a).shape == (5,)
    box = WangBasar.example_scenario().replace(algorithm=WangBasar(noise_variance=1e4, constraint="domain"))
    t = box.run(engine="batch").trajectory
    assert (t[:, 1:] >= [-8, -3]).all() and (t[:, 1:] <= [4, 3]).all()
    assert ((t[:, 1:] == [-8, -3]) | (t[:, 1:] == [4, 3])).any()  # the projection was active


def test_simpy_deadline_and_async_timing():
    sc = WangBasar.example_scenario(seed=2).replace(horizon=12)
    lock = sc.run()
    dead = sc.replace(timing=Deadline(period=1.0, deadline=0.9)).run()  # lossless, no latency: nothing misses
    assert np.array_equal(dead.trajectory, lock.trajectory)
    asy = sc.replace(timing=Async(rate=1.0)).run()
    assert asy.trajectory.shape == lock.trajectory.shape and np.isfinite(asy.trajectory).all()
    assert len(asy.ledger) == 5 * 12 and asy.messages_sent > 0
    assert not np.array_equal(asy.trajectory, lock.trajectory)


# --------------------------------------------------------------------------- the §6.1 problem


def test_stationary_points_and_hessian():
    """theta*, theta_s as printed (4 decimals: |diff| <= 5e-5) and the corrected Hessian's eigenvalues (3 decimals)."""
    fam = estimation_problem().costs
    agents = np.arange(5)
    star, saddle = stationary_point(fam, THETA_STAR_PAPER), stationary_point(fam, THETA_SADDLE_PAPER)
    assert np.abs(star - THETA_STAR_PAPER).max() <= 5e-5 and np.abs(saddle - THETA_SADDLE_PAPER).max() <= 5e-5
    for p in (star, saddle):  # closed form of grad F = 0 on the box, with r = ||theta||
        r = np.linalg.norm(p)
        assert p == pytest.approx([2 / (2 + 3 * PAPER_KAPPA * r), 8 / (8 + 3 * PAPER_KAPPA * r)], abs=1e-13)
        assert np.abs(fam.total_gradient(p)).max() <= 1e-12
    ev_star = np.linalg.eigvalsh(fam.hessian(agents, star).mean(axis=0))
    ev_saddle = np.linalg.eigvalsh(fam.hessian(agents, saddle).mean(axis=0))
    assert ev_star == pytest.approx([1.157, 7.295], abs=5e-4) and (ev_star > 0).all()
    assert ev_saddle == pytest.approx([-2.482, 5.674], abs=5e-4)
    # the paper's printed Hessian 2 M^T M - 3 kappa ||t|| I + 3 kappa t t^T / ||t|| hides the saddle
    r = np.linalg.norm(saddle)
    printed = 2 * PAPER_M.T @ PAPER_M - 3 * PAPER_KAPPA * r * np.eye(2) + 3 * PAPER_KAPPA * np.outer(saddle, saddle) / r
    assert (np.linalg.eigvalsh(printed) > 0).all()
    # the Hessian is the derivative of the gradient, inside and outside the box (central differences, h = 1e-6:
    # error ~ h^2 |f'''| + eps |g| / h ~ 1e-9)
    for x in (np.array([1.0, -2.0]), np.array([-9.3, 3.7]), np.array([5.5, -4.2])):
        fd = np.stack([(fam.gradient(agents, x + e) - fam.gradient(agents, x - e)) / 2e-6 for e in 1e-6 * np.eye(2)],
                      axis=-1)
        assert np.abs(fam.hessian(agents, x) - fd).max() <= 1e-6


def test_extension_is_the_formula_on_the_box_and_leaves_three_stationary_points():
    fam = estimation_problem().costs
    pts = np.random.default_rng(1).uniform([-8, -3], [4, 3], size=(200, 1, 2))
    y = paper_measurements()
    direct = ((y - pts @ PAPER_M.T) ** 2).sum(-1) + PAPER_KAPPA * np.linalg.norm(pts, axis=-1) ** 3
    assert np.abs(fam.value(np.arange(5), pts) - direct).max() <= 1e-12
    assert np.abs(fam.gradient(np.arange(5), pts) - _grad_box(pts)).max() <= 1e-12
    found = []
    def jac(x: np.ndarray) -> np.ndarray:
        return fam.hessian(np.arange(5), x).sum(axis=0)

    for start in np.stack(np.meshgrid(np.linspace(-40, 40, 33), np.linspace(-15, 15, 13)), -1).reshape(-1, 2):
        sol = optimize.root(fam.total_gradient, start, jac=jac, tol=1e-13)
        new = sol.success and np.abs(fam.total_gradient(sol.x)).max() < 1e-8
        if new and not any(np.linalg.norm(sol.x - f) < 1e-6 for f in found):
            found.append(sol.x)
    found = sorted(found, key=lambda p: p[0])
    assert len(found) == 3
    assert np.allclose(found, [SPURIOUS_MINIMUM_APPROX, THETA_SADDLE_PAPER, THETA_STAR_PAPER], atol=5e-5)
    values = [float(fam.total_value(p)) / 5 for p in found]
    assert values[2] == min(values) and values[2] == pytest.approx(0.742, abs=5e-4)  # theta* is the global minimum
    assert values[0] < values[1]  # the spurious minimum lies below the saddle: runs leaving left end there
    far = fam.total_value(np.array([[200.0, 0.0], [-200.0, 50.0], [0.0, -300.0]]))
    assert (far > 1e4).all()  # coercive
    assert np.allclose(estimation_problem().optimum, found[2], atol=1e-12)


def test_ica_family_gradient_and_error():
    fam = ica_problem(0).costs
    u = np.random.default_rng(2).standard_normal(10)
    fd = np.array([(fam.value(1, u + e) - fam.value(1, u - e)) / 2e-6 for e in 1e-6 * np.eye(10)])
    g = fam.gradient(1, u)
    assert np.abs(g - fd).max() <= 1e-6 * (1 + np.abs(g).max())
    a = fam.mixing
    assert np.allclose(a.T @ a, np.eye(10), atol=1e-12)
    assert ica_error(np.stack([a[:, 3], -a[:, 7]]), a) == pytest.approx([0.0, 0.0], abs=1e-7)
    assert float(ica_error((a[:, 0] + a[:, 1]) / math.sqrt(2), a)) == pytest.approx(math.sqrt(2 - math.sqrt(2)))


# --------------------------------------------------------------------------- the saddle


def test_saddle_noise_free_stays_and_noise_escapes():
    """Homogeneous data: noise-free stays at theta_s to rounding; with noise most runs escape.

    Stays: every local gradient vanishes at theta_s, so each step changes x by lam * |grad| ~ 1e-17, below half
    an ulp of |theta_s| ~ 7.4 (4.4e-16): the rounded iterate does not move beyond an ulp or two of the mixing
    sum; bound 1e-12. Escape threshold: the reproduction saw 400/400 escapes, so p >= 0.9908 (Clopper-Pearson
    95% lower bound); with 40 runs P(X <= 35 | p = 0.99) = 5e-5, while a drop to p = 0.8 passes the threshold
    36 only with probability 0.08 (fixed seed: the test is deterministic).
    """
    problem = estimation_problem(homogeneous=True)
    theta_s = stationary_point(problem.costs, THETA_SADDLE_PAPER)
    sc = Scenario(problem, rep.ring_graph(), WangBasar(noise_variance=0.0), horizon=300, seed=1,
                  x0=np.tile(theta_s, (5, 1)))
    still = sc.run(engine="batch")
    assert np.abs(still.trajectory - theta_s).max() <= 1e-12
    noisy = sc.replace(algorithm=WangBasar(noise_variance=0.5)).run(engine="batch", runs=40)
    dist = np.linalg.norm(noisy.trajectory.mean(axis=2) - theta_s, axis=-1)
    assert int((dist > rep.ESCAPE_RADIUS).any(axis=1).sum()) >= 36
    # the paper's (heterogeneous) data: the noise-free run does not stay (deterministic drift to the left)
    drift = sc.replace(problem=estimation_problem()).run(engine="batch").final[0].mean(axis=0)
    assert drift == pytest.approx(SPURIOUS_MINIMUM_APPROX, abs=1e-3)


# --------------------------------------------------------------------------- privacy


def test_claimed_privacy_is_the_printed_theorem_per_iteration():
    root = math.sqrt(2 * math.log(1.25 / 1e-5) / 0.5)
    alg = WangBasar(noise_variance=0.5, claim="as-printed")
    assert alg.claimed_privacy(3000) == pytest.approx((0.02 * root, 1e-5), rel=1e-12)  # Thm 5, worst k: lam = 0.02
    var = WangBasar(noise_variance=1e6, privacy_kind="variable")  # Thm 6: eps_k = root / lam^k, worst at the smallest
    assert var.claimed_privacy(500)[0] == pytest.approx(math.sqrt(2 * math.log(1.25e5) / 1e6) / 0.02)
    assert var.claimed_privacy(520) == (math.inf, 0.0)  # lam^520 = 1/520: eps = 2.5 >= 1, no claim
    assert WangBasar(noise_variance=0.5, privacy_kind="variable").claimed_privacy(10) == (math.inf, 0.0)  # eps >= 1
    assert WangBasar(noise_variance=0.0).claimed_privacy(10) == (math.inf, 0.0)
    sample = WangBasar(noise_variance=0.5, privacy_kind="sample", claim="as-printed").bind(estimation_problem())
    assert (sample.sample_lipschitz, sample.samples_per_agent) == (4.0, 1)
    assert sample.per_iteration_epsilon(1) == pytest.approx(4 * 0.02 * root)


def test_consistent_claim_accounts_for_the_step_on_the_noise():
    """Default claim: sensitivity c_k of the message over its noise std lam^k sqrt(Var)."""
    root = math.sqrt(2 * math.log(1.25 / 1e-5) / 50.0)
    alg = WangBasar(noise_variance=50.0)
    assert alg.claim == "consistent"
    assert alg.per_iteration_epsilon(1) == pytest.approx(root)  # Thm 5: lam / lam
    assert alg.claimed_privacy(3000) == pytest.approx((root, 1e-5))
    printed = WangBasar(noise_variance=50.0, claim="as-printed")
    assert printed.per_iteration_epsilon(1) == pytest.approx(0.02 * root)  # lam^k times smaller
    var = WangBasar(noise_variance=1e6, privacy_kind="variable")
    assert var.per_iteration_epsilon(7) == WangBasar(noise_variance=1e6, privacy_kind="variable",
                                                     claim="as-printed").per_iteration_epsilon(7)
    with pytest.raises(AlgorithmParameterError, match="claim must be one of"):
        WangBasar(noise_variance=1.0, claim="nope")


def test_adapter_sensitivity_ignores_the_claimed_values():
    sc = WangBasar.example_scenario().replace(horizon=600)
    s = adapter.sensitivity(sc)
    assert s[0] == 0.02 and s[-1] == pytest.approx(1 / 600)
    assert adapter.sensitivity(sc, "sample")[0] == pytest.approx(4 * 0.02)
    lam = np.array([sc.algorithm.step_size(t) for t in range(1, 601)])
    L = sc.problem.costs.smoothness_bound()  # global ||hess f_i|| bound: the iterates are unconstrained
    assert np.allclose(adapter.sensitivity(sc, "variable"), 1 + lam * L, rtol=1e-12, atol=0)  # eq. (31) corrected

    class Overclaiming(WangBasar):
        def claimed_sensitivity(self, k: int) -> float:
            return 1e-9

    assert np.array_equal(adapter.sensitivity(sc.replace(algorithm=Overclaiming(noise_variance=0.5))), s)
    batch = sc.replace(horizon=20).run(engine="batch")
    assert list(batch.ledger.for_agent(0)) == list(adapter.agent_ledger(sc.replace(horizon=20)))


def test_variable_adjacency_without_a_declared_lipschitz_constant_is_refused():
    """ICA's quartic costs have no global gradient-Lipschitz constant: unconstrained iterates get no number.

    On the unit ball (the sphere constraint keeps every iterate and every segment between two in it) the
    family declares L = 12 y^4, and the sensitivity is 1 + lam^k L.
    """
    prob = ica_problem(0, dim=2, num_samples=40)
    free = WangBasar.example_scenario().replace(problem=prob, algorithm=WangBasar(noise_variance=1.0, step="ica"),
                                                horizon=5, x0=np.tile([1.0, 0.0], (5, 1)))
    assert prob.costs.function_class(Reals(2)).smoothness is None
    for call in (lambda: adapter.sensitivity(free, "variable"), lambda: adapter.gradient_lipschitz(free)):
        with pytest.raises(ScenarioError, match=r"needs L, .*smoothness.*Reals.*constraint='none'.*no bound"):
            call()
    report = adapter.privacy_report(free, methods=("basic",))  # Theorem 5 is still reported
    assert [t["kind"] for t in report["theorems"]] == ["gradient"]
    assert set(report["unavailable"]) == {"sample", "variable"}
    assert report["unavailable"]["variable"].startswith("Theorem 6: kind='variable' (eq. 31) needs L")
    own = free.replace(algorithm=WangBasar(noise_variance=1.0, step="ica", privacy_kind="variable"))
    with pytest.raises(ScenarioError, match="needs L"):
        adapter.privacy_report(own, methods=("basic",))
    sphere = free.replace(algorithm=WangBasar(noise_variance=1.0, step="ica", constraint="sphere"))
    L = prob.costs.function_class(Ball(np.zeros(2), 1.0)).smoothness
    assert L is not None and adapter.gradient_lipschitz(sphere) == L
    assert adapter.sensitivity(sphere, "variable") == pytest.approx(1 + 0.003 * L, rel=1e-12)


def test_report_per_iteration_versus_composed():
    """Theorem 5 as printed vs the accountant: one iteration, then K = 300 composed four ways.

    K identical Gaussian releases compose exactly to one Gaussian of sensitivity sqrt(K) S (rotation
    invariance), so PLD (pessimistic, grid 1e-3) must lie in [exact, exact + 1%]. Basic >= RDP >= PLD; advanced
    exceeds basic here (per-release epsilon ~6.6, where e^eps explodes) and is below it when the per-release
    epsilon is small (variance 1e4).
    """
    sc = WangBasar.example_scenario().replace(horizon=300)
    r = adapter.privacy_report(sc)
    assert set(r) == set(adapter.REPORT_KEYS)
    root = math.sqrt(2 * math.log(1.25e5) / 0.5)
    per = r["per_iteration"]
    assert per["eps_printed"] == pytest.approx(0.02 * root) and per["eps_consistent"] == pytest.approx(root)
    assert per["eps_accountant"] == pytest.approx(mechanisms.gaussian_epsilon(1.0, math.sqrt(0.5), 1e-5))
    c = r["composed"]
    exact = mechanisms.gaussian_epsilon(math.sqrt(300), math.sqrt(0.5), 1e-5)
    assert exact * (1 - 1e-12) <= c["pld"] <= exact * 1.01  # Gaussian only: the closed form, up to round-off
    assert c["basic"] >= c["rdp"] >= c["pld"] > 300 ** 0.5 * per["eps_printed"]
    assert c["advanced"] > c["basic"]
    small = adapter.privacy_report(sc.replace(algorithm=WangBasar(noise_variance=1e4)))["composed"]
    assert small["basic"] >= small["advanced"] and small["basic"] >= small["rdp"] >= small["pld"]
    assert {t["theorem"] for t in r["theorems"]} == {"Theorem 4", "Theorem 5", "Theorem 6"} and not r["unavailable"]
    thm6 = next(t for t in r["theorems"] if t["kind"] == "variable")  # eq. (31) corrected: 1 + lam L over lam sqrt(Var)
    ratio = (1 + 0.02 * sc.problem.costs.smoothness_bound()) / 0.02
    assert thm6["eps_accountant_max"] == pytest.approx(mechanisms.gaussian_epsilon(ratio, math.sqrt(0.5), 1e-5))
    assert all(set(t) == set(adapter.THEOREM_KEYS) for t in r["theorems"])


def test_privacy_check_audits_the_per_iteration_claim():
    ex = runpy.run_path(str(EXAMPLES / "wang_basar_saddle_escape.py"))
    sc, adj = ex["scenario"].replace(horizon=4), ex["adjacent"].replace(horizon=4)
    printed = WangBasar(noise_variance=0.5, claim="as-printed")
    sc, adj = sc.replace(algorithm=printed), adj.replace(algorithm=printed)
    bad = check_privacy(sc, adj, runs=400)
    assert bad.verdict == "violation" and bad.witness["round"] == 1 and "Theorem 5" in bad.theorem
    assert bad.epsilon_ledger == pytest.approx(mechanisms.gaussian_epsilon(0.02, 0.02 * math.sqrt(0.5), 1e-5),
                                               rel=1e-9)
    # Theorem 6 rests on eq. (31)'s 1; the accountant's sensitivity is 1 + lam L (L = 34.38 here), so the
    # printed claim lies below the accountant's epsilon; no behavioural witness, so inconclusive, never a pass
    alg = WangBasar(noise_variance=1e6, privacy_kind="variable")
    var = check_privacy(sc.replace(algorithm=alg), adj.replace(algorithm=alg), runs=400)
    L = sc.problem.costs.smoothness_bound()
    assert var.epsilon_ledger == pytest.approx(mechanisms.gaussian_epsilon(1 + 0.02 * L, 0.02 * 1e3, 1e-5), rel=1e-9)
    assert var.verdict == "inconclusive" and var.epsilon_ledger > var.epsilon_claimed
    assert "Theorem 6" in var.theorem and "VIOLATED" in var.theorem
    # the default (consistent) reading of Theorem 5 with enough noise for eps < 1: the per-iteration claim
    # holds, the run's total does not fit in it
    alg = WangBasar(noise_variance=50.0)
    ok = check_privacy(sc.replace(algorithm=alg), adj.replace(algorithm=alg), runs=400)
    assert ok.verdict == "pass" and ok.epsilon_ledger <= ok.epsilon_claimed < min(1, ok.epsilon_tight)


def test_privacy_check_says_no_claim_when_the_theorem_claims_nothing():
    # the example's variance 0.5: under the consistent reading every per-iteration epsilon is >= 1, where
    # Theorem 5 says nothing; the check must not call that a pass
    ex = runpy.run_path(str(EXAMPLES / "wang_basar_saddle_escape.py"))
    sc, adj = ex["scenario"].replace(horizon=4), ex["adjacent"].replace(horizon=4)
    assert math.isinf(sc.algorithm.bind(sc.problem).claimed_privacy(4)[0])
    report = check_privacy(sc, adj, runs=200)
    assert report.witness is None and report.verdict == "no-claim"
    assert any("claims no finite epsilon" in r for r in report.reasons)
    assert "no claim" in report.theorem


# --------------------------------------------------------------------------- the example


def test_example_script(capsys):
    out = runpy.run_path(str(EXAMPLES / "wang_basar_saddle_escape.py"))["main"]()
    assert out["homogeneous_noise_free_deviation"] <= 1e-12 and out["escaped_fraction"] >= 0.9
    assert 0.2 <= out["theta_star_fraction"] <= 0.8  # about half: the other half ends left of the box
    assert "reached theta*" in capsys.readouterr().out
    assert main(["run", str(EXAMPLES / "wang_basar_saddle_escape.py"), "--horizon", "20"]) == 0
    assert "epsilon_claimed" in capsys.readouterr().out


# --------------------------------------------------------------------------- bad parameters


@pytest.mark.parametrize("kwargs, match", [
    ({"noise_variance": -1.0}, "noise_variance must be finite and >= 0, got -1.0"),
    ({"noise_variance": float("nan")}, "noise_variance must be a real number"),
    ({"noise_variance": 1.0, "step": "fast"}, "step must be one of .* got 'fast'"),
    ({"noise_variance": 1.0, "step": -0.1}, "step must be positive and finite, got -0.1"),
    ({"noise_variance": 1.0, "step": [0.1]}, "step must be a schedule name"),
    ({"noise_variance": 1.0, "privacy_kind": "data"}, "privacy_kind must be one of .* got 'data'"),
    ({"noise_variance": 1.0, "delta": 1.0}, "delta must be in \\(0, 1\\), got 1.0"),
    ({"noise_variance": 1.0, "constraint": "ball"}, "constraint must be one of .* got 'ball'"),
    ({"noise_variance": 1.0, "samples_per_agent": 0}, "samples_per_agent must be a positive integer, got 0"),
])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(AlgorithmParameterError, match=match):
        WangBasar(**kwargs)


def test_bad_values_at_use_raise():
    with pytest.raises(AlgorithmParameterError, match=r"step\(3\) must be positive and finite, got -1"):
        WangBasar(noise_variance=1.0, step=lambda k: -1).step_size(3)
    with pytest.raises(AlgorithmParameterError, match="switch must be an integer >= 0"):
        TwoPhaseStep(0.1, -1, 1.0)
    with pytest.raises(AlgorithmParameterError, match="needs sample_lipschitz; ICAQuartic declares none"):
        WangBasar(noise_variance=1.0, privacy_kind="sample").bind(ica_problem())
    with pytest.raises(AlgorithmParameterError, match="call bind"):
        WangBasar(noise_variance=1.0).noise(1, "v")
    with pytest.raises(ProblemError, match="soft_width must be > 0, got 0"):
        NonconvexEstimation(paper_measurements(), soft_width=0)
    with pytest.raises(ProblemError, match="low < high"):
        NonconvexEstimation(paper_measurements(), box=((0, 0), (0, 1)))
    with pytest.raises(ProblemError, match="divisible"):
        ica_problem(num_samples=801)
    with pytest.raises(ScenarioError, match="noise_variance = 0"):
        adapter.privacy_report(WangBasar.example_scenario().replace(algorithm=WangBasar(noise_variance=0.0)))


def test_variable_adjacency_reads_L_where_the_first_message_reads_the_gradient():
    """The sphere constraint normalizes after combining, so round 1's message reads ``grad f_i(x0)`` at the
    user's ``x0``: with ``||x0|| = 10`` the ICA message moves by far more than ``1 + lam L`` of the unit ball.

    Independent truth: the message ``x - lam grad f_0(x)`` at ``x0`` and at ``x0 + e_k`` (``||.||_1 = 1``, the
    variable adjacency), differenced directly; the accountant's round-1 sensitivity must bound it.
    """
    prob = ica_problem(0, dim=2, num_samples=40)
    x0 = np.tile([10.0, 0.0], (5, 1))
    sc = WangBasar.example_scenario().replace(
        problem=prob, algorithm=WangBasar(noise_variance=1.0, step="ica", constraint="sphere",
                                          privacy_kind="variable"), horizon=2, x0=x0)
    lam = sc.algorithm.step_size(1)

    def message(x: np.ndarray) -> np.ndarray:
        return x - lam * prob.costs.gradient(0, x, round_index=1)

    moves = [float(np.linalg.norm(message(x0[0] + s * np.eye(2)[k]) - message(x0[0])))
             for k in range(2) for s in (1.0, -1.0)]
    unit = prob.costs.function_class(Ball(np.zeros(2), 1.0)).smoothness
    assert max(moves) > 1 + lam * unit  # the unit ball's L does not cover x0
    assert adapter.sensitivity(sc, "variable")[0] >= max(moves)
    assert adapter.gradient_lipschitz(sc) == prob.costs.function_class(Ball(np.zeros(2), 10.0)).smoothness

"""Sensitivity coverage must also read the adjacent scenario's runs, not only the scenario's.

The found case: Huang, Mitra and Vaidya (ICDCN 2015) on three agents in ``[-1, 1]^2`` with linear costs.
Agent 0's cost flips sign (an honest pair of the paper's class). Agent 1's adjacent cost is the scenario's
plus ``<v, x> phi(x)``, where ``phi`` is a smooth bump that vanishes within ``r = 1e-6`` of the adjacency
check's probe points and of every point at which the scenario's own runs evaluate agent 1's gradient, and is 1
farther than ``2 r`` from all of them. The adjacency check sees one changed agent, the coverage step replayed only
the scenario's runs (agent 1 never moves there) and the check said ``pass``; on any other draw agent 1's
releases move by up to the lemma's bound, so the pair loses up to twice the claimed epsilon. Independent fact
(exact Laplace densities of eqs. 5-7, computed here, not by the checker): with ``S = {L > 1}``,
``P(S) - e P'(S) = E_P[1_S (1 - e^(1 - L))]`` is about 0.0048 > 0, more than 20 standard errors from 0.
The coverage step now replays the adjacent scenario's runs too, where agent 1 moves.

The same cost with holes also at the points the adjacent scenario's runs visit (the honest pair's, which the
holed pair's adjacent runs then reproduce exactly) is seen by no replay, probe or audit: sampling gradients at
finitely many seed-determined points cannot show that only one agent's cost differs. The adjacency check reads
the pair's structure instead: agent 1's adjacent callables are other objects than the scenario's, so its cost is
not shown unchanged and the verdict is ``inconclusive`` with that reason (never ``pass``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from asyncdp.privacy import check_privacy
from asyncdp.privacy.adjacency import _probe_points
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare, small_example
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.costs.user import UserCost
from asyncdp.problems.problem import Problem

RUNS = 200
C2 = 4 * math.sqrt(2)
V = np.array([4.0, 4.0])
A2 = np.array([-0.5, 0.0])
FC = FunctionClass(gradient_bound=C2)
W = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
R = 1e-6


def _lin(g):
    return (lambda x: float(x @ g)), (lambda x: np.array(g, dtype=float))


def _quad(a):
    return (lambda x: float((x - a) @ (x - a))), (lambda x: 2 * (x - a))


class _Holes:
    """``psi(x) = <v, x> phi(x)``, ``phi = prod_k h(|x - p_k|^2 / r^2)``; ``h`` a C1 step from 0 (u <= 1) to 1 (u >= 4)."""

    def __init__(self, pts):
        self.p = np.asarray(pts, dtype=float)

    def _h(self, u):
        s = np.clip((u - 1) / 3, 0, 1)
        return 3 * s**2 - 2 * s**3, np.where((u > 1) & (u < 4), 2 * s * (1 - s), 0.0)

    def value(self, x):
        h, _ = self._h(((self.p - x) ** 2).sum(1) / R**2)
        return float(x @ V) * float(np.prod(h))

    def gradient(self, x):
        u = ((self.p - x) ** 2).sum(1) / R**2
        h, dh = self._h(u)
        g_phi = np.zeros(2)
        for k in np.flatnonzero(dh > 0):
            g_phi += np.prod(np.delete(h, k)) * dh[k] * 2 * (x - self.p[k]) / R**2
        return float(np.prod(h)) * V + float(x @ V) * g_phi


def _pair(both_sides: bool = False):
    base = small_example(runs=RUNS)[0].scenario
    box = base.problem.domain
    fv = [_lin(-V), _lin(-V), _quad(A2)]
    sc = base.replace(problem=Problem(box, UserCost([f for f, _ in fv], [g for _, g in fv], FC, dim=2), FC))
    honest = UserCost([_lin(V)[0], fv[1][0], fv[2][0]], [_lin(V)[1], fv[1][1], fv[2][1]], FC, dim=2)
    # the points at which the scenario's runs (the check's seed and runs) evaluate agent 1's gradient; with
    # both_sides, also the adjacent runs' of the honest pair (agent 1 unchanged): the holed pair's adjacent runs
    # then visit exactly those points (agent 1's two gradients agree there), so they are its points too
    ctx = prepare(ScenarioPair(sc, sc.replace(problem=Problem(box, honest, FC))), CheckOptions(runs=RUNS))
    sides = (0, 1) if both_sides else (0,)
    z1 = np.concatenate([np.einsum("j,rtjd->rtd", W[1], ctx.engine_runs(side).messages["y"]).reshape(-1, 2)
                         for side in sides])
    z1 = z1[np.isfinite(z1).all(axis=1)]
    holes = _Holes(np.concatenate([z1, box.project(z1), _probe_points(box, 16, 0)]))
    adj_costs = UserCost([_lin(V)[0], lambda x: fv[1][0](x) + holes.value(x), fv[2][0]],
                         [_lin(V)[1], lambda x: fv[1][1](x) + holes.gradient(x), fv[2][1]], FC, dim=2)
    return sc, sc.replace(problem=Problem(box, adj_costs, FC)), holes


def _privacy_loss_excess(holes, samples=100_000, seed=12345):
    """Monte Carlo of ``E_P[1_{L > 1} (1 - e^(1 - L))] = P(L > 1) - e P'(L > 1)`` with exact densities; (mean, se)."""
    eps, c, q, p, horizon, n = 1.0, 0.05, 0.2, 0.6, 5, 2
    scales = [2 * C2 * math.sqrt(n) * c * p ** (t - 1) / (eps * (p - q)) for t in range(1, horizon + 1)]  # eq. (8)
    steps = [c * q ** (t - 1) for t in range(1, horizon + 1)]

    def grads(z, sign):
        g = np.empty_like(z)
        g[:, 0] = g[:, 1] = sign * V  # agent 1's adjacent gradient is exactly V farther than 2r from every hole
        g[:, 2] = 2 * (z[:, 2] - A2)
        norm = np.linalg.norm(g, axis=-1, keepdims=True)
        return g * np.minimum(1.0, C2 / norm)  # the rule's clip to C2

    def run(y, sign, rng=None):  # eqs. (5)-(7); draws y when rng is given, returns the means of y(t)
        mu = np.empty_like(y)
        x = np.zeros((len(y), 3, 2))
        for t in range(horizon):
            mu[:, t] = x
            if rng is not None:
                y[:, t] = x + scales[t] * rng.laplace(size=x.shape)
            z = np.einsum("ij,sjd->sid", W, y[:, t])
            x = np.clip(z - steps[t] * grads(z, sign), -1.0, 1.0)
        return mu

    y = np.empty((samples, horizon, 3, 2))
    mu = run(y, -1.0, np.random.default_rng(seed))
    z1 = np.einsum("j,stjd->std", W[1], y[:, : horizon - 1]).reshape(-1, 2)
    far = min(np.sqrt(((holes.p - z) ** 2).sum(1)).min() for z in z1[:: max(1, len(z1) // 2000)])
    assert far > 2 * R
    mu_prime = run(y, 1.0)
    s = np.array(scales)[None, :, None, None]
    loss = ((np.abs(y - mu_prime) - np.abs(y - mu)) / s).sum(axis=(1, 2, 3))
    terms = np.where(loss > eps, 1.0 - np.exp(eps - loss), 0.0)
    return terms.mean(), terms.std(ddof=1) / math.sqrt(samples)


def test_a_second_agents_hidden_change_is_not_passed():
    sc, adj, holes = _pair()
    mean, se = _privacy_loss_excess(holes)
    assert mean - 5 * se > 0  # the claim (1, 0) is false for this pair (one-sided, z = 5: confidence 1 - 3e-7)
    report = check_privacy(sc, adj, runs=RUNS)
    assert report.verdict == "violation"
    assert report.witness is not None and report.witness["kind"] == "coverage"
    assert (report.witness["agent"], report.witness["side"]) == (1, 1)  # agent 1 moves on the adjacent runs only


def test_a_second_agents_change_hidden_from_both_sides_runs_is_not_passed():
    """No sampled point sees agent 1 move, but agent 1's adjacent callables are other objects than the scenario's:
    the structure cannot show its cost unchanged, so the adjacency's doubt holds the verdict below pass."""
    sc, adj, holes = _pair(both_sides=True)
    mean, se = _privacy_loss_excess(holes)
    assert mean - 5 * se > 0  # the claim (1, 0) is false for this pair (one-sided, z = 5: confidence 1 - 3e-7)
    report = check_privacy(sc, adj, runs=RUNS)
    assert report.verdict == "inconclusive"
    assert report.witness is None  # nothing sampled sees agent 1 move: a doubt, not a witness
    doubt = report.evidence[0]
    assert (doubt.method, doubt.figures["adjacency_unverified_agents"]) == ("adjacency", [1])
    assert any(r.startswith("adjacency: the costs of agent(s) [1] could not be shown unchanged") and
               "Problem.adjacent" in r for r in report.reasons)


def _shadow_holes(out, agents, x, holes):
    """``out`` (the family's gradients) plus the holed change on agent 1's rows."""
    if np.ndim(agents) == 0 and np.ndim(x) == 1:
        return out + holes.gradient(np.asarray(x, dtype=float)) if int(agents) == 1 else out
    a = np.broadcast_to(np.asarray(agents), out.shape[:-1])
    xx = np.broadcast_to(np.asarray(x, dtype=float), out.shape)
    for idx in zip(*np.nonzero(a == 1)):
        out[idx] = out[idx] + holes.gradient(xx[idx])
    return out


def _shadowed_pairs():
    """The hidden change of :func:`_pair` (both sides) put where the structure does not look: (1) an
    ``AgentOverride`` subclass (agent 0's cost is ``<V, x>``) whose public ``gradient`` also adds the holed change
    to agent 1; (2) the family ``Problem.adjacent`` builds, with its ``gradient`` shadowed by an instance attribute
    that does the same. Either family's gradients are those of :func:`_pair`'s adjacent family, so its pair is
    the one whose claim :func:`test_a_second_agents_change_hidden_from_both_sides_runs_is_not_passed` shows false."""
    from asyncdp.problems.costs.override import AgentOverride

    sc, adj, holes = _pair(both_sides=True)
    base = sc.problem.costs

    class Overridden(AgentOverride):
        def _own_value(self, x):
            return x @ V

        def _own_gradient(self, x):
            return V

        def function_class(self, domain):
            return base.function_class(domain)

        def with_agent(self, agent, **changes):
            raise NotImplementedError

        def to_dict(self):
            return {"type": "Overridden"}

        def gradient(self, agents, x, *, round_index=None):
            return _shadow_holes(super().gradient(agents, x, round_index=round_index), agents, x, holes)

    shadowed = sc.problem.adjacent(0, value_fn=_lin(V)[0], gradient_fn=_lin(V)[1]).costs
    own = shadowed.gradient
    shadowed.gradient = lambda agents, x, *, round_index=None: _shadow_holes(
        own(agents, x, round_index=round_index), agents, x, holes)
    families = {"subclass": Overridden(base, 0), "instance attribute": shadowed}
    return sc, adj, {k: sc.replace(problem=Problem(sc.problem.domain, f, FC)) for k, f in families.items()}


def test_a_hidden_change_in_an_overridden_or_shadowed_gradient_is_not_passed():
    """The structure describes a family's costs only when the family computes them as its class does: a subclass
    of ``AgentOverride`` that overrides more than its own agent's hooks, or an instance attribute that shadows a
    method, leaves every agent unknown (a doubt: ``inconclusive``, never ``pass``)."""
    sc, holed, pairs = _shadowed_pairs()
    agents = np.repeat(np.arange(3), 50)
    pts = np.random.default_rng(1).uniform(-1.0, 1.0, size=(150, 2))
    for adj in pairs.values():  # the same costs as the holed pair's (whose claim is false), away from the holes too
        np.testing.assert_allclose(adj.problem.costs.gradient(agents, pts), holed.problem.costs.gradient(agents, pts),
                                   rtol=0, atol=1e-12)
        assert np.abs(adj.problem.costs.gradient(1, pts) - sc.problem.costs.gradient(1, pts)).min() > 1.0
        assert sorted(sc.problem.costs.compare_agents(adj.problem.costs).unknown) == [0, 1, 2]
        report = check_privacy(sc, adj, runs=RUNS)
        assert report.verdict == "inconclusive", report.reasons
        assert report.evidence[0].figures["adjacency_unverified_agents"] == [1, 2]


def _with_rule(rule: type):
    """The holed pair's scenario run by ``rule`` (a Huang2015 subclass), the honest adjacent scenario
    (``Problem.adjacent``: agent 0 changed), and agent 1's callables: the holed pair's and the scenario's."""
    sc0, holed, _ = _pair(both_sides=True)
    sc = sc0.replace(algorithm=rule(**{k: getattr(sc0.algorithm, k) for k in ("epsilon", "c", "q", "p")}))
    adj = sc.replace(problem=sc.problem.adjacent(0, value_fn=_lin(V)[0], gradient_fn=_lin(V)[1]))
    holed_fns = holed.problem.costs._value_fns[1], holed.problem.costs._gradient_fns[1]
    return sc, adj, holed_fns, (sc0.problem.costs._value_fns[1], sc0.problem.costs._gradient_fns[1])


def test_a_rule_that_rewrites_the_adjacent_data_while_the_check_runs_is_not_passed():
    """An honest pair (``Problem.adjacent``: agent 0 changed, agents 1 and 2 the scenario's objects), and a
    Huang2015 subclass whose update, handed the adjacent problem (recognised by agent 0's gradient), puts the holed
    change of :func:`_pair` (both sides) into agent 1's callables before its step. On the adjacent data it runs
    what Huang2015 runs on the holed pair's adjacent data, from its first gradient on, and on the scenario's what
    Huang2015 runs: its loss on this adjacent pair is the holed pair's, whose claim
    :func:`test_a_second_agents_change_hidden_from_both_sides_runs_is_not_passed` shows false. The adjacency was
    checked before the runs; the check now checks it again after them: the pair changed, so not ``pass``."""
    from dataclasses import dataclass

    from asyncdp.papers.huang2015.rule import Huang2015

    @dataclass(frozen=True)
    class Rewrites(Huang2015):
        def update(self, state, mixed, t, agents, problem):
            fns = getattr(problem.costs, "_gradient_fns", None)
            if fns is not None and np.array_equal(fns[0](np.zeros(2)), V):
                problem.costs._value_fns[1], problem.costs._gradient_fns[1] = hv, hg
            return super().update(state, mixed, t, agents, problem)

    sc, adj, (hv, hg), _ = _with_rule(Rewrites)
    assert sc.problem.costs.compare_agents(adj.problem.costs).unknown == {0}  # an honest pair before the runs
    report = check_privacy(sc, adj, runs=RUNS)
    assert adj.problem.costs._gradient_fns[1] is hg  # the runs rewrote it
    assert report.verdict == "inconclusive", report.reasons
    [line] = [r for r in report.reasons if r.startswith("adjacency: the pair changed while the check ran")]
    assert "agent(s) [1]" in line


@pytest.mark.xfail(strict=True, reason="a rule tailored to the check's seed: its step reads the private data and, on "
                   "the adjacent data, computes agent 1's holed gradient (putting agent 1's callables back after "
                   "every step, so the pair is unchanged between calls); it departs from Huang2015 only away from "
                   "every point the check's runs (seed 0) visit, so no replay, probe, audit or re-check of the "
                   "adjacency sees it. Sampling with a seed the script knows cannot; a fix needs runs whose seed "
                   "the script cannot know in advance (e.g. a second batch of runs on fresh entropy, recorded in "
                   "the report)")
def test_a_rule_that_departs_only_where_the_checks_seed_never_looks_is_not_passed():
    """As :func:`test_a_rule_that_rewrites_the_adjacent_data_while_the_check_runs_is_not_passed`, but the rule
    restores agent 1's callables after each step: the same mechanism (its loss on this pair is the holed pair's,
    whose claim is false), invisible between calls."""
    from dataclasses import dataclass

    from asyncdp.papers.huang2015.rule import Huang2015

    @dataclass(frozen=True)
    class Tailored(Huang2015):
        def update(self, state, mixed, t, agents, problem):
            fns = getattr(problem.costs, "_gradient_fns", None)
            if fns is None or not np.array_equal(fns[0](np.zeros(2)), V):
                return super().update(state, mixed, t, agents, problem)
            problem.costs._value_fns[1], problem.costs._gradient_fns[1] = hv, hg
            try:
                return super().update(state, mixed, t, agents, problem)
            finally:
                problem.costs._value_fns[1], problem.costs._gradient_fns[1] = ov, og

    sc, adj, (hv, hg), (ov, og) = _with_rule(Tailored)
    report = check_privacy(sc, adj, runs=RUNS)
    assert report.verdict != "pass", report.reasons


def test_the_pairs_shifts_are_each_sides_realized_shifts_one_after_the_other():
    from types import SimpleNamespace

    from accounting.coverage import realized_shifts
    from asyncdp.privacy.coverage import pair_shifts

    pair, ctx = small_example(runs=30)
    got = pair_shifts(pair, ctx)
    sides = [ctx.realized_replay(), ctx.adjacent_replay()]
    want = [realized_shifts(r, SimpleNamespace(residuals=r.residuals_prime))["y"] for r in sides]
    assert list(got) == ["y"] and np.array_equal(got["y"], np.concatenate(want), equal_nan=True)

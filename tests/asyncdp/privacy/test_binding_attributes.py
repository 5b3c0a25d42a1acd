"""A binding may set attributes that are no dataclass fields; the rule's steps read them all the same.

The found case: Huang, Mitra and Vaidya's rule (claim: epsilon = 1, pure) whose binding stores a step-size factor as
a plain attribute (``object.__setattr__``, not a field), read from agent 0's private cost: 1 on the scenario's data,
10 on the adjacent data. Its noise declarations and claim are the same on both sides, and the check compared only
the dataclass fields, so it replayed the adjacent side with the scenario's step sizes and said `pass`. The engine
runs the adjacent data with ten-fold steps for every agent: the exact privacy loss of the engine's own transcripts,
computed below by an independent replay of eqs. (5)-(7), exceeds 1 on about half of them. Such a pair is refused
now, naming the attribute.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest
import scipy.sparse as sp

from accounting.errors import AdjacencyError
from asyncdp import Huang2015
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.privacy import check_privacy
from asyncdp.problems.costs.structure import same_value as _same_value
from asyncdp.privacy.behavior import run_engine
from asyncdp.privacy.context import small_example


@dataclasses.dataclass(frozen=True)
class StepReadsData(Huang2015):
    """Huang2015 whose binding sets a step factor (no field) from agent 0's private cost."""

    name: ClassVar[str] = "huang2015-step-reads-data-test"

    def bind(self, problem: Any) -> StepReadsData:
        bound = super().bind(problem)
        g = problem.costs.gradient(np.array([0]), np.zeros((1, problem.dim)))
        object.__setattr__(bound, "boost", 10.0 if float(g.sum()) > 0 else 1.0)
        return bound

    def update(self, state: Any, mixed: Any, t: int, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), self.gradient_bound)
        return {"x": problem.domain.project(z - self.boost * self.step(t) * g)}


def _pair() -> tuple[Any, Any]:
    pair, _ = small_example(runs=10)
    b = pair.scenario.algorithm
    alg = StepReadsData(epsilon=b.epsilon, c=b.c, q=b.q, p=b.p)
    return pair.scenario.replace(algorithm=alg), pair.adjacent.replace(algorithm=alg)


def _exact_losses(sc: Any, adj: Any, runs: int) -> np.ndarray:
    """ln p(y | scenario) - ln p(y | adjacent) of the engine's transcripts of ``sc``, each side with its own binding.

    Lockstep, broadcast, one static weight matrix: the mean of every release is a function of earlier releases
    (eqs. 5-7), recomputed here from the messages alone.
    """
    a, b = sc.algorithm.bind(sc.problem), adj.algorithm.bind(adj.problem)
    w, x0, n = sc.topology.weights(1), sc.initial_points(), sc.problem.num_agents
    y = run_engine(sc, runs, seed=0).messages["y"]
    scales = np.array([a.noise_scale(t) for t in range(1, sc.horizon + 1)])[:, None, None]
    assert all(b.noise_scale(t) == a.noise_scale(t) for t in range(1, sc.horizon + 1))  # the same noise

    def means(rule: Any, problem: Any, yr: np.ndarray) -> np.ndarray:
        x, out = x0.copy(), []
        for t in range(1, sc.horizon + 1):
            out.append(x.copy())
            z = w @ yr[t - 1]
            g = clip_l2(problem.costs.gradient(np.arange(n), z), rule.gradient_bound)
            x = problem.domain.project(z - rule.boost * rule.step(t) * g)
        return np.array(out)

    return np.array([float(((np.abs(yr - means(b, adj.problem, yr)) - np.abs(yr - means(a, sc.problem, yr)))
                            / scales).sum()) for yr in y])


def test_a_binding_attribute_read_from_the_private_costs_is_refused():
    sc, adj = _pair()
    assert (sc.algorithm.bind(sc.problem).boost, adj.algorithm.bind(adj.problem).boost) == (1.0, 10.0)
    # the independent fact: a pure epsilon = 1 claim bounds the privacy loss of every transcript by 1; these
    # (continuous) losses exceed it on transcripts of positive probability. Deterministic (fixed seed).
    losses = _exact_losses(sc, adj, 40)
    assert (losses > 1.0).sum() >= 5 and losses.max() > 2.0
    with pytest.raises(AdjacencyError, match="in boost: 1.0 vs 10.0"):
        check_privacy(sc, adj, runs=50)


def test_nested_parameters_are_compared_item_by_item():
    assert _same_value((np.array([1.0, 2.0]),), (np.array([1.0, 2.0]),))
    assert not _same_value((np.array([1.0, 2.0]),), (np.array([1.0, 3.0]),))
    assert not _same_value({"s": [np.ones(2)]}, {"s": [np.zeros(2)]})
    assert not _same_value([1.0], (1.0,))
    assert _same_value(sp.csr_array(np.eye(2)), sp.csr_array(np.eye(2)))
    assert not _same_value(sp.csr_array(np.eye(2)), sp.csr_array(2 * np.eye(2)))


def test_the_honest_pair_still_passes():
    pair, _ = small_example(runs=10)
    assert check_privacy(pair.scenario, pair.adjacent, runs=50).verdict == "pass"

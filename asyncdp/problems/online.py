"""Online nondecomposable losses (Cheng, Liao and Li, arXiv 2022): one global loss per round.

In the setting of Cheng, Liao and Li (arXiv 2022, §2) there is no private cost per agent. At round
``t`` every node ``i`` commits its own block ``S_i`` of the decision
``x(t) in X^d``; then the global loss ``f_t`` is revealed. ``f_t`` does not split
into per-node terms. Each node keeps a full estimate ``y_i in X^d`` and feeds
the algorithm its block of ``grad f_t(y_i)``.

How this fits :class:`~asyncdp.problems.problem.Problem` and :class:`~asyncdp.scenario.Scenario`
unchanged: :class:`OnlineLoss` is a :class:`~asyncdp.problems.costs.CostFamily` whose
"agents" are the nodes, and ``round_index`` selects the round:

* ``gradient(i, x, round_index=t)`` is node ``i``'s block of ``grad f_t(x)``,
  embedded in ``R^d`` (zeros off ``S_i``). The blocks partition the
  coordinates, so ``sum_i gradient(i, x, t) = grad f_t(x)``;
* ``value(i, x, round_index=t)`` is ``f_t(x) / N``, so ``sum_i value = f_t(x)``.
  The pair ``(value_i, gradient_i)`` is not a function and its gradient:
  ``f_t`` has no per-node parts. Only the sums are meaningful;
* without ``round_index`` both refer to the cumulative loss
  ``F(x) = sum_{t=1}^{T} f_t(x)``. So ``Problem.optimum`` is the best fixed
  decision in hindsight over the whole sequence, which the engines report
  as ``optimum``;
* :attr:`OnlineLoss.num_rounds` is the length of the sequence. A scenario's
  horizon must not exceed it (checked by :class:`~asyncdp.scenario.Scenario`),
  and :mod:`asyncdp.privacy` uses it to recognise the online adjacency of
  Def. 1: two sequences that differ in exactly one round.

Blocks: ``np.array_split(arange(d), N)``. The first ``d mod N`` nodes get
one coordinate more. (The paper's analysis gives each node one coordinate,
``d = N``; its experiments use ``d > N``, hence blocks.)

Families: :class:`BatchLoss` (least squares, logistic, hinge), each the mean
over a per-round batch ``(a_h, b_h)``, and :class:`UserOnlineLoss` (user
callables per round). Constants on a domain (:meth:`OnlineLoss.function_class`):
``gradient_bound`` is the paper's ``L`` (``||grad f_t|| <= L`` on ``X^d``,
Assumption 1(d)), ``smoothness`` its ``G`` (Assumption 1(e)), and
``diameter`` is ``diam X^d``.

Example:
    >>> loss, box = synthetic_olr(num_nodes=3, dim=6, num_rounds=20, seed=1)
    >>> p = online_problem(loss, box)
    >>> [len(b) for b in loss.blocks], p.num_agents, loss.num_rounds
    ([2, 2, 2], 3, 20)
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize, special

from topology.validation import check_integer, check_nonnegative, check_positive

from .costs import CostFamily, FunctionClass
from .costs.structure import Difference, Opaque, Structure, compare, family_name, shadowed
from .domains import Ball, Box, Domain, Reals
from ..errors import ProblemError
from .problem import Problem

__all__ = [
    "OnlineLoss",
    "BatchLoss",
    "UserOnlineLoss",
    "LinearRound",
    "LOSS_KINDS",
    "online_problem",
    "adjacent_online_problem",
    "synthetic_olr",
    "node_blocks",
]

LOSS_KINDS = ("least-squares", "logistic", "hinge")
"""Per-sample losses of :class:`BatchLoss` (Cheng, Liao and Li, arXiv 2022, §2 motivating examples)."""


def node_blocks(dim: int, num_nodes: int) -> tuple[np.ndarray, ...]:
    """Coordinates owned by each node: ``np.array_split(arange(dim), num_nodes)``.

    Raises:
        ProblemError: ``num_nodes > dim`` (a node would own no coordinate) or a
            non-positive size.

    Example:
        >>> [b.tolist() for b in node_blocks(5, 2)]
        [[0, 1, 2], [3, 4]]
    """
    d = check_integer(dim, "dim", minimum=1, error=ProblemError)
    n = check_integer(num_nodes, "num_nodes", minimum=1, error=ProblemError)
    if n > d:
        raise ProblemError(f"num_nodes={n} exceeds dim={d}: every node must own at least one coordinate")
    return tuple(np.array_split(np.arange(d), n))


class OnlineLoss(CostFamily):
    """A sequence ``f_1, ..., f_T`` of global losses on ``R^d`` shared by ``N`` nodes.

    Subclasses implement ``_round_value`` and ``_round_gradient``
    (vectorized over leading axes of ``x``), ``function_class``,
    :meth:`with_round` and ``to_dict``. See the module docstring for the
    meaning of the :class:`~asyncdp.problems.costs.CostFamily` methods.

    Args:
        num_nodes: ``N >= 1``.
        dim: ``d >= N``.
        num_rounds: ``T >= 1``.

    Raises:
        ProblemError: bad sizes.
    """

    def __init__(self, num_nodes: int, dim: int, num_rounds: int) -> None:
        blocks = node_blocks(dim, num_nodes)
        super().__init__(num_nodes, dim)
        self._num_rounds = check_integer(num_rounds, "num_rounds", minimum=1, error=ProblemError)
        self._blocks = blocks
        mask = np.zeros((num_nodes, dim))
        for i, b in enumerate(blocks):
            mask[i, b] = 1.0
        mask.setflags(write=False)
        self._mask = mask

    # ------------------------------------------------------------- structure
    @property
    def num_rounds(self) -> int:
        """``T``, the number of rounds of the sequence."""
        return self._num_rounds

    @property
    def blocks(self) -> tuple[np.ndarray, ...]:
        """``S_i``: the coordinates node ``i`` owns (a partition of ``0..d-1``)."""
        return self._blocks

    @property
    def block_sizes(self) -> tuple[int, ...]:
        """``d_i = |S_i|``."""
        return tuple(len(b) for b in self._blocks)

    @property
    def mask(self) -> np.ndarray:
        """``(N, d)`` 0/1 matrix, row ``i`` the indicator of ``S_i`` (``delta_i^k`` of eq. 12)."""
        return self._mask

    def _check_round(self, t: Any) -> int:
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= t <= self._num_rounds:
            raise ProblemError(f"round_index must be an integer in [1, {self._num_rounds}] for this loss "
                               f"sequence, got {t!r}")
        return int(t)

    def _points(self, x: Any) -> np.ndarray:
        xx = np.asarray(x, dtype=float)
        if xx.ndim == 0 or xx.shape[-1] != self._dim:
            raise ProblemError(f"x must have shape (..., {self._dim}), got shape {xx.shape}")
        return xx

    # ---------------------------------------------------------- per round
    def round_value(self, t: int, x: Any) -> np.ndarray:
        """``f_t(x)`` for points of shape ``(..., d)``; shape ``x.shape[:-1]``.

        Raises:
            ProblemError: a round outside ``1..T`` or a bad shape.
        """
        return np.asarray(self._round_value(self._check_round(t), self._points(x)), dtype=float)[()]

    def round_gradient(self, t: int, x: Any) -> np.ndarray:
        """``grad f_t(x)`` (a subgradient for the hinge loss), shape ``x.shape``."""
        return np.asarray(self._round_gradient(self._check_round(t), self._points(x)), dtype=float)

    def cumulative_value(self, x: Any, horizon: int | None = None) -> np.ndarray:
        """``sum_{t=1}^{horizon} f_t(x)`` (default the whole sequence)."""
        xx = self._points(x)
        h = self._num_rounds if horizon is None else self._check_round(horizon)
        return np.asarray(sum(self._round_value(t, xx) for t in range(1, h + 1)), dtype=float)[()]

    def cumulative_gradient(self, x: Any, horizon: int | None = None) -> np.ndarray:
        """``sum_{t=1}^{horizon} grad f_t(x)``."""
        xx = self._points(x)
        h = self._num_rounds if horizon is None else self._check_round(horizon)
        return np.asarray(sum(self._round_gradient(t, xx) for t in range(1, h + 1)), dtype=float)

    @abc.abstractmethod
    def _round_value(self, t: int, x: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _round_gradient(self, t: int, x: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def with_round(self, t: int, **data: Any) -> OnlineLoss:
        """The adjacent sequence: round ``t``'s loss replaced, all others kept.

        Def. 1 of Cheng, Liao and Li (arXiv 2022).
        """

    # ------------------------------------------------------ adjacency
    def _round_structure(self) -> Structure | None:
        """The rounds' losses by their parameters, one row per round 1..T (:mod:`~asyncdp.problems.costs.structure`),
        or ``None`` (the default: every round unknown to :meth:`compare_rounds`). Must be ``None`` for a subclass
        that may compute its losses otherwise."""
        return None

    def _described_rounds(self) -> Structure | None:
        """:meth:`_round_structure`, or ``None`` when an instance attribute shadows one of the class's (a method
        replaced on the instance; :func:`~asyncdp.problems.costs.structure.shadowed`)."""
        return None if shadowed(self) else self._round_structure()

    def compare_rounds(self, other: OnlineLoss) -> Difference:
        """Which rounds' losses differ between this sequence and ``other``, read from their structure.

        The round counterpart of :meth:`~asyncdp.problems.costs.CostFamily.compare_agents`: batches are
        compared exactly, user callables by identity; :meth:`with_round` builds a sequence that differs in
        that round only. Rounds are numbered 1..T.

        Raises:
            ProblemError: ``other`` is not an online loss of the same nodes, dimension and number of rounds.

        Example:
            >>> loss = BatchLoss("logistic", [[[1.0, 0.0]]] * 3, [[1.0]] * 3, num_nodes=2)
            >>> sorted(loss.compare_rounds(loss.with_round(2, features=[[0.0, 1.0]], labels=[-1.0])).differ)
            [2]
        """
        if not isinstance(other, OnlineLoss):
            raise ProblemError(f"other must be an OnlineLoss, got {type(other).__name__}")
        mine, theirs = (self._num_agents, self._dim, self._num_rounds), (other.num_agents, other.dim, other.num_rounds)
        if mine != theirs:
            raise ProblemError(f"the sequences differ in (nodes, dimension, rounds): {mine} vs {theirs}")
        if other is self:
            return Difference(frozenset(), frozenset())
        return compare(self._described_rounds(), other._described_rounds(), self._num_rounds,
                       names=(family_name(self), family_name(other)), first=1)

    # ---------------------------------------------------- CostFamily parts
    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        if round_index is None:
            v = sum(self._round_value(t, x) for t in range(1, self._num_rounds + 1))
        else:
            v = self._round_value(self._check_round(round_index), x)
        return np.asarray(v, dtype=float) / self._num_agents

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        if round_index is None:
            g = sum(self._round_gradient(t, x) for t in range(1, self._num_rounds + 1))
        else:
            g = self._round_gradient(self._check_round(round_index), x)
        return g * self._mask[a]

    def with_agent(self, agent: int, **changes: Any) -> CostFamily:
        """Not defined: an online loss changes per round (use :meth:`with_round`).

        Raises:
            ProblemError: always.
        """
        raise ProblemError(f"{type(self).__name__} is one global loss per round, not a cost per agent; "
                           "build adjacent sequences with with_round(t, ...) or adjacent_online_problem")

    def optimum(self, domain: Domain) -> np.ndarray:
        """The best fixed decision in hindsight over the whole sequence (:meth:`best_fixed`)."""
        return self.best_fixed(domain)

    # ------------------------------------------------------ comparator
    def best_fixed(self, domain: Domain, horizon: int | None = None, *, x0: Any = None) -> np.ndarray:
        """``argmin_{v in X} sum_{t=1}^{horizon} f_t(v)``: the regret comparator (eq. 3).

        The default solver is L-BFGS-B with bounds on a box or on ``R^d``, and
        SLSQP on a ball. :class:`BatchLoss` solves least squares exactly with
        bounded least squares and the hinge loss with a linear program.

        Args:
            domain: the feasible set ``X^d`` (Box, Ball or Reals).
            horizon: the prefix length (default ``T``).
            x0: a warm start (projected onto ``domain``).

        Returns:
            The minimizer, shape ``(d,)``.

        Raises:
            ProblemError: a domain of the wrong dimension or type, or the solver failed.
        """
        self._check_domain(domain)
        h = self._num_rounds if horizon is None else self._check_round(horizon)
        start = domain.center if x0 is None else domain.project(x0)
        return _minimize(lambda v: float(self.cumulative_value(v, h)),
                         lambda v: self.cumulative_gradient(v, h), domain, start)


def _minimize(fun: Callable[[np.ndarray], float], jac: Callable[[np.ndarray], np.ndarray], domain: Domain,
              start: np.ndarray) -> np.ndarray:
    opts = {"ftol": 1e-15, "gtol": 1e-11, "maxiter": 50_000, "maxls": 100}
    if isinstance(domain, Box):
        res = optimize.minimize(fun, start, jac=jac, method="L-BFGS-B", bounds=list(zip(domain.low, domain.high)),
                                options=opts)
    elif isinstance(domain, Reals):
        res = optimize.minimize(fun, start, jac=jac, method="L-BFGS-B", options=opts)
    elif isinstance(domain, Ball):
        c, r = domain.center, domain.radius
        cons = {"type": "ineq", "fun": lambda v: r * r - float((v - c) @ (v - c)), "jac": lambda v: -2.0 * (v - c)}
        res = optimize.minimize(fun, start, jac=jac, method="SLSQP", constraints=[cons],
                                options={"ftol": 1e-14, "maxiter": 5000})
    else:
        raise ProblemError(f"no comparator solver for domain type {type(domain).__name__}; use Box, Ball or Reals")
    if not np.all(np.isfinite(res.x)):
        raise ProblemError(f"best fixed decision on {domain!r} failed: {res.message}")
    return domain.project(res.x)


# --------------------------------------------------------------------------
# Batch losses
# --------------------------------------------------------------------------
def _sup_abs_inner(a: np.ndarray, domain: Domain) -> np.ndarray:
    """``sup_{x in X} |a_h^T x|`` for each row ``a_h`` of ``a`` (``inf`` on R^d)."""
    if isinstance(domain, Box):
        hi = np.maximum(a * domain.low, a * domain.high).sum(axis=-1)
        lo = np.minimum(a * domain.low, a * domain.high).sum(axis=-1)
        return np.maximum(np.abs(hi), np.abs(lo))
    if isinstance(domain, Ball):
        return np.abs(a @ domain.center) + domain.radius * np.linalg.norm(a, axis=-1)
    if domain.bounded:
        return domain.radius_bound * np.linalg.norm(a, axis=-1)
    return np.full(a.shape[:-1], math.inf)


class BatchLoss(OnlineLoss):
    """``f_t(x) = (1/|D_t|) sum_{h in D_t} l(b_h, a_h^T x)`` for one of :data:`LOSS_KINDS`.

    * ``"least-squares"``: ``l = (b - a^T x)^2``;
    * ``"logistic"``: ``l = log(1 + exp(-b a^T x))``;
    * ``"hinge"``: ``l = max(0, 1 - b a^T x)``. The subgradient taken at the
      kink is 0.

    The mean over the batch (not the sum) keeps the gradient scale
    independent of ``|D_t|`` (the paper's experiments do not say which; its
    motivating example in §2 averages).

    Constants on ``X^d`` (:meth:`function_class`), with
    ``R_h = sup_{x in X}|a_h^T x|``:

    * least squares: ``L = max_t mean_h 2 (|b_h| + R_h) ||a_h||`` and
      ``G = max_t 2 ||A_t||_F^2 / |D_t|``;
    * logistic: ``L = max_t mean_h |b_h| ||a_h||`` and
      ``G = max_t mean_h b_h^2 ||a_h||^2 / 4``;
    * hinge: ``L`` is the same as for logistic, and there is no ``G``.

    These are upper bounds, by the triangle inequality and
    ``lambda_max <= trace``.

    Args:
        kind: one of :data:`LOSS_KINDS`.
        features: round ``t``'s batch ``A_t``, of shape ``(|D_t|, d)``. Pass a
            ``(T, B, d)`` array or a sequence of ``T`` 2-D arrays.
        labels: ``b``. Pass a ``(T, B)`` array or a sequence of ``T`` 1-D arrays.
        num_nodes: ``N``.

    Raises:
        ProblemError: an unknown kind, inconsistent shapes, empty batches or
            non-finite data.

    Example:
        >>> loss = BatchLoss("least-squares", [[[1.0, 0.0]], [[0.0, 1.0]]], [[1.0], [2.0]], num_nodes=2)
        >>> float(loss.round_value(2, [0.0, 0.0])), loss.round_gradient(1, [0.0, 0.0]).tolist()
        (4.0, [-2.0, 0.0])
    """

    def __init__(self, kind: str, features: Any, labels: Any, num_nodes: int) -> None:
        if kind not in LOSS_KINDS:
            raise ProblemError(f"kind must be one of {LOSS_KINDS}, got {kind!r}")
        feats = [np.array(f, dtype=float) for f in features]
        labs = [np.array(b, dtype=float).reshape(-1) for b in labels]
        if not feats:
            raise ProblemError("features must hold at least one round")
        if len(feats) != len(labs):
            raise ProblemError(f"features has {len(feats)} rounds but labels has {len(labs)}")
        dim = feats[0].shape[-1] if feats[0].ndim == 2 else -1
        for t, (a, b) in enumerate(zip(feats, labs), start=1):
            if a.ndim != 2 or a.shape[1] != dim or a.shape[0] < 1:
                raise ProblemError(f"round {t}: features must have shape (batch >= 1, {dim}), got {a.shape}")
            if b.shape != (a.shape[0],):
                raise ProblemError(f"round {t}: labels must have shape ({a.shape[0]},), got {b.shape}")
            if not (np.isfinite(a).all() and np.isfinite(b).all()):
                raise ProblemError(f"round {t}: features and labels must be finite")
            a.setflags(write=False)
            b.setflags(write=False)
        super().__init__(num_nodes, dim, len(feats))
        self.kind = kind
        self._A = feats
        self._b = labs

    @property
    def features(self) -> list[np.ndarray]:
        """``A_t`` per round (read-only arrays)."""
        return list(self._A)

    @property
    def labels(self) -> list[np.ndarray]:
        """``b`` per round (read-only arrays)."""
        return list(self._b)

    def _round_value(self, t: int, x: np.ndarray) -> np.ndarray:
        a, b = self._A[t - 1], self._b[t - 1]
        m = x @ a.T
        if self.kind == "least-squares":
            return ((b - m) ** 2).mean(axis=-1)
        s = b * m
        if self.kind == "logistic":
            return np.logaddexp(0.0, -s).mean(axis=-1)
        return np.maximum(0.0, 1.0 - s).mean(axis=-1)

    def _round_gradient(self, t: int, x: np.ndarray) -> np.ndarray:
        a, b = self._A[t - 1], self._b[t - 1]
        m = x @ a.T
        if self.kind == "least-squares":
            coef = -2.0 * (b - m)
        elif self.kind == "logistic":
            coef = -b * special.expit(-b * m)
        else:
            coef = np.where(1.0 - b * m > 0.0, -b, 0.0)
        return coef @ a / a.shape[0]

    def function_class(self, domain: Domain) -> FunctionClass:
        """``L``, ``G`` and ``diam X^d`` of the formulas in the class docstring; ``L = None`` when unbounded."""
        self._check_domain(domain)
        lips, smooth = [], []
        for a, b in zip(self._A, self._b):
            norms = np.linalg.norm(a, axis=-1)
            if self.kind == "least-squares":
                lips.append(float(np.mean(2.0 * (np.abs(b) + _sup_abs_inner(a, domain)) * norms)))
                smooth.append(2.0 * float((norms**2).sum()) / a.shape[0])
            else:
                lips.append(float(np.mean(np.abs(b) * norms)))
                smooth.append(float(np.mean(b**2 * norms**2)) / 4.0)
        lip = max(lips)
        return FunctionClass(
            diameter=domain.diameter if domain.bounded else None,
            gradient_bound=lip if math.isfinite(lip) else None,
            smoothness=None if self.kind == "hinge" else max(smooth),
        )

    def best_fixed(self, domain: Domain, horizon: int | None = None, *, x0: Any = None) -> np.ndarray:
        """As :meth:`OnlineLoss.best_fixed`. It is exact for least squares (bounded least squares) and
        for the hinge loss (linear program) on a box or on ``R^d``."""
        self._check_domain(domain)
        h = self._num_rounds if horizon is None else self._check_round(horizon)
        if isinstance(domain, (Box, Reals)) and self.kind != "logistic":
            lo = domain.low if isinstance(domain, Box) else np.full(self._dim, -np.inf)
            hi = domain.high if isinstance(domain, Box) else np.full(self._dim, np.inf)
            weights = np.concatenate([np.full(len(self._b[t]), 1.0 / len(self._b[t])) for t in range(h)])
            a = np.vstack(self._A[:h])
            b = np.concatenate(self._b[:h])
            if self.kind == "least-squares":
                w = np.sqrt(weights)[:, None]
                res = optimize.lsq_linear(a * w, b * w[:, 0], bounds=(lo, hi), method="bvls", tol=1e-14,
                                          lsmr_tol="auto")
                return domain.project(res.x)
            # hinge: min sum_h w_h s_h  s.t.  s_h >= 1 - b_h a_h^T x,  s_h >= 0,  lo <= x <= hi
            k = len(b)
            c = np.concatenate([np.zeros(self._dim), weights])
            a_ub = np.hstack([-(b[:, None] * a), -np.eye(k)])
            bounds = [(None if not math.isfinite(lo_k) else lo_k, None if not math.isfinite(hi_k) else hi_k)
                      for lo_k, hi_k in zip(lo, hi)] + [(0, None)] * k
            res = optimize.linprog(c, A_ub=a_ub, b_ub=-np.ones(k), bounds=bounds, method="highs")
            if res.status != 0:
                raise ProblemError(f"hinge comparator LP failed on {domain!r}: {res.message}")
            return domain.project(res.x[: self._dim])
        return super().best_fixed(domain, h, x0=x0)

    def _round_structure(self) -> Structure | None:
        """Each round's batch ``(A_t, b_t)``; the loss kind shared (this class only)."""
        if type(self) is not BatchLoss:
            return None
        return Structure("BatchLoss", self.kind, tuple(zip(self._A, self._b)))

    def with_round(self, t: int, **data: Any) -> BatchLoss:
        """Round ``t``'s batch replaced by ``features=`` (``(B', d)``) and ``labels=`` (``(B',)``).

        Example:
            >>> loss = BatchLoss("logistic", [[[1.0, 0.0]]] * 3, [[1.0]] * 3, num_nodes=2)
            >>> loss.with_round(2, features=[[0.0, 1.0]], labels=[-1.0]).labels[1].tolist()
            [-1.0]
        """
        t = self._check_round(t)
        if set(data) != {"features", "labels"}:
            raise ProblemError(f"BatchLoss.with_round needs features= and labels=, got {sorted(data)}")
        feats, labs = list(self._A), list(self._b)
        feats[t - 1], labs[t - 1] = data["features"], data["labels"]
        return BatchLoss(self.kind, feats, labs, self._num_agents)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "BatchLoss", "kind": self.kind, "num_nodes": self._num_agents, "dim": self._dim,
                "num_rounds": self._num_rounds, "batch_sizes": [len(b) for b in self._b]}


class UserOnlineLoss(OnlineLoss):
    """User callables per round, with user-declared constants.

    ``value_fn(t, x) -> float`` and ``gradient_fn(t, x) -> (d,)`` receive
    the 1-based round ``t`` and one point ``x`` of shape ``(d,)`` (a copy).
    Vectorized calls loop in Python. Round overrides made by
    :meth:`with_round` take precedence.

    Args:
        value_fn, gradient_fn: the callables.
        constants: the declared :class:`~asyncdp.problems.costs.FunctionClass`
            (``gradient_bound`` = L, ``smoothness`` = G).
        dim: ``d``. num_rounds: ``T``. num_nodes: ``N``.
        name: a label for provenance.

    Raises:
        ProblemError: non-callables, bad sizes or constants, or a callable
            returning a wrong shape or non-finite values (the message names the round).

    Example:
        >>> fc = FunctionClass(gradient_bound=4.0, smoothness=2.0)
        >>> loss = UserOnlineLoss(lambda t, x: float(x @ x) * t, lambda t, x: 2 * t * x, fc, dim=2,
        ...                       num_rounds=3, num_nodes=2)
        >>> float(loss.round_value(3, [1.0, 1.0]))
        6.0
    """

    def __init__(self, value_fn: Callable[[int, np.ndarray], float],
                 gradient_fn: Callable[[int, np.ndarray], np.ndarray], constants: FunctionClass, *, dim: int,
                 num_rounds: int, num_nodes: int, name: str | None = None,
                 _overrides: dict[int, tuple[Callable, Callable]] | None = None) -> None:
        for label, fn in (("value_fn", value_fn), ("gradient_fn", gradient_fn)):
            if not callable(fn):
                raise ProblemError(f"{label} must be callable, got {fn!r}")
        if not isinstance(constants, FunctionClass):
            raise ProblemError(f"constants must be a FunctionClass, got {type(constants).__name__}")
        super().__init__(num_nodes, dim, num_rounds)
        self._vf, self._gf = value_fn, gradient_fn
        self.constants = constants
        self.name = name
        self._overrides = dict(_overrides or {})

    def _fns(self, t: int) -> tuple[Callable, Callable]:
        return self._overrides.get(t, (self._vf, self._gf))

    def _round_value(self, t: int, x: np.ndarray) -> np.ndarray:
        vf = self._fns(t)[0]
        out = np.empty(x.shape[:-1])
        for idx in np.ndindex(*x.shape[:-1]):
            v = np.asarray(vf(t, np.array(x[idx])), dtype=float)
            if v.size != 1 or not np.isfinite(v).all():
                raise ProblemError(f"round {t}: value_fn must return a finite scalar, got {v!r}")
            out[idx] = float(v.reshape(()))
        return out

    def _round_gradient(self, t: int, x: np.ndarray) -> np.ndarray:
        gf = self._fns(t)[1]
        out = np.empty(x.shape)
        for idx in np.ndindex(*x.shape[:-1]):
            g = np.asarray(gf(t, np.array(x[idx])), dtype=float)
            if g.shape != (self._dim,) or not np.isfinite(g).all():
                raise ProblemError(f"round {t}: gradient_fn must return a finite array of shape ({self._dim},), "
                                   f"got {g!r}")
            out[idx] = g
        return out

    def function_class(self, domain: Domain) -> FunctionClass:
        """The declared constants; a missing diameter is filled with ``diam X^d``."""
        self._check_domain(domain)
        if self.constants.diameter is None and domain.bounded:
            return self.constants.replace(diameter=domain.diameter)
        return self.constants

    def _round_structure(self) -> Structure | None:
        """Each round's callables, known by identity only (this class only)."""
        if type(self) is not UserOnlineLoss:
            return None
        return Structure("UserOnlineLoss", (), tuple(Opaque(self._fns(t)) for t in range(1, self._num_rounds + 1)))

    def with_round(self, t: int, **data: Any) -> UserOnlineLoss:
        """Round ``t`` uses ``value_fn=`` and ``gradient_fn=`` (both required, same signatures)."""
        t = self._check_round(t)
        if set(data) != {"value_fn", "gradient_fn"}:
            raise ProblemError(f"UserOnlineLoss.with_round needs value_fn= and gradient_fn=, got {sorted(data)}")
        for label, fn in data.items():
            if not callable(fn):
                raise ProblemError(f"{label} must be callable, got {fn!r}")
        over = dict(self._overrides)
        over[t] = (data["value_fn"], data["gradient_fn"])
        return UserOnlineLoss(self._vf, self._gf, self.constants, dim=self._dim, num_rounds=self._num_rounds,
                              num_nodes=self._num_agents, name=self.name, _overrides=over)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "UserOnlineLoss", "name": self.name, "num_nodes": self._num_agents, "dim": self._dim,
                "num_rounds": self._num_rounds, "overridden_rounds": sorted(self._overrides),
                "constants": self.constants.to_dict()}


class LinearRound(OnlineLoss):
    """``base``'s loss sequence with round ``round_index``'s loss replaced by ``f(x) = <gradient, x>``.

    The round-adjacency member the privacy checker's worst-case search builds
    (:mod:`asyncdp.privacy.worst_case`): Def. 1 of Cheng, Liao and Li (arXiv
    2022) changes one round's loss, and a linear loss has the same gradient
    ``g`` everywhere, so a gradient bound ``||g||_2 <= L`` holds on any domain.
    Every other round's loss is ``base``'s.

    Args:
        base: the online loss whose other rounds are kept.
        round_index: the replaced round (1-based).
        gradient: ``g``, shape ``(d,)``, finite.

    Raises:
        ProblemError: ``base`` is not an :class:`OnlineLoss`, a round outside
            ``1..T``, or a gradient of the wrong shape or not finite.

    Example:
        >>> loss, _ = synthetic_olr(num_nodes=2, dim=2, num_rounds=3, seed=0)
        >>> lin = LinearRound(loss, 2, [3.0, -4.0])
        >>> lin.round_gradient(2, [[0.0, 0.0]]).tolist(), lin.gradient(1, [0.0, 0.0], round_index=2).tolist()
        ([[3.0, -4.0]], [0.0, -4.0])
    """

    def __init__(self, base: OnlineLoss, round_index: int, gradient: Any) -> None:
        if not isinstance(base, OnlineLoss):
            raise ProblemError(f"base must be an OnlineLoss, got {type(base).__name__}")
        super().__init__(base.num_agents, base.dim, base.num_rounds)
        self._base = base
        self._round = base._check_round(round_index)
        g = np.array(gradient, dtype=float)
        if g.shape != (base.dim,) or not np.isfinite(g).all():
            raise ProblemError(f"gradient must be a finite vector of shape ({base.dim},), got {g!r}"[:300])
        g.setflags(write=False)
        self._g = g

    @property
    def base(self) -> OnlineLoss:
        """The sequence whose other rounds are kept."""
        return self._base

    @property
    def round_index(self) -> int:
        """The replaced round."""
        return self._round

    @property
    def linear_gradient(self) -> np.ndarray:
        """``g`` (read-only)."""
        return self._g

    def _round_value(self, t: int, x: np.ndarray) -> np.ndarray:
        return x @ self._g if t == self._round else self._base._round_value(t, x)

    def _round_gradient(self, t: int, x: np.ndarray) -> np.ndarray:
        if t == self._round:
            return np.broadcast_to(self._g, x.shape).copy()
        return self._base._round_gradient(t, x)

    def _round_structure(self) -> Structure | None:
        """The base's structure with the linear round's row ``("LinearRound", g)`` (this class only)."""
        base = self._base._described_rounds() if type(self) is LinearRound else None
        if base is None:
            return None
        rows = list(base.rows)
        rows[self._round - 1] = ("LinearRound", self._g)
        return Structure(base.kind, base.shared, tuple(rows))

    def function_class(self, domain: Domain) -> FunctionClass:
        """``base``'s constants with ``L = max(L_base, ||g||_2)`` (a linear loss is 0-smooth)."""
        fc = self._base.function_class(domain)
        g = float(np.linalg.norm(self._g))
        return fc.replace(gradient_bound=None if fc.gradient_bound is None else max(fc.gradient_bound, g))

    def with_round(self, t: int, **data: Any) -> OnlineLoss:
        """Round ``t`` changed in the base sequence (the linear round stays, unless ``t`` is that round).

        Raises:
            ProblemError: ``t`` is the linear round (change ``gradient`` by building a new one).
        """
        if self._check_round(t) == self._round:
            raise ProblemError(f"round {t} is the linear round of this LinearRound; build a new LinearRound")
        return LinearRound(self._base.with_round(t, **data), self._round, self._g)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "LinearRound", "base": self._base.to_dict(), "round_index": self._round,
                "gradient": self._g.tolist()}


# --------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------
def online_problem(loss: OnlineLoss, domain: Domain, constants: FunctionClass | None = None) -> Problem:
    """``Problem(domain, loss, constants)`` after checking that ``loss`` is an :class:`OnlineLoss`.

    Raises:
        ProblemError: ``loss`` is not an :class:`OnlineLoss` or its dimension differs from the domain's.
        ConstantViolationError: declared constants tighter than the derived ones.
    """
    if not isinstance(loss, OnlineLoss):
        raise ProblemError(f"loss must be an OnlineLoss, got {type(loss).__name__}")
    return Problem(domain, loss, constants)


def adjacent_online_problem(problem: Problem, round_index: int, **data: Any) -> Problem:
    """The adjacent problem of Cheng, Liao and Li, arXiv 2022, Def. 1: only round ``round_index``'s loss differs.

    The domain and the declared constants are kept. The new loss must stay
    in the class they describe.

    Args:
        problem: an online problem.
        round_index: the round ``t0`` to change (1-based).
        **data: the new round data (``features=``, ``labels=`` for :class:`BatchLoss`).

    Raises:
        ProblemError: not an online problem, or bad data.
        ConstantViolationError: the new loss needs a larger ``L`` or ``G``.

    Example:
        >>> loss, box = synthetic_olr(num_nodes=2, dim=2, num_rounds=4, seed=0)
        >>> p = online_problem(loss, box)
        >>> q = adjacent_online_problem(p, 3, features=[[0.1, 0.1]], labels=[0.0])
        >>> float(q.costs.round_value(3, [0.0, 0.0]))
        0.0
    """
    if not isinstance(problem, Problem) or not isinstance(problem.costs, OnlineLoss):
        raise ProblemError("adjacent_online_problem needs a Problem whose costs are an OnlineLoss")
    return Problem(problem.domain, problem.costs.with_round(round_index, **data), problem.constants)


def synthetic_olr(num_nodes: int = 7, dim: int = 21, num_rounds: int = 500, *, seed: int = 0,
                  noise_var: float = 0.2, box: float = 5.0, batch: int = 1) -> tuple[BatchLoss, Box]:
    """Synthetic online linear regression of Cheng, Liao and Li (arXiv 2022), Fig. 3 setup.

    ``a(t) ~ U[-0.5, 0.5]^d``, ``x_hat ~ N(0, I)``, and
    ``b(t) = a(t)^T x_hat + rho(t)`` with ``rho ~ N(0, noise_var)``. The paper
    writes ``N(0, 0.2)`` without saying variance or deviation; we read a variance. ``X = [-box, box]``. The draws come
    from ``default_rng(seed)`` in this order: ``x_hat``, then the features,
    then the label noise.

    Returns:
        ``(BatchLoss("least-squares", ...), Box(-box, box, dim))``.

    Raises:
        ProblemError: bad sizes, a negative variance or a non-positive box.
    """
    d, t_len, bsz = (check_integer(v, k, minimum=1, error=ProblemError)
                     for k, v in (("dim", dim), ("num_rounds", num_rounds), ("batch", batch)))
    noise_var = check_nonnegative(noise_var, "noise_var", error=ProblemError)
    box = check_positive(box, "box", error=ProblemError)
    rng = np.random.default_rng(seed)
    x_hat = rng.standard_normal(d)
    a = rng.uniform(-0.5, 0.5, size=(t_len, bsz, d))
    b = a @ x_hat + math.sqrt(noise_var) * rng.standard_normal((t_len, bsz))
    return BatchLoss("least-squares", a, b, num_nodes), Box(-box, box, dim=d)

"""Showkatbakhsh, Karakus and Diggavi: two-stage private consensus optimization with Gaussian noise.

Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Algorithm 1. Stage I (paper rounds ``t = 1..T``), at
node ``i``:

* (9)  ``z_i(t) = Proj_X(sum_j w_ij y_j(t))`` (the full row of ``W``: the
  node's own *noisy* message is mixed too);
* (8)  ``x_i(t) = Proj_X(z_i(t) - eta_t grad f_i(z_i(t)))`` with
  ``eta_t = c / t``, ``c = (mu + L) / (2 mu L)`` (Theorem 2);
* (11) ``y_i(t+1) = x_i(t) + n_i(t)``, ``n_i(t) ~ N(0, M_t^2 I)`` with
  ``M_t^2 = (2 / kappa) c^2 sqrt(T) / t^(3/2)`` (Theorem 2) and
  ``kappa = epsilon^2 / (4 G^2 (epsilon + 2 ln(2/delta)))`` (Corollary 1).

Stage II (``t > T``), eq. (12): ``y_i(t) = x_i(t-1)`` and
``x_i(t) = sum_j w_ij y_j(t)``: consensus without gradient, noise or projection.

Engine rounds. The engine calls ``message`` then ``update`` once per round;
engine round ``t``'s message masks the state left by round ``t - 1``. Engine
round ``t`` *is* paper round ``t``, and the state after engine round ``t`` is
the paper's ``x(t)``:

=================  ====================================  ===========  ==================  ==================
engine round ``t``  message ``y(t)``                      noise std    claimed L2 sens.    update
=================  ====================================  ===========  ==================  ==================
1                  ``x(0)`` (paper: ``y(1) = 0``)         0            0                   (9) + (8), eta_1
2 .. T             ``x(t-1) + n(t-1)`` (11)               ``M_(t-1)``  ``2 eta_(t-1) G``   (9) + (8), eta_t
T + 1              ``x(T) + n(T)``  (corrected, default)  ``M_T``      ``2 eta_T G``       (12)
T + 1              ``x(T)``          (``"as-printed"``)   0            ``2 eta_T G``       (12)
T + 2 ..           ``x(t-1)`` (12)                        0            0                   (12)
=================  ====================================  ===========  ==================  ==================

``y(1) = x(0)``: the paper's ``y_i(1) = 0`` is the case ``x_i(0) = 0``, the
initial point its convergence analysis takes; ``x(0)`` never depends on
private data, so ``y(1)`` costs nothing. Noise index: ``n(t-1)`` rides on
message ``t``, as eq. (11) prints it (the proofs' ``n(t)`` is an index slip).

The hand-over. Eq. (11) holds for
``t <= T``, so ``y(T+1) = x(T) + n(T)`` carries noise, and every later
message is a function of released values only: Stage II is post-processing
and costs no privacy (``stage2="corrected"``, the default). Stage II as
printed (``y(T+1) = x(T)``) releases ``x(T)``, whose sensitivity is
``2 eta_T G > 0``, without noise: its privacy loss is infinite. The variant
``stage2="as-printed"`` reproduces it and *declares* it honestly: round
``T + 1`` has scale 0 and a nonzero claimed sensitivity. (The engines record
only noisy releases in the ledger, so the accountant learns about this
release from the declaration, the independent sensitivity and exact replay.)

Horizon: ``T`` Stage-I rounds then ``T2`` Stage-II rounds, :attr:`horizon` =
``T + T2``. With ``T2 = 0`` the last message sent is ``y(T)``; ``x(T)`` is
never broadcast. Rounds beyond ``T + T2`` just continue eq. (12).

Constants: ``L`` and ``mu`` (A3, A4) set ``c``; ``G`` (A2, Prop. 3) sets
``kappa``. All three default to the problem's function class (:meth:`bind`).
``G`` may be overridden by ``gradient_bound``: Prop. 3 needs
``||grad f_i(z) - grad f_i'(z)|| <= 2 G`` for adjacent costs at points of
``X``; for the paper's per-sample adjacency in mean estimation that is
``G = R sqrt(p)`` (one point of ``[-R, R]^p`` moves the gradient by at most
``2 R sqrt(p)``; Sec. V only says the noise is generated accordingly), much less than the class bound.
The accountant (:mod:`asyncdp.papers.showkatbakhsh.privacy`) always uses the
problem's ``G``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from topology.validation import check_integer, check_positive, check_real

from ...errors import AlgorithmParameterError
from ...algorithms.base import Algorithm, Channel, NoiseDeclaration, State

__all__ = ["Showkatbakhsh", "STAGE2_MODES", "mean_estimation_problem"]

STAGE2_MODES = ("corrected", "as-printed")
"""Hand-over variants: ``y(T+1) = x(T) + n(T)`` (default), or ``y(T+1) = x(T)`` as printed."""


def _real(name: str, value: Any) -> float:
    return check_real(value, name, error=AlgorithmParameterError, where="showkatbakhsh", finite=False)


def _integer(name: str, value: Any, minimum: int) -> int:
    return check_integer(value, name, minimum=minimum, error=AlgorithmParameterError, where="showkatbakhsh")


def _positive_finite(name: str, value: Any) -> float:
    return check_positive(value, name, error=AlgorithmParameterError, where="showkatbakhsh")


@dataclass(frozen=True)
class Showkatbakhsh(Algorithm):
    """Algorithm 1 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019) as a per-agent rule.

    See the module docstring for the round mapping.

    Args:
        epsilon: privacy level, ``> 0`` (``math.inf`` switches the noise off).
        delta: in ``(0, 1)``.
        T: Stage-I rounds (gradient steps), ``>= 1``; ``M_t`` depends on it.
        T2: Stage-II rounds, ``>= 0`` (sets :attr:`horizon` only).
        stage2: ``"corrected"`` (default) or ``"as-printed"`` (hand-over variants).
        gradient_bound: ``G``; default the problem's gradient bound (by :meth:`bind`).
        smoothness: ``L``; default the problem's.
        strong_convexity: ``mu > 0``; default the problem's.
        dimension: ``p``; set by :meth:`bind`.

    Raises:
        AlgorithmParameterError: a parameter outside its range (the message
            names it and its value).

    Example:
        >>> alg = Showkatbakhsh(epsilon=1.0, delta=1e-3, T=4, gradient_bound=1.0, smoothness=2.0,
        ...                     strong_convexity=2.0, dimension=2)
        >>> alg.c, alg.step(2), alg.horizon
        (0.5, 0.25, 4)
    """

    epsilon: float
    delta: float
    T: int
    T2: int = 0
    stage2: str = "corrected"
    gradient_bound: float | None = None
    smoothness: float | None = None
    strong_convexity: float | None = None
    dimension: int | None = None

    name: ClassVar[str] = "showkatbakhsh"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"),)

    def __post_init__(self) -> None:
        eps = _real("epsilon", self.epsilon)
        if not eps > 0:
            raise AlgorithmParameterError(f"showkatbakhsh: epsilon must be > 0, got {self.epsilon!r}")
        d = _real("delta", self.delta)
        if not 0 < d < 1:
            raise AlgorithmParameterError(f"showkatbakhsh: delta must lie in (0, 1), got {self.delta!r}")
        _integer("T", self.T, 1)
        _integer("T2", self.T2, 0)
        if self.stage2 not in STAGE2_MODES:
            raise AlgorithmParameterError(
                f"showkatbakhsh: stage2 must be one of {STAGE2_MODES}, got {self.stage2!r}")
        for name in ("gradient_bound", "smoothness", "strong_convexity"):
            if getattr(self, name) is not None:
                _positive_finite(name, getattr(self, name))
        if self.smoothness is not None and self.strong_convexity is not None \
                and self.strong_convexity > self.smoothness * (1 + 1e-12):
            raise AlgorithmParameterError(
                f"showkatbakhsh: strong_convexity mu={self.strong_convexity!r} exceeds smoothness "
                f"L={self.smoothness!r} (a mu-strongly convex L-smooth function has mu <= L)")
        if self.dimension is not None:
            _integer("dimension", self.dimension, 1)

    # -- binding ----------------------------------------------------------
    def bind(self, problem: Any) -> Showkatbakhsh:
        """Fill ``G``, ``L``, ``mu`` (those not given) and ``p`` from ``problem``.

        Raises:
            AlgorithmParameterError: the problem leaves a needed constant
                unknown, or ``mu = 0`` (A4 needs strong convexity).
        """
        consts = problem.constants
        filled = {}
        for field, value in (("gradient_bound", consts.gradient_bound), ("smoothness", consts.smoothness),
                             ("strong_convexity", consts.strong_convexity)):
            given = getattr(self, field)
            if given is None and value is None:
                raise AlgorithmParameterError(
                    f"showkatbakhsh needs {field} (assumptions A2-A4 of Showkatbakhsh, Karakus and Diggavi, "
                    "arXiv 2019); the problem declares none")
            filled[field] = float(given if given is not None else value)
            if not filled[field] > 0:
                raise AlgorithmParameterError(
                    f"showkatbakhsh: {field} must be positive, the problem declares {filled[field]!r}")
        return replace(self, **filled, dimension=int(problem.dim))

    def _bound(self) -> tuple[float, float, float, int]:
        if None in (self.gradient_bound, self.smoothness, self.strong_convexity, self.dimension):
            raise AlgorithmParameterError("showkatbakhsh: call bind(problem) first (G, L, mu or p unknown)")
        return self.gradient_bound, self.smoothness, self.strong_convexity, self.dimension  # type: ignore[return-value]

    # -- schedules --------------------------------------------------------
    @property
    def horizon(self) -> int:
        """``T + T2``: the number of engine rounds to run."""
        return int(self.T) + int(self.T2)

    @property
    def c(self) -> float:
        """``c = (mu + L) / (2 mu L)`` (Theorem 2)."""
        _, L, mu, _ = self._bound()
        return (mu + L) / (2.0 * mu * L)

    @property
    def kappa(self) -> float:
        """``kappa = epsilon^2 / (4 G^2 (epsilon + 2 ln(2/delta)))`` (Corollary 1); ``inf`` if epsilon is inf."""
        G = self._bound()[0]
        if math.isinf(self.epsilon):
            return math.inf
        return self.epsilon**2 / (4.0 * G**2 * (self.epsilon + 2.0 * math.log(2.0 / self.delta)))

    def step(self, t: int) -> float:
        """``eta_t = c / t`` for ``1 <= t <= T`` (eq. 8, Theorem 2); 0 in Stage II (no gradient step)."""
        return self.c / t if 1 <= t <= self.T else 0.0

    def noise_std(self, s: int) -> float:
        """``M_s``, the standard deviation of ``n(s)`` (eq. 11, Theorem 2), ``1 <= s <= T``; 0 otherwise.

        ``M_s^2 = (2 / kappa) c^2 sqrt(T) / s^(3/2)``; 0 when epsilon is inf.
        """
        if not 1 <= s <= self.T or math.isinf(self.epsilon):
            return 0.0
        return math.sqrt((2.0 / self.kappa) * self.c**2 * math.sqrt(self.T) / s**1.5)

    def state_sensitivity(self, s: int) -> float:
        """Claimed L2 sensitivity of ``x(s)``: ``2 eta_s G`` in Stage I (Prop. 3), 0 for ``s = 0`` and ``s > T``."""
        return 2.0 * self.step(s) * self._bound()[0]

    def message_noise_std(self, t: int) -> float:
        """Noise std of engine round ``t``'s message: ``M_(t-1)`` (0 for round 1, rounds > T+1, and the
        as-printed hand-over at round ``T + 1``)."""
        if t == self.T + 1 and self.stage2 == "as-printed":
            return 0.0
        return self.noise_std(t - 1)

    # -- the rule ---------------------------------------------------------
    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        """Round ``t``'s declaration: scale ``M_(t-1)`` masking ``x(t-1)`` of sensitivity ``2 eta_(t-1) G``."""
        p = self._bound()[3]
        return NoiseDeclaration("gaussian", self.message_noise_std(t), p, self.state_sensitivity(t - 1))

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any,
                problem: Any) -> dict[str, np.ndarray]:
        """Eq. (11) / (12): ``y_i(t) = x_i(t-1) + M_(t-1) * standard normal`` (no noise where the std is 0)."""
        m = self.message_noise_std(t)
        x = state["x"]
        return {"y": x + m * noise["y"] if m > 0 else np.array(x, dtype=float, copy=True)}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """Stage I (``t <= T``): eq. (9) then eq. (8). Stage II: eq. (12), ``x_i(t) = sum_j w_ij y_j(t)``."""
        if t > self.T:
            return {"x": np.array(mixed["y"], dtype=float, copy=True)}
        z = problem.domain.project(mixed["y"])
        g = problem.costs.gradient(agents, z, round_index=t)
        return {"x": problem.domain.project(z - self.step(t) * g)}

    def decision(self, state: State) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """Theorem 1 / Corollary 1 with Theorem 2's schedule: ``(epsilon, delta)`` for any horizon.

        Stopping early releases a prefix of the messages; Stage II (corrected)
        is post-processing. The as-printed variant claims the same, wrongly.
        """
        if math.isinf(self.epsilon):
            return math.inf, 0.0
        return float(self.epsilon), float(self.delta)

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """Mean estimation: 6 agents with 20 points each in ``[-1, 1]^2``, a fixed connected graph, T=15, T2=5."""
        import topology

        from ...scenario import Scenario

        n_agents = 6
        edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (0, 3), (1, 4)]
        adjacency = np.zeros((n_agents, n_agents), dtype=bool)
        for i, j in edges:
            adjacency[i, j] = adjacency[j, i] = True
        graph = topology.static(topology.laplacian(adjacency), directed=False,
                                description="6-cycle with chords (0,3), (1,4); Laplacian weights a = 2/(3 lambda_max)")
        data = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n_agents, 20, 2))
        alg = cls(epsilon=1.0, delta=1e-3, T=15, T2=5)
        return Scenario(mean_estimation_problem(data, 1.0), graph, alg, horizon=alg.horizon, seed=seed)


def mean_estimation_problem(data: Any, R: float, constants: Any = None) -> Any:
    """Distributed mean estimation of Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Sec. V.

    ``X = [-R, R]^p``, ``f_i(x) = 1/2 sum_(d in D_i) ||x - d||^2``.

    ``f_i`` equals ``(N_i / 2) ||x - mean(D_i)||^2`` plus a constant, so it is
    represented as a :class:`~asyncdp.problems.costs.WeightedQuadratic` with centers the
    local means and weights ``N_i`` (same gradients and minimizer; values
    differ by that constant): ``mu = L = N_i``, hence ``c = 1/N_i``. The
    optimum is the global data mean (in ``X`` since every point is).

    Args:
        data: array ``(N, N_i, p)``, every point in ``[-R, R]^p``.
        R: half-width of the box, ``> 0``.
        constants: declared :class:`~asyncdp.problems.costs.FunctionClass` (e.g. the
            original problem's, for an adjacent data set); default derived.

    Returns:
        A :class:`~asyncdp.problems.problem.Problem`.

    Raises:
        AlgorithmParameterError: a bad shape, a non-positive ``R`` or a point outside the box.
        ConstantViolationError: ``constants`` tighter than this data allows.

    Example:
        >>> p = mean_estimation_problem(np.full((2, 3, 1), 0.5), 1.0)
        >>> p.optimum.tolist(), p.constants.mu
        ([0.5], 3.0)
    """
    from ...problems.costs import WeightedQuadratic
    from ...problems.domains import Box
    from ...problems.problem import Problem

    arr = np.asarray(data, dtype=float)
    if arr.ndim != 3 or min(arr.shape) < 1:
        raise AlgorithmParameterError(f"mean_estimation_problem: data must have shape (N, N_i, p), got {arr.shape}")
    r = _positive_finite("R", R)
    if not np.isfinite(arr).all() or np.abs(arr).max() > r:
        raise AlgorithmParameterError(
            f"mean_estimation_problem: every data point must lie in [-R, R]^p with R={R!r}; "
            f"max |coordinate| = {float(np.nanmax(np.abs(arr)))!r}")
    n_agents, n_points, dim = arr.shape
    return Problem(Box(-r, r, dim=dim), WeightedQuadratic(arr.mean(axis=1), float(n_points)), constants)

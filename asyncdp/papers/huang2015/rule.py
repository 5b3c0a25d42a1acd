"""Huang, Mitra and Vaidya (ICDCN 2015): Laplace noise on states, geometric schedules.

Huang, Mitra and Vaidya (ICDCN 2015; also their 2014 arXiv preprint), eqs. (5)–(8). In round ``t = 1, 2, ...``
every agent ``i``

* (5) broadcasts ``y_i(t) = x_i(t-1) + w_i(t)``, with ``w_i(t)`` made of ``n``
  i.i.d. Laplace(0, ``M_t``) draws;
* (6) combines ``z_i(t) = sum_j a_ij(t) y_j(t)`` (its own noisy message included);
* (7) updates ``x_i(t) = Proj_X[z_i(t) - gamma_t grad f_i(z_i(t))]``;

with the schedules (8): ``gamma_t = c q^(t-1)`` and
``M_t = 2 C2 sqrt(n) c p^(t-1) / (epsilon (p - q))``.

Which state each message masks: ``y_i(t)`` masks ``x_i(t-1)``. ``x_i(0)`` does
not depend on ``f_i``, so ``y(1)`` leaks nothing; ``x_i(t-1)`` has L1
sensitivity at most ``Delta(t-1) = 2 C2 sqrt(n) gamma_(t-1)`` (Lemma 4), which
is the claimed sensitivity recorded for the release ``y_i(t)``. With the
printed schedule (8), ``sum_(t>=2) Delta(t-1)/M_t = epsilon`` exactly.

Variants (both documented in ``docs``):

* ``schedule="eq8"`` (default): eq. (8) as printed, epsilon-DP.
* ``schedule="theorem5-proof"``: the proof of Theorem 5 writes
  ``M_t = 2 C2 sqrt(n) c p^t / (epsilon (p - q))`` (an extra factor ``p``).
  With the correct masking index the sum above is ``epsilon / p``: the claimed
  epsilon does **not** hold. Selectable so that the accountant can show it.
* ``gradient="clip"`` (default): ``grad f_i(z)`` is clipped to L2 norm ``C2``
  before the step. The noisy ``z_i(t)`` may lie outside ``X`` where ``C2`` need
  not bound the gradient, and Lemma 4 needs the bound; clipping changes
  nothing wherever ``||grad f_i(z)|| <= C2``. ``gradient="raw"`` is eq. (7)
  as printed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from topology.validation import check_real

from ...errors import AlgorithmParameterError
from ...algorithms.base import Algorithm, Channel, NoiseDeclaration, State
from ...algorithms.clipping import clip_l2

__all__ = ["Huang2015", "SCHEDULES", "GRADIENT_MODES"]

SCHEDULES = ("eq8", "theorem5-proof")
GRADIENT_MODES = ("clip", "raw")


def _check_real(name: str, value: Any) -> float:
    """A real number, infinities allowed (the caller checks the range): :func:`topology.validation.check_real`."""
    return check_real(value, name, error=AlgorithmParameterError, where="huang2015", finite=False)


@dataclass(frozen=True)
class Huang2015(Algorithm):
    """The private distributed optimization rule of Huang, Mitra and Vaidya (ICDCN 2015), eqs. (5)–(8).

    Args:
        epsilon: privacy level, > 0 (``math.inf`` switches noise off).
        c: initial step size, in ``(0, 1/C3)``.
        q: step-size decay, in ``(0, 1)``.
        p: noise decay, in ``(q, 1)``.
        schedule: ``"eq8"`` (default) or ``"theorem5-proof"`` (see module docstring).
        gradient: ``"clip"`` (default) or ``"raw"``.
        gradient_bound: ``C2``; filled from the problem by :meth:`bind` if ``None``.
        strong_convexity: ``C3``; filled from the problem by :meth:`bind` if ``None``.
        dimension: ``n``; filled from the problem by :meth:`bind`.

    Raises:
        AlgorithmParameterError: a parameter outside its range (the message
            names it and its value).

    Example:
        >>> alg = Huang2015(epsilon=1.0, c=0.3, q=0.8, p=0.9, gradient_bound=4.0, dimension=2)
        >>> round(alg.step(1), 3), round(alg.step(2), 3)
        (0.3, 0.24)
    """

    epsilon: float
    c: float
    q: float
    p: float
    schedule: str = "eq8"
    gradient: str = "clip"
    gradient_bound: float | None = None
    strong_convexity: float | None = None
    dimension: int | None = None

    name: ClassVar[str] = "huang2015"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"),)

    def __post_init__(self) -> None:
        eps = _check_real("epsilon", self.epsilon)
        if not eps > 0:
            raise AlgorithmParameterError(f"huang2015: epsilon must be > 0, got {self.epsilon!r}")
        c, q, p = (_check_real(k, getattr(self, k)) for k in ("c", "q", "p"))
        if not c > 0 or not math.isfinite(c):
            raise AlgorithmParameterError(f"huang2015: c must be in (0, 1/C3), got c={self.c!r}")
        if not 0 < q < 1:
            raise AlgorithmParameterError(f"huang2015: q must be in (0, 1), got q={self.q!r}")
        if not q < p < 1:
            raise AlgorithmParameterError(f"huang2015: p must be in (q, 1) = ({q!r}, 1), got p={self.p!r}")
        if self.schedule not in SCHEDULES:
            raise AlgorithmParameterError(f"huang2015: schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.gradient not in GRADIENT_MODES:
            raise AlgorithmParameterError(f"huang2015: gradient must be one of {GRADIENT_MODES}, got {self.gradient!r}")
        if self.strong_convexity is not None and self.strong_convexity > 0 and not c < 1.0 / self.strong_convexity:
            raise AlgorithmParameterError(
                f"huang2015: c must be in (0, 1/C3) = (0, {1.0 / self.strong_convexity!r}), got c={self.c!r}"
            )
        if self.gradient_bound is not None and not (self.gradient_bound > 0 and math.isfinite(self.gradient_bound)):
            raise AlgorithmParameterError(
                f"huang2015: gradient_bound C2 must be positive and finite, got {self.gradient_bound!r}"
            )
        # memos, not fields (no effect on eq, hash, repr): noise_scale(t) per t, and per t the
        # factors (M_t, gamma_t) of eqs. (5) and (7) as 0-d arrays
        object.__setattr__(self, "_scales", {})
        object.__setattr__(self, "_factors", {})

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, also from versions without the memos."""
        self.__dict__.update(state)
        self.__dict__.setdefault("_scales", {})
        self.__dict__.setdefault("_factors", {})

    # -- binding ----------------------------------------------------------
    def bind(self, problem: Any) -> Huang2015:
        """Fill ``C2``, ``C3`` and ``n`` from ``problem`` and validate ``c < 1/C3``.

        Raises:
            AlgorithmParameterError: the problem declares no gradient bound, or
                ``c >= 1/C3``.
        """
        consts = problem.constants
        c2 = self.gradient_bound if self.gradient_bound is not None else consts.gradient_bound
        c3 = self.strong_convexity if self.strong_convexity is not None else consts.strong_convexity
        if c2 is None:
            raise AlgorithmParameterError("huang2015 needs the gradient bound C2; the problem declares none")
        return replace(self, gradient_bound=float(c2), strong_convexity=None if c3 is None else float(c3),
                       dimension=int(problem.dim))

    def _require_bound(self) -> tuple[float, int]:
        if self.gradient_bound is None or self.dimension is None:
            raise AlgorithmParameterError("huang2015: call bind(problem) first (C2 and n are unknown)")
        return self.gradient_bound, self.dimension

    # -- schedules (8) ------------------------------------------------------
    def step(self, t: int) -> float:
        """``gamma_t = c q^(t-1)`` (eq. 8)."""
        return self.c * self.q ** (t - 1)

    def noise_scale(self, t: int) -> float:
        """``M_t`` of eq. (8) (``p^(t-1)``), or of the Theorem 5 proof (``p^t``); 0 if epsilon is inf.

        A pure function of the parameters and ``t``, remembered per ``t`` (every
        agent asks for it every round).
        """
        scale = self._scales.get(t)
        if scale is None:
            c2, n = self._require_bound()
            if math.isinf(self.epsilon):
                scale = 0.0
            else:
                power = t - 1 if self.schedule == "eq8" else t
                scale = 2.0 * c2 * math.sqrt(n) * self.c * self.p**power / (self.epsilon * (self.p - self.q))
            self._scales[t] = scale
        return scale

    def _round_factors(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(M_t, gamma_t)`` as 0-d float arrays, remembered per ``t``.

        The rule multiplies a point by them every round; numpy multiplies by
        a 0-d array faster than by a Python float, with the same result.
        """
        factors = self._factors.get(t)
        if factors is None:
            factors = self._factors[t] = (np.array(self.noise_scale(t)), np.array(self.step(t)))
        return factors

    def sensitivity(self, t: int) -> float:
        """Claimed L1 sensitivity of ``x(t)``: ``Delta(t) = 2 C2 sqrt(n) gamma_t`` (Lemma 4), ``Delta(0) = 0``."""
        c2, n = self._require_bound()
        return 0.0 if t <= 0 else 2.0 * c2 * math.sqrt(n) * self.step(t)

    # -- the rule -----------------------------------------------------------
    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        _, n = self._require_bound()
        return NoiseDeclaration("laplace", self.noise_scale(t), n, self.sensitivity(t - 1))

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any) -> dict[str, np.ndarray]:
        """Eq. (5): ``y_i(t) = x_i(t-1) + M_t * standard Laplace``."""
        return {"y": state["x"] + self._round_factors(t)[0] * noise["y"]}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """Eq. (7) applied to ``z_i(t) = mixed["y"]`` (eq. 6, computed by the engine)."""
        z = mixed["y"]
        g = problem.costs.gradient(agents, z, round_index=t)
        if self.gradient == "clip":
            c2 = self.gradient_bound if self.gradient_bound is not None else self._require_bound()[0]
            g = clip_l2(g, c2)  # unchanged where ||g|| <= C2
        return {"x": problem.domain.project(z - self._round_factors(t)[1] * g)}

    def decision(self, state: State) -> np.ndarray:
        return state["x"]

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """Six agents in ``[-1, 1]^2`` on a period-2 doubly stochastic digraph, 25 rounds."""
        import topology

        from ...problems.problem import rendezvous_problem
        from ...scenario import Scenario

        n_agents = 6
        mats = []
        for stride in (1, 2):
            w = 0.5 * np.eye(n_agents)
            w[(np.arange(n_agents) + stride) % n_agents, np.arange(n_agents)] += 0.5
            mats.append(w)
        addresses = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n_agents, 2))
        return Scenario(rendezvous_problem(addresses), topology.periodic(mats),
                        cls(epsilon=1.0, c=0.2, q=0.8, p=0.9), horizon=25, seed=seed)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """Theorem 5's claim: epsilon-DP for any horizon (delta = 0)."""
        return float(self.epsilon), 0.0

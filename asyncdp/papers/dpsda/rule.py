"""DPSDA-C and DPSDA-PS (Cheng, Liao and Li, arXiv 2022): private online dual averaging on a network.

The setting is :mod:`asyncdp.problems.online`. ``N`` nodes each own a block ``S_i``
of the decision in ``X^d``. Each node keeps a dual variable ``z_i in R^d`` and
a full primal estimate ``y_i in X^d``. The node plays ``x_i(t) = y_i^{S_i}(t)``.

Rounds of the engines (``t = 1..T``; paper iteration ``t - 1``). In round ``t`` node ``i``:

* **R**: broadcasts ``h_i(t) = z_i(t) + eta_i(t)``, with ``eta_i(t)`` i.i.d.
  Laplace(0, ``sigma``) per coordinate (eqs. 4 and 11); DPSDA-PS also sends
  its push-sum weight ``w_i(t)`` noise-free (channel ``"w"``);
* **F** (the engine): ``mixed_i = sum_j W_ij(t) h_j(t)`` (and ``sum_j A_ij w_j``);
* **U**: computes its local signal (eq. 14)
  ``u_i(t) = clip(P_{S_i} grad f_t(y_i(t)) + xi_i(t))``, then

  - DPSDA-C, eq. (12): ``z_i(t+1) = N delta_i o u_i(t) + sum_j W_ij h_j(t)``;
    ``y_i(t+1) = Pi(z_i(t+1), alpha(t))`` (eq. 13);
  - DPSDA-PS, eqs. (20)-(22): the same ``z`` update with ``A``,
    ``w_i(t+1) = sum_j A_ij w_j(t)`` and ``y_i(t+1) = Pi(z_i(t+1) / w_i(t+1), alpha(t))``.

Eq. (12) writes the mixing as ``h_i + sum_j W_ij (h_j - h_i)``. That equals
``sum_j W_ij h_j`` for any row-stochastic ``W``, which is what the engine
computes. ``r_i = 1/N`` (Remark 3) gives the factor ``N``.

Choices where the paper is silent or inconsistent:

* **Prox-projection (eq. 7).** The proximal function is ``psi(x) = ||x||^2 / 2``,
  so ``Pi(z, alpha) = argmin_{x in X} <z, x> + ||x||^2/(2 alpha) = P_X(-alpha z)``:
  the negative dual, scaled, then projected. On a box this is a clip.
* **Step size.** ``alpha(0) = 1/sqrt(0)`` is undefined in the paper's
  0-based loop. Round ``t`` uses ``alpha(t) = alpha0 / sqrt(t)``, which is the
  analysis's ``alpha(t-1) = 1/sqrt(t)`` with ``alpha0 = 1``.
  ``y_i(1) = Pi(0) = P_X(0)`` is the scenario's default ``x0``; a given ``x0``
  is projected onto ``X``. ``z_i(1) = 0`` and ``w_i(1) = 1``.
* **Clipping.** Lemma 1 bounds a worst case by an expectation. With
  ``clip=True`` (the default) the signal is clipped, per coordinate to
  ``[-L_hat, L_hat]`` (``clip_norm="coordinate"``) or in block L2 norm to
  ``L_hat`` (``"l2"``). Then ``|u_i - u_i'|`` is bounded deterministically.
  ``clip=False`` is the paper's unclipped rule.
* **Privacy scope.** ``level="network"`` (the default) calibrates
  ``sigma = Delta_net / epsilon``, with
  ``Delta_net = sum_i 2 N L_hat b(d_i)``. A change of one round's loss moves
  every node's ``z_i``, so an eavesdropper on all links sees that sum.
  ``level="node"`` is the paper's ``sigma = 2 N L_hat b(d_max) / epsilon``
  (Theorem 2). It holds for an observer of one node only. Here
  ``b(d) = d`` for coordinate clipping and ``sqrt(d)`` for L2 clipping
  (Remark 5, with the blocks of :mod:`asyncdp.problems.online`). With scalar blocks these are ``2 N^2 L_hat`` and
  ``2 N L_hat``.
* ``noise_constant=c`` gives ``sigma = c / epsilon``. This is the experiments'
  "proportional" noise (the paper never gives the constant). The claim stays the paper's; the accountant
  shows what ``c`` really buys.
* **Claim.** Theorem 2 / 4: epsilon-DP per round, and ``T epsilon`` for ``T``
  rounds by basic composition. :meth:`claimed_privacy` returns the run-level
  ``(T epsilon, 0)``, and :meth:`claimed_privacy_per_round` returns ``epsilon``.
  The release of round ``t`` masks ``z_i(t)``. ``z_i(1) = 0`` does not depend on the
  data, so round 1's declared sensitivity is 0.

Gradient noise ``xi`` (Assumption 2; the experiments use variance 0.1). It is
not privacy noise, and the engines' noise source supplies only that. So
``xi_i(t)`` comes from its own stream, a deterministic function of
``(xi_seed, t, i)``:
``numpy.random.default_rng(SeedSequence(xi_seed, spawn_key=(5, t, i)))``
draws ``d_i`` standard normals, which are multiplied by ``gradient_noise_std``
and placed on ``S_i``. Both engines, every timing policy (rounds are per
agent) and the exact replay of :mod:`asyncdp.privacy` therefore see the same
``xi``, and two adjacent scenarios share it. Conditioning on ``xi`` is valid
because it is independent of the data. The price: the ``R`` runs of one batch share
``xi`` and differ only in their privacy noise. To average over ``xi`` as well,
run one batch per ``xi_seed``. (Treating ``xi`` as a second noisy channel would
need engine support: noise reaches only :meth:`message`, and the SimPy engine
mixes every declared channel.)

The topology is not checked here. DPSDA-C needs symmetric, doubly stochastic
weights (the proof of Lemma 2(a); Metropolis weights by default in
:meth:`example_scenario`). DPSDA-PS needs column-stochastic weights.
Use ``topology.audit(seq, asyncdp.papers.assumption_set("dpsda-c" | "dpsda-ps"))``. Under SimPy
``Deadline``/``Async`` timing with ``missing="renormalize"``, renormalized rows
are no longer column-stochastic, so ``sum_i w_i = N`` is lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from topology.validation import check_real

from ...errors import AlgorithmParameterError
from ...noise import GRADIENT_NOISE_KEY, stream
from ...algorithms.base import Algorithm, Channel, NoiseDeclaration, State
from ...algorithms.clipping import clip_l2

__all__ = ["DPSDAC", "DPSDAPS", "CLIP_NORMS", "LEVELS", "GRADIENT_NOISE_KEY", "prox"]

CLIP_NORMS = ("coordinate", "l2")
LEVELS = ("node", "network")


def prox(z: np.ndarray, alpha: float, domain: Any) -> np.ndarray:
    """Eq. (7) with ``psi = ||x||^2/2``: ``Pi(z, alpha) = P_X(-alpha z)``.

    Example:
        >>> from asyncdp.problems.domains import Box
        >>> prox(np.array([1.0, -4.0]), 0.5, Box(-1.0, 1.0, dim=2)).tolist()
        [-0.5, 1.0]
    """
    return domain.project(-alpha * z)


def _real(alg: str, name: str, value: Any) -> float:
    return check_real(value, name, error=AlgorithmParameterError, where=alg, finite=False)


@dataclass(frozen=True)
class _DPSDA(Algorithm):
    """Parameters and the shared equations of DPSDA-C and DPSDA-PS (see the module docstring).

    Args:
        epsilon: per-round privacy level, > 0 (``math.inf`` switches the noise off).
        L_hat: clipping bound ``L_hat``. The default, filled by :meth:`bind`, is
            ``sqrt(L^2 + gradient_noise_std^2)`` (Assumption 2, with the
            paper's typo ``L_hat = L^2 + nu^2`` corrected).
        clip: clip the local signal (default) or not (the paper's rule).
        clip_norm: ``"coordinate"`` or ``"l2"`` (block norm).
        level: ``"network"`` or ``"node"`` noise calibration.
        noise_constant: ``c`` for ``sigma = c / epsilon`` (overrides the calibration).
        gradient_noise_std: ``nu``, the standard deviation of ``xi``, >= 0.
        xi_seed: seed of the ``xi`` stream, a nonnegative integer.
        alpha0: step-size constant in ``alpha(t) = alpha0 / sqrt(t)``, > 0.
        num_nodes, block_sizes: filled by :meth:`bind`.

    Raises:
        AlgorithmParameterError: a parameter outside its range (the message
            names it and its value).
    """

    epsilon: float
    L_hat: float | None = None
    clip: bool = True
    clip_norm: str = "coordinate"
    level: str = "network"
    noise_constant: float | None = None
    gradient_noise_std: float = 0.0
    xi_seed: int = 0
    alpha0: float = 1.0
    num_nodes: int | None = None
    block_sizes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        a = self.name
        eps = _real(a, "epsilon", self.epsilon)
        if not eps > 0:
            raise AlgorithmParameterError(f"{a}: epsilon must be > 0, got {self.epsilon!r}")
        if self.L_hat is not None:
            lh = _real(a, "L_hat", self.L_hat)
            if not (lh > 0 and math.isfinite(lh)):
                raise AlgorithmParameterError(f"{a}: L_hat must be positive and finite, got {self.L_hat!r}")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise AlgorithmParameterError(f"{a}: clip must be True or False, got {self.clip!r}")
        if self.clip_norm not in CLIP_NORMS:
            raise AlgorithmParameterError(f"{a}: clip_norm must be one of {CLIP_NORMS}, got {self.clip_norm!r}")
        if self.level not in LEVELS:
            raise AlgorithmParameterError(f"{a}: level must be one of {LEVELS}, got {self.level!r}")
        if self.noise_constant is not None:
            c = _real(a, "noise_constant", self.noise_constant)
            if not (c > 0 and math.isfinite(c)):
                raise AlgorithmParameterError(f"{a}: noise_constant must be positive and finite, "
                                              f"got {self.noise_constant!r}")
        nu = _real(a, "gradient_noise_std", self.gradient_noise_std)
        if not (nu >= 0 and math.isfinite(nu)):
            raise AlgorithmParameterError(f"{a}: gradient_noise_std must be finite and >= 0, "
                                          f"got {self.gradient_noise_std!r}")
        if isinstance(self.xi_seed, bool) or not isinstance(self.xi_seed, (int, np.integer)) or self.xi_seed < 0:
            raise AlgorithmParameterError(f"{a}: xi_seed must be a nonnegative integer, got {self.xi_seed!r}")
        al = _real(a, "alpha0", self.alpha0)
        if not (al > 0 and math.isfinite(al)):
            raise AlgorithmParameterError(f"{a}: alpha0 must be positive and finite, got {self.alpha0!r}")

    # -- binding ----------------------------------------------------------
    def bind(self, problem: Any) -> _DPSDA:
        """Fill ``N``, the block sizes and (if ``None``) ``L_hat`` from an online problem.

        Raises:
            AlgorithmParameterError: the problem's costs are not an
                :class:`~asyncdp.problems.online.OnlineLoss`, or ``L_hat`` is ``None`` and
                the problem declares no gradient bound ``L``.
        """
        from ...problems.online import OnlineLoss

        costs = getattr(problem, "costs", None)
        if not isinstance(costs, OnlineLoss):
            raise AlgorithmParameterError(
                f"{self.name} needs an online problem (asyncdp.problems.online.OnlineLoss costs), got "
                f"{type(costs).__name__}")
        lh = self.L_hat
        if lh is None:
            lip = problem.constants.gradient_bound
            if lip is None:
                raise AlgorithmParameterError(f"{self.name}: L_hat is None and the problem declares no gradient "
                                              "bound L; pass L_hat")
            lh = math.sqrt(lip**2 + self.gradient_noise_std**2)
        return replace(self, L_hat=float(lh), num_nodes=costs.num_agents, block_sizes=costs.block_sizes)

    def _bound(self) -> tuple[float, int, tuple[int, ...]]:
        if self.L_hat is None or self.num_nodes is None or self.block_sizes is None:
            raise AlgorithmParameterError(f"{self.name}: call bind(problem) first "
                                          "(L_hat, N and the blocks are unknown)")
        return self.L_hat, self.num_nodes, self.block_sizes

    # -- schedules ----------------------------------------------------------
    def step(self, t: int) -> float:
        """``alpha(t) = alpha0 / sqrt(t)``, used by round ``t >= 1`` (the module docstring says why)."""
        return self.alpha0 / math.sqrt(t)

    def _block_factor(self, d: int) -> float:
        return float(d) if self.clip_norm == "coordinate" else math.sqrt(d)

    def node_sensitivities(self) -> np.ndarray:
        """The claimed ``Delta_i = 2 N L_hat b(d_i)`` of each node's ``z_i`` (Lemma 1 with blocks), ``(N,)``."""
        lh, n, sizes = self._bound()
        return np.array([2.0 * n * lh * self._block_factor(d) for d in sizes])

    def sensitivity(self) -> float:
        """The claimed sensitivity at the chosen level: ``max_i Delta_i`` (node) or ``sum_i Delta_i`` (network)."""
        s = self.node_sensitivities()
        return float(s.max() if self.level == "node" else s.sum())

    def noise_scale(self, t: int) -> float:
        """``sigma = Delta / epsilon`` (or ``c / epsilon``); 0 when epsilon is inf."""
        if math.isinf(self.epsilon):
            return 0.0
        if self.noise_constant is not None:
            return float(self.noise_constant) / self.epsilon
        return self.sensitivity() / self.epsilon

    # -- shared equations ---------------------------------------------------
    def gradient_noise(self, t: int, agents: Any, problem: Any) -> np.ndarray:
        """``xi_i(t)`` on ``S_i`` (zeros elsewhere), shape ``agents.shape + (d,)`` (see the module docstring)."""
        mask = problem.costs.mask
        a = np.asarray(agents)
        out = np.zeros(a.shape + (mask.shape[1],))
        if self.gradient_noise_std == 0.0:
            return out
        table = {}
        for i in np.unique(a).tolist():
            block = problem.costs.blocks[i]
            v = np.zeros(mask.shape[1])
            v[block] = stream(self.xi_seed, GRADIENT_NOISE_KEY, t, i).standard_normal(len(block))
            table[i] = self.gradient_noise_std * v
        for idx in np.ndindex(*a.shape):
            out[idx] = table[int(a[idx])]
        return out

    def local_signal(self, y: np.ndarray, t: int, agents: Any, problem: Any) -> np.ndarray:
        """Eq. (14): ``u_i(t) = clip(P_{S_i} grad f_t(y_i(t)) + xi_i(t))``, embedded in ``R^d``."""
        u = problem.costs.gradient(agents, y, round_index=t) + self.gradient_noise(t, agents, problem)
        if not self.clip:
            return u
        lh = self.L_hat
        if self.clip_norm == "coordinate":  # in place: u is this call's own array (the same values and layout)
            np.maximum(u, -lh, out=u)
            return np.minimum(u, lh, out=u)
        return clip_l2(u, lh)

    def dual_update(self, state: State, mixed_h: np.ndarray, t: int, agents: Any, problem: Any) -> np.ndarray:
        """Eqs. (12) / (20): ``z_i(t+1) = N delta_i o u_i(t) + sum_j W_ij h_j(t)``."""
        _, n, _ = self._bound()
        return n * self.local_signal(state["y"], t, agents, problem) + mixed_h

    # -- the rule (common parts) --------------------------------------------
    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        if channel == "w":
            return None
        if channel != "h":
            raise AlgorithmParameterError(f"{self.name}: unknown channel {channel!r}; channels: "
                                          f"{[c.name for c in self.channels]}")
        _, _, sizes = self._bound()
        return NoiseDeclaration("laplace", self.noise_scale(t), int(sum(sizes)),
                                0.0 if t <= 1 else self.sensitivity())

    def _noisy(self, state: State, t: int, noise: Mapping[str, np.ndarray]) -> np.ndarray:
        """Eqs. (4) / (11): ``h_i(t) = z_i(t) + sigma * standard Laplace``."""
        return state["z"] + self.noise_scale(t) * noise["h"]

    def decision(self, state: State) -> np.ndarray:
        """The full estimate ``y_i``. The played decision is its block ``S_i`` (see :mod:`asyncdp.experiments.regret`)."""
        return state["y"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """Theorem 2 / 4: ``T * epsilon`` for ``T = horizon`` rounds (basic composition), ``delta = 0``."""
        return float(horizon * self.epsilon), 0.0

    def claimed_privacy_per_round(self) -> float:
        """Theorem 2 / 4: epsilon-DP per round."""
        return float(self.epsilon)


@dataclass(frozen=True)
class DPSDAC(_DPSDA):
    """DPSDA-C, Algorithm 1 of Cheng, Liao and Li, arXiv 2022 (circulation, undirected ``G1(t)``, weights ``W(t)``).

    State ``{"z", "y"}``; one Laplace channel ``"h"``. Parameters are those of
    the shared base (see the module docstring).

    Example:
        >>> sc = DPSDAC.example_scenario(seed=0)
        >>> res = sc.run()
        >>> res.trajectory.shape, res.claimed_epsilon
        ((13, 7, 14), 12.0)
    """

    name: ClassVar[str] = "dpsda-c"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("h", "laplace"),)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        y = problem.domain.project(np.array(x0, dtype=float))
        return {"z": np.zeros_like(y), "y": y}

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any) -> dict:
        return {"h": self._noisy(state, t, noise)}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """Eqs. (12)-(13)."""
        z = self.dual_update(state, mixed["h"], t, agents, problem)
        return {"z": z, "y": prox(z, self.step(t), problem.domain)}

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """7 nodes with ``d = 14`` and 12 rounds of synthetic OLR on ``[-5, 5]^14``, with gradient noise of
        variance 0.1. The graph is our Fig. 2 stand-in without directions, with Metropolis weights."""
        import topology

        from ...problems.online import online_problem, synthetic_olr
        from ...scenario import Scenario

        loss, box = synthetic_olr(num_nodes=7, dim=14, num_rounds=12, seed=seed)
        return Scenario(online_problem(loss, box), topology.cheng2022_fig2_sequence(directed=False),
                        cls(epsilon=1.0, gradient_noise_std=math.sqrt(0.1), xi_seed=seed), horizon=12, seed=seed)


@dataclass(frozen=True)
class DPSDAPS(_DPSDA):
    """DPSDA-PS, Algorithm 2 of Cheng, Liao and Li (arXiv 2022).

    Push-sum, directed B-strongly-connected ``G2(t)``, column-stochastic ``A``.

    State ``{"z", "y", "w"}``; the Laplace channel ``"h"`` and the noise-free
    channel ``"w"`` (shape ``(..., 1)``).

    Example:
        >>> sc = DPSDAPS.example_scenario(seed=0)
        >>> res = sc.run(engine="batch", runs=2)
        >>> res.trajectory.shape
        (2, 13, 7, 14)
    """

    name: ClassVar[str] = "dpsda-ps"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("h", "laplace"), Channel("w", None))

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        y = problem.domain.project(np.array(x0, dtype=float))
        return {"z": np.zeros_like(y), "y": y, "w": np.ones(y.shape[:-1] + (1,))}

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any) -> dict:
        return {"h": self._noisy(state, t, noise), "w": state["w"]}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """Eqs. (20)-(22)."""
        z = self.dual_update(state, mixed["h"], t, agents, problem)
        w = mixed["w"]
        return {"z": z, "y": prox(z / w, self.step(t), problem.domain), "w": w}

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """As :meth:`DPSDAC.example_scenario`, on the directed, 4-strongly-connected Fig. 2 stand-in
        with column-stochastic weights."""
        import topology

        from ...problems.online import online_problem, synthetic_olr
        from ...scenario import Scenario

        loss, box = synthetic_olr(num_nodes=7, dim=14, num_rounds=12, seed=seed)
        return Scenario(online_problem(loss, box), topology.cheng2022_fig2_sequence(directed=True),
                        cls(epsilon=1.0, gradient_noise_std=math.sqrt(0.1), xi_seed=seed), horizon=12, seed=seed)

"""Muffliato (Cyffers, Even, Bellet and Massoulié, NeurIPS 2022): gossip averaging with local Gaussian noise.

Every agent ``i`` holds a private value ``x_i`` (here: its address in a
:class:`~asyncdp.problems.costs.RendezvousQuadratic` problem, whose optimum
over a large enough box is the average of the addresses). Algorithm 1 of the
paper (Muffliato averaging) adds Gaussian noise once,
``x~_i(0) = x_i + sigma * N(0, I)``, then gossips with a fixed symmetric doubly
stochastic ``W``: plainly, ``x(t+1) = W x(t)``, or with Chebyshev acceleration
(their eq. 6, Algorithm 2), ``x(t+1) = gamma W x(t) + (1 - gamma) x(t-1)`` with
``x(1) = W x(0)``.

As a per-agent rule (R/F/U, shared by both engines), round ``t``:

* R: ``y_i(t) = x_i(t-1) + s_t * xi``, with ``s_1 = sigma`` and ``s_t = 0`` for
  ``t >= 2`` (the one local noise injection);
* F: the engine mixes ``m_i(t) = sum_j W_ij(t) y_j(t)``;
* U: ``x_i(t) = m_i(t)`` for ``t <= 2``, and
  ``x_i(t) = gamma m_i(t) + (1 - gamma) x_i(t-2)`` for ``t >= 3``.

For ``t >= 3``, ``x_i(t-2)`` is the agent's own message of round ``t - 1``
(noise-free from round 2 on), so every message is affine in the noise on the
realized schedule: the rule declares it (:attr:`Muffliato.affine_in_noise`,
:meth:`Muffliato.mixing_factor`, :meth:`Muffliato.self_lag_weight`) and :mod:`asyncdp.privacy.affine_check`
verifies it on the replay of each run.

Round 1 is the local noising round. Scenarios built by
:func:`muffliato_topology` mix with the identity in round 1, so that the
agent's state after round 1 is its own noisy value ``x~_i(0)`` (a per-agent
rule never sees its own noise after the fact) and ``x(t)`` equals the
paper's ``x(t - 1)`` exactly, plain or accelerated. With a static ``W`` from
round 1 on, the accelerated recursion starts one step later (still an
averaging polynomial in ``W``: weights sum to one); the plain one is the
paper's ``x(t)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ...algorithms.base import Algorithm, Channel, NoiseDeclaration, State
from ...errors import AlgorithmParameterError

__all__ = ["Muffliato", "muffliato_topology"]


def muffliato_topology(weights: Any) -> Any:
    """The gossip sequence of a Muffliato run: the identity in round 1 (local noising), then ``W`` forever.

    Args:
        weights: ``W`` (``N x N``, dense or scipy sparse), symmetric doubly stochastic.

    Returns:
        A :class:`topology.sequence.GraphSequence`.

    Example:
        >>> import numpy as np
        >>> seq = muffliato_topology(np.full((2, 2), 0.5))
        >>> float(seq.dense(1)[0, 1]), float(seq.dense(5)[0, 1])
        (0.0, 0.5)
    """
    import scipy.sparse as sp

    from topology.sequence import generated

    w = sp.csr_array(weights, dtype=float)
    eye = sp.identity(w.shape[0], format="csr", dtype=float)
    return generated(w.shape[0], lambda t: sp.csr_array(eye) if t == 1 else w, directed=False,
                     description="muffliato: identity, then W")


@dataclass(frozen=True)
class Muffliato(Algorithm):
    """Muffliato gossip averaging with one local Gaussian noise injection (module docstring).

    Args:
        sigma: standard deviation of the local noise (> 0, finite; Cyffers et al. use 1).
        gamma: Chebyshev constant in ``(0, 2)``; ``1.0`` (default) is plain gossip. Use
            :func:`accounting.network.muffliato_gossip.chebyshev_gamma` of the spectral gap.
        sensitivity: L2 distance between two values of one agent (filled by :meth:`bind` from the
            domain's diameter when ``None``).
        dimension: filled by :meth:`bind`.

    Raises:
        AlgorithmParameterError: a parameter outside its range (named with its value).

    Example:
        >>> alg = Muffliato(sigma=1.0, gamma=1.5, sensitivity=1.0, dimension=1)
        >>> alg.noise(1, "y").scale, alg.noise(2, "y").scale, alg.self_lag_weight(3)
        (1.0, 0.0, -0.5)
    """

    sigma: float = 1.0
    gamma: float = 1.0
    sensitivity: float | None = None
    dimension: int | None = None

    name: ClassVar[str] = "muffliato"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"),)
    affine_in_noise: ClassVar[bool] = True
    """Every message is affine in (data, noise) on the realized schedule: verified per run by
    :func:`asyncdp.privacy.affine_check.verify_affine`, never trusted."""

    def __post_init__(self) -> None:
        for key in ("sigma", "gamma"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise AlgorithmParameterError(f"muffliato: {key} must be a finite number, got {v!r}")
        if not self.sigma > 0:
            raise AlgorithmParameterError(f"muffliato: sigma must be > 0, got {self.sigma!r}")
        if not 0 < self.gamma < 2:
            raise AlgorithmParameterError(f"muffliato: gamma must lie in (0, 2), got {self.gamma!r}")
        if self.sensitivity is not None and not (self.sensitivity > 0 and math.isfinite(self.sensitivity)):
            raise AlgorithmParameterError(f"muffliato: sensitivity must be finite and > 0, got {self.sensitivity!r}")

    @property
    def accelerated(self) -> bool:
        """Whether the Chebyshev recursion is on (``gamma != 1``)."""
        return self.gamma != 1.0

    def bind(self, problem: Any) -> Muffliato:
        """Fill the dimension and the sensitivity (the domain's diameter) from ``problem``.

        Raises:
            AlgorithmParameterError: the costs are not a rendezvous quadratic (the private values are its
                addresses), or the domain is unbounded and no sensitivity was given.
        """
        from ...problems.costs import RendezvousQuadratic

        if not isinstance(problem.costs, RendezvousQuadratic):
            raise AlgorithmParameterError("muffliato averages private values: the problem's costs must be a "
                                          f"RendezvousQuadratic (the addresses), got {type(problem.costs).__name__}")
        sens = self.sensitivity
        if sens is None:
            sens = float(problem.domain.diameter)
            if not math.isfinite(sens):
                raise AlgorithmParameterError("muffliato: the domain is unbounded; pass sensitivity=")
        return replace(self, sensitivity=float(sens), dimension=int(problem.dim))

    def noise_scale(self, t: int) -> float:
        """``sigma`` in round 1, 0 afterwards (one local noise injection)."""
        return float(self.sigma) if t == 1 else 0.0

    def self_lag_weight(self, t: int) -> float:
        """The weight of the agent's own message of round ``t - 1`` in its round-``t`` state (``1 - gamma``
        from round 3 on, else 0)."""
        return 1.0 - float(self.gamma) if t >= 3 else 0.0

    def mixing_factor(self, t: int) -> float:
        """The factor on the engine's mix in the round-``t`` state (``gamma`` from round 3 on, else 1)."""
        return float(self.gamma) if t >= 3 else 1.0

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        """The private values (addresses); ``x0`` only gives the shape."""
        values = np.asarray(problem.costs.addresses, dtype=float)[agents]
        x = np.array(np.broadcast_to(values, np.shape(x0)), dtype=float)
        return {"x": x, "prev": x.copy()}

    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        if self.dimension is None or self.sensitivity is None:
            raise AlgorithmParameterError("muffliato: call bind(problem) first (dimension and sensitivity unknown)")
        return NoiseDeclaration("gaussian", self.noise_scale(t), self.dimension, self.sensitivity if t == 1 else 0.0)

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any
                ) -> dict[str, np.ndarray]:
        """R: ``y_i(t) = x_i(t-1) + s_t xi``."""
        s = self.noise_scale(t)
        return {"y": state["x"] + s * noise["y"] if s else state["x"].copy()}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """U: plain mixing up to round 2, the Chebyshev recursion (Algorithm 2) afterwards."""
        m = mixed["y"]
        c = self.self_lag_weight(t)
        x = m if c == 0.0 else self.mixing_factor(t) * m + c * state["prev"]
        return {"x": x, "prev": state["x"]}

    def decision(self, state: State) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The local claim at order 2, converted to ``(epsilon, 1e-6)``
        (:func:`accounting.papers.muffliato.muffliato_claim`); needs :meth:`bind` (the sensitivity)."""
        from accounting.papers.muffliato import muffliato_claim

        c = muffliato_claim(sigma=self.sigma, alpha=2.0, sensitivity=self.sensitivity or 1.0)
        return float(c.epsilon), float(c.delta)

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """A 6-node path, values in ``[0, 1]``, plain gossip, 5 rounds (round 1 the local noising round)."""
        import networkx as nx

        from accounting.network.muffliato_gossip import hamilton_weights

        from ...problems.domains import Box
        from ...problems.problem import Problem
        from ...problems.costs import RendezvousQuadratic
        from ...scenario import Scenario

        n = 6
        values = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, 1))
        problem = Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values))
        return Scenario(problem, muffliato_topology(hamilton_weights(nx.path_graph(n))), cls(sigma=1.0),
                        horizon=5, seed=seed)

"""The two nonconvex problems of Wang and Başar (Automatica 2023), §6: estimation and ICA.

**Decentralized estimation** (§6.1, ``m = 5`` agents, ``d = 2``)::

    f_i(theta) = ||Y_i - M theta||^2 + kappa ||theta||^3,   kappa = -0.1,
    M = [[1, 0], [0, 2], [0, 0]],   Y_i = i [1/3, 2/3, 0]^T,

with a local minimum ``theta* = [1.3478, 1.0690]`` and a strict saddle
``theta_s = [-7.4336, 1.3959]`` of ``F = (1/m) sum_i f_i``. The Hessian is
``2 M^T M + 3 kappa (||theta|| I + theta theta^T / ||theta||)``; the paper
prints the cubic part with the wrong sign pattern, under which both points
would look positive definite.

*Extension outside the box.* With ``kappa < 0`` the cubic term sends ``F`` to
``-inf``; the paper modifies ``f_i`` outside ``[-8, 4] x [-3, 3]`` without
saying how. We evaluate the cubic term at a *soft-clipped* point::

    f_i(theta) = ||Y_i - M theta||^2 + kappa ||s(theta)||^3,
    s_k(t) = t on [lo_k, hi_k],  hi_k + w tanh((t - hi_k)/w) above,  lo_k + w tanh((t - lo_k)/w) below,

with width ``w = soft_width`` (default 1). ``s`` is the identity on the box and
``C^2`` (``s' = 1``, ``s'' = 0`` at the faces), so ``f_i`` is the paper's
formula on the box, twice continuously differentiable on ``R^2``, coercive (the
quadratic data term dominates the bounded cubic term) with a globally
Lipschitz gradient. What the choice changes: the gradient grows linearly,
not boundedly (Assumption 2 holds on bounded sets only, as for any
quadratic data term); the formula's far stationary points (a saddle at
``[5.2489, 1.2537]`` just right of the box and two more at ``||theta|| ~ 26``)
disappear; and because ``dF/dtheta_1 > 0`` at ``theta_1 = -8`` (F *falls*
outward there) a coercive extension must create a local minimum left of the
box — here at about ``[-8.357, 1.466]`` with ``F ~ 28.76`` (``F(theta*) ~
0.742``, ``F(theta_s) ~ 29.60``). Runs that leave ``theta_s`` to the left end
there, not at ``theta*``. ``theta*`` remains the global
minimizer on ``R^2`` (three stationary points in all; tests check both facts).

**ICA** (§6.2, ``d = 10``, 800 samples, 160 per agent): ``Y = A Z`` with a
random orthonormal ``A`` and ``Z`` uniform on ``{-1, +1}``; agent ``i``
minimizes ``f_i(u) = (1/n_i) sum_j (u^T y_ij)^4`` on the unit sphere (fourth
moment 1 < 3, so ``-sign(mu - 3) = +1``); the population minimizers are the
columns ``+-a_j`` of ``A``. The sphere constraint is handled by the algorithm
(normalization after each combine, ``WangBasar(constraint="sphere")``; the paper
does not say how the constraint is enforced): the cost family itself is the unconstrained quartic.
Data are synthetic with a fixed seed (:func:`ica_data`).

Example:
    >>> p = estimation_problem()
    >>> np.round(p.optimum, 4)
    array([1.3478, 1.069 ])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from topology.validation import check_integer, check_positive, check_real

from .costs import CostFamily, FunctionClass
from .costs.structure import Structure
from .domains import Ball, Box, Domain
from ..errors import ProblemError
from .problem import Problem

__all__ = [
    "PAPER_M",
    "PAPER_KAPPA",
    "PAPER_BOX",
    "THETA_STAR_PAPER",
    "THETA_SADDLE_PAPER",
    "SPURIOUS_MINIMUM_APPROX",
    "ICA_DIM",
    "ICA_SAMPLES",
    "ICA_AGENTS",
    "ICA_SEED",
    "paper_measurements",
    "soft_clip",
    "NonconvexEstimation",
    "estimation_problem",
    "stationary_point",
    "ICAQuartic",
    "ica_data",
    "ica_problem",
    "ica_error",
]

PAPER_M = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
"""The measurement matrix ``M`` of §6.1 (3 x 2)."""
PAPER_KAPPA = -0.1
"""The cubic coefficient ``kappa`` of §6.1 (negative: nonconvex)."""
PAPER_BOX = ((-8.0, -3.0), (4.0, 3.0))
"""The domain of interest ``[-8, 4] x [-3, 3]`` of §6.1 as ``(low, high)``."""
THETA_STAR_PAPER = (1.3478, 1.0690)
"""The local (and global) minimum as printed (4 decimals)."""
THETA_SADDLE_PAPER = (-7.4336, 1.3959)
"""The strict saddle as printed (4 decimals)."""
SPURIOUS_MINIMUM_APPROX = (-8.3568, 1.4655)
"""The local minimum our extension creates left of the box (``soft_width = 1``), 4 decimals."""
ICA_DIM, ICA_SAMPLES, ICA_AGENTS, ICA_SEED = 10, 800, 5, 2023
"""ICA of §6.2: dimension, samples, agents (160 samples each), default data seed (ours)."""

_TANH_PEAK = 4.0 / (3.0 * math.sqrt(3.0))  # max_u 2 tanh(u) (1 - tanh(u)^2)


def _matrix(data: Any, name: str, ndim: int) -> np.ndarray:
    try:
        arr = np.array(data, dtype=float)
    except (TypeError, ValueError):
        raise ProblemError(f"{name} must be a numeric array, got {data!r}") from None
    if arr.ndim != ndim or min(arr.shape) < 1:
        raise ProblemError(f"{name} must be a nonempty {ndim}-D array, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ProblemError(f"{name} must be finite; entry {tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])} "
                           "is not")
    arr.setflags(write=False)
    return arr


def paper_measurements(num_agents: int = 5) -> np.ndarray:
    """``Y_i = i [1/3, 2/3, 0]``, ``i = 1..m`` (§6.1; the stated measurement noise is not in these values).

    Example:
        >>> paper_measurements().mean(axis=0)
        array([1., 2., 0.])
    """
    num_agents = check_integer(num_agents, "num_agents", minimum=1, error=ProblemError)
    return np.arange(1, num_agents + 1)[:, None] * np.array([1.0 / 3.0, 2.0 / 3.0, 0.0])


def soft_clip(x: np.ndarray, low: np.ndarray, high: np.ndarray, width: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The soft clip ``s`` of the module docstring with its first and second derivatives (per coordinate).

    Args:
        x: points ``(..., d)``.
        low, high: the box, shape ``(d,)``.
        width: ``w > 0``.

    Returns:
        ``(s, s', s'')``, each of the shape of ``x``.

    Example:
        >>> s, ds, dds = soft_clip(np.array([0.5, 5.0]), np.array([-1.0, -1.0]), np.array([1.0, 1.0]), 1.0)
        >>> s.round(4).tolist(), ds.round(4).tolist()
        ([0.5, 1.9993], [1.0, 0.0013])
    """
    above, below = x > high, x < low
    edge = np.where(above, high, np.where(below, low, x))
    th = np.tanh((x - edge) / width)  # 0 inside the box
    s = edge + width * th
    ds = 1.0 - th * th
    dds = -2.0 / width * th * ds
    return s, ds, dds


# --------------------------------------------------------------------------- estimation (§6.1)


class NonconvexEstimation(CostFamily):
    """``f_i(theta) = ||Y_i - M theta||^2 + kappa ||s(theta)||^3`` (§6.1 with our extension; module docstring).

    Agent ``i``'s private datum is its measurement ``Y_i`` (one sample,
    ``n_i = 1``). Gradient: ``-2 M^T Y_i + 2 M^T M theta + 3 kappa ||s|| (s * s')``;
    on the box ``s = theta`` and it is the paper's ``grad f_i``.

    Args:
        measurements: ``(m, p)`` array of ``Y_i``.
        matrix: ``M``, ``(p, d)``.
        kappa: the cubic coefficient.
        box: ``(low, high)`` of the box outside which the cubic term is soft-clipped.
        soft_width: ``w > 0``.

    Raises:
        ProblemError: bad shapes, non-finite values, an empty box or ``w <= 0``.

    Example:
        >>> fam = NonconvexEstimation(paper_measurements())
        >>> round(float(fam.value(0, np.zeros(2))), 4)  # ||Y_1||^2 = 1/9 + 4/9
        0.5556
    """

    private_fields = ("measurement",)

    def __init__(self, measurements: Any, matrix: Any = PAPER_M, kappa: float = PAPER_KAPPA,
                 box: Any = PAPER_BOX, soft_width: float = 1.0) -> None:
        self._Y = _matrix(measurements, "measurements", 2)
        self._M = _matrix(matrix, "matrix", 2)
        if self._M.shape[0] != self._Y.shape[1]:
            raise ProblemError(f"matrix must have {self._Y.shape[1]} rows (the measurement length), "
                               f"got shape {self._M.shape}")
        super().__init__(self._Y.shape[0], self._M.shape[1])
        self._kappa = check_real(kappa, "kappa", error=ProblemError)
        try:
            low, high = (np.broadcast_to(np.asarray(b, dtype=float), (self._dim,)).copy() for b in box)
        except (TypeError, ValueError):
            raise ProblemError(f"box must be (low, high) with {self._dim} coordinates each, got {box!r}") from None
        if not (np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()):
            raise ProblemError(f"box must satisfy low < high (finite), got low={low.tolist()}, high={high.tolist()}")
        self._low, self._high = low, high
        self._width = check_positive(soft_width, "soft_width", error=ProblemError)
        self._MtM = self._M.T @ self._M
        self._MtY = self._Y @ self._M  # row i = M^T Y_i
        self._YY = np.einsum("ik,ik->i", self._Y, self._Y)

    # -- data ------------------------------------------------------------------
    @property
    def measurements(self) -> np.ndarray:
        """``Y``, shape ``(m, p)`` (read-only)."""
        return self._Y

    @property
    def kappa(self) -> float:
        return self._kappa

    @property
    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` of the extension box."""
        return self._low.copy(), self._high.copy()

    @property
    def soft_width(self) -> float:
        return self._width

    samples_per_agent = 1
    """``n_i``: each agent holds one measurement vector."""

    @property
    def sample_lipschitz(self) -> float:
        """``nu`` of Assumption 1 for the data: ``||grad_theta l(theta, Y) - grad_theta l(theta, Y')||_1 <= nu ||Y - Y'||_1``.

        ``grad_theta l = -2 M^T Y + (terms free of Y)``, so ``nu = 2 ||M^T||_{1->1}`` = twice
        the largest absolute row sum of ``M`` (4 for the paper's ``M``).
        """
        return 2.0 * float(np.abs(self._M).sum(axis=1).max())

    # -- evaluation ----------------------------------------------------------------
    def _cubic(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        s, ds, dds = soft_clip(x, self._low, self._high, self._width)
        r = np.sqrt(np.einsum("...k,...k->...", s, s))
        return s, ds, dds, r

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        _, _, _, r = self._cubic(x)
        quad = self._YY[a] - 2.0 * np.einsum("...k,...k->...", x, self._MtY[a]) + np.einsum(
            "...k,kl,...l->...", x, self._MtM, x)
        return quad + self._kappa * r**3

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        s, ds, _, r = self._cubic(x)
        return -2.0 * self._MtY[a] + 2.0 * x @ self._MtM + 3.0 * self._kappa * r[..., None] * s * ds

    def hessian(self, agents: Any, x: Any) -> np.ndarray:
        """``hess f_i(theta)``, shape ``broadcast(agents, x[..., 0]) + (d, d)``; the same for every agent.

        On the box: ``2 M^T M + 3 kappa (||theta|| I + theta theta^T / ||theta||)`` (the corrected
        form: the paper prints the cubic part with the wrong signs); outside, the chain rule through ``s``:
        ``3 kappa [D (r I + s s^T / r) D + r diag(s * s'')]`` with ``D = diag(s')``, ``r = ||s||``.

        Example:
            >>> fam = NonconvexEstimation(paper_measurements())
            >>> np.linalg.eigvalsh(fam.hessian(0, np.array(THETA_SADDLE_PAPER))).round(3)
            array([-2.482,  5.674])
        """
        _, xx, shape = self._prepare(agents, x, None)
        xb = np.broadcast_to(xx, shape + (self._dim,))
        s, ds, dds, r = self._cubic(xb)
        eye = np.eye(self._dim)
        rr = r[..., None, None]
        outer = np.where(rr > 0, s[..., :, None] * s[..., None, :] / np.where(rr > 0, rr, 1.0), 0.0)
        inner = rr * eye + outer
        cubic = ds[..., :, None] * inner * ds[..., None, :] + rr * eye * (s * dds)[..., None, :]
        return 2.0 * self._MtM + 3.0 * self._kappa * cubic

    # -- constants -----------------------------------------------------------------
    def _clip_radius(self) -> float:
        """``sup ||s(theta)||`` over ``R^d``: the farthest corner of the box widened by ``w``."""
        far = np.maximum(np.abs(self._low - self._width), np.abs(self._high + self._width))
        return float(np.linalg.norm(far))

    def smoothness_bound(self) -> float:
        """A global bound on ``||hess f_i||``: ``2||M^T M|| + 3|kappa| (2 R_s + R_s S 4/(3 sqrt 3 w))``.

        ``R_s = sup ||s||``, ``S = sup_k |s_k|``; ``|s'| <= 1`` and ``|s''| <= 4 / (3 sqrt(3) w)``.
        """
        rs = self._clip_radius()
        sk = float(np.max(np.maximum(np.abs(self._low - self._width), np.abs(self._high + self._width))))
        return 2.0 * float(np.linalg.norm(self._MtM, 2)) + 3.0 * abs(self._kappa) * (
            2.0 * rs + rs * sk * _TANH_PEAK / self._width)

    def function_class(self, domain: Domain) -> FunctionClass:
        """Constants on ``domain``: ``L = C4`` (global), and on a bounded domain ``C1`` and ``C2``.

        ``C2 <= max_i 2||M^T Y_i|| + 2||M^T M|| sup_X ||theta|| + 3|kappa| R_s^2``; no strong
        convexity (nonconvex).
        """
        self._check_domain(domain)
        lip = self.smoothness_bound()
        g = None
        if domain.bounded:
            rad = float(domain.max_distance(np.zeros(self._dim)))
            g = (2.0 * float(np.linalg.norm(self._MtY, axis=1).max()) + 2.0 * float(np.linalg.norm(self._MtM, 2)) * rad
                 + 3.0 * abs(self._kappa) * self._clip_radius() ** 2)
        return FunctionClass(diameter=domain.diameter if domain.bounded else None, gradient_bound=g,
                             hessian_bound=lip, smoothness=lip)

    def optimum(self, domain: Domain) -> np.ndarray:
        """The global minimizer of ``sum_i f_i`` over ``domain``, by multi-start.

        Starts: a 5 x 5 grid over the extension box widened by ``2 w``, projected
        onto ``domain``; all run 4000 projected-gradient steps of length
        ``1 / (m L)`` at once (``L`` = :meth:`smoothness_bound`, so ``F`` decreases
        monotonically); the lowest value wins and, when it lies in the interior,
        is polished by Newton steps (:func:`stationary_point`).

        Raises:
            ProblemError: no start ended at a finite point.
        """
        self._check_domain(domain)
        axes = [np.linspace(lo - 2 * self._width, hi + 2 * self._width, 5) for lo, hi in zip(self._low, self._high)]
        x = domain.project(np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, self._dim))
        agents = np.arange(self._num_agents)
        step = 1.0 / (self._num_agents * self.smoothness_bound())
        for _ in range(4000):
            x = domain.project(x - step * self._gradient(agents, x[:, None, :], None).sum(axis=1))
        vals = self._value(agents, x[:, None, :], None).sum(axis=1)
        vals = np.where(np.isfinite(vals), vals, np.inf)
        if not np.isfinite(vals).any():
            raise ProblemError(f"no start converged to a minimizer on {domain!r}")
        best = x[int(np.argmin(vals))]
        try:
            polished = stationary_point(self, best)
        except ProblemError:
            return best
        if bool(domain.contains(polished)) and float(self.total_value(polished)) <= float(vals.min()) + 1e-9:
            return polished
        return best

    def _agent_structure(self) -> Structure | None:
        """Each agent's measurement; ``M``, ``kappa``, the box and the soft width shared (this class only)."""
        if type(self) is not NonconvexEstimation:
            return None
        return Structure("NonconvexEstimation", (self._M, self._kappa, self._low, self._high, self._width),
                         tuple(self._Y))

    def with_agent(self, agent: int, **changes: Any) -> NonconvexEstimation:
        """Copy with ``measurement=`` of ``agent`` replaced (adjacent problem, one sample changed)."""
        i = self._check_agent(agent)
        self._check_changes(changes)
        y = np.array(self._Y)
        new = np.asarray(changes["measurement"], dtype=float)
        if new.shape != (self._Y.shape[1],) or not np.isfinite(new).all():
            raise ProblemError(f"measurement must be a finite vector of length {self._Y.shape[1]}, got {new!r}")
        y[i] = new
        return NonconvexEstimation(y, self._M, self._kappa, (self._low, self._high), self._width)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "NonconvexEstimation", "num_agents": self._num_agents, "dim": self._dim,
                "measurements": self._Y.tolist(), "matrix": self._M.tolist(), "kappa": self._kappa,
                "box": [self._low.tolist(), self._high.tolist()], "soft_width": self._width,
                "extension": "cubic term evaluated at the soft-clipped point s(theta) (C^2, identity on the box)"}


def estimation_problem(*, homogeneous: bool = False, soft_width: float = 1.0, num_agents: int = 5) -> Problem:
    """The §6.1 problem on its domain of interest ``X = [-8, 4] x [-3, 3]``.

    ``X`` carries the constants and the reference optimum; the costs are
    defined on all of ``R^2`` and Algorithm 2 is unconstrained (iterates may
    leave ``X``; ``WangBasar(constraint="domain")`` projects instead).

    Args:
        homogeneous: give every agent the mean measurement ``[1, 2, 0]``: the
            same ``F``, but every local gradient vanishes at each stationary
            point of ``F`` (used to show that a noise-free run started at
            ``theta_s`` stays there).
        soft_width: the extension's width ``w``.
        num_agents: ``m`` (5 in the paper).

    Returns:
        ``Problem(Box(...), NonconvexEstimation(...))``.

    Example:
        >>> estimation_problem(homogeneous=True).costs.measurements[0].tolist()
        [1.0, 2.0, 0.0]
    """
    y = paper_measurements(num_agents)
    if homogeneous:
        y = np.broadcast_to(y.mean(axis=0), y.shape).copy()
    low, high = PAPER_BOX
    return Problem(Box(low, high), NonconvexEstimation(y, PAPER_M, PAPER_KAPPA, PAPER_BOX, soft_width))


def stationary_point(family: NonconvexEstimation, guess: Any, *, tol: float = 1e-13, max_iter: int = 100
                     ) -> np.ndarray:
    """A stationary point of ``F = (1/m) sum_i f_i`` by Newton's method from ``guess``.

    Args:
        family: the cost family.
        guess: a start point ``(d,)``.
        tol: stop when the Newton step is below ``tol (1 + ||theta||)``.
        max_iter: iteration cap.

    Returns:
        The point, ``(d,)``.

    Raises:
        ProblemError: singular Hessian or no convergence within ``max_iter``.

    Example:
        >>> fam = NonconvexEstimation(paper_measurements())
        >>> stationary_point(fam, THETA_SADDLE_PAPER).round(4).tolist()
        [-7.4336, 1.3959]
    """
    x = np.array(guess, dtype=float)
    agents = np.arange(family.num_agents)
    for _ in range(max_iter):
        g = family.total_gradient(x)
        h = family.hessian(agents, x).sum(axis=0)
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            raise ProblemError(f"singular Hessian at {x.tolist()} while searching a stationary point") from None
        x = x - step
        if np.linalg.norm(step) <= tol * (1.0 + np.linalg.norm(x)):
            return x
    raise ProblemError(f"Newton's method did not converge from {np.asarray(guess).tolist()} in {max_iter} steps")


# --------------------------------------------------------------------------- ICA (§6.2)


class ICAQuartic(CostFamily):
    """``f_i(u) = (1/n_i) sum_j (u^T y_ij)^4``, ``grad f_i(u) = (4/n_i) sum_j (u^T y_ij)^3 y_ij`` (§6.2).

    Args:
        samples: ``(m, n_i, d)``: agent ``i``'s samples ``y_ij``.
        mixing: the true mixing matrix ``A`` (``d x d``), optional; only used to
            name a reference minimizer (:meth:`optimum`).

    Raises:
        ProblemError: bad shapes or non-finite values.

    Example:
        >>> fam = ICAQuartic(np.ones((2, 3, 2)))
        >>> fam.gradient(0, np.array([1.0, 0.0])).tolist()
        [4.0, 4.0]
    """

    private_fields = ("samples",)

    def __init__(self, samples: Any, mixing: Any = None) -> None:
        self._S = _matrix(samples, "samples", 3)
        super().__init__(self._S.shape[0], self._S.shape[2])
        self._A = None
        if mixing is not None:
            self._A = _matrix(mixing, "mixing", 2)
            if self._A.shape != (self._dim, self._dim):
                raise ProblemError(f"mixing must be {self._dim} x {self._dim}, got shape {self._A.shape}")
        self._ymax = float(np.linalg.norm(self._S, axis=-1).max())

    @property
    def samples(self) -> np.ndarray:
        """``(m, n_i, d)`` (read-only)."""
        return self._S

    @property
    def mixing(self) -> np.ndarray | None:
        return self._A

    @property
    def samples_per_agent(self) -> int:
        """``n_i``."""
        return int(self._S.shape[1])

    sample_lipschitz = None
    """No global ``nu``: the gradient is cubic in the sample (Theorem 4 does not apply)."""

    def _proj(self, a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self._S[a]  # a.shape + (n_i, d)
        return s, np.matmul(s, x[..., None])[..., 0]  # u^T y_ij, shape broadcast + (n_i,)

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        _, p = self._proj(a, x)
        p2 = p * p
        return np.mean(p2 * p2, axis=-1)

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        s, p = self._proj(a, x)
        cube = p * p * p  # (p**3 goes through pow: ~20x slower)
        return (4.0 / s.shape[-2]) * np.matmul(cube[..., None, :], s)[..., 0, :]

    def function_class(self, domain: Domain) -> FunctionClass:
        """On a bounded domain of radius ``R``: ``C2 = 4 y^4 R^3``, ``L = C4 = 12 y^4 R^2`` (``y = max ||y_ij||``)."""
        self._check_domain(domain)
        if not domain.bounded:
            return FunctionClass()
        rad = float(domain.max_distance(np.zeros(self._dim)))
        y4 = self._ymax**4
        return FunctionClass(diameter=domain.diameter, gradient_bound=4.0 * y4 * rad**3,
                             hessian_bound=12.0 * y4 * rad**2, smoothness=12.0 * y4 * rad**2)

    def optimum(self, domain: Domain) -> np.ndarray:
        """A reference minimizer: ``a_1`` (first column of ``mixing``) when known.

        The population minimizers on the sphere are ``+-a_j``, all equivalent;
        experiments use the sign- and permutation-invariant :func:`ica_error`.
        Without ``mixing``: the lowest of ``d`` projected-gradient descents on
        the sphere started at ``e_1 .. e_d``.
        """
        self._check_domain(domain)
        if self._A is not None:
            return np.array(self._A[:, 0])
        agents = np.arange(self._num_agents)
        best, best_val = None, math.inf
        for k in range(self._dim):
            u = np.eye(self._dim)[k]
            for _ in range(2000):
                u = u - 1e-3 * self.gradient(agents, u).mean(axis=0)
                u = u / np.linalg.norm(u)
            val = float(self.total_value(u))
            if val < best_val:
                best, best_val = u, val
        return best

    def _agent_structure(self) -> Structure | None:
        """Each agent's samples (the mixing matrix only names a reference minimizer; this class only)."""
        if type(self) is not ICAQuartic:
            return None
        return Structure("ICAQuartic", (), tuple(self._S))

    def with_agent(self, agent: int, **changes: Any) -> ICAQuartic:
        """Copy with agent's ``samples=`` (``(n_i, d)``) replaced."""
        i = self._check_agent(agent)
        self._check_changes(changes)
        new = np.asarray(changes["samples"], dtype=float)
        if new.shape != self._S.shape[1:] or not np.isfinite(new).all():
            raise ProblemError(f"samples must be finite with shape {self._S.shape[1:]}, got shape {new.shape}")
        s = np.array(self._S)
        s[i] = new
        return ICAQuartic(s, self._A)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "ICAQuartic", "num_agents": self._num_agents, "dim": self._dim,
                "samples_per_agent": self.samples_per_agent, "max_sample_norm": self._ymax,
                "mixing_known": self._A is not None}


def ica_data(seed: int = ICA_SEED, *, dim: int = ICA_DIM, num_samples: int = ICA_SAMPLES
             ) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic ICA data: ``A`` Haar-orthonormal (QR of a Gaussian, signs fixed), ``Y = A Z``, ``Z`` uniform ``+-1``.

    Stream: ``numpy.random.default_rng(seed)`` draws the ``d x d`` Gaussian first, then ``Z``.

    Returns:
        ``(A, Y)`` with ``A`` ``(d, d)`` and ``Y`` ``(d, num_samples)``.

    Example:
        >>> A, Y = ica_data(0, dim=3, num_samples=4)
        >>> bool(np.allclose(A.T @ A, np.eye(3))), Y.shape
        (True, (3, 4))
    """
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    a = q * np.sign(np.diag(r))[None, :]
    z = rng.choice(np.array([-1.0, 1.0]), size=(dim, num_samples))
    return a, a @ z


def ica_problem(seed: int = ICA_SEED, *, dim: int = ICA_DIM, num_samples: int = ICA_SAMPLES,
                num_agents: int = ICA_AGENTS) -> Problem:
    """The §6.2 problem: samples split evenly (agent ``i`` gets columns ``i n_i .. (i+1) n_i - 1``).

    The domain is the unit ball (it contains the constraint sphere; constants
    are stated on it).

    Raises:
        ProblemError: ``num_samples`` not divisible by ``num_agents``.

    Example:
        >>> ica_problem().costs.samples.shape
        (5, 160, 10)
    """
    if num_samples % num_agents:
        raise ProblemError(f"num_samples={num_samples} must be divisible by num_agents={num_agents}")
    a, y = ica_data(seed, dim=dim, num_samples=num_samples)
    samples = y.T.reshape(num_agents, num_samples // num_agents, dim)
    return Problem(Ball(np.zeros(dim), 1.0), ICAQuartic(samples, a))


def ica_error(x: Any, mixing: np.ndarray) -> np.ndarray:
    """``min_{j, s = +-1} ||x - s a_j||`` over the last axis (sign- and permutation-invariant).

    ``||x - s a_j||^2 = ||x||^2 + 1 - 2 s x^T a_j`` for unit columns, so the
    minimum is ``sqrt(||x||^2 + 1 - 2 max_j |x^T a_j|)``.

    Example:
        >>> float(ica_error(np.array([0.0, -1.0]), np.eye(2)))
        0.0
    """
    x = np.asarray(x, dtype=float)
    c = np.abs(x @ np.asarray(mixing, dtype=float)).max(axis=-1)
    return np.sqrt(np.maximum((x * x).sum(-1) + 1.0 - 2.0 * c, 0.0))

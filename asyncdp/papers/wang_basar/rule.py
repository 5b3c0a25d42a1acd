"""Wang and Başar: decentralized nonconvex optimization with persistent Gaussian gradient noise.

Wang and Başar (Automatica 2023), Algorithm 2 (network form eq. 10). In iteration ``k`` (engine round
``t = k = 1, 2, ...``) every agent ``j``

* (a) computes ``g_j^k = grad f_j(x_j^k)``, draws ``n_j^k ~ N(0, Var I_d)`` once
  and sends ``v_j^k = x_j^k - lam^k (g_j^k + n_j^k)`` to every neighbour (the
  paper's ``v_ij^k = w_ij (...)``: the engine applies ``w_ij`` when it mixes);
* (b) sets ``x_i^{k+1} = sum_j w_ij v_j^k`` (its own message included), i.e.
  eq. (10) ``x^{k+1} = (W kron I_d)(x^k - lam^k (g^k + N^k))`` — adapt, then
  combine.

The trajectory entry of round ``t`` is ``x^{t+1}`` in the paper's indexing
(the state after ``t`` iterations); "the error at k = 3000" is entry 3000.

**Variance convention.** Algorithm 2 writes covariance ``sigma I`` and §6
"variance sigma", while Theorems 4–6 treat ``sigma^2`` as the variance. Here the parameter is
named ``noise_variance``: the
per-coordinate variance of ``n_j^k``, i.e. the experiments' sigma (std
``sqrt(noise_variance)``). The noise enters the message multiplied by
``lam^k``, so the declared Gaussian standard deviation of the *released*
message is ``lam^k sqrt(noise_variance)``.

**Step sizes** ``lam^k``: a named schedule (:data:`STEP_SCHEDULES`:
``"estimation"`` = 0.02 for ``k <= 500`` then ``1/k``; ``"ica"`` = 0.003 for
``k <= 100`` then ``3/(10k)``), a positive number (constant), a
:class:`TwoPhaseStep`, or any callable ``k -> lam^k``.

**Privacy as the paper states it** (Theorems 4–6, per iteration, never
composed by the paper). The mechanism at iteration ``k`` is
``M_i^k = x_i^k - lam^k g_i^k``; its claimed (L1) sensitivity is
``nu lam^k / n_i`` for one data sample (eq. 28, Thm 4), ``lam^k`` for the
gradient (eq. 30, Thm 5) and ``1`` for the variable (eq. 31, Thm 6). The
printed variance conditions give, at a chosen ``delta``,
``epsilon_k = c_k sqrt(2 ln(1.25/delta) / Var)`` with ``c_k = nu lam^k / n_i``,
``lam^k`` or ``1/lam^k`` respectively. Theorems 4 and 5 compare the message
sensitivity with the variance of ``n`` although the released noise is
``lam^k n`` (Theorem 6 does account for it): the accountant
(:mod:`asyncdp.papers.wang_basar.privacy`) shows the consequence. Eq. (31)'s
``1`` holds ``g_i^k`` fixed although ``g_i^k = grad f_i(x_i^k)`` moves with
``x_i^k``: the true (L2) sensitivity is ``1 + lam^k L`` (``L`` the gradients'
Lipschitz constant), which the accountant uses and the rule's claim (the
paper's) does not.

Example:
    >>> alg = WangBasar(noise_variance=0.5, dimension=2)
    >>> alg.step_size(500), alg.step_size(1000)
    (0.02, 0.001)
    >>> round(alg.noise(1, "v").scale, 6)
    0.014142
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Union

import numpy as np

from accounting.papers.wang_basar import WANG_BASAR_THEOREMS

from topology.validation import check_real

from ...errors import AlgorithmParameterError
from ...algorithms.base import Algorithm, Channel, NoiseDeclaration, State

__all__ = [
    "WangBasar",
    "TwoPhaseStep",
    "STEP_SCHEDULES",
    "PRIVACY_KINDS",
    "CONSTRAINTS",
    "THEOREMS",
]

THEOREMS = WANG_BASAR_THEOREMS
"""The theorem of Wang and Başar (Automatica 2023) behind each privacy kind (the one table, kept in
:mod:`accounting.papers.wang_basar`)."""
PRIVACY_KINDS = tuple(THEOREMS)
"""What is protected: a data sample (Thm 4, eq. 28), the gradient (Thm 5, eq. 30), the variable (Thm 6, eq. 31)."""
CLAIMS = ("consistent", "as-printed")
"""How :meth:`WangBasar.claimed_privacy` reads Theorems 4-6 (see :meth:`WangBasar.per_iteration_epsilon`)."""
CONSTRAINTS = ("none", "domain", "sphere")
"""Post-combine step: none (Algorithm 2 as printed), ``Proj_X`` onto the problem's domain, or ``x / ||x||``."""


def _name(value: Any) -> str:
    return f"wang-basar: {value}"


def _real(name: str, value: Any) -> float:
    return check_real(value, name, error=AlgorithmParameterError, where="wang-basar", finite=False)


@dataclass(frozen=True)
class TwoPhaseStep:
    """``lam^k = initial`` for ``k <= switch``, ``numerator / k`` after.

    The schedules of §6.1 and §6.2 of Wang and Başar (Automatica 2023).

    Args:
        initial: the constant phase's step, ``> 0``.
        switch: last iteration of the constant phase, ``>= 0``.
        numerator: ``c`` in ``c / k``, ``> 0``.

    Raises:
        AlgorithmParameterError: a value out of range.

    Example:
        >>> s = TwoPhaseStep(0.02, 500, 1.0)
        >>> s(500), s(501) == 1 / 501
        (0.02, True)
    """

    initial: float
    switch: int
    numerator: float

    def __post_init__(self) -> None:
        for name in ("initial", "numerator"):
            v = _real(name, getattr(self, name))
            if not (v > 0 and math.isfinite(v)):
                raise AlgorithmParameterError(_name(f"step {name} must be positive and finite, got {v!r}"))
        if isinstance(self.switch, bool) or not isinstance(self.switch, (int, np.integer)) or self.switch < 0:
            raise AlgorithmParameterError(_name(f"step switch must be an integer >= 0, got {self.switch!r}"))

    def __call__(self, k: int) -> float:
        return float(self.initial) if k <= self.switch else float(self.numerator) / k

    def to_dict(self) -> dict[str, Any]:
        return {"type": "two-phase", **asdict(self)}


STEP_SCHEDULES: dict[str, TwoPhaseStep] = {
    "estimation": TwoPhaseStep(0.02, 500, 1.0),
    "ica": TwoPhaseStep(0.003, 100, 0.3),
}
"""Named step schedules of the experiments of Wang and Başar (Automatica 2023): §6.1, 0.02 then 1/k;
§6.2, 0.003 then 3/(10k)."""

StepSpec = Union[str, float, TwoPhaseStep, Callable[[int], float]]  # noqa: UP007 (runtime alias)


@dataclass(frozen=True)
class WangBasar(Algorithm):
    """Algorithm 2 of Wang and Başar (Automatica 2023) as a per-agent rule (see the module docstring).

    Args:
        noise_variance: per-coordinate variance of ``n_j^k`` (>= 0; 0 gives the
            noise-free Algorithm 1).
        step: the step-size schedule (name, positive constant, :class:`TwoPhaseStep` or callable).
        privacy_kind: ``"sample"``, ``"gradient"`` (default) or ``"variable"``: which
            of Theorems 4–6 the claim and the claimed sensitivities follow.
        delta: the ``delta`` at which the per-iteration claim is stated, in ``(0, 1)``.
        constraint: ``"none"`` (default, as printed), ``"domain"`` (project onto
            the problem's domain after combining) or ``"sphere"`` (normalize after
            combining; the ICA experiment).
        claim: ``"consistent"`` (default: the theorems' Gaussian-mechanism
            condition applied to the released noise ``lam^k n``) or
            ``"as-printed"`` (Theorems 4-5 as printed, ``lam^k`` times too
            optimistic); see :meth:`per_iteration_epsilon`.
        sample_lipschitz: ``nu`` of eq. (28); filled by :meth:`bind` from the
            cost family (``sample_lipschitz``) when ``privacy_kind="sample"``.
        samples_per_agent: ``n_i`` of eq. (28); filled likewise.
        dimension: ``d``; filled by :meth:`bind`.

    Raises:
        AlgorithmParameterError: a parameter out of range (the message names it and its value).

    Example:
        >>> alg = WangBasar(noise_variance=0.5, step=0.02, delta=1e-5, claim="as-printed")
        >>> round(alg.per_iteration_epsilon(1), 4)
        0.137
    """

    noise_variance: float
    step: StepSpec = "estimation"
    privacy_kind: str = "gradient"
    delta: float = 1e-5
    constraint: str = "none"
    claim: str = "consistent"
    sample_lipschitz: float | None = None
    samples_per_agent: int | None = None
    dimension: int | None = None

    name: ClassVar[str] = "wang-basar"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("v", "gaussian"),)
    claim_level: ClassVar[str] = "iteration"
    """The paper's claim is per iteration (read by :func:`asyncdp.privacy.check_privacy`)."""

    def __post_init__(self) -> None:
        var = _real("noise_variance", self.noise_variance)
        if not (var >= 0 and math.isfinite(var)):
            raise AlgorithmParameterError(_name(f"noise_variance must be finite and >= 0, got {self.noise_variance!r}"))
        step = self.step
        if isinstance(step, str):
            if step not in STEP_SCHEDULES:
                raise AlgorithmParameterError(
                    _name(f"step must be one of {tuple(STEP_SCHEDULES)}, a positive number or a callable, got {step!r}"))
        elif isinstance(step, (int, float, np.integer, np.floating)) and not isinstance(step, bool):
            if not (float(step) > 0 and math.isfinite(float(step))):
                raise AlgorithmParameterError(_name(f"step must be positive and finite, got {step!r}"))
        elif not callable(step):
            raise AlgorithmParameterError(
                _name(f"step must be a schedule name, a positive number or a callable k -> lam^k, got {step!r}"))
        if self.privacy_kind not in PRIVACY_KINDS:
            raise AlgorithmParameterError(_name(f"privacy_kind must be one of {PRIVACY_KINDS}, got {self.privacy_kind!r}"))
        d = _real("delta", self.delta)
        if not 0 < d < 1:
            raise AlgorithmParameterError(_name(f"delta must be in (0, 1), got {self.delta!r}"))
        if self.constraint not in CONSTRAINTS:
            raise AlgorithmParameterError(_name(f"constraint must be one of {CONSTRAINTS}, got {self.constraint!r}"))
        if self.claim not in CLAIMS:
            raise AlgorithmParameterError(_name(f"claim must be one of {CLAIMS}, got {self.claim!r}"))
        if self.sample_lipschitz is not None:
            nu = _real("sample_lipschitz", self.sample_lipschitz)
            if not (nu >= 0 and math.isfinite(nu)):
                raise AlgorithmParameterError(_name(f"sample_lipschitz must be finite and >= 0, got {nu!r}"))
        for name in ("samples_per_agent", "dimension"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise AlgorithmParameterError(_name(f"{name} must be a positive integer, got {v!r}"))

    # -- binding ----------------------------------------------------------------
    def bind(self, problem: Any) -> WangBasar:
        """Fill ``d`` (and ``nu``, ``n_i`` for ``privacy_kind="sample"``) from ``problem``.

        Raises:
            AlgorithmParameterError: ``privacy_kind="sample"`` and the cost family
                declares no ``sample_lipschitz`` / ``samples_per_agent``.
        """
        changes: dict[str, Any] = {"dimension": int(problem.dim)}
        if self.privacy_kind == "sample":
            for name in ("sample_lipschitz", "samples_per_agent"):
                if getattr(self, name) is None:
                    value = getattr(problem.costs, name, None)
                    if value is None:
                        raise AlgorithmParameterError(_name(
                            f"privacy_kind='sample' (Theorem 4) needs {name}; {type(problem.costs).__name__} "
                            "declares none"))
                    changes[name] = value
        return replace(self, **changes)

    def _dim(self) -> int:
        if self.dimension is None:
            raise AlgorithmParameterError(_name("call bind(problem) first (the dimension d is unknown)"))
        return self.dimension

    # -- schedules ----------------------------------------------------------------
    def step_size(self, k: int) -> float:
        """``lam^k`` of iteration (round) ``k``.

        Raises:
            AlgorithmParameterError: a user schedule returned a non-positive or non-finite value.
        """
        s = self.step
        if isinstance(s, str):
            lam = STEP_SCHEDULES[s](k)
        elif isinstance(s, (int, float, np.integer, np.floating)):
            lam = float(s)
        else:
            lam = s(k)
            if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)) or not (
                    math.isfinite(lam) and lam > 0):
                raise AlgorithmParameterError(_name(f"step({k}) must be positive and finite, got {lam!r}"))
        return float(lam)

    def noise_scale(self, k: int) -> float:
        """Std of the released noise ``lam^k n_j^k`` per coordinate: ``lam^k sqrt(noise_variance)``."""
        return self.step_size(k) * math.sqrt(self.noise_variance)

    def claimed_sensitivity(self, k: int) -> float:
        """The paper's sensitivity of ``M_i^k = x_i^k - lam^k g_i^k``: eq. (28), (30) or (31) by ``privacy_kind``.

        Eq. (31) as printed (``1``) for ``"variable"``: a claim, not a bound (it holds the gradient fixed; the
        accountant's ``asyncdp.papers.wang_basar.privacy.sensitivity`` uses ``1 + lam^k L``).
        """
        lam = self.step_size(k)
        if self.privacy_kind == "gradient":
            return lam
        if self.privacy_kind == "variable":
            return 1.0
        if self.sample_lipschitz is None or self.samples_per_agent is None:
            raise AlgorithmParameterError(_name("privacy_kind='sample' needs sample_lipschitz and samples_per_agent; "
                                                "call bind(problem) first"))
        return float(self.sample_lipschitz) * lam / int(self.samples_per_agent)

    def per_iteration_epsilon(self, k: int) -> float:
        """The epsilon of iteration ``k`` that Theorems 4-6 (``privacy_kind``) give at ``delta``.

        ``claim="as-printed"`` inverts the printed variance conditions (Thm 4:
        ``2 nu^2 lam^2 L / (n_i^2 eps^2)``, Thm 5: ``2 lam^2 L / eps^2``, Thm 6:
        ``2 L / (lam^2 eps^2)``, ``L = ln(1.25/delta)``): ``eps_k = c_k sqrt(2 L / Var)``
        with ``c_k = nu lam/n_i``, ``lam`` or ``1/lam``. Theorems 4 and 5 forget
        that the released noise is ``lam^k n``, not ``n``, and so claim ``lam^k``
        times too little. ``claim="consistent"`` (default) applies the same
        Gaussian-mechanism condition to what is released: sensitivity ``c_k`` of
        the message over noise std ``lam^k sqrt(Var)``, i.e. ``eps_k = (c_k / lam^k)
        sqrt(2 L / Var)`` (identical to the printed Theorem 6). ``inf`` without
        noise. The theorems hold only for ``eps_k < 1``.
        """
        if self.noise_variance == 0:
            return math.inf
        root = math.sqrt(2.0 * math.log(1.25 / self.delta) / self.noise_variance)
        if self.privacy_kind == "variable":
            return root / self.step_size(k)
        if self.claim == "consistent":
            return self.claimed_sensitivity(k) / self.step_size(k) * root
        return self.claimed_sensitivity(k) * root

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The paper's **per-iteration** claim: ``(max_{k <= horizon} eps_k, delta)``.

        Every one of the ``horizon`` iterations is claimed ``(eps_k, delta)``-DP
        (:meth:`per_iteration_epsilon`); the paper composes nothing over
        iterations, so this is not a guarantee for the run. ``(inf, 0)`` when
        there is no noise or when some ``eps_k >= 1`` (Theorems 4–6 assume
        ``epsilon in (0, 1)``: then the paper claims nothing).
        """
        eps = max(self.per_iteration_epsilon(k) for k in range(1, int(horizon) + 1))
        if not eps < 1:
            return math.inf, 0.0
        return float(eps), float(self.delta)

    # -- the rule -------------------------------------------------------------------
    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        """Round ``t``: Gaussian, std ``lam^t sqrt(noise_variance)``, the paper's claimed sensitivity."""
        return NoiseDeclaration("gaussian", self.noise_scale(t), self._dim(), self.claimed_sensitivity(t))

    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any
                ) -> dict[str, np.ndarray]:
        """Algorithm 2 step (a): ``v_j = x_j - lam^t (grad f_j(x_j) + sqrt(Var) xi)``, ``xi`` standard normal."""
        x = state["x"]
        g = problem.costs.gradient(agents, x, round_index=t)
        return {"v": x - self.step_size(t) * (g + math.sqrt(self.noise_variance) * noise["v"])}

    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """Algorithm 2 step (b): ``x_i = sum_j w_ij v_j`` (mixed by the engine), then the optional constraint."""
        z = mixed["v"]
        if self.constraint == "domain":
            z = problem.domain.project(z)
        elif self.constraint == "sphere":
            norm = np.sqrt((z * z).sum(axis=-1, keepdims=True))
            z = z / np.where(norm > 0, norm, 1.0)
        return {"x": z}

    def decision(self, state: State) -> np.ndarray:
        return state["x"]

    def params(self) -> dict[str, Any]:
        """JSON-ready parameters (the step schedule rendered as a name, number, dict or repr)."""
        out = {k: getattr(self, k) for k in ("noise_variance", "privacy_kind", "delta", "constraint",
                                             "sample_lipschitz", "samples_per_agent", "dimension")}
        s = self.step
        if isinstance(s, (str, int, float)):
            out["step"] = s
        elif isinstance(s, TwoPhaseStep):
            out["step"] = s.to_dict()
        else:
            out["step"] = getattr(s, "__name__", repr(s))
        return out

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """Five agents on a ring (Metropolis weights = 1/3), the §6.1 problem, random ``x0`` in the box, 30 rounds."""
        import networkx as nx

        import topology

        from ...problems.nonconvex import estimation_problem
        from ...scenario import Scenario

        problem = estimation_problem()
        graph = topology.static(topology.metropolis(nx.cycle_graph(5)), directed=False,
                                description="ring of 5, Metropolis weights (1/3)")
        x0 = np.random.default_rng(seed).uniform(problem.domain.low, problem.domain.high, size=(5, 2))
        return Scenario(problem, graph, cls(noise_variance=0.5), horizon=30, seed=seed, x0=x0)

"""How much of a run's error the privacy noise explains: the run beside the same run without noise.

A private run's final error is often of the order of the domain (e.g. about
1.7 on ``[-1, 1]^2``), which looks like a broken algorithm but is the price of
a small epsilon. :func:`noise_effect` runs the scenario a second time with
:class:`~asyncdp.noise.ZeroNoise`: same seed, so the same link losses,
latencies and clocks (the schedule is drawn from streams the noise never
touches), and every release equal to its noise-free value. The difference
between the two runs is the noise's doing alone, and :meth:`NoiseEffect.explain`
says in a few lines which of the two dominates.

Example:
    >>> from asyncdp import Huang2015
    >>> effect = noise_effect(Huang2015.example_scenario(seed=1))
    >>> effect.verdict in ("noise-dominated", "mixed", "not noise-dominated")
    True
    >>> effect.optimality_error >= 0 and effect.noise_free_optimality_error >= 0
    True
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..noise import ZeroNoise

__all__ = ["NoiseEffect", "noise_effect", "DOMINANT_FACTOR", "MIXED_FACTOR"]

DOMINANT_FACTOR = 10.0
"""Noise-dominated: the run's error is at least this multiple of the noise-free run's (the noise explains >= 90%)."""

WIDTH = 100
"""Line width of :meth:`NoiseEffect.explain`'s conclusion."""

MIXED_FACTOR = 2.0
"""Below this multiple the noise explains less than half of the error (the algorithm's own bias dominates)."""


@dataclass(frozen=True)
class NoiseEffect:
    """A run's final errors beside those of the same run without privacy noise.

    Attributes:
        optimality_error, consensus_error: the private run's
            ``||xbar(T) - x*||^2`` and largest distance between two agents at ``T``.
        noise_free_optimality_error, noise_free_consensus_error: the same for
            the run with :class:`~asyncdp.noise.ZeroNoise`.
        diameter: the domain's diameter (``inf`` for an unbounded domain).
        epsilon, delta: the algorithm's claim.
        horizon: ``T``.
    """

    optimality_error: float
    consensus_error: float
    noise_free_optimality_error: float
    noise_free_consensus_error: float
    diameter: float
    epsilon: float
    delta: float
    horizon: int

    @property
    def ratio(self) -> float:
        """The private run's optimality error over the noise-free run's (``inf`` when the latter is 0)."""
        if self.noise_free_optimality_error == 0.0:  # both 0: the noise changed nothing
            return math.inf if self.optimality_error > 0.0 else 1.0
        return self.optimality_error / self.noise_free_optimality_error

    @property
    def verdict(self) -> str:
        """``"noise-dominated"`` (ratio >= ``DOMINANT_FACTOR``), ``"mixed"`` or ``"not noise-dominated"``."""
        if self.ratio >= DOMINANT_FACTOR:
            return "noise-dominated"
        return "mixed" if self.ratio >= MIXED_FACTOR else "not noise-dominated"

    def explain(self) -> str:
        """A few lines a newcomer can read: the two runs' errors and what they mean.

        Example:
            >>> effect = NoiseEffect(1.7, 1.9, 0.004, 1e-6, 2.83, 1.0, 0.0, 60)
            >>> print(effect.explain().splitlines()[2])
            -> noise-dominated: 425x the noise-free error. The privacy noise, not the algorithm, sets the
        """
        times = f"{self.ratio:.3g}x" if self.ratio < 1e4 else "over 10^4 times"
        if math.isfinite(self.epsilon):
            claim = f"epsilon = {self.epsilon:g}" + (f", delta = {self.delta:g}" if self.delta > 0 else "")
        else:
            claim = "this noise (the algorithm claims no finite epsilon)"
        size = f" (domain diameter {self.diameter:.3g})" if math.isfinite(self.diameter) else ""
        lines = [
            f"accuracy at T = {self.horizon}: ||xbar - x*||^2 = {self.optimality_error:.3g}, consensus error "
            f"{self.consensus_error:.3g}{size}",
            f"the same run without privacy noise (same seed, links and clocks): {self.noise_free_optimality_error:.3g}"
            f" and {self.noise_free_consensus_error:.3g}",
        ]
        if self.verdict == "noise-dominated":
            conclusion = (f"-> noise-dominated: {times} the noise-free error. The privacy noise, not the "
                          f"algorithm, sets the accuracy here: the price of {claim} at this horizon and noise "
                          "schedule. A larger epsilon, a longer horizon or a faster-decaying noise schedule trades "
                          "privacy for accuracy; errors vary from seed to seed (the batch engine shows their spread).")
        elif self.verdict == "mixed":
            conclusion = (f"-> mixed: {times} the noise-free error; the noise ({claim}) and the "
                          "algorithm's own convergence at this horizon both matter.")
        else:
            conclusion = (f"-> not noise-dominated ({times} the noise-free error): the error is mostly the "
                          "algorithm's own (step sizes, horizon); a larger privacy budget would not help much.")
        lines += textwrap.wrap(conclusion, width=WIDTH, subsequent_indent="   ")
        return "\n".join(lines)


def _final(curve: Any) -> float:
    return float(np.asarray(curve)[-1])


def noise_effect(scenario: Any, result: Any = None) -> NoiseEffect:
    """Run ``scenario`` with and without its privacy noise and compare the final errors.

    Args:
        scenario: a :class:`~asyncdp.scenario.Scenario` (SimPy engine).
        result: the scenario's own run if already computed (it must be
            ``scenario.run()``'s :class:`~asyncdp.result.Result`); run here otherwise.

    Returns:
        A :class:`NoiseEffect`.

    Raises:
        ScenarioError: ``result`` is not a single run of ``scenario`` (other
            horizon or agents), or the scenario's problem has no finite optimum.

    Example:
        >>> from asyncdp import Huang2015
        >>> sc = Huang2015.example_scenario(seed=1)
        >>> noise_effect(sc).horizon == sc.horizon
        True
    """
    if result is None:
        result = scenario.run()
    if not hasattr(result, "trajectory") or np.ndim(result.trajectory) != 3:
        raise ScenarioError(f"result must be a single run's Result of the scenario, got {type(result).__name__}")
    expected = (scenario.horizon + 1, scenario.problem.num_agents, scenario.problem.dim)
    if result.trajectory.shape != expected:
        raise ScenarioError(f"result has trajectory shape {result.trajectory.shape}, but the scenario's runs have "
                            f"{expected}: pass the scenario's own result")
    optimum = np.asarray(result.optimum, dtype=float)
    if optimum.size == 0 or not np.all(np.isfinite(optimum)):
        raise ScenarioError("the scenario's problem has no finite optimum x*; noise_effect compares "
                            "||xbar(T) - x*||^2")
    free = scenario.replace(noise=ZeroNoise()).run()
    return NoiseEffect(
        optimality_error=_final(result.optimality_error()),
        consensus_error=_final(result.consensus_error()),
        noise_free_optimality_error=_final(free.optimality_error()),
        noise_free_consensus_error=_final(free.consensus_error()),
        diameter=float(scenario.problem.domain.diameter),
        epsilon=float(result.claimed_epsilon),
        delta=float(result.claimed_delta),
        horizon=int(scenario.horizon),
    )

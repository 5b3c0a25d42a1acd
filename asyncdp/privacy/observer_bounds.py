"""Bounds on any observer's loss, and the exact epsilon of a Gaussian view.

``eavesdropper_renyi_bound``: the composition of every noisy release of one agent with the paper lemma's
sensitivity (a bound on every schedule, by data processing); ``affine_renyi_bound``: the bound every view of a
rule verified affine obeys, ``alpha Delta^2 / (2 s_1^2)``, with ``above_affine_bound`` and
``rounded_to_bound`` for computed values past it; ``epsilon_from_mu``: the exact epsilon at ``delta`` of a
Gaussian view.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> sc = Muffliato.example_scenario()
    >>> eavesdropper_renyi_bound(sc, 2.0) == affine_renyi_bound(sc, 2.0)
    True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ScenarioError
from .linear_model import _only_channel

__all__ = ["epsilon_from_mu", "eavesdropper_renyi_bound", "affine_renyi_bound", "above_affine_bound",
           "rounded_to_bound"]


def epsilon_from_mu(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of the Gaussian mechanism with parameter ``mu`` (bisection on the
    exact profile :func:`accounting.network.delta_from_mu`).

    Example:
        >>> round(epsilon_from_mu(1.0, 0.5), 6) >= 0.0
        True
    """
    from accounting.network.gaussian_views import _epsilon_by_bisection

    if not math.isfinite(mu):
        return math.inf
    if mu == 0:
        return 0.0
    return _epsilon_by_bisection(mu, delta)


def _data_sensitivity(scenario: Any) -> float:
    d = float(scenario.problem.domain.diameter)
    if not (d > 0 and math.isfinite(d)):
        raise ScenarioError(f"the private values' domain has diameter {d!r}: the pairwise loss needs a finite one")
    return d


def affine_renyi_bound(scenario: Any, alpha: float) -> float:
    """A bound on any observer's Renyi divergence, on every schedule, for a rule verified affine in the noise:
    ``alpha Delta^2 / (2 s_1^2)``, ``Delta`` the private values' domain diameter, ``s_1`` the round-1 noise scale.

    It rests on the structure :func:`~asyncdp.privacy.affine_check.verify_affine` checks on each run, not on the paper's lemma: the round-1
    messages are the private values plus Gaussian noise of scale ``s_1`` (the only release whose sensitivity is
    not 0), and every later message is a combination of released messages plus fresh noise (sensitivity 0
    given them). The eavesdropper's view composes exactly that; every observer's is a function of it.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> affine_renyi_bound(Muffliato.example_scenario(), 2.0)
        1.0
    """
    alg = scenario.algorithm.bind(scenario.problem)
    s1 = float(alg.noise(1, _only_channel(alg)).scale)
    diameter = _data_sensitivity(scenario)
    return math.inf if s1 == 0 else float(alpha * diameter**2 / (2.0 * s1**2))


def above_affine_bound(value: float, bound: float) -> bool:
    """Whether a computed loss lies above :func:`affine_renyi_bound` by more than rounding: no view of the verified
    structure leaks that much, so the value is a numerical artifact (e.g. a mean shift outside the numerical range of
    a view with directions at rounding level), neither exact nor a lower estimate of the truth.

    Args:
        value: the computed Renyi divergence.
        bound: :func:`affine_renyi_bound` at the same order.

    Returns:
        ``True`` above ``bound (1 + 1e-9)`` plus the witness margin
        (:func:`accounting.network.muffliato.witness_margin`).

    Example:
        >>> above_affine_bound(math.inf, 1.0), above_affine_bound(1.0 + 1e-12, 1.0), above_affine_bound(0.5, 1.0)
        (True, False, False)
    """
    from accounting.network.muffliato import witness_margin

    return value > bound * (1 + 1e-9) + witness_margin(bound)


def _unverified_lemma(scenario: Any) -> str | None:
    """The sensitivity lemma :func:`eavesdropper_renyi_bound` composes, in words, when it is not a published paper's
    lemma of this very rule (a user's own, or one a subclass of a paper's rule inherits); else ``None``."""
    from ..papers import find_registered

    found = find_registered(scenario.algorithm)
    if found is None or found.published_for(scenario.algorithm):
        return None
    if found.published:
        return (f"the lemma of paper {found.paper.name!r} inherited by the subclass "
                f"{type(scenario.algorithm).__name__} of its rule")
    return f"the user's own lemma of paper record {found.paper.name!r}"


def _unicast_copies(scenario: Any) -> np.ndarray:
    """``copies[t - 1]``: the most copies one agent sends in round ``t`` in unicast mode (one per receiver, each
    with its own noise); ``inf`` when an agent without a receiver in round ``t`` sends in a later round (its state
    keeps its noise-free round-``t`` message, :mod:`asyncdp.engine.simpy_engine`, and its later messages carry it:
    no release's sensitivity accounts for that). An agent that sends nothing from round ``t`` on releases nothing
    more, whatever its state holds."""
    from ..papers.record import out_neighbour_counts

    counts = [out_neighbour_counts(scenario.topology.weights(t)) for t in range(1, scenario.horizon + 1)]
    out = np.zeros(scenario.horizon)
    sends_later = np.zeros(counts[0].shape, dtype=bool) if counts else np.zeros(0, dtype=bool)
    for t in range(scenario.horizon, 0, -1):
        links = counts[t - 1]
        out[t - 1] = math.inf if (sends_later & (links == 0)).any() else float(links.max(initial=0))
        sends_later |= links > 0
    return out


def eavesdropper_renyi_bound(scenario: Any, alpha: float) -> float:
    """An upper bound on any observer's Renyi divergence valid on *every* schedule: the composition of every
    noisy release of one agent, each with the paper lemma's sensitivity (data processing: an observer sees
    a function of all releases).

    In unicast mode every receiver gets its own noisy copy, and every copy is composed (the most copies one
    agent sends in the round); a round of positive sensitivity in which some agent has no receiver gives ``inf``
    if that agent sends later (its noise-free own message entered its state, beyond the lemma's releases).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> eavesdropper_renyi_bound(Muffliato.example_scenario(), 2.0)
        1.0
    """
    from .sensitivity import independent_sensitivity

    alg = scenario.algorithm.bind(scenario.problem)
    sens = independent_sensitivity(scenario)
    copies = _unicast_copies(scenario) if getattr(scenario, "mode", "broadcast") == "unicast" else None
    total = 0.0
    for c, arr in sens.items():
        for t, s in enumerate(np.asarray(arr), start=1):
            scale = alg.noise(t, c).scale
            released = 1.0 if copies is None else float(copies[t - 1])  # copies of one agent's release
            if s == 0 or released == 0:
                continue
            if scale == 0 or math.isinf(released):
                return math.inf
            total += float(s / scale) ** 2 * released
    return float(alpha * total / 2.0)


def rounded_to_bound(ds: list[float], bound: float, rtol: float = 1e-9) -> list[float]:
    """Per-schedule divergences with rounding above ``bound`` (at most ``rtol`` relative) set to ``bound``.

    A value further above the bound is kept (and :func:`accounting.network.combine_renyi` rejects it: the
    bound would not hold on every schedule, an error, never hidden).

    Example:
        >>> rounded_to_bound([1.0 + 1e-12, 0.5, 2.0], 1.0)
        [1.0, 0.5, 2.0]
    """
    return [bound if bound < d <= bound * (1 + rtol) else d for d in ds]

"""The composition report: every method, network-wide and per agent, at one total delta (:func:`compose`).

Also the two scopes, :func:`per_agent` and :func:`network_wide`, which apply
any composition function to each agent's releases or to all of them.

Example:
    >>> led = Ledger([Release(a, 1, 1.0, "laplace", 2.0, 1) for a in (0, 1)])
    >>> compose(led, 1.0, methods=("basic",)).to_dict()["network_wide"]
    {'basic': 1.0}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnknownMethodError
from ..ledger import Ledger, Release  # noqa: F401  (Release: docstring examples)
from .basic import advanced_composition, basic_composition
from .inputs import Sensitivity, _check_delta, _ratios
from .pld import pld_epsilon
from .rdp import rdp_epsilon

__all__ = ["per_agent", "network_wide", "CompositionReport", "compose", "METHODS"]

METHODS: tuple[str, ...] = ("basic", "advanced", "rdp", "pld")
"""Method names understood by :func:`compose`."""

def per_agent(ledger: Ledger, fn: Callable[..., Any], **kwargs: Any) -> dict[int, Any]:
    """Apply a composition function to each agent's releases separately.

    The right scope when a private datum influences only its owner's releases.

    Args:
        ledger: the releases.
        fn: e.g. :func:`pld_epsilon`; called as ``fn(ledger.for_agent(a), **kwargs)``.
        **kwargs: passed to ``fn`` (``sensitivity=...``, ``delta=...``).

    Returns:
        ``{agent: value}`` for every agent with a release.

    Example:
        >>> led = Ledger([Release(a, 1, 1.0, "laplace", 2.0, 1) for a in (0, 1)])
        >>> per_agent(led, basic_composition, sensitivity=1.0)
        {0: 0.5, 1: 0.5}
    """
    return {a: fn(ledger.for_agent(a), **kwargs) for a in ledger.agents}


def network_wide(ledger: Ledger, fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Apply a composition function to the releases of all agents together.

    The guarantee when one private datum can influence every agent's releases
    (through the consensus dynamics); never smaller than the per-agent values.

    Args:
        ledger: the releases.
        fn: e.g. :func:`pld_epsilon`.
        **kwargs: passed to ``fn``.

    Returns:
        ``fn(ledger, **kwargs)``.

    Example:
        >>> led = Ledger([Release(a, 1, 1.0, "laplace", 2.0, 1) for a in (0, 1)])
        >>> network_wide(led, basic_composition, sensitivity=1.0)
        1.0
    """
    return fn(ledger, **kwargs)


def _json_float(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass
class CompositionReport:
    """Epsilons per composition method, network-wide and per agent, all at total delta ``delta``.

    Attributes:
        delta: the total delta every epsilon is valid at.
        methods: the methods computed.
        releases: releases in the ledger.
        charged: releases with nonzero sensitivity (the others are free).
        network_wide: ``{method: epsilon}`` for all agents' releases composed.
        per_agent: ``{agent: {method: epsilon}}`` or ``None``.
        per_agent_max: ``{method: max over agents}`` or ``None``.
    """

    delta: float
    methods: tuple[str, ...]
    releases: int
    charged: int
    network_wide: dict[str, float]
    per_agent: dict[int, dict[str, float]] | None = None
    per_agent_max: dict[str, float] | None = field(default=None)

    @property
    def best(self) -> float:
        """The smallest network-wide epsilon (all methods are valid upper bounds at ``delta``)."""
        return min(self.network_wide.values()) if self.network_wide else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: agent keys become strings, infinite epsilons become ``None``."""
        def conv(d: Mapping[str, float]) -> dict[str, float | None]:
            return {k: _json_float(v) for k, v in d.items()}

        return {
            "delta": self.delta,
            "methods": list(self.methods),
            "releases": self.releases,
            "charged": self.charged,
            "network_wide": conv(self.network_wide),
            "best_network_wide": _json_float(self.best),
            "per_agent": None if self.per_agent is None else {str(a): conv(v) for a, v in self.per_agent.items()},
            "per_agent_max": None if self.per_agent_max is None else conv(self.per_agent_max),
        }


def _method_epsilons(ledger: Ledger, sensitivity: Sensitivity, delta: float, methods: Sequence[str],
                     value_discretization_interval: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in methods:
        if m == "basic":
            out[m] = basic_composition(ledger, sensitivity, delta)
        elif m == "advanced":
            _, gau = _ratios(ledger, sensitivity)
            if gau:  # half the budget inside the Gaussian releases, half as the theorem's slack
                out[m] = advanced_composition(ledger, sensitivity, delta / 2, delta / 2)
            else:
                out[m] = advanced_composition(ledger, sensitivity, 0.0, delta)
        elif m == "rdp":
            out[m] = rdp_epsilon(ledger, sensitivity, delta)
        elif m == "pld":
            out[m] = pld_epsilon(ledger, sensitivity, delta, value_discretization_interval)
    return out


def compose(ledger: Ledger, sensitivity: Sensitivity, delta: float = 1e-6,
            methods: Sequence[str] = METHODS, per_agent: bool = True,
            value_discretization_interval: float = 1e-4) -> CompositionReport:
    """All requested composition methods, network-wide and per agent, at one total delta.

    Every epsilon is valid at total delta ``delta``: basic shares it among the
    Gaussian releases; advanced uses it as the theorem's slack for a pure
    (Laplace-only) ledger and splits it half/half between the Gaussian
    releases and the slack otherwise; RDP and PLD use it directly.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: total delta in (0, 1).
        methods: subset of :data:`METHODS`.
        per_agent: also compose each agent's releases separately.
        value_discretization_interval: PLD loss grid.

    Returns:
        a :class:`CompositionReport`.

    Raises:
        PrivacyParameterError: bad delta or sensitivities.
        UnknownMethodError: a method not in :data:`METHODS`.

    Example:
        >>> led = Ledger([Release(a, t, float(t), "laplace", 50.0, 1) for a in (0, 1) for t in range(1, 101)])
        >>> rep = compose(led, 1.0, methods=("basic", "pld"))
        >>> rep.network_wide["basic"], rep.per_agent_max["basic"]
        (4.0, 2.0)
    """
    d = _check_delta("delta", delta)
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise UnknownMethodError(f"unknown composition method(s) {unknown or methods!r}; known: {', '.join(METHODS)}")
    lap, gau = _ratios(ledger, sensitivity)  # validates every sensitivity once, up front
    charged = sum(lap.values()) + sum(gau.values())
    nw = _method_epsilons(ledger, sensitivity, d, methods, value_discretization_interval)
    pa: dict[int, dict[str, float]] | None = None
    pa_max: dict[str, float] | None = None
    if per_agent:
        pa = {a: _method_epsilons(ledger.for_agent(a), sensitivity, d, methods, value_discretization_interval)
              for a in ledger.agents}
        pa_max = {m: max((v[m] for v in pa.values()), default=0.0) for m in methods}
    return CompositionReport(delta=d, methods=methods, releases=len(ledger), charged=charged,
                             network_wide=nw, per_agent=pa, per_agent_max=pa_max)

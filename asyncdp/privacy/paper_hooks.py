"""Where the privacy check meets each paper's own code: the adapter of an algorithm and its theorem check.

These two lookups are the only places that find a paper's adapter
(:mod:`asyncdp.privacy.adapters`) from an algorithm's name.
"""

from __future__ import annotations

import importlib
from typing import Any

from accounting import theorems

from ..algorithms.base import Algorithm
from ..scenario import Scenario

__all__: list[str] = []


def _adapter(algorithm_name: str) -> Any:
    """The module ``asyncdp.privacy.adapters.<name>`` (``-`` read as ``_``), or None."""
    try:
        return importlib.import_module(f"asyncdp.privacy.adapters.{algorithm_name.replace('-', '_')}")
    except ModuleNotFoundError:
        return None


def _theorem_verdict(scenario: Scenario, alg: Algorithm, eps_ledger: float, delta_ledger: float) -> str:
    """The paper's claim (``accounting.theorems``) checked against the accountant's epsilon.

    An adapter may define ``theorem_verdict(scenario) -> str`` (its paper's
    own argument recomputed independently); otherwise none is available.
    """
    if alg.name == "huang2015":
        claim = theorems.huang2015_claim(alg.epsilon, c=alg.c, q=alg.q, p=alg.p)
        return theorems.verify(claim, eps_ledger, delta_ledger).message
    adapter = _adapter(alg.name)
    if adapter is not None and hasattr(adapter, "theorem_verdict"):
        return str(adapter.theorem_verdict(scenario))
    return f"no theorem check for {alg.name!r} yet"

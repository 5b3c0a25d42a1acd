"""``privacy check --observer``: a black-box bound on the observer's whole view against a per-iteration claim.

The black-box audit certifies a lower bound on the epsilon of the observer's *whole* view (every round). A claim
per iteration (``claim_level = "iteration"``) bounds one iteration's part, a function of that view: a whole view
above it does not refute it (the exact branch already says "no verdict" then). The section printed "(refutes the
claim against this observer)" and ``--json`` recorded ``claim_holds: false`` for it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from asyncdp.cli.privacy import _observer_section
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy import observers
from asyncdp.privacy.observer_views import parse_observer
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.problem import Problem


@dataclass(frozen=True)
class _Opaque(Muffliato):
    """Muffliato without its linear Gaussian declaration (the observer gets the eavesdropper's bound and a
    black-box audit), claiming ``(1, 1e-6)`` per run or per iteration (``level``)."""

    affine_in_noise: ClassVar[bool] = False
    level: str = "run"

    @property
    def claim_level(self) -> str:  # type: ignore[override]
        return self.level

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 1.0, 1e-6


def _section(level: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    # the audit's bound, fixed: the whole view is certified above the claim's epsilon 1
    monkeypatch.setattr(observers, "observer_blackbox",
                        lambda *a, **k: SimpleNamespace(epsilon_lower_bound=3.0, violation=True))
    scenario = replace(Muffliato.example_scenario(), algorithm=_Opaque(sigma=1.0, level=level))
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
    record: dict = {}
    text = _observer_section(scenario, adjacent, parse_observer("node:1"),
                             argparse.Namespace(seed=0, delta=1e-6, runs=10, confidence=0.95), record)
    assert "upper bound only" in text, text
    return {"text": text, **record}


def test_a_whole_view_above_a_per_iteration_claim_is_no_verdict(monkeypatch):
    out = _section("iteration", monkeypatch)
    assert out["claim_holds"] is None
    assert "refutes" not in out["text"] and "no verdict" in out["text"], out["text"]


def test_a_whole_view_above_a_per_run_claim_refutes_it(monkeypatch):
    out = _section("run", monkeypatch)
    assert out["claim_holds"] is False and "refutes the claim against this observer" in out["text"]

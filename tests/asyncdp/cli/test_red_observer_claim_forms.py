"""``privacy check --observer node:V`` judges a claim against an exact Gaussian observer view in the claim's own form.

The observer line compared the view's exact epsilon at one delta with the claim's epsilon. For a pure claim that
delta was ``--delta`` (1e-6), not 0: a Gaussian view (unbounded privacy loss) "held" a pure ``(6, 0)`` claim. For a
zCDP claim it was the claim's ``(epsilon, delta)`` conversion: a view with ``rho = mu^2 / 2 = 0.5`` "held" a
0.45-zCDP claim, because the conversion of 0.45-zCDP at 1e-6 (4.92) exceeds the exact Gaussian epsilon of
``mu = 1`` (4.89). The truth is exact: the Muffliato example (a path of 6 nodes, sigma 1, agent 0's value moved
from ``v`` to ``1 - v``) gives observer ``node:1`` a Gaussian view with ``D_2 = 1`` (``mu = 1``), so the claim
holds only for ``rho >= 0.5``, never as a pure claim, and as Rényi ``(3, e)`` only for ``e >= 1.5``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pytest

from accounting.claim_forms import RenyiDP, ZeroConcentratedDP
from asyncdp.cli import privacy as cli_privacy
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.privacy.observer_views import parse_observer


@dataclass(frozen=True)
class _Claims(Muffliato):
    claim: object = None

    def claimed_form(self, horizon):
        return self.claim


def _pair(claim):
    vals = np.random.default_rng(0).uniform(0.0, 1.0, size=(6, 1))
    moved = vals.copy()
    moved[0, 0] = 1.0 - moved[0, 0]
    scenario = Muffliato.example_scenario().replace(
        algorithm=_Claims(sigma=1.0, claim=claim), problem=Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(vals)))
    return scenario, scenario.replace(problem=Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(moved)))


def _line(claim) -> str:
    scenario, adjacent = _pair(claim)
    args = argparse.Namespace(seed=0, delta=1e-6, runs=50, confidence=0.95)
    text = cli_privacy._observer_section(scenario, adjacent, parse_observer("node:1", 6), args)
    assert "D_alpha=1 " in text  # the exact view: mu = 1
    (line,) = [ln for ln in text.splitlines() if "against this observer" in ln]
    return line


@pytest.mark.parametrize("claim, expected", [
    (ZeroConcentratedDP(0.45), "fails"),  # its conversion at 1e-6 (4.92) is above the view's exact 4.89
    (ZeroConcentratedDP(0.5), "holds"),
    (RenyiDP(3.0, 1.4), "fails"),
    (RenyiDP(3.0, 1.5), "holds"),
    ((6.0, 0.0), "fails"),  # pure: a Gaussian view never meets it; its epsilon at 1e-6 (4.89) is below 6
    ((4.9, 1e-6), "holds"),
    ((4.85, 1e-6), "fails"),
], ids=["zcdp-0.45", "zcdp-0.5", "renyi-1.4", "renyi-1.5", "pure-6", "approx-4.9", "approx-4.85"])
def test_observer_line_judges_the_claim_in_its_form(claim, expected):
    line = _line(claim)
    assert f") {expected} against this observer" in line, line


def test_the_json_report_carries_the_observer_findings_the_table_prints(tmp_path, capsys):
    """``--json`` wrote the pairwise claim only: the observer lines (figures, whether the claim holds against the
    observer) were printed but absent from the JSON report."""
    import json

    from asyncdp.cli import main

    script = tmp_path / "pair.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})\n"
                      "from test_red_observer_claim_forms import _pair\n"
                      "from accounting.claim_forms import ZeroConcentratedDP\n"
                      "scenario, adjacent = _pair(ZeroConcentratedDP(0.45))\n")
    out = tmp_path / "r.json"
    main(["privacy", "check", str(script), "--runs", "40", "--search-examples", "0", "--observer", "node:1",
          "--json", str(out)])
    text = capsys.readouterr().out
    data = json.loads(out.read_text())["observer"]
    assert "fails against this observer" in text
    assert data["claim_holds"] is False and data["changed_agent"] == 0 and data["observer"] == "node:1"
    assert data["rows"][0]["renyi"] == pytest.approx(1.0) and data["rows"][0]["kind"] == "exact"
    assert any("fails against this observer" in line for line in data["findings"])

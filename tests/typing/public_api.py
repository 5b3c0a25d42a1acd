"""Typed uses of the public API, for mypy (``[tool.mypy]`` in pyproject.toml).

mypy checks these calls against the annotated signatures of the public names
(``asyncdp``'s own modules are followed silently: their internals are not
reported, their signatures are used). Nothing here runs at import; the
functions are not tests.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

import accounting
import topology
from asyncdp import (
    Async,
    Deadline,
    Huang2015,
    LinkModel,
    Links,
    LogNormalLatency,
    Result,
    Scenario,
    rendezvous_problem,
    run_batch,
)
from asyncdp.papers import assumption_set


def quickstart_scenario() -> Scenario:
    problem = rendezvous_problem([[0.8, 0.2], [-0.5, 0.9], [0.1, -0.7], [-0.9, -0.9]])
    graphs: topology.GraphSequence = topology.from_networkx([nx.cycle_graph(4)], rule="metropolis", periodic=True)
    return Scenario(
        problem,
        graphs,
        Huang2015(epsilon=1.0, c=0.3, q=0.9, p=0.95),
        timing=Deadline(period=1.0, deadline=0.8, missing="renormalize"),
        links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)),
        horizon=60,
        seed=7,
    )


def run_and_account(scenario: Scenario) -> float:
    result: Result = scenario.run()
    ledger: accounting.Ledger = result.ledger
    report = accounting.compose(ledger, 0.5, delta=1e-6)
    return float(report.network_wide["basic"])


def async_variant(scenario: Scenario) -> Scenario:
    return scenario.replace(timing=Async(rate=1.0))


def audit(sequence: topology.GraphSequence) -> bool:
    report: topology.AuditReport = topology.audit(sequence, assumption_set("huang2015"))
    return bool(report.all_hold)


def batch(scenario: Scenario) -> np.ndarray:
    return np.asarray(run_batch(scenario, runs=4).final)

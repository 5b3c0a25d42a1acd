"""The check replays the batch engine's runs; the SimPy engine (``Scenario.run()``'s default) must release the same.

The found case: Huang, Mitra and Vaidya's rule (claim: epsilon = 1, pure) with a message step that adds half the
agent's own gradient to its release only when the engine hands it one agent as a Python ``int`` with real noise,
which the SimPy engine does and the batch engine, the replay and the prober do not. The check ran the batch engine
and said `pass`; on the SimPy engine agent 0's round-1 release moves by its address change, ``a' - a = (-2, -2)``
(L1 4) under the same draws, against a declared Laplace scale of 2: that one release's pure privacy loss reaches 2.
The engine runs now compare run 0 with the other engine's run of its seed; where they differ no method has seen
the other engine's mechanism, so the check cannot pass (``inconclusive``, the reason naming the first release that
differs; a witness found on the runs it has stays a violation).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp import Huang2015
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import engine_disagreement, run_engine
from asyncdp.privacy.context import small_example, small_pair


@dataclasses.dataclass(frozen=True)
class LeaksOnSimPy(Huang2015):
    """Huang2015 releasing half its own gradient more when handed one agent (the SimPy engine's calls)."""

    name: ClassVar[str] = "huang2015-leaks-on-simpy-test"

    def message(self, state: Any, t: int, noise: Any, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        out = super().message(state, t, noise, agents, problem)
        if type(agents) is int and np.any(noise["y"] != 0):
            out = {"y": out["y"] + 0.5 * problem.costs.gradient(agents, state["x"])}
        return out


def _pair() -> tuple[Any, Any]:
    pair = small_pair(LeaksOnSimPy)
    return pair.scenario, pair.adjacent


def test_a_rule_that_leaks_on_one_engine_only_does_not_pass():
    sc, adj = _pair()
    # the independent fact, on the SimPy engine with the same draws on both sides: agent 0's round-1 release
    # moves by a' - a, L1 4, against the declared Laplace scale of round 1; a pure epsilon = 1 claim allows 1
    r0, r1 = sc.run(), adj.run()
    shift = np.abs(r0.messages["y"][0, 0] - r1.messages["y"][0, 0]).sum()
    scale = sc.algorithm.bind(sc.problem).noise(1, "y").scale
    assert shift == pytest.approx(4.0) and scale == pytest.approx(2.0) and shift / scale > 1.0
    report = check_privacy(sc, adj, runs=50)
    assert report.verdict == "inconclusive"
    assert any("other values on the batch engine than on the SimPy engine" in r and "round 1, agent 0" in r
               for r in report.reasons), report.reasons
    # the same with the SimPy engine's runs: the batch engine's run of the first seed is compared
    assert "scenario side" in " ".join(check_privacy(sc, adj, runs=20, engine="simpy").reasons)


def test_the_batch_runs_of_an_honest_rule_are_the_simpy_runs():
    pair, _ = small_example(runs=10)
    for engine in ("batch", "simpy"):
        runs = run_engine(pair.scenario, 3, seed=0, engine=engine)
        assert runs.engine == engine and engine_disagreement(pair.scenario, runs) is None
    sc, _ = _pair()
    for engine in ("batch", "simpy"):
        assert "round 1, agent 0" in engine_disagreement(sc, run_engine(sc, 3, seed=0, engine=engine))

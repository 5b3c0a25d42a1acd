"""Red team: an infinite lower estimate is no witness of a pairwise claim, also when no bound holds on every view.

A researcher's Muffliato variant noises in round 2 instead of round 1 (round 1 is the identity: no message is
delivered; ``y(2) = x + sigma xi(2)`` is the first exchange), on the faint-link path of
tests/asyncdp/privacy/test_red_faint_link.py (``W[0, 1] = 1e-17``). Node 2 knows ``y_2(2)`` and receives ``y_1(2)``
and ``y_1(3) = 1e-17 y_0(2) + (0.5 - 1e-17) y_1(2) + 0.5 y_2(2)``: in exact arithmetic it solves for ``y_0(2)``, a
loss of ``alpha Delta^2 / (2 sigma^2) = 1`` from agent 0, finite. The direction carrying it has singular value 1e-17,
and the computed loss is an infinity labelled a lower estimate (a shift outside the numerical range). With noise in
round 1 the structural bound ``alpha Delta^2 / (2 s_1^2)`` sets such a value aside as an artifact; with
``s_1 = 0`` that bound is infinite (yet round 1 delivers nothing: on the lockstep schedules and on the four
asynchronous runs below, where no combination reads a round-1 message, each datum enters the network only through
its noisy ``y(2)``: every loss is at most 1), and the infinity was a witness: ``violation: witness u=0 -> v=2: inf > claimed
6.5e-34`` on the deterministic schedule, and an infinite witness on sampled (asynchronous, lossy) schedules. The
verdict is now inconclusive with the reason, as on the faint-link path with round-1 noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Async, Lockstep
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.network import leakage_rows
from asyncdp.privacy.observer_claim import check_observer_claim
from asyncdp.privacy.observer_bounds import affine_renyi_bound

from .test_red_faint_link import _faint_path


@dataclass(frozen=True)
class _NoisedInRound2(Muffliato):
    """Muffliato with its one noise injection in round 2 (the first exchange), none in round 1."""

    def noise_scale(self, t: int) -> float:
        return float(self.sigma) if t == 2 else 0.0


def _scenario(**changes):
    return _faint_path().replace(algorithm=_NoisedInRound2(sigma=1.0), **changes)


def test_the_computed_infinity_is_a_lower_estimate_without_a_structural_bound():
    sc = _scenario()
    assert math.isinf(affine_renyi_bound(sc, 2.0))  # no round-1 noise: no bound on every view
    row = next(iter(leakage_rows(sc, observers=[2])))
    assert row.values[0] == math.inf and row.kind == "lower estimate"  # the truth is 1 (module docstring)


@pytest.mark.parametrize("changes", [{}, {"timing": Async()},
                                     {"timing": Lockstep(missing="renormalize"), "links": Links(LinkModel(loss=0.01))}],
                         ids=["deterministic", "async", "lossy"])
def test_an_infinite_lower_estimate_is_no_witness(changes):
    r = check_observer_claim(_scenario(**changes), "node:2", runs=4, find_rounds=False)
    assert r.verdict == "inconclusive" and r.failed == 0 and not r.failures, r.to_table()
    assert "u=0 -> v=2" in r.reason and "numerical artifact" in r.reason


@pytest.mark.parametrize("changes", [{}, {"timing": Async()},
                                     {"timing": Lockstep(missing="renormalize"), "links": Links(LinkModel(loss=0.01))}],
                         ids=["deterministic", "async", "lossy"])
def test_a_noise_free_release_in_an_ambiguous_view_is_a_witness(changes):
    """Review of f333072: the same variant with ``W`` from round 1 (round 1 exchanges the raw values): node 2
    receives ``y_1(1) = 1e-17 x_0 + (0.5 - 1e-17) x_1 + 0.5 x_2``, noise-free, so the loss ``1 -> 2`` is infinite
    (truth). Node 2's view also has the faint direction, so every value of its row was a lower estimate and the
    infinity was set aside as a possible artifact: inconclusive ("a numerical artifact, no witness"). The shift
    moves a value no noise reaches (``GaussianViewLoss.noise_free``): the infinity is exact, a witness."""
    import topology

    base = _faint_path()
    sc = base.replace(algorithm=_NoisedInRound2(sigma=1.0), topology=topology.static(base.topology.weights(2)),
                      **changes)
    r = check_observer_claim(sc, "node:2", runs=4, find_rounds=False)
    assert r.verdict == "violation", r.to_table()
    assert [(f.u, f.exact) for f in r.failures] == [(1, math.inf)], r.to_table()

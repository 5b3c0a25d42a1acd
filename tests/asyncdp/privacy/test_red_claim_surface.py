"""The claim as a rule states it, read by the check: malformed ``(epsilon, delta)`` claims are refused with one
``ScenarioError`` naming the rule and the value (on the command line one ``asyncdp: error:`` line, exit 2), never a
traceback or a silent coercion.

``claimed`` unpacked a tuple claim with ``eps, dl = (float(v) for v in raw)``: a claim of one or three numbers, or one
holding ``None``, raised a bare ``ValueError``/``TypeError`` (a traceback on the command line, exit 1), and a string
``"1"`` or a bool ``True`` was read as the number 1 without a word.
"""

from __future__ import annotations

import pytest

from asyncdp.errors import ScenarioError
from asyncdp.privacy.context import claimed


class _Rule:
    """A stand-in rule: the claim is all :func:`claimed` reads."""

    name = "red-claim-surface"
    claim_level = "run"

    def __init__(self, raw: object, *, form: bool) -> None:
        self.raw = raw
        if form:
            self.claimed_form = lambda horizon: self.raw

    def claimed_privacy(self, horizon: int) -> object:
        return self.raw


BAD = {
    "one number": (1.0,),
    "three numbers": (1.0, 1e-6, 3),
    "None epsilon": (None, 0.0),
    "None delta": (1.0, None),
    "string epsilon": ("1", 0.0),
    "bool epsilon": (True, 0.0),
    "bool delta": (1.0, False),
}


@pytest.mark.parametrize("form", [False, True], ids=["claimed_privacy", "claimed_form"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_tuple_claim_is_refused_naming_the_rule_and_the_value(case, form):
    raw = BAD[case]
    with pytest.raises(ScenarioError, match=r"red-claim-surface: the claim .* is not an \(epsilon, delta\) pair"):
        claimed(_Rule(raw, form=form), 10, 1e-6)


@pytest.mark.parametrize("raw, expected", [((1, 0), (1.0, 0.0, "pure")), ((2.0, 1e-5), (2.0, 1e-5, "approximate")),
                                           ((float("inf"), 1e-6), (float("inf"), 1e-6, None))])
def test_well_formed_tuple_claims_still_read(raw, expected):
    eps, delta, form = claimed(_Rule(raw, form=False), 10, 1e-6)
    assert (eps, delta, None if form is None else form.form) == expected


def test_the_engines_refuse_a_malformed_claim_with_a_scenario_error():
    """``asyncdp run`` records the claim in every result: both engines (and the batch engine's deadline path) unpacked
    it bare, so a claim of three numbers was a traceback there too."""
    import sys
    from dataclasses import dataclass
    from typing import ClassVar

    import topology
    from asyncdp import Deadline
    from asyncdp.engine.batch_engine import run_batch
    from asyncdp.engine.simpy_engine import run_simpy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py

    @dataclass(frozen=True)
    class ThreeNumbers(noisy_dgd.NoisyDGD):
        name: ClassVar[str] = "red-three-numbers"

        def claimed_privacy(self, horizon: int):
            return 1.0, 1e-6, 3

    scenario, _ = noisy_dgd.rendezvous_pair(ThreeNumbers(), topology.static(noisy_dgd.ring(3)), 3)
    for run in (run_simpy, lambda sc: run_batch(sc, 2), lambda sc: run_batch(sc.replace(timing=Deadline(1.0)), 2)):
        with pytest.raises(ScenarioError, match=r"red-three-numbers: the claim \(1.0, 1e-06, 3\) is not an"):
            run(scenario)

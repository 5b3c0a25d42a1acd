"""The check verifies every release's noise against the draw the engine handed it, not only its distribution.

A rule that replaces its standard draw by 0 when the draw is small (``|n| < a``) releases noise whose
distribution is within about ``0.8 a`` of the declared one in Kolmogorov distance: no KS test on a few
thousand residuals per group resolves it. But each such release is the noise-free value itself, an atom
the adjacent scenario never produces, so ``delta(epsilon) >= P(some release of the changed agent is an
atom)`` for every epsilon: with ``a = 0.005`` and the twelve released coordinates of the changed agent of
the Gaussian example (claim ``(1, 1e-3)``) that probability is ``1 - (1 - 0.004)^12 ~ 0.047``, far above the
claimed delta (a replay of 20,000 engine runs per side measured 925 atoms against 0, so
``delta(1) >= 0.040`` at 99.9% on each side). For the Laplace example (a pure claim) any atom at all
refutes the claim. Before the draw-by-draw verification both checks said ``pass``.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp.errors import ScenarioError
from asyncdp.noise import NoiseSource, SeededNoise
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import EngineRuns, RecordingNoise
from asyncdp.privacy.noise_draws import _exact_draws

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ATOM = 0.005
"""Draws with ``|n| < ATOM`` are replaced by 0 (an atom of mass about ``0.8 ATOM`` per coordinate)."""


def _atom(n: np.ndarray) -> np.ndarray:
    return np.where(np.abs(n) < ATOM, 0.0, n)


@dataclass(frozen=True)
class AtomShowkatbakhsh(Showkatbakhsh):
    """The Showkatbakhsh rule, correctly calibrated and declared, with an atom at 0 in its Gaussian noise."""

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        m = self.message_noise_std(t)
        x = state["x"]
        return {"y": x + m * _atom(noise["y"]) if m > 0 else np.array(x, dtype=float, copy=True)}


def _gaussian_pair() -> tuple[Any, Any]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from privacy_check_gaussian_under_calibrated import make
    finally:
        sys.path.remove(str(EXAMPLES))
    return make(rule=AtomShowkatbakhsh)


def _laplace_pair() -> tuple[Any, Any]:
    ex = runpy.run_path(str(EXAMPLES / "own_paper_private_dgd.py"))  # registers its paper record again: allowed

    @dataclass(frozen=True)
    class AtomDGD(ex["PrivateDGD"]):  # type: ignore[misc, valid-type]
        name: ClassVar[str] = "private-dgd-atom"

        def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
            return {"y": state["x"] + self.scale() * _atom(noise["y"])}

    rule = AtomDGD(rounds=ex["scenario"].horizon)
    return ex["scenario"].replace(algorithm=rule), ex["adjacent"].replace(algorithm=rule)


@pytest.mark.parametrize("make", [_gaussian_pair, _laplace_pair], ids=["gaussian (1, 1e-3)", "laplace pure"])
def test_noise_with_an_atom_at_zero_never_passes(make):
    scenario, adjacent = make()
    report = check_privacy(scenario, adjacent, runs=1000)
    assert report.verdict in ("inconclusive", "violation")
    conformance = next(e for e in report.evidence if e.method == "noise conformance")
    assert conformance.figures["noise_draws_mismatched"] > 0
    assert conformance.doubt is not None and "standard draw the engine handed them" in conformance.doubt


class _AtomSource(NoiseSource):
    """A noise source of the user's: normal draws with an atom at 0, from its own generator."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        return _atom(self.rng.standard_normal(shape))

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        return _atom(self.rng.standard_normal(shape))


@pytest.mark.parametrize("side", ["scenario", "adjacent"])
def test_a_scenario_with_its_own_noise_source_is_refused(side):
    sys.path.insert(0, str(EXAMPLES))
    try:
        from privacy_check_gaussian_under_calibrated import make
    finally:
        sys.path.remove(str(EXAMPLES))
    scenario, adjacent = make(rule=Showkatbakhsh)
    if side == "scenario":
        scenario = scenario.replace(noise=_AtomSource())
    else:
        adjacent = adjacent.replace(noise=_AtomSource())
    with pytest.raises(ScenarioError, match=f"check_privacy: {side} has its own noise source \\(_AtomSource\\)"):
        check_privacy(scenario, adjacent, runs=50)


def test_recording_noise_hands_out_the_seeded_draws():
    rec = RecordingNoise(11)
    got = rec.unicast(3, 1, "laplace", 2, (4, 2))
    np.testing.assert_array_equal(got, SeededNoise(11).unicast(3, 1, "laplace", 2, (4, 2)))
    np.testing.assert_array_equal(rec.unicast_blocks[(3, 1, 2)], got)


def _synthetic(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draws, scales, released values and residuals (with a real replay's round-off) of a small run set."""
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((5, 3, 2, 2))  # runs, rounds, agents, coordinates
    scales = np.array([0.0, 2.0, 0.5])  # round 1 releases nothing
    values = rng.uniform(-10, 10, size=draws.shape)
    messages = values + scales[None, :, None, None] * draws
    residuals = messages - values
    residuals[:, 0] = np.nan
    return draws, scales, messages, residuals


def _check(draws: np.ndarray, scales: np.ndarray, messages: np.ndarray, residuals: np.ndarray) -> tuple[dict, Any]:
    runs = EngineRuns("batch", tuple(range(len(draws))), {"y": messages}, (None,) * len(draws), False, {"y": draws})
    return _exact_draws(runs, {"y": residuals}, {"y": ("gaussian", scales)})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), changed=st.integers(0, 8), factor=st.sampled_from([0.0, 0.5, 3.0]))
def test_every_release_off_its_draw_is_counted(seed, changed, factor):
    """Residuals equal to scale x draw (up to round-off) pass; each one moved off it is counted (at most 8 of a
    round's 20 are moved, so the round's sign stays +)."""
    draws, scales, messages, residuals = _synthetic(seed)
    rng = np.random.default_rng(seed + 1)
    t = int(rng.integers(1, 3))  # one noisy round
    cells = np.argwhere(np.isfinite(residuals[:, t]))
    picked = [tuple(int(k) for k in c) for c in cells[rng.choice(len(cells), size=changed, replace=False)]]
    for r, i, k in picked:
        residuals[r, t, i, k] *= factor
    figures, doubt = _check(draws, scales, messages, residuals)
    assert figures["noise_draws_checked"] == 5 * 2 * 2 * 2
    assert figures["noise_draws_mismatched"] == changed
    assert (doubt is None) == (changed == 0)


def test_a_round_that_subtracts_its_draws_passes_but_a_sign_chosen_by_the_draw_does_not():
    draws, scales, messages, residuals = _synthetic(5)
    minus = residuals.copy()
    minus[:, 2] *= -1.0  # the rule subtracts its draw in round 3 (as Wang and Başar's rule does)
    assert _check(draws, scales, messages, minus)[0]["noise_draws_mismatched"] == 0
    folded = residuals.copy()
    folded[:, 1] = np.abs(folded[:, 1])  # |z|: the sign chosen by the draw itself (one-sided noise)
    figures, doubt = _check(draws, scales, messages, folded)
    negative = int((draws[:, 1] < 0).sum())
    assert figures["noise_draws_mismatched"] == min(negative, draws[:, 1].size - negative) > 0
    assert doubt is not None


def test_noise_at_the_resolution_of_huge_released_values_is_not_verified_to_a_small_delta():
    """A constant offset of 1e12 in every message (spacing 1.2e-4): draws within 8 spacings of 0 (probability
    0.8 x 9.8e-4 / scale per coordinate, scales 2 and 0.5) could be replaced by 0 unseen; the 8 released
    coordinates of a run put that probability at 7.8e-3, far above a tenth of delta = 1e-5 (and the pure
    bound 1e-4)."""
    draws, scales, messages, residuals = _synthetic(9)
    messages = messages + 1e12
    runs = EngineRuns("batch", tuple(range(5)), {"y": messages}, (None,) * 5, False, {"y": draws})
    for delta in (1e-5, 0.0):
        figures, doubt = _exact_draws(runs, {"y": residuals}, {"y": ("gaussian", scales)}, None, delta)
        assert figures["noise_draws_mismatched"] == 0 and figures["noise_draws_unresolved"] > 5e-3
        assert doubt is not None and "floating-point resolution" in doubt
    # the same values without the offset: every draw verified to well within the claim
    plain = EngineRuns("batch", tuple(range(5)), {"y": messages - 1e12}, (None,) * 5, False, {"y": draws})
    figures, doubt = _exact_draws(plain, {"y": residuals}, {"y": ("gaussian", scales)}, 0, 1e-5)
    assert doubt is None and figures["noise_draws_unresolved"] < 1e-7


def test_unrecorded_draws_leave_the_noise_unverified():
    runs_ = EngineRuns("batch", (0,), {"y": np.zeros((1, 1, 1, 1))}, (None,), False)
    figures, doubt = _exact_draws(runs_, {"y": np.zeros((1, 1, 1, 1))}, {"y": ("gaussian", np.ones(1))})
    assert figures["noise_draws_checked"] is None and "not recorded" in doubt


def test_the_tolerance_spacing_reads_nan_as_zero_and_infinity_as_the_largest_float():
    from asyncdp.privacy.noise_draws import _spacing

    rng = np.random.default_rng(3)
    special = [0.0, 5e-324, 1e-310, 2.0**-1022, 2.0**-1023, 1.0, 2.0, 3.0, np.nextafter(2.0, 0.0), 1e300,
               np.finfo(float).max, np.inf, np.nan]
    values = np.concatenate([special, np.abs(rng.standard_normal(5000)) * 10.0 ** rng.integers(-320, 300, 5000)])
    with np.errstate(over="ignore"):
        want = np.spacing(np.nan_to_num(values))
    got = _spacing(values.copy())
    assert np.array_equal(got, want)
    assert got[12] == 5e-324 and got[11] == got[10] == np.inf  # NaN as 0; inf as the largest float (spacing inf)


@pytest.mark.parametrize("where", ["none", "late block", "minus round"])
def test_blocks_of_runs_give_the_figures_of_the_whole_arrays(where):
    """Runs read in blocks of 2**16 values (here 3 blocks): the figures equal one pass over the whole arrays, a
    mismatch in the last block and a round that subtracts its draws included."""
    from asyncdp.privacy.noise_draws import _CHUNK, _draws_match, _draws_match_whole
    from asyncdp.privacy.roundoff import _roundoff_floor

    rng = np.random.default_rng(11)
    shape = (2 * _CHUNK // 120 + 7, 6, 5, 4)  # 120 values per run: three blocks
    draws = rng.standard_normal(shape)
    scales = np.array([0.0, 2.0, 0.5, 1e-3, 3.0, 0.25])
    values = rng.uniform(-10, 10, size=shape)
    sign = np.ones(6)
    if where == "minus round":
        sign[4] = -1.0
    messages = values + (sign * scales)[None, :, None, None] * draws
    residuals = messages - values
    residuals[:, 0] = np.nan
    if where == "late block":
        residuals[-3, 2, 1, 0] += 1.0
    for agent in (None, 1):
        floor = _roundoff_floor(messages, 0.0)
        got = _draws_match(residuals, draws, messages, scales, "gaussian", agent, floor)
        want = _draws_match_whole(residuals, draws, messages, scales, "gaussian", agent, floor)
        assert got[0] == want[0] == (1 if where == "late block" else 0)
        assert got[1] == want[1] and got[3] == want[3]
        assert np.array_equal(got[2], want[2])


def test_the_tolerance_is_the_replays_roundoff_and_a_release_beyond_it_is_a_mismatch():
    """Exact residuals (values near 10): draws are verified to the round-off bound (roundoff._roundoff_floor,
    2 t N spacings of the round's magnitude, ~1e-13 of the scales here), so at delta 1e-9 no draw could be
    replaced unseen (the fixed floor of 1e-10 of the scale put that at 3.2e-10 per run for agent 0, above a tenth of
    delta). A draw replaced by 0, below that old floor (3e-11) or above it (1e-6), is a mismatch: the tolerance
    does not fall back to the looser floor, where a rule could hide data (a lattice of step 5e-11)."""
    draws, scales, messages, residuals = _synthetic(5)
    runs = EngineRuns("batch", tuple(range(5)), {"y": messages}, (None,) * 5, False, {"y": draws})
    figures, doubt = _exact_draws(runs, {"y": residuals}, {"y": ("gaussian", scales)}, 0, 1e-9, 1.0)
    assert doubt is None and figures["noise_draws_mismatched"] == 0 and figures["noise_draws_unresolved"] < 1e-11
    for draw in (3e-11, 1e-6):  # the rule releases the noise-free value for this draw
        d, r = draws.copy(), residuals.copy()
        d[0, 1, 0, 0], r[0, 1, 0, 0] = draw, 0.0
        shaved = EngineRuns("batch", tuple(range(5)), {"y": messages}, (None,) * 5, False, {"y": d})
        figures, doubt = _exact_draws(shaved, {"y": r}, {"y": ("gaussian", scales)}, 0, 1e-9, 1.0)
        assert figures["noise_draws_mismatched"] == 1 and "standard draw the engine handed them" in doubt


def test_one_large_release_does_not_loosen_the_tolerance_of_later_rounds_beyond_the_old_floor():
    """The round-off bound's running peak is the rule's to inflate: one release of 1e8 (run 0, round 2, agent 1)
    makes the bound of round 3 2 t N = 12 spacings of 1e8 = 1.8e-7, and a draw of 2e-8 (scale 0.5) replaced by
    0 in round 3 hid inside it (no mismatch, only the probability 1e-6 per run of a draw that small). The
    tolerance stays at most 1e-10 of the scale (5e-11): the replaced draw is a mismatch."""
    draws, scales, messages, residuals = _synthetic(5)
    messages[0, 1, 1, 1] = 1e8
    draws[1, 2, 0, 0], residuals[1, 2, 0, 0] = 2e-8, 0.0
    runs = EngineRuns("batch", tuple(range(5)), {"y": messages}, (None,) * 5, False, {"y": draws})
    figures, doubt = _exact_draws(runs, {"y": residuals}, {"y": ("gaussian", scales)}, 0, 1e-3, 0.0)
    assert figures["noise_draws_mismatched"] == 1 and "standard draw the engine handed them" in doubt
    assert figures["noise_draws_unresolved"] < 1e-9

"""Shared transcript builders of test_transcript.py and test_transcript_io.py (fixtures returning the functions)."""

from __future__ import annotations

import numpy as np
import pytest

from asyncdp.engine.transcript import Transcript


def build(seed: int = 0, rounds: int = 4, n: int = 4) -> Transcript:
    """Broadcasts of a 2-vector on "y" to all others (some lost), plus a 3-vector on "z" to one neighbour."""
    rng = np.random.default_rng(seed)
    tr = Transcript()
    for r in range(1, rounds + 1):
        for s in range(n):
            mid, p = tr.new_message_id(), rng.standard_normal(2)
            for v in range(n):
                if v != s:
                    lost = bool(rng.random() < 0.3)
                    tr.append(r, s, v, "y", r + 0.01 * s, None if lost else r + 0.01 * s + rng.random(), lost, p, mid)
            tr.append(r, s, (s + 1) % n, "z", r + 0.5, r + 0.75, False, rng.standard_normal(3), tr.new_message_id())
    return tr


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64).tobytes()


def awkward() -> Transcript:
    """Mixed widths, lost messages, NaN/inf payload entries, signed zero and unrounded floats."""
    tr = build(seed=3)
    tr.append(5, 2, 0, "w", 1 / 3, 1 / 3 + 0.1, False, [-0.0, np.nan, np.inf, -np.inf, 5e-324], tr.new_message_id())
    tr.append(5, 2, 1, "w1", 7.0, None, True, [1.0], tr.new_message_id())
    return tr


@pytest.fixture
def build_transcript():
    """:func:`build`: broadcasts on "y" (some lost) and unicasts on "z"."""
    return build


@pytest.fixture
def payload_bits():
    """:func:`bits`: the float64 bit patterns of an array, to compare floats exactly."""
    return bits


@pytest.fixture
def awkward_transcript():
    """:func:`awkward`: mixed widths, lost messages, non-finite entries."""
    return awkward

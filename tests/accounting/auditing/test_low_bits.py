"""The low-bits score (accounting.auditing.lowbits): a secret in the last mantissa bits of the outputs is refuted.

The synthetic mechanisms below release real values with the same distribution
under both inputs and write the input into one low bit of one coordinate
(bit 0 or bit 2 of the float64, or bit 0 of a float32): the event "that bit
is set" has probability 1 under one input and 0 under the other, so epsilon
is infinite, while every real-valued statistic moves by at most 4 units in
the last place. Certified bounds are at confidence ``CONFIDENCE``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accounting.auditing import AuditInputError, audit_mechanism, audit_samples
from accounting.auditing.lowbits import FLOAT32_SHIFT, LOW_BITS, SMOOTHING, fit_low_bit_score, low_bits

CONFIDENCE = 0.999


def _with_bit(x: np.ndarray, column: int, bit: int, value: int) -> np.ndarray:
    """``x`` with bit ``bit`` of every float64 in ``column`` set to ``value``."""
    out = np.array(x, dtype=np.float64)
    u = out.view(np.uint64)
    mask = np.uint64(1 << bit)
    u[:, column] = (u[:, column] & ~mask) | (mask if value else np.uint64(0))
    return out


def _secret_pair(bit: int, n: int = 2000, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Laplace outputs of the same distribution under both inputs; bit ``bit`` of coordinate 2 is the input."""
    rng = np.random.default_rng(seed)
    x, xp = rng.laplace(0.0, 1.0, (n, d)), rng.laplace(0.0, 1.0, (n, d))
    return _with_bit(x, 2, bit, 1), _with_bit(xp, 2, bit, 0)


@pytest.mark.parametrize("bit", [0, 2])
def test_the_weight_of_the_secret_bit_is_the_smoothed_closed_form(bit):
    x, xp = _secret_pair(bit, n=300)
    s = fit_low_bit_score(x, xp)
    # independent closed form: the bit is set on all n rows of P and none of P', so with additive smoothing a the
    # frequencies are (n + a) / (n + 2a) and a / (n + 2a), and the weight log(p / (1 - p)) - log(p' / (1 - p'))
    # is 2 log((n + a) / a)
    n = 300
    assert s.weights[bit, 2] == pytest.approx(2.0 * math.log((n + SMOOTHING) / SMOOTHING), rel=1e-12)
    others = np.delete(s.weights.ravel(), bit * x.shape[1] + 2)
    assert np.abs(others).max() < 1.0  # fair-ish coins on both sides: weights near 0
    assert (s.shift == 0).all()


@pytest.mark.parametrize("bit", [0, 2])
def test_a_secret_in_a_low_bit_is_refuted_only_with_the_low_bits_score(bit):
    x, xp = _secret_pair(bit)
    # the real values move by at most 4 ulps: the learned scores of the values see nothing
    assert np.abs(x - xp[:, :]).max() > 1.0 and np.abs(_with_bit(x, 2, bit, 0) - x).max() < 1e-14
    plain = audit_samples(x, xp, epsilon=1.0, confidence=CONFIDENCE)
    assert not plain.violation
    r = audit_samples(x, xp, epsilon=1.0, confidence=CONFIDENCE, low_bits=True)
    assert r.violation and r.event.startswith("low-bits score")
    # the event separates the sides completely: every certification row of one side, none of the other
    assert {r.counts["k"], r.counts["k_prime"]} == {0, r.counts["n"]}
    assert r.details["scores"][:3] == ["quadratic", "linear", "low-bits"]


def test_a_float32_output_is_read_at_its_own_lowest_bits():
    """A float32 mechanism's outputs converted to float64 have 29 zero low bits; its secret sits at bit 29."""
    rng = np.random.default_rng(3)
    x = rng.laplace(0.0, 1.0, (2000, 3)).astype(np.float32)
    xp = rng.laplace(0.0, 1.0, (2000, 3)).astype(np.float32)
    x.view(np.uint32)[:, 1] |= np.uint32(1)
    xp.view(np.uint32)[:, 1] &= ~np.uint32(1)
    wide, wide_p = x.astype(np.float64), xp.astype(np.float64)
    s = fit_low_bit_score(wide[:500], wide_p[:500])
    assert (s.shift == FLOAT32_SHIFT).all()
    assert np.array_equal(low_bits(wide[:, 1:2], s.shift[1:2]) & 1, np.ones((2000, 1), dtype=np.uint8))
    r = audit_samples(wide, wide_p, epsilon=1.0, confidence=CONFIDENCE, low_bits=True)
    assert r.violation and r.event.startswith("low-bits score")


def test_float64_columns_beside_float32_ones_keep_bit_0():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 3))
    x[:, 0] = x[:, 0].astype(np.float32)
    x[3, 2] = np.nan  # non-finite entries do not decide the width
    x[4, 0] = np.inf
    x[:, 1] = np.nan  # nothing finite: a float64 NaN's payload, read at bit 0
    s = fit_low_bit_score(x[:100], x[100:])
    assert s.shift.tolist() == [FLOAT32_SHIFT, 0, 0]


def test_nan_and_infinite_outputs_are_read_by_their_bit_pattern():
    """A NaN's payload is part of what is released: a secret there is refuted; infinities score finitely."""
    rng = np.random.default_rng(5)
    x, xp = rng.normal(size=(2000, 2)), rng.normal(size=(2000, 2))
    x[:, 1] = np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), dtype=np.float64)[0]  # NaN, payload bit 0
    xp[:, 1] = np.nan
    x[::7, 0], xp[::5, 0] = np.inf, -np.inf
    s = fit_low_bit_score(x[:500], xp[:500])
    assert np.isfinite(s(x)).all() and np.isfinite(s(xp)).all()
    assert (s(x) > s(xp).max()).all()


_outputs = hnp.arrays(np.float64, st.tuples(st.integers(2, 40), st.integers(1, 5)),
                      elements=st.floats(allow_nan=True, allow_infinity=True, width=64)
                      | st.floats(-1e3, 1e3, width=32))


@settings(max_examples=40, deadline=None)
@given(x=_outputs, split=st.integers(1, 39), seed=st.integers(0, 2**32 - 1))
def test_the_fit_is_bernoulli_naive_bayes(x, split, seed):
    """The score is the log-odds of scikit-learn's BernoulliNB (same smoothing, uniform prior) on the bits it reads: the
    same log-odds on any rows (NaN, infinities, float32 numbers, subnormals)."""
    from sklearn.naive_bayes import BernoulliNB

    split = min(split, x.shape[0] - 1)
    a, b = x[:split], x[split:]
    s = fit_low_bit_score(a, b)
    bits = np.concatenate([(low_bits(x, s.shift) >> k) & 1 for k in range(LOW_BITS)], axis=1)
    labels = np.r_[np.ones(split, dtype=int), np.zeros(x.shape[0] - split, dtype=int)]
    nb = BernoulliNB(alpha=SMOOTHING, fit_prior=False).fit(bits, labels)
    rows = np.random.default_rng(seed).permutation(x)
    rbits = np.concatenate([(low_bits(rows, s.shift) >> k) & 1 for k in range(LOW_BITS)], axis=1)
    jll = nb.predict_joint_log_proba(rbits)
    np.testing.assert_allclose(s(rows), jll[:, 1] - jll[:, 0], rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(x=_outputs, row=st.integers(0, 39), col=st.integers(0, 4), bit=st.integers(0, 63))
def test_the_score_reads_exactly_its_low_bits(x, row, col, bit):
    """Flipping one bit of one output changes its score by that bit's weight if the score reads it, else not
    at all (a high mantissa, exponent or sign bit of a float never moves the score)."""
    s = fit_low_bit_score(x[: x.shape[0] // 2 or 1], x[x.shape[0] // 2 or 1:] if x.shape[0] > 1 else x)
    row, col = row % x.shape[0], col % x.shape[1]
    flipped = x.copy()
    flipped.view(np.uint64)[row, col] ^= np.uint64(1 << bit)
    k = bit - int(s.shift[col])
    was_set = bool((x.view(np.uint64)[row, col] >> np.uint64(bit)) & np.uint64(1))
    expected = 0.0 if not 0 <= k < LOW_BITS else (-1.0 if was_set else 1.0) * s.weights[k, col]
    got = s(flipped)[row] - s(x)[row]
    assert got == pytest.approx(expected, abs=1e-9 * (1.0 + np.abs(s.weights).sum()))
    others = np.arange(x.shape[0]) != row
    assert np.array_equal(s(flipped)[others], s(x)[others])


def test_the_textbook_float_laplace_mechanism_leaks_through_its_last_bits():
    """Why the score is off by default: ``q + Lap(1 / epsilon)`` on ``q = 0`` and ``q = 1`` (correct as a
    real-number mechanism) is refuted at its own epsilon once its bits are read. The truth, independently: bit 0
    of ``0 + L`` is ``L``'s own, set in about 45% of the draws; when ``1 + L`` has a larger exponent than ``L``
    the one bit rounded off is a tie, rounded to even (bit 0 clear), so bit 0 of ``1 + L`` is set far less
    often."""
    eps, n = 0.156, 20000
    rng = np.random.default_rng(1)
    x, xp = rng.laplace(0.0, 1.0 / eps, (n, 1)), 1.0 + rng.laplace(0.0, 1.0 / eps, (n, 1))
    ones = [float(np.mean(v.view(np.uint64) & np.uint64(1))) for v in (x, xp)]
    assert ones[0] - ones[1] > 0.1  # binomial standard error at n = 20000: below 0.004
    assert not audit_samples(x, xp, epsilon=eps, confidence=CONFIDENCE).violation
    r = audit_samples(x, xp, epsilon=eps, confidence=CONFIDENCE, low_bits=True)
    assert r.violation and r.event.startswith("low-bits score")


def test_low_bits_must_be_a_bool():
    x = np.zeros((200, 1))
    with pytest.raises(AuditInputError, match="low_bits must be True or False, got 'yes'"):
        audit_samples(x, x, epsilon=1.0, low_bits="yes")
    with pytest.raises(AuditInputError, match="audit_mechanism: low_bits must be True or False, got 1"):
        audit_mechanism(_bit0_secret, 0, 1, epsilon=1.0, samples=200, low_bits=1)


def _bit0_secret(data, rng, size):
    """Laplace values of scale 1 whatever ``data`` (0 or 1), with bit 0 of coordinate 1's float64 set to ``data``:
    the event "that bit is set" has probability 1 under one input and 0 under the other (epsilon is infinite)
    while the real values move by at most one unit in the last place."""
    x = rng.laplace(0.0, 1.0, (size, 2))
    u = x.view(np.uint64)
    u[:, 1] = (u[:, 1] & ~np.uint64(1)) | np.uint64(data)
    return x


@pytest.mark.parametrize("streaming", [False, True])
def test_audit_mechanism_refutes_a_secret_in_the_last_bit_only_with_low_bits(streaming):
    """``audit_mechanism(..., low_bits=True)`` reads the bits in memory and when streaming (where only the
    training rows are held: the low-bits score is fitted on them like the learned scores)."""
    kw = {"max_in_memory": 0, "max_train": 500, "max_select": 2000} if streaming else {}
    plain = audit_mechanism(_bit0_secret, 0, 1, epsilon=1.0, samples=4000, confidence=CONFIDENCE, seed=0, **kw)
    assert not plain.violation
    r = audit_mechanism(_bit0_secret, 0, 1, epsilon=1.0, samples=4000, confidence=CONFIDENCE, seed=0,
                        low_bits=True, **kw)
    assert r.violation and r.event.startswith("low-bits score")
    assert r.details["scores"][:3] == ["quadratic", "linear", "low-bits"]
    # the event separates the sides: every certification row of one side, none of the other; with k = n and
    # k' = 0 the Clopper-Pearson bounds at (1 - CONFIDENCE) / 4 give epsilon >= log((alpha^(1/n)) / (1 - alpha^(1/n)))
    n = r.counts["n"]
    assert {r.counts["k"], r.counts["k_prime"]} == {0, n}
    alpha = (1 - CONFIDENCE) / 4
    lower = alpha ** (1 / n)
    assert r.epsilon_lower_bound == pytest.approx(math.log(lower / (1 - lower)), rel=1e-6)


def test_the_low_bits_fit_runs_with_one_thread(monkeypatch):
    """Like the learned scores' fits, the low-bits fit runs with one BLAS/OpenMP thread: a matrix product
    outside the limit wakes the BLAS threads, whose spinning made every later step of a privacy check cost half
    again its CPU time."""
    from threadpoolctl import threadpool_info

    from accounting.auditing import classifier

    seen = []
    real = classifier.fit_low_bit_score

    def spy(x, x_prime):
        seen.append({p["num_threads"] for p in threadpool_info()})
        return real(x, x_prime)

    monkeypatch.setattr(classifier, "fit_low_bit_score", spy)
    rng = np.random.default_rng(0)
    classifier.fit_scores(rng.normal(size=(60, 3)), rng.normal(size=(60, 3)), low_bits=True)
    assert seen == [{1}]


@settings(max_examples=30, deadline=None)
@given(low=hnp.arrays(np.uint16, st.tuples(st.integers(0, 20), st.integers(1, 6))))
def test_the_fits_bit_counts_count_each_bit_of_each_coordinate(low):
    """The fit's counts (one broadcast) are, per bit ``k`` and coordinate ``j``, how many rows have bit ``k`` of
    ``low[:, j]`` set."""
    from accounting.auditing.lowbits import _bit_counts

    want = np.array([[sum((int(v) >> k) & 1 for v in low[:, j]) for j in range(low.shape[1])]
                     for k in range(LOW_BITS)])
    got = _bit_counts(low)
    assert got.shape == (LOW_BITS, low.shape[1]) and np.array_equal(got, want)
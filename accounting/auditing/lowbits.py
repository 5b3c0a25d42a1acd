"""The low-bits score: naive-Bayes log-odds of the lowest mantissa bits of every released number.

Why. A mechanism is run on a computer, so what it releases is a
floating-point number, not a real one, and its bit pattern can carry what
no real-valued statistic sees: Mironov (CCS 2012) showed that the low
mantissa bits of textbook floating-point Laplace samples reveal the input. A
release that writes a secret into its least significant bit moves by one
unit in the last place, far below any density the learned scores of
:mod:`.classifier` resolve. This score reads those bits directly.

What. Each output coordinate ``x_j`` (a float64) contributes the
:data:`LOW_BITS` lowest bits of its mantissa as 0/1 features, read from its
bit pattern (``view(np.uint64)``): bits ``0 .. LOW_BITS - 1`` of a float64,
or, for a coordinate whose finite training values (at least one) are all float32 numbers
(a float32 output converted to float64 on the way: its low 29 bits are then
always 0), bits ``29 .. 29 + LOW_BITS - 1``, the lowest bits of its float32
mantissa. NaN and infinite entries are read the same way (an infinity's
mantissa is 0, a NaN's low bits are its payload's), so a secret in a NaN
payload is a feature too. The score is the log-odds of ``P`` against ``P'``
of the Bernoulli naive-Bayes model of these bits (scikit-learn's
``BernoulliNB``, additive smoothing :data:`SMOOTHING`, uniform class prior;
its estimates computed from the bits' counts) fitted on the training rows:
linear in the bits, ``sum_j b_j w_j + c``,
``w_j = log(p_j (1 - p'_j) / (p'_j (1 - p_j)))`` with the smoothed
frequencies ``p_j = (k_j + 1) / (n + 2)``. No iterative fit.

Soundness. The score is a fixed function of the released bit patterns,
fitted on the training rows only, and the threshold event on it is chosen
on the selection rows only (:func:`~accounting.auditing.samples.choose_threshold`,
which keeps, per order of the pair, whichever candidate score projects the
better bound): any event chosen without the certification rows is a valid
witness, and its Clopper-Pearson bounds on the held-out rows are honest. A
certified difference between the bits' distributions under ``P`` and
``P'`` is a real distinguishing event on the released floats (an observer
reading the floats can compute it), so it bounds the privacy loss of the
mechanism as implemented. No null model of the bits is needed (honest
releases' low bits are not fair coins): the audit compares the two sides'
outputs only.

Honest floating-point mechanisms leak here too, which is why
:func:`~accounting.auditing.samples.audit_samples` reads the bits only on
request (``low_bits=True``). The textbook Laplace mechanism ``q + L`` (numpy's
``laplace`` of scale 6.4) releases a float whose bit 0 is set in 45% of the
draws for ``q = 0`` and in 30% for ``q = 1`` (measured on ``2e5`` draws): when
the sum's exponent exceeds ``L``'s, the one bit rounded off is always a tie,
and ties round to even. That is a real leak of the floating-point
implementation, but not one a claim about the real-number mechanism speaks
of. Releases that add noise to values of full precision under both inputs
(as the rules of a decentralized optimization do from their second round
on) show a much smaller gap: on the shipped privacy-check examples' pairs
(claims of epsilon 0.85 to 6), a threshold on this score alone certified no
loss at 4000 runs per side and at most 0.047 at 20000 (reading four bits;
sixteen certify none at 2000 runs per side). Smaller, not absent:
``b + L`` against ``b + 0.198 + L`` (``b = 0.0253``, a float of full
precision but small beside the noise, ``L`` Laplace of scale 1: epsilon
0.198) certified 0.34 at ``2e4`` samples per side, bit 0 being set in 44%
and 27% of the releases.
So a claim of a small epsilon audited on many samples can be refuted
through the bits of an honest floating-point mechanism: a real leak of its
releases, which the witness names (its event is on the low-bits score).

Example:
    >>> rng = np.random.default_rng(0)
    >>> x, xp = rng.normal(0, 1, (300, 3)), rng.normal(0, 1, (300, 3))
    >>> u = x.view(np.uint64)
    >>> u[:, 1] |= np.uint64(1)  # P's coordinate 1 always has its last bit set; P' as drawn
    >>> s = fit_low_bit_score(x, xp)
    >>> bool(s(x).mean() > s(xp).mean() + 1.0)
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["FLOAT32_SHIFT", "LOW_BITS", "SMOOTHING", "LowBitScore", "fit_low_bit_score", "low_bits"]

LOW_BITS = 16
"""Mantissa bits read per output coordinate, from the lowest up: a secret in any of them moves a release by less
than ``2**16`` units in the last place (a relative ``1.5e-11`` of a float64), below what the real-valued scores
resolve. Four bits let a rule hide its data in bit 4 to 8 (16 to 256 units in the last place, still invisible to
every real-number method): the check said ``pass`` to such a rule. Still not covered: higher bits, and a secret
spread as the parity of several bits (naive Bayes scores each bit on its own)."""

SMOOTHING = 1.0
"""Additive smoothing of the bit frequencies (Laplace's rule of succession): a bit never set in ``n`` training rows of one side has
frequency ``1 / (n + 2)`` there, so every weight is finite."""

FLOAT32_SHIFT = np.finfo(np.float64).nmant - np.finfo(np.float32).nmant
"""Where a float32's lowest mantissa bit sits in the float64 it converts to exactly (bit 29)."""


@dataclass(frozen=True)
class LowBitScore:
    """A fitted low-bits score: larger values mean "more likely under ``P`` than under ``P'``".

    Attributes:
        shift: per output coordinate, the float64 bit its lowest read bit is (0, or
            :data:`FLOAT32_SHIFT` for a float32 coordinate), ``(d,)`` uint64.
        weights: the log-odds weight of each read bit when set, ``(LOW_BITS, d)`` (row ``b``: bit ``shift + b``).
        intercept: the log-odds of a row with no read bit set.
    """

    shift: np.ndarray
    weights: np.ndarray
    intercept: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``x`` (``(n, d)``, converted to float64: exact for any float), shape ``(n,)``."""
        low = low_bits(x, self.shift)
        out = np.full(low.shape[0], self.intercept)
        for b in range(LOW_BITS):
            out += _plane(low, b) @ self.weights[b]
        return out


def low_bits(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The :data:`LOW_BITS` bits from bit ``shift[j]`` up of each float64 ``x[:, j]``, as a small integer.

    Args:
        x: rows ``(n, d)`` (converted to float64, which is exact for any float).
        shift: ``(d,)`` uint64 bit positions.

    Returns:
        ``(n, d)`` uint16 in ``[0, 2**LOW_BITS)``.

    Raises:
        ValueError: ``x`` is not ``(n, d)``.

    Example:
        >>> low_bits(np.array([[1.0, np.nextafter(1.0, 2.0)]]), np.zeros(2, dtype=np.uint64)).tolist()
        [[0, 1]]
    """
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != shift.size:
        raise ValueError(f"the low-bits score reads rows of {shift.size} numbers, got shape {arr.shape}")
    u = arr.view(np.uint64)
    if shift.any():
        u = u >> shift
    return (u & np.uint64((1 << LOW_BITS) - 1)).astype(np.uint16)


def _plane(low: np.ndarray, b: int) -> np.ndarray:
    """Bit ``b`` of each entry of :func:`low_bits`'s array, as 0.0/1.0 (float64 for the product)."""
    return ((low >> np.uint16(b)) & np.uint16(1)).astype(np.float64)


_BIT_INDEX = np.arange(LOW_BITS, dtype=np.uint16)[:, None]
"""The read bits' positions ``0 .. LOW_BITS - 1``, a column (for :func:`_bit_counts`' broadcast)."""


def _bit_counts(low: np.ndarray) -> np.ndarray:
    """How many rows of :func:`low_bits`'s ``(n, d)`` array have each bit set, ``(LOW_BITS, d)`` (row ``b``: bit
    ``b``), by one broadcast shift into an ``(n, LOW_BITS, d)`` array of 0/1 (counting replaced scikit-learn's
    ``BernoulliNB`` fit on those bits as a float matrix: 500 rows of 294 numbers, 9 ms against about 2 ms).

    Example:
        >>> _bit_counts(np.array([[1, 2], [3, 2]], dtype=np.uint16))[:2].tolist()
        [[2, 0], [1, 2]]
    """
    return ((low[:, None, :] >> _BIT_INDEX) & np.uint16(1)).sum(axis=0, dtype=np.int64)


def _shifts(x: np.ndarray) -> np.ndarray:
    """Per coordinate: :data:`FLOAT32_SHIFT` if it has finite values and all are float32 numbers, else 0 (a
    coordinate of NaN and infinities only is read at bit 0, where a float64 NaN's payload ends)."""
    finite = np.isfinite(x)
    with np.errstate(over="ignore"):
        same = np.asarray(x, dtype=np.float32).astype(np.float64) == x
    is32 = (same | ~finite).all(axis=0) & finite.any(axis=0)
    return np.where(is32, FLOAT32_SHIFT, 0).astype(np.uint64)


def fit_low_bit_score(x: np.ndarray, x_prime: np.ndarray) -> LowBitScore:
    """Fit the low-bits score (module docstring) on training rows of ``P`` (``x``) and ``P'`` (``x_prime``).

    The Bernoulli naive-Bayes model of the read bits (one 0/1 feature per
    coordinate and bit, ``P``'s rows labelled 1) with scikit-learn's
    ``BernoulliNB(alpha=SMOOTHING, fit_prior=False)`` estimates, computed from
    the bits' counts (:func:`_bit_counts`): a bit set in ``k`` of ``n`` rows of
    a side has the smoothed frequency ``(k + SMOOTHING) / (n + 2 SMOOTHING)``.
    The score is its joint log-likelihood of ``P`` minus that of ``P'``,
    linear in the bits, so it is kept as weights and an intercept.

    Args:
        x, x_prime: training rows ``(n, d)`` and ``(n', d)``, numeric (converted to float64).

    Returns:
        A :class:`LowBitScore`.

    Raises:
        ValueError: the rows do not have the same number of coordinates, or a side has no rows.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> x, xp = rng.laplace(0, 1, (200, 2)), rng.laplace(0, 1, (200, 2))
        >>> xp.view(np.uint64)[:, 0] &= ~np.uint64(4)  # P' clears bit 2 of coordinate 0
        >>> s = fit_low_bit_score(x, xp)
        >>> s.weights.shape, bool(s.weights[2, 0] > 3.0)
        ((16, 2), True)
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(x_prime, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or not a.shape[0] or not b.shape[0]:
        raise ValueError(f"the low-bits score needs rows of the same width on both sides, got shapes {a.shape} "
                         f"and {b.shape}")
    both = np.concatenate([a, b])
    shift = _shifts(both)
    low = low_bits(both, shift)
    n_p, n_q = a.shape[0], b.shape[0]
    k_p, k_q = _bit_counts(low[:n_p]), _bit_counts(low[n_p:])
    # log-frequency of a bit set and unset under each side (smoothed counts)
    set_p, unset_p = np.log(k_p + SMOOTHING), np.log(n_p - k_p + SMOOTHING)
    set_q, unset_q = np.log(k_q + SMOOTHING), np.log(n_q - k_q + SMOOTHING)
    weights = (set_p - unset_p) - (set_q - unset_q)
    intercept = float(np.sum(unset_p - unset_q)) + k_p.size * math.log((n_q + 2 * SMOOTHING) / (n_p + 2 * SMOOTHING))
    return LowBitScore(shift, weights, intercept)

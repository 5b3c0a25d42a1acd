"""Constants used by the theorems of the papers we implement, and empirical counterparts.

* :func:`nedic_ozdaglar` — Lemma 6 of Huang, Mitra and Vaidya (ICDCN 2015),
  after Nedić–Ozdaglar Lemma 3.2: for a sequence of doubly stochastic, strongly connected ``A_t`` whose positive
  weights (self-weights included) are all ``>= eta``,
  ``|Phi(t, s)_ij - 1/N| <= theta * beta**(t - s)`` with
  ``Phi(t, s) = A_t A_{t-1} ... A_{s+1}``.
* :func:`dpsda_c_theta` — Lemma 3 of Cheng, Liao and Li (arXiv 2022), the
  DPSDA-C consensus factor.
* :func:`push_sum_lambda`, :func:`push_sum_one_minus_lambda`,
  :func:`push_sum_log_one_minus_lambda`, :func:`push_sum_gamma` — Lemma 6
  of Cheng, Liao and Li (arXiv 2022): DPSDA-PS, Nedić–Olshevsky push-sum constants.
* :func:`empirical_contraction` — measured deviation of the products
  ``Phi(t, s)`` from their limit, to compare with the bounds above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..sequence import GraphSequence
from ..validation import check_integer, check_real

__all__ = [
    "nedic_ozdaglar",
    "dpsda_c_theta",
    "push_sum_lambda",
    "push_sum_one_minus_lambda",
    "push_sum_log_one_minus_lambda",
    "push_sum_gamma",
    "ContractionResult",
    "empirical_contraction",
    "CONTRACTION_KINDS",
]

#: Kinds accepted by :func:`empirical_contraction`.
CONTRACTION_KINDS = ("doubly", "row", "column")
#: Deviations at or below this are treated as numerically zero when fitting the rate.
RATE_FLOOR = 1e-12
#: Default for ``max_columns=None``: all columns up to this many nodes, else 64 sampled.
_EXACT_LIMIT = 200
_SAMPLED_COLUMNS = 64


def _unit_interval(x: Any, name: str) -> float:
    """Validate ``x`` in ``(0, 1]`` (a finite real first, by :func:`topology.validation.check_real`)."""
    v = check_real(x, name)
    if not 0.0 < v <= 1.0:
        raise ParameterError(f"{name} must be in (0, 1], got {x!r}")
    return v


# ---------------------------------------------------------------------------
# closed-form constants
# ---------------------------------------------------------------------------
def nedic_ozdaglar(eta: float, num_nodes: int) -> tuple[float, float]:
    """``(theta, beta)`` of Lemma 6: ``|Phi(t,s)_ij - 1/N| <= theta * beta**(t-s)``.

    Lemma 6 of Huang, Mitra and Vaidya (ICDCN 2015), after Nedić and Ozdaglar.

    ``beta = 1 - eta / (4 N^2)`` and ``theta = beta**-2``.

    Args:
        eta: the lower bound on every positive weight, self-weights included
            (Assumption 2 of Huang, Mitra and Vaidya), in ``(0, 1]``.
        num_nodes: ``N >= 1``.

    Returns:
        ``(theta, beta)``.

    Raises:
        ParameterError: ``eta`` not in ``(0, 1]`` or ``num_nodes`` not a positive integer.

    Example:
        >>> nedic_ozdaglar(1.0, 2)  # beta = 15/16, theta = 256/225
        (1.1377777777777778, 0.9375)
    """
    eta = _unit_interval(eta, "eta")
    n = check_integer(num_nodes, "num_nodes", minimum=1)
    beta = 1.0 - eta / (4.0 * n * n)
    theta = beta**-2
    return theta, beta


def dpsda_c_theta(phi: float, n: int) -> float:
    """``theta = 1 - phi / (4 n^2)`` of Lemma 3 (DPSDA-C) in Cheng, Liao and Li (arXiv 2022).

    The lemma uses ``|[W(t:s)]_ik - 1/n| <= theta**(t-s-1)``.

    Args:
        phi: the lower bound on the positive weights, in ``(0, 1]``.
        n: number of nodes, ``>= 1``.

    Raises:
        ParameterError: ``phi`` not in ``(0, 1]`` or ``n`` not a positive integer.

    Example:
        >>> dpsda_c_theta(0.5, 2)
        0.96875
    """
    phi = _unit_interval(phi, "phi")
    n = check_integer(n, "n", minimum=1)
    return 1.0 - phi / (4.0 * n * n)


def _log_lambda(n: int, B: int) -> float:
    """``log(lambda) = log1p(-x) / B`` with ``x = n**(-n B)`` (``n >= 2``)."""
    return math.log1p(-(float(n) ** -(n * B))) / B


def push_sum_lambda(n: int, B: int) -> float:
    """``lambda = (1 - 1/n**(n B))**(1/B)`` of Lemma 6 (DPSDA-PS) in Cheng, Liao and Li (arXiv 2022).

    For any moderate ``n`` this is astronomically close to 1 (``1 - lambda``
    is about ``n**(-n B) / B``, e.g. ``~5e-25`` for ``n = 7, B = 4``), so the
    returned float is usually exactly ``1.0``; use
    :func:`push_sum_one_minus_lambda` or :func:`push_sum_log_one_minus_lambda`
    for bounds involving ``1/(1 - lambda)``. For ``n = 1``, ``lambda = 0``.

    Raises:
        ParameterError: ``n`` or ``B`` not a positive integer.

    Example:
        >>> push_sum_lambda(2, 1)
        0.75
        >>> push_sum_lambda(7, 4)
        1.0
    """
    n = check_integer(n, "n", minimum=1)
    B = check_integer(B, "B", minimum=1)
    if n == 1:
        return 0.0
    if B == 1:
        return 1.0 - float(n) ** -n
    return math.exp(_log_lambda(n, B))


def push_sum_one_minus_lambda(n: int, B: int) -> float:
    """``1 - lambda`` for :func:`push_sum_lambda`, computed without cancellation.

    Uses ``-expm1(log1p(-n**(-n B)) / B)`` (``n**(-n)`` itself when ``B = 1``); relative accuracy is near machine
    precision. Underflows to ``0.0`` once ``1 - lambda < ~5e-324`` (e.g.
    ``n = 1000, B = 1``); use :func:`push_sum_log_one_minus_lambda` there.

    Raises:
        ParameterError: ``n`` or ``B`` not a positive integer.

    Example:
        >>> push_sum_one_minus_lambda(2, 1)
        0.25
        >>> f"{push_sum_one_minus_lambda(7, 4):.4e}"  # about 7**-28 / 4
        '5.4349e-25'
    """
    n = check_integer(n, "n", minimum=1)
    B = check_integer(B, "B", minimum=1)
    if n == 1:
        return 1.0
    if B == 1:
        return float(n) ** -n
    return -math.expm1(_log_lambda(n, B))


def push_sum_log_one_minus_lambda(n: int, B: int) -> float:
    """Natural log of ``1 - lambda`` (:func:`push_sum_lambda`), finite for any ``n, B``.

    When ``x = n**(-n B)`` is below ``1e-15``, ``1 - lambda = (x / B)(1 + O(x))``
    and the log is ``-n B ln(n) - ln(B)`` to double precision; otherwise it is
    ``log`` of :func:`push_sum_one_minus_lambda`.

    Raises:
        ParameterError: ``n`` or ``B`` not a positive integer.

    Example:
        >>> round(push_sum_log_one_minus_lambda(1000, 1), 3)  # -1000 ln 1000
        -6907.755
    """
    n = check_integer(n, "n", minimum=1)
    B = check_integer(B, "B", minimum=1)
    if n == 1:
        return 0.0
    log_x = -n * B * math.log(n)
    if log_x < math.log(1e-15):
        return log_x - math.log(B)
    return math.log(push_sum_one_minus_lambda(n, B))


def push_sum_gamma(seq: GraphSequence, horizon: int | None = None) -> float:
    """``gamma = min_{1 <= t <= horizon} min_i [A(t:1) 1]_i``, Lemma 6 of Cheng, Liao and Li (arXiv 2022).

    ``A(t:1) = A(t) ... A(1)``; computed by propagating the all-ones vector,
    ``v <- A(t) v`` (``O(nnz)`` per round). ``v`` is the push-sum weight vector
    ``w(t)``, so ``gamma`` is the smallest push-sum weight seen.

    Args:
        seq: the sequence (column-stochastic for push-sum, not enforced).
        horizon: rounds to examine; see :meth:`GraphSequence.resolve_horizon`.

    Raises:
        ParameterError, RoundIndexError: a bad ``horizon``.

    Example:
        >>> from topology.sequence import static
        >>> push_sum_gamma(static([[1.0, 0.5], [0.0, 0.5]]), horizon=2)  # w = (1.5, .5), (1.75, .25)
        0.25
    """
    horizon = seq.resolve_horizon(horizon)
    v = np.ones(seq.num_nodes)
    gamma = math.inf
    for t in range(1, horizon + 1):
        v = seq.weights(t) @ v
        gamma = min(gamma, float(v.min()))
    return gamma


# ---------------------------------------------------------------------------
# empirical contraction
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ContractionResult:
    """Measured deviation of the products ``Phi(start + k + 1, start)`` from their limit.

    Attributes:
        deviations: read-only array; entry ``k`` is the deviation of
            ``Phi(start+k+1, start) = A_{start+k+1} ... A_{start+1}``, i.e. of a
            product of ``t - s = k + 1`` matrices.
        rate: the smallest ``r`` with ``dev_k <= dev_0 * r**k`` for every
            ``k >= 1`` with ``dev_k > RATE_FLOOR`` (i.e. ``max_k (dev_k/dev_0)**(1/k)``);
            ``0.0`` if every such deviation is numerically zero, ``inf`` if
            ``dev_0`` is zero but a later one is not, ``nan`` for one product.
        columns_used: number of columns of ``Phi`` propagated.
        exact: ``True`` iff all ``N`` columns were used; otherwise each
            deviation is a lower estimate of the true one.
        kind: ``"doubly"``, ``"row"`` or ``"column"``.
        start: the ``s`` of ``Phi(t, s)``.
    """

    deviations: np.ndarray
    rate: float
    columns_used: int
    exact: bool
    kind: str
    start: int


def _rate(dev: np.ndarray) -> float:
    if dev.size < 2:
        return math.nan
    later = dev[1:]
    ks = np.arange(1, dev.size, dtype=float)
    mask = later > RATE_FLOOR
    if not mask.any():
        return 0.0
    if dev[0] <= RATE_FLOOR:
        return math.inf
    return float(np.max((later[mask] / dev[0]) ** (1.0 / ks[mask])))


def empirical_contraction(
    seq: GraphSequence,
    horizon: int | None = None,
    kind: str = "doubly",
    start: int = 0,
    max_columns: int | None = None,
    seed: int = 0,
) -> ContractionResult:
    """Measure how fast the products ``Phi(t, start) = A_t ... A_{start+1}`` approach their limit.

    Columns ``Phi e_j`` are propagated forward with sparse products
    (``X <- A_t X`` for a dense ``N x m`` block ``X``), one round at a time.
    The deviation of a product ``Phi`` depends on ``kind``:

    * ``"doubly"`` (doubly stochastic, limit ``11^T/N``):
      ``max_ij |Phi_ij - 1/N|`` — directly comparable with
      :func:`nedic_ozdaglar`'s ``theta * beta**(t-s)``.
    * ``"row"`` (row-stochastic consensus, limit ``1 phi^T``): the largest
      spread of a column, ``max_j (max_i Phi_ij - min_i Phi_ij)`` — the
      disagreement after mixing ``x(0) = e_j``. (Rows do not become constant,
      their entries tend to ``phi_j``.) If ``|Phi_ij - phi_j| <= b`` for some
      ``phi`` then this deviation is ``<= 2b``.
    * ``"column"`` (column-stochastic push-sum, limit ``phi(t) 1^T``,
      Nedić–Olshevsky ``|[A(t:s)]_ij - phi_i(t)| <= beta lambda**(t-s)``): the
      largest spread of a row, ``max_i (max_j Phi_ij - min_j Phi_ij)``,
      unnormalised (columns already sum to 1); it is ``<= 2 beta lambda**(t-s)``.

    Args:
        seq: the sequence.
        horizon: last round ``t``; see :meth:`GraphSequence.resolve_horizon`.
        kind: ``"doubly"``, ``"row"`` or ``"column"``.
        start: ``s``, with ``0 <= start < horizon``.
        max_columns: at most this many columns of ``Phi`` are propagated
            (all ``N`` if ``max_columns >= N``). ``None`` means all columns
            when ``N <= 200``, else 64 columns drawn without replacement with
            ``numpy.random.default_rng(seed)``.
        seed: seed of the column sample.

    Returns:
        A :class:`ContractionResult` with ``horizon - start`` deviations. With
        sampled columns (``exact=False``) every deviation is a lower estimate
        (the maximum over a subset of the columns; for ``"column"``, the row
        spread over a subset of the columns).

    Raises:
        ParameterError: unknown ``kind``; ``start`` not an integer in
            ``[0, horizon)``; ``max_columns`` not a positive integer; a bad
            ``horizon``.

    Example:
        >>> from topology.sequence import static
        >>> res = empirical_contraction(static([[0.75, 0.25], [0.25, 0.75]]), horizon=3)
        >>> res.deviations.tolist(), res.rate  # |Phi_ij - 1/2| = 0.5**(k+1) / 2
        ([0.25, 0.125, 0.0625], 0.5)
    """
    if kind not in CONTRACTION_KINDS:
        raise ParameterError(f"kind must be one of {', '.join(CONTRACTION_KINDS)}; got {kind!r}")
    horizon = seq.resolve_horizon(horizon)
    start = check_integer(start, "start", minimum=0)
    if start >= horizon:
        raise ParameterError(f"start must be < horizon ({horizon}), got {start!r}")
    n = seq.num_nodes
    if max_columns is None:
        m = n if n <= _EXACT_LIMIT else min(_SAMPLED_COLUMNS, n)
    else:
        m = min(check_integer(max_columns, "max_columns", minimum=1), n)
    if m == n:
        cols = np.arange(n)
    else:
        cols = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    X = np.zeros((n, m))
    X[cols, np.arange(m)] = 1.0
    deviations = np.empty(horizon - start)
    for k, t in enumerate(range(start + 1, horizon + 1)):
        X = np.asarray(seq.weights(t) @ X)
        if kind == "doubly":
            dev = np.abs(X - 1.0 / n).max()
        elif kind == "row":
            dev = (X.max(axis=0) - X.min(axis=0)).max()
        else:
            dev = (X.max(axis=1) - X.min(axis=1)).max()
        deviations[k] = dev
    deviations.setflags(write=False)
    return ContractionResult(
        deviations=deviations,
        rate=_rate(deviations),
        columns_used=m,
        exact=m == n,
        kind=kind,
        start=start,
    )

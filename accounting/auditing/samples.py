"""``audit_samples``: a certified lower bound on epsilon (or delta) from two sets of output samples.

The procedure (one pass, every step seeded by ``seed``):

1. The rows of both sample sets are shuffled and split into a *training*
   part, used to choose the event, and a *certification* part, used once to
   count that event, so the Clopper–Pearson bounds are honest. For exact
   events half of the rows choose and half certify. For the classifier, at
   most ``max_train`` rows per side (and at most a quarter of them) fit the
   score, and the remaining rows are split evenly between choosing the
   threshold and certifying.
2. The event family depends on the outputs:

   * ``"exact"`` (categorical, non-numeric dtype, or at most :data:`MAX_ATOMS`
     distinct rows in the training part): events are sets of output values
     seen in the choosing rows (:mod:`.events`);
   * ``"classifier"`` (numeric outputs otherwise): a logistic-regression score
     (:mod:`.classifier`) is fitted on the first training rows, and on the
     others the DP-Sniper-style randomized threshold event on that score is
     chosen (:mod:`.sniper`) by the Clopper–Pearson bound it would get there;
     with ``low_bits=True`` a naive-Bayes score of the lowest mantissa bits
     of every output number (:mod:`.lowbits`) is a further candidate, for
     outputs whose floating-point bit patterns, not only their real values,
     are audited; where a value repeats in the training rows with other counts
     on the two sides (an atom inside a continuous law: noise skipped on some
     draws), a score of those atoms (:mod:`.atoms`) is one more candidate.

3. One event per order of the pair (``P/P'`` and ``P'/P``) is certified on the
   certification part (:mod:`.certify`): four one-sided Clopper–Pearson bounds
   at ``(1 - confidence) / 4`` each, so by the union bound **all reported
   bounds hold together with probability at least** ``confidence``. In
   particular, for a mechanism that is ``(epsilon, delta)``-DP,
   ``epsilon_lower_bound <= epsilon`` and ``delta_lower_bound <= delta`` with
   probability at least ``confidence`` over the draw of the samples, which
   must be independent draws of the mechanism on the two inputs.

The steps after the shuffle (:func:`choose_method`, :func:`split_sizes`,
:func:`choose_exact` or :func:`fit_classifier` and :func:`choose_threshold`,
:meth:`ChosenEvents.count`, :func:`certified_report`) are shared with the
streaming path of :func:`~accounting.auditing.mechanism.audit_mechanism`,
which feeds them rows drawn block by block and adds up the counts of the
blocks (counts of disjoint rows add up, so the certification is the same).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.validation import check_integer, check_open_unit, check_positive, check_real

from ..auditors import FLOAT_TOLERANCE
from ..errors import PrivacyParameterError
from .certify import CertifiedEvent, certify_event, per_bound_alpha
from .report import SampleAuditReport
from .sniper import ThresholdEvent

__all__ = ["METHODS", "MIN_SAMPLES", "MAX_ATOMS", "AuditInputError", "audit_samples"]

METHODS: tuple[str, ...] = ("auto", "classifier", "exact")
"""Accepted ``method`` values of :func:`audit_samples`."""

MIN_SAMPLES = 100
"""Fewest samples per side accepted."""

MAX_ATOMS = 64
"""``method="auto"`` uses exact events when the training part has at most this many distinct rows."""

MAX_TRAIN = 250_000
"""Default cap on the rows per side used to fit the classifier (more rows gave no better score on the testbed)."""

_WHERE = "audit_samples"


class AuditInputError(PrivacyParameterError):
    """Unusable input to the auditor: sample arrays, method, mechanism or a module for ``privacy audit``."""


def _as_rows(name: str, samples: Any) -> np.ndarray:
    arr = np.asarray(samples)
    if arr.ndim == 0:
        raise AuditInputError(f"{_WHERE}: {name} must have a leading sample axis, got a scalar {samples!r}")
    if arr.dtype.kind == "c":
        raise AuditInputError(f"{_WHERE}: {name} must be real or categorical, got complex dtype {arr.dtype}")
    if arr.shape[0] < MIN_SAMPLES:
        raise AuditInputError(f"{_WHERE}: {name} must hold at least {MIN_SAMPLES} samples, got {arr.shape[0]}")
    return arr.reshape(arr.shape[0], -1)


def _check_delta(delta: Any) -> float:
    d = check_real(delta, "delta", error=PrivacyParameterError, where=_WHERE)
    if not 0 <= d < 1:
        raise PrivacyParameterError(f"{_WHERE}: delta must lie in [0, 1), got {delta!r}")
    return d


def _is_numeric(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "biuf"


def _numeric_for(method: str, a: np.ndarray, b: np.ndarray, where: str) -> bool:
    """Whether both outputs are numeric; refuses ``method="classifier"`` on non-numeric ones.

    Raises:
        AuditInputError: ``method == "classifier"`` and an output is not numeric.
    """
    numeric = _is_numeric(a) and _is_numeric(b)
    if method == "classifier" and not numeric:
        raise AuditInputError(f"{where}: method='classifier' needs numeric outputs, got dtypes {a.dtype} and "
                              f"{b.dtype}; use method='exact' or 'auto'")
    return numeric


def audit_samples(samples: Any, samples_prime: Any, *, epsilon: float, delta: float = 0.0,
                  confidence: float = 0.95, seed: int = 0, method: str = "auto",
                  max_train: int = MAX_TRAIN, low_bits: bool = False) -> SampleAuditReport:
    """Certified lower bounds on the privacy loss from outputs under neighbouring inputs (black box).

    See the module docstring for the procedure. Every bound in the report
    holds with probability at least ``confidence`` (union bound over the two
    orders of the pair, four one-sided Clopper–Pearson bounds at
    ``(1 - confidence) / 4`` each); so for an ``(epsilon, delta)``-DP
    mechanism a violation is reported with probability at most
    ``1 - confidence``.

    Args:
        samples: outputs under ``P`` (the first input): leading sample axis, any trailing shape (flattened to
            features), numeric or categorical (strings, objects). NaN and infinite entries of numeric outputs
            are allowed (they become indicator features).
        samples_prime: outputs under ``P'`` (the neighbouring input), same trailing shape.
        epsilon: the claimed epsilon, > 0.
        delta: the claimed delta in ``[0, 1)``.
        confidence: level of the certified bounds, in ``(0, 1)``.
        seed: seed (integer >= 0) of the shuffle, the classifier and the boundary draws.
        method: ``"auto"`` (exact events for categorical outputs or at most :data:`MAX_ATOMS` distinct rows,
            the classifier otherwise), ``"classifier"`` or ``"exact"``.
        max_train: most rows per side used to fit the classifier, >= 50 (at most a quarter of the samples are).
        low_bits: also try the low-bits score (module ``accounting.auditing.lowbits``): audits the outputs as
            the floating-point numbers they are, so a mechanism whose last bits depend on its input is refuted
            even when its real values are private (off by default: textbook floating-point mechanisms leak
            through their last bits too, see that module).

    Returns:
        A :class:`~accounting.auditing.report.SampleAuditReport`.

    Raises:
        PrivacyParameterError: epsilon <= 0, delta outside [0, 1), confidence outside (0, 1), bad seed.
        AuditInputError: fewer than :data:`MIN_SAMPLES` samples per side, trailing shapes that differ, complex
            outputs, categorical outputs with ``method="classifier"``, an unknown method, ``low_bits`` not a bool.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> under_noised = audit_samples(rng.laplace(0, 0.5, 20000), rng.laplace(1, 0.5, 20000), epsilon=1.0)
        >>> under_noised.violation, under_noised.method
        (True, 'classifier')
    """
    eps, dlt, conf, seed, max_train = _check_claim(epsilon, delta, confidence, seed, method, max_train)
    if not isinstance(low_bits, (bool, np.bool_)):
        raise AuditInputError(f"{_WHERE}: low_bits must be True or False, got {low_bits!r}")
    a, b = _as_rows("samples", samples), _as_rows("samples_prime", samples_prime)
    if np.asarray(samples).shape[1:] != np.asarray(samples_prime).shape[1:]:
        raise AuditInputError(f"{_WHERE}: samples_prime must have the trailing shape of samples, "
                              f"{np.asarray(samples).shape[1:]}, got {np.asarray(samples_prime).shape[1:]}")
    numeric = _numeric_for(method, a, b, _WHERE)

    rng = np.random.default_rng(seed)
    a = a[rng.permutation(a.shape[0])]
    b = b[rng.permutation(b.shape[0])]
    head = method_rows(min(a.shape[0], b.shape[0]), max_train)
    chosen = choose_method(method, a[:head], b[:head], numeric=numeric)
    (fit_a, na), (fit_b, nb) = (split_sizes(chosen, a.shape[0], max_train),
                                split_sizes(chosen, b.shape[0], max_train))
    alpha = per_bound_alpha(conf)
    n_cert = (a.shape[0] - na, b.shape[0] - nb)
    if chosen == "exact":
        events = choose_exact(a[:na], b[:nb], eps=eps, dlt=dlt, alpha=alpha)
    else:
        score = fit_classifier(a[:fit_a], b[:fit_b], seed=seed, low_bits=bool(low_bits))
        with score.threads(max(a.shape[0], b.shape[0])):  # one thread context for the four scorings
            events = choose_threshold(score, score(a[fit_a:na]), score(b[fit_b:nb]), eps=eps, dlt=dlt,
                                      alpha=alpha, fit=(fit_a, fit_b))
            counts = events.count(a[na:], b[nb:], rng)
        return certified_report(events, counts, n_cert, eps=eps, dlt=dlt, conf=conf, n_train=(na, nb))
    counts = events.count(a[na:], b[nb:], rng)
    return certified_report(events, counts, n_cert, eps=eps, dlt=dlt, conf=conf, n_train=(na, nb))


# --- the steps shared with the streaming path of ``audit_mechanism`` (:mod:`.mechanism`) ---------------------------

ORDER_NAMES: tuple[str, str] = ("P/P'", "P'/P")
"""The two orders of the pair, in the row order of :meth:`ChosenEvents.count`."""


def _check_claim(epsilon: Any, delta: Any, confidence: Any, seed: Any, method: Any,
                 max_train: Any) -> tuple[float, float, float, int, int]:
    """Validated ``(epsilon, delta, confidence, seed, max_train)``; also checks ``method``."""
    eps = check_positive(epsilon, "epsilon", error=PrivacyParameterError, where=_WHERE)
    dlt = _check_delta(delta)
    conf = check_open_unit(confidence, "confidence", error=PrivacyParameterError, where=_WHERE)
    seed = check_integer(seed, "seed", minimum=0, error=PrivacyParameterError, where=_WHERE)
    max_train = check_integer(max_train, "max_train", minimum=50, error=AuditInputError, where=_WHERE)
    if method not in METHODS:
        raise AuditInputError(f"{_WHERE}: method must be one of {', '.join(METHODS)}, got {method!r}")
    return eps, dlt, conf, seed, max_train


def choose_method(method: str, head: np.ndarray, head_prime: np.ndarray, *, numeric: bool) -> str:
    """``"exact"`` or ``"classifier"``: ``method`` unless ``"auto"``, decided on the first training rows.

    ``"auto"`` gives ``"exact"`` for non-numeric outputs or when ``head`` and
    ``head_prime`` (``(n, d)`` rows) hold at most :data:`MAX_ATOMS` distinct rows.
    Rows are at least as many distinct as the values of any one of their
    columns (equal values, NaNs merged, have equal bytes or not), so a last
    column of more than :data:`MAX_ATOMS` values decides ``"classifier"``
    without comparing whole rows (a few hundred rows of hundreds of values:
    milliseconds).

    Example:
        >>> rows = np.arange(200.0).reshape(100, 2)
        >>> choose_method("auto", rows, rows, numeric=True), choose_method("auto", rows % 2, rows % 2, numeric=True)
        ('classifier', 'exact')
    """
    if method != "auto":
        return method
    if not numeric:
        return "exact"
    from .events import distinct_rows

    if head.ndim == 2 and head.shape[1] and np.unique(np.concatenate([head[:, -1], head_prime[:, -1]])).size > MAX_ATOMS:
        return "classifier"  # decided on the last column: the rows are not joined
    return "exact" if distinct_rows(np.concatenate([head, head_prime])) <= MAX_ATOMS else "classifier"


def method_rows(n: int, max_train: int, max_select: int | None = None) -> int:
    """Rows per side that :func:`choose_method` reads: ``min(n // 2, max_train)``, and no more than either
    method's training rows (:func:`split_sizes`), so that no row it reads is certified whichever method it
    chooses (the counts of rows that decided the method would be conditioned on that choice).

    Example:
        >>> method_rows(1000, 250_000), method_rows(20603, 5000, max_select=500)
        (500, 500)
    """
    return min(n // 2, max_train, *(split_sizes(m, n, max_train, max_select)[1] for m in ("exact", "classifier")))


def split_sizes(method: str, n: int, max_train: int, max_select: int | None = None) -> tuple[int, int]:
    """``(fit, train)``: rows ``[0, fit)`` fit the score, ``[fit, train)`` choose the event, the rest certify.

    Exact events: ``fit = 0`` and half of the rows choose. Classifier:
    ``fit = min(n // 4, max_train)`` and half of the others choose. With
    ``max_select`` (the streaming path), at most that many rows choose.

    Example:
        >>> split_sizes("classifier", 1000, 250_000), split_sizes("exact", 1001, 250_000)
        ((250, 625), (0, 500))
    """
    fit = 0 if method == "exact" else min(n // 4, max_train)
    select = (n - fit) // 2
    if max_select is not None:
        select = min(select, max_select)
    return fit, fit + select


class _AtomKeys:
    """Maps rows to the atom ids of the selection rows (``-1`` for a value not seen there)."""

    def __init__(self, rows: np.ndarray) -> None:
        from .events import _row_keys

        self._rows = rows
        self._keys = np.unique(_row_keys(rows))  # sorted: atom id i is the i-th distinct key, as in events.atoms

    def __call__(self, x: np.ndarray) -> np.ndarray:
        from .events import _row_keys

        x = x.reshape(x.shape[0], -1)
        keys = self._keys
        if x.dtype != self._rows.dtype:  # a block of another dtype (e.g. longer strings): compare in a common one
            try:
                common = np.result_type(x.dtype, self._rows.dtype)
            except TypeError:
                common = np.dtype(object)
            x = x.astype(common)
            keys = np.unique(_row_keys(self._rows.astype(common)))
        k = _row_keys(x)
        pos = np.clip(np.searchsorted(keys, k), 0, max(0, keys.size - 1))
        return np.where((keys.size > 0) & (keys[pos] == k), pos, -1)


@dataclass(frozen=True)
class ChosenEvents:
    """The event chosen for each order on the training rows, and how to count it on certification rows.

    Attributes:
        method: ``"exact"`` or ``"classifier"``.
        key: rows ``(n, d)`` -> what the events test (atom ids, shape ``(n,)``, or learned scores, one column
            per candidate score, of which only the columns the events read are computed).
        events: per order (:data:`ORDER_NAMES`), ``(event, projected epsilon bound)``.
        info: method details for the report.
    """

    method: str
    key: Callable[[np.ndarray], np.ndarray]
    events: dict[str, tuple[Any, float]]
    info: dict[str, Any]

    def count(self, rows: np.ndarray, rows_prime: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Event counts on certification rows: ``[[k, k'] for P/P', [k, k'] for P'/P]`` (int array ``(2, 2)``).

        Counts of disjoint sets of rows add up, so certification rows can be
        counted block by block. ``rng`` decides boundary ties of threshold
        events (four draws in the order P/P' on ``rows``, on ``rows_prime``,
        then P'/P on ``rows_prime``, on ``rows``).
        """
        ka, kb = self.key(rows.reshape(rows.shape[0], -1)), self.key(rows_prime.reshape(rows_prime.shape[0], -1))
        out = np.zeros((2, 2), dtype=np.int64)
        for i, (num, den) in enumerate(((ka, kb), (kb, ka))):
            event = self.events[ORDER_NAMES[i]][0]
            for j, keys in enumerate((num, den)):
                inside = event.contains(keys, rng) if isinstance(event, ThresholdEvent) else event.contains(keys)
                out[i, j] = int(inside.sum())
        return out


def choose_exact(sel: np.ndarray, sel_prime: np.ndarray, *, eps: float, dlt: float, alpha: float) -> ChosenEvents:
    """One atom-set event per order, chosen on the selection rows (:func:`~accounting.auditing.events.choose_atom_event`).

    Only values seen in the selection rows can belong to an event. The
    projected bounds that rank the candidates use the *selection* sizes (see
    :func:`choose_threshold`).
    """
    from .events import atoms, choose_atom_event

    ids_a, ids_b, labels = atoms(sel, sel_prime)
    events = {}
    for order, (num, den) in ((ORDER_NAMES[0], (ids_a, ids_b)), (ORDER_NAMES[1], (ids_b, ids_a))):
        events[order] = choose_atom_event(num, den, labels, n_cert=num.size, n_cert_prime=den.size, epsilon=eps,
                                          delta=dlt, alpha=alpha)
    return ChosenEvents("exact", _AtomKeys(np.concatenate([sel, sel_prime])), events, {"atoms": len(labels)})


def fit_classifier(fit: np.ndarray, fit_prime: np.ndarray, *, seed: int, low_bits: bool = False) -> Any:
    """The candidate scores (:func:`~accounting.auditing.classifier.fit_scores`, with the low-bits one when
    ``low_bits``) fitted on the fitting rows."""
    from .classifier import fit_scores

    try:
        rows, rows_prime = np.asarray(fit, dtype=float), np.asarray(fit_prime, dtype=float)
    except (TypeError, ValueError) as exc:
        raise AuditInputError(f"{_WHERE}: method='classifier' needs numeric outputs ({exc})") from None
    try:
        return fit_scores(rows, rows_prime, seed=seed, low_bits=low_bits)
    except ValueError as exc:  # numeric outputs whose features overflow (classifier._standardize, _fit_model)
        raise AuditInputError(f"{_WHERE}: method='classifier' could not fit its score on these numeric outputs "
                              f"({exc}); rescale them (a common factor changes no event's probability)") from None


def choose_threshold(score: Any, sel_scores: np.ndarray, sel_scores_prime: np.ndarray, *, eps: float, dlt: float,
                     alpha: float, fit: tuple[int, int]) -> ChosenEvents:
    """One threshold event per order on the better of the candidate scores, chosen on the selection rows.

    ``sel_scores`` has one column per candidate score (:class:`~accounting.auditing.classifier.ScoreCandidates`)
    or is 1-D for a single score; each order keeps the score whose best event has the larger projected bound.

    The candidates are ranked by the bound they would get with as many
    certification rows as selection rows, so an event is chosen only when its
    *selection* counts support it. (Projecting at a much larger streaming
    certification size instead favoured very rare events whose selection
    counts are noise: at ``2.2e8`` samples per input of Ding et al.'s Alg. 7 it
    chose an event with 280 and 243 certification hits and certified nothing.)
    """
    import dataclasses

    from .sniper import choose_threshold_event

    sa, sb = np.asarray(sel_scores, dtype=float), np.asarray(sel_scores_prime, dtype=float)
    if sa.ndim == 1:
        sa, sb = sa[:, None], sb[:, None]
    names = tuple(getattr(score, "names", ("score",) * sa.shape[1]))
    events: dict[str, tuple[Any, float]] = {}
    for order, direction, (num, den) in ((ORDER_NAMES[0], 1, (sa, sb)), (ORDER_NAMES[1], -1, (sb, sa))):
        best: tuple[Any, float] | None = None
        for k in range(num.shape[1]):  # each candidate score; the better projected bound wins (no cert. rows used)
            ev, proj = choose_threshold_event(num[:, k], den[:, k], direction=direction, n_cert=num.shape[0],
                                              n_cert_prime=den.shape[0], epsilon=eps, delta=dlt, alpha=alpha)
            if best is None or proj > best[1]:
                best = (dataclasses.replace(ev, column=k, name=f"{names[k]} score"), proj)
        assert best is not None
        events[order] = best
    # the certification counts the chosen events only: the other candidate scores are not computed there
    tested = tuple(sorted({event.column for event, _ in events.values()}))
    return ChosenEvents("classifier", _scores_of(score, tested), events,
                        {"fit_rows": [int(fit[0]), int(fit[1])], "features": score.features.size,
                         "scores": list(names)})


def _scores_of(score: Any, columns: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    """The key of threshold events on ``score``: its scores of rows, only ``columns`` computed when it is a
    :class:`~accounting.auditing.classifier.ScoreCandidates` (the others NaN, read by no event)."""
    from .classifier import ScoreCandidates

    some = isinstance(score, ScoreCandidates)

    def key(x: np.ndarray) -> np.ndarray:
        try:
            rows = np.asarray(x, dtype=float)  # a copy only for other dtypes
            return score(rows, columns) if some else score(rows)
        except (TypeError, ValueError) as exc:
            raise AuditInputError(f"{_WHERE}: method='classifier' needs numeric outputs ({exc})") from None
    return key


_Results = dict[str, tuple[CertifiedEvent, str, float]]


def certified_report(events: ChosenEvents, counts: np.ndarray, n_cert: tuple[int, int], *, eps: float, dlt: float,
                     conf: float, n_train: tuple[int, int]) -> SampleAuditReport:
    """Certify the counts of :meth:`ChosenEvents.count` (summed over all certification rows) and build the report.

    Args:
        events: the chosen events.
        counts: ``(2, 2)`` counts per order.
        n_cert: certification rows ``(under P, under P')``.
        eps, dlt, conf: the claim and the confidence.
        n_train: training rows per side (reported in the counts).
    """
    alpha = per_bound_alpha(conf)
    results: _Results = {}
    for i, order in enumerate(ORDER_NAMES):
        n_num, n_den = n_cert if i == 0 else (n_cert[1], n_cert[0])
        event, proj = events.events[order]
        results[order] = (certify_event(int(counts[i, 0]), n_num, int(counts[i, 1]), n_den, epsilon=eps, delta=dlt,
                                        alpha=alpha), event.describe(), proj)
    return _report(results, events.info, eps=eps, dlt=dlt, conf=conf, method=events.method, n_train=n_train)


def _report(results: _Results, info: dict[str, Any], *, eps: float, dlt: float,
            conf: float, method: str, n_train: tuple[int, int]) -> SampleAuditReport:
    best = max(results, key=lambda o: (results[o][0].epsilon_lower_bound, results[o][0].delta_lower_bound))
    cert, event, _ = results[best]
    eps_lb = cert.epsilon_lower_bound
    delta_lb = max(r[0].delta_lower_bound for r in results.values())
    violation = eps_lb > eps * (1 + FLOAT_TOLERANCE) if dlt == 0 else delta_lb > dlt
    if best == "P/P'":
        counts = {"n": cert.n, "n_prime": cert.n_prime, "k": cert.k, "k_prime": cert.k_prime}
    else:
        counts = {"n": cert.n_prime, "n_prime": cert.n, "k": cert.k_prime, "k_prime": cert.k}
    counts.update(n_train=n_train[0], n_train_prime=n_train[1])
    per_order = {o: {"epsilon_lower_bound": r[0].epsilon_lower_bound, "delta_lower_bound": r[0].delta_lower_bound,
                     "numerator_lower": r[0].p_lower, "denominator_upper": r[0].p_prime_upper,
                     "event": r[1], "projected_epsilon": r[2]} for o, r in results.items()}
    return SampleAuditReport(
        epsilon=eps, delta=dlt, epsilon_lower_bound=eps_lb, delta_lower_bound=delta_lb, violation=bool(violation),
        confidence=conf, method=method, event=event, order=best, counts=counts,
        details={"orders": per_order, "alpha_per_bound": per_bound_alpha(conf), **info},
    )

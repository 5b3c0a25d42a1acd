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
     (:mod:`.events`);
   * ``"classifier"`` (numeric outputs otherwise): a logistic-regression score
     (:mod:`.classifier`) is fitted on the first training rows, and on the
     others the DP-Sniper-style randomized threshold event on that score is
     chosen (:mod:`.sniper`) by the Clopper–Pearson bound it would get there.

3. One event per order of the pair (``P/P'`` and ``P'/P``) is certified on the
   certification part (:mod:`.certify`): four one-sided Clopper–Pearson bounds
   at ``(1 - confidence) / 4`` each, so by the union bound **all reported
   bounds hold together with probability at least** ``confidence``. In
   particular, for a mechanism that is ``(epsilon, delta)``-DP,
   ``epsilon_lower_bound <= epsilon`` and ``delta_lower_bound <= delta`` with
   probability at least ``confidence`` over the draw of the samples, which
   must be independent draws of the mechanism on the two inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topology.validation import check_integer, check_open_unit, check_positive, check_real

from ..auditors import FLOAT_TOLERANCE
from ..errors import PrivacyParameterError
from .certify import CertifiedEvent, certify_event, per_bound_alpha
from .report import SampleAuditReport

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


def audit_samples(samples: Any, samples_prime: Any, *, epsilon: float, delta: float = 0.0,
                  confidence: float = 0.95, seed: int = 0, method: str = "auto",
                  max_train: int = MAX_TRAIN) -> SampleAuditReport:
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

    Returns:
        A :class:`~accounting.auditing.report.SampleAuditReport`.

    Raises:
        PrivacyParameterError: epsilon <= 0, delta outside [0, 1), confidence outside (0, 1), bad seed.
        AuditInputError: fewer than :data:`MIN_SAMPLES` samples per side, trailing shapes that differ, complex
            outputs, categorical outputs with ``method="classifier"``, an unknown method.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> under_noised = audit_samples(rng.laplace(0, 0.5, 20000), rng.laplace(1, 0.5, 20000), epsilon=1.0)
        >>> under_noised.violation, under_noised.method
        (True, 'classifier')
    """
    eps = check_positive(epsilon, "epsilon", error=PrivacyParameterError, where=_WHERE)
    dlt = _check_delta(delta)
    conf = check_open_unit(confidence, "confidence", error=PrivacyParameterError, where=_WHERE)
    seed = check_integer(seed, "seed", minimum=0, error=PrivacyParameterError, where=_WHERE)
    max_train = check_integer(max_train, "max_train", minimum=50, error=AuditInputError, where=_WHERE)
    if method not in METHODS:
        raise AuditInputError(f"{_WHERE}: method must be one of {', '.join(METHODS)}, got {method!r}")
    a, b = _as_rows("samples", samples), _as_rows("samples_prime", samples_prime)
    if np.asarray(samples).shape[1:] != np.asarray(samples_prime).shape[1:]:
        raise AuditInputError(f"{_WHERE}: samples_prime must have the trailing shape of samples, "
                              f"{np.asarray(samples).shape[1:]}, got {np.asarray(samples_prime).shape[1:]}")
    numeric = _is_numeric(a) and _is_numeric(b)
    if method == "classifier" and not numeric:
        raise AuditInputError(f"{_WHERE}: method='classifier' needs numeric outputs, got dtypes {a.dtype} and "
                              f"{b.dtype}; use method='exact' or 'auto'")

    rng = np.random.default_rng(seed)
    a = a[rng.permutation(a.shape[0])]
    b = b[rng.permutation(b.shape[0])]
    chosen = method
    if method == "auto":
        chosen = "exact"
        if numeric:
            head = min(a.shape[0], b.shape[0]) // 2
            from .events import distinct_rows

            head = min(head, max_train)
            chosen = "exact" if distinct_rows(np.concatenate([a[:head], b[:head]])) <= MAX_ATOMS else "classifier"
    if chosen == "exact":
        fit_a = fit_b = 0
    else:
        fit_a, fit_b = min(a.shape[0] // 4, max_train), min(b.shape[0] // 4, max_train)
    na, nb = fit_a + (a.shape[0] - fit_a) // 2, fit_b + (b.shape[0] - fit_b) // 2
    alpha = per_bound_alpha(conf)
    cert_a, cert_b = a[na:], b[nb:]
    runner = _exact if chosen == "exact" else _classifier
    results, info = runner(a[:na], b[:nb], cert_a, cert_b, eps=eps, dlt=dlt, alpha=alpha, rng=rng, seed=seed,
                           fit=(fit_a, fit_b))
    return _report(results, info, eps=eps, dlt=dlt, conf=conf, method=chosen, n_train=(na, nb))


_Results = dict[str, tuple[CertifiedEvent, str, float]]


def _exact(train_a: np.ndarray, train_b: np.ndarray, cert_a: np.ndarray, cert_b: np.ndarray, *, eps: float,
           dlt: float, alpha: float, rng: np.random.Generator, seed: int,
           fit: tuple[int, int]) -> tuple[_Results, dict[str, Any]]:
    """One exact (atom-set) event per order, chosen on the training rows and certified on the others."""
    from .events import atoms, choose_atom_event

    ids_a, ids_b, labels = atoms(np.concatenate([train_a, cert_a]), np.concatenate([train_b, cert_b]))
    ta, tb = ids_a[: train_a.shape[0]], ids_b[: train_b.shape[0]]
    ca, cb = ids_a[train_a.shape[0]:], ids_b[train_b.shape[0]:]
    results: _Results = {}
    for order, (sel_num, sel_den, cert_num, cert_den) in (("P/P'", (ta, tb, ca, cb)), ("P'/P", (tb, ta, cb, ca))):
        event, proj = choose_atom_event(sel_num, sel_den, labels, n_cert=sel_num.size, n_cert_prime=sel_den.size,
                                        epsilon=eps, delta=dlt, alpha=alpha)
        k, kp = int(event.contains(cert_num).sum()), int(event.contains(cert_den).sum())
        results[order] = (certify_event(k, cert_num.size, kp, cert_den.size, epsilon=eps, delta=dlt, alpha=alpha),
                          event.describe(), proj)
    return results, {"atoms": len(labels)}


def _classifier(train_a: np.ndarray, train_b: np.ndarray, cert_a: np.ndarray, cert_b: np.ndarray, *, eps: float,
                dlt: float, alpha: float, rng: np.random.Generator, seed: int,
                fit: tuple[int, int]) -> tuple[_Results, dict[str, Any]]:
    """A learned score (fitted on the first ``fit`` training rows), one threshold event per order on it."""
    from .classifier import fit_score
    from .sniper import choose_threshold_event

    fa, fb = fit
    score = fit_score(train_a[:fa].astype(float), train_b[:fb].astype(float), seed=seed)
    sel_a, sel_b = score(train_a[fa:]), score(train_b[fb:])
    cert_sa, cert_sb = score(cert_a), score(cert_b)
    results: _Results = {}
    for order, direction, (sel_num, sel_den, cert_num, cert_den) in (
            ("P/P'", 1, (sel_a, sel_b, cert_sa, cert_sb)), ("P'/P", -1, (sel_b, sel_a, cert_sb, cert_sa))):
        event, proj = choose_threshold_event(sel_num, sel_den, direction=direction, n_cert=sel_num.size,
                                             n_cert_prime=sel_den.size, epsilon=eps, delta=dlt, alpha=alpha)
        k = int(event.contains(cert_num, rng).sum())
        kp = int(event.contains(cert_den, rng).sum())
        results[order] = (certify_event(k, cert_num.size, kp, cert_den.size, epsilon=eps, delta=dlt, alpha=alpha),
                          event.describe(), proj)
    return results, {"fit_rows": [fa, fb], "features": score.features.size}


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

"""The auditor's closed-form fits: the first Newton step of the balanced logistic objective, a ridge regression.

:mod:`.classifier` fits its scores on at most :data:`CLOSED_FORM_ROWS` rows with :func:`newton_steps`, one fit
per penalty of :data:`NEWTON_STEP_ALPHAS` (the derivation is in
:func:`~accounting.auditing.classifier.fit_score`'s objective): the
normal equations on scipy's Cholesky factorization, the solve scikit-learn's ``RidgeClassifier(solver="cholesky")``
makes, without its copies and checks (tested against it to 1e-12), one Gram product shared by all penalties.

Example:
    >>> import numpy as np
    >>> z = np.random.default_rng(0).normal(size=(40, 3))
    >>> [m.alpha for m in newton_steps(z, 20)[0]]
    [1.0, 32.0, 1000.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .threads import threads_for

__all__ = ["CLOSED_FORM_ROWS", "NEWTON_STEP_ALPHAS", "balanced_weights", "newton_steps", "refuse_nonfinite",
           "row_major_columns"]

CLOSED_FORM_ROWS = 1000
"""Fits of at most this many rows are closed-form ridge regressions (:func:`newton_steps`, one per penalty of
:data:`NEWTON_STEP_ALPHAS`), larger ones lbfgs's optimum of the logistic objective. On the privacy check's fits
(500 rows of 80 to 1470 strongly correlated features: values, magnitudes, squares, order statistics) the
iterative solvers were overhead-bound: Newton-CG took 5-11 Newton steps of some hundred Hessian-vector products,
lbfgs 44-200 iterations, 5-54 ms per fit (dpsda: 53 ms each of the two); a closed form costs one Gram matrix
per feature map and one Cholesky factorization per penalty (dpsda: both maps at the three penalties 17-30 ms,
the Gram products 8, the factorizations 2 each). On many rows the Gram matrix is a pass over all of
them too, and the large-sample power figures rest on the converged fit, which is kept."""

NEWTON_STEP_ALPHAS = (1.0, 32.0, 1000.0)
"""The ridge penalties of the closed-form fits (:data:`CLOSED_FORM_ROWS`), each fit a candidate score
(:func:`~accounting.auditing.classifier.fit_scores`). Penalty ``alpha`` is the first Newton step from zero of
the logistic objective of
inverse regularization ``C = 4 / alpha`` (:func:`~accounting.auditing.classifier.fit_score`): 4, 1/8 and 1/250.
No single penalty serves every
mechanism: on 12 seeds of 1000 samples per side, audited as the privacy check does (250 fitting rows per side,
low bits), the step for ``C = 1`` (penalty 4) certified less than the converged logistic fit of ``C = 1`` where
one release of 294 carries the shift (0.19 against 0.32) or releases go missing with the input (1.66 against
1.79), more on a Gaussian random walk (1.46 against 1.17); the best single penalty was 1000, 1000 and 1/4 there,
64 on ``under_noised``'s transcripts. With these three penalties (about 32 apart) as candidates, on 16 other
seeds, the mean bound was 0.48, 2.07 and 1.98 against the converged fit's 0.43, 1.69 and 1.22 (1.38 against
1.37 on ``under_noised``); on the low-dimensional testbed mechanisms at 1000 and 2000 samples per side it moved
by -0.03 to +0.02 (the seeds' spread: 0.08 to 0.4), a little below the single penalty's there (more candidates,
more chance that the selection rows favour a weaker one)."""


def row_major_columns(feats: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Columns ``cols`` of ``feats`` as a row-major array, the layout a feature map returns (``feats[:, cols]``
    would be column-major, and the solver's and the scores' matrix products round differently on it)."""
    return np.take(feats, cols, axis=1)


def refuse_nonfinite(coef: np.ndarray, intercept: Any, z: np.ndarray) -> None:
    """Refuse a fit whose coefficients or intercept are not finite.

    Raises:
        ValueError: naming which, and the largest standardized feature.
    """
    for name, value in (("coefficients", coef), ("intercept", intercept)):
        if not np.isfinite(value).all():
            raise ValueError(f"the classifier's fitted {name} is not finite (standardized features up to "
                             f"{float(np.abs(z).max()):.3g})")


def newton_steps(z: np.ndarray, positives: int, cols: np.ndarray | None = None,
                  z_sub: np.ndarray | None = None) -> list[list[Any]]:
    """The closed-form Newton steps (:func:`~accounting.auditing.classifier.fit_score`), one per penalty of
    :data:`NEWTON_STEP_ALPHAS`, on the
    standardized training rows ``z`` (the first ``positives`` under ``P``) and, given ``cols``, on the rows
    ``z_sub`` of a column selection ``cols`` of them (the linear features of
    :func:`~accounting.auditing.classifier.fit_scores`): per matrix, a
    list of fitted ``RidgeClassifier(alpha)`` estimators of balanced sample weights (their ``coef_``,
    ``intercept_`` and ``classes_`` set), in the order of the penalties.

    The rows are centered at their weighted mean and scaled by the root of
    their weights (the intercept is then free); the ridge normal equations
    are solved by Cholesky on the ``n x n`` kernel matrix ``X X'`` (``w = X'
    (X X' + alpha I)^-1 y``) when there are more columns than rows, else on
    ``X'X`` (``w = (X'X + alpha I)^-1 X'y``): scikit-learn's ``cholesky``
    solver, without its copies and checks (the rows are finite and
    standardized). Each matrix's Gram product is computed once for all
    penalties. When ``z_sub`` is the selected columns of ``z`` (``cols`` of
    more than one column: :func:`~accounting.auditing.classifier.fit_scores`), they are centered and scaled
    alike, and the selection's ``X'X`` is a block of the whole one.

    Args:
        z: standardized training rows ``(n, d)``, the first ``positives`` under ``P``.
        positives: how many rows are under ``P``.
        cols, z_sub: optionally a column selection of ``z`` and its standardized rows.

    Returns:
        Per matrix (``z``, then ``z_sub``), the fits in the order of :data:`NEWTON_STEP_ALPHAS`.

    Raises:
        ValueError: a side has no rows; a fitted coefficient or intercept is not finite.

    Example:
        >>> z = np.random.default_rng(0).normal(size=(40, 3))
        >>> z[:20, 0] += 1.0
        >>> fits = newton_steps(z, 20)[0]
        >>> [m.alpha for m in fits], bool(fits[0].coef_[0] > 0)
        ([1.0, 32.0, 1000.0], True)
    """
    import scipy.linalg
    from sklearn.linear_model import RidgeClassifier

    n = z.shape[0]
    if not 0 < positives < n:
        raise ValueError(f"the score needs training rows of both sides, got {positives} under P and "
                         f"{n - positives} under P'")
    labels = np.zeros(n, dtype=int)
    labels[:positives] = 1
    u = balanced_weights(labels)
    root, targets = np.sqrt(u), 2.0 * labels - 1.0
    t_mean = float(u @ targets / u.sum())
    y = (targets - t_mean) * root
    with threads_for(z.size):
        mean = u @ z / u.sum()
        x = z - mean
        x *= root[:, None]
        sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(z, x, mean)]
        shared = cols if cols is not None and z_sub is not None and cols.size > 1 else None
        if z_sub is not None and shared is not None:  # the selected columns of z: centered and scaled alike
            sets.append((z_sub, row_major_columns(x, shared), mean[shared]))
        elif z_sub is not None:
            sub_mean = u @ z_sub / u.sum()
            sets.append((z_sub, (z_sub - sub_mean) * root[:, None], sub_mean))
        grams = _grams([x for _, x, _ in sets], shared)
        models = []
        for (zz, xx, mm), gram in zip(sets, grams):
            kernel = _kernel_form(xx)
            rhs = y if kernel else xx.T @ y
            per_alpha = []
            # LAPACK factors a column-major matrix in place: each penalty's matrix is written into one column-major
            # buffer (the copy scipy would make of a row-major one, which it then factors), read by the solve
            # before the next penalty overwrites it
            g = np.empty_like(gram, order="F")
            diag = np.diag_indices_from(g)
            for alpha in NEWTON_STEP_ALPHAS:
                g[...] = gram
                g[diag] += alpha
                sol = scipy.linalg.cho_solve(scipy.linalg.cho_factor(g, lower=True, overwrite_a=True, check_finite=False),
                                             rhs, check_finite=False)
                coef = xx.T @ sol if kernel else sol
                intercept = np.array([t_mean - float(mm @ coef)])
                refuse_nonfinite(coef, intercept, zz)
                model = RidgeClassifier(alpha=alpha, solver="cholesky")
                model.coef_, model.intercept_, model.classes_ = coef, intercept, np.array([0, 1])
                model.n_features_in_ = int(zz.shape[1])
                per_alpha.append(model)
            models.append(per_alpha)
    return models


def _kernel_form(x: np.ndarray) -> bool:
    """Whether :func:`newton_steps` solves the fit of the centered rows ``x`` on the ``n x n`` kernel matrix (more
    columns than rows) rather than on ``x'x``."""
    return bool(x.shape[1] > x.shape[0])


def _grams(xs: list[np.ndarray], cols: np.ndarray | None) -> list[np.ndarray]:
    """The Gram matrix of each centered matrix in ``xs`` for :func:`newton_steps`: ``x x'`` (``n x n``) when it
    has more columns than rows, else ``x'x``; with ``cols``, ``xs[1]`` is columns ``cols`` of ``xs[0]``, and when
    both Gram matrices are ``x'x`` the selection's is a block of the whole one."""
    def own(x: np.ndarray) -> np.ndarray:
        return x @ x.T if _kernel_form(x) else x.T @ x

    if cols is None:
        return [own(x) for x in xs]
    x, sub = xs
    if _kernel_form(x):  # a kernel matrix costs a product over every column: nothing to share
        return [own(x), own(sub)]
    full = own(x)
    return [full, np.ascontiguousarray(full[np.ix_(cols, cols)])]


def balanced_weights(labels: np.ndarray) -> np.ndarray:
    """Per-row weights of scikit-learn's ``class_weight="balanced"``: ``n / (2 * n_class)`` for a row of a class
    with ``n_class`` of the ``n`` rows (the same numbers scikit-learn computes, given as sample weights: its
    class-weight path re-validates and re-encodes the labels three times, a quarter of a small fit's time)."""
    counts = np.bincount(labels, minlength=2).astype(float)
    with np.errstate(divide="ignore"):  # an empty class: scikit-learn's own error follows, not a warning
        return (counts.sum() / (2.0 * counts))[labels]

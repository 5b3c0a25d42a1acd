"""The learned score: a linear score of simple features of the output, fitted to the logistic objective.

Choice and justification. The score only has to *rank* outputs by how much
more likely they are under ``P`` than under ``P'``; the event is then a
threshold on it (:mod:`.sniper`) certified on held-out samples, so a poor
classifier costs power, never soundness. Logistic regression on the features
of :mod:`.features` (raw values, ``|x|``, ``x**2``, order statistics, argmax
one-hot, NaN/inf indicators) represents the exact log-likelihood ratio of
Laplace and Gaussian location pairs and a monotone function of it for the
maximum of noisy values; DP-Sniper (Bichsel et al., S&P 2021) reports its
logistic-regression variant about as powerful as its neural network on the
standard broken mechanisms. A fit of at most :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows
(the privacy check's: 250 rows per side) is the first Newton step of that
logistic objective from zero at each regularization of
:data:`~accounting.auditing.newton_step.NEWTON_STEP_ALPHAS`, a ridge regression in closed form
(:func:`_fit_model`); larger fits run ``lbfgs`` to convergence (``2.5e5``
standardized rows per side of a few dozen features take a few seconds, which
keeps ``1e6`` samples of a 10-dimensional output well under 30 s; the other
samples only need a matrix product). Gradient boosting
(``HistGradientBoostingClassifier``) was the alternative: more flexible but
several times slower per fit, and its piecewise-constant score produces
large ties that the randomized threshold then has to split.

Two candidate scores. The quadratic features make the score non-monotone in
the output: for the maximum of noisy values (Ding et al.'s Alg. 7) it rises
again in the far upper tail, so a threshold event on it mixes the two tails
and certifies less than the best event ("maximum below a threshold"). So
:func:`fit_scores` fits a second, *linear* score (raw values and order
statistics only, monotone in each), and the threshold event of each order of
the pair is chosen on whichever score gives it the better bound on the
selection samples. Choosing among scores uses no certification sample, so the
certification and its union bound are unchanged. A closed-form fit (at most
:data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows) gives each of the two scores at every penalty of
:data:`~accounting.auditing.newton_step.NEWTON_STEP_ALPHAS`, all of them candidates alike.

On request (``low_bits=True``) a third candidate reads what no real-valued
score sees: the lowest mantissa bits of every released number
(:mod:`.lowbits`, a Bernoulli naive Bayes model counted on the same
training rows), so an output that hides its input in the last bits of its
floats (Mironov, CCS 2012) is refuted by the same certification. It is off by
default: a textbook floating-point mechanism leaks through those bits too
(:mod:`.lowbits` gives the numbers), and an audit of a claim about the
real-number mechanism must not count that against it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .features import FeatureMap, fit_features
from .atoms import AtomScore, fit_atom_score
from .lowbits import LowBitScore, fit_low_bit_score
from .newton_step import (CLOSED_FORM_ROWS, NEWTON_STEP_ALPHAS, balanced_weights, newton_steps, refuse_nonfinite,
                          row_major_columns)
from .threads import finite_features, threads_for

__all__ = ["LearnedScore", "ScoreCandidates", "fit_score", "fit_scores"]

CHUNK = 100_000
"""Rows scored at a time (bounds the memory of the feature matrix)."""



@dataclass(frozen=True)
class LearnedScore:
    """A fitted score: larger values mean "more likely under ``P`` than under ``P'``".

    Attributes:
        features: the feature map.
        model: the fitted scikit-learn pipeline (scaler and linear classifier: :func:`_fit_model`).
    """

    features: FeatureMap
    model: Any

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Scores (log-odds of ``P``) of the rows of ``x``, shape ``(n,)``.

        :meth:`decide` of the features, read part by part (:func:`_part_scores`): the same standardized
        values and coefficients, without the ``(n, features)`` matrices; the sum runs part by part, so a
        score can differ from :meth:`decide`'s in its last bits.
        """
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape[0])
        layout = _Layout.of(self, np.arange(self.features.size), self.features.size)
        with threads_for(min(x.shape[0], CHUNK) * self.features.size):
            for start in range(0, x.shape[0], CHUNK):
                out[start:start + CHUNK] = _part_scores(self.features.parts(x[start:start + CHUNK]),
                                                        self.features.dim, [layout], [True])[:, 0]
        return _refuse_nan(out)

    def decide(self, feats: np.ndarray) -> np.ndarray:
        """The model's scores of feature rows ``feats`` (this score's features), NaN not yet refused.

        The fitted pipeline's ``decision_function`` (standardize, then the
        linear score), computed from its fitted parameters with the same
        operations: scikit-learn's per-call input checks cost more than the
        product itself on the few hundred rows of a privacy check's blocks.
        """
        return self.linear(self.standardize(feats))

    def standardize(self, feats: np.ndarray) -> np.ndarray:
        """The standardized features (the pipeline's scaler, its operations), a new row-major array."""
        scaler = self.model[0]
        z = feats - scaler.mean_
        z /= scaler.scale_
        return z

    def linear(self, z: np.ndarray) -> np.ndarray:
        """The linear classifier's scores of standardized feature rows ``z``, shape ``(n,)``."""
        logit = self.model[-1]
        with threads_for(z.size):
            return (z @ logit.coef_.T + logit.intercept_).reshape(-1)


def _refuse_nan(out: np.ndarray) -> np.ndarray:
    """``out``, unless a score is NaN: the scan ``assume_finite`` skips would have refused its row (see
    :func:`fit_score`).

    Raises:
        ValueError: naming the first NaN row.
    """
    if np.isnan(out).any():
        row = int(np.argmax(np.isnan(out)))
        raise ValueError(f"the fitted score is NaN at row {row}: its standardized features are not finite")
    return out


@dataclass(frozen=True)
class ScoreCandidates:
    """Several fitted scores evaluated together: ``scores(x)`` has one column per score.

    Attributes:
        scores: the fitted scores, the first a learned one; names: their names (``"quadratic"``, ``"linear"``,
            ``"low-bits"``, ``"quadratic (penalty 32)"``, ...: :func:`fit_scores`).
    """

    scores: tuple[LearnedScore | LowBitScore | AtomScore, ...]
    names: tuple[str, ...]

    @property
    def first(self) -> LearnedScore:
        """The first (richest) learned score, whose features the other learned scores read."""
        first = self.scores[0]
        assert isinstance(first, LearnedScore)
        return first

    @property
    def features(self) -> FeatureMap:
        """The feature map of the first (richest) score."""
        return self.first.features

    def threads(self, rows: int) -> Any:
        """The thread context of scoring ``rows`` rows (one thread for blocks of at most
        :data:`~accounting.auditing.threads.ONE_THREAD_ENTRIES` features), to hold around many calls: each
        call's own contexts then cost
        nothing (:func:`~accounting.auditing.threads.threads`).

        Example:
            >>> rng = np.random.default_rng(0)
            >>> s = fit_scores(rng.normal(1, 1, (100, 2)), rng.normal(0, 1, (100, 2)))
            >>> with s.threads(300):
            ...     s(np.zeros((300, 2))).shape
            (300, 6)
        """
        return threads_for(min(rows, CHUNK) * self.features.size)

    def __call__(self, x: np.ndarray, columns: tuple[int, ...] | None = None) -> np.ndarray:
        """Scores of the rows of ``x``, shape ``(n, len(scores))``; with ``columns``, only those scores' columns
        are computed (each the same numbers as without), the others are NaN.

        The features of each block of rows are computed once, part by part,
        by the first score's map (:meth:`~accounting.auditing.features.FeatureMap.parts`):
        a score whose features are a column selection of them (the linear
        map's, :meth:`~accounting.auditing.features.FeatureMap.columns_in`)
        reads those parts, which hold the values its own map computes. When
        its scaler's mean and scale are the first scaler's entries of those
        columns (:func:`fit_scores`), it reads the first score's
        *standardized* parts, the same numbers again (standardizing is
        entrywise). So each score equals ``score(x)``, bit for bit. A score
        that is not a learned one (the low-bits score) reads the rows itself.
        A score left out of ``columns`` is not computed (the certification
        counts only the events' scores): the others are computed as without
        ``columns`` (a score reads the first's standardized parts only where
        they hold its own numbers), so they are the same numbers.

        Example:
            >>> rng = np.random.default_rng(0)
            >>> s = fit_scores(rng.normal(1, 1, (100, 2)), rng.normal(0, 1, (100, 2)))
            >>> rows = rng.normal(size=(5, 2))
            >>> bool(np.array_equal(s(rows, columns=(1,))[:, 1], s(rows)[:, 1])), bool(np.isnan(s(rows, (1,))[:, 0]).all())
            (True, True)
        """
        x = np.asarray(x, dtype=float)
        first = self.first
        layouts, shared, own = self._layouts
        wanted = range(len(self.scores)) if columns is None else sorted(set(columns))
        mapped = [j for j in wanted if j not in own]
        own_wanted = [j for j in wanted if j in own]
        # the scores listed read the standardized parts of the first of them: the first map's entries when it is
        # the first score or shares them; else every score standardizes its parts itself
        reads_first = bool(mapped) and (mapped[0] == 0 or shared[mapped[0]])
        sharing = [shared[j] and reads_first for j in mapped]
        out = np.empty((x.shape[0], len(self.scores))) if columns is None else np.full((x.shape[0], len(self.scores)),
                                                                                         np.nan)
        with threads_for(min(x.shape[0], CHUNK) * first.features.size):
            for start in range(0, x.shape[0], CHUNK):
                block = x[start:start + CHUNK]
                rows = slice(start, start + block.shape[0])
                if mapped:
                    out[rows, mapped] = _part_scores(first.features.parts(block), first.features.dim,
                                                     [layouts[j] for j in mapped], sharing)
                for j in own_wanted:  # features that are not columns of the first map's: its own parts
                    out[rows, j] = self.scores[j](block)
        for j in wanted:
            _refuse_nan(out[:, j])
        return out

    @functools.cached_property
    def _layouts(self) -> tuple[dict[int, _Layout], list[bool], set[int]]:
        """Per score laid out on the first map's columns (when they are a selection of them), whether its
        scaler's entries are the first's there, and the scores read from their own map."""
        first = self.first
        size = first.features.size
        layouts: dict[int, _Layout] = {}
        shared: list[bool] = []
        own: set[int] = set()
        for j, score in enumerate(self.scores):
            if not isinstance(score, LearnedScore):
                shared.append(False)
                own.add(j)
                continue
            cols = score.features.columns_in(first.features)
            shared.append(cols is not None and _scaler_is_columns(score.model[0], first.model[0], cols))
            if cols is None:
                own.add(j)
            else:
                layouts[j] = _Layout.of(score, cols, size)
        return layouts, shared, own


@dataclass(frozen=True)
class _Layout:
    """A fitted score's standardizer and coefficients on the columns of a feature map that holds its features
    (columns it does not read: mean 0, scale 1, coefficient 0, absent).

    Attributes:
        mean, scale, coef: per column of the map.
        present: which columns the score reads (a part's columns are all read or none).
        intercept: the linear classifier's intercept.
    """

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    present: np.ndarray
    intercept: float

    @classmethod
    def of(cls, score: LearnedScore, cols: np.ndarray, size: int) -> _Layout:
        """``score``, whose features are columns ``cols`` of a map of ``size`` features."""
        scaler, logit = score.model[0], score.model[-1]
        mean, scale, coef, present = np.zeros(size), np.ones(size), np.zeros(size), np.zeros(size, dtype=bool)
        mean[cols], scale[cols], coef[cols], present[cols] = scaler.mean_, scaler.scale_, np.ravel(logit.coef_), True
        return cls(mean, scale, coef, present, float(logit.intercept_[0]))


def _part_scores(parts: list[Any], dim: int, layouts: list[_Layout], shared: list[bool]) -> np.ndarray:
    """The scores of one block of rows, ``(n, len(layouts))``, from its feature ``parts``.

    Each score is its intercept plus, part by part, the standardized part
    (``(values - mean) / scale``, the operations of
    :meth:`LearnedScore.standardize`) times its coefficients there. A score
    whose scaler's entries are the first layout's (``shared``) reads the
    first layout's standardized part. The one-hot part of ``argmax v`` adds
    ``sum_k (-mean_k / scale_k) coef_k + coef_a / scale_a`` for the argmax
    ``a`` of each row: the same number as the standardized one-hot columns
    times the coefficients, in another order of operations.
    """
    n = next(len(p.top) if p.values is None else p.values.shape[0] for p in parts)
    out = np.empty((n, len(layouts)))
    out[...] = [lay.intercept for lay in layouts]
    for part in parts:
        cols = slice(part.start, part.start + part.width(dim))
        z_first = None
        for j, lay in enumerate(layouts):
            present = lay.present[cols]
            if not present.any():
                continue
            assert present.all(), "a score reads all of a part's columns or none"
            mean, scale, coef = lay.mean[cols], lay.scale[cols], lay.coef[cols]
            if part.values is None:
                out[:, j] += float(np.dot(-mean / scale, coef))
                out[:, j] += (coef / scale)[part.top]
                continue
            if shared[j] and j > 0 and z_first is not None:
                z = z_first
            else:
                z = part.values - mean
                z /= scale
                if j == 0:
                    z_first = z
            out[:, j] += z @ coef
    return out


def fit_scores(x: np.ndarray, x_prime: np.ndarray, *, seed: int = 0, low_bits: bool = False) -> ScoreCandidates:
    """The quadratic-feature score and the linear one (module docstring), fitted on the same training rows;
    with ``low_bits``, the low-bits score (:func:`~accounting.auditing.lowbits.fit_low_bit_score`) too; on at
    most :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows, after those, both learned scores at
    each further penalty of
    :data:`~accounting.auditing.newton_step.NEWTON_STEP_ALPHAS` (named ``"quadratic (penalty 32)"`` and so on).

    The features of the training rows are computed and standardized once:
    the linear ones are a column selection of the quadratic ones (the same
    values its map computes), and the standardizer's mean and scale of a
    column depend on that column alone, so the linear fit reads the selected
    columns of the standardized quadratic features and the matching entries
    of the quadratic fit's standardizer (:func:`_scaler_columns`): the
    numbers :func:`fit_score` computes for each score alone. (A column's sums
    over the rows of a matrix of several columns add the rows in order,
    whichever the other columns; a one-column matrix is summed pairwise, so a
    single linear feature is standardized on its own.) The closed-form fits
    of at most :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows also share a Gram product where
    they can (:func:`~accounting.auditing.newton_step.newton_steps`), so their coefficients are those of each
    fit alone up to rounding.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s = fit_scores(rng.normal(1, 1, (600, 2)), rng.normal(0, 1, (600, 2)))
        >>> s(np.zeros((3, 2))).shape, s.names
        ((3, 2), ('quadratic', 'linear'))
        >>> fit_scores(rng.normal(1, 1, (500, 2)), rng.normal(0, 1, (500, 2)), low_bits=True).names[:4]
        ('quadratic', 'linear', 'low-bits', 'quadratic (penalty 32)')
    """
    from sklearn.pipeline import Pipeline

    both = np.concatenate([x, x_prime])
    quad, lin = fit_features(both, linear=False), fit_features(both, linear=True)
    feats = quad.transform(both)
    cols = lin.columns_in(quad)
    assert cols is not None  # the same outputs: the linear map is a column selection of the quadratic one
    with threads_for(feats.size):  # the largest matrix of both fits: the threads are limited once for both
        scaler, z = _standardize(feats)
        if cols.size > 1:
            lin_scaler, lin_z = _scaler_columns(scaler, cols), row_major_columns(z, cols)
        else:  # one column: its sums run over a contiguous array, pairwise, and round unlike a column's of many
            lin_scaler, lin_z = _standardize(row_major_columns(feats, cols))
        extra: tuple[LearnedScore, ...] = ()
        extra_names: tuple[str, ...] = ()
        if z.shape[0] <= CLOSED_FORM_ROWS:  # the Newton steps, sharing the Gram products (newton_steps)
            steps = newton_steps(z, x.shape[0], cols, lin_z)
            made = [[LearnedScore(fmap, Pipeline([("standardscaler", sc), ("classifier", model)])) for model in ms]
                    for fmap, sc, ms in zip((quad, lin), (scaler, lin_scaler), steps)]
            learned = (made[0][0], made[1][0])
            for k, alpha in enumerate(NEWTON_STEP_ALPHAS[1:], start=1):
                extra += (made[0][k], made[1][k])
                extra_names += (f"quadratic (penalty {alpha:g})", f"linear (penalty {alpha:g})")
        else:
            learned = (_fit_model(quad, scaler, z, x.shape[0], seed=seed),
                       _fit_model(lin, lin_scaler, lin_z, x.shape[0], seed=seed))
        atoms = fit_atom_score(x, x_prime)  # values repeated in the training rows: an atom in a continuous law
        own: tuple[LowBitScore | AtomScore, ...] = () if atoms is None else (atoms,)
        own_names: tuple[str, ...] = () if atoms is None else ("atoms",)
        if not low_bits:
            return ScoreCandidates((*learned, *own, *extra), ("quadratic", "linear", *own_names, *extra_names))
        # within the thread limit too: a matrix product of its fit outside it wakes the BLAS threads, and their
        # spinning cost every later step of a privacy check half again its CPU time
        return ScoreCandidates((*learned, fit_low_bit_score(x, x_prime), *own, *extra),
                               ("quadratic", "linear", "low-bits", *own_names, *extra_names))


def fit_score(x: np.ndarray, x_prime: np.ndarray, *, seed: int = 0, max_iter: int = 300,
              linear: bool = False) -> LearnedScore:
    """Fit the score on training rows of ``P`` (``x``) and ``P'`` (``x_prime``), both ``(n, d)`` numeric.

    Args:
        x, x_prime: training rows (never the certification samples).
        seed: random state of lbfgs (deterministic, as is the closed form; kept for completeness).
        max_iter: iterations of lbfgs (fits of more than
            :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows; smaller fits are closed-form).
        linear: use the linear feature map (:func:`~accounting.auditing.features.fit_features`).

    Returns:
        A :class:`LearnedScore`: on at most :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows the
            first penalty's closed-form fit
        only (:func:`fit_scores` gives every penalty's).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s = fit_score(rng.normal(1, 1, (500, 1)), rng.normal(0, 1, (500, 1)))
        >>> bool(s(np.array([[3.0]]))[0] > s(np.array([[-3.0]]))[0])
        True
    """
    both = np.concatenate([x, x_prime])
    fmap = fit_features(both, linear=linear)
    scaler, z = _standardize(fmap.transform(both))
    return _fit_model(fmap, scaler, z, x.shape[0], seed=seed, max_iter=max_iter)


def _standardize(feats: np.ndarray) -> tuple[Any, np.ndarray]:
    """scikit-learn's ``StandardScaler`` fitted on the feature rows ``feats``, and the standardized rows.

    Raises:
        ValueError: the fitted mean or scale is not finite (see :func:`_fit_model`).
    """
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler()
    with finite_features():
        z = scaler.fit_transform(feats)
    # the features are finite, but standardizing them can overflow (squares of outputs beyond ~1e77 have an
    # infinite variance): scikit-learn's scan, skipped under assume_finite, then refused the fit; a fit on
    # non-finite standardized features is refused here, not returned as a score that is NaN everywhere
    for name, value in (("mean", scaler.mean_), ("scale", scaler.scale_)):
        if not np.isfinite(value).all():
            raise ValueError(f"the classifier's fitted {name} is not finite (outputs too large to standardize: "
                             f"largest feature {float(np.abs(feats).max()):.3g})")
    return scaler, z


def _scaler_is_columns(sub: Any, scaler: Any, cols: np.ndarray) -> bool:
    """Whether the fitted scaler ``sub`` has the mean and scale entries ``cols`` of ``scaler``'s, exactly."""
    return bool(np.array_equal(sub.mean_, scaler.mean_[cols]) and np.array_equal(sub.scale_, scaler.scale_[cols]))


def _scaler_columns(scaler: Any, cols: np.ndarray) -> Any:
    """The fitted ``StandardScaler`` of columns ``cols`` of ``scaler``'s features: its mean, variance and scale
    entries (each column's are computed from that column alone, so these are the numbers a scaler fitted on
    those columns holds, bit for bit)."""
    from sklearn.preprocessing import StandardScaler

    sub = StandardScaler()
    sub.mean_, sub.var_, sub.scale_ = scaler.mean_[cols], scaler.var_[cols], scaler.scale_[cols]
    sub.n_samples_seen_, sub.n_features_in_ = scaler.n_samples_seen_, int(cols.size)
    return sub


def _fit_model(fmap: FeatureMap, scaler: Any, z: np.ndarray, positives: int, *, seed: int, max_iter: int = 300
               ) -> LearnedScore:
    """:func:`fit_score` on the training rows' standardized features ``z`` (the first ``positives`` rows under
    ``P``; ``scaler`` standardized them).

    The objective is scikit-learn's L2-regularized logistic regression with
    ``class_weight="balanced"`` given as the sample weights it stands for
    (:func:`~accounting.auditing.newton_step.balanced_weights`): ``C sum_i u_i l(y_i, m_i) + |w|^2 / 2`` with
    margins ``m_i = z_i w + b``. On more than :data:`~accounting.auditing.newton_step.CLOSED_FORM_ROWS` rows
    lbfgs minimizes it for ``C = 1``. On fewer the score is its first Newton
    step from ``w = 0, b = 0`` for ``C = 4 / alpha``, ``alpha`` the first of
    :data:`~accounting.auditing.newton_step.NEWTON_STEP_ALPHAS`: there each loss term is ``log 2 - t_i m_i / 2
    + m_i^2 / 8 + O(m^3)`` (``t_i = +-1``), so the step minimizes ``sum_i u_i
    (m_i - 2 t_i)^2 + alpha |w|^2``, a weighted ridge regression of the labels
    with a free intercept (scikit-learn's ``RidgeClassifier(alpha)``, whose
    targets are ``t_i``: the same direction at half the length), solved in
    closed form by :func:`~accounting.auditing.newton_step.newton_steps`.

    Raises:
        ValueError: the fitted coefficients or intercept are not finite.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    if z.shape[0] <= CLOSED_FORM_ROWS:
        model = newton_steps(z, positives)[0][0]
        return LearnedScore(fmap, Pipeline([("standardscaler", scaler), ("classifier", model)]))
    labels = np.zeros(z.shape[0], dtype=int)
    labels[:positives] = 1
    logit = LogisticRegression(C=1.0, max_iter=max_iter, random_state=seed, solver="lbfgs")
    with warnings.catch_warnings(), threads_for(z.size), finite_features():
        warnings.simplefilter("ignore", ConvergenceWarning)  # an unconverged fit is still a valid (weaker) score
        logit.fit(z, labels, sample_weight=balanced_weights(labels))
    refuse_nonfinite(logit.coef_, logit.intercept_, z)
    return LearnedScore(fmap, Pipeline([("standardscaler", scaler), ("classifier", logit)]))



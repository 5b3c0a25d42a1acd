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
standard broken mechanisms. A fit of at most :data:`CLOSED_FORM_ROWS` rows
(the privacy check's: 250 rows per side) is the first Newton step of that
logistic objective from zero at each regularization of
:data:`NEWTON_STEP_ALPHAS`, a ridge regression in closed form
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
:data:`CLOSED_FORM_ROWS` rows) gives each of the two scores at every penalty of
:data:`NEWTON_STEP_ALPHAS`, all of them candidates alike.

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

import contextlib
import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .features import FeatureMap, fit_features
from .lowbits import LowBitScore, fit_low_bit_score

__all__ = ["LearnedScore", "ScoreCandidates", "fit_score", "fit_scores"]

CHUNK = 100_000
"""Rows scored at a time (bounds the memory of the feature matrix)."""

ONE_THREAD_ENTRIES = 20_000_000
"""Feature matrices of at most this many entries are fitted and scored with one thread (BLAS and OpenMP).
Measured on a 2-core box shared with other jobs (OpenBLAS, 2 threads by default): the lbfgs fit of 500 rows of
300 features took 0.20 s of CPU with two BLAS threads and 0.08 s with one; 40,000 rows, 1.2e7 entries, 4.3 s
against 1.4 s. scikit-learn's loss and gradient run in OpenMP threads too, whose waiting costs as much CPU as the
fit itself on these sizes (the fit of 500 rows of 1470 features: 0.13 s of CPU in 0.065 s of wall time), and so
does scoring a few thousand rows. The lbfgs coefficients and the scores are identical (the threads split the
matrix products by output entry and the per-row loss terms by row); the closed-form fits' coefficients agree
to rounding (threaded Gram products and Cholesky factorizations add in another order: 5e-14 relative).
Larger matrices keep the threads the process has."""

CLOSED_FORM_ROWS = 1000
"""Fits of at most this many rows are closed-form ridge regressions (:func:`_newton_steps`, one per penalty of
:data:`NEWTON_STEP_ALPHAS`), larger ones lbfgs's optimum of the logistic objective. On the privacy check's fits
(500 rows of 80 to 1470 strongly correlated features: values, magnitudes, squares, order statistics) the
iterative solvers were overhead-bound: Newton-CG took 5-11 Newton steps of some hundred Hessian-vector products,
lbfgs 44-200 iterations, 5-54 ms per fit (dpsda: 53 ms each of the two); a closed form costs one Gram matrix
per feature map and one Cholesky factorization per penalty (dpsda: both maps at the three penalties 17-30 ms,
the Gram products 8, the factorizations 2 each). On many rows the Gram matrix is a pass over all of
them too, and the large-sample power figures rest on the converged fit, which is kept."""

NEWTON_STEP_ALPHAS = (1.0, 32.0, 1000.0)
"""The ridge penalties of the closed-form fits (:data:`CLOSED_FORM_ROWS`), each fit a candidate score
(:func:`fit_scores`). Penalty ``alpha`` is the first Newton step from zero of the logistic objective of
inverse regularization ``C = 4 / alpha`` (:func:`_fit_model`): 4, 1/8 and 1/250. No single penalty serves every
mechanism: on 12 seeds of 1000 samples per side, audited as the privacy check does (250 fitting rows per side,
low bits), the step for ``C = 1`` (penalty 4) certified less than the converged logistic fit of ``C = 1`` where
one release of 294 carries the shift (0.19 against 0.32) or releases go missing with the input (1.66 against
1.79), more on a Gaussian random walk (1.46 against 1.17); the best single penalty was 1000, 1000 and 1/4 there,
64 on ``under_noised``'s transcripts. With these three penalties (about 32 apart) as candidates, on 16 other
seeds, the mean bound was 0.48, 2.07 and 1.98 against the converged fit's 0.43, 1.69 and 1.22 (1.38 against
1.37 on ``under_noised``); on the low-dimensional testbed mechanisms at 1000 and 2000 samples per side it moved
by -0.03 to +0.02 (the seeds' spread: 0.08 to 0.4), a little below the single penalty's there (more candidates,
more chance that the selection rows favour a weaker one)."""


_CONTROLLER: Any = None
"""The process's :class:`threadpoolctl.ThreadpoolController`, made once (listing the loaded thread pools
costs milliseconds; limiting through a made controller costs microseconds)."""


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
        with _threads_for(min(x.shape[0], CHUNK) * self.features.size):
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
        with _threads_for(z.size):
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

    scores: tuple[LearnedScore | LowBitScore, ...]
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
        :data:`ONE_THREAD_ENTRIES` features), to hold around many calls: each call's own contexts then cost
        nothing (:func:`_threads`).

        Example:
            >>> rng = np.random.default_rng(0)
            >>> s = fit_scores(rng.normal(1, 1, (100, 2)), rng.normal(0, 1, (100, 2)))
            >>> with s.threads(300):
            ...     s(np.zeros((300, 2))).shape
            (300, 6)
        """
        return _threads_for(min(rows, CHUNK) * self.features.size)

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
        with _threads_for(min(x.shape[0], CHUNK) * first.features.size):
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
    most :data:`CLOSED_FORM_ROWS` rows, after those, both learned scores at each further penalty of
    :data:`NEWTON_STEP_ALPHAS` (named ``"quadratic (penalty 32)"`` and so on).

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
    of at most :data:`CLOSED_FORM_ROWS` rows also share a Gram product where
    they can (:func:`_newton_steps`), so their coefficients are those of each
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
    with _threads_for(feats.size):  # the largest matrix of both fits: the threads are limited once for both
        scaler, z = _standardize(feats)
        if cols.size > 1:
            lin_scaler, lin_z = _scaler_columns(scaler, cols), _columns(z, cols)
        else:  # one column: its sums run over a contiguous array, pairwise, and round unlike a column's of many
            lin_scaler, lin_z = _standardize(_columns(feats, cols))
        extra: tuple[LearnedScore, ...] = ()
        extra_names: tuple[str, ...] = ()
        if z.shape[0] <= CLOSED_FORM_ROWS:  # the Newton steps, sharing the Gram products (_newton_steps)
            steps = _newton_steps(z, x.shape[0], cols, lin_z)
            made = [[LearnedScore(fmap, Pipeline([("standardscaler", sc), ("classifier", model)])) for model in ms]
                    for fmap, sc, ms in zip((quad, lin), (scaler, lin_scaler), steps)]
            learned = (made[0][0], made[1][0])
            for k, alpha in enumerate(NEWTON_STEP_ALPHAS[1:], start=1):
                extra += (made[0][k], made[1][k])
                extra_names += (f"quadratic (penalty {alpha:g})", f"linear (penalty {alpha:g})")
        else:
            learned = (_fit_model(quad, scaler, z, x.shape[0], seed=seed),
                       _fit_model(lin, lin_scaler, lin_z, x.shape[0], seed=seed))
        if not low_bits:
            return ScoreCandidates((*learned, *extra), ("quadratic", "linear", *extra_names))
        # within the thread limit too: a matrix product of its fit outside it wakes the BLAS threads, and their
        # spinning cost every later step of a privacy check half again its CPU time
        return ScoreCandidates((*learned, fit_low_bit_score(x, x_prime), *extra),
                               ("quadratic", "linear", "low-bits", *extra_names))


def _columns(feats: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Columns ``cols`` of ``feats`` as a row-major array, the layout a feature map returns (``feats[:, cols]``
    would be column-major, and the solver's and the scores' matrix products round differently on it)."""
    return np.take(feats, cols, axis=1)


def _threads(limit: int | None) -> Any:
    """A context limiting the BLAS and OpenMP threads to ``limit`` (``None``: unchanged).

    Inside a one-thread context a nested one-thread context changes nothing
    and costs nothing (:func:`_one_thread`), so a caller that fits and scores
    many blocks limits the threads once around all of them."""
    if limit is None:
        return contextlib.nullcontext()
    if limit == 1:
        return _one_thread()
    return _controller().limit(limits=limit)


def _controller() -> Any:
    """The process's :data:`_CONTROLLER`, made on first use."""
    global _CONTROLLER
    if _CONTROLLER is None:
        import sklearn.linear_model  # noqa: F401  (its OpenMP runtime is loaded before the pools are listed)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


_ONE_THREAD = threading.local()
"""Per thread, how many :func:`_one_thread` contexts it has open (its outermost one holds the limit)."""


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """One BLAS and OpenMP thread until the calling thread's outermost such context closes (limiting the
    thread pools costs a tenth of a millisecond per context: listing and restoring each pool's threads).

    Each thread counts its own contexts, so one thread's exit never changes another's count; across threads the
    limits are threadpoolctl's (OpenMP's are per thread, BLAS's per process)."""
    depth = getattr(_ONE_THREAD, "depth", 0)
    if depth:
        _ONE_THREAD.depth = depth + 1
        try:
            yield
        finally:
            _ONE_THREAD.depth -= 1
        return
    with _controller().limit(limits=1):
        _ONE_THREAD.depth = 1
        try:
            yield
        finally:
            _ONE_THREAD.depth = 0


def _finite_features() -> Any:
    """scikit-learn's ``assume_finite``: the features are finite by construction (values clipped to
    ``+-CLIP`` before squaring, indicators for non-finite outputs: :mod:`.features`), so its scan of every
    entry for NaN and infinities can never fail and is skipped. The *standardized* features can still overflow
    (huge outputs); :func:`fit_score` and :meth:`LearnedScore.__call__` then refuse the fit and the NaN
    scores themselves."""
    import sklearn

    return sklearn.config_context(assume_finite=True, skip_parameter_validation=True)


def _threads_for(entries: int) -> Any:
    """One thread for matrices of at most :data:`ONE_THREAD_ENTRIES` entries, else the process's threads."""
    return _threads(1 if entries <= ONE_THREAD_ENTRIES else None)


def fit_score(x: np.ndarray, x_prime: np.ndarray, *, seed: int = 0, max_iter: int = 300,
              linear: bool = False) -> LearnedScore:
    """Fit the score on training rows of ``P`` (``x``) and ``P'`` (``x_prime``), both ``(n, d)`` numeric.

    Args:
        x, x_prime: training rows (never the certification samples).
        seed: random state of lbfgs (deterministic, as is the closed form; kept for completeness).
        max_iter: iterations of lbfgs (fits of more than :data:`CLOSED_FORM_ROWS` rows; smaller fits are closed-form).
        linear: use the linear feature map (:func:`~accounting.auditing.features.fit_features`).

    Returns:
        A :class:`LearnedScore`: on at most :data:`CLOSED_FORM_ROWS` rows the first penalty's closed-form fit
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
    with _finite_features():
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
    (:func:`_balanced_weights`): ``C sum_i u_i l(y_i, m_i) + |w|^2 / 2`` with
    margins ``m_i = z_i w + b``. On more than :data:`CLOSED_FORM_ROWS` rows
    lbfgs minimizes it for ``C = 1``. On fewer the score is its first Newton
    step from ``w = 0, b = 0`` for ``C = 4 / alpha``, ``alpha`` the first of
    :data:`NEWTON_STEP_ALPHAS`: there each loss term is ``log 2 - t_i m_i / 2
    + m_i^2 / 8 + O(m^3)`` (``t_i = +-1``), so the step minimizes ``sum_i u_i
    (m_i - 2 t_i)^2 + alpha |w|^2``, a weighted ridge regression of the labels
    with a free intercept (scikit-learn's ``RidgeClassifier(alpha)``, whose
    targets are ``t_i``: the same direction at half the length), solved in
    closed form by :func:`_newton_steps`.

    Raises:
        ValueError: the fitted coefficients or intercept are not finite.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    if z.shape[0] <= CLOSED_FORM_ROWS:
        model = _newton_steps(z, positives)[0][0]
        return LearnedScore(fmap, Pipeline([("standardscaler", scaler), ("classifier", model)]))
    labels = np.zeros(z.shape[0], dtype=int)
    labels[:positives] = 1
    logit = LogisticRegression(C=1.0, max_iter=max_iter, random_state=seed, solver="lbfgs")
    with warnings.catch_warnings(), _threads_for(z.size), _finite_features():
        warnings.simplefilter("ignore", ConvergenceWarning)  # an unconverged fit is still a valid (weaker) score
        logit.fit(z, labels, sample_weight=_balanced_weights(labels))
    _refuse_nonfinite(logit.coef_, logit.intercept_, z)
    return LearnedScore(fmap, Pipeline([("standardscaler", scaler), ("classifier", logit)]))


def _refuse_nonfinite(coef: np.ndarray, intercept: Any, z: np.ndarray) -> None:
    """Refuse a fit whose coefficients or intercept are not finite.

    Raises:
        ValueError: naming which, and the largest standardized feature.
    """
    for name, value in (("coefficients", coef), ("intercept", intercept)):
        if not np.isfinite(value).all():
            raise ValueError(f"the classifier's fitted {name} is not finite (standardized features up to "
                             f"{float(np.abs(z).max()):.3g})")


def _newton_steps(z: np.ndarray, positives: int, cols: np.ndarray | None = None,
                  z_sub: np.ndarray | None = None) -> list[list[Any]]:
    """The closed-form Newton steps (:func:`_fit_model`), one per penalty of :data:`NEWTON_STEP_ALPHAS`, on the
    standardized training rows ``z`` (the first ``positives`` under ``P``) and, given ``cols``, on the rows
    ``z_sub`` of a column selection ``cols`` of them (the linear features of :func:`fit_scores`): per matrix, a
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
    more than one column: :func:`fit_scores`), they are centered and scaled
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
        >>> fits = _newton_steps(z, 20)[0]
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
    u = _balanced_weights(labels)
    root, targets = np.sqrt(u), 2.0 * labels - 1.0
    t_mean = float(u @ targets / u.sum())
    y = (targets - t_mean) * root
    with _threads_for(z.size):
        mean = u @ z / u.sum()
        x = z - mean
        x *= root[:, None]
        sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(z, x, mean)]
        shared = cols if cols is not None and z_sub is not None and cols.size > 1 else None
        if z_sub is not None and shared is not None:  # the selected columns of z: centered and scaled alike
            sets.append((z_sub, _columns(x, shared), mean[shared]))
        elif z_sub is not None:
            sub_mean = u @ z_sub / u.sum()
            sets.append((z_sub, (z_sub - sub_mean) * root[:, None], sub_mean))
        grams = _grams([x for _, x, _ in sets], shared)
        models = []
        for (zz, xx, mm), gram in zip(sets, grams):
            kernel = _kernel_form(xx)
            rhs = y if kernel else xx.T @ y
            per_alpha = []
            for alpha in NEWTON_STEP_ALPHAS:
                g = gram.copy()
                g[np.diag_indices_from(g)] += alpha
                sol = scipy.linalg.cho_solve(scipy.linalg.cho_factor(g, lower=True, overwrite_a=True, check_finite=False),
                                             rhs, check_finite=False)
                coef = xx.T @ sol if kernel else sol
                intercept = np.array([t_mean - float(mm @ coef)])
                _refuse_nonfinite(coef, intercept, zz)
                model = RidgeClassifier(alpha=alpha, solver="cholesky")
                model.coef_, model.intercept_, model.classes_ = coef, intercept, np.array([0, 1])
                model.n_features_in_ = int(zz.shape[1])
                per_alpha.append(model)
            models.append(per_alpha)
    return models


def _kernel_form(x: np.ndarray) -> bool:
    """Whether :func:`_newton_steps` solves the fit of the centered rows ``x`` on the ``n x n`` kernel matrix (more
    columns than rows) rather than on ``x'x``."""
    return bool(x.shape[1] > x.shape[0])


def _grams(xs: list[np.ndarray], cols: np.ndarray | None) -> list[np.ndarray]:
    """The Gram matrix of each centered matrix in ``xs`` for :func:`_newton_steps`: ``x x'`` (``n x n``) when it
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


def _balanced_weights(labels: np.ndarray) -> np.ndarray:
    """Per-row weights of scikit-learn's ``class_weight="balanced"``: ``n / (2 * n_class)`` for a row of a class
    with ``n_class`` of the ``n`` rows (the same numbers scikit-learn computes, given as sample weights: its
    class-weight path re-validates and re-encodes the labels three times, a quarter of a small fit's time)."""
    counts = np.bincount(labels, minlength=2).astype(float)
    with np.errstate(divide="ignore"):  # an empty class: scikit-learn's own error follows, not a warning
        return (counts.sum() / (2.0 * counts))[labels]

"""The audit's vectorized steps against the one-at-a-time computations they replace: equal bit for bit.

The Clopper–Pearson bounds of many counts, the projected bounds of many
candidate events, the threshold event chosen from all targets at once, and the
two candidate scores computed from one feature matrix must give exactly the
values of the scalar loops (the reference loops below are the previous
implementations), so the certified figures do not move.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.auditing.certify import projected_epsilons
from accounting.auditing.classifier import fit_score, fit_scores
from accounting.auditing.sniper import LEVELS, ThresholdEvent, _counts, choose_threshold_event
from accounting.auditors import clopper_pearson, clopper_pearson_many


@given(n=st.integers(1, 3000), data=st.data(), alpha=st.floats(1e-6, 0.5))
@settings(max_examples=40)
def test_many_intervals_equal_one_at_a_time(n, data, alpha):
    k = np.array(data.draw(st.lists(st.integers(0, n), min_size=1, max_size=8)))
    lo, hi = clopper_pearson_many(k, n, alpha)
    assert [(float(a), float(b)) for a, b in zip(lo, hi)] == [clopper_pearson(int(j), n, alpha) for j in k]


def _projected_reference(p_hat, p_prime_hat, n, n_prime, *, epsilon, delta, alpha):
    """The scalar projected bound (the previous implementation)."""
    k = min(n, max(0, int(round(p_hat * n))))
    kp = min(n_prime, max(0, int(round(p_prime_hat * n_prime))))
    p_lower, _ = clopper_pearson(k, n, 2.0 * alpha)
    _, p_prime_upper = clopper_pearson(kp, n_prime, 2.0 * alpha)
    eps = math.log((p_lower - delta) / p_prime_upper) if p_lower - delta > 0 else -math.inf
    return eps, p_lower - math.exp(epsilon) * p_prime_upper


@given(p=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=10),
       n=st.integers(1, 5000), n_prime=st.integers(1, 5000), epsilon=st.floats(0.01, 30),
       delta=st.sampled_from([0.0, 1e-5, 0.1]))
@settings(max_examples=40)
def test_projected_bounds_of_many_events_equal_one_at_a_time(p, n, n_prime, epsilon, delta):
    got = projected_epsilons([a for a, _ in p], [b for _, b in p], n, n_prime, epsilon=epsilon, delta=delta,
                             alpha=0.0125)
    assert got == [_projected_reference(a, b, n, n_prime, epsilon=epsilon, delta=delta, alpha=0.0125)
                   for a, b in p]


def _threshold_reference(scores, scores_prime, *, direction, n_cert, n_cert_prime, epsilon, delta, alpha):
    """The threshold event chosen one target at a time (the previous implementation)."""
    s = np.sort(direction * np.asarray(scores, dtype=float))
    sp = np.sort(direction * np.asarray(scores_prime, dtype=float))
    n, m = s.size, sp.size
    targets = np.concatenate([[0.0], np.geomspace(1.0 / m, 1.0, LEVELS)[:-1]])
    best = (-math.inf, -math.inf, ThresholdEvent(float(direction * sp[-1]), 0.0, direction))
    seen = set()
    for c in targets:
        want = c * m
        idx = min(m - 1, max(0, m - 1 - int(math.floor(want))))
        t = sp[idx] if c > 0 else sp[-1]
        gt_p, eq_p = _counts(sp, np.array([t]))
        q = 0.0 if c == 0 or eq_p[0] < 2 else float(np.clip((want - gt_p[0]) / eq_p[0], 0.0, 1.0))
        key = (float(t), round(q, 6))
        if key in seen:
            continue
        seen.add(key)
        gt, eq = _counts(s, np.array([t]))
        eps_proj, margin = _projected_reference((gt[0] + q * eq[0]) / n, (gt_p[0] + q * eq_p[0]) / m, n_cert,
                                                n_cert_prime, epsilon=epsilon, delta=delta, alpha=alpha)
        if (eps_proj, margin) > best[:2]:
            best = (eps_proj, margin, ThresholdEvent(float(direction * t), q, direction))
    return best[2], best[0]


@given(seed=st.integers(0, 2**32 - 1), atoms=st.integers(0, 12), n=st.integers(1, 400), m=st.integers(1, 400),
       shift=st.floats(0, 3), direction=st.sampled_from([1, -1]), delta=st.sampled_from([0.0, 1e-3]))
@settings(max_examples=60)
def test_threshold_event_from_all_targets_at_once_equals_the_loop(seed, atoms, n, m, shift, direction, delta):
    """Continuous scores and scores with atoms (ties that the event randomizes), either direction."""
    rng = np.random.default_rng(seed)
    a, b = rng.laplace(shift, 1, n), rng.laplace(0, 1, m)
    if atoms:
        a, b = np.round(a * atoms) / atoms, np.round(b * atoms) / atoms
    kw = dict(direction=direction, n_cert=n, n_cert_prime=m, epsilon=1.0, delta=delta, alpha=0.0125)
    assert choose_threshold_event(a, b, **kw) == _threshold_reference(a, b, **kw)


def test_scores_from_one_feature_matrix_equal_each_score_alone():
    """Fitting both scores on one feature matrix gives the coefficients of fitting each alone up to rounding (the
    shared Gram products add in another order), and scoring both from one transform per block gives each fitted
    score's own scores, bit for bit (NaN and infinite outputs too)."""
    rng = np.random.default_rng(7)
    x, xp = rng.laplace(0.3, 1, (250, 12)), rng.laplace(0, 1, (250, 12))
    x[rng.random(250) < 0.1, 3] = np.nan
    xp[rng.random(250) < 0.1, 5] = np.inf
    both = fit_scores(x, xp, seed=0)
    alone = (fit_score(x, xp, seed=0), fit_score(x, xp, seed=0, linear=True))
    rows = np.concatenate([x, xp, rng.laplace(0, 1, (333, 12))])
    got = both(rows)
    for j, score in enumerate(alone):
        coef = both.scores[j].model[-1].coef_
        assert np.allclose(coef, score.model[-1].coef_, rtol=0, atol=1e-12 * np.abs(coef).max())
        assert np.array_equal(got[:, j], both.scores[j](rows))
    assert np.corrcoef(got[:, 1], rows[:, 0])[0, 1] > 0  # the linear score learned the shift


@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 400), dim=st.integers(1, 30))
@settings(max_examples=20)
def test_scores_equal_the_fitted_pipelines_decision_function(seed, rows, dim):
    """The score computed from the fitted pipeline's parameters is its decision_function, bit for bit."""
    from accounting.auditing.threads import finite_features

    rng = np.random.default_rng(seed)
    score = fit_score(rng.normal(0.2, 1, (60, dim)), rng.normal(0, 1, (60, dim)), linear=bool(seed % 2))
    feats = score.features.transform(rng.laplace(0, 3, (rows, dim)))
    with finite_features():
        assert np.array_equal(score.decide(feats), score.model.decision_function(feats))


def _part_sum_bound(score, feats):
    """How far a score read part by part may be from ``decide`` on the feature matrix ``feats``: both add the
    same products ``z_k c_k`` and the intercept in different orders (the one-hot part as ``-m_k c_k / s_k`` and
    ``c_a / s_a`` instead of ``(delta_k - m_k) c_k / s_k``), each rounded a few times, so they differ by at most
    ``(F + 8) * 4 * eps`` times the sum of the terms' magnitudes (the standard bound ``gamma_F`` of a
    floating-point sum of F terms, for each sum, with room for the one-hot part's extra roundings)."""
    scaler, logit = score.model[0], score.model[-1]
    coef = np.abs(np.ravel(logit.coef_))
    z = (feats - scaler.mean_) / scaler.scale_
    terms = (np.abs(z) @ coef + np.abs(scaler.mean_ / scaler.scale_) @ coef + (coef / scaler.scale_).max()
             + abs(float(logit.intercept_[0])))
    return (feats.shape[1] + 8) * 4 * np.finfo(float).eps * terms


@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 300), dim=st.integers(1, 25), linear=st.booleans(),
       nonfinite=st.booleans(), spread=st.sampled_from([1.0, 1e3]))
@settings(max_examples=40, deadline=None)
def test_scores_read_part_by_part_equal_the_feature_matrix_scores(seed, rows, dim, linear, nonfinite, spread):
    """A score reads its features part by part (no feature matrix): the numbers of ``decide`` on the whole
    feature matrix up to the order of the sum (:func:`_part_sum_bound`); the candidate scores of one block give
    each score's own numbers, bit for bit."""
    rng = np.random.default_rng(seed)
    x, xp = rng.laplace(0.3, spread, (80, dim)), rng.laplace(0, spread, (80, dim))
    rows_x = rng.laplace(0, 3 * spread, (rows, dim))
    if nonfinite:
        x[rng.random(80) < 0.2, 0] = np.nan
        xp[rng.random(80) < 0.2, dim - 1] = np.inf
        rows_x[rng.random(rows) < 0.3, 0] = np.nan
        rows_x[rng.random(rows) < 0.3, dim - 1] = -np.inf
    both = fit_scores(x, xp, seed=0)
    got = both(rows_x)
    for j, score in enumerate(both.scores):
        if not hasattr(score, "features"):  # the atoms score (infinities repeat) reads the rows, not features
            assert np.array_equal(got[:, j], score(rows_x))
            continue
        feats = score.features.transform(rows_x)
        assert np.all(np.abs(got[:, j] - score.decide(feats)) <= _part_sum_bound(score, feats))
        assert np.array_equal(got[:, j], score(rows_x))
    lone = fit_score(x, xp, seed=0, linear=linear)
    feats = lone.features.transform(rows_x)
    assert np.all(np.abs(lone(rows_x) - lone.decide(feats)) <= _part_sum_bound(lone, feats))


def _pipeline_fit(z_raw, positives):
    """The reference fit: scikit-learn's pipeline of a StandardScaler and a class-balanced ridge classifier of
    the first penalty (a Newton step of the logistic objective, fits of at most CLOSED_FORM_ROWS rows)."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from accounting.auditing.newton_step import NEWTON_STEP_ALPHAS

    labels = np.r_[np.ones(positives, dtype=int), np.zeros(z_raw.shape[0] - positives, dtype=int)]
    model = make_pipeline(StandardScaler(), RidgeClassifier(alpha=NEWTON_STEP_ALPHAS[0], solver="cholesky",
                                                             class_weight="balanced"))
    return model.fit(z_raw, labels)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 120), n_prime=st.integers(20, 120),
       dim=st.integers(1, 8), linear=st.booleans(), nonfinite=st.booleans())
@settings(max_examples=30, deadline=None)
def test_fit_equals_the_balanced_pipeline(seed, n, n_prime, dim, linear, nonfinite):
    """The fit (one standardizer for both scores, the balanced class weights given as sample weights) has the
    standardizer of scikit-learn's pipeline with ``class_weight="balanced"``, bit for bit, and its
    coefficients and intercept up to rounding (the closed form shares Gram products and skips scikit-learn's
    copies: another order of the sums), also when the two sides have different numbers of rows (weights other than 1), for one output coordinate
    (a one-column linear map) and with non-finite outputs (indicator columns)."""
    rng = np.random.default_rng(seed)
    x, xp = rng.laplace(0.4, 1, (n, dim)), rng.laplace(0, 1, (n_prime, dim))
    if nonfinite:
        x[rng.random(n) < 0.2, 0] = np.nan
        xp[rng.random(n_prime) < 0.2, dim - 1] = -np.inf
    score = fit_scores(x, xp, seed=0).scores[int(linear)]
    feats = score.features.transform(np.concatenate([x, xp]))
    ref = _pipeline_fit(feats, n)
    for got, want in zip(score.model, ref):
        for name in ("mean_", "var_", "scale_"):
            if hasattr(want, name):
                assert np.array_equal(getattr(got, name), getattr(want, name)), name
    got, want = score.model[-1], ref[-1]
    scale = np.abs(want.coef_).max() + abs(want.intercept_[0])
    for name in ("coef_", "intercept_"):
        assert np.allclose(getattr(got, name), getattr(want, name), rtol=0, atol=1e-12 * scale), name


@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 200), dim=st.integers(1, 12), nonfinite=st.booleans(),
       columns=st.sets(st.integers(0, 2), min_size=1))
@settings(max_examples=30, deadline=None)
def test_scores_of_some_columns_equal_those_of_all(seed, rows, dim, nonfinite, columns):
    """The certification computes only the scores its events read: each computed column is the one computed with
    all the others, bit for bit (the linear score then standardizes its own parts when the quadratic one is
    not computed), and a column left out is NaN, never a number an event could read."""
    rng = np.random.default_rng(seed)
    x, xp = rng.laplace(0.3, 1, (60, dim)), rng.laplace(0, 1, (60, dim))
    rows_x = rng.laplace(0, 3, (rows, dim))
    if nonfinite:
        x[rng.random(60) < 0.2, 0] = np.nan
        rows_x[rng.random(rows) < 0.3, 0] = np.nan
    scores = fit_scores(x, xp, seed=0, low_bits=True)
    every = scores(rows_x)
    some = scores(rows_x, tuple(columns))
    for j in range(3):
        if j in columns:
            assert np.array_equal(some[:, j], every[:, j])
        else:
            assert np.isnan(some[:, j]).all()


def test_the_certification_counts_the_events_on_their_own_scores_only(monkeypatch):
    """The events' counts on the certification rows are those of thresholding all candidate scores, and a
    candidate no event reads (here the low-bits score, on outputs whose low bits are the same coin flips on both
    sides) is not computed there."""
    from accounting.auditing import lowbits
    from accounting.auditing.samples import choose_threshold

    rng = np.random.default_rng(11)
    x, xp = rng.laplace(1.0, 1, (1600, 3)), rng.laplace(0, 1, (1600, 3))
    scores = fit_scores(x[:400], xp[:400], seed=0, low_bits=True)
    events = choose_threshold(scores, scores(x[400:1000]), scores(xp[400:1000]), eps=1.0, dlt=0.0, alpha=0.0125,
                              fit=(400, 400))
    read = {event.column for event, _ in events.events.values()}
    assert 2 not in read  # the shift is seen by the learned scores, not by the bits
    every_a, every_b = scores(x[1000:]), scores(xp[1000:])
    want = np.zeros((2, 2), dtype=np.int64)
    draws = np.random.default_rng(3)
    for i, (num, den) in enumerate(((every_a, every_b), (every_b, every_a))):
        event = events.events[("P/P'", "P'/P")[i]][0]
        want[i] = [event.contains(num, draws).sum(), event.contains(den, draws).sum()]
    calls = []
    real = lowbits.LowBitScore.__call__
    monkeypatch.setattr(lowbits.LowBitScore, "__call__", lambda self, rows: calls.append(1) or real(self, rows))
    assert np.array_equal(events.count(x[1000:], xp[1000:], np.random.default_rng(3)), want)
    assert calls == []

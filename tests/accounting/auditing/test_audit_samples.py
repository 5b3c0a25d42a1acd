"""Tests of accounting.auditing.audit_samples: soundness on correct mechanisms, power on broken ones, input errors.

Soundness (property tests): each audit certifies at ``CONFIDENCE = 0.999``, so
for a correct mechanism a single example reports ``epsilon_lower_bound >
epsilon`` with probability at most 1e-3 (the union bound of
:mod:`accounting.auditing.certify`). A property test runs ``EXAMPLES = 10``
examples, so with random seeds the chance of a spurious failure of the test would
be at most 10 * 1e-3 = 1%; the examples are derandomized in every profile, so
they are fixed and the outcome is deterministic.

Power: the sample counts below are the ones at which each broken mechanism is
caught with the fixed seeds (see BENCHMARKS.md for the scan over sample counts).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accounting.auditing import (
    AuditInputError,
    SampleAuditReport,
    audit_mechanism,
    audit_samples,
    certify_event,
    per_bound_alpha,
)
from accounting.auditing.testbed import gaussian_mechanism, laplace_mechanism
from accounting.auditing.testbed import testbed_cases as cases
from accounting.auditors import clopper_pearson
from accounting.errors import PrivacyParameterError

CONFIDENCE = 0.999
EXAMPLES = 10
SAMPLES = 4000


def _draw(mechanism, data, n, seed):
    return mechanism(data, np.random.default_rng(seed), n)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(epsilon=st.floats(0.05, 3.0), sensitivity=st.floats(0.1, 10.0), seed=st.integers(0, 2**16))
def test_correct_laplace_never_certifies_above_its_epsilon(epsilon, sensitivity, seed):
    # statistical: certified at CONFIDENCE, a false failure has probability <= 1e-3 per example (draws fixed)
    m = laplace_mechanism(epsilon, sensitivity)
    x, xp = _draw(m, [0.0], SAMPLES, seed), _draw(m, [sensitivity], SAMPLES, seed + 1)
    r = audit_samples(x, xp, epsilon=epsilon, confidence=CONFIDENCE, seed=seed)
    assert r.epsilon_lower_bound <= epsilon * (1 + 1e-9)
    assert not r.violation and r.delta_lower_bound == 0.0


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(epsilon=st.floats(0.05, 3.0), sensitivity=st.floats(0.1, 10.0), seed=st.integers(0, 2**16))
def test_correct_gaussian_never_certifies_above_its_epsilon(epsilon, sensitivity, seed):
    # statistical: certified at CONFIDENCE, a false failure has probability <= 1e-3 per example (draws fixed)
    delta = 1e-3
    m = gaussian_mechanism(epsilon, delta, sensitivity)
    x, xp = _draw(m, [0.0], SAMPLES, seed), _draw(m, [sensitivity], SAMPLES, seed + 1)
    r = audit_samples(x, xp, epsilon=epsilon, delta=delta, confidence=CONFIDENCE, seed=seed)
    assert r.epsilon_lower_bound <= epsilon * (1 + 1e-9)
    assert r.delta_lower_bound <= delta
    assert not r.violation


def _audit_case(name, epsilon, samples, seed=0):
    c = cases(epsilon)[name]
    return audit_mechanism(c.mechanism, c.data, c.data_prime, epsilon=c.epsilon, delta=c.delta, samples=samples,
                           seed=seed, progress=False)


def test_half_the_noise_is_caught_at_1e5_samples():
    r = _audit_case("laplace-half-noise", 0.1, 100_000)
    assert r.violation and r.epsilon_lower_bound > 0.1
    assert r.epsilon_lower_bound <= 0.2  # the mechanism is 0.2-DP: the certified bound cannot exceed it here


def test_report_noisy_max_value_is_caught_at_1e5_samples():
    r = _audit_case("noisy-max-value", 0.1, 100_000)
    assert r.violation and r.method == "classifier"
    assert 0.1 < r.epsilon_lower_bound <= 0.5  # 5 queries shifted by 1 with Lap(1/eps): at most 5 * eps


def test_sparse_vector_noisy_answers_is_caught_at_1e5_samples():
    r = _audit_case("svt-noisy-answers", 1.0, 100_000)
    assert r.violation and r.epsilon_lower_bound > 1.0


@pytest.mark.parametrize("name", ["laplace", "gaussian"])
def test_correct_testbed_cases_pass(name):
    r = _audit_case(name, 0.5, 50_000)
    assert not r.violation


def _randomized_response(bits, keep, rng):
    flip = rng.random(bits.shape) >= keep
    return np.where(flip, 1 - bits, bits)


def test_exact_events_catch_randomized_response_with_a_wrong_claim():
    rng = np.random.default_rng(3)
    # keeps the bit with probability 0.75: exactly log(3)-DP; a claim of 0.5 is wrong
    x = _randomized_response(np.zeros(4000, dtype=int), 0.75, rng)
    xp = _randomized_response(np.ones(4000, dtype=int), 0.75, rng)
    wrong = audit_samples(x, xp, epsilon=0.5)
    assert wrong.method == "exact" and wrong.violation
    assert 0.5 < wrong.epsilon_lower_bound <= math.log(3)
    assert wrong.event in ("output in {0}", "output in {1}")
    right = audit_samples(x, xp, epsilon=math.log(3))
    assert not right.violation


def test_exact_events_on_categorical_strings_and_vectors():
    rng = np.random.default_rng(4)
    labels = np.array(["red", "green", "blue"])
    x = labels[rng.choice(3, size=3000, p=[0.6, 0.2, 0.2])]
    xp = labels[rng.choice(3, size=3000, p=[0.2, 0.4, 0.4])]
    r = audit_samples(x, xp, epsilon=0.5)
    assert r.method == "exact" and r.violation and "red" in r.event
    # a small bit vector is discrete too: exact events over its 4 values
    bits = rng.integers(0, 2, size=(3000, 2))
    r2 = audit_samples(bits, bits[::-1].copy(), epsilon=1.0)
    assert r2.method == "exact" and not r2.violation


def test_nan_entries_become_features():
    c = cases(1.0)["svt-noisy-answers"]
    x = c.mechanism(c.data, np.random.default_rng(0), 5000)
    assert np.isnan(x).any()
    r = audit_samples(x, c.mechanism(c.data_prime, np.random.default_rng(1), 5000), epsilon=1.0)
    assert r.method == "classifier" and math.isfinite(r.epsilon_lower_bound)
    same = audit_samples(x, c.mechanism(c.data, np.random.default_rng(2), 5000), epsilon=1.0)
    assert not same.violation


def test_report_fields_and_json():
    rng = np.random.default_rng(0)
    r = audit_samples(rng.laplace(0, 0.5, (3000, 2, 2)), rng.laplace(1, 0.5, (3000, 2, 2)), epsilon=1.0, seed=5)
    assert isinstance(r, SampleAuditReport)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["violation"] == r.violation and d["confidence"] == 0.95 and d["method"] == "classifier"
    assert set(d["counts"]) >= {"n", "n_prime", "k", "k_prime"}
    c = r.counts
    assert c["n"] + c["n_train"] == 3000 and 0 <= c["k"] <= c["n"] and 0 <= c["k_prime"] <= c["n_prime"]
    assert set(d["details"]["orders"]) == {"P/P'", "P'/P"}
    # the reported bound is the one the counts give (honest arithmetic)
    if r.order == "P/P'":
        k, n, kp, n_p = c["k"], c["n"], c["k_prime"], c["n_prime"]
    else:
        k, n, kp, n_p = c["k_prime"], c["n_prime"], c["k"], c["n"]
    again = certify_event(k, n, kp, n_p, epsilon=1.0, delta=0.0, alpha=per_bound_alpha(0.95))
    assert again.epsilon_lower_bound == pytest.approx(r.epsilon_lower_bound)


def test_same_seed_same_report_different_seed_other_split():
    rng = np.random.default_rng(0)
    x, xp = rng.laplace(0, 1, 3000), rng.laplace(1, 1, 3000)
    assert audit_samples(x, xp, epsilon=1.0, seed=7).to_dict() == audit_samples(x, xp, epsilon=1.0, seed=7).to_dict()
    assert audit_samples(x, xp, epsilon=1.0, seed=7).to_dict() != audit_samples(x, xp, epsilon=1.0, seed=8).to_dict()


def test_certify_event_uses_one_sided_clopper_pearson_and_the_union_bound():
    alpha = per_bound_alpha(0.9)
    assert alpha == pytest.approx(0.025)  # 4 one-sided bounds share 1 - confidence
    c = certify_event(300, 1000, 100, 1000, epsilon=0.5, delta=0.01, alpha=alpha)
    lo, _ = clopper_pearson(300, 1000, 2 * alpha)
    _, hi = clopper_pearson(100, 1000, 2 * alpha)
    assert c.p_lower == lo and c.p_prime_upper == hi
    assert c.epsilon_lower_bound == pytest.approx(math.log((lo - 0.01) / hi))
    assert c.delta_lower_bound == pytest.approx(lo - math.exp(0.5) * hi)
    assert certify_event(5, 1000, 5, 1000, epsilon=0.5, delta=0.0, alpha=alpha).epsilon_lower_bound == 0.0


def test_certify_event_at_an_epsilon_beyond_the_float_range_of_its_exponential():
    # e^800 overflows: a claim that large leaves no delta to certify unless the denominator event never happens
    assert certify_event(900, 1000, 100, 1000, epsilon=800.0, delta=0.01, alpha=0.001).delta_lower_bound == 0.0
    assert certify_event(900, 1000, 100, 1000, epsilon=800.0, delta=0.01, alpha=0.001).epsilon_lower_bound < 800


_GOOD = np.zeros((200, 3))


@pytest.mark.parametrize("kwargs, match", [
    (dict(samples=np.zeros((200, 3)), samples_prime=np.zeros((200, 4))), "samples_prime must have the trailing shape"),
    (dict(samples=np.zeros((20, 3)), samples_prime=np.zeros((20, 3))), "samples must hold at least 100"),
    (dict(samples=_GOOD, samples_prime=np.zeros((50, 3))), "samples_prime must hold at least 100"),
    (dict(samples=np.float64(1.0), samples_prime=_GOOD), "samples must have a leading sample axis"),
    (dict(samples=_GOOD.astype(complex), samples_prime=_GOOD), "samples must be real or categorical"),
    (dict(epsilon=0.0), "epsilon must be > 0, got 0.0"),
    (dict(epsilon=-1.0), "epsilon must be > 0"),
    (dict(epsilon=float("nan")), "epsilon must be finite, got nan"),
    (dict(delta=1.0), "delta must lie in \\[0, 1\\), got 1.0"),
    (dict(delta=-0.1), "delta must lie in"),
    (dict(confidence=1.0), "confidence must lie in \\(0, 1\\), got 1.0"),
    (dict(confidence=0.0), "confidence must lie in"),
    (dict(seed=-1), "seed must be >= 0"),
    (dict(method="boost"), "method must be one of auto, classifier, exact, got 'boost'"),
    (dict(samples=np.array(["a"] * 200), samples_prime=np.array(["b"] * 200), method="classifier"),
     "method='classifier' needs numeric outputs"),
])
def test_bad_inputs_name_the_parameter(kwargs, match):
    args = dict(samples=_GOOD, samples_prime=_GOOD, epsilon=1.0)
    args.update(kwargs)
    with pytest.raises(PrivacyParameterError, match=match):
        audit_samples(args.pop("samples"), args.pop("samples_prime"), **args)


def test_audit_input_error_is_a_privacy_parameter_error():
    assert issubclass(AuditInputError, PrivacyParameterError)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1000, 5000])
def test_false_alarm_rate_on_a_tight_mechanism_is_below_one_minus_confidence(n):
    """200 audits of Laplace at its exact epsilon (tight on every tail event) at confidence 0.9; at 1000 samples
    the score is fitted on 500 rows, in closed form, with every penalty's candidates (CLOSED_FORM_ROWS)."""
    m = laplace_mechanism(1.0)
    alarms = sum(audit_samples(_draw(m, [0.0], n, 2 * i), _draw(m, [1.0], n, 2 * i + 1), epsilon=1.0,
                               confidence=0.9, seed=i).violation for i in range(200))
    assert alarms <= 40  # expected <= 20 (10%); 40 is beyond 4 standard deviations


def test_infinite_entries_become_features():
    rng = np.random.default_rng(6)
    x = rng.laplace(0.0, 1.0, (3000, 2))
    xp = rng.laplace(0.0, 1.0, (3000, 2))
    x[x[:, 0] > 2.0, 0] = np.inf  # P puts +inf where P' has large finite values: a real difference
    xp[rng.random(3000) < 0.1, 1] = -np.inf
    r = audit_samples(x, xp, epsilon=0.5)
    assert r.method == "classifier" and r.violation and math.isfinite(r.epsilon_lower_bound)


def test_one_thread_fit_and_scores_equal_the_process_threads(monkeypatch):
    """Fitting and scoring small matrices in one BLAS/OpenMP thread gives the coefficients the process's thread
    pools give up to rounding (a threaded Gram product and Cholesky factorization add in another order: measured
    5e-14 relative), and so the scores up to rounding too."""
    import accounting.auditing.classifier as classifier
    import accounting.auditing.threads as thread_limits

    rng = np.random.default_rng(5)
    x, x_prime, rows = rng.normal(0.3, 1, (300, 40)), rng.normal(0, 1, (300, 40)), rng.normal(size=(700, 40))
    one = classifier.fit_scores(x, x_prime, seed=0)
    one_scores = one(rows)
    monkeypatch.setattr(thread_limits, "ONE_THREAD_ENTRIES", -1)  # every matrix keeps the process's threads
    many = classifier.fit_scores(x, x_prime, seed=0)
    for a, b in zip(one.scores, many.scores):
        assert np.allclose(a.model[-1].coef_, b.model[-1].coef_, rtol=1e-12, atol=1e-12 * abs(a.model[-1].coef_).max())
    assert np.allclose(one_scores, many(rows), rtol=0, atol=1e-12 * abs(one_scores).max())
    assert np.corrcoef(one_scores[:, 0], rows.sum(axis=1))[0, 1] > 0.5  # the score learned the shift


@given(x=hnp.arrays(float, st.tuples(st.integers(0, 6), st.integers(1, 4)),
                    elements=st.floats(-1e200, 1e200) | st.sampled_from([np.nan, np.inf, -np.inf, 0.0])),
       linear=st.booleans())
def test_features_written_in_place_equal_the_concatenated_parts(x, linear):
    """Each part written into its columns gives the parts side by side (plain: concatenated), and every feature
    is finite (the scorer skips scikit-learn's scan for non-finite entries)."""
    from accounting.auditing.features import CLIP, fit_features

    fm = fit_features(x, linear=linear)
    v = np.clip(np.where(np.isfinite(x), x, 0.0), -CLIP, CLIP)
    parts = [v] if linear else [v, np.abs(v), v * v]
    if x.shape[1] > 1:
        parts.append(np.sort(v, axis=1))
        if not linear:
            parts.append(np.eye(x.shape[1])[np.argmax(v, axis=1)] if len(v) else np.zeros((0, x.shape[1])))
    sub = x[:, list(fm.nonfinite_columns)]
    parts += [np.isnan(sub).astype(float), np.where(np.isinf(sub), np.sign(np.nan_to_num(sub)), 0.0)]
    got = fm.transform(x)
    assert got.shape == (x.shape[0], fm.size) and np.array_equal(got, np.concatenate(parts, axis=1))
    assert np.isfinite(got).all()


def test_outputs_too_large_to_standardize_are_refused_not_scored_nan():
    """Outputs near 1e100 have finite features (squares below 1e300) whose variance overflows: the scaler's
    scale is NaN. Skipping scikit-learn's finiteness scan (assume_finite) must not turn that into a score
    that is NaN on every row (a silent loss of the quadratic score); the fit is refused as before."""
    from accounting.auditing.classifier import fit_score

    rng = np.random.default_rng(0)
    x, xp = rng.normal(size=(500, 1)) * 1e100, rng.normal(size=(500, 1)) * 1e102
    with pytest.raises(ValueError, match="not finite"):
        fit_score(x, xp)
    # numeric outputs: the refusal says the score could not be fitted, not that the outputs are not numeric
    with pytest.raises(AuditInputError, match=r"could not fit its score on these numeric outputs .*not finite"):
        audit_samples(np.concatenate([x] * 8), np.concatenate([xp] * 8), epsilon=1.0, method="classifier")
    assert np.isfinite(fit_score(x / 1e95, xp / 1e95)(np.concatenate([x, xp]) / 1e95)).all()  # same shape, scaled


def _standardized_features(x, x_prime, linear):
    """The training rows' standardized features and labels (1 under P), as fit_score makes them."""
    from sklearn.preprocessing import StandardScaler

    from accounting.auditing.features import fit_features

    fm = fit_features(np.concatenate([x, x_prime]), linear=linear)
    z = StandardScaler().fit_transform(np.concatenate([fm.transform(x), fm.transform(x_prime)]))
    return z, np.r_[np.ones(len(x)), np.zeros(len(x_prime))]


@pytest.mark.parametrize(("linear", "rows", "dim"), [(False, (250, 250), 60), (True, (250, 250), 60),
                                                      (False, (300, 200), 6), (True, (120, 380), 300),
                                                      (False, (50, 50), 20)])
def test_small_fits_are_the_first_newton_step_of_the_logistic_objective(linear, rows, dim):
    """A fit of at most CLOSED_FORM_ROWS rows (the privacy check's: 250 rows per side of a transcript, correlated
    coordinates; also unequal sides, more features than rows, and as many) is, for each penalty ``alpha`` of
    NEWTON_STEP_ALPHAS, the Newton step from zero of the balanced logistic objective
    ``C sum_i u_i log(1 + exp(-t_i m_i)) + |w|^2 / 2`` with ``C = 4 / alpha``, up to a positive factor: the
    coefficients and intercept, doubled, zero the gradient of its second-order model at zero,
    ``C sum_i u_i (m_i / 4 - t_i / 2) (z_i, 1) + (w, 0)``. fit_score gives the first penalty's, fit_scores every
    penalty's in its candidates (the linear map's on those features' columns)."""
    from accounting.auditing.classifier import fit_score, fit_scores
    from accounting.auditing.newton_step import CLOSED_FORM_ROWS, NEWTON_STEP_ALPHAS, balanced_weights

    assert sum(rows) <= CLOSED_FORM_ROWS
    rng = np.random.default_rng(3)
    walk = np.cumsum(rng.laplace(0, 1, (sum(rows), dim)), axis=1)  # correlated coordinates, as a trajectory's
    x, x_prime = walk[:rows[0]] + 0.1, walk[rows[0]:]
    z, y = _standardized_features(x, x_prime, linear)
    u, t = balanced_weights(y.astype(int)), 2 * y - 1
    every = fit_scores(x, x_prime).scores
    fitted = [fit_score(x, x_prime, linear=linear).model[-1], every[int(linear)].model[-1]]
    fitted += [every[2 + 2 * k + int(linear)].model[-1] for k in range(len(NEWTON_STEP_ALPHAS) - 1)]
    for m, alpha in zip(fitted, NEWTON_STEP_ALPHAS[:1] + NEWTON_STEP_ALPHAS):
        assert m.alpha == alpha
        w, b = 2 * np.ravel(m.coef_), 2 * float(np.ravel(m.intercept_)[0])
        r = (4 / alpha) * u * ((z @ w + b) / 4 - t / 2)
        grad = np.r_[z.T @ r + w, r.sum()]
        assert np.linalg.norm(grad) <= 1e-9 * np.linalg.norm(np.r_[(4 / alpha) * z.T @ (u * t), u.sum()])
        assert np.linalg.norm(w) > 0


def test_fits_of_many_rows_keep_lbfgs():
    """Beyond CLOSED_FORM_ROWS rows the fit is lbfgs's optimum of the logistic objective: the same coefficients
    as an explicit lbfgs fit of it."""
    from sklearn.linear_model import LogisticRegression

    from accounting.auditing.classifier import fit_score
    from accounting.auditing.newton_step import CLOSED_FORM_ROWS

    rng = np.random.default_rng(4)
    n = CLOSED_FORM_ROWS // 2 + 1
    x, x_prime = rng.laplace(0.2, 1, (n, 3)), rng.laplace(0, 1, (n, 3))
    got = fit_score(x, x_prime).model[-1]
    z, y = _standardized_features(x, x_prime, False)
    want = LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced", solver="lbfgs").fit(z, y)
    assert np.allclose(np.r_[got.coef_.ravel(), got.intercept_], np.r_[want.coef_.ravel(), want.intercept_],
                       rtol=0, atol=1e-12)


def test_nested_one_thread_contexts_hold_the_limit_until_the_outermost_closes(monkeypatch):
    """A one-thread context inside another changes nothing on entry and on exit, and does not touch the
    thread pools (the scorings inside the audit's single context run in one thread); the outermost one
    restores the process's threads."""
    import sklearn.linear_model  # noqa: F401  (its OpenMP runtime loaded, as in any fit)
    from threadpoolctl import threadpool_info

    import accounting.auditing.threads as thread_limits

    def threads():
        return sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info())

    before = threads()
    with thread_limits.threads(1):
        inside = threads()
        assert all(n == 1 for _, n in inside)
        made = thread_limits.controller()
        monkeypatch.setattr(thread_limits, "controller", lambda: pytest.fail("a nested context limited the pools"))
        with thread_limits.threads(1):
            assert threads() == inside
        assert threads() == inside  # the inner context's exit kept the limit
        with thread_limits.threads(None):
            assert threads() == inside
        monkeypatch.setattr(thread_limits, "controller", lambda: made)
    assert threads() == before


def test_one_thread_contexts_of_two_threads_that_overlap_keep_limiting_later():
    """Thread A opens a context, B opens one, A closes, B closes: each thread's own context limits its pools
    while open, and a later context still limits them (one count shared by the threads, reset by A's exit,
    would have left B's exit at -1, and every later context without a limit)."""
    import threading

    import sklearn.linear_model  # noqa: F401  (its OpenMP runtime loaded, as in any fit)
    from threadpoolctl import threadpool_info, threadpool_limits

    from accounting.auditing.threads import threads as limit_threads

    def threads():
        return sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info())

    before = threadpool_info()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def run_a():
        with limit_threads(1):
            seen["A inside"] = threads()
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def run_b():
        a_in.wait(10)
        with limit_threads(1):
            seen["B inside"] = threads()
            b_in.set()
            a_out.wait(10)

    try:
        ta, tb = threading.Thread(target=run_a), threading.Thread(target=run_b)
        ta.start(), tb.start()
        ta.join(20), tb.join(20)
        assert all(n == 1 for _, n in seen["A inside"]) and all(n == 1 for _, n in seen["B inside"])
        with limit_threads(1):
            assert all(n == 1 for _, n in threads())
    finally:  # the overlap leaves the process's BLAS pools as B found them (threadpoolctl's semantics)
        threadpool_limits(limits=before)


@given(x=hnp.arrays(float, st.tuples(st.integers(1, 150), st.integers(1, 3)),
                    elements=st.sampled_from([0.0, -0.0, 1.0, np.nan, np.inf]) | st.floats(-1e3, 1e3)))
def test_auto_method_is_decided_by_distinct_rows(x):
    """The shortcut on the last column's values gives the decision of counting distinct rows, also with NaN,
    infinities and signed zeros."""
    from accounting.auditing.events import distinct_rows
    from accounting.auditing.samples import MAX_ATOMS, choose_method

    half = x.shape[0] // 2
    want = "exact" if distinct_rows(x) <= MAX_ATOMS else "classifier"
    assert choose_method("auto", x[:half], x[half:], numeric=True) == want


def test_a_closed_form_fit_without_rows_of_one_side_is_refused():
    """A fit needs rows of both sides: the closed form would otherwise fit a constant score silently."""
    from accounting.auditing.classifier import fit_score

    rows = np.random.default_rng(8).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"both sides, got 40 under P and 0 under P'"):
        fit_score(rows, rows[:0])
    with pytest.raises(ValueError, match=r"both sides, got 0 under P and 40 under P'"):
        fit_score(rows[:0], rows)


@pytest.mark.parametrize("case", ["one row per side", "constant columns", "duplicated columns", "rank one, wide"])
def test_closed_form_fits_of_singular_gram_matrices_give_finite_scores(case):
    """The penalties keep every closed-form fit's Gram matrix positive definite where the features are not
    (one row per side, constant or duplicated columns, many more features than rows of rank one): every
    candidate scores finitely, none is NaN."""
    from accounting.auditing.classifier import fit_scores

    rng = np.random.default_rng(11)
    if case == "one row per side":
        x, xp = rng.normal(size=(1, 4)), rng.normal(size=(1, 4))
    elif case == "constant columns":
        x, xp = np.ones((60, 4)), np.ones((60, 4))
        x[:, 0] += rng.normal(size=60)
    elif case == "duplicated columns":
        x, xp = np.repeat(rng.normal(0.5, 1, (60, 1)), 5, axis=1), np.repeat(rng.normal(size=(60, 1)), 5, axis=1)
    else:
        x, xp = np.outer(rng.normal(0.5, 1, 30), np.ones(200)), np.outer(rng.normal(size=30), np.ones(200))
    s = fit_scores(x, xp, low_bits=True)
    # the atoms score is a candidate where a value repeats with other counts on the two sides (constant columns:
    # column 0 is 1 on every row of P' only)
    assert len(s.names) == 7 + ("atoms" in s.names) and np.isfinite(s(np.concatenate([x, xp, 1e3 * x]))).all()

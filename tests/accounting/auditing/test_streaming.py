"""Tests of the streaming path of accounting.auditing.audit_mechanism (samples > max_in_memory).

The streaming path uses the rows of ``draw_samples`` in drawing order: the
first ones choose the event, the others are counted block by block. It must
compute exactly what the shared in-memory steps compute on all rows at once,
keep memory independent of the sample count, not depend on ``batch_size``,
and reject bad input.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from accounting.auditing import AuditInputError, audit_mechanism, draw_samples
from accounting.auditing.mechanism import BLOCK
from accounting.auditing.samples import (
    certified_report,
    choose_exact,
    choose_method,
    choose_threshold,
    fit_classifier,
    method_rows,
    per_bound_alpha,
    split_sizes,
)
from accounting.auditing import testbed
from accounting.errors import PrivacyParameterError


def laplace2(data, rng, size):
    """A 2-dimensional Laplace output (continuous: no boundary ties)."""
    return np.asarray(data, dtype=float) + rng.laplace(0.0, 1.0, (size, 2))


def dice(data, rng, size):
    """A discrete output with 6 values whose law depends on ``data`` (exact events)."""
    p = np.array([0.3, 0.2, 0.2, 0.1, 0.1, 0.1]) if data else np.full(6, 1 / 6)
    return rng.choice(6, size=size, p=p)


def _in_memory_steps(mechanism, data, data_prime, n, *, epsilon, seed, max_train, max_select, confidence=0.95):
    """What the streaming path must equal: the shared steps of audit_samples on all rows at once, unshuffled."""
    ss, ss_prime = np.random.SeedSequence(seed).spawn(2)
    x, xp = draw_samples(mechanism, data, n, seed=ss), draw_samples(mechanism, data_prime, n, seed=ss_prime)
    x, xp = x.reshape(n, -1), xp.reshape(n, -1)
    decide = method_rows(n, max_train, max_select)
    method = choose_method("auto", x[:decide], xp[:decide], numeric=True)
    fit, train = split_sizes(method, n, max_train, max_select)
    n_cert = (n - train, n - train)
    alpha = per_bound_alpha(confidence)
    if method == "exact":
        events = choose_exact(x[:train], xp[:train], eps=epsilon, dlt=0.0, alpha=alpha)
    else:
        score = fit_classifier(x[:fit], xp[:fit], seed=seed)
        events = choose_threshold(score, score(x[fit:train]), score(xp[fit:train]), eps=epsilon, dlt=0.0,
                                  alpha=alpha, fit=(fit, fit))
    counts = events.count(x[train:], xp[train:], np.random.default_rng(0))  # no ties: rng unused
    return certified_report(events, counts, n_cert, eps=epsilon, dlt=0.0, conf=confidence, n_train=(train, train))


@pytest.mark.parametrize(("mechanism", "data", "data_prime", "method", "max_train", "max_select"), [
    # n = 20603; the first min(n // 2, max_train) rows ("head") are drawn at once
    (laplace2, [0.0, 0.0], [1.0, 0.0], "classifier", 5000, 10**6),  # the in-memory split; choosing rows streamed
    (laplace2, [0.0, 0.0], [1.0, 0.0], "classifier", 10**5, 3000),  # fit + select < head: head rows also certify
    (laplace2, [0.0, 0.0], [1.0, 0.0], "classifier", 5000, 7000),  # capped, choosing rows streamed past the head
    (dice, True, False, "exact", 5000, 10**6),
    (dice, True, False, "exact", 5000, 500),  # select < head: head rows also certify
])
def test_streaming_equals_the_shared_steps_on_all_rows(mechanism, data, data_prime, method, max_train, max_select):
    n, kw = 5 * BLOCK + 123, dict(epsilon=0.5, seed=3, max_train=max_train)
    streamed = audit_mechanism(mechanism, data, data_prime, samples=n, max_in_memory=0, max_select=max_select,
                               progress=False, **kw)
    expected = _in_memory_steps(mechanism, data, data_prime, n, max_select=max_select, **kw)
    assert streamed.method == method
    assert streamed.to_dict() == expected.to_dict()
    assert streamed.counts["n"] + streamed.counts["n_train"] == n
    assert streamed.counts["n_train"] == split_sizes(method, n, max_train, max_select)[1]


def test_streaming_and_in_memory_split_the_same_way_and_agree_statistically():
    """Same split sizes as the in-memory path when max_select does not bind; bounds differ only by the shuffle."""
    kw = dict(epsilon=0.5, samples=40_000, seed=0, progress=False)
    mem = audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], **kw)
    stream = audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], max_in_memory=0, **kw)
    assert mem.method == stream.method == "classifier"
    assert {k: mem.counts[k] for k in ("n", "n_prime", "n_train")} == \
        {k: stream.counts[k] for k in ("n", "n_prime", "n_train")}
    # true epsilon 1 (Laplace scale 1, shift 1): both certify a violation of the claim 0.5, below the truth
    for r in (mem, stream):
        assert r.violation and 0.5 < r.epsilon_lower_bound <= 1.0


def test_in_memory_below_max_in_memory_is_the_audit_samples_path():
    kw = dict(epsilon=0.5, samples=3000, seed=2, progress=False)
    a = audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], **kw)
    b = audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], max_in_memory=3000, **kw)
    c = audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], max_in_memory=2999, **kw)
    assert a.to_dict() == b.to_dict()
    assert c.to_dict() != a.to_dict()  # streamed: rows in drawing order instead of shuffled


def rounded_laplace(data, rng, size):
    """Integer-valued (about 20 atoms): the learned score has atoms and the threshold events randomize ties."""
    return np.round(data + rng.laplace(0.0, 1.0, size))


def test_reproducible_whatever_the_batch_size_with_boundary_ties():
    kw = dict(epsilon=0.5, samples=4 * BLOCK + 7, seed=0, max_in_memory=0, max_train=3000, method="classifier")
    ref = audit_mechanism(rounded_laplace, 0.0, 1.0, batch_size=1, progress=False, **kw)
    assert "ties with probability" in ref.event  # the tie draws take part in the counts
    for batch, progress in ((BLOCK, True), (10**6, False)):
        other = audit_mechanism(rounded_laplace, 0.0, 1.0, batch_size=batch, progress=progress, **kw)
        assert other.to_dict() == ref.to_dict()
    changed = audit_mechanism(rounded_laplace, 0.0, 1.0, progress=False, **{**kw, "seed": 1})
    assert changed.to_dict() != ref.to_dict()


def test_mechanism_is_asked_for_one_block_at_a_time():
    sizes: list[int] = []

    def recording(data, rng, size):
        sizes.append(size)
        return data + rng.laplace(0.0, 1.0, size)

    n = 7 * BLOCK + 5
    audit_mechanism(recording, 0.0, 1.0, epsilon=1.0, samples=n, max_in_memory=0, max_train=1000, max_select=2000,
                    progress=False)
    assert max(sizes) == BLOCK and sum(sizes) == 2 * n
    assert len(sizes) == 2 * -(-n // BLOCK)  # every block drawn once, none kept for later


def _peak_bytes(samples: int, max_in_memory: int) -> int:
    tracemalloc.start()
    try:
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], epsilon=1.0, samples=samples, max_in_memory=max_in_memory,
                        max_train=2000, max_select=4000, progress=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_sample_count():
    small, large = 40_000, 320_000
    _peak_bytes(small, 0)  # first call: imports (scikit-learn) allocate too
    stream_small, stream_large = _peak_bytes(small, 0), _peak_bytes(large, 0)
    # 8x the samples: the streaming peak stays put (training rows + one block) ...
    assert stream_large < 1.3 * stream_small
    # ... while the in-memory path holds every row (2 inputs x 320,000 x 2 floats = 10 MB at least)
    assert _peak_bytes(large, large) > 2 * 8 * 2 * large > 4 * stream_large


def test_streaming_is_sound_on_correct_mechanisms_and_catches_a_broken_one():
    cases = testbed.testbed_cases(1.0)
    kw = dict(samples=30_000, max_in_memory=0, progress=False)
    for name in ("laplace", "gaussian"):
        case = cases[name]
        for seed in (0, 1):
            r = audit_mechanism(case.mechanism, case.data, case.data_prime, epsilon=case.epsilon, delta=case.delta,
                                seed=seed, **kw)
            assert not r.violation and r.epsilon_lower_bound <= case.epsilon
    half = cases["laplace-half-noise"]
    assert audit_mechanism(half.mechanism, half.data, half.data_prime, epsilon=half.epsilon, **kw).violation


def test_categorical_blocks_of_other_string_widths():
    """Values never seen by the choosing rows (here longer strings) are never in the event, and do not crash."""
    calls = []

    def coin(data, rng, size):
        calls.append(size)
        heads = rng.random(size) < (0.8 if data else 0.2)
        late = len(calls) > 2  # the first block of each input chooses the event (max_select below one block)
        return np.where(heads, "h", "tail-never-seen" if late else "t")

    r = audit_mechanism(coin, True, False, epsilon=1.0, samples=4 * BLOCK, max_in_memory=0, max_train=1000,
                        max_select=1000, progress=False)
    assert r.method == "exact" and r.violation  # true epsilon log 16
    assert "never-seen" not in str(r.details["orders"]) and r.event in ("output in {h}", "output in {t}")


def test_bad_input():
    kw = dict(epsilon=1.0, max_in_memory=0, progress=False)
    with pytest.raises(PrivacyParameterError, match="max_in_memory must be >= 0, got -1"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], epsilon=1.0, max_in_memory=-1)
    with pytest.raises(PrivacyParameterError, match="epsilon must be > 0"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], samples=500, **{**kw, "epsilon": 0.0})
    with pytest.raises(AuditInputError, match="max_select must be >= 100, got 10"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], max_select=10, **kw)
    with pytest.raises(AuditInputError, match="samples must hold at least 100 samples, got 50"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], samples=50, **kw)
    with pytest.raises(AuditInputError, match="method must be one of"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], samples=500, method="svm", **kw)
    with pytest.raises(PrivacyParameterError, match="confidence must"):
        audit_mechanism(laplace2, [0.0, 0.0], [1.0, 0.0], samples=500, confidence=1.0, **kw)
    with pytest.raises(AuditInputError, match="mechanism must be callable, got str"):
        audit_mechanism("laplace", [0.0, 0.0], [1.0, 0.0], **kw)

    def growing(data, rng, size):  # changes its output shape after the first block
        growing.calls = getattr(growing, "calls", 0) + 1
        return rng.laplace(0.0, 1.0, (size, 2 if growing.calls == 1 else 3))

    with pytest.raises(AuditInputError, match=r"same shape \(\(2,\) then \(3,\)\)"):
        audit_mechanism(growing, 0.0, 1.0, samples=3 * BLOCK, **kw)
    with pytest.raises(AuditInputError, match="outputs on data_prime must have the shape of those on data"):
        audit_mechanism(lambda data, rng, size: rng.laplace(0.0, 1.0, (size, data)), 2, 3, samples=500, **kw)
    with pytest.raises(AuditInputError, match="method='classifier' needs numeric outputs"):
        audit_mechanism(lambda data, rng, size: np.full(size, "a"), 0, 1, samples=500, method="classifier", **kw)


def test_the_method_is_decided_on_rows_that_are_never_certified():
    """With a small ``max_select`` the certification starts inside the first rows drawn: "auto" must not read
    those (the certified counts would be conditioned on a choice made from them). The mechanism releases one
    of 6 values in its first block and continuous values after: the choosing rows (500 per side) hold 6
    values, so the method is exact; the head of 5000 rows, certification rows included, held thousands."""
    calls = {0.0: 0, 1.0: 0}

    def atoms_then_continuous(data, rng, size):
        calls[data] += 1
        if calls[data] == 1:  # block 0 of this side
            return rng.integers(0, 6, size).astype(float) + data
        return rng.laplace(data, 1.0, size)

    n = 5 * BLOCK + 123
    report = audit_mechanism(atoms_then_continuous, 0.0, 1.0, epsilon=1.0, samples=n, seed=0, max_train=5000,
                             max_in_memory=0, max_select=500, progress=False)
    assert report.method == "exact"
    assert report.counts["n_train"] == 500

"""Tests of accounting.auditing.audit_mechanism and draw_samples: reproducibility, batches, inputs."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.auditing import AuditInputError, audit_mechanism, draw_samples
from accounting.auditing.mechanism import BLOCK
from accounting.errors import PrivacyParameterError


def vectorized(data, rng, size):
    return data + rng.laplace(0.0, 1.0, (size, 3))


def scalar(data, rng):
    return data + rng.laplace(0.0, 1.0, 3)


@pytest.mark.parametrize("mechanism", [vectorized, scalar])
def test_batch_size_does_not_change_the_samples(mechanism):
    n = 2 * BLOCK + 17
    ref = draw_samples(mechanism, 0.0, n, seed=11, batch_size=1, progress=False)
    assert ref.shape == (n, 3)
    for batch in (BLOCK, 3 * BLOCK, 10**6):
        np.testing.assert_array_equal(draw_samples(mechanism, 0.0, n, seed=11, batch_size=batch, progress=True), ref)
    assert not np.array_equal(draw_samples(mechanism, 0.0, n, seed=12, progress=False), ref)


def test_same_seed_same_report():
    kw = dict(epsilon=1.0, samples=3000, seed=4, progress=False)
    a = audit_mechanism(vectorized, 0.0, 1.0, batch_size=100, **kw)
    b = audit_mechanism(vectorized, 0.0, 1.0, batch_size=50_000, **kw)
    assert a.to_dict() == b.to_dict()
    assert a.counts["n"] + a.counts["n_train"] == 3000


def test_scalar_mechanism_with_categorical_output():
    def coin(data, rng):
        return "heads" if rng.random() < (0.8 if data else 0.2) else "tails"

    r = audit_mechanism(coin, True, False, epsilon=1.0, samples=2000, progress=False)
    assert r.method == "exact" and r.violation  # true epsilon log 4 > 1


def test_bad_mechanisms():
    with pytest.raises(AuditInputError, match="mechanism must be callable, got int"):
        audit_mechanism(3, 0.0, 1.0, epsilon=1.0)
    with pytest.raises(AuditInputError, match="must return 500 outputs on a leading axis, got shape"):
        audit_mechanism(lambda data, rng, size: np.zeros(3), 0.0, 1.0, epsilon=1.0, samples=500)
    with pytest.raises(AuditInputError, match="same shape"):
        audit_mechanism(lambda data, rng: np.zeros(int(rng.integers(1, 3))), 0.0, 1.0, epsilon=1.0, samples=500)
    with pytest.raises(PrivacyParameterError, match="samples must be >= 1, got 0"):
        audit_mechanism(vectorized, 0.0, 1.0, epsilon=1.0, samples=0)
    with pytest.raises(AuditInputError, match="samples must hold at least 100 samples, got 50"):
        audit_mechanism(vectorized, 0.0, 1.0, epsilon=1.0, samples=50)
    with pytest.raises(PrivacyParameterError, match="epsilon must be > 0"):
        audit_mechanism(vectorized, 0.0, 1.0, epsilon=0.0, samples=200)
    with pytest.raises(PrivacyParameterError, match="batch_size must be >= 1"):
        draw_samples(vectorized, 0.0, 10, batch_size=0)


def _aliasing_sum(data, rng):
    """Each output is data + a sum of Laplace(1) draws, 1-DP in data; but it writes into ``data`` (no copy)."""
    noisy = data
    noisy += rng.laplace(0.0, 1.0, noisy.shape)
    return noisy.sum()


def _shifting_block(data, rng, size):
    data += rng.laplace(0.0, 1.0)  # writes into the caller's array once per call
    return data + rng.laplace(0.0, 1.0, size)


@pytest.mark.parametrize("mechanism", [_aliasing_sum, _shifting_block])
@pytest.mark.parametrize("max_in_memory", [2_000_000, 0])
def test_a_mechanism_writing_into_its_input_is_refused_not_audited(mechanism, max_in_memory):
    """Every output of these mechanisms is 1-DP in the input it was handed, yet their later calls see another
    input: the draws are not independent draws on ``data``, and audited they certified epsilon >= 5 against
    the claim of 1 (seeds 0 and 1, 20000 samples)."""
    with pytest.raises(AuditInputError, match=r"mechanism changed its input data .*block 0"):
        audit_mechanism(mechanism, np.zeros(1), np.ones(1), epsilon=1.0, samples=20_000, seed=0,
                        max_in_memory=max_in_memory)


def test_a_mechanism_changing_data_prime_is_named():
    def writes_data_prime(data, rng, size):
        if data[0] == 1.0:
            data[0] = 1.5
        return data + rng.laplace(0.0, 1.0, size)

    with pytest.raises(AuditInputError, match=r"changed its input data_prime"):
        audit_mechanism(writes_data_prime, np.zeros(1), np.ones(1), epsilon=1.0, samples=500)


def test_an_input_left_unchanged_is_audited_and_a_mechanism_may_read_a_copy():
    def copies(data, rng):  # _aliasing_sum with a copy: each output is data + Laplace(1), 1-DP
        noisy = np.array(data, dtype=float)
        noisy += rng.laplace(0.0, 1.0, noisy.shape)
        return noisy.sum()

    assert not audit_mechanism(copies, np.zeros(1), np.ones(1), epsilon=1.0, samples=2_000).violation


def test_an_input_object_filling_a_cache_when_read_is_not_called_changed():
    """A cached_property filled on first read changes the object's pickle, not its value: it is not refused."""
    import functools

    class Counts:
        def __init__(self, value):
            self.value = value

        @functools.cached_property
        def total(self):
            return float(self.value)

    def reads_total(data, rng, size):
        return data.total + rng.laplace(0.0, 1.0, size)

    report = audit_mechanism(reads_total, Counts(0.0), Counts(1.0), epsilon=1.0, samples=500)
    assert report.method == "classifier"


def test_lists_dicts_and_dataframes_written_into_are_refused():
    import pandas as pd

    def bumps_list(data, rng, size):
        data[0] += 1.0
        return rng.laplace(0.0, 1.0, size)

    def bumps_frame(data, rng, size):
        data.loc[0, "x"] += 1.0
        return rng.laplace(0.0, 1.0, size)

    with pytest.raises(AuditInputError, match="changed its input data "):
        audit_mechanism(bumps_list, {"a": [0.0]}["a"], [1.0], epsilon=1.0, samples=500)
    with pytest.raises(AuditInputError, match="changed its input data "):
        audit_mechanism(bumps_frame, pd.DataFrame({"x": [0.0]}), pd.DataFrame({"x": [1.0]}), epsilon=1.0,
                        samples=500)

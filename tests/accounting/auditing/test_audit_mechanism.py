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

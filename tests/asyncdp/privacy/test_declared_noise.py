"""asyncdp.privacy.behavior.declared_noise: the declaration read once per algorithm and horizon, then shared safely.

A check asks for the same algorithm's declared noise dozens of times (every
replay, every step). The answer must be the declaration's (each round's
``noise(t, channel).scale``), for the algorithm and horizon asked about,
in a dict the caller may change without touching another caller's, and with
scales no caller can change in place.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncdp.privacy import behavior
from asyncdp.privacy.behavior import ZeroNoise, declared_noise
from asyncdp.privacy.context import small_example


def _algorithm(**params):
    import dataclasses

    sc = small_example()[0].scenario
    return dataclasses.replace(sc.algorithm, **params).bind(sc.problem), sc.horizon


def test_the_scales_are_the_declarations_for_each_algorithm_and_horizon():
    alg, horizon = _algorithm()
    other, _ = _algorithm(epsilon=3.0)
    for a in (alg, other, alg):
        for T in (horizon, 2, horizon):
            got = declared_noise(a, T)
            want = [a.noise(t, "y").scale for t in range(1, T + 1)]
            assert got["y"].mechanism == "laplace" and got["y"].scales.tolist() == want
    assert declared_noise(alg, horizon)["y"].scales.tolist() != declared_noise(other, horizon)["y"].scales.tolist()


def test_each_call_returns_its_own_dict_and_read_only_scales():
    alg, horizon = _algorithm()
    first = declared_noise(alg, horizon)
    first.pop("y")
    second = declared_noise(alg, horizon)
    assert "y" in second
    with pytest.raises(ValueError):
        second["y"].scales[0] = 0.0


def test_the_kept_declarations_are_bounded():
    algs = [_algorithm(epsilon=1.0 + k)[0] for k in range(behavior._DECLARED_ENTRIES + 5)]
    for a in algs:
        declared_noise(a, 3)
    assert len(behavior._DECLARED) <= behavior._DECLARED_ENTRIES


def test_zero_noise_gives_new_zeros_of_each_rounds_dimension():
    alg, _ = _algorithm()
    zero = ZeroNoise(alg)
    a, b = zero(2, (4, 3)), zero(2, (4, 3))
    assert a["y"].shape == (4, 3, alg.noise(2, "y").dimension) and not np.any(a["y"])
    a["y"][0] = 1.0
    assert not np.any(b["y"]) and not np.any(zero(2, (4, 3))["y"])


def test_zero_noise_is_shared_per_algorithm_and_bounded():
    algs = [_algorithm(epsilon=1.0 + k)[0] for k in range(behavior._DECLARED_ENTRIES + 3)]
    assert ZeroNoise.of(algs[0]) is ZeroNoise.of(algs[0]) and ZeroNoise.of(algs[0]).alg is algs[0]
    assert ZeroNoise.of(algs[1]) is not ZeroNoise.of(algs[0])
    for a in algs:
        assert ZeroNoise.of(a).alg is a
    assert len(behavior._ZEROS) <= behavior._DECLARED_ENTRIES

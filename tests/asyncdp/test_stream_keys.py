"""The random-stream table of asyncdp.noise: one key per stream, used by every module that draws."""

import importlib

import numpy as np

from asyncdp import noise


def test_no_two_streams_share_a_key():
    keys = list(noise.STREAM_KEYS.values())
    assert len(keys) == len(set(keys)), noise.STREAM_KEYS


def test_modules_draw_from_the_table():
    # each module that draws from a stream of its own takes the key from the one table
    expected = {
        ("asyncdp.problems.datasets", "DATA_KEY"): "data",
        ("asyncdp.papers.dpsda.rule", "GRADIENT_NOISE_KEY"): "gradient_noise",
        ("asyncdp.engine.links", "LINK_STREAM_KEY"): "link",
        ("asyncdp.engine.timing", "CLOCK_STREAM_KEY"): "clock",
    }
    for (module, name), stream_name in expected.items():
        assert getattr(importlib.import_module(module), name) == noise.STREAM_KEYS[stream_name], (module, name)


def test_gradient_noise_and_batch_order_are_independent_streams():
    # the clash this table fixes: with equal seeds, DP-SDA's gradient noise of (t=0, i=1)
    # and the batch order of epoch 0 came from one SeedSequence
    seed = 11
    grad = noise.stream(seed, noise.GRADIENT_NOISE_KEY, 1, 0).standard_normal(8)
    data = noise.stream(seed, noise.DATA_KEY, 1, 0).standard_normal(8)
    assert not np.array_equal(grad, data)
    assert noise.stream(seed, noise.GRADIENT_NOISE_KEY, 1, 0).bit_generator.seed_seq.spawn_key != (
        noise.stream(seed, noise.DATA_KEY, 1, 0).bit_generator.seed_seq.spawn_key
    )

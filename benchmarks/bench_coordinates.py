"""Benchmark: a batch's box projection and L2 clip, one coordinate at a time against numpy's broadcast formulas.

The engines and the replays project and clip ``(runs, agents, dim)`` arrays
every round (Huang, Mitra and Vaidya's rule does both in each update).
:mod:`asyncdp.problems.coordinates` takes them one coordinate at a time; the
baseline, measured in the same process, is the broadcast formula each
replaces (``np.minimum(np.maximum(x, low), high)`` with ``(dim,)`` bounds;
``v * factor[..., None]``). Printed per shape: both medians (microseconds per
call) and their ratio. The results are compared to the bit first.

Run:  python benchmarks/bench_coordinates.py [--repeats 25] [--number 200]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import timeit

import numpy as np

from asyncdp.algorithms.clipping import clip_l2
from asyncdp.problems.domains import Box

SHAPES = ((1000, 5, 2), (4000, 5, 2), (1000, 10, 3), (1000, 6, 4), (1000, 6, 8))


def _clamp_broadcast(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The projection's formula before: the ``(dim,)`` bounds broadcast against the points."""
    return np.minimum(np.maximum(x, low), high)


def _clip_broadcast(v: np.ndarray, bound: float) -> np.ndarray:
    """The clip's formula before: the squares' sum, then ``v`` times ``bound / max(norm, bound)`` broadcast."""
    norm = np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=True))
    return v * (bound / np.maximum(norm, bound))


def _median_us(stmt, repeats: int, number: int) -> float:
    return 1e6 * statistics.median(timeit.repeat(stmt, repeat=repeats, number=number)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("operation        shape          broadcast (us)  one coordinate at a time (us)  ratio")
    for shape in SHAPES:
        x = 2.0 * rng.normal(size=shape)
        box = Box(-np.ones(shape[-1]), np.linspace(0.5, 1.5, shape[-1]))
        low, high = box.low, box.high
        bound = 1.5
        assert np.array_equal(box.project(x), np.minimum(np.maximum(x, low), high))
        assert np.allclose(clip_l2(x, bound), _clip_broadcast(x, bound), rtol=1e-15, atol=0.0)
        cases = (
            ("box projection", functools.partial(_clamp_broadcast, x, low, high), functools.partial(box.project, x)),
            ("L2 clip", functools.partial(_clip_broadcast, x, bound), functools.partial(clip_l2, x, bound)),
        )
        for name, old, new in cases:
            t_old, t_new = (_median_us(f, args.repeats, args.number) for f in (old, new))
            print(f"{name:16s} {str(shape):14s} {t_old:14.1f}  {t_new:29.1f}  {t_old / t_new:5.2f}")


if __name__ == "__main__":
    main()

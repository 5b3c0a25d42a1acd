"""Small helpers shared by the benchmarks: medians of repeated wall-clock timings."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Run ``fn`` ``repeats`` times; return the median wall time (s) and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out

"""Thread limits of the auditor's fits and scores: BLAS and OpenMP threads, limited once around many blocks.

Small matrices run faster on one thread on a shared box (the waiting threads spin); :func:`threads_for` picks one
thread below :data:`ONE_THREAD_ENTRIES` entries and leaves larger matrices the process's threads. The limits are
:mod:`threadpoolctl`'s.

Example:
    >>> with threads_for(100):
    ...     pass
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["ONE_THREAD_ENTRIES", "controller", "finite_features", "one_thread", "threads", "threads_for"]

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

_CONTROLLER: Any = None
"""The process's :class:`threadpoolctl.ThreadpoolController`, made once (listing the loaded thread pools
costs milliseconds; limiting through a made controller costs microseconds)."""


def threads(limit: int | None) -> Any:
    """A context limiting the BLAS and OpenMP threads to ``limit`` (``None``: unchanged).

    Inside a one-thread context a nested one-thread context changes nothing
    and costs nothing (:func:`one_thread`), so a caller that fits and scores
    many blocks limits the threads once around all of them."""
    if limit is None:
        return contextlib.nullcontext()
    if limit == 1:
        return one_thread()
    return controller().limit(limits=limit)


def controller() -> Any:
    """The process's ``_CONTROLLER``, made on first use."""
    global _CONTROLLER
    if _CONTROLLER is None:
        import sklearn.linear_model  # noqa: F401  (its OpenMP runtime is loaded before the pools are listed)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


_ONE_THREAD = threading.local()
"""Per thread, how many :func:`one_thread` contexts it has open (its outermost one holds the limit)."""


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
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
    with controller().limit(limits=1):
        _ONE_THREAD.depth = 1
        try:
            yield
        finally:
            _ONE_THREAD.depth = 0


def finite_features() -> Any:
    """scikit-learn's ``assume_finite``: the features are finite by construction (values clipped to
    ``+-CLIP`` before squaring, indicators for non-finite outputs: :mod:`~accounting.auditing.features`), so
    its scan of every
    entry for NaN and infinities can never fail and is skipped. The *standardized* features can still overflow
    (huge outputs); :func:`~accounting.auditing.classifier.fit_score` and
    :meth:`~accounting.auditing.classifier.LearnedScore.__call__` then refuse the fit and the NaN
    scores themselves."""
    import sklearn

    return sklearn.config_context(assume_finite=True, skip_parameter_validation=True)


def threads_for(entries: int) -> Any:
    """One thread for matrices of at most :data:`ONE_THREAD_ENTRIES` entries, else the process's threads."""
    return threads(1 if entries <= ONE_THREAD_ENTRIES else None)

"""``audit_mechanism``: sample a mechanism on two neighbouring inputs and audit the samples.

Sampling is reproducible and independent of the batch size: the samples of
each input are cut into *blocks* of :data:`BLOCK` samples, block ``j`` of
input ``i`` is drawn with ``numpy.random.default_rng(SeedSequence(seed).spawn(2)[i].spawn(...)[j])``,
and a batch is a whole number of blocks (``batch_size`` only sets how much is
drawn between progress updates). A mechanism whose signature has a ``size``
parameter is called once per block, ``mechanism(data, rng, size=k)``, and must
return ``k`` outputs stacked on a leading axis (vectorized); otherwise it is
called once per sample, ``mechanism(data, rng)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from topology.validation import check_integer

from ..errors import PrivacyParameterError
from .report import SampleAuditReport
from .samples import MAX_TRAIN, AuditInputError, audit_samples

__all__ = ["BLOCK", "PROGRESS_MIN", "audit_mechanism", "draw_samples"]

BLOCK = 4096
"""Samples per seeded block (part of the reproducibility contract: same seed, same samples)."""

PROGRESS_MIN = 200_000
"""With ``progress=None``, a tqdm bar is shown when more samples than this are drawn."""

_WHERE = "audit_mechanism"


def _vectorized(mechanism: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(mechanism).parameters
    except (TypeError, ValueError):  # builtins without a signature: call per sample
        return False
    return "size" in params


def _draw_block(mechanism: Callable[..., Any], data: Any, rng: np.random.Generator, k: int,
                vectorized: bool) -> np.ndarray:
    if vectorized:
        out = np.asarray(mechanism(data, rng, size=k))
        if out.ndim == 0 or out.shape[0] != k:
            raise AuditInputError(f"{_WHERE}: mechanism(data, rng, size={k}) must return {k} outputs on a leading "
                                  f"axis, got shape {out.shape}")
        return out
    outs = [mechanism(data, rng) for _ in range(k)]
    try:
        return np.asarray(outs)
    except ValueError as exc:
        raise AuditInputError(f"{_WHERE}: mechanism outputs must all have the same shape ({exc})") from None


def draw_samples(mechanism: Callable[..., Any], data: Any, samples: int, *, seed: int | np.random.SeedSequence = 0,
                 batch_size: int = 65_536, progress: bool | None = None, desc: str = "sampling") -> np.ndarray:
    """``samples`` outputs of ``mechanism`` on ``data``, drawn in seeded blocks (see the module docstring).

    Args:
        mechanism: ``mechanism(data, rng)`` -> one output, or ``mechanism(data, rng, size=k)`` -> ``k`` outputs.
        data: the input passed to the mechanism.
        samples: how many outputs (>= 1).
        seed: an integer >= 0 or a ``SeedSequence``.
        batch_size: samples drawn between progress updates (rounded up to whole blocks; does not change the samples).
        progress: show a tqdm bar (``None``: only above :data:`PROGRESS_MIN` samples).
        desc: label of the bar.

    Returns:
        An array with a leading axis of length ``samples``.

    Raises:
        AuditInputError: a non-callable mechanism, outputs of the wrong or varying shape.
        PrivacyParameterError: a bad ``samples``, ``seed`` or ``batch_size``.

    Example:
        >>> def lap(data, rng, size):
        ...     return data + rng.laplace(0.0, 1.0, size)
        >>> x = draw_samples(lap, 0.0, 5000, seed=3, batch_size=4096)
        >>> bool((x == draw_samples(lap, 0.0, 5000, seed=3, batch_size=100_000)).all())
        True
    """
    if not callable(mechanism):
        raise AuditInputError(f"{_WHERE}: mechanism must be callable, got {type(mechanism).__name__}")
    samples = check_integer(samples, "samples", minimum=1, error=PrivacyParameterError, where=_WHERE)
    batch_size = check_integer(batch_size, "batch_size", minimum=1, error=PrivacyParameterError, where=_WHERE)
    if isinstance(seed, np.random.SeedSequence):
        ss = seed
    else:
        ss = np.random.SeedSequence(check_integer(seed, "seed", minimum=0, error=PrivacyParameterError, where=_WHERE))
    n_blocks = -(-samples // BLOCK)
    children = ss.spawn(n_blocks)
    per_batch = max(1, -(-batch_size // BLOCK))
    vec = _vectorized(mechanism)
    show = samples > PROGRESS_MIN if progress is None else bool(progress)
    from tqdm.auto import tqdm

    parts: list[np.ndarray] = []
    with tqdm(total=samples, desc=desc, unit="sample", disable=not show, leave=False) as bar:
        for start in range(0, n_blocks, per_batch):
            for j in range(start, min(n_blocks, start + per_batch)):
                k = min(BLOCK, samples - j * BLOCK)
                parts.append(_draw_block(mechanism, data, np.random.default_rng(children[j]), k, vec))
            bar.update(min(samples, (start + per_batch) * BLOCK) - min(samples, start * BLOCK))
    try:
        return np.concatenate(parts)
    except ValueError as exc:
        raise AuditInputError(f"{_WHERE}: mechanism outputs must all have the same shape ({exc})") from None


def audit_mechanism(mechanism: Callable[..., Any], data: Any, data_prime: Any, *, epsilon: float, delta: float = 0.0,
                    samples: int = 100_000, confidence: float = 0.95, seed: int = 0, method: str = "auto",
                    batch_size: int = 65_536, progress: bool | None = None,
                    max_train: int = MAX_TRAIN) -> SampleAuditReport:
    """Sample ``mechanism`` on two neighbouring inputs and certify a lower bound on its privacy loss.

    ``samples`` outputs are drawn on each input (:func:`draw_samples`, from
    ``SeedSequence(seed).spawn(2)``) and passed to
    :func:`~accounting.auditing.samples.audit_samples` with the same ``seed``;
    the same ``seed`` gives the same report whatever ``batch_size``.

    Args:
        mechanism: ``mechanism(data, rng)`` returning one output, or ``mechanism(data, rng, size=k)`` returning
            ``k`` outputs on a leading axis.
        data, data_prime: the neighbouring inputs.
        epsilon, delta: the claim.
        samples: outputs drawn per input (>= 100).
        confidence: level of the certified bounds.
        seed: integer >= 0.
        method: see :func:`~accounting.auditing.samples.audit_samples`.
        batch_size: samples drawn between progress updates.
        progress: tqdm bar while sampling (``None``: above :data:`PROGRESS_MIN` samples).
        max_train: training rows per side (see :func:`~accounting.auditing.samples.audit_samples`).

    Returns:
        A :class:`~accounting.auditing.report.SampleAuditReport`.

    Raises:
        AuditInputError: a non-callable mechanism, too few samples, outputs of varying shape.
        PrivacyParameterError: a bad epsilon, delta, confidence or seed.

    Example:
        >>> def half_noise(data, rng, size):  # claims epsilon = 1 for sensitivity 1, uses half the scale
        ...     return data + rng.laplace(0.0, 0.5, size)
        >>> audit_mechanism(half_noise, 0.0, 1.0, epsilon=1.0, samples=20_000).violation
        True
    """
    if not callable(mechanism):
        raise AuditInputError(f"{_WHERE}: mechanism must be callable, got {type(mechanism).__name__}")
    samples = check_integer(samples, "samples", minimum=1, error=PrivacyParameterError, where=_WHERE)
    seed = check_integer(seed, "seed", minimum=0, error=PrivacyParameterError, where=_WHERE)
    ss, ss_prime = np.random.SeedSequence(seed).spawn(2)
    x = draw_samples(mechanism, data, samples, seed=ss, batch_size=batch_size, progress=progress, desc="sampling P")
    xp = draw_samples(mechanism, data_prime, samples, seed=ss_prime, batch_size=batch_size, progress=progress,
                      desc="sampling P'")
    return audit_samples(x, xp, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, method=method,
                         max_train=max_train)

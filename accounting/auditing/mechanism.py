"""``audit_mechanism``: sample a mechanism on two neighbouring inputs and audit the samples.

Sampling is reproducible and independent of the batch size: the samples of
each input are cut into *blocks* of :data:`BLOCK` samples, block ``j`` of
input ``i`` is drawn with ``numpy.random.default_rng(SeedSequence(seed).spawn(2)[i].spawn(...)[j])``,
and a batch is a whole number of blocks (``batch_size`` only sets how much is
drawn between progress updates). A mechanism whose signature has a ``size``
parameter is called once per block, ``mechanism(data, rng, size=k)``, and must
return ``k`` outputs stacked on a leading axis (vectorized); otherwise it is
called once per sample, ``mechanism(data, rng)``.

:func:`audit_mechanism` holds all samples in memory up to ``max_in_memory``
per input and streams above it: only the training rows (bounded by
``max_train`` and ``max_select``) and one block at a time are held, so
DP-Sniper's sample sizes (about ``2.2e8`` per input) can be audited.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from topology.validation import check_integer

from ..errors import PrivacyParameterError
from .report import SampleAuditReport
from .samples import (MAX_TRAIN, MIN_SAMPLES, AuditInputError, _check_claim, _numeric_for, audit_samples,
                      certified_report)

__all__ = ["BLOCK", "MAX_IN_MEMORY", "MAX_SELECT", "PROGRESS_MIN", "audit_mechanism", "draw_samples"]

BLOCK = 4096
"""Samples per seeded block (part of the reproducibility contract: same seed, same samples)."""

MAX_IN_MEMORY = 2_000_000
"""Default of ``max_in_memory``: :func:`audit_mechanism` streams above this many samples per input."""

MAX_SELECT = 5_000_000
"""Default of ``max_select``: rows per input choosing the event when streaming (their scores are kept)."""

PROGRESS_MIN = 200_000
"""With ``progress=None``, a tqdm bar is shown when more samples than this are drawn."""

_WHERE = "audit_mechanism"


def _vectorized(mechanism: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(mechanism).parameters
    except (TypeError, ValueError):  # builtins without a signature: call per sample
        return False
    return "size" in params


class _InputGuard:
    """Detects a mechanism that writes into the input it is handed (e.g. ``noisy = data; noisy += noise``).

    Its later calls then see another input, so its outputs are neither draws
    on ``data`` nor independent, and their audit is about neither: a
    mechanism whose every output is 1-DP in the input it was handed was
    certified epsilon >= 5. The input's pickled bytes are compared after the
    blocks ``0, 1, 3, 7, ...`` (``j + 1`` a power of two) and the last one, so a
    lasting change is found whatever its block, at a cost logarithmic in the
    blocks. Only inputs built of numbers, strings, numpy arrays, pandas
    objects, lists, tuples and dicts are checked (:func:`_plain`): another
    object's pickle can change when it is only read (a ``cached_property``
    filled on first use), which is no change of its value.
    """

    def __init__(self, data: Any, name: str, blocks: int) -> None:
        self._data, self._name, self._last = data, name, blocks - 1
        self._bytes = self._pickled() if _plain(data) else None

    def _pickled(self) -> bytes | None:
        try:
            return pickle.dumps(self._data, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # e.g. an object array holding something pickle refuses: left unchecked
            return None

    def after(self, j: int) -> None:
        """Check after block ``j``.

        Raises:
            AuditInputError: the input's bytes changed by the end of block ``j``.
        """
        if self._bytes is None or not (j == self._last or (j + 1) & j == 0):
            return
        if self._pickled() != self._bytes:
            raise AuditInputError(
                f"{_WHERE}: the mechanism changed its input {self._name} (found after block {j} of {BLOCK} "
                f"samples): later calls saw another input, so the outputs are not independent draws on "
                f"{self._name}; copy the input before writing to it (e.g. noisy = np.array(data))")


def _plain(data: Any, depth: int = 0) -> bool:
    """Whether ``data`` is built of values whose pickle changes only when they do (see ``_InputGuard``)."""
    if data is None or isinstance(data, (bool, int, float, complex, str, bytes, np.generic)):
        return True
    if isinstance(data, np.ndarray):
        return data.dtype != object or (depth < 8 and all(_plain(v, depth + 1) for v in data.ravel().tolist()))
    if type(data).__module__.split(".")[0] == "pandas" and type(data).__name__ in ("DataFrame", "Series"):
        return True
    if isinstance(data, (list, tuple)) and depth < 8:
        return all(_plain(v, depth + 1) for v in data)
    if isinstance(data, dict) and depth < 8:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in data.items())
    return False


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
                 batch_size: int = 65_536, progress: bool | None = None, desc: str = "sampling",
                 name: str = "data") -> np.ndarray:
    """``samples`` outputs of ``mechanism`` on ``data``, drawn in seeded blocks (see the module docstring).

    Args:
        mechanism: ``mechanism(data, rng)`` -> one output, or ``mechanism(data, rng, size=k)`` -> ``k`` outputs.
        data: the input passed to the mechanism.
        samples: how many outputs (>= 1).
        seed: an integer >= 0 or a ``SeedSequence``.
        batch_size: samples drawn between progress updates (rounded up to whole blocks; does not change the samples).
        progress: show a tqdm bar (``None``: only above :data:`PROGRESS_MIN` samples).
        desc: label of the bar.
        name: what ``data`` is called in errors.

    Returns:
        An array with a leading axis of length ``samples``.

    Raises:
        AuditInputError: a non-callable mechanism, outputs of the wrong or varying shape, a mechanism that
            changed ``data`` (its ``_InputGuard``).
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
    guard = _InputGuard(data, name, n_blocks)
    show = samples > PROGRESS_MIN if progress is None else bool(progress)
    from tqdm.auto import tqdm

    parts: list[np.ndarray] = []
    with tqdm(total=samples, desc=desc, unit="sample", disable=not show, leave=False) as bar:
        for start in range(0, n_blocks, per_batch):
            for j in range(start, min(n_blocks, start + per_batch)):
                k = min(BLOCK, samples - j * BLOCK)
                parts.append(_draw_block(mechanism, data, np.random.default_rng(children[j]), k, vec))
                guard.after(j)
            bar.update(min(samples, (start + per_batch) * BLOCK) - min(samples, start * BLOCK))
    try:
        return np.concatenate(parts)
    except ValueError as exc:
        raise AuditInputError(f"{_WHERE}: mechanism outputs must all have the same shape ({exc})") from None


def audit_mechanism(mechanism: Callable[..., Any], data: Any, data_prime: Any, *, epsilon: float, delta: float = 0.0,
                    samples: int = 100_000, confidence: float = 0.95, seed: int = 0, method: str = "auto",
                    batch_size: int = 65_536, progress: bool | None = None,
                    max_train: int = MAX_TRAIN, max_in_memory: int = MAX_IN_MEMORY,
                    max_select: int = MAX_SELECT, low_bits: bool = False) -> SampleAuditReport:
    """Sample ``mechanism`` on two neighbouring inputs and certify a lower bound on its privacy loss.

    The outputs on ``data`` and ``data_prime`` are those of :func:`draw_samples`
    with the seeds ``SeedSequence(seed).spawn(2)``, whatever ``batch_size``.

    * ``samples <= max_in_memory`` (in memory): they are drawn in full and
      passed to :func:`~accounting.auditing.samples.audit_samples` with the same
      ``seed`` (shuffled, then split).
    * ``samples > max_in_memory`` (streaming): the rows are used in the order
      they are drawn (independent draws need no shuffle), split as by
      :func:`~accounting.auditing.samples.split_sizes` with at most
      ``max_select`` rows choosing the event: the first rows fit the score and
      choose the event (only the scores of the choosing rows are kept), then the
      certification rows are drawn block by block and only the event counts
      are kept. The event choice, the counting and the certification are the
      functions ``audit_samples`` uses, so the bounds, the confidence and the
      union bound are the same; boundary ties of a threshold event are
      decided by a generator seeded per certification piece
      (``SeedSequence(seed)`` child 2, then the piece), so the report does not
      depend on ``batch_size``. Memory: the training rows (at most
      ``max(max_train, max_select)`` per side for exact events, ``max_train``
      rows and ``max_select`` scores for the classifier) plus one block,
      whatever ``samples``.

    Args:
        mechanism: ``mechanism(data, rng)`` returning one output, or ``mechanism(data, rng, size=k)`` returning
            ``k`` outputs on a leading axis.
        data, data_prime: the neighbouring inputs.
        epsilon, delta: the claim.
        samples: outputs drawn per input (>= 100).
        confidence: level of the certified bounds.
        seed: integer >= 0.
        method: see :func:`~accounting.auditing.samples.audit_samples`.
        batch_size: samples drawn between progress updates (in memory; does not change the samples).
        progress: tqdm bar while sampling (``None``: above :data:`PROGRESS_MIN` samples).
        max_train: training rows per side (see :func:`~accounting.auditing.samples.audit_samples`).
        max_in_memory: largest ``samples`` audited in memory, >= 0 (above it: streaming).
        max_select: streaming only: most rows per side that choose the event, >= 100.
        low_bits: also try the low-bits score (module ``accounting.auditing.lowbits``) among the classifier's
            candidate scores, in memory and streaming alike: the outputs are audited as the floating-point numbers
            they are, so a mechanism whose lowest mantissa bits depend on its input is refuted even when its real
            values are private. Off by default: textbook floating-point Laplace leaks through its last bits too
            (Mironov, CCS 2012), a leak of the implementation that a claim about the real-number mechanism does
            not speak of. Exact events (discrete outputs) compare whole values and need no such score.

    Returns:
        A :class:`~accounting.auditing.report.SampleAuditReport`.

    Raises:
        AuditInputError: a non-callable mechanism, too few samples, outputs of varying shape, a mechanism that
            changed ``data`` or ``data_prime`` while drawing (its ``_InputGuard``), a bad ``max_train`` or
            ``max_select``, an unknown method, ``low_bits`` not a bool.
        PrivacyParameterError: a bad epsilon, delta, confidence, seed, ``samples``, ``batch_size`` or
            ``max_in_memory``.

    Example:
        >>> def half_noise(data, rng, size):  # claims epsilon = 1 for sensitivity 1, uses half the scale
        ...     return data + rng.laplace(0.0, 0.5, size)
        >>> audit_mechanism(half_noise, 0.0, 1.0, epsilon=1.0, samples=20_000).violation
        True
        >>> audit_mechanism(half_noise, 0.0, 1.0, epsilon=1.0, samples=20_000, max_in_memory=0).violation  # streaming
        True
    """
    if not callable(mechanism):
        raise AuditInputError(f"{_WHERE}: mechanism must be callable, got {type(mechanism).__name__}")
    samples = check_integer(samples, "samples", minimum=1, error=PrivacyParameterError, where=_WHERE)
    eps, dlt, conf, seed, max_train = _check_claim(epsilon, delta, confidence, seed, method, max_train)
    if not isinstance(low_bits, (bool, np.bool_)):
        raise AuditInputError(f"{_WHERE}: low_bits must be True or False, got {low_bits!r}")
    batch_size = check_integer(batch_size, "batch_size", minimum=1, error=PrivacyParameterError, where=_WHERE)
    max_in_memory = check_integer(max_in_memory, "max_in_memory", minimum=0, error=PrivacyParameterError,
                                  where=_WHERE)
    max_select = check_integer(max_select, "max_select", minimum=MIN_SAMPLES, error=AuditInputError, where=_WHERE)
    if samples > max_in_memory:
        show = 2 * samples > PROGRESS_MIN if progress is None else bool(progress)
        return _stream_audit(mechanism, data, data_prime, samples=samples, seed=seed, method=method,
                             max_train=max_train, max_select=max_select, show=show, claim=(eps, dlt, conf),
                             low_bits=bool(low_bits))
    ss, ss_prime = np.random.SeedSequence(seed).spawn(2)
    x = draw_samples(mechanism, data, samples, seed=ss, batch_size=batch_size, progress=progress, desc="sampling P")
    xp = draw_samples(mechanism, data_prime, samples, seed=ss_prime, batch_size=batch_size, progress=progress,
                      desc="sampling P'", name="data_prime")
    return audit_samples(x, xp, epsilon=epsilon, delta=delta, confidence=confidence, seed=seed, method=method,
                         max_train=max_train, low_bits=bool(low_bits))


def _child(ss: np.random.SeedSequence, j: int) -> np.random.SeedSequence:
    """``ss.spawn(j + 1)[j]`` for a fresh ``ss``, without creating the ``j`` children before it."""
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, ss.n_children_spawned + j),
                                  pool_size=ss.pool_size)


class _RowStream:
    """The outputs of ``mechanism`` on ``data`` in the order of :func:`draw_samples`, drawn block by block on demand."""

    def __init__(self, mechanism: Callable[..., Any], data: Any, ss: np.random.SeedSequence, samples: int,
                 bar: Any, name: str = "data") -> None:
        self._guard = _InputGuard(data, name, -(-samples // BLOCK))
        self._blocks = self._draw(mechanism, data, ss, samples, _vectorized(mechanism), bar)
        self._buffer: list[np.ndarray] = []
        self._trailing: tuple[int, ...] | None = None

    def _draw(self, mechanism: Callable[..., Any], data: Any, ss: np.random.SeedSequence, samples: int,
              vec: bool, bar: Any) -> Iterator[np.ndarray]:
        for j in range(-(-samples // BLOCK)):
            k = min(BLOCK, samples - j * BLOCK)
            block = _draw_block(mechanism, data, np.random.default_rng(_child(ss, j)), k, vec)
            self._guard.after(j)
            if self._trailing is None:
                self._trailing = block.shape[1:]
            elif block.shape[1:] != self._trailing:
                raise AuditInputError(f"{_WHERE}: mechanism outputs must all have the same shape "
                                      f"({self._trailing} then {block.shape[1:]})")
            bar.update(k)
            yield block

    def pieces(self, m: int) -> Iterator[np.ndarray]:
        """The next ``m`` rows, as consecutive arrays of at most :data:`BLOCK` rows (a block may be split)."""
        while m > 0:
            block = self._buffer.pop() if self._buffer else next(self._blocks)
            if block.shape[0] > m:
                self._buffer.append(block[m:])
                block = block[:m]
            m -= block.shape[0]
            yield block

    def take(self, m: int) -> np.ndarray:
        """The next ``m`` rows in one array."""
        parts = list(self.pieces(m))
        return np.concatenate(parts) if parts else np.empty((0, *(self._trailing or ())))


def _stream_audit(mechanism: Callable[..., Any], data: Any, data_prime: Any, *, samples: int, seed: int,
                  method: str, max_train: int, max_select: int, show: bool, claim: tuple[float, float, float],
                  low_bits: bool = False) -> SampleAuditReport:
    """The streaming path of :func:`audit_mechanism` (see its docstring); memory does not grow with ``samples``."""
    from tqdm.auto import tqdm

    from .samples import (choose_exact, choose_method, choose_threshold, fit_classifier, method_rows, per_bound_alpha,
                          split_sizes)

    eps, dlt, conf = claim
    if samples < MIN_SAMPLES:
        raise AuditInputError(f"{_WHERE}: samples must hold at least {MIN_SAMPLES} samples, got {samples}")
    alpha = per_bound_alpha(conf)
    ss = np.random.SeedSequence(seed)
    with tqdm(total=2 * samples, desc="sampling P and P'", unit="sample", disable=not show, leave=False) as bar:
        a, b = (_RowStream(mechanism, d, _child(ss, i), samples, bar, name)
                for i, (d, name) in enumerate(((data, "data"), (data_prime, "data_prime"))))
        head = min(samples // 2, max_train)
        head_a, head_b = a.take(head), b.take(head)
        if head_a.shape[1:] != head_b.shape[1:]:
            raise AuditInputError(f"{_WHERE}: outputs on data_prime must have the shape of those on data, "
                                  f"{head_a.shape[1:]}, got {head_b.shape[1:]}")
        numeric = _numeric_for(method, head_a, head_b, _WHERE)
        rows_a, rows_b = head_a.reshape(head, -1), head_b.reshape(head, -1)
        decide = method_rows(samples, max_train, max_select)  # none of these rows is certified, whichever method
        chosen = choose_method(method, rows_a[:decide], rows_b[:decide], numeric=numeric)
        fit, train = split_sizes(chosen, samples, max_train, max_select)
        n_cert = (samples - train, samples - train)
        leftover: tuple[np.ndarray, np.ndarray] | None = None
        if chosen == "exact":
            if train <= head:
                sel_a, sel_b = rows_a[:train], rows_b[:train]
                leftover = (rows_a[train:], rows_b[train:]) if train < head else None
            else:
                sel_a = np.concatenate([rows_a, a.take(train - head).reshape(train - head, -1)])
                sel_b = np.concatenate([rows_b, b.take(train - head).reshape(train - head, -1)])
            events = choose_exact(sel_a, sel_b, eps=eps, dlt=dlt, alpha=alpha)
        else:
            score = fit_classifier(rows_a[:fit], rows_b[:fit], seed=seed, low_bits=low_bits)
            end = min(train, head)
            sa, sb = [score(rows_a[fit:end])], [score(rows_b[fit:end])]
            if train < head:
                leftover = (rows_a[train:], rows_b[train:])
            else:  # train >= head: the choosing rows go on after the head
                for pa, pb in zip(a.pieces(train - head), b.pieces(train - head)):
                    sa.append(score(pa.reshape(pa.shape[0], -1)))
                    sb.append(score(pb.reshape(pb.shape[0], -1)))
            events = choose_threshold(score, np.concatenate(sa), np.concatenate(sb), eps=eps, dlt=dlt, alpha=alpha,
                                      fit=(fit, fit))
        del head_a, head_b, rows_a, rows_b
        counts = np.zeros((2, 2), dtype=np.int64)
        piece = 0
        if leftover is not None:
            counts += events.count(*leftover, _tie_rng(ss, piece))
            piece += 1
        remaining = samples - max(train, head)
        for pa, pb in zip(a.pieces(remaining), b.pieces(remaining)):
            counts += events.count(pa, pb, _tie_rng(ss, piece))
            piece += 1
    return certified_report(events, counts, n_cert, eps=eps, dlt=dlt, conf=conf, n_train=(train, train))


def _tie_rng(ss: np.random.SeedSequence, piece: int) -> np.random.Generator:
    """Generator of the boundary-tie draws for the ``piece``-th certification piece (children 0, 1 draw samples)."""
    return np.random.default_rng(_child(_child(ss, 2), piece))

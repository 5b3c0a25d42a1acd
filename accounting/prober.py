"""Numerical sensitivity prober: search for the worst case of an update rule.

A privacy proof of the "conditioned on the observations" kind (Huang,
Mitra and Vaidya, ICDCN 2015, Lemma 4; Showkatbakhsh, Karakus and Diggavi, arXiv
2019, Prop. 3; Cheng, Liao and Li, arXiv 2022, Lemma 1) reduces the sensitivity of a
round to one question: for a combined point ``z`` that the observations fix,
how far apart can the next states ``U(z; f)`` and ``U(z; f')`` of two adjacent
problems be? The prober answers it numerically, without trusting the
algorithm's claimed sensitivity and without looking inside the rule.

The rule is anything that satisfies the small :class:`UpdateRule` protocol,
which ``accounting`` owns (a plain closure is accepted and wrapped). The
prober searches over ``z`` **including points outside the domain**: noise can
push ``z`` anywhere, and bounds such as ``||grad f|| <= C2`` often hold only on
the domain (Lemma 4 of Huang, Mitra and Vaidya evaluates the gradient at a
point that noise can carry off the domain, where ``C2`` need not bound it).

What the answer means: the value returned is *attained* at the reported
witness, so it is a certified **lower bound** on the true sensitivity. A value
above a claimed bound is a proof that the claim is false. The converse does
not hold: finding no violation is evidence, not proof.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import FunctionType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import AccountingError, PrivacyParameterError

__all__ = ["UpdateRule", "FunctionRule", "AdjacentPair", "ProbeResult", "NORMS", "ProbeRequest",
           "probe_sensitivity", "probe_many", "probe_roundoff"]

NORMS = ("l1", "l2", "linf")
"""Norms the prober can measure: L1 (Laplace), L2 (Gaussian), L-infinity."""

_FAR_FACTOR = 10.0  # far-outside points lie up to this many times beyond the search box
_MAX_CORNERS = 1024
_N_STARTS = 5
_STEP0 = 0.05  # first refinement step, in box widths
_XTOL = 1e-10  # refinement stops below this step, in box widths
_FTOL = 1e-13  # smaller gains do not count as progress
_MODEL_RADII = np.array([0.5, 2.0, 8.0, 32.0])  # lengths of the model's steps, in refinement steps
_MODEL_STEPS = len(_MODEL_RADII) + 1  # and the Newton step
_HOUSEHOLDER = 2  # random orthonormal bases polled per iteration
_DRIFT = np.array([0.5, 1.0, 2.0])  # multiples of the progress over the last n + 1 iterations
_FLAT_STOP = 3  # a start stops after this many consecutive iterations with every candidate tied to its value
_MAX_CROSS_DIM = 10  # above this dimension the model's Hessian is diagonal (no e_i + e_j stencil)


@runtime_checkable
class UpdateRule(Protocol):
    """The update step ``U`` of an algorithm, as the prober sees it.

    ``update(z, t, cost)`` maps a combined point ``z`` of shape ``(n,)`` to the
    next state of round ``t`` under ``cost``, or to any value read from it: a
    vector of shape ``(m,)``, ``m`` not necessarily ``n`` (e.g. a one-coordinate
    channel of a rule whose state has ``n``). A rule may also accept a batch of
    shape ``(k, n)`` and return ``(k, m)``; the prober checks this and falls
    back to one call per point otherwise.

    Example:
        >>> class Step:
        ...     def update(self, z, t, cost):
        ...         return z - 0.1 * 2 * (z - cost)
        >>> isinstance(Step(), UpdateRule)
        True
    """

    def update(self, z: np.ndarray, t: int, cost: object) -> np.ndarray:
        """The next state for combined point ``z`` in round ``t`` under ``cost``."""
        ...


@dataclass(frozen=True)
class FunctionRule:
    """Adapts a closure ``fn(z, t, cost) -> next state`` to :class:`UpdateRule`.

    Example:
        >>> rule = FunctionRule(lambda z, t, a: z - 0.1 * (z - a))
        >>> rule.update(np.zeros(2), 1, np.ones(2)).tolist()
        [0.1, 0.1]
    """

    fn: Callable[[np.ndarray, int, object], np.ndarray]

    def update(self, z: np.ndarray, t: int, cost: object) -> np.ndarray:
        """Call the wrapped function."""
        return self.fn(z, t, cost)


def _as_box(domain_box: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    if domain_box is None:
        return -np.ones(n), np.ones(n)
    try:
        low, high = domain_box
        low = np.broadcast_to(np.asarray(low, dtype=float), (n,)).copy()
        high = np.broadcast_to(np.asarray(high, dtype=float), (n,)).copy()
    except (TypeError, ValueError):
        raise PrivacyParameterError(
            f"domain_box must be a pair (low, high) of scalars or length-{n} arrays, got {domain_box!r}"
        ) from None
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low < high)):
        raise PrivacyParameterError(f"domain_box needs finite low < high in every coordinate, got {domain_box!r}")
    return low, high


@dataclass(frozen=True, eq=False)
class AdjacentPair:
    """Two adjacent problems as one update rule under two costs.

    Attributes:
        rule: an :class:`UpdateRule`, or a callable ``fn(z, t, cost)`` (wrapped
            in :class:`FunctionRule`).
        cost: the cost of the changed agent in the first problem.
        cost_prime: its cost in the adjacent problem.
        t: the round whose update is probed, ``>= 0``.
        n: dimension of ``z``, ``>= 1``.
        domain_box: ``(low, high)`` (scalars or length-``n`` arrays) describing
            the domain; ``None`` means ``[-1, 1]^n``. The prober searches well
            beyond it.

    Raises:
        PrivacyParameterError: ``n < 1``, ``t < 0``, an invalid box, a rule
            that is neither an :class:`UpdateRule` nor callable.

    Example:
        >>> pair = AdjacentPair(lambda z, t, a: z - 0.1 * (z - a), 0.0, 1.0, t=1, n=2)
        >>> pair.low.tolist(), pair.high.tolist()
        ([-1.0, -1.0], [1.0, 1.0])
    """

    rule: Any
    cost: object
    cost_prime: object
    t: int
    n: int
    domain_box: tuple[Any, Any] | None = None
    low: np.ndarray = field(init=False, repr=False, compare=False)
    high: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, Integral) or self.n < 1:
            raise PrivacyParameterError(f"n must be a positive integer, got {self.n!r}")
        if isinstance(self.t, bool) or not isinstance(self.t, Integral) or self.t < 0:
            raise PrivacyParameterError(f"t must be an integer >= 0, got {self.t!r}")
        rule = self.rule
        # a plain function without an ``update`` attribute is never an UpdateRule (the protocol's isinstance check
        # reads its attributes, tens of microseconds per pair: the privacy check builds some forty pairs)
        if (type(rule) is FunctionType and not hasattr(rule, "update")) or not isinstance(rule, UpdateRule):
            if not callable(rule):
                raise PrivacyParameterError(
                    f"rule must have an update(z, t, cost) method or be callable, got {type(rule).__name__}"
                )
            object.__setattr__(self, "rule", FunctionRule(rule))
        low, high = _as_box(self.domain_box, int(self.n))
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """What :func:`probe_sensitivity` found.

    Attributes:
        max_found: the largest ``||U(z; f) - U(z; f')||`` found; attained at
            ``witness_z``, hence a lower bound on the true sensitivity.
        witness_z: the point ``z`` attaining ``max_found``.
        norm: the norm used.
        claimed: the claimed sensitivity, or ``None``.
        violation: ``exceeds(claimed)``.
        ratio_to_claim: ``max_found / claimed`` (``nan`` without a claim).
        samples: points evaluated before refinement (random, corners, far points).
        evaluations: all objective evaluations, refinement included.
        witness_in_domain: whether ``witness_z`` lies in the domain box.
        roundoff: the most floating-point round-off can add to ``max_found``
            (:func:`probe_roundoff`, in the coarsest precision of the two
            outputs at ``witness_z``: float32 outputs carry float32 round-off).
    """

    max_found: float
    witness_z: np.ndarray
    norm: str
    claimed: float | None
    violation: bool
    ratio_to_claim: float
    samples: int
    evaluations: int = 0
    witness_in_domain: bool = True
    roundoff: float = 0.0

    def exceeds(self, bound: float) -> bool:
        """Whether ``max_found`` exceeds ``bound`` by more than round-off.

        float64's round-off (:func:`probe_roundoff`) is always allowed; a coarser precision's only up to
        ``ROUNDOFF_SHARE`` of ``bound``: beyond that the rule's outputs really move by more than ``bound`` (a
        float16 rule moving its output 31 times its claim was within float16's round-off allowance).

        Args:
            bound: the sensitivity compared with, >= 0.

        Returns:
            ``max_found > bound * (1 + 1e-9) + allowance``.

        Example:
            >>> r = ProbeResult(0.4 + 1e-7, np.full(2, 0.5), "l1", 0.4, False, 1.0, 1, roundoff=1e-6)
            >>> r.exceeds(0.4), r.exceeds(0.39)
            (False, True)
        """
        return _exceeds(self.max_found, bound, self.witness_z, self.roundoff)


def _exceeds(max_found: float, bound: float, witness: np.ndarray, roundoff: float) -> bool:
    floor = probe_roundoff(witness, max_found)
    return bool(max_found > bound * (1 + 1e-9) + max(floor, min(roundoff, ROUNDOFF_SHARE * bound)))


ROUNDOFF_SHARE = 1e-5
"""The largest share of a bound that a coarser-than-float64 precision's round-off may cover
(:meth:`ProbeResult.exceeds`): an excess this small changes a privacy loss by at most that share."""


def probe_roundoff(witness: np.ndarray, max_found: float, dtype: Any = np.float64) -> float:
    """The most floating-point round-off can add to a probed ``||U(z; f) - U(z; f')||`` at ``z = witness``.

    Both outputs are computed from the same ``z`` and are within ``|z| + max_found`` of 0, so each output
    coordinate of their difference carries at most ``4 spacing(max |z| + max_found)`` of round-off, its norm at
    most ``z.size`` times that; the spacing is ``dtype``'s, the precision the outputs came in (a rule computing in
    float32 rounds each output to float32's spacing, ``2^29`` times float64's). A comparison with a sensitivity
    allows this on top of its relative tolerance: a correct rule at states near ``1e8`` (spacing ``1.5e-8``) that
    attains its bound was refuted by round-off, and so was a float32 rule at states near 0.5.

    Args:
        witness: the probed point ``z``.
        max_found: the norm found there.
        dtype: the floating-point type of the rule's outputs (default float64).

    Returns:
        The round-off allowance, >= 0.

    Example:
        >>> bool(probe_roundoff(np.full(2, 1e8), 0.2) == 8 * np.spacing(1e8 + 0.2))
        True
        >>> bool(probe_roundoff(np.full(2, 0.5), 0.2, np.float32) == 8 * np.spacing(np.float32(0.7)))
        True
    """
    z = np.abs(np.asarray(witness, dtype=float))
    top = float(z.max()) if z.size else 0.0
    return 4.0 * max(z.size, 1) * float(np.spacing(np.asarray(top + abs(float(max_found)), dtype=dtype)))


def _norm(diff: np.ndarray, norm: str) -> np.ndarray:
    if norm == "l1":
        return np.abs(diff).sum(axis=-1)
    if norm == "l2":
        return np.sqrt((diff * diff).sum(axis=-1))
    return np.abs(diff).max(axis=-1)


class _Objective:
    """``z -> ||U(z; f) - U(z; f')||``, batched when the rule allows it."""

    def __init__(self, pair: AdjacentPair, norm: str) -> None:
        self.pair = pair
        self.norm = norm
        self.batched: bool | None = None
        self.evaluations = 0
        self.dtype: Any = np.dtype(np.float64)
        """The coarsest floating-point type of the outputs so far (their round-off, :func:`probe_roundoff`)."""

    def _call(self, z: np.ndarray, cost: object) -> np.ndarray:
        out = np.asarray(self.pair.rule.update(z, self.pair.t, cost))
        if out.dtype == np.float64:  # float64 is no coarser than any precision kept (and is returned as it is)
            return out
        if out.dtype.kind == "f" and np.finfo(out.dtype).eps > np.finfo(self.dtype).eps:
            self.dtype = out.dtype
        return np.asarray(out, dtype=float)

    def single(self, z: np.ndarray) -> float:
        z = np.asarray(z, dtype=float)
        a, b = self._call(z.copy(), self.pair.cost), self._call(z.copy(), self.pair.cost_prime)
        if a.ndim != 1 or a.size < 1 or a.shape != b.shape:
            raise AccountingError(
                f"rule.update must return one vector of the same shape (m,) under both costs for z of shape "
                f"({self.pair.n},), got {a.shape} and {b.shape}"
            )
        self.evaluations += 1
        value = float(_norm(a - b, self.norm))
        return value if math.isfinite(value) else -math.inf

    def _try_batch(self, Z: np.ndarray) -> np.ndarray | None:
        try:
            a = self._call(Z.copy(), self.pair.cost)
            b = self._call(Z.copy(), self.pair.cost_prime)
        except Exception:  # noqa: BLE001 - any failure means "not batch-capable"
            return None
        if a.ndim != 2 or a.shape[0] != Z.shape[0] or a.shape != b.shape:
            return None
        return _norm(a - b, self.norm)

    def many(self, Z: np.ndarray) -> np.ndarray:
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        if self.batched is None and len(Z) >= 2:
            values = self._try_batch(Z)
            ok = values is not None
            if values is not None:
                # a rule may "accept" a batch and mix rows (e.g. a norm over the whole array):
                # check two rows against single calls before trusting it
                for k in (0, len(Z) - 1):
                    s, v = self.single(Z[k]), float(values[k])
                    if math.isfinite(v):
                        ok = ok and math.isfinite(s) and math.isclose(v, s, rel_tol=1e-9, abs_tol=1e-12)
                    else:
                        ok = ok and s == -math.inf
            self.batched = ok
            if ok and values is not None:
                self.evaluations += len(Z)
                return np.where(np.isfinite(values), values, -np.inf)
        if self.batched:
            values = self._try_batch(Z)
            if values is None:
                raise AccountingError("rule.update accepted a batch once and then failed on another batch")
            self.evaluations += len(Z)
            return np.where(np.isfinite(values), values, -np.inf)
        return np.array([self.single(z) for z in Z])


def _corners(low: np.ndarray, high: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(low)
    if 2**n <= _MAX_CORNERS:
        signs = np.array(list(itertools.product((0.0, 1.0), repeat=n)))
    else:
        signs = rng.integers(0, 2, size=(_MAX_CORNERS, n)).astype(float)
    return low + signs * (high - low)


def _check_args(norm: str, samples: int, radius_factor: float, claimed: float | None) -> float | None:
    if norm not in NORMS:
        raise PrivacyParameterError(f"norm must be one of {NORMS}, got {norm!r}")
    if isinstance(samples, bool) or not isinstance(samples, Integral) or samples < 1:
        raise PrivacyParameterError(f"samples must be a positive integer, got {samples!r}")
    if (
        isinstance(radius_factor, bool)
        or not isinstance(radius_factor, Real)
        or not math.isfinite(radius_factor)
        or radius_factor < 1
    ):
        raise PrivacyParameterError(f"radius_factor must be a finite number >= 1, got {radius_factor!r}")
    if claimed is None:
        return None
    if isinstance(claimed, bool) or not isinstance(claimed, Real) or not math.isfinite(claimed) or claimed < 0:
        raise PrivacyParameterError(f"claimed must be a finite number >= 0, got {claimed!r}")
    return float(claimed)


def _starts(points: np.ndarray, values: np.ndarray) -> list[int]:
    """Indices of the best ``_N_STARTS`` distinct sampled points with finite values, best first.

    Distinct: not ``np.allclose`` to an earlier start.
    """
    order = np.argsort(-values, kind="stable")
    starts: list[int] = []
    for k in order:
        if not np.isfinite(values[k]):
            break
        chosen = points[starts]
        if not np.any(np.all(np.abs(points[k] - chosen) <= 1e-8 + 1e-5 * np.abs(chosen), axis=1)):
            starts.append(int(k))
        if len(starts) == _N_STARTS:
            break
    return starts


def _refine_nelder_mead(obj: _Objective, starts: list[np.ndarray], boxes: list[tuple[np.ndarray, np.ndarray]]
                        ) -> list[tuple[np.ndarray, float]]:
    """Polish each start by scipy's Nelder-Mead on the negated objective, one point at a time.

    The iterate is clipped to its box; the initial simplex steps 5% of the box
    width from the start towards the box centre along each axis; at most
    ``150 n + 150`` evaluations per start, ``xatol = 1e-10`` box widths,
    ``fatol = 1e-13``.
    """
    from scipy import optimize

    n = obj.pair.n
    out = []
    for x0, (lo, hi) in zip(starts, boxes):
        width = hi - lo

        def neg(x: np.ndarray, lo: np.ndarray = lo, hi: np.ndarray = hi) -> float:
            v = obj.single(np.clip(x, lo, hi))
            return -v if math.isfinite(v) else math.inf

        direction = np.where(x0 > (lo + hi) / 2, -1.0, 1.0)
        simplex = np.vstack([x0, x0 + np.diag(_STEP0 * width * direction)])
        res = optimize.minimize(
            neg, x0, method="Nelder-Mead",
            options={"initial_simplex": simplex, "maxfev": _nm_budget(n),
                     "xatol": _XTOL * float(np.max(width)), "fatol": _FTOL},
        )
        out.append((np.clip(res.x, lo, hi), -float(res.fun) if math.isfinite(res.fun) else -math.inf))
    return out


def _nm_budget(n: int) -> int:
    """Nelder-Mead's evaluation budget per start, and the batched search's iteration budget."""
    return 150 * n + 150


class _Job:
    """One probe's starts in the batched refinement: its objective, starts, their values, boxes and generator."""

    __slots__ = ("obj", "starts", "values", "boxes", "rng")

    def __init__(self, obj: _Objective, starts: list[np.ndarray], values: np.ndarray,
                 boxes: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator) -> None:
        self.obj, self.starts, self.values, self.boxes, self.rng = obj, starts, values, boxes, rng


def _refine_batched(jobs: list[_Job]) -> list[list[tuple[np.ndarray, float]]]:
    """Polish every start of every job together by a batched pattern search with a quadratic model.

    Each job is one probe (its rule, starts and random generator) and every
    job has the same dimension ``n``. An iteration makes one ``many`` call
    per job that still has a live start; every other operation runs on the
    starts of all jobs at once (one loop for all the probes of a check, not
    one per probe). The jobs do not interact: each job's points, values,
    random draws (from its own generator, in the same order and shapes) and
    model are exactly those of refining it alone, so the result of a job
    does not depend on the other jobs.

    See :func:`probe_sensitivity` for the method and its budget. Returns per
    job ``(point, value)`` per start, each value attained at its point.
    """
    n = jobs[0].obj.pair.n
    sizes = [len(j.starts) for j in jobs]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    m = int(offsets[-1])
    job_of = np.repeat(np.arange(len(jobs)), sizes)  # the job of each start
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)] if n <= _MAX_CROSS_DIM else [],
                     dtype=int).reshape(-1, 2)
    n_stencil = 2 * n + len(pairs)  # +-e_i, e_i + e_j
    k_poll = n_stencil + (2 + 2 * _HOUSEHOLDER) * n + 1  # the poll: +-e_i, +-Householder columns, extrapolation
    k_drift = k_poll + len(_DRIFT)
    k_all = k_drift + _MODEL_STEPS
    max_iter = _nm_budget(n)
    x = np.array([s for j in jobs for s in j.starts], dtype=float).reshape(m, n)
    v = np.concatenate([np.asarray(j.values, dtype=float) for j in jobs])
    lo = np.array([b[0] for j in jobs for b in j.boxes], dtype=float).reshape(m, n)
    hi = np.array([b[1] for j in jobs for b in j.boxes], dtype=float).reshape(m, n)
    width = hi - lo
    h = np.full(m, _STEP0)  # the poll's step, in box widths
    rho = np.full(m, _STEP0)  # the model stencil's step, in box widths
    move = np.zeros_like(x)
    pending = np.repeat(x[:, None, :], _MODEL_STEPS, axis=1)  # the model's candidates, evaluated next iteration
    modelled = np.zeros(m, dtype=bool)
    lag = n + 1
    hist = np.repeat(x[None], lag, axis=0)  # the iterates of the last lag iterations (a ring)
    it = 0
    eye = np.eye(n)
    dirs = np.zeros((m, k_poll, n))
    dirs[:, :n], dirs[:, n:2 * n] = eye, -eye
    dirs[:, 2 * n:n_stencil] = eye[pairs[:, 0]] + eye[pairs[:, 1]]
    dirs[:, n_stencil:n_stencil + n], dirs[:, n_stencil + n:n_stencil + 2 * n] = eye, -eye
    flat_iters = np.zeros(m, dtype=int)  # consecutive iterations in which every candidate tied the start's value
    stopped = np.zeros(m, dtype=bool)  # starts stopped on a flat neighbourhood
    # consecutive iterations in which the start did not move (the ring of iterates starts full of the start): its
    # drift candidates are all x only after lag of them, before that they reach up to 2 (x - x_{-lag}) away
    unmoved = np.full(m, lag, dtype=int)
    any_stopped = False
    starts_at = offsets[:-1]
    a_prev, live_prev = -1, np.zeros(m, dtype=bool)
    for _ in range(max_iter):
        running = h >= _XTOL  # a stopped start's h keeps halving, as it would without the flat stop
        live = running & ~stopped if any_stopped else running
        a = int(np.count_nonzero(live))
        if a == 0:
            break
        act: Any = slice(None) if a == m else np.flatnonzero(live)
        running_counts = (np.add.reduceat(running, starts_at).tolist() if len(jobs) > 1
                          else [int(np.count_nonzero(running))])
        # which rows belong to a job whose starts are all running (None: none do)
        whole = [c == sz for c, sz in zip(running_counts, sizes)]
        full = None
        if any(whole):
            full = np.repeat(whole, running_counts)
            if any_stopped:
                full = full[live[running]]
        # each job's draws from its own generator, for all its running starts (stopped ones included, so that the
        # others get the draws they get without the flat stop)
        draws = [jobs[k].rng.standard_normal((_HOUSEHOLDER + 1, c, n)) for k, c in enumerate(running_counts) if c]
        u = draws[0] if len(draws) == 1 else np.concatenate(draws, axis=1)
        if any_stopped:
            u = u[:, live[running]]
            counts = np.add.reduceat(live, starts_at).tolist() if len(jobs) > 1 else [a]
        else:
            counts = running_counts
        u /= np.maximum(np.sqrt((u * u).sum(axis=-1, keepdims=True)), 1e-300)
        house = eye - 2 * u[:-1, :, :, None] * u[:-1, :, None, :]  # (H, a, n, n), symmetric and orthogonal
        house = house.transpose(1, 0, 2, 3).reshape(a, _HOUSEHOLDER * n, n)
        d = dirs[:a]
        d[:, n_stencil + 2 * n:n_stencil + (2 + _HOUSEHOLDER) * n] = house
        d[:, n_stencil + (2 + _HOUSEHOLDER) * n:k_poll - 1] = -house
        d[:, k_poll - 1] = 2 * u[-1]
        if a != a_prev or not np.array_equal(live, live_prev):  # what depends on the live set alone, once per set
            wa, lo_a, hi_a, job_a = width[act], lo[act][:, None, :], hi[act][:, None, :], job_of[act]
            a_prev, live_prev = a, live
        ha, ra, xa, va, ma = h[act], rho[act], x[act], v[act], move[act]
        cand = np.empty((a, k_all, n))
        # the stencil's steps (r w) and the poll's (h w) times their directions (the same products as one
        # multiplication by the step of each direction)
        np.multiply((ra[:, None] * wa)[:, None, :], d[:, :n_stencil], out=cand[:, :n_stencil])
        np.multiply((ha[:, None] * wa)[:, None, :], d[:, n_stencil:], out=cand[:, n_stencil:k_poll])
        cand[:, :k_poll] += xa[:, None, :]
        moved = np.flatnonzero(np.any(ma != 0, axis=1))
        cand[moved, k_poll - 1] = xa[moved] + ma[moved]  # the last move repeated
        drift = xa - hist[it % lag][act]
        cand[:, k_poll:k_drift] = xa[:, None, :] + _DRIFT[None, :, None] * drift[:, None, :]
        cand[:, k_drift:] = pending[act]
        np.clip(cand, lo_a, hi_a, out=cand)
        vals = np.empty((a, k_all))
        row = 0
        for k, c in enumerate(counts):  # one call per job with live starts, on its rows (grouped by job)
            if c:
                vals[row:row + c] = jobs[k].obj.many(cand[row:row + c].reshape(-1, n)).reshape(c, k_all)
                row += c
        rows = np.arange(a)
        best = np.argmax(vals, axis=1)
        vbest = vals[rows, best]
        tol = _FTOL * (1 + np.abs(va))
        tied = np.all(np.abs(vals - va[:, None]) <= tol[:, None], axis=1)
        flat_iters[act] = np.where(tied, flat_iters[act] + 1, 0)
        better = vbest > va
        gain = better & (vbest - va > tol)
        new_x = np.where(better[:, None], cand[rows, best], xa)
        move[act] = new_x - xa
        unmoved[act] = np.where(better, 0, unmoved[act] + 1)
        x[act] = new_x
        v[act] = np.where(better, vbest, va)
        by_poll = gain & (best >= n_stencil) & (best < k_drift)
        # the poll's step doubles after its own gain, holds after another gain, halves without gain
        h[act] = np.where(by_poll, np.minimum(2 * ha, 1.0), np.where(gain, ha, ha / 2))
        # the model's stencil grows after a gain by the model or the stencil, shrinks after the model's steps failed
        grow = gain & ((best < n_stencil) | (best >= k_drift))
        new_rho = np.where(grow, np.minimum(2 * ra, 1.0), ra)
        # a job whose starts are all live builds its model (and judges its model's steps) at its updated iterate,
        # value and stencil step, a job with stopped starts at those of the stencil: refining a probe alone has
        # always done so (its arrays were views of the state when all its starts were live), and results stay
        # those of refining each probe alone
        if full is not None:
            xa, va = np.where(full[:, None], new_x, xa), np.where(full, v[act], va)
        model_failed = modelled[act] & ~(np.max(vals[:, k_drift:], axis=1) > va)
        new_rho = np.where(grow, new_rho, np.where(model_failed, np.maximum(ra / 2, _XTOL), ra))
        rho[act] = new_rho
        if full is not None:
            ra = np.where(full, new_rho, ra)
        pending[act] = _model_steps(xa, va, vals[:, :n_stencil], pairs, ra[:, None] * wa, job_a)
        modelled[act] = True
        hist[it % lag] = x
        it += 1
        if any_stopped:
            h[stopped] /= 2  # (those stopped before this iteration, which did not evaluate them)
        newly = (flat_iters >= _FLAT_STOP) & (unmoved >= lag)
        if newly.any():
            stopped |= newly
            any_stopped = True
    return [[(x[k].copy(), float(v[k])) for k in range(offsets[j], offsets[j + 1])] for j in range(len(jobs))]


def _model_steps(x: np.ndarray, v: np.ndarray, stencil: np.ndarray, pairs: np.ndarray, step: np.ndarray,
                 group: np.ndarray | None = None) -> np.ndarray:
    """Candidates from the quadratic model of the objective on the stencil around each ``x``: ``(a, _MODEL_STEPS, n)``.

    In the scaled coordinates ``y`` (``z = x + step * y``) the stencil holds
    the values at ``+-e_i`` and ``e_i + e_j``; central differences give the
    gradient ``g`` and the Hessian ``H`` (diagonal from ``+-e_i``, the rest
    from ``e_i + e_j``). The candidates are the model's maximizer
    ``-H^-1 g`` when ``H`` is negative definite (else the longest step
    below), and the Levenberg-Marquardt steps ``-(H - mu I)^-1 g`` of length
    at most ``r`` for ``r`` in :data:`_MODEL_RADII` (``mu = max(lambda_max,
    0) + ||g|| / r``). Where the stencil holds a non-finite value the
    candidates stay at ``x``.

    ``group`` (one label per row, default one group) keeps groups of rows
    apart: the model of a group whose Hessians are all zero is affine and
    needs no eigenbasis, and that choice is made per group, so a group's
    candidates are those of calling this function on its rows alone.
    """
    n = x.shape[1]
    out = np.repeat(x[:, None, :], _MODEL_STEPS, axis=1)
    # a non-finite stencil, or one flat up to rounding: no model, the candidates stay at x
    tol = _FTOL * (1 + np.abs(v))
    keep = np.isfinite(stencil).all(axis=1) & np.isfinite(v)
    keep &= ~(np.abs(stencil - v[:, None]) <= tol[:, None]).all(axis=1)
    every = bool(keep.all())  # (then the rows are read as they are, without copies)
    ok: Any = slice(None) if every else np.flatnonzero(keep)
    if not every:
        if len(ok) == 0:
            return out
        stencil, v = stencil[ok], v[ok]
    v = v[:, None]
    k = len(stencil)
    f_plus, f_minus, f_pair = stencil[:, :n], stencil[:, n:2 * n], stencil[:, 2 * n:]
    g = (f_plus - f_minus) / 2
    hess = np.zeros((k, n, n))
    diag = np.arange(n)
    hess[:, diag, diag] = f_plus + f_minus - 2 * v
    if len(pairs):
        off = f_pair - f_plus[:, pairs[:, 0]] - f_plus[:, pairs[:, 1]] + v
        hess[:, pairs[:, 0], pairs[:, 1]] = off
        hess[:, pairs[:, 1], pairs[:, 0]] = off
    nonzero = (hess != 0).any(axis=(1, 2))
    if group is None or not nonzero.any():
        curved = np.full(k, bool(nonzero.any()))
    else:  # a group is curved when one of its rows is: each group as if alone
        labels = np.asarray(group)[ok]
        curved = (np.bincount(labels, weights=nonzero) > 0)[labels]
    vec = None
    if curved.all():
        lam, vec = np.linalg.eigh(hess)  # ascending eigenvalues
        gt = (g[:, None, :] @ vec)[:, 0]  # g in the eigenbasis
        ci: Any = slice(None)
    else:
        lam, gt = np.zeros((k, n)), g.copy()  # an affine model needs no eigenbasis
        ci = np.flatnonzero(curved)
        if len(ci):
            lam[ci], vec = np.linalg.eigh(hess[ci])
            gt[ci] = (g[ci][:, None, :] @ vec)[:, 0]
    gnorm = np.sqrt((g * g).sum(axis=1))
    lam_max = lam[:, -1]
    mu = np.maximum(lam_max, 0.0)[:, None] + gnorm[:, None] / _MODEL_RADII[None, :]  # (k, R)
    den = mu[:, :, None] - lam[:, None, :]
    coef = gt[:, None, :] / np.where(den > 0, den, np.inf)  # (k, R, n); a zero gradient gives no step
    concave = lam_max < 0
    newton = np.where(concave[:, None], -gt / np.where(concave[:, None], lam, -1.0), coef[:, -1])
    y = np.concatenate([coef, newton[:, None, :]], axis=1)
    if vec is not None:
        if isinstance(ci, slice):
            y = y @ vec.transpose(0, 2, 1)  # back from the eigenbasis
        else:
            y[ci] = y[ci] @ vec.transpose(0, 2, 1)
    y[~np.isfinite(y).all(axis=(1, 2))] = 0.0
    if every:
        out += step[:, None, :] * y
    else:
        out[ok] += step[ok, None, :] * y
    return out


def probe_sensitivity(
    pair: AdjacentPair,
    *,
    norm: str = "l1",
    samples: int = 2000,
    seed: int = 0,
    radius_factor: float = 3.0,
    refine: bool = True,
    claimed: float | None = None,
) -> ProbeResult:
    """Search for ``z`` maximizing ``||U(z; f) - U(z; f')||_norm``, inside and outside the domain.

    Let ``D`` be the domain box, ``S`` the box with the same centre and
    ``radius_factor`` times the half-widths, and ``F`` the box 10 times larger
    than ``S``. The prober evaluates the corners of ``D`` and ``S`` (all of them
    up to ``n = 10``, else 1024 random ones), ``samples`` uniform points (a
    quarter in ``D``, the rest in ``S``), and ``max(8, samples // 10)`` points
    far outside (uniform in ``F`` plus the corners of ``F``). Non-finite
    objective values are ignored. If ``refine``, the best five distinct points
    are polished by a local search confined to ``S`` (or to ``F`` for a start
    outside ``S``; candidates are clipped to that box), which starts at 5% of
    the box width and stops below 1e-10 box widths:

    * a rule that accepts batches: a batched pattern search with a quadratic
      model (below), every start's candidates in one call per iteration;
    * a rule that takes one point at a time: scipy's Nelder-Mead on the
      negated objective, at most ``150 n + 150`` evaluations per start,
      ``xatol`` 1e-10 box widths, ``fatol`` 1e-13.

    The batched search keeps, per start, the iterate ``x`` (value ``v``), a
    poll step ``h`` and a model step ``r`` (in box widths ``w``). Each
    iteration evaluates, clipped to the box: the stencil ``x +- r w e_i``
    and (up to ``n = 10``) ``x + r w (e_i + e_j)``; the poll ``x +- h w e_i``
    and ``x +- h w q`` for the columns ``q`` of two random Householder
    matrices (fresh orthonormal bases every iteration, as in Abramson,
    Audet, Dennis and Le Digabel's OrthoMADS, SIAM J. Optim. 2009, so that
    ascent directions that are not along the axes are found); the last move
    repeated (Hooke and Jeeves' pattern move; a double step along a random
    direction when the last iteration did not move); the drift
    ``x + a (x - x_{-n-1})`` for ``a`` in 1/2, 1, 2 (the progress over the
    last ``n + 1`` iterations, which follows ridges and kinks that single
    steps zigzag across, as the directions of Rosenbrock's method do,
    Comput. J. 1960); and the previous iteration's model steps: the
    maximizer of the quadratic model fitted to the stencil by central
    differences (a diagonal Hessian above ``n = 10``) when it is concave,
    and its Levenberg-Marquardt steps of lengths ``r/2, 2r, 8r, 32r``. The
    best candidate replaces ``x`` only if it is strictly better (the search
    never ends below its start). ``h`` doubles after a poll gain larger
    than ``1e-13 (1 + |v|)``, holds after another gain and halves when
    nothing gains; ``r`` doubles after a gain by the stencil or the model,
    halves when the model's steps fail. A start stops when ``h < 1e-10``,
    after ``150 n + 150`` iterations, or on a flat neighbourhood: when in
    three consecutive iterations every candidate's value ties ``v`` to
    ``1e-13 (1 + |v|)`` (the Nelder-Mead ``fatol`` test, applied to all the
    stencil, poll, drift and model points at three step lengths ``h, h/2,
    h/4`` in fresh random bases) and the start has not moved in the last
    ``n + 1`` (until then its drift candidates ``x + a (x - x_{-n-1})``
    still reach as far as its recent progress). There the model has zero gradient and
    Hessian and no evaluated direction ascends; the iterations it saves
    could only halve ``h`` down to 1e-10 around a point every neighbour of
    which ties it (a flat neighbourhood of a concave objective is its
    global maximum; the start could still creep along ties smaller than
    the tolerance, so its final point and value may differ by that much).
    The flat stop changes no other start's search: a stopped start keeps
    its place in the random draws and its ``h`` keeps halving, as without
    the stop.

    Why it is at least as strong as Nelder-Mead on the same starts: the
    same samples and starts; the same boxes and tolerances; at least as
    many sequential steps (iterations) as Nelder-Mead has evaluations
    (until a start's neighbourhood is flat, where Nelder-Mead's simplex
    ties too), each
    evaluating ``n (n - 1) / 2 + 8 n + 9`` candidates (``8 n + 9`` above
    ``n = 10``), hence far more evaluations; convergence to a stationary
    point on smooth objectives
    (pattern search with positive spanning sets), fast convergence along
    curved and ill-conditioned ridges (the model steps), and dense directions
    at kinks (the random bases and the drift). On the test families (rotated
    and curved ridges, clipped and projected rules, maxima outside the
    domain) it reaches Nelder-Mead's maxima or larger ones, except at kinks of
    projections, where either search can stop short of the other's point
    (the batched one by at most 1e-5 relative in the tests). The flat
    stop can miss only an ascent that no candidate of three consecutive
    polls sees (a needle between the polls' points), which a longer run of
    halvings could hit only by chance; on the test families and the shipped
    examples it changes no maximum beyond the tie tolerance (the shipped
    examples' reports are unchanged to the bit).

    Cost: about ``samples`` + corners + far points evaluations (one batched
    call per cost when the rule accepts batches), plus for the refinement one
    batched call per iteration (at most ``150 n + 150``; 3 to about 45 on
    the shipped examples, where most starts stop on a flat neighbourhood)
    or up to ``5 * (150 n + 150)`` single evaluations.
    :func:`probe_many` refines many probes in one loop.

    The returned ``max_found`` is re-evaluated at ``witness_z``, so it is
    attained there: a certified lower bound on the sensitivity over all ``z``.
    A violation (``max_found > claimed * (1 + 1e-9)``) therefore disproves the
    claim; no violation proves nothing.

    Args:
        pair: the rule, the two costs, the round and the domain.
        norm: ``"l1"``, ``"l2"`` or ``"linf"``.
        samples: number of uniform random points, ``>= 1``.
        seed: seed of the random generator (results are deterministic).
        radius_factor: half-width of ``S`` in domain half-widths, ``>= 1``.
        refine: polish the best candidates by the local search above.
        claimed: a claimed sensitivity bound to test, ``>= 0``.

    Returns:
        A :class:`ProbeResult`.

    Raises:
        PrivacyParameterError: an invalid ``norm``, ``samples``, ``radius_factor`` or ``claimed``.
        AccountingError: the rule returns a wrongly shaped state, or every
            evaluated value is non-finite.

    Example:
        >>> pair = AdjacentPair(lambda z, t, a: z - 0.25 * 2 * (z - a), np.array([1.0, 1.0]),
        ...                     np.array([-1.0, -1.0]), t=1, n=2)
        >>> res = probe_sensitivity(pair, samples=200, claimed=1.5)
        >>> round(res.max_found, 9), res.violation
        (2.0, True)
    """
    return probe_many([ProbeRequest(pair, norm=norm, samples=samples, seed=seed, radius_factor=radius_factor,
                                    refine=refine, claimed=claimed)])[0]


@dataclass(frozen=True, eq=False)
class ProbeRequest:
    """One probe of :func:`probe_many`: the arguments of :func:`probe_sensitivity` (same meanings and defaults).

    Example:
        >>> pair = AdjacentPair(lambda z, t, a: z - 0.5 * (z - a), 1.0, -1.0, t=1, n=1)
        >>> ProbeRequest(pair, norm="l2").samples
        2000
    """

    pair: AdjacentPair
    norm: str = "l1"
    samples: int = 2000
    seed: int = 0
    radius_factor: float = 3.0
    refine: bool = True
    claimed: float | None = None


class _Sampled:
    """A probe after its sampling phase: its objective, generator, samples, their values and the starts."""

    def __init__(self, req: ProbeRequest) -> None:
        self.claimed = _check_args(req.norm, req.samples, req.radius_factor, req.claimed)
        self.req = req
        self.rng = rng = np.random.default_rng(req.seed)
        pair, samples, radius_factor = req.pair, req.samples, req.radius_factor
        n = pair.n
        low, high = pair.low, pair.high
        centre, half = (low + high) / 2, (high - low) / 2
        s_low, s_high = centre - radius_factor * half, centre + radius_factor * half
        f_low, f_high = centre - _FAR_FACTOR * radius_factor * half, centre + _FAR_FACTOR * radius_factor * half
        self.obj = obj = _Objective(pair, req.norm)
        n_inside = max(1, samples // 4)
        n_far = max(8, samples // 10)
        self.points = points = np.vstack([
            _corners(low, high, rng),
            _corners(s_low, s_high, rng),
            rng.uniform(low, high, size=(n_inside, n)),
            rng.uniform(s_low, s_high, size=(samples - n_inside, n)),
            rng.uniform(f_low, f_high, size=(n_far, n)),
            _corners(f_low, f_high, rng)[: max(1, n_far // 2)],
        ])
        self.values = values = obj.many(points)
        self.starts: list[int] = []
        self.x0s: list[np.ndarray] = []
        self.boxes: list[tuple[np.ndarray, np.ndarray]] = []
        if req.refine:
            self.starts = _starts(points, values)
            self.x0s = [points[k] for k in self.starts]
            self.boxes = [(s_low, s_high) if bool(np.all(x0 >= s_low) and np.all(x0 <= s_high)) else (f_low, f_high)
                          for x0 in self.x0s]

    def result(self, refined: list[tuple[np.ndarray, float]]) -> ProbeResult:
        """The probe's result from its samples and its ``refined`` ``(point, value)`` pairs."""
        points, values, obj = self.points, self.values, self.obj
        cand_v = np.concatenate([values, [v for _z, v in refined]])
        best = int(np.argmax(cand_v))  # the first of equal values: a sample before a refined point
        if not math.isfinite(cand_v[best]):
            raise AccountingError("every evaluated ||U(z; f) - U(z; f')|| was non-finite; nothing to report")
        witness = np.array(points[best] if best < len(points) else refined[best - len(points)][0], dtype=float)
        obj.dtype = np.dtype(np.float64)  # the precision of the witness's outputs, not of other points'
        max_found = obj.single(witness)  # re-evaluated: attained exactly at the witness
        if not math.isfinite(max_found):
            raise AccountingError(f"the objective is not finite at the witness {witness.tolist()}")
        claimed_f = self.claimed
        roundoff = probe_roundoff(witness, max_found, obj.dtype)
        if claimed_f is None:
            violation, ratio = False, math.nan
        else:
            violation = _exceeds(max_found, claimed_f, witness, roundoff)
            ratio = max_found / claimed_f if claimed_f > 0 else (math.inf if max_found > 0 else math.nan)
        low, high = obj.pair.low, obj.pair.high
        in_domain = bool(np.all(witness >= low - 1e-12) and np.all(witness <= high + 1e-12))
        return ProbeResult(
            max_found=max_found, witness_z=witness, norm=self.req.norm, claimed=claimed_f, violation=bool(violation),
            ratio_to_claim=ratio, samples=len(points), evaluations=obj.evaluations, witness_in_domain=in_domain,
            roundoff=roundoff,
        )


def probe_many(requests: Sequence[ProbeRequest]) -> list[ProbeResult]:
    """:func:`probe_sensitivity` of every request, the batched refinements of all requests run as one.

    Each request is sampled first (in order); then the batched refinements of
    the requests of one dimension ``n`` run in one loop (one objective call
    per probe and iteration, every other operation once per iteration for
    all of them), and the requests whose rule takes one point at
    a time are refined by Nelder-Mead one after the other. Every request keeps
    its own random generator, samples, starts and search, so its result is
    exactly :func:`probe_sensitivity`'s on that request alone; only the cost
    is shared (the privacy check probes every round and step of a scenario at
    once: one refinement loop instead of one per probe).

    Args:
        requests: the probes (:class:`ProbeRequest`).

    Returns:
        One :class:`ProbeResult` per request, in order.

    Raises:
        PrivacyParameterError, AccountingError: as :func:`probe_sensitivity`, for the first request (in order of
            the phases: all samplings, then the refinements) that fails.

    Example:
        >>> pair = AdjacentPair(lambda z, t, a: z - 0.25 * 2 * (z - a), np.array([1.0, 1.0]),
        ...                     np.array([-1.0, -1.0]), t=1, n=2)
        >>> reqs = [ProbeRequest(pair, samples=200, seed=s) for s in (0, 1)]
        >>> [r.max_found for r in probe_many(reqs)] == [probe_sensitivity(pair, samples=200, seed=s).max_found
        ...                                           for s in (0, 1)]
        True
    """
    sampled = [_Sampled(req) for req in requests]
    refined: list[list[tuple[np.ndarray, float]]] = [[] for _ in sampled]
    by_dim: dict[int, list[int]] = {}
    for k, sp in enumerate(sampled):
        if sp.req.refine and sp.obj.batched and sp.starts:
            by_dim.setdefault(sp.obj.pair.n, []).append(k)
    for ks in by_dim.values():
        jobs = [_Job(sampled[k].obj, sampled[k].x0s, sampled[k].values[sampled[k].starts], sampled[k].boxes,
                     sampled[k].rng) for k in ks]
        for k, out in zip(ks, _refine_batched(jobs)):
            refined[k] = out
    for k, sp in enumerate(sampled):
        if sp.req.refine and not sp.obj.batched and sp.starts:
            refined[k] = _refine_nelder_mead(sp.obj, sp.x0s, sp.boxes)
    return [sp.result(r) for sp, r in zip(sampled, refined)]

"""Audit of an algorithm's topology assumptions against a graph sequence.

:func:`audit` checks a :class:`~topology.sequence.GraphSequence` over a horizon
against an :class:`AssumptionSet` and returns an :class:`AuditReport`: one
:class:`AssumptionResult` per assumption (holds or not, the first failing
round and a witness) and the constants the theorems derive from the
sequence, next to the empirical contraction of the actual matrix products so
that users see how loose the theoretical constants are.

The assumptions are data: an :class:`AssumptionSet` lists its checks in
report order, the constants they derive and the kind of contraction to
measure, built from a few step records (:class:`Static`, :class:`EachRound`,
:class:`MinWeight`, :class:`Spectral`, :class:`MinimalB`,
:class:`BStronglyConnected`). ``topology`` knows no algorithm: each paper
declares its set in plain ``topology`` terms (the library's papers in
:mod:`accounting.papers`, a user's own wherever the user likes), and
``asyncdp.papers`` resolves algorithm names to sets.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Union

import numpy as np
import scipy.sparse as sp

from .checks import constants as C
from .checks import properties as P
from .errors import ParameterError, TopologyError
from .sequence import GraphSequence
from .validation import check_integer

__all__ = ["AssumptionResult", "AuditReport", "AssumptionSet", "audit", "DEFAULT_HORIZON", "Static", "EachRound",
           "MinWeight", "Spectral", "MinimalB", "BStronglyConnected", "fixed_symmetric_steps"]

DEFAULT_HORIZON = 100
"""Horizon used for an infinite, non-periodic sequence when none is given."""


@dataclass(frozen=True)
class AssumptionResult:
    """One assumption of a theorem, checked over the horizon.

    Attributes:
        name: short identifier, e.g. ``"doubly_stochastic"``.
        holds: whether it held on every examined round (or window).
        first_failure_round: the first round (or first round of the first
            window) where it failed, else ``None``.
        witness: a sentence locating the failure, e.g. ``"round 17: column 3
            sums to 0.83"``, else ``None``.
        description: what the assumption says and where it comes from.
    """

    name: str
    holds: bool
    first_failure_round: int | None
    witness: str | None
    description: str


@dataclass(frozen=True)
class AuditReport:
    """The result of :func:`audit`; printable as a table and as JSON."""

    algorithm: str
    horizon: int
    assumptions: tuple[AssumptionResult, ...]
    constants: dict[str, Any] = field(default_factory=dict)

    @property
    def all_hold(self) -> bool:
        """Whether every assumption held."""
        return all(a.holds for a in self.assumptions)

    def failed(self) -> list[AssumptionResult]:
        """The assumptions that failed."""
        return [a for a in self.assumptions if not a.holds]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (keys: algorithm, horizon, assumptions, constants, all_hold)."""
        return {
            "algorithm": self.algorithm,
            "horizon": self.horizon,
            "assumptions": [asdict(a) for a in self.assumptions],
            "constants": {k: _jsonable(v) for k, v in self.constants.items()},
            "all_hold": self.all_hold,
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_table(self) -> str:
        """A plain-text table: one line per assumption, then the constants."""
        rows = [(a.name, "holds" if a.holds else "FAILS", a.witness or "") for a in self.assumptions]
        w0 = max(len("assumption"), *(len(r[0]) for r in rows))
        lines = [
            f"audit of {self.algorithm} over {self.horizon} rounds: "
            + ("all assumptions hold" if self.all_hold else f"{len(self.failed())} assumption(s) fail"),
            f"{'assumption':<{w0}}  {'result':<6}  witness",
            f"{'-' * w0}  {'-' * 6}  {'-' * 7}",
        ]
        lines += [f"{n:<{w0}}  {h:<6}  {w}".rstrip() for n, h, w in rows]
        if self.constants:
            lines.append("constants:")
            wc = max(len(k) for k in self.constants)
            lines += [f"  {k:<{wc}}  {_fmt(v)}" for k, v in self.constants.items()]
        return "\n".join(lines)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if np.isfinite(f) else str(f)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def _from_check(check: P.SequenceCheck, name: str, description: str) -> AssumptionResult:
    return AssumptionResult(name, bool(check.holds), check.first_failure_round, check.witness, description)


def _each(seq: GraphSequence, horizon: int, fn: Callable, name: str, description: str, first: int = 1
          ) -> AssumptionResult:
    return _from_check(P.check_each_round(seq, fn, horizon=horizon, name=name, first=first), name, description)


def _min_weight_over_rounds(seq: GraphSequence, horizon: int) -> tuple[float, int | None, str | None]:
    """The smallest self weight or positive weight over rounds ``1..horizon``, the first round with a
    non-positive self weight (``None`` if none) and the node it names.

    A round without any positive weight (all zeros) has smallest self weight 0 and no positive weight.
    """
    lowest = math.inf
    first: int | None = None
    where: str | None = None
    for t, w in seq.rounds(horizon):
        self_w = P.min_self_weight(w)
        lowest = min(lowest, self_w, P.min_positive_weight(w) if w.nnz else math.inf)
        if first is None and self_w <= 0:
            first, where = t, P.check_positive_diagonal(w).witness
    return float(lowest), first, where


def _min_weight_assumption(value: float, first: int | None, where: str | None, name: str, symbol: str,
                           description: str) -> AssumptionResult:
    holds = value > 0
    witness = None if holds else f"round {first}: {where}; no {symbol} > 0 bounds every self weight"
    return AssumptionResult(name, holds, None if holds else first, witness, description)


def _first_difference(a: Any, b: Any) -> tuple[int, int] | None:
    """The entry where ``a`` and ``b`` differ most, or ``None`` if they are equal."""
    diff = abs(a - b)
    if not diff.nnz or diff.max() <= 0:
        return None
    coo = diff.tocoo()
    k = int(np.argmax(coo.data))
    return int(coo.row[k]), int(coo.col[k])


def _static(seq: GraphSequence, horizon: int, first: int = 1, description: str | None = None) -> AssumptionResult:
    """One fixed matrix at rounds ``first..horizon``; each earlier round the identity or that matrix."""
    description = description or "one fixed weight matrix at every round"
    if first > horizon:
        return AssumptionResult("static", True, None, None, description)
    fixed = seq.weights(first)
    eye = sp.identity(seq.num_nodes, format="csr", dtype=float)
    for t in range(1, first):
        w = seq.weights(t)
        if _first_difference(w, eye) is not None and (at := _first_difference(w, fixed)) is not None:
            i, j = at
            return AssumptionResult(
                "static", False, t,
                f"round {t}: neither the identity nor the matrix of round {first} (entry [{i}, {j}] is "
                f"{float(w[i, j])!r}, round {first} has {float(fixed[i, j])!r})", description)
    for t in range(first + 1, horizon + 1):
        at = _first_difference(seq.weights(t), fixed)
        if at is not None:
            i, j = at
            return AssumptionResult(
                "static", False, t,
                f"round {t}: entry [{i}, {j}] is {float(seq.weights(t)[i, j])!r}, round {first} has "
                f"{float(fixed[i, j])!r}", description)
    return AssumptionResult("static", True, None, None, description)


def _spectral_assumption(value: float, at: int, name: str, formula: str, description: str) -> AssumptionResult:
    holds = value < 1 - 1e-12
    witness = None if holds else f"round {at}: {formula} = {value:.6g}, not < 1"
    return AssumptionResult(name, holds, None if holds else at, witness, description)


@dataclass
class _Run:
    """What every step of an audit sees: the sequence, the horizon, ``B``, and the constants found so far."""

    seq: GraphSequence
    horizon: int
    B: int | None
    consts: dict[str, Any]
    period: int | None = None
    """The period of an infinite periodic sequence audited as a whole (default horizon), else ``None``."""


@dataclass(frozen=True)
class Static:
    """The assumption "one fixed weight matrix at every round", or from round ``first`` on (each earlier round
    the identity or that matrix, e.g. a local noising round before the gossip).

    Attributes:
        first: the first round of the fixed matrix.
        description: what the report quotes (default: one fixed weight matrix at every round).
    """

    first: int = 1
    description: str | None = None

    def __post_init__(self) -> None:
        check_integer(self.first, "first", minimum=1, error=ParameterError)

    def run(self, r: _Run) -> list[AssumptionResult]:
        return [_static(r.seq, r.horizon, self.first, self.description)]


@dataclass(frozen=True)
class EachRound:
    """A property every round's matrix must have (a check of :mod:`topology.checks.properties`), from round
    ``first`` on (e.g. 2: the gossip rounds after a local noising round)."""

    check: Callable
    name: str
    description: str
    first: int = 1

    def __post_init__(self) -> None:
        check_integer(self.first, "first", minimum=1, error=ParameterError)

    def run(self, r: _Run) -> list[AssumptionResult]:
        return [_each(r.seq, r.horizon, self.check, self.name, self.description, self.first)]


@dataclass(frozen=True)
class MinWeight:
    """A positive lower bound on every self weight and every positive weight over the horizon.

    The bound found is stored as constant ``symbol``; if it is positive, ``derived(value, num_nodes)``
    gives the constants the paper derives from it (a mapping), else nothing is derived.
    """

    symbol: str
    name: str
    description: str
    derived: Callable[[float, int], dict[str, Any]] | None = None

    def run(self, r: _Run) -> list[AssumptionResult]:
        value, first, where = _min_weight_over_rounds(r.seq, r.horizon)
        result = _min_weight_assumption(value, first, where, self.name, self.symbol, self.description)
        r.consts[self.symbol] = value
        if value > 0 and self.derived is not None:
            r.consts.update(self.derived(min(value, 1.0), r.seq.num_nodes))
        return [result]


@dataclass(frozen=True)
class Spectral:
    """A spectral quantity that must be ``< 1`` for every round's matrix; the largest over the horizon is stored as
    constant ``symbol`` (a fixed matrix's own value; it is computed once per run of equal rounds).

    With ``symmetric_only`` the quantity is defined for symmetric matrices only: a round that is not symmetric fails
    the assumption (its witness names the round), so a set without its own symmetry check does not hold vacuously.
    """

    measure: Callable
    symbol: str
    name: str
    formula: str
    description: str
    symmetric_only: bool = False

    def run(self, r: _Run) -> list[AssumptionResult]:
        worst: tuple[float, int] | None = None  # (value, round), the first failing round if any fails
        largest: float | None = None  # the constant: the largest value (NaN if a value is NaN)
        unsymmetric: tuple[int, str | None] | None = None  # the first round that is not symmetric (symmetric_only)
        prev: Any = None
        period = r.seq.period
        for t, w in r.seq.rounds(r.horizon if period is None else min(r.horizon, period)):  # one period suffices
            if prev is not None and _first_difference(w, prev) is None:
                continue  # the same matrix as the round before: the same value
            prev = w
            if self.symmetric_only:
                sym = P.check_symmetric(w)
                if not sym.holds:
                    unsymmetric = unsymmetric or (t, sym.witness)
                    continue
            try:
                value = float(self.measure(w))
            except Exception as exc:  # the measure refused this round's matrix: :func:`_run_step` names the step
                raise _RoundFailure(t, exc) from exc  # and the round (a TopologyError too, e.g. "needs a symmetric W")
            failing = not value < 1 - 1e-12
            if worst is None or (failing and worst[0] < 1 - 1e-12) or (not failing and value > worst[0]):
                worst = (value, t)
            if largest is None or not value <= largest:
                largest = value
        if largest is not None:
            r.consts[self.symbol] = largest
        if unsymmetric is not None and (worst is None or worst[0] < 1 - 1e-12 or unsymmetric[0] < worst[1]):
            t, why = unsymmetric
            return [AssumptionResult(self.name, False, t, f"round {t}: W is not symmetric ({why}); {self.formula} is "
                                     "defined for symmetric W only", self.description)]
        if worst is None:
            return []
        return [_spectral_assumption(worst[0], worst[1], self.name, self.formula, self.description)]


def _window_horizon(r: _Run, B: int) -> int:
    """Rounds whose fixed windows of ``B`` rounds are every window of the audited sequence.

    For an infinite periodic sequence audited as a whole (period ``P``), the windows ``[kB+1, (k+1)B]`` meet
    the period at every offset only over ``lcm(P, B)`` rounds: over whole periods alone some windows (those
    that straddle two periods at an offset the horizon does not reach) would never be examined. The audit's
    horizon is rounded up to a multiple of ``lcm(P, B)``; otherwise it is the audit's horizon.
    """
    if r.period is None:
        return r.horizon
    cycle = math.lcm(r.period, B)
    return cycle * -(-r.horizon // cycle)


def _minimal_fixed_b(r: _Run) -> int | None:
    """The smallest ``B`` whose fixed windows are all strongly connected (over ``_window_horizon``)."""
    found = P.minimal_b(r.seq, horizon=r.horizon, windows="fixed")
    if r.period is None or found is None:
        return found  # None: not even the union of every examined round is strongly connected
    for b in range(1, r.horizon + 1):
        if P.check_b_strongly_connected(r.seq, b, horizon=_window_horizon(r, b), windows="fixed").holds:
            return b
    return None


@dataclass(frozen=True)
class MinimalB:
    """A constant only: the smallest window ``B`` over which the fixed-window unions are strongly connected."""

    def run(self, r: _Run) -> list[AssumptionResult]:
        r.consts["minimal_B_fixed"] = _minimal_fixed_b(r)
        return []


@dataclass(frozen=True)
class BStronglyConnected:
    """Fixed-window ``B``-strong connectivity (``B`` given, or the smallest that holds), with its constants.

    For an infinite periodic sequence audited as a whole, the windows are examined over ``lcm(period, B)``
    rounds (every offset of a window in the period; ``_window_horizon``).

    Attributes:
        source: where the assumption comes from (quoted by the description).
        push_sum: also derive the push-sum constants of Cheng, Liao and Li (2022): ``lambda``,
            ``1 - lambda``, ``gamma`` and ``beta = 2``. ``minimal_B_fixed`` and ``B`` are always reported.
    """

    source: str = "Cheng, Liao and Li 2022, Sec. 2"
    push_sum: bool = True

    def run(self, r: _Run) -> list[AssumptionResult]:
        seq, horizon = r.seq, r.horizon
        found = _minimal_fixed_b(r)
        b_used = r.B if r.B is not None else found
        if b_used is None:
            check = P.check_b_strongly_connected(seq, horizon, horizon=horizon, windows="fixed")
            res = AssumptionResult(
                "b_strongly_connected", False, check.first_failure_round,
                f"no B <= {horizon} works; with B = horizon: {check.witness}",
                f"union of the links over every window [kB+1, (k+1)B] strongly connected ({self.source})")
        else:
            span = _window_horizon(r, b_used)
            where = "" if span == horizon else f"; windows over {span} rounds: every offset in the period"
            res = _from_check(
                P.check_b_strongly_connected(seq, b_used, horizon=span, windows="fixed"),
                "b_strongly_connected",
                f"union over every window [kB+1, (k+1)B] with B = {b_used} strongly connected ({self.source}{where})")
        r.consts.update({"minimal_B_fixed": found, "B": b_used})
        if self.push_sum:
            r.consts["beta"] = 2.0
            if b_used is not None:
                r.consts["lambda"] = C.push_sum_lambda(seq.num_nodes, b_used)
                r.consts["one_minus_lambda"] = C.push_sum_one_minus_lambda(seq.num_nodes, b_used)
            r.consts["gamma"] = C.push_sum_gamma(seq, horizon=horizon)
        return [res]


Step = Union[Static, EachRound, MinWeight, Spectral, MinimalB, BStronglyConnected]  # noqa: UP007 (runtime alias)


@dataclass(frozen=True)
class AssumptionSet:
    """The topology assumptions of one paper's theorems, as data.

    Attributes:
        name: the algorithm (rule) name the report names.
        paper: where the assumptions come from.
        steps: the checks, in report order; each adds its results and the constants it derives.
        contraction: the kind of product whose empirical contraction is measured
            (``"doubly"`` or ``"column"``; :func:`~topology.checks.constants.empirical_contraction`).
    """

    name: str
    paper: str
    steps: tuple[Step, ...]
    contraction: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"AssumptionSet: name must be a non-empty string, got {self.name!r}")
        if self.contraction not in ("doubly", "column"):
            raise ParameterError(f"AssumptionSet {self.name}: contraction must be 'doubly' or 'column', "
                                 f"got {self.contraction!r}")
        steps = tuple(self.steps)
        if not steps:  # an audit of nothing would report that every assumption holds
            raise ParameterError(f"AssumptionSet {self.name}: no steps: name at least one assumption to check")
        bad = [s for s in steps if not callable(getattr(s, "run", None))]
        if bad:
            raise ParameterError(f"AssumptionSet {self.name}: every step needs a run(audit) method, got {bad[0]!r}")
        object.__setattr__(self, "steps", steps)

    @property
    def uses_b(self) -> bool:
        """Whether a step checks B-strong connectivity (so that :func:`audit` takes ``B``)."""
        return any(isinstance(s, BStronglyConnected) for s in self.steps)


def fixed_symmetric_steps(paper: str) -> tuple[Step, ...]:
    """One fixed, nonnegative, symmetric, doubly stochastic matrix (the steps of an :class:`AssumptionSet`).

    Args:
        paper: where the assumption comes from (quoted by the descriptions).

    Returns:
        The steps ``Static, nonnegative, symmetric, doubly_stochastic``.

    Example:
        >>> [type(s).__name__ for s in fixed_symmetric_steps("a paper")]
        ['Static', 'EachRound', 'EachRound', 'EachRound']
    """
    return (
        Static(),
        EachRound(P.check_nonnegative, "nonnegative", "every weight w_ij >= 0"),
        EachRound(P.check_symmetric, "symmetric", f"W = W^T ({paper})"),
        EachRound(P.check_doubly_stochastic, "doubly_stochastic", f"W1 = 1 and 1^T W = 1^T ({paper})"),
    )


class _RoundFailure(Exception):
    """A step's callable raised ``error`` on round ``round_index``'s matrix (:func:`_run_step` reports it)."""

    def __init__(self, round_index: int, error: Exception) -> None:
        super().__init__(round_index, error)
        self.round_index, self.error = round_index, error


def _run_step(step: Any, run: _Run, set_name: str) -> list[AssumptionResult]:
    """``step.run(run)``; a step whose own callables (a user's check, measure or derived constants) raise gives one
    :class:`~topology.errors.ParameterError` naming the assumption set and the step (and the round, for a callable
    of one round's matrix), not a traceback."""
    step_name = getattr(step, "name", type(step).__name__)
    try:
        return step.run(run)
    except TopologyError:
        raise
    except _RoundFailure as failure:
        exc = failure.error
        raise ParameterError(f"audit: step {step_name!r} of the assumptions of {set_name} raised at round "
                             f"{failure.round_index}: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        raise ParameterError(f"audit: step {step_name!r} of the assumptions of {set_name} raised "
                             f"{type(exc).__name__}: {exc}") from exc


def audit(
    sequence: GraphSequence,
    assumptions: AssumptionSet,
    horizon: int | None = None,
    *,
    B: int | None = None,
    empirical: bool = True,
) -> AuditReport:
    """Check ``sequence`` against an algorithm's topology assumptions.

    Args:
        sequence: the graph sequence to audit.
        assumptions: the :class:`AssumptionSet` of the algorithm's theorems. The library's papers declare
            theirs in :mod:`accounting.papers`; ``asyncdp.papers.get_paper(name).assumption_set(name)``
            resolves a name (``topology`` knows no algorithm names).
        horizon: rounds ``1..horizon`` to examine; default the sequence's
            length, or for an infinite sequence :data:`DEFAULT_HORIZON` rounds
            rounded up to a whole number of periods (a periodic sequence is then
            audited as a whole: its fixed ``B`` windows over ``lcm(period, B)``
            rounds, so that every window's offset in the period is examined).
        B: for a set with a :class:`BStronglyConnected` step, the connectivity window to check; default the
            smallest that holds over the horizon. An error for any other set.
        empirical: also measure the empirical contraction of the products
            ``Phi(t, 0)``: ``empirical_rate`` (smallest ``r`` with
            ``dev_k <= dev_0 r^k`` for all ``k``), ``empirical_average_rate``
            (``(dev_last / dev_0)^(1/(H-1))``) and ``empirical_final_deviation``.

    Returns:
        An :class:`AuditReport`.

    Raises:
        ParameterError: ``sequence`` is not a :class:`~topology.sequence.GraphSequence`, ``assumptions`` is not
            an :class:`AssumptionSet`, a bad horizon, ``B`` given
            for a set without B-connectivity, or a step's own callable (a user's check, measure or derived
            constants) raised (naming the step; a per-round check also names the round).

    Example:
        >>> import networkx as nx
        >>> from topology import from_networkx
        >>> steps = (EachRound(P.check_doubly_stochastic, "doubly_stochastic", "rows and columns sum to 1"),)
        >>> ring = from_networkx([nx.cycle_graph(5)], "metropolis", periodic=True)
        >>> report = audit(ring, AssumptionSet("mine", "my notes", steps, "doubly"))
        >>> report.all_hold
        True
    """
    if not isinstance(sequence, GraphSequence):
        raise ParameterError(f"audit: sequence must be a topology.GraphSequence (build one with topology.from_matrices, "
                             f"static, periodic, generated or from_networkx), got {type(sequence).__name__}")
    if not isinstance(assumptions, AssumptionSet):
        raise ParameterError(f"audit: assumptions must be a topology.AssumptionSet (resolve an algorithm's name "
                             f"with asyncdp.papers.get_paper(name).assumption_set(name)), got {assumptions!r}"[:300])
    spec = assumptions
    if B is not None:
        B = check_integer(B, "B", minimum=1, error=ParameterError)
        if not spec.uses_b:
            raise ParameterError(f"audit: B = {B} given, but the assumptions of {spec.name} include no "
                                 "B-strong connectivity")
    whole = None
    if horizon is None and sequence.length is None:
        # an infinite sequence: DEFAULT_HORIZON rounds, rounded up to whole periods (a periodic one is then
        # audited as a whole: its B windows at every offset in the period, see BStronglyConnected)
        period = sequence.period or 1
        horizon = period * -(-DEFAULT_HORIZON // period)
        whole = sequence.period
    h = sequence.resolve_horizon(horizon)
    run = _Run(sequence, h, B, {}, whole)
    res = [result for step in spec.steps for result in _run_step(step, run, spec.name)]
    consts = run.consts
    if empirical:
        contraction = C.empirical_contraction(sequence, horizon=h, kind=spec.contraction)
        consts["empirical_rate"] = float(contraction.rate)
        dev = contraction.deviations
        if dev.size > 1 and dev[0] > 0 and dev[-1] > 0:
            consts["empirical_average_rate"] = float((dev[-1] / dev[0]) ** (1.0 / (dev.size - 1)))
        consts["empirical_final_deviation"] = float(contraction.deviations[-1])
        consts["empirical_exact"] = bool(contraction.exact)
    return AuditReport(spec.name, h, tuple(res), consts)

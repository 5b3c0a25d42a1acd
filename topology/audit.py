"""Audit of the topology assumptions that each shipped algorithm's theorems need.

:func:`audit` checks a :class:`~topology.sequence.GraphSequence` over a horizon
against the assumptions of one published algorithm and returns an
:class:`AuditReport`: one :class:`AssumptionResult` per assumption (holds or
not, the first failing round and a witness) and the constants the theorems
derive from the sequence, next to the empirical contraction of the actual
matrix products so that users see how loose the theoretical constants are.

The assumptions are data: :data:`ASSUMPTIONS` holds one :class:`AssumptionSet`
per paper (its checks in report order, the constants they derive, and the kind
of contraction to measure), built from a few step records (:class:`Static`,
:class:`EachRound`, :class:`MinWeight`, :class:`Spectral`, :class:`MinimalB`,
:class:`BStronglyConnected`). Adding a paper's assumptions is one entry there.

Assumptions per algorithm (see each paper):

* ``huang2015`` (Huang, Mitra and Vaidya, ICDCN 2015 and its 2014 arXiv preprint,
  Assumption 2 and Sec. 2): every ``A_t``
  nonnegative and doubly stochastic, strongly connected, ``a_ii(t) >= eta`` and
  every positive entry ``>= eta`` for one ``eta > 0``. Constants: ``eta``,
  Nedić–Ozdaglar ``theta``, ``beta`` (Lemma 6).
* ``showkatbakhsh`` (Showkatbakhsh, Karakus and Diggavi 2019): one fixed matrix, symmetric, nonnegative,
  doubly stochastic, connected; ``beta = max(|lambda_2|, |lambda_N|) < 1``.
* ``wang-basar`` (Wang and Basar 2023, Assumption 4): one fixed matrix, symmetric, doubly
  stochastic, positive diagonal; ``eta = ||W - 11^T/m||_2 < 1``.
* ``dpsda-c`` (Cheng, Liao and Li 2022, Lemmas 2–3): every ``W(t)`` symmetric (the proof of
  Lemma 2(a) needs it) and doubly stochastic, positive diagonal and positive
  entries ``>= phi``, each round connected (the per-step bound of Lemma 3).
  Constants: ``phi``, ``theta = 1 - phi/(4 n^2)``.
* ``dpsda-ps`` (Cheng, Liao and Li 2022, Lemma 6): every ``A(t)`` column stochastic with a
  positive diagonal, B-strongly connected over fixed windows. Constants: the
  minimal ``B``, ``lambda = (1 - 1/n^(nB))^(1/B)``, ``gamma``, ``beta = 2``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Union

import numpy as np

from .checks import constants as C
from .checks import properties as P
from .errors import ParameterError, UnknownAlgorithmError
from .sequence import GraphSequence
from .validation import check_integer

__all__ = ["AssumptionResult", "AuditReport", "AssumptionSet", "audit", "ALGORITHMS", "ASSUMPTIONS", "DEFAULT_HORIZON",
           "Static", "EachRound", "MinWeight", "Spectral", "MinimalB", "BStronglyConnected"]

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


def _each(seq: GraphSequence, horizon: int, fn: Callable, name: str, description: str) -> AssumptionResult:
    return _from_check(P.check_each_round(seq, fn, horizon=horizon, name=name), name, description)


def _min_over_rounds(seq: GraphSequence, horizon: int, fn: Callable) -> float:
    return float(min(fn(w) for _, w in seq.rounds(horizon)))


def _min_weight_assumption(value: float, name: str, symbol: str, description: str) -> AssumptionResult:
    holds = value > 0
    witness = None if holds else f"the smallest weight over the horizon is {value!r}; no {symbol} > 0 exists"
    return AssumptionResult(name, holds, None if holds else 1, witness, description)


def _static(seq: GraphSequence, horizon: int) -> AssumptionResult:
    first = seq.weights(1)
    for t in range(2, horizon + 1):
        diff = abs(seq.weights(t) - first)
        if diff.nnz and diff.max() > 0:
            coo = diff.tocoo()
            k = int(np.argmax(coo.data))
            i, j = int(coo.row[k]), int(coo.col[k])
            return AssumptionResult(
                "static", False, t,
                f"round {t}: entry [{i}, {j}] is {float(seq.weights(t)[i, j])!r}, round 1 has {float(first[i, j])!r}",
                "one fixed weight matrix at every round",
            )
    return AssumptionResult("static", True, None, None, "one fixed weight matrix at every round")


def _spectral_assumption(value: float, name: str, formula: str, description: str) -> AssumptionResult:
    holds = value < 1 - 1e-12
    witness = None if holds else f"round 1: {formula} = {value:.6g}, not < 1"
    return AssumptionResult(name, holds, None if holds else 1, witness, description)


@dataclass
class _Run:
    """What every step of an audit sees: the sequence, the horizon, ``B``, and the constants found so far."""

    seq: GraphSequence
    horizon: int
    B: int | None
    consts: dict[str, Any]


@dataclass(frozen=True)
class Static:
    """The assumption "one fixed weight matrix at every round"."""

    def run(self, r: _Run) -> list[AssumptionResult]:
        return [_static(r.seq, r.horizon)]


@dataclass(frozen=True)
class EachRound:
    """A property every round's matrix must have (a check of :mod:`topology.checks.properties`)."""

    check: Callable
    name: str
    description: str

    def run(self, r: _Run) -> list[AssumptionResult]:
        return [_each(r.seq, r.horizon, self.check, self.name, self.description)]


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
        value = min(_min_over_rounds(r.seq, r.horizon, P.min_positive_weight),
                    _min_over_rounds(r.seq, r.horizon, P.min_self_weight))
        result = _min_weight_assumption(value, self.name, self.symbol, self.description)
        r.consts[self.symbol] = value
        if value > 0 and self.derived is not None:
            r.consts.update(self.derived(min(value, 1.0), r.seq.num_nodes))
        return [result]


@dataclass(frozen=True)
class Spectral:
    """A spectral quantity of the (fixed) round-1 matrix that must be ``< 1``, stored as constant ``symbol``.

    With ``symmetric_only`` the quantity is computed only when round 1's matrix is symmetric.
    """

    measure: Callable
    symbol: str
    name: str
    formula: str
    description: str
    symmetric_only: bool = False

    def run(self, r: _Run) -> list[AssumptionResult]:
        w1 = r.seq.weights(1)
        if self.symmetric_only and not P.check_symmetric(w1).holds:
            return []
        value = self.measure(w1)
        r.consts[self.symbol] = value
        return [_spectral_assumption(value, self.name, self.formula, self.description)]


@dataclass(frozen=True)
class MinimalB:
    """A constant only: the smallest window ``B`` over which the fixed-window unions are strongly connected."""

    def run(self, r: _Run) -> list[AssumptionResult]:
        r.consts["minimal_B_fixed"] = P.minimal_b(r.seq, horizon=r.horizon, windows="fixed")
        return []


@dataclass(frozen=True)
class BStronglyConnected:
    """Fixed-window ``B``-strong connectivity (``B`` given, or the smallest that holds) and push-sum constants."""

    def run(self, r: _Run) -> list[AssumptionResult]:
        seq, horizon = r.seq, r.horizon
        found = P.minimal_b(seq, horizon=horizon, windows="fixed")
        b_used = r.B if r.B is not None else found
        if b_used is None:
            check = P.check_b_strongly_connected(seq, horizon, horizon=horizon, windows="fixed")
            res = AssumptionResult(
                "b_strongly_connected", False, check.first_failure_round,
                f"no B <= {horizon} works; with B = horizon: {check.witness}",
                "union of the links over every window [kB+1, (k+1)B] strongly connected "
                "(Cheng, Liao and Li 2022, Sec. 2)")
        else:
            res = _from_check(
                P.check_b_strongly_connected(seq, b_used, horizon=horizon, windows="fixed"),
                "b_strongly_connected",
                f"union over every window [kB+1, (k+1)B] with B = {b_used} strongly connected "
                "(Cheng, Liao and Li 2022, Sec. 2)")
        r.consts.update({"minimal_B_fixed": found, "B": b_used, "beta": 2.0})
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
        name: the algorithm name :func:`audit` accepts.
        paper: where the assumptions come from.
        steps: the checks, in report order; each adds its results and the constants it derives.
        contraction: the kind of product whose empirical contraction is measured
            (``"doubly"`` or ``"column"``; :func:`~topology.checks.constants.empirical_contraction`).
    """

    name: str
    paper: str
    steps: tuple[Step, ...]
    contraction: str


def _nedic_ozdaglar(eta: float, n: int) -> dict[str, Any]:
    theta, beta = C.nedic_ozdaglar(eta, n)
    return {"theta": theta, "beta": beta}


def _dpsda_c_theta(phi: float, n: int) -> dict[str, Any]:
    return {"theta": C.dpsda_c_theta(phi, n)}


def _fixed_symmetric(paper: str) -> tuple[Step, ...]:
    """One fixed, nonnegative, symmetric, doubly stochastic matrix (Showkatbakhsh, Karakus and Diggavi, arXiv 2019;
    Wang and Başar, Automatica 2023)."""
    return (
        Static(),
        EachRound(P.check_nonnegative, "nonnegative", "every weight w_ij >= 0"),
        EachRound(P.check_symmetric, "symmetric", f"W = W^T ({paper})"),
        EachRound(P.check_doubly_stochastic, "doubly_stochastic", f"W1 = 1 and 1^T W = 1^T ({paper})"),
    )


ASSUMPTIONS: dict[str, AssumptionSet] = {s.name: s for s in (
    AssumptionSet("huang2015", "Huang, Mitra and Vaidya 2015, Assumption 2 and Sec. 2", (
        EachRound(P.check_nonnegative, "nonnegative", "every weight a_ij(t) >= 0"),
        EachRound(P.check_doubly_stochastic, "doubly_stochastic",
                  "every A_t has rows and columns summing to 1 (Huang, Mitra and Vaidya 2015, Sec. 2)"),
        EachRound(P.check_strongly_connected, "strongly_connected",
                  "every A_t is strongly connected (Huang, Mitra and Vaidya 2015, Assumption 2)"),
        MinWeight("eta", "min_weight_eta",
                  "a_ii(t) >= eta and a_ij(t) > 0 implies a_ij(t) >= eta for one eta > 0 "
                  "(Huang, Mitra and Vaidya 2015, Assumption 2)",
                  _nedic_ozdaglar),
    ), "doubly"),
    AssumptionSet("showkatbakhsh", "Showkatbakhsh, Karakus and Diggavi 2019, Sec. 2", (
        *_fixed_symmetric("Showkatbakhsh, Karakus and Diggavi 2019, Sec. 2"),
        EachRound(P.check_connected_undirected, "connected", "the undirected graph is connected"),
        Spectral(P.second_eigenvalue_modulus, "beta", "beta_below_one", "max(|lambda_2|, |lambda_N|)",
                 "beta = max(|lambda_2(W)|, |lambda_N(W)|) < 1 (Showkatbakhsh, Karakus and Diggavi 2019)",
                 symmetric_only=True),
    ), "doubly"),
    AssumptionSet("wang-basar", "Wang and Basar 2023, Assumption 4", (
        *_fixed_symmetric("Wang and Basar 2023, Assumption 4"),
        EachRound(P.check_positive_diagonal, "positive_diagonal", "w_ii > 0 (Wang and Basar 2023, Sec. 2)"),
        Spectral(P.mixing_norm, "eta", "mixing_norm_below_one", "||W - 11^T/m||_2",
                 "eta = ||W - 11^T/m||_2 < 1 (Wang and Basar 2023, Assumption 4)"),
    ), "doubly"),
    AssumptionSet("dpsda-c", "Cheng, Liao and Li 2022, Lemmas 2-3", (
        EachRound(P.check_nonnegative, "nonnegative", "every weight W_ij(t) >= 0"),
        EachRound(P.check_symmetric, "symmetric",
                  "W(t) symmetric: the proof of Lemma 2(a) of Cheng, Liao and Li 2022 uses it "
                  "(the paper only states W1 = 1)"),
        EachRound(P.check_doubly_stochastic, "doubly_stochastic", "W(t)1 = 1 and 1^T W(t) = 1^T"),
        EachRound(P.check_connected_undirected, "connected_each_round",
                  "each G1(t) connected: needed by Lemma 3's per-step bound (the paper states no connectivity)"),
        MinWeight("phi", "min_weight_phi",
                  "W_ii(t) >= phi and W_ij(t) >= phi on links, phi > 0 (Cheng, Liao and Li 2022, Sec. 3)",
                  _dpsda_c_theta),
        MinimalB(),
    ), "doubly"),
    AssumptionSet("dpsda-ps", "Cheng, Liao and Li 2022, Lemma 6", (
        EachRound(P.check_nonnegative, "nonnegative", "every weight A_ij(t) >= 0"),
        EachRound(P.check_column_stochastic, "column_stochastic",
                  "1^T A(t) = 1^T: push-sum weights (Cheng, Liao and Li 2022, Algorithm 2)"),
        EachRound(P.check_positive_diagonal, "positive_diagonal", "A_ii(t) > 0 (self in N_i^out)"),
        BStronglyConnected(),
    ), "column"),
)}
"""Algorithm name -> the assumption set its theorems need (one record per paper; :func:`audit` reads it)."""

ALGORITHMS: tuple[str, ...] = tuple(ASSUMPTIONS)


def audit(
    sequence: GraphSequence,
    algorithm: str,
    horizon: int | None = None,
    *,
    B: int | None = None,
    empirical: bool = True,
) -> AuditReport:
    """Check ``sequence`` against the topology assumptions of ``algorithm``'s theorems.

    Args:
        sequence: the graph sequence to audit.
        algorithm: one of :data:`ALGORITHMS`.
        horizon: rounds ``1..horizon`` to examine; default the sequence's
            length, or for an infinite sequence :data:`DEFAULT_HORIZON` rounds
            rounded up to a whole number of periods.
        B: for ``dpsda-ps``, the connectivity window to check; default the
            smallest that holds over the horizon.
        empirical: also measure the empirical contraction of the products
            ``Phi(t, 0)``: ``empirical_rate`` (smallest ``r`` with
            ``dev_k <= dev_0 r^k`` for all ``k``), ``empirical_average_rate``
            (``(dev_last / dev_0)^(1/(H-1))``) and ``empirical_final_deviation``.

    Returns:
        An :class:`AuditReport`.

    Raises:
        UnknownAlgorithmError: ``algorithm`` is not in :data:`ALGORITHMS`.
        ParameterError: a bad horizon or ``B``.

    Example:
        >>> import networkx as nx
        >>> from topology import from_networkx
        >>> report = audit(from_networkx([nx.cycle_graph(5)], "metropolis", periodic=True), "huang2015")
        >>> report.all_hold
        True
    """
    spec = ASSUMPTIONS.get(algorithm) if isinstance(algorithm, str) else None
    if spec is None:
        raise UnknownAlgorithmError(
            f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}"
        )
    if B is not None:
        B = check_integer(B, "B", minimum=1, error=ParameterError)
    if horizon is None and sequence.length is None:
        # an infinite sequence: DEFAULT_HORIZON rounds, rounded up to whole periods
        period = sequence.period or 1
        horizon = period * -(-DEFAULT_HORIZON // period)
    h = sequence.resolve_horizon(horizon)
    run = _Run(sequence, h, B, {})
    res = [result for step in spec.steps for result in step.run(run)]
    consts = run.consts
    if empirical:
        contraction = C.empirical_contraction(sequence, horizon=h, kind=spec.contraction)
        consts["empirical_rate"] = float(contraction.rate)
        dev = contraction.deviations
        if dev.size > 1 and dev[0] > 0 and dev[-1] > 0:
            consts["empirical_average_rate"] = float((dev[-1] / dev[0]) ** (1.0 / (dev.size - 1)))
        consts["empirical_final_deviation"] = float(contraction.deviations[-1])
        consts["empirical_exact"] = bool(contraction.exact)
    return AuditReport(algorithm, h, tuple(res), consts)

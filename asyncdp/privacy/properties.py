"""A privacy property of one adjacent pair, for a user's Hypothesis tests: :func:`assert_private`.

A drawn pair (:func:`asyncdp.privacy.strategies.adjacent_scenarios`) is decided by the privacy check itself
(:func:`~asyncdp.privacy.check_privacy`), from the engine's runs of both scenarios and the accountant's replay, in
the form the rule claims (pure, ``(epsilon, delta)``, Rényi or zCDP): the released noise against its declaration,
the realized shifts against the sensitivity lemma, the exact privacy profile of the pair where its shifts are
fixed (a Gaussian pair's divergence against a Rényi or zCDP claim, its ``delta(epsilon)`` against an
``(epsilon, delta)`` claim), the exact replay losses and the black-box audit; then, in place of the class search
(the property replaces it: Hypothesis draws the pairs), :func:`decide_pair` gives the pair itself the decision the
search gives the worst pair of the class (a pure claim: its constructed transcripts; else its exact profile,
importance sampling, sequential engine runs).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair = small_example()[0]
    >>> assert_private(pair.scenario, pair.adjacent, runs=200).verdict
    'pass'
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

import numpy as np

from ..scenario import Scenario
from .context import CheckContext, ScenarioPair
from .evidence import Evidence
from .report import PrivacyCheckReport, describe_claim
from .check import check_privacy
from .steps import STEPS, Step
from .behavior import run_origin
from .constructed import constructed_replay
from .coverage import PAIR_METHOD
from .search_evidence import pure_evidence
from .search_objective import _round_loss
from .worst_case import search_worst_case
from .worst_pair import delta_evidence

__all__ = ["PAIR_STEPS", "PrivacyPropertyError", "assert_private", "decide_pair"]


def decide_pair(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """The check's step for the pair itself where the class search would run: a claim with ``delta > 0`` is decided
    on the pair as the search decides its worst pair (:func:`~asyncdp.privacy.worst_pair.delta_evidence`: the exact
    profile of its realized shifts, importance sampling under Gaussian noise, sequential engine runs), at the share
    of the confidence the search would spend. A Gaussian pair's ``delta(epsilon)`` above an ``(epsilon, delta)``
    claim is certified here only: the exact replay sets it aside. A pure claim is decided as the search decides its
    worst linear pair: the pair's constructed transcript (the changed agent's releases at their noise-free values
    under ``P``; every agent's under round adjacency) on each engine run's realized schedule, whose exact loss (a
    per-iteration claim: its largest round's) above epsilon refutes it
    (:func:`~asyncdp.privacy.search_evidence.pure_evidence`); the exact replay of random runs seldom meets a pure
    claim's worst transcripts.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"the pair's delta(epsilon)"`` (realized behavior), with its witness if the pair refutes the claim.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> decide_pair(*small_example()).witness is None  # a correct pure claim: its constructed losses within it
        True
    """
    method, kind = PAIR_METHOD, "realized behavior"
    if not math.isfinite(ctx.epsilon_claimed):
        return Evidence(method, kind, {}, reasons=("the pair's delta(epsilon): an infinite claim, nothing to refute",))
    where = f"round {ctx.changed_round}" if ctx.changed_round is not None else f"agent {ctx.changed_agent}"
    base_witness = {"kind": "pair", "agent": ctx.changed_agent, "round": ctx.changed_round,
                    "seed": ctx.options.seed, "claim_form": ctx.form_name}
    figures: dict[str, object] = {"worst_case_delta_lower": None}
    # the pair as the check runs it: the rule bound to the problem (a user's pair holds the rule as written; the
    # adjacency check has shown it binds alike to both problems)
    p, q = (sc.replace(algorithm=ctx.algorithm) for sc in (pair.scenario, pair.adjacent))
    if ctx.delta_claimed == 0:
        evidence = _constructed(ctx, p, q, figures, base_witness, f"the pair ({where} changed)")
    else:
        evidence = delta_evidence(ctx, p, q, figures, base_witness, f"the pair ({where} changed)")
    return dataclasses.replace(evidence, method=method, checked_against=kind)


def _constructed(ctx: CheckContext, p: Scenario, q: Scenario, figures: dict[str, object],
                 base_witness: dict[str, object], pair_desc: str) -> Evidence:
    """A pure claim against the pair's constructed transcripts on the check's engine runs of ``P`` (their largest
    exact loss; a per-iteration claim: their largest round's, as the search reads its pairs, since the pair's worst
    round need not be the ledger's focus round): a witness above epsilon, else the loss in a reason."""
    from accounting.errors import AccountingError

    runs = ctx.engine_runs(0)
    pinned = ctx.changed_agent if ctx.changed_agent is not None else list(range(p.problem.num_agents))
    try:
        _, out = constructed_replay(runs, p, q, pinned)
    except AccountingError as exc:
        return Evidence("the pair's constructed transcript", "constructed worst case", figures,
                        reasons=(f"{pair_desc}: cannot construct its transcripts: {exc}",))
    assert out.losses is not None and out.per_round is not None
    losses = _round_loss(out.per_round) if ctx.focus is not None else out.losses
    run = int(np.argmax(losses))
    loss = float(losses[run])
    figures["pair_constructed_loss"] = loss
    witness = {**base_witness, "run": run, **run_origin(runs, run), "engine": runs.engine, "loss": loss}
    evidence = pure_evidence(ctx, runs, loss, run, figures, witness, pair_desc, transcript=(
        "the pair's constructed transcript on an engine run's realized schedule: {}; exact"))
    if evidence.witness is not None:  # the search's words for its worst pair, said of this pair
        return dataclasses.replace(evidence, reasons=tuple(
            reason.replace("worst case: ", "", 1) for reason in evidence.reasons))
    eps = ctx.epsilon_claimed
    said = ("NaN (not decided by it)" if math.isnan(loss) else f"{loss:.6g}, within epsilon {eps:.6g}" if loss <= eps
            else f"{loss:.6g}, above epsilon {eps:.6g} by no more than round-off can add")
    return dataclasses.replace(evidence, reasons=(
        f"{pair_desc}: largest constructed-transcript loss over {runs.runs} engine runs' schedules {said}",))


PAIR_STEPS: tuple[Step, ...] = (*(step for step in STEPS if step is not search_worst_case), decide_pair)
"""Every step of the check but the worst-case search of the class, then :func:`decide_pair`: the steps that decide
the pair itself."""


class PrivacyPropertyError(AssertionError):
    """A pair's check did not pass: its verdict, the claim, the witness and the reasons (an ``AssertionError``, so
    pytest and Hypothesis report it as the property's failure and shrink toward a simpler pair).

    Attributes:
        report: the check's :class:`~asyncdp.privacy.report.PrivacyCheckReport`.
    """

    def __init__(self, message: str, report: PrivacyCheckReport) -> None:
        super().__init__(message)
        self.report = report


_WHOLE = 16
"""A list of numbers up to this long is shown whole where it differs; a longer one by its differing entries."""

_SHOWN = 8
"""At most this many differing entries of a list are shown (and how many more differ)."""


def _differing(a: object, b: object) -> tuple[object, object]:
    """The parts of two ``to_dict`` descriptions that differ: the keys of two dicts whose values differ or that one
    of them lacks, the entries of two lists of one length (rows of tables, entries of long vectors: the first
    :data:`_SHOWN`), recursively; ``(a, b)`` where they are not alike."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in {**a, **b} if k not in a or k not in b or a[k] != b[k]]
        parts = {k: _differing(a[k], b[k]) if k in a and k in b else (a.get(k), b.get(k)) for k in keys}
        return ({k: d[0] for k, d in parts.items() if k in a}, {k: d[1] for k, d in parts.items() if k in b})
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and (
            len(a) > _WHOLE or any(isinstance(x, (list, dict)) for x in a)):
        idx = [i for i in range(len(a)) if a[i] != b[i]]
        parts_ = [_differing(a[i], b[i]) for i in idx[:_SHOWN]]
        more = {"...": f"{len(idx) - _SHOWN} more entries differ"} if len(idx) > _SHOWN else {}
        return tuple({**{f"[{i}]": d[k] for i, d in zip(idx, parts_)}, **more} for k in (0, 1))  # type: ignore[return-value]
    return a, b


def _plain(value: object) -> object:
    """A ``to_dict`` description as plain JSON values (arrays as lists, keys as strings, other objects as their
    ``str``), so that its parts compare as values and print as JSON."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.tolist()  # (plain numbers already)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _pair_costs(scenario: Scenario, adjacent: Scenario) -> str:
    """What differs between the pair's costs (their ``to_dict``), for the failure message: a drawn pair's two
    scenarios print alike (their cost families' reprs name only their sizes). A family that cannot describe itself
    is named with its error (the message still reports the verdict)."""
    try:
        mine, theirs = (_plain(sc.problem.costs.to_dict()) for sc in (scenario, adjacent))
    except Exception as exc:  # noqa: BLE001 - a user's family: its error is named, the verdict still reported
        return f"costs: not described ({type(scenario.problem.costs).__name__}.to_dict raised {exc!r})"
    if mine == theirs:
        return (f"costs: their descriptions ({type(scenario.problem.costs).__name__}.to_dict) are alike: the data "
                "they omit differ")
    mine, theirs = _differing(mine, theirs)
    return f"costs: {json.dumps(mine)[:300]} vs {json.dumps(theirs)[:300]}"


def _message(report: PrivacyCheckReport, scenario: Scenario, adjacent: Scenario) -> str:
    """The verdict, the claim in its form, the changed agent (round) and what differs between the pair's costs, the
    witness and the reasons, one per line."""
    where = (f"round {report.changed_round}" if report.changed_round is not None
             else f"agent {report.changed_agent}")
    lines = [f"privacy check of {report.algorithm!r} on the pair ({where} changed): {report.verdict}",
             f"claim: {describe_claim(report.claim) if report.claim else report.claim_form}",
             _pair_costs(scenario, adjacent)]
    if report.witness is not None:
        lines.append(f"witness: {json.dumps(report.witness, default=str)[:600]}")
    lines.extend(f"- {reason}" for reason in report.reasons[:6])
    return "\n".join(lines)


def assert_private(scenario: Scenario, adjacent: Scenario, *, runs: int = 200, confidence: float = 0.999,
                   delta: float = 1e-6, seed: int = 0, allow_inconclusive: bool = False,
                   steps: Sequence[Step] = PAIR_STEPS, engine: str = "auto") -> PrivacyCheckReport:
    """Assert that the rule's claim holds on the pair: the privacy check's verdict on it is ``pass``.

    The check (:func:`~asyncdp.privacy.check_privacy` with ``steps``) reads the claim in its form and decides
    from behavior (module docstring). A ``violation`` fails with its witness; ``inconclusive`` and ``no-claim``
    fail too unless ``allow_inconclusive`` (a doubt is not a pass). A correct claim fails with probability at most
    ``1 - confidence`` per pair (the statistical witnesses' union bound); the seed is fixed, so a pair's verdict
    is reproducible. A ``pass`` speaks of this pair (and of the accountant's composition with the paper's lemma):
    the class is covered by the pairs the property draws, not searched here (so a user's lemma is not doubted for
    want of that search, as :func:`~asyncdp.privacy.check_privacy` doubts it). The statistical witnesses' power
    grows with ``runs``: a claim with ``delta > 0`` slightly below the pair's true profile may need some hundred
    runs to be refuted rather than left ``inconclusive``.

    Args:
        scenario, adjacent: the pair (e.g. drawn by :func:`~asyncdp.privacy.strategies.adjacent_scenarios`).
        runs: engine runs per scenario (>= 1).
        confidence: family-wise confidence of the statistical witnesses, in (0, 1).
        delta: the delta at which a Rényi or zCDP claim is converted, in (0, 1).
        seed: the check's seed.
        allow_inconclusive: return an ``inconclusive`` (or ``no-claim``) report instead of failing.
        steps: the check's steps (default :data:`PAIR_STEPS`).
        engine: ``"auto"``, ``"batch"`` or ``"simpy"``.

    Returns:
        The report (verdict ``pass``, or ``inconclusive``/``no-claim`` with ``allow_inconclusive``).

    Raises:
        PrivacyPropertyError: the verdict is ``violation`` (or, unless allowed, ``inconclusive``/``no-claim``); the
            message names the verdict, the claim, the changed agent, what differs between the pair's costs, the
            witness and the reasons.
        AdjacencyError: the scenarios are not adjacent (as :func:`~asyncdp.privacy.check_privacy`).
    """
    report = check_privacy(scenario, adjacent, runs=runs, confidence=confidence, delta=delta, seed=seed,
                           steps=steps, engine=engine, search_examples=0)
    if report.verdict == "pass" or (allow_inconclusive and report.verdict != "violation"):
        return report
    raise PrivacyPropertyError(_message(report, scenario, adjacent), report)

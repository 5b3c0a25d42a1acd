"""Pairs of the adjacency class beyond the changed agent's extremal ones, compared with the sensitivity lemma.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) compares the
changed agent's constructed losses with the lemma round by round, and judges
the other agents' extremal pairs and the worst pair found by a privacy
profile. A profile can miss what the lemma comparison sees: a rule that moves
another agent's releases further than the lemma from a late round on (its
profile then refutes only a tight claim, and a Rényi or zCDP claim's
conversion to ``(epsilon, delta)`` is far too loose), or one that moves a
release further only on schedules the search's few runs did not sample
(e.g. a stale message under deadline timing on lossy links). Every pair
evaluated here is in the lemma's class, so a release moved further than the
lemma is a witness that the lemma, hence every bound composed with it, does
not cover the class (exact, confidence 1). Two comparisons:

* :func:`other_agents_over_lemma`: every agent besides the one the search
  checked, on the constructed losses of its extremal pairs (the ones the
  search evaluated already; for an agent it did not evaluate, its first
  :data:`UNSEARCHED_PAIRS` extremal pairs on two runs, every agent's in the
  same stacked replays);
* :func:`shifts_over_lemma`: the worst pair's realized shifts on every run
  of its first look (the runs its profile is computed from, drawn
  independently of the search), release by release, as the coverage step
  does for the user's pair.

Example:
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> ctx = SimpleNamespace(sensitivity={"y": np.array([0.0, 1.0])})
    >>> shifts = {"y": np.zeros((3, 2, 2, 1))}
    >>> shifts["y"][2, 1, 0, 0] = 2.5  # run 2, round 2, agent 0: 2.5 > 1.0
    >>> shifts_over_lemma(ctx, shifts, {"y": "gaussian"}, 0).describe()
    'channel y, agent 0, round 2: shift 2.5 > bound 1 (l2, run 2, 1 run(s) over)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["UNSEARCHED_PAIRS", "other_agents_over_lemma", "others_over_lemma", "shifts_over_lemma",
           "worst_pair_over_lemma"]

UNSEARCHED_PAIRS = 2
"""For an agent whose extremal pairs the search did not evaluate (:func:`asyncdp.privacy.worst_case.other_agents`
names the ones it evaluates, unless a pair of the changed agent points at a refutation already), this many of its
first extremal pairs (a direction, both signs) are evaluated for the lemma's comparison: a rule that treats that
agent differently moves its releases further under either of them."""


def other_agents_over_lemma(ctx: Any, fam: Any, evaluated: Any, scenario: Any, runs: Any, objective: Any
                            ) -> tuple[tuple[dict[str, Any], str] | None, str | None]:
    """The largest excess over the lemma of any other agent's extremal pair (module docstring).

    Args:
        ctx: the check's context (its sensitivity, the focus round).
        fam: the search family whose agent :func:`~asyncdp.privacy.worst_case._lemma_exceeded` compared already.
        evaluated: the search's :class:`~asyncdp.privacy.constructed.CandidateRuns`.
        scenario: the user's scenario.
        runs: the check's engine runs (side 0).
        objective: the search's objective (its candidates are scored as the search scores them).

    Returns:
        ``((witness, reason) or None, note)``: the witness of the largest ratio over the lemma, and a line
        saying which pairs of the agents the search did not evaluate were compared (``None`` when there are none).

    Raises:
        AccountingError: a candidate cannot be replayed.
    """
    from .worst_case import _OTHER_AGENT_RUNS, _evaluate_all, _Family, _lemma_exceeded, _stack_other_agents

    if fam.agent is None or ctx.sensitivity is None:
        return None, None
    have = {key[0] for key in evaluated.known}  # (the search skips the other agents when it found a pair already)
    missing = [_Family(fam.cls, j) for j in range(scenario.problem.num_agents) if j != fam.agent and j not in have]
    note = None
    if missing:
        extremes = [f.extremes(scenario, None)[:UNSEARCHED_PAIRS] for f in missing]
        _stack_other_agents(missing, extremes, evaluated, scenario)  # (stacked; _evaluate_all then replays nothing)
        for f, ex in zip(missing, extremes):
            _evaluate_all(f, evaluated, scenario, ex, _OTHER_AGENT_RUNS, objective, ctx.focus)
        note = (f"worst-case search: the first {UNSEARCHED_PAIRS} extremal pairs of each of the {len(missing)} other "
                "agent(s) whose pairs the search did not evaluate were compared with the sensitivity lemma round by "
                f"round (on {_OTHER_AGENT_RUNS} runs)")
    worst = None
    for j in sorted({key[0] for key in evaluated.known if isinstance(key[0], int) and key[0] != fam.agent}):
        over = _lemma_exceeded(ctx, _Family(fam.cls, j), evaluated, scenario, runs)
        if over is not None and (worst is None or over[0]["ratio"] > worst[0]["ratio"]):
            worst = over
    return worst, note


def shifts_over_lemma(ctx: Any, shifts: Mapping[str, Any], mechanisms: Mapping[str, str], agent: int | None,
                      roundoff: float = 0.0) -> Any:
    """The release of ``agent`` (every agent's under round adjacency, ``agent`` ``None``) whose realized shift
    is furthest above the lemma on some run, or ``None``.

    Args:
        ctx: the check's context (``sensitivity``: per noisy channel the lemma of each round, ``(T,)``).
        shifts: per channel the realized shifts (:func:`accounting.coverage.realized_shifts`): ``(R, T, N, d)``
            or ``(R, T, N, N, d)``.
        mechanisms: per noisy channel its mechanism (``"gaussian"``: L2, ``"laplace"``: L1); other channels are
            not compared.
        agent: the pair's changed agent.
        roundoff: the round-off a shift may carry (:func:`asyncdp.privacy.coverage.shift_roundoff` of the runs'
            releases), allowed on top of the comparison's relative tolerance.

    Returns:
        The :class:`accounting.coverage.UncoveredRelease` of the largest ratio over the lemma, or ``None``.

    Raises:
        PrivacyParameterError: malformed shifts (:func:`accounting.coverage.uncovered_by_norms`).
    """
    from accounting.coverage import release_norms, uncovered_by_norms

    sens = getattr(ctx, "sensitivity", None)
    if sens is None:
        return None
    norms, bounds = {}, {}
    for c, s in shifts.items():
        if c not in sens or mechanisms.get(c) not in ("gaussian", "laplace"):
            continue
        mags = release_norms(s, str(mechanisms[c]), c)  # (R, T, N) or (R, T, N, N): the sender on axis 2
        if agent is not None:  # the pair's other agents are not compared here (as not released)
            keep = np.zeros(mags.shape[2], dtype=bool)
            keep[agent] = True
            mags = np.where(keep.reshape((1, 1, -1) + (1,) * (mags.ndim - 3)), mags, np.nan)
        lemma = np.asarray(sens[c], dtype=float)[:mags.shape[1]]
        norms[c] = mags
        bounds[c] = np.repeat(lemma[:, None], mags.shape[2], axis=1)
    hits = uncovered_by_norms(norms, bounds, dict(mechanisms), atol=max(1e-12, roundoff)) if norms else []
    return max(hits, key=lambda u: u.shift / u.bound if u.bound > 0 else np.inf, default=None)


def others_over_lemma(evidence: Any, ctx: Any, fam: Any, evaluated: Any, scenario: Any,
                      runs: Any, objective: Any) -> Any:
    """``evidence`` with the witness of :func:`asyncdp.privacy.lemma_reach.other_agents_over_lemma` (another
    agent's extremal pair moves a release further than the lemma), or with a doubt when their replay fails."""
    from accounting.errors import AccountingError

    try:
        over, note = other_agents_over_lemma(ctx, fam, evaluated, scenario, runs, objective)
    except AccountingError as exc:
        why = f"worst-case search: the other agents' extremal pairs cannot be replayed for the lemma's check: {exc}"
        return dataclasses.replace(evidence, reasons=(*evidence.reasons, why),
                                   doubt=why if evidence.doubt is None else f"{evidence.doubt}; {why}")
    reasons = (*evidence.reasons, *(() if note is None else (note,)), *(() if over is None else (over[1],)))
    return dataclasses.replace(evidence, reasons=reasons, witness=None if over is None else over[0])


def worst_pair_over_lemma(ctx: Any, shifts: Any, p: Any, base_witness: dict[str, Any], runs: Any, pair_desc: str
                          ) -> tuple[dict[str, Any], str] | None:
    """The worst pair's release furthest above the lemma on the runs of its first look
    (:func:`asyncdp.privacy.lemma_reach.shifts_over_lemma`), as ``(witness, reason)``, or ``None``: the pair is
    in the lemma's class, so a realized shift above it is a witness (exact, confidence 1)."""
    from accounting.errors import AccountingError

    from .behavior import declared_noise

    if isinstance(shifts, AccountingError):
        return None
    mechanisms = {c: str(ch.mechanism) for c, ch in declared_noise(p.algorithm.bind(p.problem), p.horizon).items()
                  if ch.mechanism is not None}
    from .coverage import shift_roundoff

    u = shifts_over_lemma(ctx, shifts, mechanisms, base_witness.get("agent"), shift_roundoff(runs.messages))
    if u is None:
        return None
    ratio = u.shift / u.bound if u.bound > 0 else float("inf")
    witness = {**base_witness, "kind": "sensitivity", "against": "lemma", **u.to_dict(), "value": u.shift,
               "claimed": u.bound, "ratio": ratio, "run_seed": runs.seeds[u.run],
               "runs": runs.runs, "method": "realized shift of the worst pair of the adjacency class (exact replay "
               "under both problems of its own engine runs)", "confidence": 1.0,
               "claim_form": ctx.form_name}
    reason = (f"worst case: {pair_desc}: on its engine run {u.run} (of {runs.runs}), {u.describe()}: the pair is in "
              "the paper's adjacency class, so its sensitivity lemma does not cover a pair it claims to "
              f"(ratio {ratio:.3g})")
    return witness, reason

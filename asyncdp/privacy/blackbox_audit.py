"""The black-box audit step: :func:`accounting.auditing.audit_samples` on the engine's transcripts of both scenarios.

``transcript_features`` turns one side's engine runs into the auditor's sample matrix; ``audit_blackbox``
learns an event on part of the runs and certifies a lower bound on epsilon (and delta) on the others.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.errors import AccountingError

from .context import CheckContext, ScenarioPair
from .evidence import Evidence

__all__ = ["audit_blackbox", "transcript_features"]


def transcript_features(ctx: CheckContext, side: int) -> np.ndarray:
    """The engine's transcripts of one side as a sample matrix for the black-box auditor.

    The changed agent's whole message sequence on every channel (every
    agent's under round adjacency, where every agent's input changes; the
    focus round only for a per-iteration claim), flattened per run, NaN
    where nothing was released. The other agents' messages carry the changed
    agent's data only through what they combined from it; leaving them out
    keeps the learned score's dimension, and its training time, down.

    Returns:
        ``(R, features)``.
    """
    runs = ctx.engine_runs(side)
    cols = []
    for arr in runs.messages.values():
        a = arr if ctx.focus is None else arr[:, ctx.focus:ctx.focus + 1]
        if ctx.changed_agent is not None:
            a = a[:, :, ctx.changed_agent]
        cols.append(a.reshape(a.shape[0], -1))
    return np.concatenate(cols, axis=1)


BLACKBOX_FIT_ROWS = 250
"""Rows per side that fit the black-box auditor's learned score (``max_train`` of
:func:`accounting.auditing.audit_samples`); the other runs choose the event and certify it. The fit is the
audit's cost, and it grew with ``--runs`` (a quarter of the runs); a score on at most a few hundred features
learns no better from more rows, while every row kept for certification tightens the bounds."""


def audit_blackbox(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """The black-box auditor on the engine's transcripts of both scenarios.

    :func:`accounting.auditing.audit_samples` learns an event from part of
    the runs of each side (:func:`transcript_features`; the score is fitted on
    at most :data:`BLACKBOX_FIT_ROWS` runs per side) and certifies a lower
    bound on epsilon (and on delta at the claimed epsilon) on the others, at
    level ``alpha_share``. Its candidate scores include the low-bits score
    (``low_bits=True``, :mod:`accounting.auditing.lowbits`): every other
    method models releases as real numbers, so a rule that writes its data
    into the last mantissa bits of its releases (one unit in the last place)
    is seen only here. The transcripts are float64 (the engines store
    messages so); a rule's float32 releases are read at their own lowest
    bits, NaN entries (nothing released) by their bit pattern, which is the
    same under both problems. Honest floating-point releases leak through
    their last bits too, far less (that module gives the numbers); a witness
    whose event is on the low-bits score is a leak of the releases as
    floats.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"black-box audit"`` (realized behavior) with figure
        ``empirical_epsilon_lower_bound``; witness ``{"kind": "blackbox", ...}``
        when the auditor refutes the claim; a doubt when the batch and SimPy engines released other values
        for the same seed on either side (``EngineRuns.disagreement`` of :mod:`asyncdp.privacy.behavior`: the
        runs every method read are then not the runs of both engines).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = audit_blackbox(*small_example())
        >>> e.witness is None and e.figures["empirical_epsilon_lower_bound"] <= 1.0
        True
    """
    from accounting.auditing import audit_samples

    a, b = transcript_features(ctx, 0), transcript_features(ctx, 1)
    # every method reads these runs: if the other engine runs another mechanism, none of them has seen it
    split = [f"{side} side: {d}" for side, d in (("scenario", ctx.engine_runs(0).disagreement),
                                                 ("adjacent", ctx.engine_runs(1).disagreement)) if d is not None]
    doubt = "; ".join(split) if split else None
    eps = ctx.epsilon_claimed if math.isfinite(ctx.epsilon_claimed) else 30.0  # no claim: any finite epsilon
    try:
        report = audit_samples(a, b, epsilon=eps, delta=ctx.delta_claimed, confidence=1.0 - ctx.options.alpha_share,
                               seed=ctx.options.seed, max_train=BLACKBOX_FIT_ROWS, low_bits=True)
    except AccountingError as exc:
        return Evidence("black-box audit", "realized behavior", {"empirical_epsilon_lower_bound": 0.0},
                        reasons=(f"no black-box audit: {exc}",) + tuple(split), doubt=doubt)
    figures = {"empirical_epsilon_lower_bound": float(report.epsilon_lower_bound),
               "blackbox_delta_lower_bound": report.delta_lower_bound}
    if not (report.violation and math.isfinite(ctx.epsilon_claimed)):
        return Evidence("black-box audit", "realized behavior", figures, reasons=tuple(split), doubt=doubt)
    witness = {"kind": "blackbox", "event": report.event, "counts": dict(report.counts), "method": report.method,
               "epsilon_lower_bound": float(report.epsilon_lower_bound), "seed": ctx.options.seed,
               "runs": ctx.options.runs, "claim_form": ctx.form_name}
    what = (f"epsilon >= {report.epsilon_lower_bound:.6g}" if report.epsilon_lower_bound > ctx.epsilon_claimed
            else f"delta(epsilon={ctx.epsilon_claimed:.6g}) >= {report.delta_lower_bound:.3g}")
    floats = ("; the event reads the releases' lowest mantissa bits: the released floating-point numbers "
              "leak what their real values need not (Mironov, CCS 2012)") if "low-bits" in str(report.event) else ""
    return Evidence("black-box audit", "realized behavior", figures, witness=witness, doubt=doubt,
                    reasons=(f"black-box ({report.method}): {what} with confidence {report.confidence:.6g} on the "
                             f"engine's transcripts (event: {report.event}){floats}",) + tuple(split))

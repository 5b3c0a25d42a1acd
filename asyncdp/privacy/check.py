"""The privacy check of a scenario pair, as a pipeline of steps: :func:`check_privacy`.

:func:`~asyncdp.privacy.context.prepare` checks adjacency and computes what
the steps share; each step of :data:`~asyncdp.privacy.steps.STEPS` returns
one :class:`~asyncdp.privacy.evidence.Evidence`;
:func:`~asyncdp.privacy.verdict.decide` combines them into the verdict; the
figures fill a :class:`~asyncdp.privacy.report.PrivacyCheckReport`.

This module was the whole checker before it was split by topic; every name
it had is still importable from here (re-exported from the modules that now
hold it: :mod:`.adjacency`, :mod:`.replay`, :mod:`.sensitivity`,
:mod:`.report`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..algorithms import registry as _papers
from ..scenario import Scenario
from .adjacency import (  # noqa: F401  (the old module path of the private helpers too)
    _check_same_setup,
    _online,
    _probe_points,
    _same_topology,
    find_changed_agent,
    find_changed_round,
)
from .context import CheckOptions, ScenarioPair, prepare
from .evidence import Evidence, _finite, find_figure  # noqa: F401
from .replay import (  # noqa: F401
    AlgorithmReplayRule,
    ReplayState,
    _mix_matrix,
    _replayable,
    replay_rule,
    replay_setup,
    transcript_array,
)
from .report import PrivacyCheckReport, _accountant_epsilon  # noqa: F401
from .sensitivity import independent_sensitivity, update_pair
from . import steps as _steps
from .steps import Step
from .verdict import decide



def _adapter(algorithm_name: str) -> Any:
    """The paper registry's adapter of ``algorithm_name`` (:func:`asyncdp.algorithms.registry.adapter`)."""
    return _papers.adapter(algorithm_name)


def _theorem_verdict(scenario: Scenario, alg: Any, eps_ledger: float, delta_ledger: float) -> str:
    """The paper registry's theorem check (:func:`asyncdp.algorithms.registry.theorem_verdict`)."""
    return _papers.theorem_verdict(scenario, alg, eps_ledger, delta_ledger)

__all__ = [
    "find_changed_agent",
    "find_changed_round",
    "ReplayState",
    "AlgorithmReplayRule",
    "replay_setup",
    "replay_rule",
    "transcript_array",
    "independent_sensitivity",
    "update_pair",
    "PrivacyCheckReport",
    "check_privacy",
]


def check_privacy(
    scenario: Scenario,
    adjacent: Scenario,
    *,
    runs: int = 2000,
    delta: float = 1e-6,
    confidence: float = 0.95,
    probe_rounds: int = 3,
    seed: int = 0,
    steps: Sequence[Step] | None = None,
) -> PrivacyCheckReport:
    """Check a scenario's privacy claim against an adjacent scenario, independently.

    The check is a pipeline: :func:`~asyncdp.privacy.context.prepare` (steps
    (1) and (2)'s run below), then each step of ``steps`` (default
    :data:`~asyncdp.privacy.steps.STEPS`: the three compositions, the
    per-iteration focus, the prober, exact replay, the black-box audit), each
    returning one :class:`~asyncdp.privacy.evidence.Evidence` (attached to the
    report as :attr:`~PrivacyCheckReport.evidence`), then
    :func:`~asyncdp.privacy.verdict.decide`.

    Steps: (1) the two scenarios must be adjacent: one agent's cost changed
    or, for online losses (:mod:`asyncdp.problems.online`), one round's loss changed
    (:func:`find_changed_round`). A changed round moves every agent's input,
    so every per-agent step below then covers all agents together: the
    ledger is composed network-wide, the prober perturbs the changed round's
    update at consensus points (:func:`update_pair` with ``agent=None``), and
    the black-box statistic uses every agent's messages;
    (2) one SimPy run gives the realized ledger; the accountant composes it
    per agent with its *own* sensitivity (:func:`independent_sensitivity`):
    basic composition at the claimed delta (``epsilon_ledger``; Gaussian
    releases need a delta > 0, so a pure-DP claim with Gaussian noise gets
    ``inf``), PLD at ``delta`` (``epsilon_tight``) and, for claims with
    delta > 0, PLD at the claimed delta (``epsilon_at_claimed_delta``). A
    round the algorithm declares with scale 0 is not in the ledger; if its
    independent sensitivity is > 0 the release is unprotected and every
    accountant epsilon is ``inf``. (3) The prober searches the changed agent's
    update for the largest ``||U(z; f) - U(z; f')||`` (L1 for Laplace, L2 for
    Gaussian noise) in the first ``probe_rounds`` rounds and compares it with
    the algorithm's claimed sensitivity; (4) when the run is replayable
    (lockstep, lossless), ``runs`` transcripts are sampled under ``scenario``
    and their exact privacy losses computed (:mod:`accounting.replay`; an
    unnoised release that differs between the problems has loss ``inf``), the
    PLRV auditor looks for losses above the claimed epsilon (pure claims) or
    a certified ``delta(epsilon)`` above the claimed delta; (5) the black-box
    auditor bounds epsilon from below on a scalar statistic (the changed
    agent's messages projected on the direction separating the two problems,
    estimated on a separate pilot sample).

    Per-iteration claims: when the algorithm's class sets ``claim_level =
    "iteration"`` (the paper bounds each round's release given the past and
    composes nothing), ``epsilon_ledger`` and ``epsilon_at_claimed_delta``
    refer to the single release with the largest sensitivity/scale, and the
    replay and black-box audits to that round; ``epsilon_tight`` still
    composes the whole run.

    Verdict: ``violation`` when a witness refutes the claim (a transcript with
    loss above epsilon, a probed sensitivity above the claim, or a black-box
    lower bound above epsilon); ``pass`` when none does and the accountant's
    own epsilon (the smaller of ``epsilon_ledger`` and
    ``epsilon_at_claimed_delta``) is within the claim; ``no-claim`` when none
    does and the claimed epsilon is infinite (e.g. a theorem whose condition
    the parameters miss: any run would "pass"); ``inconclusive`` otherwise.

    Args:
        scenario: the scenario whose claim is checked.
        adjacent: ``scenario`` with one agent's cost (or one round's loss) changed.
        runs: transcripts sampled for exact replay and the black-box audit (>= 1).
        delta: the delta of ``epsilon_tight`` (>= 0).
        confidence: confidence level of the statistical bounds, in (0, 1).
        probe_rounds: rounds whose update the prober searches (>= 0).
        seed: seed of the accountant's own sampling (>= 0).
        steps: the methods to run, in order (default :data:`~asyncdp.privacy.steps.STEPS`).

    Returns:
        The :class:`PrivacyCheckReport`.

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check), or
            an option is out of range (the message names it).
        NotImplementedError: no independent sensitivity for the algorithm.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, _ = small_example()
        >>> report = check_privacy(pair.scenario, pair.adjacent, runs=200)
        >>> report.verdict, [e.method for e in report.evidence][-1]
        ('pass', 'black-box audit')
    """
    pair = ScenarioPair(scenario, adjacent)
    ctx = prepare(pair, CheckOptions(runs=runs, delta=delta, confidence=confidence, probe_rounds=probe_rounds,
                                     seed=seed))
    evidence = [step(pair, ctx) for step in (_steps.STEPS if steps is None else steps)]
    decision = decide(evidence, ctx.epsilon_claimed)

    def figure(name: str, default: float) -> float:
        value = find_figure(evidence, name)
        return default if value is None else value

    eps_ledger = figure("epsilon_ledger", math.inf)
    eps_at_claimed = find_figure(evidence, "epsilon_at_claimed_delta")
    replay_max = find_figure(evidence, "replay_max_loss")
    return PrivacyCheckReport(
        algorithm=ctx.algorithm.name, changed_agent=ctx.changed_agent, epsilon_claimed=float(ctx.epsilon_claimed),
        delta_claimed=float(ctx.delta_claimed), epsilon_ledger=float(eps_ledger),
        epsilon_tight=float(figure("epsilon_tight", math.inf)), delta=float(delta),
        sensitivity_probe_max=float(figure("sensitivity_probe_max", 0.0)),
        sensitivity_probe_ratio=float(figure("sensitivity_probe_ratio", 0.0)),
        replay_max_loss=None if replay_max is None else float(replay_max),
        replay_exceed_fraction=find_figure(evidence, "replay_exceed_fraction"),
        replay_runs=int(figure("replay_runs", 0)),
        empirical_epsilon_lower_bound=float(figure("empirical_epsilon_lower_bound", 0.0)),
        confidence=float(confidence),
        theorem=_theorem_verdict(scenario, ctx.algorithm, eps_ledger, ctx.delta_claimed), verdict=decision.verdict,
        witness=decision.witness, reasons=list(decision.reasons),
        epsilon_at_claimed_delta=None if eps_at_claimed is None else float(eps_at_claimed),
        changed_round=ctx.changed_round,
    ).with_evidence(evidence)

"""The privacy check of a scenario pair, as a pipeline of steps: :func:`check_privacy`.

:func:`~asyncdp.privacy.context.prepare` checks adjacency and computes what
the steps share; each step of :data:`~asyncdp.privacy.steps.STEPS` returns
one :class:`~asyncdp.privacy.evidence.Evidence`;
:func:`~asyncdp.privacy.verdict.decide` combines them into the verdict; the
figures fill a :class:`~asyncdp.privacy.report.PrivacyCheckReport`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..scenario import Scenario
from . import steps as _steps
from .additivity import set_aside_not_additive
from .adjacency import adjacency_after_runs
from .context import CheckContext, CheckOptions, ScenarioPair, prepare
from .coverage import set_aside_outside_class
from .evidence import find_figure
from .report import PrivacyCheckReport
from .steps import Step
from .verdict import decide

__all__ = ["check_privacy", "sensitivity_source", "theorem_verdict"]


def sensitivity_source(ctx: CheckContext) -> str:
    """Where the check's independent sensitivity came from: the paper record and its origin, in one sentence.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> sensitivity_source(small_example()[1]).startswith("the lemma of the published paper 'huang2015'")
        True
    """
    if ctx.paper is None:
        return f"none: {ctx.no_sensitivity}"
    paper, origin = ctx.paper.paper, ctx.paper.origin
    ref = f" (reference: {paper.reference})" if paper.reference else " (no reference given)"
    if ctx.paper.published_for(ctx.algorithm):
        return f"the lemma of the published paper {paper.name!r}{ref}"
    if ctx.paper.published:
        return (f"the lemma of the published paper {paper.name!r}{ref}, inherited by the subclass "
                f"{type(ctx.algorithm).__name__} of its rule: the user's assumption that the subclass keeps it")
    return (f"the user's own lemma in paper record {paper.name!r} from {origin}, not a published paper's{ref}")


def theorem_verdict(scenario: Scenario, ctx: CheckContext, eps_ledger: float) -> str:
    """The paper record's claim check, as one line of the privacy report.

    Args:
        scenario: the scenario checked.
        ctx: the check's context (its paper record).
        eps_ledger: the accountant's epsilon of the run.

    Returns:
        The claim check's line, or why there is none; for a subclass of the paper's rule, the line says that the
        theorem is the paper's, for its own rule.

    Raises:
        PaperError: the record's claim check raises (naming the paper and the error).
        ScenarioError: the claim check rejects the scenario (passed through).
    """
    from ..errors import ScenarioError
    from ..papers import PaperError

    if ctx.paper is None:
        return f"no theorem check: {ctx.no_sensitivity}"
    paper = ctx.paper.paper
    check = paper.claim_check
    if check is None:
        return f"no theorem check: paper record {paper.name!r} has no claim_check"
    try:
        line = str(check(scenario, eps_ledger, ctx.delta_claimed))
    except ScenarioError:  # the check rejects the scenario (passed through, as the lemma's and the adjacency's)
        raise
    except Exception as exc:  # a user's claim check: report it as its fault, in one line
        raise PaperError(f"paper {paper.name!r}: the claim check raised {type(exc).__name__}: {exc}") from exc
    rule = type(ctx.algorithm)
    if rule in paper.rules:
        return line
    return (f"{line} (the theorem of paper {paper.name!r} for its rule; {rule.__name__} is a subclass of it, which it "
            "need not cover)")


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
    engine: str = "auto",
    search_examples: int = 30,
    script: str | None = None,
) -> PrivacyCheckReport:
    """Check a scenario's privacy claim against an adjacent scenario, on what the engine releases.

    The check is a pipeline: :func:`~asyncdp.privacy.context.prepare`, then
    each step of ``steps`` (default :data:`~asyncdp.privacy.steps.STEPS`),
    each returning one :class:`~asyncdp.privacy.evidence.Evidence` that says
    what it checked against (attached to the report as
    :attr:`~PrivacyCheckReport.evidence`), then :func:`~asyncdp.privacy.verdict.decide`.

    (1) The scenarios must be adjacent: one agent's cost changed or, for
    online losses (:mod:`asyncdp.problems.online`), one round's loss
    (:func:`find_changed_round`; every per-agent step below then covers all
    agents together). The changed agent is read from gradients at probe
    points and from the cost families' structure
    (:func:`~asyncdp.privacy.adjacency.check_adjacency`); another agent whose
    cost the structure cannot show unchanged (a user callable that is
    another object than the scenario's) is a doubt, reported as the first
    evidence (``"adjacency"``) whatever ``steps`` run: such a pair never
    passes; so does a pair that changed while the check ran (the adjacency
    is checked again after the steps, :func:`~asyncdp.privacy.adjacency.adjacency_after_runs`: a rule
    that rewrites a problem's private data runs on another pair). (2) *Declaration*: one run's ledger is composed with
    the accountant's own sensitivity (the paper record's lemma,
    :func:`~asyncdp.privacy.sensitivity.independent_sensitivity`; none
    exists for an algorithm without a record, and then nothing is
    composed): basic composition at the claimed delta (``epsilon_ledger``),
    PLD at ``delta`` (``epsilon_tight``) and PLD at the claimed delta. (3)
    *Constructed worst case*: the prober searches the changed agent's update
    for its largest change. (4) *Realized behavior*: the engine runs the
    scenario ``runs`` times (the batch engine where it applies, else SimPy;
    :mod:`asyncdp.privacy.behavior`); the accountant replays every run on
    its realized schedule with the algorithm's R and U steps only, tests the
    released noise against the declared noise (:mod:`accounting.conformance`)
    and computes each run's exact privacy loss (any timing, lossy links,
    several channels). (5) *Realized behavior*: the black-box auditor
    (:func:`accounting.auditing.audit_samples`) learns an event from the
    engine's transcripts of both scenarios. (6) *Constructed worst case*:
    extremal adjacent pairs of the paper's class and a batched search (draws, then a hill climb)
    (:mod:`asyncdp.privacy.worst_case`) on the realized schedules; the worst
    pair is reported as a runnable script.

    Per-iteration claims (``claim_level = "iteration"``): the bounds and the
    audits refer to the round with the largest sensitivity/scale.

    Verdict: ``violation`` when a witness refutes the claim (an under-noised
    release, a run whose loss exceeds epsilon, a certified delta above the
    claim, a probed sensitivity above the claim, a black-box lower bound, a
    constructed pair); ``pass`` when none does, the accountant's composed
    epsilon is within the claim and nothing doubts it (the released noise
    conforms to the declaration); ``no-claim`` for an infinite claimed
    epsilon; ``inconclusive`` otherwise. The statistical witnesses share
    ``1 - confidence`` (union bound): a correct claim is called a violation
    with probability at most ``1 - confidence``.

    Args:
        scenario: the scenario whose claim is checked.
        adjacent: ``scenario`` with one agent's cost (or one round's loss) changed.
        runs: engine runs per scenario (>= 1).
        delta: the delta of ``epsilon_tight`` (and of a Rényi or zCDP claim's conversion), in (0, 1).
        confidence: family-wise confidence of the statistical witnesses, in (0, 1).
        probe_rounds: rounds whose update the prober searches (>= 1).
        seed: the one seed of every draw of the check (>= 0).
        steps: the methods to run, in order (default :data:`~asyncdp.privacy.steps.STEPS`).
        engine: ``"auto"``, ``"batch"`` or ``"simpy"`` for the engine runs.
        search_examples: pairs drawn by the worst-case search before its hill climb (>= 0; 0: extremal pairs only).
        script: the scenario script's path (quoted by the worst pair's script).

    Returns:
        The :class:`PrivacyCheckReport`.

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check),
            an option is out of range (the message names it), or a scenario has
            its own noise source (``Scenario(noise=...)``: the check draws the
            noise itself, from the seed layout, and verifies every release).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, _ = small_example()
        >>> report = check_privacy(pair.scenario, pair.adjacent, runs=200, search_examples=5)
        >>> report.verdict, [e.checked_against for e in report.evidence][-4:]
        ('pass', ['realized behavior', 'realized behavior', 'realized behavior', 'constructed worst case'])
    """
    pair = ScenarioPair(scenario, adjacent)
    ctx = prepare(pair, CheckOptions(runs=runs, delta=delta, confidence=confidence, probe_rounds=probe_rounds,
                                     seed=seed, engine=engine, search_examples=search_examples,
                                     script=None if script is None else str(script)))
    evidence = set_aside_outside_class([step(pair, ctx) for step in (_steps.STEPS if steps is None else steps)])
    evidence = set_aside_not_additive(evidence, ctx.cache.get("additivity nonlinear"))
    # a doubt of the adjacency (an agent whose cost could not be shown unchanged) holds whatever the steps
    adjacency = None if ctx.adjacency is None else ctx.adjacency.evidence()
    if adjacency is not None:
        evidence.insert(0, adjacency)
    changed = adjacency_after_runs(scenario, adjacent, ctx.adjacency)
    if changed is not None:
        evidence.insert(0, changed)
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
        theorem=theorem_verdict(scenario, ctx, eps_ledger),
        verdict=decision.verdict,
        witness=decision.witness, reasons=list(decision.reasons),
        epsilon_at_claimed_delta=None if eps_at_claimed is None else float(eps_at_claimed),
        changed_round=ctx.changed_round, engine=find_figure(evidence, "engine"),
        conformance_min_scale_ratio=find_figure(evidence, "conformance_min_scale_ratio"),
        worst_case_loss=find_figure(evidence, "worst_case_loss"),
        worst_case_pair=find_figure(evidence, "worst_case_pair"),
        worst_case_runs=find_figure(evidence, "worst_case_runs"),
        worst_pair_script=find_figure(evidence, "worst_pair_script"),
        paper=None if ctx.paper is None else ctx.paper.paper.name,
        sensitivity_source=sensitivity_source(ctx),
        claim_form=None if ctx.claim_form is None else str(ctx.claim_form.form),
        claim=None if ctx.claim_form is None else ctx.claim_form.to_dict(),
    ).with_evidence(evidence)

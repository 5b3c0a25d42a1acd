"""The methods of the privacy check, one step each: ``step(pair, context) -> Evidence``.

:data:`STEPS` is the ordered tuple :func:`~asyncdp.privacy.check_privacy`
runs; adding a method means writing one more step and adding it there. The
order is the order of the report's reasons and of the witnesses (the first
witness is the report's).

=============================  ==========================  ==============================================
step                           checked against             figures
=============================  ==========================  ==============================================
:func:`compose_basic`          declaration                 ``epsilon_ledger`` (bound at the claimed delta)
:func:`compose_pld`            declaration                 ``epsilon_tight`` (PLD at the option ``delta``)
:func:`compose_pld_at_claim`   declaration                 ``epsilon_at_claimed_delta`` (bound)
:func:`focus_per_iteration`    declaration                 ``focus_round``
:func:`state_claim_form`       declaration                 ``claim_form``, ``claim_conversion``, ...
:func:`check_coverage`         realized behavior           ``coverage_max_ratio``, ``coverage_uncovered``
:func:`probe_update`           constructed worst case      ``sensitivity_probe_max``, ``..._ratio``
:func:`check_conformance`      realized behavior           ``conformance_tests``, ``..._min_scale_ratio``
:func:`replay_exactly`         realized behavior           ``replay_max_loss``, ``replay_exceed_fraction``,
                                                           ``replay_runs``
:func:`audit_blackbox`         realized behavior           ``empirical_epsilon_lower_bound``
:func:`search_worst_case`      constructed worst case      ``worst_case_loss``, ``worst_case_pair``,
                                                           ``worst_pair_script``
=============================  ==========================  ==============================================

The compositions compose the ledger of declared scales with the
accountant's own sensitivity (none for an algorithm without a paper record:
they then give no bound). The declared scales are not taken on trust: the
conformance test (``asyncdp.privacy.conformance``) checks the noise the
engine actually released against them, replay (``asyncdp.privacy.exact_replay``)
computes each engine run's exact loss on its realized schedule, and the
black-box audit (``asyncdp.privacy.blackbox_audit``) reads the engine's
transcripts of both scenarios. The prober and the worst-case search
(:mod:`asyncdp.privacy.worst_case`) look for the worst input they can
construct.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example()
    >>> [step(pair, ctx).method for step in STEPS][:3]
    ['basic composition', 'PLD', 'PLD at the claimed delta']
"""

from __future__ import annotations

import functools

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from accounting import composition, prober
from accounting.errors import AdjacencyError
from accounting.ledger import Ledger

from ..errors import ScenarioError
from ..algorithms.clipping import clip_l2
from ..problems.costs import LinearOverride
from .context import CheckContext, ScenarioPair, focus_rounds
from .coverage import EACH_CLASS_DOUBT, OUTSIDE_REFUSAL, check_coverage, class_outside_at, each_class_exceeded
from .evidence import Evidence
from .blackbox_audit import audit_blackbox
from .conformance import check_conformance
from .exact_replay import replay_exactly
from .sensitivity import message_pair, state_beyond_decision, state_follows_history, update_pair
from .candidate_pairs import extremal_pairs, pair_with_costs
from .worst_case import search_worst_case

__all__ = [
    "Step",
    "STEPS",
    "compose_basic",
    "compose_pld",
    "compose_pld_at_claim",
    "focus_per_iteration",
    "state_claim_form",
    "check_coverage",
    "probe_update",
    "check_conformance",
    "replay_exactly",
    "audit_blackbox",
    "search_worst_case",
]

Step = Callable[[ScenarioPair, CheckContext], Evidence]
"""A method of the check: the scenario pair and the shared context in, one :class:`Evidence` out."""

_PLD_INTERVAL = 1e-3
"""Value discretization interval of the PLD compositions."""


def claim_ledgers(ctx: CheckContext) -> tuple[tuple[int | None, int | None, Ledger], ...]:
    """The releases the claim must hold on, one ledger per scope: ``(agent, round, ledger)``.

    A claim bounds a change of *any* agent's cost, and agents may release
    differently (in unicast mode one noised copy per receiver, so an agent
    with more receivers releases more), so every agent's releases are a
    scope (``agent`` set, ``round`` ``None``), not only those of the agent
    the user's pair changes; under round adjacency the whole network's
    (``agent`` ``None``). A per-iteration claim (``claim_level =
    "iteration"``) bounds each round: each scope's undominated rounds
    (:func:`~asyncdp.privacy.context.focus_rounds`, ``round`` set).
    Computed once per check (kept in the context's cache).

    Args:
        ctx: the shared context (with the accountant's sensitivity).

    Returns:
        The scopes, by agent then round.

    Raises:
        ScenarioError: the accountant has no sensitivity for this algorithm.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> [(agent, t, len(led)) for agent, t, led in claim_ledgers(small_example()[1])]
        [(0, None, 5), (1, None, 5), (2, None, 5)]
    """
    key = "claim ledgers"
    if key not in ctx.cache:
        if ctx.sensitivity is None:
            raise ScenarioError(f"no independent sensitivity: {ctx.no_sensitivity}")
        sensitivity = ctx.release_sensitivity
        agents: list[int | None] = [None] if ctx.changed_agent is None else list(ctx.ledger.agents)
        out: list[tuple[int | None, int | None, Ledger]] = []
        for a in agents:
            if ctx.algorithm.claim_level == "iteration":
                out.extend((a, next(iter(led)).round, led) for led in focus_rounds(ctx.ledger, sensitivity, a)[1])
            else:
                out.append((a, None, ctx.ledger if a is None else ctx.ledger.for_agent(a)))
        ctx.cache[key] = tuple(out)
    return ctx.cache[key]


def _scope(agent: int | None, t: int | None) -> str:
    """One scope of :func:`claim_ledgers` in words."""
    who = "the network's releases" if agent is None else f"agent {agent}'s releases"
    return who if t is None else f"{who} in round {t}"


def compose_basic(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Basic composition of the realized ledger at the claimed delta, with the accountant's sensitivity.

    Per agent (network-wide under round adjacency). Gaussian releases with a
    pure-DP claim give ``inf`` (Gaussian noise is never pure DP); a round
    declared with scale 0 whose independent sensitivity is > 0 makes it
    ``inf`` (unprotected release). A per-iteration claim composes each
    agent's undominated rounds' releases (every channel and receiver;
    :func:`claim_ledgers`) and takes the largest.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"basic composition"`` with figure ``epsilon_ledger``, which is also its bound.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = compose_basic(*small_example())
        >>> e.checked_against, e.bound == e.figures["epsilon_ledger"] <= 1.0 + 1e-9
        ('declaration', True)
    """
    if ctx.sensitivity is None:
        return Evidence("basic composition", "declaration", {"epsilon_ledger": None}, reasons=(ctx.no_sensitivity,))
    reasons = []
    sensitivity = ctx.release_sensitivity
    gaussian = any(r.mechanism == "gaussian" and sensitivity(r) > 0 for r in ctx.ledger)
    if gaussian and ctx.delta_claimed == 0:
        eps = math.inf
        if math.isfinite(ctx.epsilon_claimed):  # (inf, 0) is no claim at all: no delta to speak of
            reasons.append("the ledger has Gaussian releases but the claim has delta = 0: Gaussian noise is never "
                           "pure DP")
    else:
        eps = max(composition.basic_composition_table(ctx.scopes(), sensitivity, ctx.delta_claimed))
    if ctx.unnoised:
        eps = math.inf
        sens = ctx.sensitivity
        reasons.append(f"round(s) {list(ctx.unnoised)} release a value of independent sensitivity "
                       f"{', '.join(f'{max(s[t - 1] for s in sens.values()):.6g}' for t in ctx.unnoised)} without "
                       "noise (declared scale 0): unbounded privacy loss")
    if ctx.algorithm.claim_level == "iteration" and math.isfinite(eps):
        # each agent's worst rounds' releases (every channel and receiver)
        eps = max(composition.basic_composition_table([led for _, _, led in claim_ledgers(ctx)], sensitivity,
                                                      ctx.delta_claimed))
    return Evidence("basic composition", "declaration", {"epsilon_ledger": float(eps)}, reasons=tuple(reasons),
                    bound=float(eps))


def compose_pld(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """PLD composition of the whole realized ledger at the option ``delta`` (the tight epsilon).

    Not a bound at the claimed delta (the option's delta may differ), so it
    does not enter the verdict; ``inf`` when a round is released unnoised.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"PLD"`` with figure ``epsilon_tight``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = compose_pld(*small_example())
        >>> e.bound is None and e.figures["epsilon_tight"] > 0
        True
    """
    if ctx.sensitivity is None:
        return Evidence("PLD", "declaration", {"epsilon_tight": None})
    eps = ctx.pld_epsilon(ctx.options.delta, _PLD_INTERVAL)  # composed once, read here and at the claimed delta
    if ctx.unnoised:
        eps = math.inf
    return Evidence("PLD", "declaration", {"epsilon_tight": float(eps)})


def compose_pld_at_claim(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """PLD composition of the realized ledger at the claimed delta (claims with delta > 0 only).

    A per-iteration claim composes each agent's undominated rounds' releases
    (every channel and receiver; :func:`claim_ledgers`) and takes the largest; ``inf``
    when a round is released unnoised.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"PLD at the claimed delta"`` with figures
        ``epsilon_at_claimed_delta`` (``None`` for a pure-DP claim, which
        then gives no bound) and ``delta_claimed``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> compose_pld_at_claim(*small_example()).figures["epsilon_at_claimed_delta"] is None  # pure claim
        True
    """
    eps: float | None = None
    if ctx.delta_claimed > 0 and ctx.sensitivity is not None:
        eps = ctx.pld_epsilon(ctx.delta_claimed, _PLD_INTERVAL)  # the PLD compose_pld composed
        if ctx.unnoised:
            eps = math.inf
        elif ctx.algorithm.claim_level == "iteration" and math.isfinite(eps):
            # each agent's worst rounds' releases; rounds with the same ratios share one composition
            ledgers = [led for _, _, led in claim_ledgers(ctx)]
            eps = max(row[0] for row in composition.pld_epsilon_table(ledgers, ctx.release_sensitivity,
                                                                        [ctx.delta_claimed], _PLD_INTERVAL))
    value = None if eps is None else float(eps)
    return Evidence("PLD at the claimed delta", "declaration",
                    {"epsilon_at_claimed_delta": value, "delta_claimed": float(ctx.delta_claimed)}, bound=value)


def focus_per_iteration(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """A per-iteration claim (class attribute ``claim_level = "iteration"``): which round the audits refer to.

    The claim bounds each round's release given the past, not the run, so
    the accountant's epsilon and the audits refer to the round with the
    largest sensitivity/scale (:attr:`CheckContext.focus`).

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"per-iteration focus"`` with figure ``focus_round``
        (1-based; ``None`` for a claim over the run).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> focus_per_iteration(*small_example()).figures["focus_round"] is None  # huang2015 claims the run
        True
    """
    if ctx.focus is None:
        return Evidence("per-iteration focus", "declaration", {"focus_round": None})
    return Evidence("per-iteration focus", "declaration", {"focus_round": ctx.focus + 1},
                    reasons=(f"per-iteration claim: epsilon_ledger and the audits refer to round {ctx.focus + 1} "
                             "(largest sensitivity/scale); epsilon_tight composes the whole run",))


def state_claim_form(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Name the claim's form, its conversion to ``(epsilon, delta)`` and what ``--delta`` means for it.

    A Rényi ``(alpha, epsilon)`` or ``rho``-zCDP claim (a rule's optional
    ``claimed_form(horizon)`` returns an :mod:`accounting.claim_forms` form) is
    checked through its ``(epsilon, delta)`` conversion at the check's
    ``delta`` (:func:`~asyncdp.privacy.context.claimed`): a witness against
    the conversion refutes the claim. The converse does not hold, so such a
    claim passes only if the accountant's own Rényi/zCDP composition of the
    realized ledger with its own sensitivity confirms it
    (:func:`accounting.renyi.accountant_confirms_all`) for a change of every
    agent, not only the one the user's pair changes (each agent's releases,
    or each of its undominated rounds for a per-iteration claim:
    :func:`claim_ledgers`); otherwise that is a doubt naming the agent.
    Amplification by subsampling is out of scope.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"claim form"`` (declaration) with figures ``claim_form``,
        ``claim``, ``claim_conversion``, ``delta_meaning``, ``claim_scope`` and
        ``claim_confirmed`` (Rényi/zCDP only; ``None`` otherwise).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = state_claim_form(*small_example())
        >>> e.figures["claim_form"], e.doubt is None
        ('pure', True)
    """
    from accounting.claim_forms import SUBSAMPLING_NOTE

    form = ctx.claim_form
    figures: dict[str, Any] = {"claim_form": None if form is None else form.form,
                               "claim": None if form is None else form.to_dict(),
                               "claim_conversion": None, "delta_meaning": None if form is None else form.delta_meaning,
                               "claim_scope": SUBSAMPLING_NOTE, "claim_confirmed": None}
    if form is None or form.form in ("pure", "approximate"):
        return Evidence("claim form", "declaration", figures)
    conv = (f"{form.describe()} implies ({ctx.epsilon_claimed:.6g}, {ctx.delta_claimed:.3g})-DP at the check's delta "
            "(--delta); the checks below test that conversion")
    figures["claim_conversion"] = conv
    reasons = [f"claim form: {conv}"]
    doubt = None
    if ctx.sensitivity is None:
        doubt = f"the {form.form} claim cannot be confirmed: {ctx.no_sensitivity}"
    else:
        from accounting.renyi import accountant_confirms_all

        # every agent's releases (a claim covers a change of any agent's cost; a per-iteration claim: each of their
        # undominated rounds, all channels and receivers), the worst one
        scopes = claim_ledgers(ctx)
        k, conf = accountant_confirms_all(form, [led for _, _, led in scopes], ctx.release_sensitivity)
        where = _scope(*scopes[k][:2])
        figures["claim_confirmed"] = bool(conf.confirmed)
        reasons.append(f"claim form: on {where} (the worst of {len(scopes)} scope(s)), {conf.reason}")
        if not conf.confirmed:
            doubt = (f"the accountant's own {conf.method} of {where} ({conf.accountant:.6g}) does not confirm the "
                     f"{form.form} claim ({conf.claimed:.6g}): passing its (epsilon, delta) conversion would not "
                     "imply it")
    if doubt is not None:
        reasons.append(doubt)
    return Evidence("claim form", "declaration", figures, reasons=tuple(reasons), doubt=doubt)


def _class_probe(pair: ScenarioPair, ctx: CheckContext, cls: Any, build: Any, z: Any, seed: int,
                 claimed: float | None, over: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """The prober's step on pairs of the class, the first that ``over`` accepts, or ``None`` (no class of bounded
    gradients, ``kind="each"``, or no pair over): the changed agent's linear costs ``<g, x>`` against ``<g', x>``,
    each gradient of norm at most ``C``: ``g = -g'`` of norm ``C`` along the user's pair's gradient difference at
    ``z``; the user's pair's two gradients at ``z`` clipped to ``C`` (what a clipping rule reads there); and the
    worst-case search's directions (:func:`~asyncdp.privacy.candidate_pairs.extremal_pairs`: coordinates, diagonals);
    all probed at once.

    Where the user's pair moved a release beyond a bound only at inputs where its gradients exceed ``C``, a rule
    that does not clip is not covered there; a move beyond the bound on one of these pairs is evidence against the
    bound whatever the rule does with larger gradients. The clipped pair meets a rule that moves a release further
    only for some gradients' directions (one the prober found on the user's pair), the search's directions a rule
    that stretches one direction of its clipped gradient.

    Returns:
        ``(description of the pair, the probe's result)``.
    """
    agent = ctx.changed_agent
    d = pair.scenario.problem.dim
    point = np.asarray(z, dtype=float)
    if agent is None or cls is None or getattr(cls, "kind", None) != "each" or point.size != d:
        return None
    bound = float(cls.bound)
    g = np.asarray(pair.scenario.problem.costs.gradient(agent, point.reshape(1, d)), dtype=float).ravel()
    g2 = np.asarray(pair.adjacent.problem.costs.gradient(agent, point.reshape(1, d)), dtype=float).ravel()
    size = float(np.linalg.norm(g - g2))
    shapes = [("along the pair's gradient difference", bound * (g - g2) / size, -bound * (g - g2) / size)] if (
        np.isfinite(size) and size > 0.0) else []
    if np.all(np.isfinite(g)) and np.all(np.isfinite(g2)):
        shapes.append(("the pair's gradients clipped", clip_l2(g, bound), clip_l2(g2, bound)))
    shapes += extremal_pairs(pair.scenario, agent)
    norm = "l2" if any(c.mechanism == "gaussian" and c.name == build.keywords["channel"]
                       for c in ctx.algorithm.noisy_channels()) else "l1"
    requests = []
    for _, u, v in shapes:
        p, q = pair_with_costs(pair.scenario, lambda costs, member: LinearOverride(costs, agent, member), u, v)
        requests.append(prober.ProbeRequest(build(p, q, agent), samples=400, seed=seed, norm=norm,
                                            claimed=claimed if claimed else None))
    for (label, u, v), res in zip(shapes, prober.probe_many(requests) if requests else []):
        if over(res):
            what = ", ".join(np.array2string(w, precision=4, separator=", ") for w in (u, v))
            return f"the class's pair ({label}): agent {agent}'s cost <g, x> against <g', x>, g, g' = {what}", res
    return None


def probe_update(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Search each noisy channel's releases for their largest change; compare it with the declaration and the lemma.

    :func:`accounting.prober.probe_sensitivity` on every step through which
    private data enters a release, per noisy channel, in the first
    ``probe_rounds`` rounds (round adjacency: the changed round only): the
    message step R (:func:`message_pair`; round ``t``'s release) and the
    update step U (:func:`update_pair`; the update of round ``t`` is masked
    by the release of round ``t + 1``); L1 for Laplace, L2 for Gaussian noise.
    All these probes run as one (:func:`accounting.prober.probe_many`: one
    search loop for all of them, each probe's result exactly its own). The
    largest change found is compared with two bounds, each a witness when
    exceeded (a rule whose state keeps more than its decision,
    :func:`~asyncdp.privacy.sensitivity.state_beyond_decision`, is probed in
    round ``t`` from its state after ``t - 1`` noise-free rounds, and also
    from ``initial_state(z)`` when that state follows the releases,
    :func:`~asyncdp.privacy.sensitivity.state_follows_history`): the rule's
    own declared sensitivity of that release (its
    ``noise()``), and the paper record's lemma (an independent bound the
    accountant composes with; under round adjacency, the sum of the lemma
    over the agents' releases, since the probed value is the sum of their
    changes). The lemma is compared only when the record declares an
    adjacency class of the kind "every gradient bounded by ``C``" (the pairs
    the lemma covers, which the worst-case search also draws from, and which
    contain the user's pair); a lemma stated for a narrower adjacency (e.g. a
    bounded gradient *difference*) need not cover the user's pair, and the
    reasons say so.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"sensitivity prober"`` with figures ``sensitivity_probe_max``,
        ``sensitivity_probe_ratio`` (largest ratio to a positive declared
        sensitivity) and ``sensitivity_probe_lemma_ratio`` (to the lemma;
        ``None`` without a paper record); witness ``{"kind": "sensitivity",
        "against": "declaration" | "lemma", "step", "round", "release_round",
        "method", "confidence", "claim_form", ...}`` for the first probed step
        that moves a release more than a bound. Under a class of bounded
        gradients (``kind="each"``) a move found at an input where the user's
        pair's gradients exceed the class's bound is not a witness (a rule
        that does not clip is not covered there): the same step is probed on
        linear pairs of the class (``_class_probe``; the witness then names
        the pair in ``"pair"``), and when none moves a release past the
        bound the evidence is a doubt.

    Raises:
        AdjacencyError: the pair lies outside its paper's relation class at a point a probe found, one that moves
            a release past the rule's declaration (no witness against the claim) or, when none does, any probe's
            (no ``pass``; :func:`_refuse_outside_class`).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = probe_update(*small_example())
        >>> e.checked_against, e.witness is None, e.figures["sensitivity_probe_lemma_ratio"] <= 1
        ('constructed worst case', True, True)
    """
    scenario, adjacent = pair.scenario, pair.adjacent
    from .candidate_pairs import adjacency_class

    probe_max, probe_ratio = 0.0, 0.0
    cls = adjacency_class(scenario) if ctx.sensitivity is not None else None
    # the user's pair is in a class "every gradient bounded by C" whenever the problem meets its declared
    # constants (or the rule clips); a class of gradient differences need not contain it
    lemma = ctx.sensitivity if cls is not None and cls.kind == "each" else None
    lemma_ratio: float | None = None if lemma is None else 0.0
    witness: dict[str, Any] | None = None
    reasons = []
    if ctx.changed_agent is not None:
        probed: Any = range(1, min(ctx.options.probe_rounds, scenario.horizon - 1) + 1)
        copies = 1
    else:  # only round t0's update differs; every agent's release moves
        probed = [ctx.changed_round] if ctx.changed_round < scenario.horizon else []
        copies = scenario.problem.num_agents
    beyond = state_beyond_decision(scenario, ctx.changed_agent, max(probed, default=1))
    history = None if beyond is None else state_follows_history(scenario, ctx.changed_agent,
                                                                 max(probed, default=1))
    # warm (True): round t from t - 1 noise-free rounds; cold (False): from initial_state(z). Warm alone only
    # when it is every state of round t (a counter); with a state that follows the releases both are probed:
    # initial_state(z)'s may be a reachable state the noise-free rounds never visit
    starts = (False,) if beyond is None else (True,) if history is None else (True, False)
    if beyond is not None:
        reasons.append(f"prober: {beyond}; round t is probed from the state of t - 1 noise-free consensus rounds "
                       "from initial_state(z) (the same on both sides: changes carried from earlier rounds are "
                       "left to exact replay, sensitivity coverage and the worst-case search)"
                       + ("" if history is None else f", and from initial_state(z) too: {history}"))
    # every channel's, round's and step's probe, refined together (one search loop for all of them)
    probes: list[tuple[Any, int, int, str, float, Any]] = []
    requests: list[prober.ProbeRequest] = []
    for channel in ctx.algorithm.noisy_channels():
        norm = "l2" if channel.mechanism == "gaussian" else "l1"
        # (release round, round of the probed step, step, pair): the update U of round t is masked by release
        # t + 1; the message step R of round t (data entering the release directly) by release t
        for t, warm in ((t, warm) for t in probed for warm in starts):
            start = "" if len(starts) == 1 else (" (from noise-free rounds)" if warm else " (from initial_state(z))")
            steps = [(t, "message step R" + start, functools.partial(message_pair, t=t, channel=channel.name,
                                                                      warm=warm))]
            if t < scenario.horizon:
                steps.append((t + 1, "update step U" + start,
                               functools.partial(update_pair, t=t, channel=channel.name, warm=warm)))
            for release, step, build in steps:
                claimed = ctx.algorithm.noise(release, channel.name).claimed_sensitivity
                probes.append((channel, release, t, step, claimed, build))
                requests.append(prober.ProbeRequest(build(scenario, adjacent, ctx.changed_agent), samples=400,
                                                    seed=ctx.options.seed + t, norm=norm,
                                                    claimed=claimed if claimed > 0 else None))
    results = prober.probe_many(requests)
    _refuse_outside_class(pair, ctx, probes, results)
    doubt: str | None = None  # a move on the user's pair where its gradients exceed a bounded-gradient class

    def outside_each(z: Any) -> str | None:
        return each_class_exceeded(pair, ctx, z, "the probe's input")

    for (channel, release, t, step, claimed, build), res in zip(probes, results):
        probe_max = max(probe_max, res.max_found)
        if claimed > 0:
            probe_ratio = max(probe_ratio, res.ratio_to_claim)
        found = {"kind": "sensitivity", "round": t, "release_round": release, "step": step,
                 "channel": channel.name, "z": res.witness_z.tolist(), "value": res.max_found,
                 "method": "sensitivity prober (constructed input)", "confidence": 1.0,
                 "claim_form": ctx.form_name}
        if res.violation and witness is None:
            outside = outside_each(res.witness_z)
            if outside is not None:  # the same step on pairs of the class (_class_probe)
                again = _class_probe(pair, ctx, cls, build, res.witness_z, ctx.options.seed + t, claimed,
                                     lambda r: bool(r.violation))
                if again is not None:
                    found, outside = {**found, "z": again[1].witness_z.tolist(), "value": again[1].max_found,
                                      "pair": again[0]}, None
            if outside is None:
                witness = {**found, "claimed": claimed, "against": "declaration"}
            if outside is None or doubt is None:  # the witness, or the first doubt: one line
                reasons.append(f"round {t}: the {step} moves channel {channel.name!r} by {res.max_found:.6g} > the "
                               f"rule's declared sensitivity {claimed:.6g}"
                               + ("" if outside is None else f", but {outside}"))
            doubt = doubt or outside
        if lemma is not None:
            bound = copies * float(lemma[channel.name][release - 1])  # release of every changed agent
            if bound > 0:
                lemma_ratio = max(lemma_ratio or 0.0, res.max_found / bound)
            if res.exceeds(bound) and witness is None:
                outside = outside_each(res.witness_z)
                if outside is not None:
                    again = _class_probe(pair, ctx, cls, build, res.witness_z, ctx.options.seed + t, None,
                                         lambda r, b=bound: r.exceeds(b))
                    if again is not None:
                        found, outside = {**found, "z": again[1].witness_z.tolist(), "value": again[1].max_found,
                                          "pair": again[0]}, None
                if outside is None:
                    witness = {**found, "claimed": bound, "against": "lemma"}
                if outside is None or doubt is None:
                    reasons.append(f"round {t}: the {step} moves channel {channel.name!r} by {res.max_found:.6g} > "
                                   f"the sensitivity lemma's {bound:.6g} ({_lemma_origin(ctx)})"
                                   + ("" if outside is None else f", but {outside}"))
                doubt = doubt or outside
    if ctx.sensitivity is not None and lemma is None:
        reasons.append("prober: not compared with the sensitivity lemma: the paper record declares no adjacency "
                       "class of bounded gradients that contains this pair")
    return Evidence("sensitivity prober", "constructed worst case",
                    {"sensitivity_probe_max": float(probe_max), "sensitivity_probe_ratio": float(probe_ratio),
                     "sensitivity_probe_lemma_ratio": lemma_ratio},
                    witness=witness, reasons=tuple(reasons),
                    doubt=None if witness is not None or doubt is None else f"prober: {doubt}{EACH_CLASS_DOUBT}")


def _refuse_outside_class(pair: ScenarioPair, ctx: CheckContext, probes: list[tuple[Any, int, int, str, float, Any]],
                          results: list[prober.ProbeResult]) -> None:
    """Refuse a pair that breaks its paper's relation (a class of ``kind="difference"`` or the record's ``relation``,
    :func:`~asyncdp.privacy.coverage.class_outside_at`) at a point a probe found (``z`` or its projection onto the
    domain).

    The declared sensitivity speaks of pairs in the class; a pair whose two gradients differ by more than the
    class allows where the probe found an excess moves that release further without refuting anything (e.g. Wang
    and Basar, Automatica 2023, eq. 30: a difference of 3 in L1 where the class allows 1 moves the message by
    ``3 lam^t``). The probes that found an excess are read first: one at a point inside the class stays a witness.
    When none did, a pair outside the class at any probe's point is refused too: it is never ``pass``.

    Raises:
        AdjacencyError: naming the class, the agent, the point, the step, the round and the change.
    """
    if ctx.changed_agent is None:
        return
    domain = pair.scenario.problem.domain
    excess = [k for k, res in enumerate(results) if res.violation]
    for k in excess or range(len(results)):
        (channel, _release, t, step, claimed, _build), res = probes[k], results[k]
        z = np.asarray(res.witness_z, dtype=float).reshape(1, -1)
        pts = np.concatenate([z, np.asarray(domain.project(z), dtype=float)])
        outside = class_outside_at(pair, ctx, pts, f"the point the prober found for the {step} of round {t}")
        if outside is None:
            continue
        moved = (f"> the rule's declared sensitivity {claimed:.6g}" if res.violation
                 else f"(within the rule's declared sensitivity {claimed:.6g}, no pass)")
        raise AdjacencyError(f"{outside}; there the {step} moves channel {channel.name!r} by {res.max_found:.6g} "
                             f"{moved}{OUTSIDE_REFUSAL}")


def _lemma_origin(ctx: CheckContext) -> str:
    from .search_evidence import _origin

    return _origin(ctx)


STEPS: tuple[Step, ...] = (
    compose_basic,
    compose_pld,
    compose_pld_at_claim,
    focus_per_iteration,
    state_claim_form,
    check_coverage,
    probe_update,
    check_conformance,
    replay_exactly,
    audit_blackbox,
    search_worst_case,
)
"""The methods :func:`~asyncdp.privacy.check_privacy` runs, in order (reasons and witnesses follow this order)."""

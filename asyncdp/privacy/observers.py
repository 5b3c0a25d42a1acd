"""Observers of a run and what each one learns: the asyncdp side of pairwise network DP.

Observers (text form, as on the command line ``--observer``):

* ``eavesdropper`` (the default): every released message; it knows no data and no noise;
* ``node:v``: every message *delivered* to ``v``: those it combines (the
  realized schedule's entries with receiver ``v``) and those it receives
  without combining them (after its deadline, or superseded by a fresher
  copy; read from the run's transcript, :func:`delivered_messages`), plus
  ``v``'s own data, noise and state: ``v`` knows them, so its view is
  conditioned on them;
* ``nodes:a,b,...``: a colluding set (the union of its members' views and knowledge);
* ``link:a,b``: the messages delivered across the link between ``a`` and ``b``, in both directions.

Every observer also sees the schedule (who combined what, when), which the
engines draw from link and clock randomness only, never from data or noise.

The exact losses come from :mod:`accounting.network` (the accountant's
model of a linear Gaussian protocol); this module turns an engine run into
that model and *verifies* the model on the run:

* :func:`linear_schedule`: a run's :class:`~asyncdp.engine.schedule.RealizedSchedule`
  plus the rule's declared structure (its noise scales and, for rules that
  keep older own messages, :meth:`self_lag_weight`) as an
  :class:`accounting.network.LinearSchedule` (a rule declares ``affine_in_noise``, ``mixing_factor(t)``:
  the factor on the engine's mix, and ``self_lag_weight(t)``: the weight on its own message of round
  ``t - 1``);
* :func:`verify_affine`: the rule's declaration (``affine_in_noise``) checked
  on the replay: the first round's messages respond linearly to the noise with
  the declared scale, every released message equals the previous state plus
  the declared noise, and every state equals the schedule's combination of
  released messages (to rounding). A rule that fails is not treated as
  affine: its pairwise figures are bounds, never exact values;
* :func:`observed_transcript`: the run's released messages filtered to what
  an observer saw (``NaN`` elsewhere);
* :func:`pairwise_figures`: the exact pairwise loss of every source to an
  observer on the run's realized schedule (or averaged over several runs'
  schedules), labelled exact / lower estimate / upper bound.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> sc = Muffliato.example_scenario()
    >>> fig = pairwise_figures(sc, "node:5", sources=[0, 4])
    >>> [(r.source, r.kind) for r in fig.rows]
    [(0, 'exact'), (4, 'exact')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.claim_forms import ZeroConcentratedDP
from accounting.errors import AccountingError
from accounting.network import LinearSchedule, Observer, combine_renyi, pairwise_losses

from ..errors import ScenarioError

__all__ = ["parse_observer", "is_declared_affine", "linear_schedule", "AffineCheck", "verify_affine",
           "ObservedTranscript", "observed_transcript", "PairwiseRow", "PairwiseFigures", "pairwise_figures",
           "epsilon_from_mu", "eavesdropper_renyi_bound", "affine_renyi_bound", "above_affine_bound", "rounded_to_bound", "observer_blackbox", "NODE_KNOWLEDGE",
           "run_for_views", "delivered_messages", "probe_scenarios", "verify_affine_probed", "affinity_tolerance"]

NODE_KNOWLEDGE = ("a node observer knows its own data, its own noise and its own state, and sees every message "
                  "delivered to it (combined or not: late and superseded copies too), and the schedule")
"""What ``node:v`` (and each member of ``nodes:S``) is assumed to know, quoted by reports."""


def parse_observer(text: str | Observer, num_agents: int | None = None) -> Observer:
    """``eavesdropper``, ``node:v``, ``nodes:a,b,...`` or ``link:a,b`` as an :class:`accounting.network.Observer`.

    Args:
        text: the observer's text (or an ``Observer``, returned checked).
        num_agents: if given, every named agent must be below it.

    Returns:
        The observer.

    Raises:
        ScenarioError: unparsable text or an agent out of range (naming the observer and the agent).

    Example:
        >>> str(parse_observer("node:3", 6)), str(parse_observer("eavesdropper"))
        ('node:3', 'eavesdropper')
    """
    if isinstance(text, Observer):
        obs = text
    else:
        if not isinstance(text, str):
            raise ScenarioError(f"observer must be text such as 'node:3', got {text!r}")
        try:
            obs = Observer.parse(text)
        except AccountingError as exc:
            raise ScenarioError(f"observer {text!r}: {exc}") from None
    if num_agents is not None:
        bad = [a for a in obs.agents if a >= num_agents]
        if bad:
            raise ScenarioError(f"observer {str(obs)!r}: agent {bad[0]} does not exist (agents are 0..{num_agents - 1})")
    return obs


def is_declared_affine(algorithm: Any) -> bool:
    """Whether the rule declares its messages affine in (data, noise) on the realized schedule.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> is_declared_affine(Huang2015(epsilon=1.0, c=0.2, q=0.8, p=0.9))
        False
    """
    return bool(getattr(algorithm, "affine_in_noise", False)) and hasattr(algorithm, "self_lag_weight") \
        and hasattr(algorithm, "mixing_factor")


def _only_channel(algorithm: Any) -> str:
    noisy = [c.name for c in algorithm.noisy_channels()]
    if len(algorithm.channels) != 1 or len(noisy) != 1:
        raise ScenarioError(f"rule {algorithm.name!r}: the linear model needs exactly one (noisy) channel, "
                            f"got {[c.name for c in algorithm.channels]}")
    return noisy[0]


def _round_entries(rs: Any, alg: Any) -> list[np.ndarray]:
    """The engine's combination entries (weights times the rule's ``mixing_factor(t)``) plus the rule's
    self-lag entries: (round, receiver, sender, weight, sender_round) columns, in each agent's own round
    numbering."""
    n, horizon = rs.num_agents, rs.horizon
    rounds = np.asarray(rs.round, dtype=np.int64)
    factor = np.array([1.0] + [float(alg.mixing_factor(t)) for t in range(1, horizon + 1)])
    cols = [rounds, np.asarray(rs.receiver, dtype=np.int64),
            np.asarray(rs.sender, dtype=np.int64), np.asarray(rs.weight, dtype=float) * factor[rounds],
            np.asarray(rs.sender_round, dtype=np.int64)]
    extra: list[list[np.ndarray]] = [[], [], [], [], []]
    for t in range(2, horizon + 1):
        c = float(alg.self_lag_weight(t))
        if c != 0.0:
            for part, vals in zip(extra, (np.full(n, t), np.arange(n), np.arange(n), np.full(n, c), np.full(n, t - 1))):
                part.append(vals)
    if extra[0]:
        cols = [np.concatenate([c, *e]).astype(c.dtype) for c, e in zip(cols, extra)]
    return cols


def _global_steps(n: int, horizon: int, times: Any) -> tuple[np.ndarray, np.ndarray]:
    """``step[r, j]``: the global step of agent ``j``'s round-``r`` combination (0 for ``r = 0``), and
    ``release[r - 1, j]``: the step of its round-``r`` message (see :func:`_event_ordered`)."""
    agent_grid, round_grid = np.meshgrid(np.arange(n), np.arange(1, horizon + 1))
    order = np.lexsort((agent_grid.ravel(), round_grid.ravel(), np.asarray(times, dtype=float)[1:].ravel()))
    step = np.zeros((horizon + 1, n), dtype=np.int64)
    step[round_grid.ravel()[order], agent_grid.ravel()[order]] = np.arange(1, n * horizon + 1)
    return step, step[:-1] + 1


def _event_ordered(rs: Any, scales: np.ndarray, cols: list[np.ndarray], times: np.ndarray) -> LinearSchedule:
    """Re-index an asynchronous run into global steps, one combination per step, in simulated-time order.

    Under asynchronous timing an agent's round ``t`` may use a sender's message of a later round (the
    sender is ahead), so the per-agent round numbers are not a global order. Step ``k`` is the ``k``-th
    combination of the run (ordered by completion time, then round, then agent); agent ``j``'s message of
    its round ``r`` is released at the step after its round ``r - 1`` combination (step 1 for ``r = 1``)
    with the declared scale of round ``r``; agents that do not combine at a step keep their state
    (``state_weight`` 1). Their copies of the state at other steps are functions of released messages for
    rules whose states are combinations of released messages (verified by :func:`verify_affine`), so an
    eavesdropper's extra rows change nothing; node and link observers only see combined messages.
    """
    n, horizon = rs.num_agents, rs.horizon
    step, release = _global_steps(n, horizon, times)
    k_total = n * horizon
    noise = np.zeros((k_total, n))
    for r in range(1, horizon + 1):
        noise[release[r - 1] - 1, np.arange(n)] = scales[r - 1]
    state_weight = np.ones((k_total, n))
    state_weight[step[1:].ravel() - 1, np.tile(np.arange(n), horizon)] = 0.0
    rnd, recv, send, w, srnd = cols
    return LinearSchedule(n, noise, step[rnd, recv], recv, send, w, release[srnd - 1, send], state_weight)


def linear_schedule(result: Any, scenario: Any) -> LinearSchedule:
    """The run's realized schedule as the accountant's :class:`~accounting.network.LinearSchedule`.

    Entries are the engine's combinations (receiver, sender, weight actually applied, the sender's round);
    the rule scales the round-``t`` mix by ``mixing_factor(t)`` and adds a self entry of weight
    ``self_lag_weight(t)`` on its own message of round ``t - 1``;
    the noise scales are the rule's declared ones (every agent, every round). When some combination uses
    a message of a later round (asynchronous timing), the run is re-indexed in simulated-time order
    (:func:`_event_ordered`). The model is checked against the run by :func:`verify_affine`.

    Args:
        result: a :class:`~asyncdp.result.Result` with a recorded schedule.
        scenario: its scenario (rule declaring ``affine_in_noise``).

    Returns:
        The :class:`~accounting.network.LinearSchedule`.

    Raises:
        ScenarioError: no recorded schedule, or a rule that does not declare the linear structure.
    """
    rs = getattr(result, "schedule", None)
    if rs is None:
        raise ScenarioError("the run recorded no realized schedule; record the transcript to get one")
    alg = scenario.algorithm.bind(scenario.problem)
    if not is_declared_affine(alg):
        raise ScenarioError(f"rule {alg.name!r} does not declare affine_in_noise, mixing_factor(t) and self_lag_weight(t): its "
                            "messages have no linear Gaussian model")
    channel = _only_channel(alg)
    n, horizon = rs.num_agents, rs.horizon
    scales = np.array([[alg.noise(t, channel).scale] * n for t in range(1, horizon + 1)], dtype=float)
    cols = _round_entries(rs, alg)
    if (cols[4] > cols[0]).any():
        return _event_ordered(rs, scales, cols, result.times)
    return LinearSchedule(n, scales, *cols)


@dataclass(frozen=True)
class AffineCheck:
    """The outcome of :func:`verify_affine`.

    Attributes:
        ok: the run matched the linear model.
        reason: why not (naming the round and agent), or what was checked.
        max_residual: the largest relative mismatch found.
    """

    ok: bool
    reason: str
    max_residual: float = 0.0


def run_for_views(scenario: Any, engine: str = "simpy") -> Any:
    """One engine run with what the observers' figures replay: its released messages, realized schedule,
    transcript and seed (a :class:`~asyncdp.result.Result`).

    Args:
        scenario: the scenario.
        engine: ``"simpy"``; the batch engine keeps no per-run released messages, so it is refused.

    Returns:
        The run.

    Raises:
        ScenarioError: another engine (naming it).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> run_for_views(Muffliato.example_scenario()).schedule.num_agents
        6
    """
    if engine != "simpy":
        raise ScenarioError(f"engine {engine!r}: the observers' figures replay one run's released messages, schedule "
                            "and deliveries, which only the SimPy engine records per run; use engine 'simpy'")
    return scenario.run("simpy")


def _private_values(scenario: Any) -> np.ndarray:
    costs = scenario.problem.costs
    values = getattr(costs, "addresses", None)
    if values is None:
        raise ScenarioError("the linear model's data are the agents' private values; the problem's costs "
                            f"({type(costs).__name__}) expose none (addresses)")
    return np.asarray(values, dtype=float)


def _engine_draws(result: Any, scenario: Any, alg: Any, channel: str) -> Any:
    """The engine's standard noise of the run's channel, ``draws(t, (N, d))`` (the scenario's
    :class:`~asyncdp.noise.SeededNoise`, or the seeded layout of :mod:`asyncdp.noise` at the run's seed), or a
    reason why the model cannot rest on it (no recorded seed; an injected or zero noise source)."""
    from ..noise import NoiseSource, SeededNoise

    names = [c.name for c in alg.channels]
    mech = alg.channels[names.index(channel)].mechanism
    source = getattr(scenario, "noise", None)
    if isinstance(source, NoiseSource) and not isinstance(source, SeededNoise):
        # fixed or zero draws: the model's noise is i.i.d. N(0, 1) per release, which such a source need not be
        return (f"the scenario draws its noise from {type(source).__name__}, not the seeded i.i.d. layout: the "
                "linear Gaussian model's independent standard draws are not guaranteed")
    if source is None:
        seed = (getattr(result, "metadata", None) or {}).get("seed")
        if seed is None:
            return "the run does not record its seed: its noise draws cannot be checked against the declaration"
        source = SeededNoise(int(seed))

    def draws(t: int, shape: tuple[int, ...]) -> np.ndarray:
        return np.asarray(source.broadcast(t, names.index(channel), mech, tuple(shape)), dtype=float)

    return draws


ROUNDOFF_ULPS = 32.0
"""Floating-point spacings (of the largest released or state value) allowed per agent when a run is compared
with the linear model: the engine's and the replay's sums of up to ``N`` terms differ by a few spacings each."""

DROPPED_DRAW_LEVEL = 1e-4
"""The largest chance, over one run's noisy releases, that some standard draw lies within the tolerance of 0
(relative to its scale): such a draw could be replaced by 0 unseen. Above it the model is not verified (the
privacy check's level for a pure claim)."""


def affinity_tolerance(messages: Any, states: Any, num_agents: int, ulps: float = ROUNDOFF_ULPS) -> float:
    """The round-off :func:`verify_affine` allows: ``ulps * N * spacing(max(1, |y|, |x|))``.

    Example:
        >>> affinity_tolerance(np.ones((1, 2, 1)), np.ones((2, 2, 1)), 2) == 64 * float(np.spacing(1.0))
        True
    """
    ref = max(1.0, float(np.nanmax(np.abs(messages))), float(np.max(np.abs(states))))
    return float(ulps * max(1, num_agents) * np.spacing(ref))


def _coarse_tolerance(tol: float, scales: np.ndarray, coords: int) -> str:
    """Why ``tol`` cannot tell a dropped draw from a small one (``""`` when it can): the chance that one of the
    run's ``coords`` standard draws per noisy round lies within ``tol / s_t`` of 0, at most
    ``coords sum_t sqrt(2 / pi) tol / s_t``, exceeds :data:`DROPPED_DRAW_LEVEL`."""
    noisy = scales[scales > 0]
    chance = float(coords * np.sum(math.sqrt(2.0 / math.pi) * tol / noisy)) if noisy.size else 0.0
    if chance <= DROPPED_DRAW_LEVEL:
        return ""
    return (f"the values' floating-point round-off (tolerance {tol:.3g}) is not negligible against the declared "
            f"noise (smallest scale {float(noisy.min()):.3g}): a draw that small could be dropped unseen (chance "
            f"{min(chance, 1.0):.3g} per run > {DROPPED_DRAW_LEVEL:g}); rescale the private values")


NOISE_PROBE_TAILS = (3.0, 4.5, 6.0, 8.0, 12.0, 20.0, 50.0, 1e3, 1e6)
"""Magnitudes of the draws (and mixes) with which :func:`verify_affine` probes the message and update steps,
besides ordinary ones: a rule that is linear only where values usually fall (say it clips the draw at 4) releases
an atom that a value of the source's datum puts elsewhere, an infinite Renyi divergence no run is likely to show."""


def _fresh(state: Any) -> Any:
    """A copy of a rule's state that a step may change in place without touching ``state`` (arrays copied, the
    rest deep-copied)."""
    import copy

    if isinstance(state, dict):
        return {k: v.copy() if isinstance(v, np.ndarray) else copy.deepcopy(v) for k, v in state.items()}
    return copy.deepcopy(state)


def _probe_tolerance(out: np.ndarray, base: np.ndarray, num_agents: int, ulps: float) -> float:
    """:func:`affinity_tolerance` of a probe's two outputs (NaN-free, or the comparison fails anyway)."""
    ref = max(1.0, float(np.max(np.abs(out), initial=0.0)), float(np.max(np.abs(base), initial=0.0)))
    return float(ulps * max(1, num_agents) * np.spacing(ref))


def _replayed_states(alg: Any, channel: str, result: Any, problem: Any, tol: float) -> tuple[list[Any], str]:
    """The rule's own states along the run: ``states[t - 1]`` enters round ``t`` (the initial state of the run's
    private values, then the rule's update applied to the mix the engine handed each agent, from the realized
    schedule and the released messages), and why they are not the run's (``""`` when their decisions are the
    run's states, to ``tol``)."""
    rs = result.schedule
    y = np.asarray(result.messages[channel], dtype=float)
    x = np.asarray(result.trajectory, dtype=float)
    n = rs.num_agents
    agents = np.arange(n)
    rnd, recv = np.asarray(rs.round, dtype=np.int64), np.asarray(rs.receiver, dtype=np.int64)
    send, srnd = np.asarray(rs.sender, dtype=np.int64), np.asarray(rs.sender_round, dtype=np.int64)
    w = np.asarray(rs.weight, dtype=float)
    try:
        state = alg.initial_state(x[0], agents, problem)
        states = [state]
        for t in range(1, rs.horizon + 1):
            sel = np.flatnonzero(rnd == t)
            mix = np.zeros_like(x[t])
            np.add.at(mix, recv[sel], w[sel, None] * y[srnd[sel] - 1, send[sel]])
            state = alg.update(_fresh(state), {channel: mix}, t, agents, problem)
            states.append(state)
            gap = float(np.max(np.abs(np.asarray(alg.decision(_fresh(state)), dtype=float) - x[t])))
            if not gap <= tol:
                return states, (f"round {t}: the rule's update replayed on the run's mixes does not give the run's "
                                f"states (off by {gap:.3g}): its steps are not a function of its state and mix")
    except Exception as exc:  # noqa: BLE001 - a rule that fails on its own replay is not verified, never a traceback
        return [], f"replaying the rule's steps on the run raised {type(exc).__name__} ({exc})"
    return states, ""


def _noise_response(alg: Any, channel: str, scales: np.ndarray, states: list[Any], problem: Any, ulps: float) -> str:
    """Why the rule's steps leave the linear model on probes (``""`` when they do not), for every round ``t``, on
    the state the rule entered round ``t`` with on the run (:func:`_replayed_states`), with the standard draws
    ``g`` and ``2 g`` (``g`` from a fixed seed) and draws of every magnitude in :data:`NOISE_PROBE_TAILS`,
    alternating in sign:

    * R: the message adds exactly ``s_t xi`` to its noise-free value;
    * U: the state's decision moves by exactly ``mixing_factor(t) m`` when the mix moves by ``m``.

    A rule of the model responds so at any state; one that keeps its own noise elsewhere, clips it, uses it in a
    round that declares none, or treats a mix far from its usual values otherwise does not, and a run is
    unlikely to show it."""
    x0 = np.asarray(alg.decision(_fresh(states[0])), dtype=float)
    agents = np.arange(x0.shape[0])
    g = np.random.default_rng(0).standard_normal(x0.shape)
    signs = np.where(np.arange(g.size).reshape(g.shape) % 2 == 0, 1.0, -1.0)
    draws = [g, 2.0 * g] + [c * signs for c in NOISE_PROBE_TAILS]

    def decision(mix: np.ndarray, t: int) -> np.ndarray:
        state = _fresh(states[t - 1])
        return np.asarray(alg.decision(alg.update(state, {channel: mix}, t, agents, problem)), dtype=float)

    def message(xi: np.ndarray, t: int) -> np.ndarray:
        state = _fresh(states[t - 1])
        return np.asarray(alg.message(state, t, {channel: xi}, agents, problem)[channel], dtype=float)

    for t, s in enumerate(scales, start=1):
        factor = float(alg.mixing_factor(t))
        for step, fn, coef in (("message", message, float(s)), ("update", decision, factor)):
            try:
                base = fn(np.zeros_like(g), t)
                for xi in draws:
                    out = fn(xi, t)
                    gap = float(np.max(np.abs(out - base - coef * xi))) if out.shape == base.shape else math.inf
                    if not gap <= _probe_tolerance(out, base, len(agents), ulps):
                        what = (f"the message does not respond linearly to the noise with the declared scale {s:.6g}"
                                if step == "message" else f"the state does not move by {factor:.6g} times the mix "
                                "(its declared mixing factor)")
                        return (f"round {t}: {what} (probe of magnitude up to {float(np.max(np.abs(xi))):.3g}: off "
                                f"by {gap:.3g})")
            except Exception as exc:  # noqa: BLE001 - a rule that fails on a probe is not verified, never a traceback
                return f"round {t}: the {step} step raised {type(exc).__name__} when probed ({exc})"
    return ""


def verify_affine(result: Any, scenario: Any, *, ulps: float = ROUNDOFF_ULPS) -> AffineCheck:
    """Check on the run that released values are the linear Gaussian model's (behavior, not declarations).

    1. every round: the rule's message step adds exactly ``s_t xi`` to its noise-free value, and its update moves
       the state by exactly ``mixing_factor(t)`` times the mix, for ordinary probes and for probes far in the
       tails (:data:`NOISE_PROBE_TAILS`), on the states the rule visits on the run (its own steps replayed on
       the run's mixes must give the run's states);
    2. every round: the released message minus the previous state is zero where no noise is declared, and
       is the declared scale times the engine's own standard draw for that round (the scenario's noise
       source, :mod:`asyncdp.noise`) where noise is declared: a rule that declares noise it does not add
       (or adds less) fails, since the model would count noise that no message carries;
    3. every round: the state equals the schedule's combination of released messages;
    4. the state before round 1 is the private values (the model's data);
    5. the channel's noise is Gaussian (the model's exact figures are Gaussian divergences).

    Every comparison allows floating-point round-off only: ``ulps`` spacings of the largest value per agent
    (:func:`affinity_tolerance`), never a fraction of the values' magnitude (values near ``1e9`` would let a rule
    drop a noise of scale 1 unseen). When even that tolerance is not negligible against a declared noise scale
    (a draw that small could be dropped unseen, :data:`DROPPED_DRAW_LEVEL`), the model is not verified.

    Args:
        result: the run (messages and trajectory recorded).
        scenario: its scenario.
        ulps: floating-point spacings allowed per agent (rounding of the engine's sums).

    Returns:
        An :class:`AffineCheck`.
    """
    alg = scenario.algorithm.bind(scenario.problem)
    if not is_declared_affine(alg):
        return AffineCheck(False, f"rule {alg.name!r} does not declare its messages affine in the noise")
    channel = _only_channel(alg)
    mechanism = alg.channels[[c.name for c in alg.channels].index(channel)].mechanism
    if mechanism != "gaussian":
        return AffineCheck(False, f"channel {channel!r} adds {mechanism} noise: the model (exact Renyi divergences of "
                                  "Gaussian views) is for Gaussian noise only")
    rs = getattr(result, "schedule", None)
    if rs is None:
        return AffineCheck(False, "the run recorded no realized schedule")
    rnd, recv, send, wts, srnd = _round_entries(rs, alg)
    n_agents, horizon = rs.num_agents, rs.horizon
    scales = np.array([alg.noise(t, channel).scale for t in range(1, horizon + 1)], dtype=float)
    if result.messages is None or channel not in result.messages:
        return AffineCheck(False, "the run recorded no released messages (record the transcript)")
    y = np.asarray(result.messages[channel], dtype=float)
    if y.ndim != 3:
        return AffineCheck(False, "unicast messages (one per link) have no broadcast linear model here")
    x = np.asarray(result.trajectory, dtype=float)
    tol = affinity_tolerance(y, x, n_agents, ulps)
    coarse = _coarse_tolerance(tol, scales, n_agents * int(np.prod(y.shape[2:])))
    if coarse:
        return AffineCheck(False, coarse)
    data = _private_values(scenario)
    worst = float(np.max(np.abs(x[0] - data)))
    if worst > tol:
        return AffineCheck(False, f"the state before round 1 is not the private values (mismatch {worst:.3g})", worst)
    # 1a. round 1 on the initial state first (the rule's steps, before any run-dependent state)
    first = _noise_response(alg, channel, scales[:1], [alg.initial_state(x[0], np.arange(n_agents), scenario.problem)],
                            scenario.problem, ulps)
    if first:
        return AffineCheck(False, first)
    draws = _engine_draws(result, scenario, alg, channel)
    if isinstance(draws, str):
        return AffineCheck(False, draws)
    # 2. and 3. replay the recursion on the released messages
    for t in range(1, horizon + 1):
        if np.isnan(y[t - 1]).any():
            return AffineCheck(False, f"round {t}: some agent released no message")
        if scales[t - 1] == 0:
            gap = np.abs(y[t - 1] - x[t - 1]).max(axis=-1)
            if gap.max() > tol:
                j = int(np.argmax(gap))
                return AffineCheck(False, f"round {t}, agent {j}: the message differs from the previous state "
                                          f"without declared noise (by {gap.max():.3g})", float(gap.max()))
        else:
            xi = draws(t, y.shape[1:])
            gap = np.abs(y[t - 1] - x[t - 1] - scales[t - 1] * xi).max(axis=-1)
            if gap.max() > tol:
                j = int(np.argmax(gap))
                return AffineCheck(False, f"round {t}, agent {j}: the message is not the previous state plus the "
                                          f"declared noise (scale {scales[t - 1]:.6g} times the engine's draw; off "
                                          f"by {gap.max():.3g})", float(gap.max()))
        sel = np.flatnonzero(rnd == t)
        pred = np.zeros_like(x[t])
        np.add.at(pred, recv[sel], wts[sel, None] * y[srnd[sel] - 1, send[sel]])
        err = np.abs(pred - x[t])
        if err.max() > tol:
            i = int(np.argmax(err.max(axis=-1)))
            return AffineCheck(False, f"round {t}, agent {i}: the state is not the schedule's combination of released "
                                      f"messages (off by {err.max():.3g}): not affine on this run", float(err.max()))
        worst = max(worst, float(err.max()))
    # 1b. on the states the rule itself visits on the run, every round: the noise enters linearly with the declared scale and
    # the mix with the declared factor, in their tails too (probes of the rule's message and update steps)
    states, why = _replayed_states(alg, channel, result, scenario.problem, tol)
    probed = why or _noise_response(alg, channel, scales, states, scenario.problem, ulps)
    if probed:
        return AffineCheck(False, probed)
    return AffineCheck(True, "messages = previous state + declared noise, states = realized combinations of "
                             "released messages, the noise enters linearly with the declared scale, tails included (checked on the run)", worst)


def probe_scenarios(scenario: Any) -> list[tuple[str, Any]]:
    """The scenario with its private values moved to the domain's extremes, on which :func:`verify_affine_probed`
    checks the model again: a pairwise figure is about *any* value of the source's datum in the domain, while a
    run shows the rule's behaviour at the run's values only (a noise scale or weight that depends on the data
    would go unseen).

    Two datasets: agent ``i`` at ``p[i mod 2]``, then at ``p[(i + 1) mod 2]``, ``p[0]`` the domain's first extreme
    point and ``p[1]`` the extreme point farthest from it: every agent holds both extremes, next to neighbours
    holding the other.

    Returns:
        ``[(label, scenario)]``.

    Raises:
        ScenarioError: the values cannot be moved (no two extreme points, or a cost family whose ``with_agent``
            takes no ``address``).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> [sc.problem.costs.addresses[:3, 0].tolist() for _, sc in probe_scenarios(Muffliato.example_scenario())]
        [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    from dataclasses import replace

    from ..problems.problem import Problem

    problem = scenario.problem
    _private_values(scenario)
    try:
        pts = np.asarray(problem.domain.extreme_points(), dtype=float)
    except Exception as exc:  # noqa: BLE001 - any failure of a user domain is a reason, not a traceback
        raise ScenarioError(f"the domain gives no extreme points ({exc})") from None
    if pts.ndim != 2 or len(pts) < 2:
        raise ScenarioError("the domain gives fewer than two extreme points")
    far = pts[int(np.argmax(np.linalg.norm(pts - pts[0], axis=1)))]
    ends = (pts[0], far)
    out = []
    for shift in (0, 1):
        costs = problem.costs
        try:
            for i in range(problem.num_agents):
                costs = costs.with_agent(i, address=ends[(i + shift) % 2])
            probe = replace(scenario, problem=Problem(problem.domain, costs, problem.constants))
        except Exception as exc:  # noqa: BLE001 - a family that cannot move its values: a reason, not a traceback
            raise ScenarioError(f"the private values cannot be moved to the domain's extremes ({exc})") from None
        label = (f"the private values at the domain's extremes {np.round(ends[shift], 6).tolist()} and "
                 f"{np.round(ends[1 - shift], 6).tolist()}, alternating from agent 0")
        out.append((label, probe))
    return out


def verify_affine_probed(scenario: Any, engine: str = "simpy") -> AffineCheck:
    """:func:`verify_affine` on one run of each :func:`probe_scenarios` dataset (the scenario's seed).

    A model verified on the scenario's runs and on these stands for every value of a source's datum only as far
    as the rule's behaviour does not change between them: a failure here is a reason to give no exact figure.

    Returns:
        An :class:`AffineCheck` (its reason names the probe data when it fails).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> verify_affine_probed(Muffliato.example_scenario()).ok
        True
    """
    try:
        probes = probe_scenarios(scenario)
    except ScenarioError as exc:
        return AffineCheck(False, f"the model cannot be checked away from the run's data: {exc}")
    worst = 0.0
    for label, probe in probes:
        check = verify_affine(run_for_views(probe, engine), probe)
        if not check.ok:
            return AffineCheck(False, f"with {label}: {check.reason}", check.max_residual)
        worst = max(worst, check.max_residual)
    return AffineCheck(True, "also with the private values at the domain's extremes", worst)


@dataclass(frozen=True)
class ObservedTranscript:
    """What an observer saw of one run.

    Attributes:
        observer: the observer.
        messages: ``(T, N, d)`` released messages (unicast: ``(T, N, N, d)``, one copy per receiver), ``NaN`` where
            the observer did not see them (a unicast copy: only if it crossed the observer's links).
        seen: ``(T, N)`` bool mask (round, sender): some copy seen.
        knows: agents whose data, noise and state the observer holds (its own, for ``node``/``nodes``).
        note: what the observer knows, in words.
    """

    observer: Observer
    messages: np.ndarray
    seen: np.ndarray
    knows: tuple[int, ...]
    note: str


def observed_transcript(result: Any, observer: str | Observer, channel: str = "y") -> ObservedTranscript:
    """Filter a run's released messages to what ``observer`` saw (using the realized schedule).

    Args:
        result: the run (schedule and messages recorded).
        observer: the observer (text or :class:`~accounting.network.Observer`).
        channel: the channel.

    Returns:
        The :class:`ObservedTranscript`.

    Raises:
        ScenarioError: no schedule or messages recorded, a bad observer.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> res = Muffliato.example_scenario().run()
        >>> v = observed_transcript(res, "node:0")
        >>> v.seen[:, 1].tolist(), bool(v.seen[:, 2].any())
        ([False, True, True, True, True], False)
    """
    rs = getattr(result, "schedule", None)
    if rs is None or result.messages is None or channel not in result.messages:
        raise ScenarioError("the run recorded no schedule or messages: record the transcript")
    obs = parse_observer(observer, rs.num_agents)
    y = np.asarray(result.messages[channel], dtype=float)
    unicast = y.ndim == 4  # [round, sender, receiver, coordinate]: one copy per link
    # what was seen: (round, sender, receiver) of each unicast copy, (round, sender) of a broadcast message (seen if
    # any of its copies is: an (T, N, N) mask would take N^2 T bytes, 10 GB for 10^4 agents and 100 rounds)
    mask = np.zeros((rs.horizon, rs.num_agents) + ((rs.num_agents,) if unicast else ()), dtype=bool)

    def mark(rounds: Any, senders: Any, receivers: Any) -> None:
        at = (np.asarray(rounds, dtype=np.int64) - 1, np.asarray(senders, dtype=np.int64))
        mask[at + ((np.asarray(receivers, dtype=np.int64),) if unicast else ())] = True

    if obs.kind == "eavesdropper":
        mask[:] = True
    else:
        recv, send = np.asarray(rs.receiver), np.asarray(rs.sender)
        if obs.kind == "link":
            a, b = obs.agents
            sel = ((recv == a) & (send == b)) | ((recv == b) & (send == a))
        else:  # what arrives at a member from outside the set (messages among members are their own knowledge)
            sel = np.isin(recv, obs.agents) & ~np.isin(send, obs.agents)
        mark(np.asarray(rs.sender_round)[sel], send[sel], recv[sel])
        tr = getattr(result, "transcript", None)
        if tr is not None:  # and every copy delivered to it, combined or not (late, superseded)
            t_rnd, t_send = np.asarray(tr.column("round")), np.asarray(tr.column("sender"))
            t_recv, ok = np.asarray(tr.column("receiver")), ~np.asarray(tr.column("lost"), dtype=bool)
            if obs.kind == "link":
                a, b = obs.agents
                t_sel = ok & (((t_recv == a) & (t_send == b)) | ((t_recv == b) & (t_send == a)))
            else:
                t_sel = ok & np.isin(t_recv, obs.agents) & ~np.isin(t_send, obs.agents)
            mark(t_rnd[t_sel], t_send[t_sel], t_recv[t_sel])
    seen = mask.any(axis=2) if unicast else mask
    out = np.where(mask.reshape(mask.shape + (1,) * (y.ndim - mask.ndim)), y, np.nan)
    knows = obs.agents if obs.kind == "nodes" else ()
    note = {"eavesdropper": "every released message; no data, no noise",
            "link": "the messages combined across the link, both directions; no data, no noise"}.get(
        obs.kind, NODE_KNOWLEDGE)
    return ObservedTranscript(obs, out, seen, knows, note)


def epsilon_from_mu(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of the Gaussian mechanism with parameter ``mu`` (bisection on the
    exact profile :func:`accounting.network.delta_from_mu`).

    Example:
        >>> round(epsilon_from_mu(1.0, 0.5), 6) >= 0.0
        True
    """
    from accounting.network.gaussian_views import _epsilon_by_bisection

    if not math.isfinite(mu):
        return math.inf
    if mu == 0:
        return 0.0
    return _epsilon_by_bisection(mu, delta)


STRUCTURAL = "structural bound"
"""The kind of a :class:`PairwiseRow` whose computed loss was above :func:`affine_renyi_bound` (see
:func:`above_affine_bound`): the row reports that bound, ``D_alpha <= alpha Delta^2 / (2 s_1^2)``."""


@dataclass(frozen=True)
class PairwiseRow:
    """One source's loss to the observer.

    Attributes:
        source: the agent whose datum changes.
        renyi: the Renyi divergence of order ``alpha`` (an average over schedules when several runs).
        epsilon: the epsilon at ``delta`` (one schedule only; ``nan`` when averaged over schedules); for an
            ``"upper bound"`` row, the bound's zCDP conversion to ``delta`` (an upper bound too).
        kind: ``"exact"``, ``"lower estimate"`` (rank tolerance, see :mod:`accounting.network.gaussian_views`),
            ``"estimate over schedules"``, ``"upper bound"`` (the eavesdropper's composition bound) or
            ``"structural bound"`` (:data:`STRUCTURAL`: the computed value was above :func:`affine_renyi_bound`, a
            numerical artifact; the row gives that bound instead, which holds).
        reason: why a figure is not exact.
    """

    source: int
    renyi: float
    epsilon: float
    kind: str
    reason: str = ""


@dataclass(frozen=True)
class PairwiseFigures:
    """Every source's loss to one observer (see :func:`pairwise_figures`)."""

    observer: str
    alpha: float
    delta: float
    rows: tuple[PairwiseRow, ...]
    affine: AffineCheck
    runs: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinities as strings)."""
        def num(v: float) -> Any:
            return v if math.isfinite(v) else str(v)

        return {"observer": self.observer, "alpha": self.alpha, "delta": self.delta, "runs": self.runs,
                "affine": {"ok": self.affine.ok, "reason": self.affine.reason}, "notes": list(self.notes),
                "rows": [{"source": r.source, "renyi": num(r.renyi), "epsilon": num(r.epsilon), "kind": r.kind,
                          "reason": r.reason} for r in self.rows]}

    def to_table(self) -> str:
        """One line per source."""
        lines = [f"observer {self.observer}: Renyi order {self.alpha:g}, epsilon at delta {self.delta:g}, "
                 f"{self.runs} run(s); {self.affine.reason}"]
        lines += [f"  note: {n}" for n in self.notes]
        for r in self.rows:
            rel = " <= " if r.kind == STRUCTURAL else "="
            lines.append(f"  u={r.source:>4}  D_alpha{rel}{r.renyi:.6g}  eps{rel}{r.epsilon:.6g}  [{r.kind}]"
                         + (f" ({r.reason})" if r.reason else ""))
        return "\n".join(lines)


def _data_sensitivity(scenario: Any) -> float:
    d = float(scenario.problem.domain.diameter)
    if not (d > 0 and math.isfinite(d)):
        raise ScenarioError(f"the private values' domain has diameter {d!r}: the pairwise loss needs a finite one")
    return d


def affine_renyi_bound(scenario: Any, alpha: float) -> float:
    """A bound on any observer's Renyi divergence, on every schedule, for a rule verified affine in the noise:
    ``alpha Delta^2 / (2 s_1^2)``, ``Delta`` the private values' domain diameter, ``s_1`` the round-1 noise scale.

    It rests on the structure :func:`verify_affine` checks on each run, not on the paper's lemma: the round-1
    messages are the private values plus Gaussian noise of scale ``s_1`` (the only release whose sensitivity is
    not 0), and every later message is a combination of released messages plus fresh noise (sensitivity 0
    given them). The eavesdropper's view composes exactly that; every observer's is a function of it.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> affine_renyi_bound(Muffliato.example_scenario(), 2.0)
        1.0
    """
    alg = scenario.algorithm.bind(scenario.problem)
    s1 = float(alg.noise(1, _only_channel(alg)).scale)
    diameter = _data_sensitivity(scenario)
    return math.inf if s1 == 0 else float(alpha * diameter**2 / (2.0 * s1**2))


def above_affine_bound(value: float, bound: float) -> bool:
    """Whether a computed loss lies above :func:`affine_renyi_bound` by more than rounding: no view of the verified
    structure leaks that much, so the value is a numerical artifact (e.g. a mean shift outside the numerical range of
    a view with directions at rounding level), neither exact nor a lower estimate of the truth.

    Args:
        value: the computed Renyi divergence.
        bound: :func:`affine_renyi_bound` at the same order.

    Returns:
        ``True`` above ``bound (1 + 1e-9)`` plus the witness margin
        (:func:`accounting.network.muffliato.witness_margin`).

    Example:
        >>> above_affine_bound(math.inf, 1.0), above_affine_bound(1.0 + 1e-12, 1.0), above_affine_bound(0.5, 1.0)
        (True, False, False)
    """
    from accounting.network.muffliato import witness_margin

    return value > bound * (1 + 1e-9) + witness_margin(bound)


def _unverified_lemma(scenario: Any) -> str | None:
    """The sensitivity lemma :func:`eavesdropper_renyi_bound` composes, in words, when it is not a published paper's
    lemma of this very rule (a user's own, or one a subclass of a paper's rule inherits); else ``None``."""
    from ..papers import find_registered

    found = find_registered(scenario.algorithm)
    if found is None or found.published_for(scenario.algorithm):
        return None
    if found.published:
        return (f"the lemma of paper {found.paper.name!r} inherited by the subclass "
                f"{type(scenario.algorithm).__name__} of its rule")
    return f"the user's own lemma of paper record {found.paper.name!r}"


def _unicast_copies(scenario: Any) -> np.ndarray:
    """``copies[t - 1]``: the most copies one agent sends in round ``t`` in unicast mode (one per receiver, each
    with its own noise); ``inf`` when an agent without a receiver in round ``t`` sends in a later round (its state
    keeps its noise-free round-``t`` message, :mod:`asyncdp.engine.simpy_engine`, and its later messages carry it:
    no release's sensitivity accounts for that). An agent that sends nothing from round ``t`` on releases nothing
    more, whatever its state holds."""
    from ..papers.record import out_neighbour_counts

    counts = [out_neighbour_counts(scenario.topology.weights(t)) for t in range(1, scenario.horizon + 1)]
    out = np.zeros(scenario.horizon)
    sends_later = np.zeros(counts[0].shape, dtype=bool) if counts else np.zeros(0, dtype=bool)
    for t in range(scenario.horizon, 0, -1):
        links = counts[t - 1]
        out[t - 1] = math.inf if (sends_later & (links == 0)).any() else float(links.max(initial=0))
        sends_later |= links > 0
    return out


def eavesdropper_renyi_bound(scenario: Any, alpha: float) -> float:
    """An upper bound on any observer's Renyi divergence valid on *every* schedule: the composition of every
    noisy release of one agent, each with the paper lemma's sensitivity (data processing: an observer sees
    a function of all releases).

    In unicast mode every receiver gets its own noisy copy, and every copy is composed (the most copies one
    agent sends in the round); a round of positive sensitivity in which some agent has no receiver gives ``inf``
    if that agent sends later (its noise-free own message entered its state, beyond the lemma's releases).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> eavesdropper_renyi_bound(Muffliato.example_scenario(), 2.0)
        1.0
    """
    from .sensitivity import independent_sensitivity

    alg = scenario.algorithm.bind(scenario.problem)
    sens = independent_sensitivity(scenario)
    copies = _unicast_copies(scenario) if getattr(scenario, "mode", "broadcast") == "unicast" else None
    total = 0.0
    for c, arr in sens.items():
        for t, s in enumerate(np.asarray(arr), start=1):
            scale = alg.noise(t, c).scale
            released = 1.0 if copies is None else float(copies[t - 1])  # copies of one agent's release
            if s == 0 or released == 0:
                continue
            if scale == 0 or math.isinf(released):
                return math.inf
            total += float(s / scale) ** 2 * released
    return float(alpha * total / 2.0)


def delivered_messages(result: Any, observer: str | Observer, sched: LinearSchedule) -> list[tuple[int, int]]:
    """The messages the run's transcript delivered to ``observer`` (not lost), in ``sched``'s numbering.

    A node holds every message that reaches it, combined or not: a copy that arrived after its deadline, or
    one that a fresher copy superseded, is in its view as much as the copies it combined (the realized
    schedule records combinations only). For ``nodes:S``, the messages from outside ``S`` to a member; for
    ``link:a,b``, the copies delivered across the link; none for the eavesdropper (it sees every release).

    Args:
        result: the run (transcript and schedule recorded).
        observer: the observer.
        sched: the run's :func:`linear_schedule` (its message numbering: rounds, or global steps for a
            re-indexed asynchronous run).

    Returns:
        ``(round, sender)`` pairs (possibly already combined: the accountant takes the union).

    Raises:
        ScenarioError: the run recorded no transcript (a node's deliveries are unknown).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> sc = Muffliato.example_scenario()
        >>> res = sc.run()
        >>> sorted(delivered_messages(res, "node:5", linear_schedule(res, sc)))
        [(2, 4), (3, 4), (4, 4), (5, 4)]
    """
    obs = parse_observer(observer)
    if obs.kind == "eavesdropper":
        return []
    tr = getattr(result, "transcript", None)
    if tr is None:
        raise ScenarioError("the run recorded no transcript: the messages delivered to the observer are unknown")
    rs = result.schedule
    rnd = np.asarray(tr.column("round"), dtype=np.int64)
    send = np.asarray(tr.column("sender"), dtype=np.int64)
    recv = np.asarray(tr.column("receiver"), dtype=np.int64)
    ok = ~np.asarray(tr.column("lost"), dtype=bool)
    if obs.kind == "link":
        a, b = obs.agents
        sel = ok & (((recv == a) & (send == b)) | ((recv == b) & (send == a)))
    else:
        members = np.array(obs.agents)
        sel = ok & np.isin(recv, members) & ~np.isin(send, members)
    pairs = {(int(r), int(j)) for r, j in zip(rnd[sel], send[sel])}
    if sched.horizon == rs.horizon:
        return sorted(pairs)
    _, release = _global_steps(rs.num_agents, rs.horizon, result.times)
    return sorted((int(release[r - 1, j]), j) for r, j in pairs)


def _losses(sched: LinearSchedule, obs: Observer, srcs: list[int], sens: float, result: Any) -> dict[int, Any]:
    """Exact losses on one schedule; a node or link observer also holds every message delivered to it
    (:func:`delivered_messages`); for the eavesdropper of a re-indexed asynchronous run, only the rows of
    real releases (a step's copy of a state that was not released is not on the wire)."""
    from accounting.network import gaussian_view_losses, message_maps

    rs = result.schedule
    if obs.kind != "eavesdropper":
        return pairwise_losses(sched, obs, srcs, sensitivity=sens, delivered=delivered_messages(result, obs, sched))
    if sched.horizon == rs.horizon:
        return pairwise_losses(sched, obs, srcs, sensitivity=sens)
    _, release = _global_steps(rs.num_agents, rs.horizon, result.times)
    real = {(int(release[r, j]), j) for r in range(rs.horizon) for j in range(rs.num_agents)}
    d, nmap, msgs = message_maps(sched)
    rows = [i for i, m in enumerate(msgs) if m in real]
    out = gaussian_view_losses(nmap[rows], d[rows][:, srcs] * sens)
    return dict(zip(srcs, out))


def observer_blackbox(scenario: Any, adjacent: Any, observer: str | Observer, *, runs: int = 200, seed: int = 0,
                      epsilon: float, delta: float = 0.0, confidence: float = 0.95) -> Any:
    """A black-box lower bound on what ``observer`` learns: :func:`accounting.auditing.audit_samples` on the
    observer's view of ``runs`` engine runs of each scenario (same seeds: the schedule is data independent).

    The view of a run: every message the observer saw (:func:`observed_transcript`) and, for ``node``/``nodes``
    observers, the members' own released messages (functions of their data, noise and what they received),
    flattened, ``NaN`` where nothing was seen.

    Args:
        scenario, adjacent: the two scenarios (one agent's datum differs).
        observer: the observer.
        runs: runs per side (SimPy engine), >= 2.
        seed: run ``r`` uses seed ``seed + r`` on both sides.
        epsilon, delta: the claim the auditor tries to refute.
        confidence: of the certified bounds.

    Returns:
        The :class:`accounting.auditing.SampleAuditReport` (``epsilon_lower_bound``: a certified lower bound).
    """
    from dataclasses import replace

    from accounting.auditing import audit_samples

    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ScenarioError(f"runs must be an integer >= 2, got {runs!r}")
    obs = parse_observer(observer, scenario.problem.num_agents)
    own = list(obs.agents) if obs.kind == "nodes" else []
    sides = []
    for sc in (scenario, adjacent):
        rows = []
        for r in range(runs):
            res = replace(sc, seed=seed + r).run("simpy")
            channels = [c.name for c in sc.algorithm.channels]
            parts = []
            for c in channels:
                view = observed_transcript(res, obs, c)
                parts.append(view.messages.ravel())
                if own:
                    parts.append(np.asarray(res.messages[c], dtype=float)[:, own].ravel())
            rows.append(np.concatenate(parts))
        sides.append(np.array(rows))
    return audit_samples(sides[0], sides[1], epsilon=epsilon, delta=delta, confidence=confidence, seed=seed)


def _structural_row(scenario: Any, obs: Observer, u: int, losses: list[Any], alpha: float,
                    delta: float) -> PairwiseRow | None:
    """The :data:`STRUCTURAL` row of source ``u`` when some schedule's computed loss is above
    :func:`affine_renyi_bound` (:func:`above_affine_bound`; not for a source the observer holds, whose loss is
    infinite); else ``None``. Its epsilon is that of the bound's Gaussian shift ``Delta / s_1``."""
    if obs.kind == "nodes" and u in obs.agents:
        return None
    d_max = affine_renyi_bound(scenario, alpha)
    values = [loss.renyi(alpha) for loss in losses]
    worst = max(range(len(values)), key=lambda i: values[i])
    if not (math.isfinite(d_max) and above_affine_bound(values[worst], d_max)):
        return None
    why = ("the view has directions at rounding level" if not losses[worst].exact else
           losses[worst].reason or "a value the model computed against the structure it verified")
    on = f" on run {worst}" if len(losses) > 1 else ""
    return PairwiseRow(u, d_max, epsilon_from_mu(math.sqrt(2.0 * d_max / alpha), delta), STRUCTURAL,
                       f"computed {values[worst]:.6g}{on}, above the bound alpha Delta^2 / (2 s_1^2) = {d_max:.6g} "
                       f"every view of the verified structure obeys: a numerical artifact ({why}); the bound holds")


def rounded_to_bound(ds: list[float], bound: float, rtol: float = 1e-9) -> list[float]:
    """Per-schedule divergences with rounding above ``bound`` (at most ``rtol`` relative) set to ``bound``.

    A value further above the bound is kept (and :func:`accounting.network.combine_renyi` rejects it: the
    bound would not hold on every schedule, an error, never hidden).

    Example:
        >>> rounded_to_bound([1.0 + 1e-12, 0.5, 2.0], 1.0)
        [1.0, 0.5, 2.0]
    """
    return [bound if bound < d <= bound * (1 + rtol) else d for d in ds]


def pairwise_figures(scenario: Any, observer: str | Observer = "eavesdropper", *, runs: int = 1,
                     seed: int | None = None,
                     alpha: float = 2.0, delta: float = 1e-6, sources: Any = None,
                     engine: str = "simpy", confidence_gap: float = 0.05, adjacent: Any = None) -> PairwiseFigures:
    """Each source's loss to ``observer`` on the scenario's realized schedule(s).

    With one run: the exact Renyi divergence and exact epsilon at ``delta`` of the observer's view (a
    Gaussian vector given the schedule), when the rule is verified affine on the run. With several runs
    (asynchronous or lossy schedules differ): the divergence averaged over the sampled schedules,
    ``(1/(alpha-1)) log E_S exp((alpha-1) D_alpha(. | S))``, reported as an estimate with its bound
    (:func:`accounting.network.schedule_averaged_renyi`). A rule that is not (verified) affine gets the
    sound upper bound of :func:`eavesdropper_renyi_bound` (data processing), labelled so.

    Args:
        scenario: the scenario (rule, topology, timing, links, seed).
        observer: the observer.
        runs: engine runs (each one realized schedule); run ``r`` uses seed ``seed + r``.
        seed: the first run's seed (default ``scenario.seed``; run ``r`` uses ``seed + r``).
        alpha: Renyi order, > 1.
        delta: delta of the reported epsilon.
        sources: the agents whose datum changes (default: every agent).
        engine: ``"simpy"`` or ``"batch"``.
        confidence_gap: of the bound over sampled schedules.
        adjacent: an adjacent scenario whose run must match the model too (a rule may behave otherwise on
            its data); the model is also checked with the private values at the domain's extremes
            (:func:`verify_affine_probed`).

    Returns:
        The :class:`PairwiseFigures`.

    Raises:
        ScenarioError: a bad observer, source or parameter.
    """
    from dataclasses import replace

    if not (alpha > 1 and math.isfinite(alpha)):
        raise ScenarioError(f"alpha must be a finite number > 1, got {alpha!r}")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ScenarioError(f"runs must be an integer >= 1, got {runs!r}")
    n = scenario.problem.num_agents
    obs = parse_observer(observer, n)
    srcs = list(range(n)) if sources is None else [int(u) for u in sources]
    bad = [u for u in srcs if not 0 <= u < n]
    if bad:
        raise ScenarioError(f"source agent {bad[0]} does not exist (agents are 0..{n - 1})")
    seed = scenario.seed if seed is None else seed
    bound = eavesdropper_renyi_bound(scenario, alpha)
    notes = [NODE_KNOWLEDGE] if obs.kind == "nodes" else []
    results = [run_for_views(replace(scenario, seed=seed + r), engine) for r in range(runs)]
    schedules, check = [], AffineCheck(False, "not checked")
    for res in results:
        try:
            sched = linear_schedule(res, scenario)
        except ScenarioError as exc:
            check = AffineCheck(False, str(exc))
            break
        check = verify_affine(res, scenario)
        if not check.ok:
            break
        schedules.append(sched)
    if check.ok:
        for other in ([] if adjacent is None else [adjacent]):
            adj = verify_affine(run_for_views(replace(other, seed=seed), engine), other)
            if not adj.ok:
                check = AffineCheck(False, f"on the adjacent scenario: {adj.reason}", adj.max_residual)
        if check.ok:
            check = verify_affine_probed(scenario, engine)
    sens = _data_sensitivity(scenario)
    rows = []
    if not check.ok:
        notes.append("not a verified linear Gaussian rule: every figure is the eavesdropper's composition bound "
                     "(data processing); a black-box lower bound from the observer's view: observer_blackbox")
        lemma = _unverified_lemma(scenario)
        if lemma is not None:
            notes.append(f"the composition bound rests on {lemma}, which this figure does not verify: it is an upper "
                         "bound only if that lemma holds for this rule")
        # the bound is alpha * rho with rho = sum (s / scale)^2 / 2 at every order (a Gaussian release's zCDP; a
        # Laplace release is (s / scale)-DP, hence (s / scale)^2 / 2-zCDP): its epsilon at delta is rho-zCDP's
        rho = bound / alpha
        eps_bound = math.inf if math.isinf(rho) else 0.0 if rho == 0 else ZeroConcentratedDP(rho).epsilon_at(delta)
        for u in srcs:
            inf_self = obs.kind == "nodes" and u in obs.agents
            rows.append(PairwiseRow(u, math.inf if inf_self else bound, math.inf if inf_self else eps_bound,
                                    "upper bound", "the observer holds u's datum" if inf_self else check.reason))
    elif runs == 1:
        losses = _losses(schedules[0], obs, srcs, sens, results[0])
        for u in srcs:
            loss = losses[u]
            kind = "exact" if loss.exact else "lower estimate"
            artifact = _structural_row(scenario, obs, u, [loss], alpha, delta)
            rows.append(artifact or PairwiseRow(u, loss.renyi(alpha), epsilon_from_mu(loss.mu, delta), kind,
                                                loss.reason or ""))
    else:
        per_run = [_losses(sc_, obs, srcs, sens, res) for sc_, res in zip(schedules, results)]
        for u in srcs:
            artifact = _structural_row(scenario, obs, u, [pr[u] for pr in per_run], alpha, delta)
            if artifact is not None:
                rows.append(artifact)
                continue
            ds = [pr[u].renyi(alpha) for pr in per_run]
            exact = all(pr[u].exact for pr in per_run)
            if not all(math.isfinite(d) for d in ds):
                why = next(pr[u].reason for pr in per_run if not math.isfinite(pr[u].renyi(alpha)))
                rows.append(PairwiseRow(u, math.inf, math.nan, "exact", f"infinite on some schedule: {why}"))
                continue
            d_max = affine_renyi_bound(scenario, alpha)  # the verified structure's range, not the lemma's
            comb = combine_renyi(rounded_to_bound(ds, d_max), alpha, d_max, confidence_gap)
            est = float(getattr(comb, "estimate", math.nan))
            upper = getattr(comb, "upper", None)
            reason = f"upper confidence bound {upper:.6g} ({comb.bound}, confidence {comb.confidence:g})" \
                if isinstance(upper, float) else ""
            rows.append(PairwiseRow(u, est, math.nan, "estimate over schedules" if exact else "lower estimate",
                                    reason))
    return PairwiseFigures(str(obs), float(alpha), float(delta), tuple(rows), check, runs, tuple(notes))

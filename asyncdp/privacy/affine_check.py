"""Verifying a rule's linear Gaussian model on its runs, by behavior rather than declarations.

:func:`verify_affine` checks the rule's declaration (``affine_in_noise``) on one run: the first round's
messages respond linearly to the noise with the declared scale, every released message equals the previous
state plus the declared noise, and every state equals the schedule's combination of released messages (to
rounding, :func:`affinity_tolerance`); the rule's message and update steps are probed in the tails too
(:data:`NOISE_PROBE_TAILS`). ``verify_affine_probed`` checks it again with the private values at the domain's
extremes (``probe_scenarios``). A rule that fails is not treated as affine: its pairwise figures are bounds,
never exact values.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> sc = Muffliato.example_scenario()
    >>> verify_affine(sc.run(), sc).ok
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ScenarioError
from .linear_model import _only_channel, _round_entries, is_declared_affine
from .observer_views import run_for_views

__all__ = ["AffineCheck", "verify_affine", "probe_scenarios", "verify_affine_probed", "affinity_tolerance"]


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

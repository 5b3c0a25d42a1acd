"""Bridges from scenarios to the independent accountant (:mod:`accounting`).

``accounting`` never imports ``asyncdp``; this module hands it plain data and
small adapters that satisfy the protocols ``accounting`` defines:

* :func:`find_changed_agent` — checks that two scenarios are adjacent (same
  everything, one agent's cost changed) and names the agent;
* :class:`AlgorithmReplayRule` — an algorithm's R and U steps as an
  :class:`accounting.replay.ReplayRule` (vectorized over transcripts);
* :func:`replay_setup` — the round weights and the per-round noise scales;
* :func:`transcript_array` — a run's broadcast transcript as ``(T, N, n)``;
* :func:`independent_sensitivity` — the accountant's own per-round
  sensitivity for a shipped algorithm, from the function-class constants;
* :func:`update_pair` — the U step of both problems as an
  :class:`accounting.prober.AdjacentPair` for the sensitivity prober.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting import auditors, composition, prober, theorems
from accounting.errors import AdjacencyError
from accounting.replay import ReplaySetup, replay_loss, sample_transcripts

from .algorithms.base import Algorithm
from .errors import ScenarioError
from .scenario import Scenario
from .timing import Lockstep

__all__ = [
    "find_changed_agent",
    "AlgorithmReplayRule",
    "replay_setup",
    "transcript_array",
    "independent_sensitivity",
    "update_pair",
    "PrivacyCheckReport",
    "check_privacy",
]


def _same_topology(a: Scenario, b: Scenario) -> int | None:
    """First round (1..horizon) where the two scenarios' weights differ, else None."""
    for t in range(1, a.horizon + 1):
        wa, wb = a.topology.weights(t), b.topology.weights(t)
        if wa.shape != wb.shape or abs(wa - wb).max() > 0:
            return t
    return None


def find_changed_agent(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """Check that ``adjacent`` differs from ``scenario`` in exactly one agent's cost; return that agent.

    Everything else must be equal: domain, topology (over the horizon),
    algorithm and its parameters, timing, links, seed, horizon, initial points
    and mode. Costs are compared by their gradients at ``probes`` points of the
    domain (and its centre), so user-supplied costs are handled too.

    Raises:
        AdjacencyError: they differ elsewhere, in no agent, or in more than one
            agent (the message names what differs).
    """
    if scenario.problem.num_agents != adjacent.problem.num_agents or scenario.problem.dim != adjacent.problem.dim:
        raise AdjacencyError("adjacent scenarios must have the same number of agents and dimension")
    if scenario.problem.domain != adjacent.problem.domain:
        raise AdjacencyError(f"adjacent scenarios differ in the domain: {scenario.problem.domain!r} vs "
                             f"{adjacent.problem.domain!r}")
    for name in ("algorithm", "timing", "links", "seed", "horizon", "mode"):
        if getattr(scenario, name) != getattr(adjacent, name):
            raise AdjacencyError(f"adjacent scenarios differ in {name}: {getattr(scenario, name)!r} vs "
                                 f"{getattr(adjacent, name)!r}")
    if not np.array_equal(scenario.initial_points(), adjacent.initial_points()):
        raise AdjacencyError("adjacent scenarios differ in the initial points x0")
    t = _same_topology(scenario, adjacent)
    if t is not None:
        raise AdjacencyError(f"adjacent scenarios differ in topology at round {t}")
    domain = scenario.problem.domain
    rng = np.random.default_rng(seed)
    points = np.concatenate([domain.sample(rng, probes), np.asarray(domain.center, dtype=float)[None]])
    n_agents = scenario.problem.num_agents
    agents = np.arange(n_agents)[:, None]
    g = scenario.problem.costs.gradient(agents, points[None])
    gp = adjacent.problem.costs.gradient(agents, points[None])
    changed = [int(i) for i in np.flatnonzero(np.abs(g - gp).max(axis=(1, 2)) > 0)]
    if not changed:
        raise AdjacencyError("adjacent scenarios have the same costs for every agent")
    if len(changed) > 1:
        raise AdjacencyError(f"adjacent scenarios differ in more than one agent's cost: agents {changed}")
    return changed[0]


@dataclass(frozen=True)
class AlgorithmReplayRule:
    """An algorithm with one noisy broadcast channel as an :class:`accounting.replay.ReplayRule`.

    The replayed state is the algorithm's state dict flattened to its ``"x"``
    entry; the message mean is the R step with zero noise, the next state the
    U step on the mixed channel (both vectorized: ``(R, N, n)``).
    """

    algorithm: Algorithm
    problem: Any
    x0: np.ndarray

    def _state(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {"x": x}

    def initial_state(self, runs: int) -> np.ndarray:
        agents = np.arange(self.problem.num_agents)
        st = self.algorithm.initial_state(np.broadcast_to(self.x0, (runs,) + self.x0.shape), agents, self.problem)
        return np.array(st["x"], dtype=float)

    def message_mean(self, state: np.ndarray, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        zero = {channel: np.zeros_like(state)}
        return self.algorithm.message(self._state(state), t, zero, np.arange(state.shape[-2]), self.problem)[channel]

    def next_state(self, state: np.ndarray, mixed: np.ndarray, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        out = self.algorithm.update(self._state(state), {channel: mixed}, t, np.arange(state.shape[-2]), self.problem)
        return out["x"]


def replay_rule(scenario: Scenario) -> AlgorithmReplayRule:
    """The replay rule of ``scenario`` (algorithm bound to its problem)."""
    return AlgorithmReplayRule(scenario.algorithm.bind(scenario.problem), scenario.problem, scenario.initial_points())


def replay_setup(scenario: Scenario) -> ReplaySetup:
    """Weights ``W_t`` and the per-round noise scales declared by the algorithm.

    Raises:
        accounting.errors.PrivacyParameterError: a round has zero noise (e.g.
            ``epsilon = inf``: nothing to replay).
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = alg.noisy_channels()
    scales = np.array([alg.noise(t, channel.name).scale for t in range(1, scenario.horizon + 1)])
    return ReplaySetup(weights=scenario.topology.weights, mechanism=channel.mechanism, scales=scales)


def transcript_array(result: Any, channel: str = "y", mode: str = "broadcast") -> np.ndarray:
    """A run's observed messages: ``(T, N, n)`` for broadcast, ``(T, N, N, n)`` for unicast.

    Unicast entry ``[t - 1, i, j]`` is the message ``i -> j`` (``nan`` where no
    message was sent).
    """
    horizon, n_agents, n = result.trajectory.shape[0] - 1, result.trajectory.shape[1], result.trajectory.shape[2]
    if mode == "unicast":
        out = np.full((horizon, n_agents, n_agents, n), np.nan)
        for (t, i, j), payload in result.transcript.observations_by_link(channel).items():
            out[t - 1, i, j] = payload
        return out
    out = np.full((horizon, n_agents, n), np.nan)
    for (t, i), payload in result.transcript.observations(channel).items():
        out[t - 1, i] = payload
    return out


def independent_sensitivity(scenario: Scenario) -> np.ndarray:
    """The accountant's own sensitivity of each round's release, ``(T,)``, from plain constants.

    Dispatches to ``asyncdp.privacy_adapters.<algorithm name>`` (``-`` read as
    ``_``), whose ``sensitivity(scenario)`` hands the problem's function-class
    constants and the algorithm's parameters to :mod:`accounting.sensitivity`
    and never uses the algorithm's claimed values.

    Raises:
        NotImplementedError: no adapter for this algorithm.
        ScenarioError: the adapter's bound does not apply to this scenario.
    """
    name = scenario.algorithm.name.replace("-", "_")
    try:
        adapter = importlib.import_module(f"asyncdp.privacy_adapters.{name}")
    except ModuleNotFoundError:
        raise NotImplementedError(f"no independent sensitivity for {scenario.algorithm.name!r} yet") from None
    return np.asarray(adapter.sensitivity(scenario), dtype=float)


def update_pair(scenario: Scenario, adjacent: Scenario, agent: int, t: int) -> prober.AdjacentPair:
    """The U step of ``agent`` at round ``t`` under both problems, for :func:`accounting.prober.probe_sensitivity`.

    The prober's point ``z`` is the agent's combined value ``z_i(t)``; the
    "cost" handed to the prober is the problem itself.
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = [c.name for c in alg.noisy_channels()]
    n = scenario.problem.dim

    def rule(z: np.ndarray, t_: int, problem: Any) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        return alg.update({"x": z}, {channel: z}, t_, agent, problem)["x"]

    domain = scenario.problem.domain
    box = (domain.low, domain.high) if hasattr(domain, "low") else None
    return prober.AdjacentPair(rule, scenario.problem, adjacent.problem, t=t, n=n, domain_box=box)


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass
class PrivacyCheckReport:
    """The outcome of :func:`check_privacy` (JSON-ready through :meth:`to_dict`)."""

    algorithm: str
    changed_agent: int
    epsilon_claimed: float
    delta_claimed: float
    epsilon_ledger: float
    epsilon_tight: float
    delta: float
    sensitivity_probe_max: float
    sensitivity_probe_ratio: float
    replay_max_loss: float | None
    replay_exceed_fraction: float | None
    replay_runs: int
    empirical_epsilon_lower_bound: float
    confidence: float
    theorem: str
    verdict: str
    witness: dict[str, Any] | None
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for k, v in self.__dict__.items():
            out[k] = _finite(v) if isinstance(v, float) else v
        return out

    def to_table(self) -> str:
        d = self.to_dict()
        w = max(len(k) for k in d)
        lines = []
        for k, v in d.items():
            if k == "reasons":
                continue
            lines.append(f"{k:<{w}}  {v:.6g}" if isinstance(v, float) else f"{k:<{w}}  {v}")
        lines += [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)


def _theorem_verdict(alg: Algorithm, eps_ledger: float, delta_ledger: float) -> str:
    """The paper's claim (``accounting.theorems``) checked against the accountant's epsilon."""
    if alg.name == "huang2015":
        claim = theorems.huang2015_claim(alg.epsilon, c=alg.c, q=alg.q, p=alg.p)
        return theorems.verify(claim, eps_ledger, delta_ledger).message
    return f"no theorem check for {alg.name!r} yet"


def _replayable(scenario: Scenario) -> str | None:
    """Why exact replay does not apply to this scenario, or None if it does."""
    if not isinstance(scenario.timing, Lockstep):
        return "replay needs lockstep rounds (the weights actually used then equal the topology's)"
    if scenario.links.default.loss > 0 or any(m.loss > 0 for m in scenario.links.overrides.values()):
        return "replay needs lossless links"
    if len(scenario.algorithm.noisy_channels()) != 1:
        return "replay supports algorithms with one noisy channel"
    return None


def check_privacy(
    scenario: Scenario,
    adjacent: Scenario,
    *,
    runs: int = 2000,
    delta: float = 1e-6,
    confidence: float = 0.95,
    probe_rounds: int = 3,
    seed: int = 0,
) -> PrivacyCheckReport:
    """Check a scenario's privacy claim against an adjacent scenario, independently.

    Steps: (1) the two scenarios must be adjacent (one agent's cost changed);
    (2) one SimPy run gives the realized ledger; the accountant composes it
    per agent with its *own* sensitivity (:func:`independent_sensitivity`):
    basic composition (``epsilon_ledger``) and PLD at ``delta``
    (``epsilon_tight``); (3) the prober searches the changed agent's update
    for the largest ``||U(z; f) - U(z; f')||_1`` in the first ``probe_rounds``
    rounds and compares it with the algorithm's claimed sensitivity; (4) when
    the run is replayable (lockstep, lossless), ``runs`` transcripts are
    sampled under ``scenario`` and their exact privacy losses computed
    (:mod:`accounting.replay`), the PLRV auditor looks for losses above the
    claimed epsilon; (5) the black-box auditor bounds epsilon from below on a
    scalar statistic (the changed agent's messages projected on the direction
    separating the two problems, estimated on a separate pilot sample).

    Verdict: ``violation`` when a witness refutes the claim (a transcript with
    loss above epsilon, a probed sensitivity above the claim, or a black-box
    lower bound above epsilon); ``pass`` when none does and the accountant's
    own epsilon is within the claim; ``inconclusive`` otherwise.

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check).
    """
    agent = find_changed_agent(scenario, adjacent)
    alg = scenario.algorithm.bind(scenario.problem)
    eps_claimed, delta_claimed = alg.claimed_privacy(scenario.horizon)
    result = scenario.replace(record_transcript=False).run()
    if len(result.ledger) == 0:
        raise ScenarioError("the scenario releases no noisy values (epsilon = inf?): nothing to check")
    sens = independent_sensitivity(scenario)

    def sensitivity(release: Any) -> float:
        return float(sens[release.round - 1])

    reasons: list[str] = []
    witness: dict[str, Any] | None = None
    eps_ledger = max(composition.per_agent(result.ledger, composition.basic_composition,
                                           sensitivity=sensitivity).values())
    eps_tight = max(composition.per_agent(result.ledger, composition.pld_epsilon, sensitivity=sensitivity,
                                          delta=delta, value_discretization_interval=1e-3).values())
    # (3) prober against the algorithm's claimed sensitivity of x(t)
    probe_max, probe_ratio = 0.0, 0.0
    for t in range(1, min(probe_rounds, scenario.horizon - 1) + 1):
        claimed = alg.noise(t + 1, alg.noisy_channels()[0].name).claimed_sensitivity  # y(t+1) masks x(t)
        res = prober.probe_sensitivity(update_pair(scenario, adjacent, agent, t), samples=400, seed=seed + t,
                                       claimed=claimed if claimed > 0 else None)
        probe_max = max(probe_max, res.max_found)
        if claimed > 0:
            probe_ratio = max(probe_ratio, res.ratio_to_claim)
        if res.violation and witness is None:
            witness = {"kind": "sensitivity", "round": t, "z": res.witness_z.tolist(), "value": res.max_found,
                       "claimed": claimed}
            reasons.append(f"round {t}: the update moves by {res.max_found:.6g} > claimed sensitivity {claimed:.6g}")
    # (4) exact replay
    why_not = _replayable(scenario)
    replay_max = replay_frac = None
    rule, rule_p = replay_rule(scenario), replay_rule(adjacent)
    setup = replay_setup(scenario)
    if why_not is None:
        ys = sample_transcripts(setup, rule, runs, seed=seed, mode=scenario.mode)
        losses = replay_loss(ys, setup, rule, rule_p)
        report = auditors.plrv_audit(losses, eps_claimed, delta_claimed, confidence=confidence)
        replay_max, replay_frac = report.max_loss, report.exceed_fraction
        if report.violation:
            if witness is None:
                witness = {"kind": "replay", "run": report.witness, "seed": seed, "loss": report.max_loss}
            reasons.append(f"replay: transcript {report.witness} (seed {seed}) has privacy loss "
                           f"{report.max_loss:.6g} > epsilon {eps_claimed:.6g}")
    else:
        reasons.append(f"no exact replay: {why_not}")
    # (5) black-box lower bound on a scalar statistic
    pilot = sample_transcripts(setup, rule, 500, seed=seed + 10_001, mode=scenario.mode)
    pilot_p = sample_transcripts(setup, rule_p, 500, seed=seed + 10_002, mode=scenario.mode)
    direction = np.nan_to_num((pilot.mean(0) - pilot_p.mean(0)))[:, agent]
    stat = np.nansum(sample_transcripts(setup, rule, runs, seed=seed + 20_001, mode=scenario.mode)[:, :, agent]
                     * direction, axis=tuple(range(1, direction.ndim + 1)))
    stat_p = np.nansum(sample_transcripts(setup, rule_p, runs, seed=seed + 20_002, mode=scenario.mode)[:, :, agent]
                       * direction, axis=tuple(range(1, direction.ndim + 1)))
    bb = auditors.blackbox_audit(stat, stat_p, delta=delta_claimed, alpha=1 - confidence)
    if bb.epsilon_lower_bound > eps_claimed * (1 + 1e-9):
        if witness is None:
            witness = {"kind": "blackbox", "threshold": bb.threshold, "direction": bb.direction,
                       "p": bb.p_hat, "p_prime": bb.p_prime_hat}
        reasons.append(f"black-box: epsilon >= {bb.epsilon_lower_bound:.6g} with confidence {bb.confidence}")
    theorem = _theorem_verdict(alg, eps_ledger, delta_claimed)
    if eps_ledger > eps_claimed * (1 + 1e-9):
        reasons.append(f"the accountant's epsilon {eps_ledger:.6g} (basic composition, independent sensitivity) "
                       f"exceeds the claimed {eps_claimed:.6g}")
    if witness is not None:
        verdict = "violation"
    elif eps_ledger <= eps_claimed * (1 + 1e-9):
        verdict = "pass"
    else:
        verdict = "inconclusive"
    return PrivacyCheckReport(
        algorithm=alg.name, changed_agent=agent, epsilon_claimed=float(eps_claimed),
        delta_claimed=float(delta_claimed), epsilon_ledger=float(eps_ledger), epsilon_tight=float(eps_tight),
        delta=float(delta), sensitivity_probe_max=float(probe_max), sensitivity_probe_ratio=float(probe_ratio),
        replay_max_loss=replay_max, replay_exceed_fraction=replay_frac, replay_runs=runs if why_not is None else 0,
        empirical_epsilon_lower_bound=float(bb.epsilon_lower_bound), confidence=float(confidence),
        theorem=theorem, verdict=verdict, witness=witness, reasons=reasons,
    )

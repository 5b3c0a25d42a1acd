"""Bridges from scenarios to the independent accountant (:mod:`accounting`).

``accounting`` never imports ``asyncdp``; this module hands it plain data and
small adapters that satisfy the protocols ``accounting`` defines:

* :func:`find_changed_agent` — checks that two scenarios are adjacent (same
  everything, one agent's cost changed) and names the agent;
* :func:`find_changed_round` — the same for online loss sequences (one
  round's loss changed, seed 004 Def. 1) and names the round;
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
from accounting.ledger import Ledger
from accounting.replay import ReplaySetup, replay_loss, sample_transcripts

from ..algorithms.base import Algorithm
from ..errors import ScenarioError
from ..scenario import Scenario
from ..engine.timing import Lockstep

__all__ = [
    "find_changed_agent",
    "find_changed_round",
    "ReplayState",
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


def _online(problem: Any) -> bool:
    """Whether the costs are a round-indexed loss sequence (they expose ``num_rounds``; :mod:`asyncdp.problems.online`)."""
    return getattr(problem.costs, "num_rounds", None) is not None


def _check_same_setup(scenario: Scenario, adjacent: Scenario) -> None:
    """Everything but the costs must be equal (see :func:`find_changed_agent`)."""
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


def find_changed_round(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """For online losses (seed 004, Def. 1): check that exactly one round's loss differs; return that round.

    Online losses expose ``num_rounds`` and evaluate round ``t``'s loss with
    ``round_index=t`` (:mod:`asyncdp.problems.online`). Everything but the losses must
    be equal, as in :func:`find_changed_agent`. Rounds ``1..horizon`` are
    compared by every agent's gradient at ``probes`` points of the domain and
    its centre. Such a change moves every agent's input, so all agents are affected.

    Raises:
        AdjacencyError: they differ elsewhere, one of them is not online, or
            the losses differ in no round or in more than one round of the horizon.
    """
    if not (_online(scenario.problem) and _online(adjacent.problem)):
        raise AdjacencyError("round adjacency needs two online problems (costs with num_rounds)")
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
    agents = np.arange(scenario.problem.num_agents)[:, None]
    changed = []
    for t in range(1, scenario.horizon + 1):
        g = scenario.problem.costs.gradient(agents, points[None], round_index=t)
        gp = adjacent.problem.costs.gradient(agents, points[None], round_index=t)
        if np.abs(g - gp).max() > 0:
            changed.append(t)
    if not changed:
        raise AdjacencyError(f"adjacent scenarios have the same loss in every round 1..{scenario.horizon}")
    if len(changed) > 1:
        raise AdjacencyError(f"adjacent scenarios differ in more than one round's loss: rounds {changed}")
    return changed[0]


def _probe_points(domain: Any, probes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([domain.sample(rng, probes), np.asarray(domain.center, dtype=float)[None]])


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
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
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


class ReplayState:
    """An algorithm's whole state dict during replay, shown to :mod:`accounting.replay` as its decision array.

    ``accounting.replay`` passes the state back to the rule untouched, except
    that it reads ``shape`` to size the noise blocks of the noisy channel,
    ``(R, N, n)``. Indexing and ``numpy.asarray`` give the decision array
    (e.g. ``x`` for huang2015, ``y`` for DPSDA).

    Attributes:
        state: the algorithm's state dict (arrays ``(R, N, ...)``).
        decision: ``algorithm.decision(state)``.
    """

    __slots__ = ("state", "decision")

    def __init__(self, state: dict[str, np.ndarray], decision: np.ndarray) -> None:
        self.state = state
        self.decision = np.asarray(decision, dtype=float)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.decision.shape

    def __getitem__(self, key: Any) -> np.ndarray:
        return self.decision[key]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.decision, dtype=dtype)


def _mix_matrix(w: Any, msg: np.ndarray) -> np.ndarray:
    """Row ``i``: ``sum_j W_ij msg[..., j, :]`` for ``msg`` of shape ``(R, N, k)``."""
    dense = w.toarray() if hasattr(w, "toarray") else np.asarray(w, dtype=float)
    return np.einsum("ij,rjk->rik", dense, msg)


@dataclass(frozen=True)
class AlgorithmReplayRule:
    """An algorithm with one noisy broadcast channel as an :class:`accounting.replay.ReplayRule`.

    The replayed state is the algorithm's whole state dict, carried in a
    :class:`ReplayState`. The message mean is the R step with zero noise. The
    next state is the U step. Its noisy channel is the observed mixture that
    ``accounting.replay`` supplies. Every noise-free channel carries no
    private data and is not in the transcript. Its messages are recomputed
    from the replayed state and mixed with the same round weights,
    ``weights(t)`` (e.g. the push-sum weights of DPSDA-PS). Everything is
    vectorized: ``(R, N, ...)``.

    Attributes:
        algorithm: the bound algorithm. problem: its problem. x0: initial points ``(N, n)``.
        weights: ``t -> W(t)``. It is required when the algorithm has noise-free channels.

    Raises:
        ScenarioError: noise-free channels without ``weights``, or a decision
            whose shape differs from the noisy message's (replay sizes the noise by it).
    """

    algorithm: Algorithm
    problem: Any
    x0: np.ndarray
    weights: Any = None

    def _zero(self, t: int, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
        return {c.name: np.zeros(lead + (self.algorithm.noise(t, c.name).dimension,))
                for c in self.algorithm.noisy_channels()}

    def initial_state(self, runs: int) -> ReplayState:
        agents = np.arange(self.problem.num_agents)
        st = self.algorithm.initial_state(np.broadcast_to(self.x0, (runs,) + self.x0.shape), agents, self.problem)
        out = ReplayState(st, self.algorithm.decision(st))
        (channel,) = self.algorithm.noisy_channels()
        if out.shape[-1] != self.algorithm.noise(1, channel.name).dimension:
            raise ScenarioError(f"{self.algorithm.name}: replay needs the decision (dimension {out.shape[-1]}) and "
                                f"the noisy message (dimension {self.algorithm.noise(1, channel.name).dimension}) "
                                "to have the same shape")
        if self.weights is None and any(not c.noisy for c in self.algorithm.channels):
            raise ScenarioError(f"{self.algorithm.name} has noise-free channels: replay needs the round weights")
        return out

    def message_mean(self, state: ReplayState, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        agents = np.arange(state.shape[-2])
        return self.algorithm.message(state.state, t, self._zero(t, state.shape[:-1]), agents, self.problem)[channel]

    def next_state(self, state: ReplayState, mixed: np.ndarray, t: int) -> ReplayState:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        agents = np.arange(state.shape[-2])
        mix = {channel: mixed}
        quiet = [c.name for c in self.algorithm.channels if not c.noisy]
        if quiet:
            msgs = self.algorithm.message(state.state, t, self._zero(t, state.shape[:-1]), agents, self.problem)
            w = self.weights(t)
            mix.update({name: _mix_matrix(w, np.asarray(msgs[name], dtype=float)) for name in quiet})
        out = self.algorithm.update(state.state, mix, t, agents, self.problem)
        return ReplayState(out, self.algorithm.decision(out))


def replay_rule(scenario: Scenario) -> AlgorithmReplayRule:
    """The replay rule of ``scenario`` (algorithm bound to its problem, the scenario's round weights)."""
    return AlgorithmReplayRule(scenario.algorithm.bind(scenario.problem), scenario.problem, scenario.initial_points(),
                               scenario.topology.weights)


def replay_setup(scenario: Scenario) -> ReplaySetup:
    """Weights ``W_t`` and the per-round noise scales declared by the algorithm.

    A round declared with scale 0 is replayed as a noise-free release (see
    :mod:`accounting.replay`): it costs nothing when its messages do not depend
    on the private data, and infinitely much when they do.
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

    Dispatches to ``asyncdp.privacy.adapters.<algorithm name>`` (``-`` read as
    ``_``), whose ``sensitivity(scenario)`` hands the problem's function-class
    constants and the algorithm's parameters to :mod:`accounting.sensitivity`
    and never uses the algorithm's claimed values.

    Raises:
        NotImplementedError: no adapter for this algorithm.
        ScenarioError: the adapter's bound does not apply to this scenario.
    """
    adapter = _adapter(scenario.algorithm.name)
    if adapter is None:
        raise NotImplementedError(f"no independent sensitivity for {scenario.algorithm.name!r} yet")
    return np.asarray(adapter.sensitivity(scenario), dtype=float)


def _adapter(algorithm_name: str) -> Any:
    """The module ``asyncdp.privacy.adapters.<name>`` (``-`` read as ``_``), or None."""
    try:
        return importlib.import_module(f"asyncdp.privacy.adapters.{algorithm_name.replace('-', '_')}")
    except ModuleNotFoundError:
        return None


def update_pair(scenario: Scenario, adjacent: Scenario, agent: int | None, t: int) -> prober.AdjacentPair:
    """The U step of ``agent`` at round ``t`` under both problems, for :func:`accounting.prober.probe_sensitivity`.

    The prober's point ``z`` is the agent's combined value ``z_i(t)``; the
    "cost" handed to the prober is the problem itself.

    ``agent=None`` (round adjacency, where every agent's input changes):
    every agent starts round ``t`` from ``initial_state(z)``, a consensus
    configuration. Every neighbour sends the same message, so the mixed
    channels are the agents' own zero-noise messages. The probed value is
    the sum over agents of the next round's zero-noise noisy-channel messages,
    the values the next release masks. The L1 change of that sum is a lower
    bound on the change of the stacked messages. It is equal when the agents'
    changes have disjoint supports, as with DPSDA's blocks.
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = [c.name for c in alg.noisy_channels()]
    n = scenario.problem.dim

    def rule(z: np.ndarray, t_: int, problem: Any) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        if agent is not None:
            return alg.update({"x": z}, {channel: z}, t_, agent, problem)["x"]
        n_agents = problem.num_agents
        pts = np.broadcast_to(z[..., None, :], z.shape[:-1] + (n_agents, n)).copy()
        agents = np.arange(n_agents)

        def zero(s: int) -> dict[str, np.ndarray]:
            return {c.name: np.zeros(pts.shape[:-1] + (alg.noise(s, c.name).dimension,)) for c in alg.noisy_channels()}

        state = alg.initial_state(pts, agents, problem)
        new = alg.update(state, alg.message(state, t_, zero(t_), agents, problem), t_, agents, problem)
        return alg.message(new, t_ + 1, zero(t_ + 1), agents, problem)[channel].sum(axis=-2)

    domain = scenario.problem.domain
    box = (domain.low, domain.high) if hasattr(domain, "low") else None
    return prober.AdjacentPair(rule, scenario.problem, adjacent.problem, t=t, n=n, domain_box=box)


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass
class PrivacyCheckReport:
    """The outcome of :func:`check_privacy` (JSON-ready through :meth:`to_dict`)."""

    algorithm: str
    changed_agent: int | None
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
    epsilon_at_claimed_delta: float | None = None
    """PLD epsilon at the claimed delta (``None`` for pure-DP claims)."""
    changed_round: int | None = None
    """Round adjacency (online losses): the round whose loss differs; ``changed_agent`` is then ``None``."""

    @property
    def epsilon_accountant(self) -> float:
        """The accountant's epsilon the verdict compares with the claim (see :func:`check_privacy`)."""
        return _accountant_epsilon(self.epsilon_ledger, self.epsilon_at_claimed_delta)

    def to_dict(self) -> dict[str, Any]:
        """All fields and ``epsilon_accountant``; non-finite floats as strings (JSON-ready)."""
        out = {}
        for k, v in {**self.__dict__, "epsilon_accountant": self.epsilon_accountant}.items():
            if isinstance(v, dict):
                v = {kk: _finite(vv) if isinstance(vv, float) else vv for kk, vv in v.items()}
            out[k] = _finite(v) if isinstance(v, float) else v
        return out

    def to_table(self) -> str:
        """The verdict and the epsilon behind it first, then every field, then the reasons.

        Example:
            >>> report = PrivacyCheckReport(
            ...     algorithm="a", changed_agent=0, epsilon_claimed=1.0, delta_claimed=1e-3,
            ...     epsilon_ledger=6.9, epsilon_tight=1.0, delta=1e-6, sensitivity_probe_max=0.0,
            ...     sensitivity_probe_ratio=0.0, replay_max_loss=None, replay_exceed_fraction=None,
            ...     replay_runs=0, empirical_epsilon_lower_bound=0.0, confidence=0.95, theorem="-",
            ...     verdict="pass", witness=None, reasons=[], epsilon_at_claimed_delta=0.56)
            >>> print("\\n".join(report.to_table().splitlines()[:3]))
            verdict                        pass
            claim                          epsilon 1, delta 0.001
            accountant's epsilon           0.56 (PLD at the claimed delta; basic composition: 6.9)
        """
        d = self.to_dict()
        w = max(len(k) for k in d)
        if self.epsilon_at_claimed_delta is None:
            how = "basic composition"
        elif self.epsilon_at_claimed_delta <= self.epsilon_ledger:
            how = f"PLD at the claimed delta; basic composition: {self.epsilon_ledger:.6g}"
        else:
            how = f"basic composition; PLD at the claimed delta: {self.epsilon_at_claimed_delta:.6g}"
        label = "accountant's epsilon"
        lines = [
            f"{'verdict':<{w}}  {self.verdict}",
            f"{'claim':<{w}}  epsilon {self.epsilon_claimed:.6g}, delta {self.delta_claimed:.6g}",
            f"{label:<{w}}  {self.epsilon_accountant:.6g} ({how})",
            "",
        ]
        for k, v in d.items():
            if k in ("reasons", "verdict", "epsilon_accountant"):
                continue
            lines.append(f"{k:<{w}}  {v:.6g}" if isinstance(v, float) else f"{k:<{w}}  {v}")
        lines += [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)


def _accountant_epsilon(eps_ledger: float, eps_at_claimed: float | None) -> float:
    """Basic composition, or the smaller of it and PLD at the claimed delta when that exists."""
    return eps_ledger if eps_at_claimed is None else min(eps_ledger, eps_at_claimed)


def _theorem_verdict(scenario: Scenario, alg: Algorithm, eps_ledger: float, delta_ledger: float) -> str:
    """The paper's claim (``accounting.theorems``) checked against the accountant's epsilon.

    An adapter may define ``theorem_verdict(scenario) -> str`` (its paper's
    own argument recomputed independently); otherwise none is available.
    """
    if alg.name == "huang2015":
        claim = theorems.huang2015_claim(alg.epsilon, c=alg.c, q=alg.q, p=alg.p)
        return theorems.verify(claim, eps_ledger, delta_ledger).message
    adapter = _adapter(alg.name)
    if adapter is not None and hasattr(adapter, "theorem_verdict"):
        return str(adapter.theorem_verdict(scenario))
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

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check).
    """
    changed_round = find_changed_round(scenario, adjacent) if _online(scenario.problem) else None
    agent = None if changed_round is not None else find_changed_agent(scenario, adjacent)

    def compose(ledger: Any, fn: Any, **kwargs: Any) -> dict[Any, float]:
        if agent is not None:
            return composition.per_agent(ledger, fn, **kwargs)
        return {None: composition.network_wide(ledger, fn, **kwargs)}

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
    channel = alg.noisy_channels()[0]
    gaussian = any(r.mechanism == "gaussian" and sensitivity(r) > 0 for r in result.ledger)
    if gaussian and delta_claimed == 0:
        eps_ledger = math.inf
        reasons.append("the ledger has Gaussian releases but the claim has delta = 0: Gaussian noise is never "
                       "pure DP")
    else:
        eps_ledger = max(compose(result.ledger, composition.basic_composition,
                                 sensitivity=sensitivity, delta=delta_claimed).values())
    eps_tight = max(compose(result.ledger, composition.pld_epsilon, sensitivity=sensitivity,
                            delta=delta, value_discretization_interval=1e-3).values())
    eps_at_claimed: float | None = None
    if delta_claimed > 0:
        eps_at_claimed = max(compose(result.ledger, composition.pld_epsilon, sensitivity=sensitivity,
                                     delta=delta_claimed, value_discretization_interval=1e-3).values())
    unnoised = [t for t in range(1, scenario.horizon + 1)
                if alg.noise(t, channel.name).scale == 0 and sens[t - 1] > 0]
    if unnoised:
        eps_ledger = eps_tight = math.inf
        eps_at_claimed = None if eps_at_claimed is None else math.inf
        reasons.append(f"round(s) {unnoised} release a value of independent sensitivity "
                       f"{', '.join(f'{sens[t - 1]:.6g}' for t in unnoised)} without noise (declared scale 0): "
                       "unbounded privacy loss")
    # A per-iteration claim (class attribute ``claim_level = "iteration"``) bounds each round's release given
    # the past, not the run: the accountant's epsilon and the audits then refer to the worst single round.
    focus = None
    if alg.claim_level == "iteration":
        worst = max(result.ledger, key=lambda r: sensitivity(r) / r.scale)
        focus = worst.round - 1
        if math.isfinite(eps_ledger):
            eps_ledger = composition.basic_composition(Ledger([worst]), sensitivity, delta=delta_claimed)
        if eps_at_claimed is not None and math.isfinite(eps_at_claimed):
            eps_at_claimed = composition.pld_epsilon(Ledger([worst]), sensitivity, delta_claimed, 1e-3)
        reasons.append(f"per-iteration claim: epsilon_ledger and the audits refer to round {focus + 1} (largest "
                       "sensitivity/scale); epsilon_tight composes the whole run")
    # (3) prober against the algorithm's claimed sensitivity of x(t)
    norm = "l2" if channel.mechanism == "gaussian" else "l1"
    probe_max, probe_ratio = 0.0, 0.0
    probed = (range(1, min(probe_rounds, scenario.horizon - 1) + 1) if agent is not None
              else [changed_round] if changed_round < scenario.horizon else [])  # only round t0's update differs
    for t in probed:
        claimed = alg.noise(t + 1, channel.name).claimed_sensitivity  # y(t+1) masks x(t)
        res = prober.probe_sensitivity(update_pair(scenario, adjacent, agent, t), samples=400, seed=seed + t,
                                       norm=norm, claimed=claimed if claimed > 0 else None)
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
        losses, per_round = replay_loss(ys, setup, rule, rule_p, per_round=True)
        if focus is not None:
            losses = per_round[:, focus]
        # plrv_audit takes finite losses; an infinite loss enters its delta(epsilon)
        # estimate as the term (1 - e^(epsilon - L))_+ = 1, which the largest float gives exactly
        top = np.finfo(float).max
        report = auditors.plrv_audit(np.nan_to_num(losses, posinf=top, neginf=-top), eps_claimed, delta_claimed,
                                     confidence=confidence)
        replay_max, replay_frac = float(losses.max()), report.exceed_fraction
        if report.violation:
            run = report.witness if report.witness is not None else int(np.argmax(losses))
            if witness is None:
                witness = {"kind": "replay", "run": run, "seed": seed, "loss": float(losses[run])}
                if focus is not None:
                    witness["round"] = focus + 1
                if math.isinf(losses[run]):
                    witness["round"] = int(np.flatnonzero(np.isinf(per_round[run]))[0]) + 1
                if delta_claimed > 0:
                    witness["delta_lower"] = report.delta_lower
            if delta_claimed == 0:
                reasons.append(f"replay: transcript {run} (seed {seed}) has privacy loss "
                               f"{float(losses[run]):.6g} > epsilon {eps_claimed:.6g}")
            else:
                where = f" at round {witness['round']}" if witness.get("round") else ""
                reasons.append(f"replay: delta(epsilon={eps_claimed:.6g}) >= {report.delta_lower:.3g} > claimed "
                               f"delta {delta_claimed:.3g} (confidence {confidence}); transcript {run} (seed {seed}) "
                               f"has privacy loss {float(losses[run]):.6g}{where}")
    else:
        reasons.append(f"no exact replay: {why_not}")
    # (5) black-box lower bound on a scalar statistic
    pilot = sample_transcripts(setup, rule, 500, seed=seed + 10_001, mode=scenario.mode)
    pilot_p = sample_transcripts(setup, rule_p, 500, seed=seed + 10_002, mode=scenario.mode)
    cols = slice(None) if agent is None else agent  # round adjacency: every agent's messages
    direction = np.nan_to_num((pilot.mean(0) - pilot_p.mean(0)))[:, cols]
    if focus is not None:
        direction[np.arange(direction.shape[0]) != focus] = 0.0
    stat = np.nansum(sample_transcripts(setup, rule, runs, seed=seed + 20_001, mode=scenario.mode)[:, :, cols]
                     * direction, axis=tuple(range(1, direction.ndim + 1)))
    stat_p = np.nansum(sample_transcripts(setup, rule_p, runs, seed=seed + 20_002, mode=scenario.mode)[:, :, cols]
                       * direction, axis=tuple(range(1, direction.ndim + 1)))
    bb = auditors.blackbox_audit(stat, stat_p, delta=delta_claimed, alpha=1 - confidence)
    if bb.epsilon_lower_bound > eps_claimed * (1 + 1e-9):
        if witness is None:
            witness = {"kind": "blackbox", "threshold": bb.threshold, "direction": bb.direction,
                       "p": bb.p_hat, "p_prime": bb.p_prime_hat}
        reasons.append(f"black-box: epsilon >= {bb.epsilon_lower_bound:.6g} with confidence {bb.confidence}")
    theorem = _theorem_verdict(scenario, alg, eps_ledger, delta_claimed)
    eps_accountant = _accountant_epsilon(eps_ledger, eps_at_claimed)
    if eps_accountant > eps_claimed * (1 + 1e-9):
        how = ("basic composition" if eps_at_claimed is None
               else f"best of basic composition and PLD at the claimed delta {delta_claimed:.3g}")
        reasons.append(f"the accountant's epsilon {eps_accountant:.6g} ({how}, independent sensitivity) "
                       f"exceeds the claimed {eps_claimed:.6g}")
    if witness is not None:
        verdict = "violation"
    elif math.isinf(eps_claimed):
        verdict = "no-claim"
        reasons.append("the algorithm claims no finite epsilon with these parameters: there is nothing to pass")
    elif eps_accountant <= eps_claimed * (1 + 1e-9):
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
        epsilon_at_claimed_delta=None if eps_at_claimed is None else float(eps_at_claimed),
        changed_round=changed_round,
    )

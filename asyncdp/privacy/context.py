"""What every step of the privacy check shares: the scenario pair, the options, and what is computed once.

:func:`prepare` checks that the two scenarios are adjacent, runs the scenario
once (its realized ledger), computes the accountant's own sensitivity and the
replay rules, and returns a :class:`CheckContext`. Each step of
:mod:`asyncdp.privacy.steps` then takes the :class:`ScenarioPair` and that
context and returns one :class:`~asyncdp.privacy.evidence.Evidence`.

Example:
    >>> pair, ctx = small_example()
    >>> ctx.changed_agent, ctx.epsilon_claimed, len(ctx.ledger) > 0
    (0, 1.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting import composition
from accounting.ledger import Ledger, Release
from accounting.replay import ReplaySetup
from topology.validation import check_integer, check_nonnegative, check_open_unit

from ..algorithms.base import Algorithm
from ..errors import ScenarioError
from ..scenario import Scenario
from .adjacency import _online, find_changed_agent, find_changed_round
from .replay import AlgorithmReplayRule, replay_rule, replay_setup
from .sensitivity import independent_sensitivity

__all__ = ["ScenarioPair", "CheckOptions", "CheckContext", "prepare", "small_example"]


@dataclass(frozen=True)
class ScenarioPair:
    """The scenario whose claim is checked and an adjacent one (one agent's cost or one round's loss changed).

    Attributes:
        scenario: the scenario under test.
        adjacent: the same scenario with the private data changed.
    """

    scenario: Scenario
    adjacent: Scenario


@dataclass(frozen=True)
class CheckOptions:
    """The options of :func:`~asyncdp.privacy.check_privacy` (see there).

    Attributes:
        runs: transcripts sampled for exact replay and the black-box audit (>= 1).
        delta: the delta of the tight (PLD) epsilon (>= 0).
        confidence: confidence level of the statistical bounds, in (0, 1).
        probe_rounds: rounds whose update the prober searches (>= 0).
        seed: seed of the accountant's own sampling (>= 0).

    Raises:
        ScenarioError: an option out of range (the message names it and its value).

    Example:
        >>> CheckOptions(runs=0)
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: check_privacy: runs must be >= 1, got 0
    """

    runs: int = 2000
    delta: float = 1e-6
    confidence: float = 0.95
    probe_rounds: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        where = "check_privacy"
        check_integer(self.runs, "runs", minimum=1, error=ScenarioError, where=where)
        check_nonnegative(self.delta, "delta", error=ScenarioError, where=where)
        check_open_unit(self.confidence, "confidence", error=ScenarioError, where=where)
        check_integer(self.probe_rounds, "probe_rounds", minimum=0, error=ScenarioError, where=where)
        check_integer(self.seed, "seed", minimum=0, error=ScenarioError, where=where)


@dataclass(frozen=True)
class CheckContext:
    """What the steps share, computed once by :func:`prepare`.

    Attributes:
        options: the check's options.
        algorithm: the scenario's algorithm bound to its problem.
        epsilon_claimed, delta_claimed: the algorithm's claim over the horizon.
        changed_agent: the agent whose cost differs (``None`` under round adjacency).
        changed_round: the round whose loss differs (online losses), else ``None``.
        ledger: the realized ledger of one SimPy run of the scenario.
        sensitivity: the accountant's own sensitivity of each round's release, ``(T,)``.
        unnoised: rounds released with declared scale 0 although their
            independent sensitivity is > 0 (unbounded privacy loss).
        focus: for a per-iteration claim (``claim_level = "iteration"``), the
            0-based index of the round with the largest sensitivity/scale, else ``None``.
        focus_release: that round's release, else ``None``.
        rule, rule_adjacent: the replay rules of the two scenarios.
        setup: the round weights and declared noise scales of the scenario.
    """

    options: CheckOptions
    algorithm: Algorithm
    epsilon_claimed: float
    delta_claimed: float
    changed_agent: int | None
    changed_round: int | None
    ledger: Ledger
    sensitivity: np.ndarray
    unnoised: tuple[int, ...]
    focus: int | None
    focus_release: Release | None
    rule: AlgorithmReplayRule
    rule_adjacent: AlgorithmReplayRule
    setup: ReplaySetup

    @property
    def channel(self) -> Any:
        """The algorithm's (first) noisy channel."""
        return self.algorithm.noisy_channels()[0]

    def release_sensitivity(self, release: Release) -> float:
        """The accountant's sensitivity of ``release`` (that of its round)."""
        return float(self.sensitivity[release.round - 1])

    def compose(self, fn: Any, **kwargs: Any) -> dict[Any, float]:
        """``fn`` over the realized ledger: per agent, or network-wide under round adjacency (key ``None``)."""
        if self.changed_agent is not None:
            return composition.per_agent(self.ledger, fn, **kwargs)
        return {None: composition.network_wide(self.ledger, fn, **kwargs)}


def prepare(pair: ScenarioPair, options: CheckOptions) -> CheckContext:
    """Check adjacency, run the scenario once and compute what the steps share.

    Args:
        pair: the scenario and the adjacent one.
        options: the check's options.

    Returns:
        The :class:`CheckContext` of the pair.

    Raises:
        AdjacencyError: the scenarios are not adjacent.
        ScenarioError: the algorithm releases no noise (nothing to check).
        NotImplementedError: no independent sensitivity for the algorithm.

    Example:
        >>> pair, _ = small_example()
        >>> prepare(pair, CheckOptions(runs=10)).unnoised
        ()
    """
    scenario, adjacent = pair.scenario, pair.adjacent
    changed_round = find_changed_round(scenario, adjacent) if _online(scenario.problem) else None
    agent = None if changed_round is not None else find_changed_agent(scenario, adjacent)
    alg = scenario.algorithm.bind(scenario.problem)
    eps_claimed, delta_claimed = alg.claimed_privacy(scenario.horizon)
    result = scenario.replace(record_transcript=False).run()
    if len(result.ledger) == 0:
        raise ScenarioError("the scenario releases no noisy values (epsilon = inf?): nothing to check")
    sens = independent_sensitivity(scenario)
    channel = alg.noisy_channels()[0]
    unnoised = tuple(t for t in range(1, scenario.horizon + 1)
                     if alg.noise(t, channel.name).scale == 0 and sens[t - 1] > 0)
    worst = None
    if alg.claim_level == "iteration":
        # a per-iteration claim bounds each round's release given the past, not the run
        worst = max(result.ledger, key=lambda r: float(sens[r.round - 1]) / r.scale)
    return CheckContext(
        options=options, algorithm=alg, epsilon_claimed=eps_claimed, delta_claimed=delta_claimed,
        changed_agent=agent, changed_round=changed_round, ledger=result.ledger, sensitivity=sens,
        unnoised=unnoised, focus=None if worst is None else worst.round - 1, focus_release=worst,
        rule=replay_rule(scenario), rule_adjacent=replay_rule(adjacent), setup=replay_setup(scenario),
    )


def small_example(runs: int = 200) -> tuple[ScenarioPair, CheckContext]:
    """A small adjacent pair (huang2015 on 3-agent rendezvous, 5 rounds) and its context, for examples and tests.

    Args:
        runs: the ``runs`` option of the context.

    Returns:
        ``(pair, context)``; agent 0's address differs.
    """
    import topology

    from ..algorithms.huang2015 import Huang2015
    from ..problems.problem import rendezvous_problem

    problem = rendezvous_problem([[1.0, 1.0], [0.0, 0.5], [-0.5, 0.0]])
    weights = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    scenario = Scenario(problem, topology.static(weights), Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.6),
                        horizon=5, seed=1)
    pair = ScenarioPair(scenario, scenario.replace(problem=problem.adjacent(0, address=[-1.0, -1.0])))
    return pair, prepare(pair, CheckOptions(runs=runs))

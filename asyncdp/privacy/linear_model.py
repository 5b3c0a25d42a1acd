"""A run as the accountant's linear Gaussian model (:class:`accounting.network.LinearSchedule`).

``linear_schedule``: a run's :class:`~asyncdp.engine.schedule.RealizedSchedule` plus the rule's declared
structure (its noise scales and, for rules that keep older own messages, ``self_lag_weight``). A rule
declares ``affine_in_noise``, ``mixing_factor(t)``: the factor on the engine's mix, and ``self_lag_weight(t)``:
the weight on its own message of round ``t - 1`` (``is_declared_affine``). Under asynchronous timing the run is
re-indexed into global steps in simulated-time order. The declaration is never trusted:
:func:`~asyncdp.privacy.affine_check.verify_affine` checks the model on the run.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> sc = Muffliato.example_scenario()
    >>> linear_schedule(sc.run(), sc).horizon
    5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.network import LinearSchedule

from ..errors import ScenarioError

__all__ = ["is_declared_affine", "linear_schedule"]


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
    rules whose states are combinations of released messages (verified by :func:`~asyncdp.privacy.affine_check.verify_affine`), so an
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
    (:func:`_event_ordered`). The model is checked against the run by :func:`~asyncdp.privacy.affine_check.verify_affine`.

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

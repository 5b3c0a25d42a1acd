"""What an observer sees of a run: its text form, the run that records its view, and that view.

Observers (text form, as on the command line ``--observer``):

* ``eavesdropper`` (the default): every released message; it knows no data and no noise;
* ``node:v``: every message *delivered* to ``v``: those it combines (the
  realized schedule's entries with receiver ``v``) and those it receives
  without combining them (after its deadline, or superseded by a fresher
  copy; read from the run's transcript, ``delivered_messages``), plus
  ``v``'s own data, noise and state: ``v`` knows them, so its view is
  conditioned on them;
* ``nodes:a,b,...``: a colluding set (the union of its members' views and knowledge);
* ``link:a,b``: the messages delivered across the link between ``a`` and ``b``, in both directions.

Every observer also sees the schedule (who combined what, when), which the
engines draw from link and clock randomness only, never from data or noise.
``observed_transcript`` filters a run's released messages to what an observer saw (``NaN`` elsewhere).

Example:
    >>> str(parse_observer("nodes:1,2", 4))
    'nodes:1,2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.errors import AccountingError
from accounting.network import LinearSchedule, Observer

from ..errors import ScenarioError
from .linear_model import _global_steps

__all__ = ["parse_observer", "ObservedTranscript", "observed_transcript", "NODE_KNOWLEDGE", "run_for_views",
           "delivered_messages"]


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


def delivered_messages(result: Any, observer: str | Observer, sched: LinearSchedule) -> list[tuple[int, int]]:
    """The messages the run's transcript delivered to ``observer`` (not lost), in ``sched``'s numbering.

    A node holds every message that reaches it, combined or not: a copy that arrived after its deadline, or
    one that a fresher copy superseded, is in its view as much as the copies it combined (the realized
    schedule records combinations only). For ``nodes:S``, the messages from outside ``S`` to a member; for
    ``link:a,b``, the copies delivered across the link; none for the eavesdropper (it sees every release).

    Args:
        result: the run (transcript and schedule recorded).
        observer: the observer.
        sched: the run's ``linear_schedule`` (its message numbering: rounds, or global steps for a
            re-indexed asynchronous run).

    Returns:
        ``(round, sender)`` pairs (possibly already combined: the accountant takes the union).

    Raises:
        ScenarioError: the run recorded no transcript (a node's deliveries are unknown).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> from asyncdp.privacy.linear_model import linear_schedule
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

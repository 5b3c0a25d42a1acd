"""Pairs of the adjacency class beyond the changed agent's extremal ones, compared with the sensitivity lemma.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) compares the
changed agent's constructed losses with the lemma round by round, and judges
the other agents' extremal pairs and the worst pair found by a privacy
profile. A profile can miss what the lemma comparison sees: a rule that moves
another agent's releases further than the lemma from a late round on (its
profile then refutes only a tight claim, and a Rényi or zCDP claim's
conversion to ``(epsilon, delta)`` is far too loose), or one that moves a
release further only on schedules the search's few runs did not sample
(e.g. a stale message under deadline timing on lossy links). Every pair
evaluated here is in the lemma's class, so a release moved further than the
lemma is a witness that the lemma, hence every bound composed with it, does
not cover the class (exact, confidence 1). Two comparisons:

* :func:`other_agents_over_lemma`: every agent besides the one the search
  checked, on the constructed losses of its extremal pairs (the ones the
  search evaluated already; for an agent it did not evaluate, its first
  :data:`UNSEARCHED_PAIRS` extremal pairs on two runs, every agent's in the
  same stacked replays);
* :func:`others_on_every_run`: each of those agents' best extremal pair
  (ranked on the search's runs), replayed on every engine run of the check
  (a rule that moves another agent's releases further only on a rare event
  of the released values shows it on none of the search's few runs), with
  the changed agent's costs curved everywhere, in one or two replays of the
  recorded transcripts that change several agents' costs at once (each
  agent's shifts are its own under a per-agent rule; candidate by candidate
  otherwise);
* :func:`shifts_over_lemma`: the worst pair's realized shifts on every run
  of its first look (the runs its profile is computed from, drawn
  independently of the search), release by release, as the coverage step
  does for the user's pair.

Example:
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> ctx = SimpleNamespace(sensitivity={"y": np.array([0.0, 1.0])})
    >>> shifts = {"y": np.zeros((3, 2, 2, 1))}
    >>> shifts["y"][2, 1, 0, 0] = 2.5  # run 2, round 2, agent 0: 2.5 > 1.0
    >>> shifts_over_lemma(ctx, shifts, {"y": "gaussian"}, 0).describe()
    'channel y, agent 0, round 2: shift 2.5 > bound 1 (l2, run 2, 1 run(s) over)'
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..problems.costs import LinearOverride
from ..problems.costs.family import CostFamily

__all__ = ["UNSEARCHED_PAIRS", "other_agents_over_lemma", "others_on_every_run", "others_over_lemma",
           "shifts_over_lemma", "worst_pair_over_lemma"]

UNSEARCHED_PAIRS = 2
"""For an agent whose extremal pairs the search did not evaluate (``other_agent_pairs.other_agents``
names the ones it evaluates, unless a pair of the changed agent points at a refutation already), this many of its
first extremal pairs (a direction, both signs) are evaluated for the lemma's comparison: a rule that treats that
agent differently moves its releases further under either of them."""


def other_agents_over_lemma(ctx: Any, fam: Any, evaluated: Any, scenario: Any, runs: Any, objective: Any
                            ) -> tuple[tuple[dict[str, Any], str] | None, str | None]:
    """The largest excess over the lemma of any other agent's extremal pair (module docstring).

    Args:
        ctx: the check's context (its sensitivity, the focus round).
        fam: the search family whose agent ``search_evidence._lemma_exceeded`` compared already.
        evaluated: the search's :class:`~asyncdp.privacy.constructed.CandidateRuns`.
        scenario: the user's scenario.
        runs: the check's engine runs (side 0).
        objective: the search's objective (its candidates are scored as the search scores them).

    Returns:
        ``((witness, reason) or None, note)``: the witness of the largest ratio over the lemma, and a line
        saying which pairs of the agents the search did not evaluate were compared (``None`` when there are none).

    Raises:
        AccountingError: a candidate cannot be replayed.
    """
    from .candidate_evaluation import _evaluate_all, _Family
    from .other_agent_pairs import _OTHER_AGENT_RUNS, _stack_other_agents
    from .search_evidence import _lemma_exceeded

    if fam.agent is None or ctx.sensitivity is None:
        return None, None
    have = {key[0] for key in evaluated.known}  # (the search skips the other agents when it found a pair already)
    missing = [_Family(fam.cls, j) for j in range(scenario.problem.num_agents) if j != fam.agent and j not in have]
    note = None
    if missing:
        extremes = [f.extremes(scenario, None)[:UNSEARCHED_PAIRS] for f in missing]
        _stack_other_agents(missing, extremes, evaluated, scenario)  # (stacked; _evaluate_all then replays nothing)
        for f, ex in zip(missing, extremes):
            _evaluate_all(f, evaluated, scenario, ex, _OTHER_AGENT_RUNS, objective, ctx.focus)
        note = (f"worst-case search: the first {UNSEARCHED_PAIRS} extremal pairs of each of the {len(missing)} other "
                "agent(s) whose pairs the search did not evaluate were compared with the sensitivity lemma round by "
                f"round (on {_OTHER_AGENT_RUNS} runs)")
    worst = None
    for j in sorted({key[0] for key in evaluated.known if isinstance(key[0], int) and key[0] != fam.agent}):
        over = _lemma_exceeded(ctx, _Family(fam.cls, j), evaluated, scenario, runs)
        if over is not None and (worst is None or over[0]["ratio"] > worst[0]["ratio"]):
            worst = over
    return worst, note


def others_on_every_run(evidence: Any, ctx: Any, fam: Any, agent: int | None, evaluated: Any, every: Any,
                        scenario: Any, runs: Any, objective: Any) -> Any:
    """``evidence`` with the witness of another agent's best extremal pair moving a release further than the lemma
    on some engine run of the check (module docstring), or with a doubt when their replay fails.

    The agents are those ``other_agent_pairs.other_agents`` names (and the user's changed agent
    when the worst pair is another agent's), less ``fam.agent`` (whose worst pair the search replayed on every
    run already). Each one's best extremal pair is the first of its extremal pairs by the search's ranking on
    ``other_agent_pairs._OTHER_AGENT_RUNS`` runs; with them, the user's changed agent's costs curved
    everywhere (``kinked_search.curved_candidates``). They are replayed on every run of ``every``
    in one or two replays of combined problem pairs, each changing several agents' costs at once, on the runs'
    recorded transcripts (:func:`_combined`: under a per-agent rule each agent's shifts are its own pair's); where
    that is refused (not a per-agent rule, a noise-free release moved, unicast messages, a failed replay) as
    before: together in constructed transcripts (:func:`~asyncdp.privacy.constructed.constructed_replays` with one
    pinned agent per candidate, at most :func:`~asyncdp.privacy.constructed.stack_size` at a time), or one at a
    time when one construction pass does not settle their transcripts. Their rounds are compared with the lemma
    as the changed agent's are (``search_evidence._lemma_exceeded``: the same round-off
    allowance).

    Args:
        evidence: the search's evidence so far (returned as is when it has a witness).
        ctx: the check's context.
        fam: the family of the worst pair (replayed on every run already).
        agent: the user's changed agent (``None``: round adjacency, returned as is).
        evaluated: the search's :class:`~asyncdp.privacy.constructed.CandidateRuns`.
        every: the :class:`~asyncdp.privacy.constructed.CandidateRuns` of every run of the check (or ``None``:
            built here).
        scenario: the user's scenario.
        runs: the check's engine runs (side 0).
        objective: the search's objective.

    Returns:
        The evidence, with the witness of the largest ratio over the lemma and a line naming what was compared.
    """
    from accounting.errors import AccountingError

    from .constructed import CandidateRuns, constructed_replays, stack_size
    from .candidate_evaluation import _base_of, _evaluate_all, _Family, _known_key, _losses
    from .kinked_search import curved_candidates
    from .other_agent_pairs import _OTHER_AGENT_RUNS, other_agents
    from .pair_search import _rank
    from .search_evidence import _lemma_exceeded

    if agent is None or ctx.sensitivity is None or evidence.witness is not None or fam.agent is None:
        return evidence
    agents = [j for j in dict.fromkeys([*other_agents(scenario.problem.num_agents, agent), agent]) if j != fam.agent]
    if every is None:
        every = CandidateRuns(runs, fam.rows(runs, runs.runs))
    if len(every.rows) <= _OTHER_AGENT_RUNS:  # their evaluation saw every run already (the curved costs: below)
        agents = []
    count = len(every.rows)
    combined = None
    try:
        picks = []
        for j in agents:
            fam_j = _Family(fam.cls, j)
            scored = _evaluate_all(fam_j, evaluated, scenario, fam_j.extremes(scenario, None), _OTHER_AGENT_RUNS,
                                   objective, ctx.focus)  # (known already: no replay)
            if scored:
                picks.append((fam_j, max(scored, key=_rank)))
        base = _base_of(every, scenario)[1]
        mine = _Family(fam.cls, agent)
        curved = curved_candidates(mine, every, scenario)
        # (key, family, candidate, how to replay it alone): every one stacked with the others where they fit
        todo: list[tuple[Any, Any, Any, Any]] = [
            (_known_key(every, f, scenario, c.round_index, c.gradient, c.gradient_prime), f,
             f.candidate(base, scenario, c.round_index, np.asarray(c.gradient), np.asarray(c.gradient_prime)),
             functools.partial(_losses, f, every, scenario, c.round_index, c.gradient, c.gradient_prime, count))
            for f, c in picks]
        todo += [(key, mine, cand, functools.partial(_alone, every, cand, agent)) for key, _, cand in curved]
        members = [(key, int(f.agent), "linear", (c.gradient, c.gradient_prime))
                   for (key, *_), (f, c) in zip(todo, picks) if f.agent is not None and c.round_index is None]
        members = [(key, agent, "curved", pair) for key, pair, _ in curved] + members
        combined = _combined(every, scenario, base, members) if len(members) == len(todo) else None
        if combined is not None:  # one or two replays instead of one per candidate
            every.known.update(combined)
            todo = []
        size = stack_size(every.runs)
        for start in range(0, len(todo), size):
            group = todo[start:start + size]
            try:
                pins = [int(f.agent) for _, f, _, _ in group if f.agent is not None]
                got: Any = constructed_replays(every.runs, [c for _, _, c, _ in group], pins[0], pins=pins)
            except AccountingError:
                raise
            except Exception:  # noqa: BLE001 - one at a time (transcripts that need more passes; raises there)
                got = [alone()[:2] for _, _, _, alone in group]
            for (key, _, _, _), known in zip(group, got):
                every.known[key] = known
        for key, pair, _ in curved:
            every.kinked[key] = pair
    except AccountingError as exc:
        why = (f"worst-case search: the other agents' best extremal pairs cannot be replayed on every run for the "
               f"lemma's check: {exc}")
        return dataclasses.replace(evidence, reasons=(*evidence.reasons, why),
                                   doubt=why if evidence.doubt is None else f"{evidence.doubt}; {why}")
    worst = None
    for f in [f for f, _ in picks] + ([mine] if curved else []):
        over = _lemma_exceeded(ctx, f, every, scenario, runs)
        if over is not None and (worst is None or over[0]["ratio"] > worst[0]["ratio"]):
            worst = over
    if worst is not None and combined is not None and combined.holds(worst[0], every.rows):
        # (its rounds are the recorded transcript's, not a constructed one's)
        worst = ({**worst[0], "method": COMBINED_METHOD}, worst[1].replace("constructed loss", "loss"))
    note = (f"worst-case search: the best extremal pair of each of agents {[f.agent for f, _ in picks]}"
            + (f" and {len(curved)} cost(s) of agent {agent} curved everywhere (against the opposite linear cost)"
               if curved else "")
            + f" were replayed on every one of the {count} engine runs and compared with the sensitivity lemma "
            "round by round"
            + ("" if combined is None else f" (in {combined.replays} replay(s) of the recorded transcripts, each "
               "changing several agents at once: each agent's shifts its own)"))
    reasons = (*evidence.reasons, note, *(() if worst is None else (worst[1],)))
    return dataclasses.replace(evidence, reasons=reasons, witness=None if worst is None else worst[0])


TOGETHER_ENTRIES = 4_000_000
"""Most residual entries (problems times ``R T N d``, over the channels) of the groups' problems replayed together
(:func:`_replay_together`, consecutive groups, about 32 MB; each rider's means as many again while the replay runs); a
group whose problems hold more is replayed two problems at a time (:func:`_replay_group`), as the guard's replays held
them."""


COMBINED_METHOD = ("worst-case search (realized shift of a pair of the lemma's adjacency class on an engine run's "
                   "recorded transcript, in a replay changing several agents' costs at once; exact)")
"""The ``method`` of a witness found by :func:`_combined`'s replays."""


class _SeveralAgents(CostFamily):
    """Several agents' costs replaced in ``base`` (``chain``: overrides of one agent each, the last one holding them
    all), its gradients computed in one pass: ``base``'s, then each replaced agent's own (:func:`_combined`'s replays
    call them every round; the chain's nested overrides would compute and check ``base``'s gradients once per
    replaced agent). The same values as the chain's gradients; everything else is the chain's.

    Args:
        base: the family whose other agents' costs are kept.
        chain: ``[base, override_1(base), override_2(override_1), ...]``
            (:class:`~asyncdp.problems.costs.override.AgentOverride`, distinct agents).

    Example:
        >>> from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic
        >>> base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> one = LinearOverride(base, 0, [3.0, -4.0])
        >>> both = _SeveralAgents(base, [base, one, LinearOverride(one, 2, [1.0, 1.0])])
        >>> both.gradient(np.arange(3), np.ones((3, 2))).tolist()
        [[3.0, -4.0], [0.0, 2.0], [1.0, 1.0]]
    """

    def __init__(self, base: CostFamily, chain: list[Any]) -> None:
        super().__init__(base.num_agents, base.dim)
        self._base, self._chain = base, chain[-1]
        self._linear = np.zeros((base.num_agents, base.dim))
        self._is_linear = np.zeros(base.num_agents, dtype=bool)
        self._own: list[Any] = []
        for fam in chain[1:]:
            if type(fam) is LinearOverride:
                self._linear[fam.agent], self._is_linear[fam.agent] = fam.linear_gradient, True
            else:
                self._own.append(fam)
        self._columns: dict[tuple[str, bytes], Any] = {}  # (:meth:`_columns_of`' answers, per agents array)

    def _columns_of(self, a: np.ndarray) -> tuple[Any, np.ndarray, list[tuple[Any, Any]]]:
        """For the replay's agents ``a`` ``(N',)``: the columns of the linear agents, their gradients ``(m, d)``, and
        each own family's columns (:func:`_index`; ``None``: no column), found once per agents array (the replay
        passes the same one every round)."""
        key = (a.dtype.str, a.tobytes())
        got = self._columns.get(key)
        if got is None:
            linear = np.flatnonzero(self._is_linear[a])
            got = self._columns[key] = (_index(linear), self._linear[a[linear]],
                                        [(fam, _index(np.flatnonzero(a == fam.agent))) for fam in self._own])
        return got

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        return np.asarray(self._chain._value(a, x, round_index), dtype=float)

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        shape = np.broadcast_shapes(a.shape, x.shape[:-1])
        out = np.asarray(self._base._gradient(a, x, round_index), dtype=float)
        if out.shape != shape + (self.dim,):
            out = np.broadcast_to(out, shape + (self.dim,)).copy()
        self._base._check_finite(out, a, x, shape, "gradient", round_index)
        if a.ndim == 1 and x.shape == out.shape and out.ndim == 3 and a.shape[0] == x.shape[1]:  # the replay's call,
            # one column per agent of a (not one agent broadcast over every column): the replaced agents' columns
            out = np.array(out)  # set (the entries np.where below selects; the base's array is left as it gave it)
            linear, values, own = self._columns_of(a)
            if linear is not None:
                out[:, linear] = values
            for fam, mine in own:  # the own gradient at its agent's points only (AgentOverride's: a function of
                if mine is not None:  # each point alone, the same per-entry operations as at every point)
                    out[:, mine] = fam._own_gradient(x[:, mine])
            return out
        # (indexed by ``a`` itself, which broadcasts against ``out``: e.g. ``(N,)`` agents, not ``(R, N)``)
        out = np.where(self._is_linear[a][..., None], self._linear[a], out)
        for fam in self._own:
            out = np.where((a == fam.agent)[..., None], fam._own_gradient(x), out)
        return out

    def function_class(self, domain: Any) -> Any:
        return self._chain.function_class(domain)

    def optimum(self, domain: Any) -> np.ndarray:
        return np.asarray(self._chain.optimum(domain))

    def with_agent(self, agent: int, **changes: Any) -> Any:
        return self._chain.with_agent(agent, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._chain.to_dict())


class _Combined(dict):  # type: ignore[type-arg]
    """:func:`_combined`'s result: by candidate key, ``(losses, per_round)``; :attr:`replays`: how many replays."""

    replays = 0

    def holds(self, witness: Mapping[str, Any], rows: list[int]) -> bool:
        """Whether ``witness`` (of ``search_evidence._lemma_exceeded``: its agent, engine run, round
        and value) is one of these entries' rounds."""
        if witness.get("run") not in rows:
            return False
        r, t = rows.index(witness["run"]), int(witness["round"]) - 1
        return any(key[0] == witness.get("agent") and per_round[r, t] == witness.get("value")
                   for key, (_, per_round) in self.items())


def _combined(every: Any, scenario: Any, base: Any, members: list[tuple[Any, int, str, Any]]) -> _Combined | None:
    """Several one-agent candidates' per-round losses from one or two replays of combined problem pairs (and the
    guard's, :func:`_reads_a_changed_agent`), or ``None`` (then each candidate is replayed on its own, as before).
    When every release is noisy, the groups' pairs and the guard's mixed problems are replayed together, in one
    replay of the recorded transcripts (:func:`_replay_together`: the same residuals as a replay of each; up to
    :data:`TOGETHER_ENTRIES`, consecutive groups at a time).

    Why it is exact. A replay computes every agent's noise-free release ``mu_i(t)`` from the observed transcript
    and agent ``i``'s own state, which evolves from ``i``'s cost and the observed messages only
    (:mod:`accounting.scheduled_replay`). On the engine runs' recorded transcripts (nothing pinned: every
    candidate reads the same messages), agent ``i``'s shift ``mu_i - mu_i'`` under a pair changing several agents'
    costs at once is therefore its shift under the pair changing ``i``'s cost alone, bit for bit (the same
    operations on the same values; checked by the tests). Each candidate's round-``t`` loss is then what a
    transcript on which agent ``i`` releases its noise-free values would lose in that round: ``||shift||_1 / b``
    per Laplace release, ``||shift||^2 / (2 s^2)`` per Gaussian one (the units of a constructed transcript's
    per-round losses, which ``search_evidence._lemma_exceeded`` compares with the lemma). The
    recorded transcripts are not the constructed ones (the changed agent's messages keep their noise), so the
    values differ from a one-agent constructed replay's; both are transcripts of positive density, and the lemma
    bounds every release's shift whatever the transcript.

    The combined problems are an internal replay device, not a pair the user gave: they change several agents'
    costs, so they are outside the one-agent adjacency class and are built without its validation (each change is
    a member of the class: the candidates' own pairs). The candidates are grouped so that no agent changes twice in
    a replay and at least one agent keeps its cost in each (at most ``N - 1`` changed agents). A rule that is not
    per agent (a release reading another agent's cost or state) moves an agent that keeps its cost, and then
    ``None`` is returned: an agent outside the group in the group's replay (it keeps the user's cost), and an
    agent of the group in :func:`_reads_a_changed_agent`'s replays (it keeps its own pair's first or second cost
    while others switch between theirs; every ordered pair of the group's agents once), on every run. Not seen: a
    rule reading another agent's cost only in states these replays do not reach (e.g. only when a third agent's
    cost is changed as well, or only when it keeps the user's cost, as in the read agent's one-agent replay but in
    none of these when the third is in the group: a strict xfail; or only when the reader holds the user's cost
    while a member of the group changes),
    and a read of several members whose changes cancel in every mixed problem (each switches several members at
    once: from four members on, e.g. ``g_1 + g_2 + g_3`` with agent 3's pair opposite to agents 1's and 2's; a strict
    xfail in ``tests/asyncdp/privacy/test_combined_replay.py``; only one mixed problem per member would exclude it,
    the replays the combination saves).
    ``None`` is returned too when a replay fails, a noise-free round has an infinite loss or a mismatch (the
    recorded noise-free messages follow the user's problem), or the messages are not broadcast. (The replay's own
    losses, the noisy releases' density ratios, are computed only when some round is noise-free: the rounds
    compared are the shifts'.)

    Args:
        every: the :class:`~asyncdp.privacy.constructed.CandidateRuns` of every run.
        scenario: the user's scenario; ``base``: its bound base (``_bound_base``).
        members: ``(key, agent, kind, what)``: ``"linear"`` with ``(g, g')`` (``<g, x>`` vs ``<g', x>``) or
            ``"curved"`` with a :class:`~asyncdp.privacy.kinked.KinkedPair` (its linear cost vs its curved one).

    Returns:
        By key, ``(losses (R,), per_round (R, T))`` of every member, or ``None``.
    """
    from .behavior import declared_noise

    n = scenario.problem.num_agents
    if not members or n < 2 or every.runs.unicast:
        return None
    groups: list[list[tuple[Any, int, str, Any]]] = []
    for m in members:  # first fit: distinct agents, at most n - 1 of them
        spot = next((g for g in groups if len(g) < n - 1 and all(o[1] != m[1] for o in g)), None)
        if spot is None:
            groups.append([m])
        else:
            spot.append(m)
    noise = declared_noise(base.algorithm, scenario.horizon)
    # a noise-free release moved between the problems is an infinite loss, seen in the losses only (computed then)
    free = any(ch.mechanism is None or not (np.asarray(ch.scales) > 0).all() for ch in noise.values())
    entries = sum(int(np.size(y)) for y in every.runs.messages.values())  # (one problem's residuals)
    out = _Combined()
    out.replays = len(groups)
    # per group its pair's problems and the guard's mixed ones; consecutive groups whose problems fit in
    # TOGETHER_ENTRIES replayed together (_replay_together), when every release is noisy
    plans = [[[0] * len(g), [1] * len(g), *_mixed_uses(len(g))] for g in groups]
    ready: dict[int, list[dict[str, np.ndarray]]] = {}
    try:
        for k, group in enumerate(groups):
            if not free and k not in ready and len(plans[k]) * entries <= TOGETHER_ENTRIES:
                batch, count = [k], len(plans[k])
                while batch[-1] + 1 < len(groups) and (count + len(plans[batch[-1] + 1])) * entries <= TOGETHER_ENTRIES:
                    batch.append(batch[-1] + 1)
                    count += len(plans[batch[-1]])
                got = _replay_together(every, scenario, base, [(groups[i], u) for i in batch for u in plans[i]],
                                       noise)
                for i in batch:
                    ready[i], got = got[:len(plans[i])], got[len(plans[i]):]
            mixed: list[dict[str, np.ndarray]] | None = None
            if k in ready:
                alone = ready.pop(k)
                sides, mixed = {c: (alone[0][c], alone[1][c]) for c in alone[0]}, alone[2:]
            else:  # (each pair replayed on its own; with noise-free rounds, with its losses: their point masses)
                sides = _replay_group(every, scenario, base, group, noise, free, *plans[k][:2])
            changed = sorted({j for _, j, _, _ in group})
            if sides is None or _moved(sides, [i for i in range(n) if i not in changed]):
                return None  # (an unchanged agent moved: not a per-agent rule; every candidate on its own)
            if _reads_a_changed_agent(every, scenario, base, group, noise, free, sides, mixed):
                return None
            per_agent = np.zeros((n, every.runs.runs, scenario.horizon))  # (only the changed agents' rows are read)
            for c, (r, r_prime) in sides.items():
                mine = (r - r_prime)[:, :, changed]
                scales = np.asarray(noise[c].scales, dtype=float)[None, :]
                scales = np.where(scales > 0, scales, np.inf)  # (a noise-free round: its releases' NaN, loss 0)
                if noise[c].mechanism == "laplace":
                    per_agent[changed] += np.moveaxis(_nansum_coordinates(np.abs(mine)), 2, 0) / scales
                else:
                    per_agent[changed] += np.moveaxis(_nansum_coordinates(mine * mine), 2, 0) / (2.0 * scales * scales)
            for key, j, _, _ in group:
                out[key] = (per_agent[j].sum(axis=1), per_agent[j])
    except Exception:  # noqa: BLE001 - whatever fails here, every candidate is replayed on its own (as before)
        return None
    return out


def _replay_group(every: Any, scenario: Any, base: Any, group: list[tuple[Any, int, str, Any]], noise: Any,
                  free: bool, *sides: list[int]) -> dict[str, tuple[np.ndarray, ...]] | None:
    """Per noisy channel the releases' residuals ``(R, T, N, d)`` on the recorded transcripts of ``every`` under
    one or two problems each changing the costs of every agent of ``group`` (:func:`_combined`), or ``None`` when
    the replay is refused (a noise-free release mismatched, or with two problems a noise-free round with an
    infinite loss).

    Args:
        sides: per problem, per member of ``group``: 0 for its pair's first cost (``P``'s), 1 for its second.
    """
    from .behavior import replay_runs

    problems = [_group_problem(scenario, base, group, use) for use in sides]
    pair = len(problems) == 2
    got = replay_runs(every.runs, *problems, algorithm=base.algorithm, losses=free and pair)
    if ((pair and got.residuals_prime is None) or any(v is not None for v in got.noise_free_mismatch.values())
            or (free and pair and (got.per_round is None or not np.isfinite(got.per_round).all()))):
        return None
    return {c: tuple(np.asarray(x[c], dtype=float) for x in (got.residuals, got.residuals_prime)[:len(problems)])
            for c in got.residuals if noise[c].mechanism is not None}


def _group_problem(scenario: Any, base: Any, group: list[tuple[Any, int, str, Any]], use: list[int]) -> Any:
    """The scenario whose problem changes the cost of every agent of ``group`` (:func:`_combined`).

    Args:
        scenario: the user's scenario; ``base``: its bound base (its algorithm and initial points are kept).
        group: the members ``(key, agent, kind, what)``, distinct agents.
        use: per member, 0 for its pair's first cost (``P``'s), 1 for its second.

    Returns:
        ``scenario`` with a :class:`_SeveralAgents` problem (built without the adjacency class's validation).
    """
    from ..problems.problem import Problem

    user = scenario.problem.costs
    chain: list[Any] = [user]  # one agent replaced after another
    for (_, j, kind, what), u in zip(group, use):
        if kind == "linear":
            chain.append(LinearOverride(chain[-1], j, what[u]))
        else:
            chain.append(what.costs(chain[-1], j) if u else LinearOverride(chain[-1], j, what.gradient))
    return scenario.replace(problem=Problem(scenario.problem.domain, _SeveralAgents(user, chain)),
                            algorithm=base.algorithm, x0=base.x0)


class _Riders:
    """Several problems' rules taking their steps in one replay of recorded broadcast transcripts
    (:func:`_replay_together`): the replay's own rule is the first one; in every round each of the others computes
    its release means from its own state (kept, :meth:`residuals`) and steps on the round's combinations (its own
    copy).

    Nothing pinned and every message broadcast, a round's combinations are the recorded messages' alone (the
    replay gives the adjacent problem's rule a copy of the same ones): each rule steps as in a replay of its own.
    A replay in chunks of runs starts each chunk with :meth:`initial_state` (the chunks in order).

    Args:
        rules: the replay's rule, then the others (:class:`~accounting.replay_inputs.ChannelRule`).
        messages: per noisy channel the recorded messages ``(R, T, N, d)``.
    """

    def __init__(self, rules: list[Any], messages: Mapping[str, np.ndarray]) -> None:
        self.rules, self.messages = rules, messages
        # per rule after the first, per channel, its means round by round (T, R, N, d): each round's rows contiguous
        self._means = [{c: np.empty((y.shape[1], y.shape[0]) + y.shape[2:]) for c, y in messages.items()}
                       for _ in rules[1:]]
        self._rows = slice(0, 0)  # the runs of the chunk under way

    def initial_state(self, runs: int) -> list[Any]:
        self._rows = slice(self._rows.stop, self._rows.stop + runs)
        return [r.initial_state(runs) for r in self.rules]

    def message_means(self, state: list[Any], t: int) -> Mapping[str, np.ndarray]:
        got = [r.message_means(x, t) for r, x in zip(self.rules, state)]
        for means, kept in zip(got[1:], self._means):
            for c in self.messages:  # (copied now: a rule's next step may change what it returned)
                np.copyto(kept[c][t - 1, self._rows], np.asarray(means[c], dtype=float))
        return got[0]

    def next_state(self, state: list[Any], mixed: Mapping[str, np.ndarray], t: int) -> list[Any]:
        own = [mixed] + [{c: m.copy() for c, m in mixed.items()} for _ in self.rules[1:]]
        return [r.next_state(x, m, t) for r, x, m in zip(self.rules, state, own)]

    def residuals(self) -> list[dict[str, np.ndarray]]:
        """Per rule after the first, per channel, its releases' residuals ``y - mu`` ``(R, T, N, d)``: the
        transcript minus its means (the replay's subtraction for its own rule, every round at once)."""
        if self._rows.stop != next(iter(self.messages.values())).shape[0]:
            raise ValueError(f"riders: the replay stepped {self._rows.stop} runs, not every run")
        out = []
        while self._means:  # (each rule's means let go once its residuals are computed)
            kept = self._means.pop(0)
            out.append({c: np.subtract(y, np.moveaxis(kept[c], 0, 1), out=np.empty(y.shape))
                        for c, y in self.messages.items()})
        return out


def _replay_together(every: Any, scenario: Any, base: Any, problems: list[tuple[list[tuple[Any, int, str, Any]],
                                                                                list[int]]],
                     noise: Any) -> list[dict[str, np.ndarray]]:
    """Per problem ``(group, use)`` of ``problems`` (:func:`_group_problem`), per channel the releases' residuals
    ``(R, T, N, d)`` on the recorded transcripts of ``every``, every problem's in one replay (:class:`_Riders`; the
    replay's steps, e.g. each round's combinations, taken once for all of them): what :func:`_replay_group` gives for
    each, bit for bit, when every release of every channel is noisy (checked by the tests).

    Why it is exact: with broadcast messages and nothing pinned, a round's combinations are computed from the
    recorded messages and the schedule alone (the self term is the agent's own recorded message, not its mean), so
    every problem's rule steps on the same values as in its own replay; each rider gets its own copy (a rule may
    write into them or keep them) and its means are copied when returned (a later step may change them).

    Args:
        every: the :class:`~asyncdp.privacy.constructed.CandidateRuns` of every run.
        scenario: the user's scenario; ``base``: its bound base.
        problems: ``(group, use)`` per problem, as :func:`_group_problem` takes them.
        noise: the declared noise per channel (:func:`~asyncdp.privacy.behavior.declared_noise`).

    Returns:
        Per problem, in the order of ``problems``, per channel its residuals ``(R, T, N, d)``.

    Raises:
        ValueError: unicast messages or a noise-free round (of some channel); whatever the replay raises.
    """
    from .behavior import AlgorithmChannelRule, replay_runs

    scenarios = [_group_problem(scenario, base, group, use) for group, use in problems]
    messages = {c: np.asarray(y, dtype=float) for c, y in every.runs.messages.items()}
    free = [c for c in messages if noise[c].mechanism is None or not (np.asarray(noise[c].scales) > 0).all()]
    if every.runs.unicast or free:  # (a noise-free release's mismatch or infinite loss is not in the residuals)
        raise ValueError(f"riders replay recorded broadcast transcripts whose every release is noisy, got "
                         f"{'unicast messages' if every.runs.unicast else f'noise-free rounds on channel {free[0]!r}'}")
    riders: list[_Riders] = []

    def ride(rule: Any, _label: str) -> _Riders:
        others = [AlgorithmChannelRule(base.algorithm, p.problem, p.initial_points()) for p in scenarios[1:]]
        riders.append(_Riders([rule, *others], messages))
        return riders[0]

    got = replay_runs(every.runs, scenarios[0], algorithm=base.algorithm, wrap=ride, losses=False)
    return [{c: np.asarray(got.residuals[c], dtype=float) for c in messages}, *riders[0].residuals()]


def _moved(sides: Mapping[str, tuple[np.ndarray, ...]], agents: list[int],
           reference: Mapping[str, tuple[np.ndarray, ...]] | None = None) -> bool:
    """Whether a release of one of ``agents`` differs (finite and nonzero difference) between the first and second
    problems of ``sides`` (:func:`_replay_group`), or with ``reference`` between the first problem of ``sides`` and
    the first of ``reference``."""
    for c, got in sides.items():
        other = got[1] if reference is None else reference[c][0]
        hit = np.zeros(got[0].shape[2], dtype=bool)
        hit[agents] = True
        differ = (got[0] != other) & hit[:, None]  # (the difference of the differing entries only: their finiteness)
        if differ.any() and np.isfinite(got[0][differ] - other[differ]).any():
            return True
    return False


def _mixed_uses(members: int) -> list[list[int]]:
    """The guard's mixed problems of a group of ``members`` (:func:`_reads_a_changed_agent`): per bit ``b`` of the
    members' positions, 1 (the second cost) for the members whose bit is 0.

    Example:
        >>> _mixed_uses(4)
        [[1, 0, 1, 0], [1, 1, 0, 0]]
    """
    bits = max(0, members - 1).bit_length()
    return [[1 - ((k >> b) & 1) for k in range(members)] for b in range(bits)]


def _reads_a_changed_agent(every: Any, scenario: Any, base: Any, group: list[tuple[Any, int, str, Any]],
                           noise: Any, free: bool, sides: Mapping[str, tuple[np.ndarray, ...]],
                           mixed: list[dict[str, np.ndarray]] | None = None) -> bool:
    """Whether some agent of ``group`` moves a release of another agent of ``group`` (a rule reading another
    agent's cost: the combined replay's unchanged agents do not show it when both agents change in it).

    ``sides``: the group's combined replay (every member on its pair's first cost, then every one on its second).
    For each bit ``b`` of the members' positions in ``group`` one more problem: the members whose bit is 1 on their
    first cost, the others on their second. The members on their first cost must have the releases of the first
    problem of ``sides`` (only the others' costs differ) and the others those of its second: every ordered pair
    (``j``'s cost changed between its pair's two costs, ``i``'s kept) occurs in one of these ``2 * ceil(log2
    |group|)`` comparisons, from ``ceil(log2 |group|)`` problems replayed on every run of ``every``;
    but ``j`` switches together with the other members on the far side of bit ``b``, so a release reading several
    members' costs is missed when their changes cancel in every such problem (:func:`_combined`).
    An agent keeping its cost has its own pair's cost there (not the user's, as in its one-agent replay). A per-agent
    rule never trips it (the replays are exact: the same operations on the same values, bit for bit); a refused
    replay counts as a move. ``mixed``: these problems' residuals replayed already (:func:`_replay_together`, in
    the order of :func:`_mixed_uses`), else they are replayed here.
    """
    uses = _mixed_uses(len(group))
    for start in range(0, len(uses), 2):
        if mixed is None:
            got = _replay_group(every, scenario, base, group, noise, free, *uses[start:start + 2])
        else:
            got = {c: tuple(m[c] for m in mixed[start:start + 2]) for c in mixed[0]}
        if got is None:
            return True
        for t, use in enumerate(uses[start:start + 2]):
            one = {c: (x[t],) for c, x in got.items()}
            first = [group[k][1] for k, u in enumerate(use) if u == 0]
            second = [group[k][1] for k, u in enumerate(use) if u == 1]
            if _moved(one, first, {c: (x[0],) for c, x in sides.items()}) or \
                    _moved(one, second, {c: (x[1],) for c, x in sides.items()}):
                return True
    return False


def _index(columns: np.ndarray) -> Any:
    """Ascending column indices as a slice when consecutive (a view; the same entries), ``None`` when empty.

    Example:
        >>> _index(np.array([1, 2, 3])), _index(np.array([0, 2])).tolist(), _index(np.array([], dtype=int))
        (slice(1, 4, None), [0, 2], None)
    """
    if columns.size == 0:
        return None
    first, last = int(columns[0]), int(columns[-1])
    return slice(first, last + 1) if last - first + 1 == columns.size else columns


def _nansum_coordinates(a: np.ndarray) -> np.ndarray:
    """``numpy.nansum(a, axis=-1)`` of nonnegative ``a``; with two coordinates the two columns (NaN as 0) added as
    arrays: one addition of two nonnegative numbers per release, the reduction's bits without its cost per row.

    Example:
        >>> a = np.array([[0.5, np.nan], [0.25, 2.0]])
        >>> _nansum_coordinates(a).tolist() == np.nansum(a, axis=-1).tolist() == [0.5, 2.25]
        True
    """
    if a.shape[-1] != 2:
        return np.nansum(a, axis=-1)
    first, second = a[..., 0], a[..., 1]
    return np.where(np.isnan(first), 0.0, first) + np.where(np.isnan(second), 0.0, second)


def _alone(every: Any, cand: Any, agent: int) -> tuple[np.ndarray, np.ndarray]:
    """One candidate's losses and per-round contributions on every run of ``every``, replayed alone (raises what
    its construction raises)."""
    from .constructed import constructed_replay

    replay = constructed_replay(every.runs, *cand.scenarios(), agent)[1]
    assert replay.losses is not None and replay.per_round is not None
    return replay.losses, replay.per_round


def shifts_over_lemma(ctx: Any, shifts: Mapping[str, Any], mechanisms: Mapping[str, str], agent: int | None,
                      roundoff: float = 0.0) -> Any:
    """The release of ``agent`` (every agent's under round adjacency, ``agent`` ``None``) whose realized shift
    is furthest above the lemma on some run, or ``None``.

    Args:
        ctx: the check's context (``sensitivity``: per noisy channel the lemma of each round, ``(T,)``).
        shifts: per channel the realized shifts (:func:`accounting.coverage.realized_shifts`): ``(R, T, N, d)``
            or ``(R, T, N, N, d)``.
        mechanisms: per noisy channel its mechanism (``"gaussian"``: L2, ``"laplace"``: L1); other channels are
            not compared.
        agent: the pair's changed agent.
        roundoff: the round-off a shift may carry (:func:`asyncdp.privacy.coverage.shift_roundoff` of the runs'
            releases), allowed on top of the comparison's relative tolerance.

    Returns:
        The :class:`accounting.coverage.UncoveredRelease` of the largest ratio over the lemma, or ``None``.

    Raises:
        PrivacyParameterError: malformed shifts (:func:`accounting.coverage.uncovered_by_norms`).
    """
    from accounting.coverage import release_norms, uncovered_by_norms

    sens = getattr(ctx, "sensitivity", None)
    if sens is None:
        return None
    norms, bounds = {}, {}
    for c, s in shifts.items():
        if c not in sens or mechanisms.get(c) not in ("gaussian", "laplace"):
            continue
        mags = release_norms(s, str(mechanisms[c]), c)  # (R, T, N) or (R, T, N, N): the sender on axis 2
        if agent is not None:  # the pair's other agents are not compared here (as not released)
            keep = np.zeros(mags.shape[2], dtype=bool)
            keep[agent] = True
            mags = np.where(keep.reshape((1, 1, -1) + (1,) * (mags.ndim - 3)), mags, np.nan)
        lemma = np.asarray(sens[c], dtype=float)[:mags.shape[1]]
        norms[c] = mags
        bounds[c] = np.repeat(lemma[:, None], mags.shape[2], axis=1)
    hits = uncovered_by_norms(norms, bounds, dict(mechanisms), atol=max(1e-12, roundoff)) if norms else []
    return max(hits, key=lambda u: u.shift / u.bound if u.bound > 0 else np.inf, default=None)


def others_over_lemma(evidence: Any, ctx: Any, fam: Any, evaluated: Any, scenario: Any,
                      runs: Any, objective: Any) -> Any:
    """``evidence`` with the witness of :func:`asyncdp.privacy.lemma_reach.other_agents_over_lemma` (another
    agent's extremal pair moves a release further than the lemma), or with a doubt when their replay fails."""
    from accounting.errors import AccountingError

    try:
        over, note = other_agents_over_lemma(ctx, fam, evaluated, scenario, runs, objective)
    except AccountingError as exc:
        why = f"worst-case search: the other agents' extremal pairs cannot be replayed for the lemma's check: {exc}"
        return dataclasses.replace(evidence, reasons=(*evidence.reasons, why),
                                   doubt=why if evidence.doubt is None else f"{evidence.doubt}; {why}")
    reasons = (*evidence.reasons, *(() if note is None else (note,)), *(() if over is None else (over[1],)))
    return dataclasses.replace(evidence, reasons=reasons, witness=None if over is None else over[0])


def worst_pair_over_lemma(ctx: Any, shifts: Any, p: Any, base_witness: dict[str, Any], runs: Any, pair_desc: str
                          ) -> tuple[dict[str, Any], str] | None:
    """The worst pair's release furthest above the lemma on the runs of its first look
    (:func:`asyncdp.privacy.lemma_reach.shifts_over_lemma`), as ``(witness, reason)``, or ``None``: the pair is
    in the lemma's class, so a realized shift above it is a witness (exact, confidence 1)."""
    from accounting.errors import AccountingError

    from .behavior import declared_noise, run_origin

    if isinstance(shifts, AccountingError):
        return None
    mechanisms = {c: str(ch.mechanism) for c, ch in declared_noise(p.algorithm.bind(p.problem), p.horizon).items()
                  if ch.mechanism is not None}
    from .coverage import shift_roundoff

    u = shifts_over_lemma(ctx, shifts, mechanisms, base_witness.get("agent"),
                          shift_roundoff(runs.messages, ctx.state_magnitude))
    if u is None:
        return None
    ratio = u.shift / u.bound if u.bound > 0 else float("inf")
    witness = {**base_witness, "kind": "sensitivity", "against": "lemma", **u.to_dict(), "value": u.shift,
               "claimed": u.bound, "ratio": ratio, **run_origin(runs, u.run),
               "runs": runs.runs, "method": "realized shift of the worst pair of the adjacency class (exact replay "
               "under both problems of its own engine runs)", "confidence": 1.0,
               "claim_form": ctx.form_name}
    reason = (f"worst case: {pair_desc}: on its engine run {u.run} (of {runs.runs}), {u.describe()}: the pair is in "
              "the paper's adjacency class, so its sensitivity lemma does not cover a pair it claims to "
              f"(ratio {ratio:.3g})")
    return witness, reason

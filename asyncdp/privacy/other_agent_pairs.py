"""The extremal pairs of the agents the user's pair does not change, for a claim of any agent's change.

``other_agents`` picks the agents (all of them up to ``_OTHER_AGENTS``); their extremal pairs are evaluated on
``_OTHER_AGENT_RUNS`` runs in shared stacked replays (``_stack_other_agents``), or along with the search's own
(``_others_ahead``); ``_other_agents`` returns the worst when it points at a refutation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..scenario import Scenario
from .candidate_evaluation import (_CANDIDATE_RUNS, _KINKED_RUNS, CandidatePair, _base_of, _evaluate_all, _Family,
                                   _key)
from .constructed import CandidateRuns, constructed_replays, stack_size
from .kinked_search import _kinked_candidates
from .pair_search import _rank
from .search_evidence import _refutes

_OTHER_AGENT_RUNS = 2
"""Engine runs on whose schedules the extremal pairs of the agents the user's pair does not change are
evaluated (:func:`_other_agents`)."""


_OTHER_AGENTS = 8
"""At most this many agents besides the changed one are evaluated (:func:`other_agents`)."""


def other_agents(n_agents: int, changed: int | None) -> list[int]:
    """The agents besides ``changed`` whose extremal pairs :func:`_other_agents` evaluates: all of them when
    there are at most :data:`_OTHER_AGENTS`, else that many spread evenly over the indices (the first and the
    last included).

    Example:
        >>> other_agents(5, 0), other_agents(100, 0)
        ([1, 2, 3, 4], [1, 15, 29, 43, 57, 71, 85, 99])
    """
    rest = [j for j in range(n_agents) if j != changed]
    if len(rest) <= _OTHER_AGENTS:
        return rest
    picks = np.unique(np.round(np.linspace(0, len(rest) - 1, _OTHER_AGENTS)).astype(int))
    return [rest[int(k)] for k in picks]


def _other_agents(ctx: Any, fam: _Family, scenario: Scenario, evaluated: CandidateRuns, objective: Any
                  ) -> CandidatePair | None:
    """The worst extremal pair of the agents the user's pair does not change, if it points at a refutation.

    The claim is for a change of *any* agent's cost, and a rule may treat agents differently (a step size,
    a clipping bound or a noise factor of its own per agent); the user's pair changes one agent. The other
    agents' (:func:`other_agents`: all of them up to :data:`_OTHER_AGENTS`) extremal pairs are evaluated on
    :data:`_OTHER_AGENT_RUNS` runs (their constructed losses: the
    changed agent pinned to its noise-free values, every other message as the run released it); the worst,
    ranked like the search's, is returned when ``_refutes`` holds for it, else ``None``.
    """
    worst: CandidatePair | None = None
    fams = [_Family(fam.cls, j) for j in other_agents(scenario.problem.num_agents, fam.agent)]
    extremes = [fam_j.extremes(scenario, None) for fam_j in fams]
    # the kinked pairs the lemma's check may evaluate next (_evaluate_kinked), in the same replay where they fit
    extra = (_kinked_candidates(fam, evaluated, scenario, kept_only=True) or []) if ctx.sensitivity is not None \
        else []
    _stack_other_agents(fams, extremes, evaluated, scenario,  # (what _evaluate_all then reads: no replay)
                        [(key, c, fam.agent) for key, _, c in extra])
    for fam_j, extremes_j in zip(fams, extremes):
        scored = _evaluate_all(fam_j, evaluated, scenario, extremes_j, _OTHER_AGENT_RUNS, objective, ctx.focus)
        for c in scored:
            if worst is None or _rank(c) > _rank(worst):
                worst = c
    runs = ctx.engine_runs(0)
    return worst if worst is not None and _refutes(ctx, runs, worst, scenario) else None


def _stack_other_agents(fams: Sequence[_Family], extremes: Sequence[Sequence[tuple[str, int | None, Any, Any]]],
                        evaluated: CandidateRuns, scenario: Scenario, extra: Sequence[tuple[Any, Any, Any]] = ()
                        ) -> None:
    """The constructed losses of :func:`_other_agents`' candidates (``extremes[k]``: agent ``fams[k].agent``'s
    extremal pairs) on :data:`_OTHER_AGENT_RUNS` runs, every agent's in the same stacked replays
    (:func:`~asyncdp.privacy.constructed.constructed_replays` with one pinned agent per candidate), kept where
    ``_evaluate_all`` reads them (:attr:`~asyncdp.privacy.constructed.CandidateRuns.known`, under the keys
    and for the runs it would store): its calls then replay nothing. Each candidate's losses are those of its
    own replay (each run's values are its own). A group whose stacked replay fails, or that needs more than
    one construction pass, is left to ``_evaluate_all`` (one agent at a time, raising what it raises).

    ``extra``: ``(key, candidate, pinned agent)`` of candidates a later step evaluates on the same runs (the
    kinked pairs, ``_kinked_candidates``), replayed with the first group where they fit and one pass settles
    their agent's transcripts too; their losses are kept in
    :attr:`~asyncdp.privacy.constructed.CandidateRuns.spare` (that step records them, or replays them itself
    when they are not there)."""
    from .constructed import _one_pass

    runs = evaluated.prefix(_OTHER_AGENT_RUNS)
    size = stack_size(runs)
    base = _base_of(evaluated, scenario)[1]
    count = min(_OTHER_AGENT_RUNS, len(evaluated.rows))
    todo = _other_agent_todo(fams, extremes, evaluated, scenario)
    for key in list(todo):  # evaluated already, with a batch of the search (_others_ahead)
        spare = evaluated.spare.pop(key, None)
        if spare is not None and spare[0].size >= count:
            evaluated.known[key] = spare
            del todo[key]
    pending = list(todo.items())
    ahead = [e for e in extra if e[0] not in evaluated.spare and e[0] not in evaluated.known]
    if not ahead or _KINKED_RUNS != _OTHER_AGENT_RUNS or len(pending) + len(ahead) > size \
            or any(_one_pass(runs, base, int(j)) is None for j in {e[2] for e in ahead}):
        ahead = []
    for start in range(0, len(pending) if size > 1 else 0, size):
        group = pending[start:start + size]
        agents = [int(f.agent) for _, (f, _, _, _) in group if f.agent is not None]
        if len(agents) != len(group):
            return
        cands = [f.candidate(base, scenario, t0, g, gp) for _, (f, t0, g, gp) in group]
        more = ahead if start == 0 else []
        try:
            got = constructed_replays(runs, cands + [c for _, c, _ in more], agents[0],
                                      pins=agents + [int(j) for _, _, j in more])
        except Exception:  # noqa: BLE001 - left to _evaluate_all (which replays them agent by agent)
            continue
        for (key, _), known in zip(group, got):
            if key not in evaluated.known or evaluated.known[key][0].size < count:
                evaluated.known[key] = known
        for (key, _, _), known in zip(more, got[len(group):]):
            evaluated.spare[key] = known


def _other_agent_todo(fams: Sequence[_Family], extremes: Sequence[Sequence[tuple[str, int | None, Any, Any]]],
                      evaluated: CandidateRuns, scenario: Scenario) -> dict[Any, tuple[_Family, int | None, Any, Any]]:
    """:func:`_stack_other_agents`' candidates not yet evaluated on its runs, by their keys in ``evaluated.known``
    (``_evaluate_all``'s keys), in order."""
    base_scenario = _base_of(evaluated, scenario)[0]
    count = min(_OTHER_AGENT_RUNS, len(evaluated.rows))
    todo: dict[Any, tuple[_Family, int | None, Any, Any]] = {}
    for fam_j, extremes_j in zip(fams, extremes):
        head = (fam_j.agent, id(base_scenario))  # _evaluate_all's keys
        for _, t0, g, gp in extremes_j:
            key = head + _key(t0, g, gp)
            known = evaluated.known.get(key)
            if key not in todo and (known is None or known[0].size < count):
                todo[key] = (fam_j, t0, g, gp)
    return todo


def _others_ahead(ctx: Any, fam: _Family, evaluated: CandidateRuns, scenario: Scenario, best: CandidatePair
                  ) -> list[Any]:
    """Under a one-agent class, the other agents' extremal pairs (:func:`_other_agents`) and the kinked pairs
    (``_kinked_candidates``), offered to the search's next stacked replay
    (:func:`~asyncdp.privacy.pair_search.search_pairs`' ``ahead``,
    ``[]`` when none is; each on its own first :data:`_OTHER_AGENT_RUNS` runs, pinned to its own agent) when the check would evaluate them after the search as far as the extremal
    pairs tell (the best of them does not refute the claim: a search that finds a pair that does leaves their
    losses unused) and one construction pass gives every agent's settled values (``constructed._one_pass``:
    ``"settled"``, or ``"pinned"`` under asynchronous reads ahead; the stack pins each run's own agent and checks
    each block as its own replay would, else it is replayed without them). Their losses go to :attr:`~asyncdp.privacy.constructed.CandidateRuns.spare`, where those steps read
    them."""
    from .constructed import _one_pass

    agent = fam.agent
    if agent is None or _KINKED_RUNS != _OTHER_AGENT_RUNS or _refutes(ctx, ctx.engine_runs(0), best, scenario):
        return []
    fams = [_Family(fam.cls, j) for j in other_agents(scenario.problem.num_agents, agent)]
    todo = _other_agent_todo(fams, [f.extremes(scenario, None) for f in fams], evaluated, scenario)
    base = _base_of(evaluated, scenario)[1]
    rows = evaluated.prefix(_OTHER_AGENT_RUNS).runs
    try:
        kinked = (_kinked_candidates(fam, evaluated, scenario, kept_only=True) or []) \
            if ctx.sensitivity is not None else []
        entries = [(key, f.candidate(base, scenario, t0, g, gp), int(f.agent), rows)
                   for key, (f, t0, g, gp) in todo.items() if f.agent is not None]
        entries += [(key, c, agent, rows) for key, _, c in kinked]
        runs = evaluated.prefix(min(_CANDIDATE_RUNS, 8))
        if not entries or any(_one_pass(runs, base, j) is None for j in {agent, *(e[2] for e in entries)}):
            return []
    except Exception:  # noqa: BLE001 - left to the check's own steps (which raise what they raise)
        return []
    return entries

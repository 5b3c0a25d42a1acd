"""Bridges from scenarios to the independent accountant (:mod:`accounting`).

* :mod:`.check`: :func:`check_privacy`, the privacy check of a scenario pair, a pipeline of
  :mod:`.context` (adjacency, one run, what the steps share) -> :mod:`.steps` (one
  :class:`~.evidence.Evidence` per method) -> :mod:`.verdict` -> :mod:`.report`;
* :mod:`.adjacency`: which agent's cost (or round's loss) the adjacent scenario changed, from probe points and
  the cost families' structure, and which others it could not show unchanged;
* :mod:`.replay`: an algorithm's R and U steps as the accountant's replay rule;
* :mod:`.sensitivity`: the accountant's own sensitivity (the paper record's lemma, per release and channel)
  and the prober's update pair;
* :mod:`.behavior`: the engine's runs of a scenario (messages and realized schedules) and their replay;
* the steps that read those runs: ``.conformance`` (noise conformance; its draw-by-draw check
  ``.noise_draws`` and round-off allowances ``.roundoff``), ``.exact_replay`` and ``.blackbox_audit``;
* :mod:`.worst_case`: the worst adjacent pair of the paper's class (extremal costs, then a batched search: draws and a hill climb);
  its parts are :mod:`.candidate_pairs` (the class's members), :mod:`.candidate_evaluation` (their stacked
  evaluation), :mod:`.search_objective`, :mod:`.pair_search` (draws and hill climb) and :mod:`.search_evidence`;
* :mod:`.strategies`: Hypothesis strategies for adjacent scenario pairs (any rule's declared adjacency class);
* :mod:`.properties`: :func:`~.properties.assert_private`, the check of one drawn pair for a property test.

Example:
    >>> from asyncdp.privacy import check_privacy
    >>> callable(check_privacy)
    True
"""

from .adjacency import Adjacency, adjacency_after_runs, check_adjacency, find_changed_agent, find_changed_round
from .behavior import EngineRuns, replay_runs, run_engine
from .check import check_privacy
from .context import CheckContext, CheckOptions, ScenarioPair
from .evidence import Evidence
from .replay import AlgorithmReplayRule, ReplayState, replay_rule, replay_setup, transcript_array
from .report import PrivacyCheckReport
from .sensitivity import independent_sensitivity, release_sensitivity, update_pair
from .steps import STEPS
from .verdict import Decision, decide

__all__ = [
    "Adjacency",
    "adjacency_after_runs",
    "check_adjacency",
    "find_changed_agent",
    "find_changed_round",
    "ReplayState",
    "AlgorithmReplayRule",
    "replay_setup",
    "replay_rule",
    "transcript_array",
    "independent_sensitivity",
    "release_sensitivity",
    "update_pair",
    "PrivacyCheckReport",
    "check_privacy",
    "ScenarioPair",
    "CheckOptions",
    "CheckContext",
    "Evidence",
    "STEPS",
    "Decision",
    "decide",
    "EngineRuns",
    "run_engine",
    "replay_runs",
]

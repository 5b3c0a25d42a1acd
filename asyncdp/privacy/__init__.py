"""Bridges from scenarios to the independent accountant (:mod:`accounting`).

* :mod:`.check`: :func:`check_privacy`, the privacy check of a scenario pair;
* :mod:`.adapters`: what each algorithm hands the accountant (its constants, never its claims);
* :mod:`.strategies`: Hypothesis strategies for adjacent scenario pairs.

Example:
    >>> from asyncdp.privacy import check_privacy
    >>> callable(check_privacy)
    True
"""

from .check import (
    AlgorithmReplayRule,
    PrivacyCheckReport,
    ReplayState,
    check_privacy,
    find_changed_agent,
    find_changed_round,
    independent_sensitivity,
    replay_rule,
    replay_setup,
    transcript_array,
    update_pair,
)

__all__ = [
    "find_changed_agent",
    "find_changed_round",
    "ReplayState",
    "AlgorithmReplayRule",
    "replay_setup",
    "replay_rule",
    "transcript_array",
    "independent_sensitivity",
    "update_pair",
    "PrivacyCheckReport",
    "check_privacy",
]

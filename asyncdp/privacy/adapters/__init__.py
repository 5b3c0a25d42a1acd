"""Per-algorithm inputs for the independent accountant.

Module ``asyncdp.privacy.adapters.<name>`` (the algorithm's registry name with
``-`` read as ``_``) defines ``sensitivity(scenario) -> numpy array (T,)``: the
sensitivity of each round's release, computed by :mod:`accounting.sensitivity`
from the problem's function-class constants and the algorithm's parameters —
never from the algorithm's own claimed values.
"""

from __future__ import annotations

import numpy as np

from ...errors import ScenarioError

__all__ = ["require_out_neighbours"]


def require_out_neighbours(scenario, why: str) -> None:
    """In unicast mode, check that every agent sends to someone in every round.

    An agent without out-neighbours mixes its own noise-free value, so its
    combination is no longer a function of released messages and the
    sensitivity argument of the paper (``why``) does not apply.

    Raises:
        ScenarioError: naming the first round and agent without an out-neighbour.
    """
    if scenario.mode != "unicast":
        return
    for t in range(1, scenario.horizon + 1):
        w = scenario.topology.weights(t)
        outdeg = np.asarray((w != 0).sum(axis=0)).ravel() - (w.diagonal() != 0)
        if (outdeg == 0).any():
            raise ScenarioError(
                f"round {t}: agent {int(np.flatnonzero(outdeg == 0)[0])} has no out-neighbour in unicast mode; "
                f"its noise-free self term breaks the sensitivity argument ({why})"
            )

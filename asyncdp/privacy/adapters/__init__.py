"""Per-paper inputs for the independent accountant: one :class:`Adapter` record per paper.

Each paper's module here (:mod:`.huang2015`, :mod:`.showkatbakhsh`,
:mod:`.wang_basar`, :mod:`.dpsda_c` / :mod:`.dpsda_ps`) defines
``sensitivity(scenario) -> numpy array (T,)``, the sensitivity of each
round's release computed by the paper's module in :mod:`accounting.papers`
from the problem's function-class constants and the algorithm's parameters
(never from the algorithm's own claimed values), and a theorem verdict: the
paper's claim checked against an independent recomputation. Its ``ADAPTER``
collects the two; the paper registry (:mod:`asyncdp.algorithms.registry`)
imports it directly, so nothing is looked up by module name.

Example:
    >>> from asyncdp.papers.huang2015.privacy import ADAPTER
    >>> ADAPTER.verdict is not None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ScenarioError

__all__ = ["Adapter", "require_out_neighbours"]


@dataclass(frozen=True)
class Adapter:
    """What :func:`asyncdp.privacy.check_privacy` asks of a paper's accountant inputs.

    Attributes:
        sensitivity: ``scenario -> (T,)`` array, the independent sensitivity of each round's release.
        verdict: ``(scenario, eps_ledger, delta_ledger) -> str``, the paper's claim checked against an
            independent recomputation (the ledger's epsilon and delta are there for papers whose claim is
            checked against the ledger itself, e.g. Huang, Mitra and Vaidya, ICDCN 2015); ``None`` if the
            paper has none yet.
        claimed_scale: ``(scenario, t) -> float``, the noise scale of round ``t``'s release that the paper's
            claim prescribes, recomputed by the paper's accountant (:mod:`accounting.papers`) from its own
            sensitivity bound; compared with the rule's declaration by the paper contract test. ``None`` if
            the paper prescribes none.
        gradient_class: ``scenario -> (C2, norm)``: the adjacency class the paper's sensitivity bound
            assumes, "any two costs whose gradients have L2 norm at most ``C2``", and the norm of that
            bound (``"l1"`` or ``"l2"``); the worst-case search (:mod:`asyncdp.privacy.worst_case`)
            builds extremal pairs in it. ``None`` if the paper's class is not of that form.
    """

    sensitivity: Callable[[Any], np.ndarray]
    verdict: Callable[[Any, float, float], str] | None = None
    claimed_scale: Callable[[Any, int], float] | None = None
    gradient_class: Callable[[Any], tuple[float, str]] | None = None


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

"""Muffliato's lemma and claims as the privacy check reads them (the accountant's half:
:mod:`accounting.papers.muffliato`).

* :func:`sensitivity`: the one noisy release per agent (round 1) has L2 sensitivity the diameter of the
  problem's domain; later rounds release post-processed values (sensitivity 0);
* :func:`theorem_verdict`: the local claim against the ledger's epsilon;
* :func:`pairwise_claim`: the pairwise network DP claim of the authors' figure for the scenario's gossip
  matrix, read by :mod:`asyncdp.privacy.network` (verified per pair, with witnesses).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.claims import verify
from accounting.papers import muffliato as S

from ..record import GradientClass, ValueClass

__all__ = ["sensitivity", "theorem_verdict", "value_class", "gradient_class", "pairwise_claim", "gossip_matrix"]


def sensitivity(scenario: Any) -> np.ndarray:
    """L2 sensitivity of each release ``y(t)``, ``t = 1..T`` (the domain's diameter in round 1, then 0).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> sensitivity(Muffliato.example_scenario()).tolist()
        [1.0, 0.0, 0.0, 0.0, 0.0]
    """
    diameter = float(scenario.problem.domain.diameter)
    return np.array([S.muffliato_release_sensitivity(t, diameter=diameter) for t in range(1, scenario.horizon + 1)])


def theorem_verdict(scenario: Any, eps_ledger: float, delta_ledger: float) -> str:
    """The local claim (:func:`accounting.papers.muffliato.muffliato_claim`) against the ledger.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> "holds" in theorem_verdict(Muffliato.example_scenario(), 1.0, 1e-6)
        True
    """
    alg = scenario.algorithm
    claim = S.muffliato_claim(sigma=alg.sigma, alpha=2.0, sensitivity=float(scenario.problem.domain.diameter))
    return verify(claim, eps_ledger, delta_ledger).message


def value_class(scenario: Any) -> ValueClass:
    """The adjacency of Section 3: one agent's value anywhere in the domain (the lemma's sensitivity is its
    diameter); the worst-case search decides antipodal pairs of the domain (:mod:`asyncdp.privacy.value_class`).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> value_class(Muffliato.example_scenario()).kind
        'value'
    """
    return ValueClass()


def gradient_class(scenario: Any) -> GradientClass:
    """Two values of one agent anywhere in the domain: gradients of ``||x - a||^2`` differ by at most
    ``2 diam``.

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> gradient_class(Muffliato.example_scenario()).bound
        2.0
    """
    return GradientClass(2.0 * float(scenario.problem.domain.diameter), "l2", kind="difference")


def gossip_matrix(scenario: Any) -> Any:
    """The gossip matrix ``W``: the topology's round-2 matrix (round 1 is the local noising round), the one matrix of
    every round ``2..horizon``, as the paper's protocol has it (Algorithms 1-2: one fixed ``W``; round 1 the identity
    or ``W``).

    Raises:
        ScenarioError: the horizon is shorter than 2 rounds.
        TopologyMismatchError: some round's matrix is another one (named): the authors' values are for ``T`` steps of
            one fixed ``W``, and a run with other rounds (idle rounds, failed links) is not the protocol they describe
            (its idle rounds would still be counted as steps).

    Example:
        >>> import numpy as np, topology
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> sc = Muffliato.example_scenario()
        >>> gossip_matrix(sc).shape
        (6, 6)
        >>> idle = sc.replace(topology=topology.periodic([np.eye(6), gossip_matrix(sc).toarray()]))  # W every 2nd round
        >>> try:
        ...     gossip_matrix(idle)
        ... except Exception as e:
        ...     print(str(e).split(";")[1])
         round 3 uses another matrix (entry [1, 1] is 1.0, round 2 has 0.33333333333333337): the authors' values would count it as a step of W
    """
    from ...errors import ScenarioError, TopologyMismatchError

    if scenario.horizon < 2:
        raise ScenarioError(f"muffliato: a pairwise claim needs at least 2 rounds, got horizon {scenario.horizon}")
    seq = scenario.topology
    w = seq.weights(2)
    last = scenario.horizon if seq.period is None else min(scenario.horizon, seq.period + 2)
    for t in [1, *range(3, last + 1)]:
        other = seq.weights(t)
        diff = abs(other - w)
        if diff.nnz and diff.max() > 0 and not (t == 1 and abs(other - _eye(w.shape[0])).max() == 0):
            coo = diff.tocoo()
            k = int(np.argmax(coo.data))
            i, j = int(coo.row[k]), int(coo.col[k])
            raise TopologyMismatchError(
                f"muffliato: the pairwise claim is for one fixed gossip matrix W from round 2 on (Algorithms 1-2); "
                f"round {t} uses another matrix (entry [{i}, {j}] is {float(other[i, j])!r}, round 2 has "
                f"{float(w[i, j])!r})" + ("" if t == 1 else ": the authors' values would count it as a step of W"))
    return w


def _eye(n: int) -> Any:
    import scipy.sparse as sp

    return sp.identity(n, format="csr")


def pairwise_claim(scenario: Any, *, alpha: float = 2.0, eps_local: float | None = None) -> S.PairwiseClaim:
    """The authors' pairwise values for the scenario: the gossip steps the run performs after the first exchange,
    ``W`` the round-2 matrix, the rule's ``gamma`` (1: plain).

    With the identity in round 1 (:func:`~asyncdp.papers.muffliato.rule.muffliato_topology`: the local noising
    round), the first exchange is round 2's and ``horizon - 2`` steps follow; with ``W`` from round 1 on, the
    noisy values are exchanged in round 1 and ``horizon - 1`` steps follow.

    The authors' values are for data of sensitivity 1 (values in ``[0, 1]``); at the scenario's sensitivity
    ``Delta`` (the domain's diameter) every Gaussian divergence scales by ``Delta^2``, so the values are
    evaluated at ``sigma / Delta`` and capped at the local budget ``alpha Delta^2 / (2 sigma^2)``
    (:func:`accounting.papers.muffliato.muffliato_local_renyi`; the authors' ``eps_local = 1`` at
    ``sigma = Delta = 1``, ``alpha = 2``).

    Args:
        scenario: the scenario.
        alpha: the Renyi order.
        eps_local: the cap; default the local budget.

    Raises:
        TopologyMismatchError: the topology is not one fixed ``W`` from round 2 on (:func:`gossip_matrix`).

    Example:
        >>> from asyncdp.papers.muffliato.rule import Muffliato
        >>> pairwise_claim(Muffliato.example_scenario()).bounds_for(0).shape
        (6,)
    """
    alg = scenario.algorithm
    gamma = None if alg.gamma == 1.0 else float(alg.gamma)
    import scipy.sparse as sp

    first = sp.csr_array(scenario.topology.weights(1))
    noising_round = abs(first - sp.identity(first.shape[0], format="csr")).max() == 0
    steps = scenario.horizon - (2 if noising_round else 1)  # 0 at horizon 2 after the noising round: none
    diameter = S.muffliato_sensitivity(diameter=float(scenario.problem.domain.diameter))
    if eps_local is None:
        eps_local = S.muffliato_local_renyi(sigma=float(alg.sigma), alpha=alpha, sensitivity=diameter)
    return S.muffliato_pairwise_claim(gossip_matrix(scenario), steps, gamma, alpha=alpha,
                                      sigma=float(alg.sigma) / diameter, eps_local=eps_local)

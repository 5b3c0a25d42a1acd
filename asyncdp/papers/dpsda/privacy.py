"""Accountant inputs shared by ``dpsda-c`` and ``dpsda-ps`` (Cheng, Liao and Li, arXiv 2022).

The algorithms differ only in their mixing (``W`` or ``A``, plus push-sum
weights that carry no data). Their messages mask the same quantity, so the
two rules share these functions (one paper record).

What each round releases: round ``t``'s message ``h_i(t)`` masks
``z_i(t)``. Fix the observed messages. By eqs. (12) / (20), ``z_i(t+1)`` then
differs between two adjacent loss sequences by ``N (u_i(t) - u_i'(t))``, and
only on ``S_i``. This holds in every round after the changed round ``t0``, not only
at ``t0``: later gradients are evaluated at estimates that differ. Round 1
masks ``z_i(1) = 0``, so its sensitivity is 0. The bounds come from
:mod:`accounting.papers.dpsda` with this scenario's constants:

* clipped signal: ``dpsda_node_sensitivity(n=N, L_hat, block_size=d_i, clip)``
  (``2 N L_hat d_i`` for coordinate clipping, ``2 N L_hat sqrt(d_i)`` in L2);
* unclipped signal (the paper's rule): ``u - u' = grad - grad'``. The
  gradient noise ``xi`` is the same under both sequences: it is independent of
  the data, so the privacy loss may be taken conditionally on it. Hence
  ``||u - u'||_1 <= 2 sqrt(d_i) L``, with ``L`` the problem's gradient bound, via
  ``dpsda_node_sensitivity(n=N, L_hat=L, block_size=d_i, clip="l2")``.

Which level the privacy check uses: the adjacency of Def. 1 changes one
round's loss, and every node computes its block of ``grad f_t0``. So every
node's releases move, and :func:`asyncdp.privacy.check_privacy` composes all
nodes' releases together (``accounting.composition.network_wide``).
:func:`sensitivity` gives the per-release value it charges. Summed over the
``N`` releases of a round, that is ``N max_i Delta_i``: it equals
:func:`network_sensitivity` when the blocks have equal sizes, and is an upper
bound on it otherwise.
"""

from __future__ import annotations

import numpy as np

from accounting.claims import Claim, verify
from accounting.papers import dpsda as P

from ...errors import ScenarioError
from ..record import RoundClass, require_out_neighbours

__all__ = ["claimed_scale", "node_sensitivities", "network_sensitivity", "sensitivity", "claim", "theorem_verdict",
           "round_class"]


def _setup(scenario) -> tuple[object, int, tuple[int, ...], float, str]:
    # unicast: an agent that sends to nobody in a round keeps its noise-free dual state, which then accumulates
    # over rounds, so a later copy can move by more than the one round's bound charged per copy
    require_out_neighbours(scenario, f"{P.SPEC.paper}, Lemmas 1 and 4")
    alg = scenario.algorithm.bind(scenario.problem)
    n, sizes = alg.num_nodes, alg.block_sizes
    if alg.clip:
        return alg, n, sizes, float(alg.L_hat), alg.clip_norm
    lip = scenario.problem.constants.gradient_bound
    if lip is None:
        raise ScenarioError(f"{alg.name} with clip=False: the accountant needs the problem's gradient bound L "
                            "(the problem declares none)")
    return alg, n, sizes, float(lip), "l2"


def node_sensitivities(scenario) -> np.ndarray:
    """``Delta_i(t)``, the L1 sensitivity of node ``i``'s release in round ``t``, shape ``(T, N)``; row 0 is 0.

    Raises:
        ScenarioError: unclipped and the problem declares no gradient bound.
    """
    _, n, sizes, bound, clip = _setup(scenario)
    row = np.array([P.dpsda_node_sensitivity(n=n, L_hat=bound, block_size=d, clip=clip) for d in sizes])
    out = np.tile(row, (scenario.horizon, 1))
    out[0] = 0.0
    return out


def network_sensitivity(scenario) -> np.ndarray:
    """``Delta_net(t)``, the L1 sensitivity of round ``t``'s releases of all nodes together, ``(T,)``; ``[0] = 0``."""
    _, n, sizes, bound, clip = _setup(scenario)
    out = np.full(scenario.horizon, P.dpsda_network_sensitivity(n=n, L_hat=bound, block_sizes=list(sizes),
                                                                   clip=clip))
    out[0] = 0.0
    return out


def sensitivity(scenario) -> np.ndarray:
    """Per-release sensitivity ``max_i Delta_i(t)``, shape ``(T,)`` (the paper record's lemma; see the module doc)."""
    return node_sensitivities(scenario).max(axis=1)


def claim(scenario) -> Claim:
    """Theorem 2 / 4's run-level claim, ``T epsilon``, from ``accounting.papers.dpsda.dpsda_claim``."""
    return P.dpsda_claim(scenario.algorithm.epsilon, scenario.horizon, per="run")


def theorem_verdict(scenario, eps_ledger: float | None = None, delta_ledger: float | None = None
                   ) -> str:
    """Theorem 2's own argument (``sum_t Delta / sigma(t)``) at network level, checked against its claim.

    Uses ``accounting.papers.dpsda.dpsda_effective_epsilon`` with this module's
    constants and the declared scales of rounds ``2..T``. Round 1 masks
    ``z(1) = 0``.

    ``eps_ledger`` and ``delta_ledger`` (the accountant's figures of the run)
    are accepted so that every paper's verdict has one signature
    (:class:`~asyncdp.papers.record.Paper`); this paper's verdict does not need them.
    """
    alg, n, sizes, bound, clip = _setup(scenario)
    scales = [alg.noise(t, "h").scale for t in range(2, scenario.horizon + 1)]
    if any(s <= 0 for s in scales):
        return f"{alg.name}: epsilon = inf (no noise): Theorem 2 does not apply"
    eps = P.dpsda_effective_epsilon(scales, n=n, L_hat=bound, level="network", block_sizes=list(sizes),
                                           clip=clip) if scales else 0.0
    return verify(claim(scenario), eps).message


def claimed_scale(scenario, t: int) -> float:
    """Theorem 2's Laplace scale ``sigma = Delta / epsilon`` at the rule's level, from the accountant.

    :func:`accounting.papers.dpsda.dpsda_noise_scale` with the rule's clipping
    bound ``L_hat``, blocks, clipping norm and level. A rule with a fixed
    ``noise_constant`` ``c`` prescribes ``c / epsilon`` instead; 0 when
    ``epsilon`` is infinite.

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> sc = DPSDAC.example_scenario()
        >>> round(claimed_scale(sc, 2) / sc.algorithm.bind(sc.problem).noise(2, "h").scale, 12)
        1.0
    """
    alg = scenario.algorithm.bind(scenario.problem)
    if np.isinf(alg.epsilon):
        return 0.0
    if alg.noise_constant is not None:
        return float(alg.noise_constant) / alg.epsilon
    return P.dpsda_noise_scale(alg.epsilon, n=alg.num_nodes, L_hat=alg.L_hat, level=alg.level,
                               block_sizes=list(alg.block_sizes), clip=alg.clip_norm)


def round_class(scenario) -> RoundClass | None:
    """The adjacency class of Def. 1 with Assumption 1(d): one round's loss changed, gradients of L2 norm ``<= L``.

    Two loss sequences are adjacent when they differ in one round ``t0``
    (Cheng, Liao and Li, arXiv 2022, Def. 1); every round's loss has
    ``||grad f_t||_2 <= L`` on ``X^d`` (Assumption 1(d)), ``L`` being the
    problem's declared gradient bound. The lemma bounds the L1 change of the
    duals (Laplace noise), hence ``norm="l1"``. The class does not depend on
    the rule (clipping, level, ``L_hat``): it is the set of inputs the claim
    covers, so a rule whose noise is too small for it is refuted by the
    worst-case search (:mod:`asyncdp.privacy.worst_case`).

    Returns:
        ``RoundClass(L, "l1")``, or ``None`` when the problem declares no
        gradient bound (the class is then unbounded and the search is skipped,
        with the reason in the report).

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> sc = DPSDAC.example_scenario()
        >>> cls = round_class(sc)
        >>> cls.norm, cls.bound == sc.problem.constants.gradient_bound
        ('l1', True)
    """
    lip = scenario.problem.constants.gradient_bound
    return None if lip is None else RoundClass(float(lip), "l1")

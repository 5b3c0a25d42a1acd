"""Cheng, Liao and Li (arXiv 2022), DPSDA-C and DPSDA-PS: Laplace noise on dual variables.

The accountant's side of the paper, for both algorithms: Lemma 1's sensitivity
of one node (:func:`dpsda_node_sensitivity`) and of all nodes together
(:func:`dpsda_network_sensitivity`), Theorem 2's claim (:func:`dpsda_claim`)
and its own argument recomputed from realized scales
(:func:`dpsda_effective_epsilon`); :data:`SPEC` collects them.

Every function is a plain function of numbers (gradient bounds, step sizes,
noise scales ...); none looks at an algorithm object or at a sensitivity an
algorithm claims. Each sensitivity docstring states which state the bound is
about, which release masks it with which noise scale, and when the bound holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral

from topology.audit import AssumptionSet, BStronglyConnected, EachRound, MinimalB, MinWeight
from topology.checks import constants as _C
from topology.checks import properties as _P
from topology.validation import check_integer, check_nonnegative, check_positive, check_real

from ..claims import Claim
from ..errors import PrivacyParameterError
from .spec import AccountantSpec

__all__ = [
    "ASSUMPTIONS",
    "ASSUMPTIONS_C",
    "ASSUMPTIONS_PS",
    "DPSDA_CLIPS",
    "dpsda_node_sensitivity",
    "dpsda_network_sensitivity",
    "dpsda_claim",
    "dpsda_effective_epsilon",
    "dpsda_noise_scale",
    "SPEC",
]

_E = PrivacyParameterError
_CHENG2022 = "Cheng, Liao and Li (arXiv 2022)"

DPSDA_CLIPS = ("coordinate", "l2")
"""How a DPSDA block's local signal ``u_i`` is clipped: per coordinate to ``[-L_hat, L_hat]``, or in L2 norm."""


def _block_factor(d: int, clip: str) -> float:
    return float(d) if clip == "coordinate" else math.sqrt(d)


def _check_clip(clip: str) -> None:
    if clip not in DPSDA_CLIPS:
        raise PrivacyParameterError(f"clip must be one of {DPSDA_CLIPS}, got {clip!r}")


def dpsda_node_sensitivity(*, n: int, L_hat: float, block_size: int = 1, clip: str = "coordinate") -> float:
    """L1 sensitivity of one node's dual variable in DPSDA-C/PS (Cheng, Liao and Li, arXiv 2022, Lemmas 1 and 4).

    Bounded quantity: ``z_i(t+1)`` of node ``i`` (eqs. 12 / 20), masked by the
    message of the next round, ``h_i(t+1) = z_i(t+1) + eta_i(t+1)`` with
    ``eta_i ~ Lap(sigma)`` per coordinate (eq. 11). With the received messages
    held fixed, ``z_i(t+1) - z_i'(t+1) = n (u_i(t) - u_i'(t))`` on node ``i``'s
    own coordinate(s) only (``r_i = 1/n``, Remark 3), so
    ``Delta = n * max |u_i - u_i'|``.

    Validity: Lemma 1 bounds this supremum by an *expectation*
    (``E|u_i| <= L_hat``, Assumption 2), which does not bound a worst case;
    the local signal includes Gaussian gradient noise and is unbounded. The
    value ``2 n L_hat`` holds deterministically only if ``u_i`` is clipped to
    ``[-L_hat, L_hat]``, which the paper does not do. The bound
    applies to every round from the changed round ``t0`` on, not only to
    ``t0``: once ``z_i`` differs, later gradients are evaluated at different
    points ``y_i = Pi(z_i)``.

    Blocks: with ``d_i = block_size`` coordinates per node, clipping each
    coordinate to ``[-L_hat, L_hat]`` (``clip="coordinate"``) gives
    ``2 n L_hat d_i``; clipping the block in L2 norm (``clip="l2"``) gives
    ``2 n L_hat sqrt(d_i)`` (the ``sqrt(d)`` of Remark 5).

    This is the sensitivity of a **single node's** message stream. An observer
    of all messages sees every node's ``z_i`` change at once, because a change
    of the round loss ``f_t0`` changes every ``u_i``: see
    :func:`dpsda_network_sensitivity`.

    Args:
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound on the local signal, ``>= 0``.
        block_size: coordinates owned by the node, ``>= 1``.
        clip: one of :data:`DPSDA_CLIPS`.

    Returns:
        ``2 n L_hat * (d_i or sqrt(d_i))``.

    Raises:
        PrivacyParameterError: an invalid ``n``, ``L_hat``, ``block_size`` or ``clip``.

    Example:
        >>> dpsda_node_sensitivity(n=7, L_hat=1.0)
        14.0
        >>> dpsda_node_sensitivity(n=7, L_hat=1.0, block_size=4, clip="l2")
        28.0
    """
    n = check_integer(n, "n", minimum=1, error=_E)
    L_hat = check_nonnegative(L_hat, "L_hat", error=_E)
    d = check_integer(block_size, "block_size", minimum=1, error=_E)
    _check_clip(clip)
    return 2.0 * n * L_hat * _block_factor(d, clip)


def dpsda_network_sensitivity(
    *, n: int, L_hat: float, block_sizes: int | Sequence[int] | None = None, clip: str = "coordinate"
) -> float:
    """L1 sensitivity of all nodes' dual variables together (Cheng, Liao and Li, arXiv 2022, network level).

    Adjacency (Def. 1) changes one round's loss ``f_t0``; every node computes
    its coordinate of ``grad f_t0``, so every node's ``z_i(t0+1)`` moves, by up
    to :func:`dpsda_node_sensitivity` each. The stacked vector ``z(t+1)`` in
    ``R^(n x dim)`` that Theorem 2's proof bounds by ``Delta(t)`` therefore
    moves by up to the *sum* over nodes: ``2 n^2 L_hat`` for scalar blocks,
    not the per-node ``2 n L_hat`` that the proof of Theorem 2 applies to it.

    When each applies: use this value when the adversary may observe the
    messages of every node (the paper's eavesdropper); use the per-node value
    only for an adversary that observes a single node's message stream.
    Noise ``sigma = Delta_node / epsilon`` (the paper's choice) gives each
    round ``n * epsilon`` at network level.

    Args:
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound on every node's local signal, ``>= 0``.
        block_sizes: ``None`` (one coordinate per node), one int for all
            nodes, or a sequence of ``n`` block sizes.
        clip: one of :data:`DPSDA_CLIPS`.

    Returns:
        ``sum_i 2 n L_hat * (d_i or sqrt(d_i))``; ``2 n^2 L_hat`` for scalar blocks.

    Raises:
        PrivacyParameterError: invalid constants, or ``len(block_sizes) != n``.

    Example:
        >>> dpsda_network_sensitivity(n=7, L_hat=1.0)
        98.0
        >>> dpsda_network_sensitivity(n=2, L_hat=1.0, block_sizes=[1, 3])
        16.0
    """
    n = check_integer(n, "n", minimum=1, error=_E)
    _check_clip(clip)
    sizes = _dpsda_block_sizes(n, block_sizes)
    return float(sum(dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip) for d in sizes))


def _dpsda_block_sizes(n: int, block_sizes: int | Sequence[int] | None) -> list[int]:
    """``None`` -> n ones; an int -> n copies; a sequence -> checked to have n positive ints."""
    if block_sizes is None:
        return [1] * n
    if isinstance(block_sizes, Integral) and not isinstance(block_sizes, bool):
        return [check_integer(block_sizes, "block_sizes", minimum=1, error=_E)] * n
    if isinstance(block_sizes, (bool, str)) or not isinstance(block_sizes, Sequence):
        raise PrivacyParameterError(f"block_sizes must be None, an int or a sequence of ints, got {block_sizes!r}")
    sizes = [check_integer(d, f"block_sizes[{k}]", minimum=1, error=_E) for k, d in enumerate(block_sizes)]
    if len(sizes) != n:
        raise PrivacyParameterError(f"block_sizes must have n={n} entries, got {len(sizes)}: {block_sizes!r}")
    return sizes

def dpsda_claim(epsilon: float, T: int, *, per: str = "run") -> Claim:
    """Theorem 2 / Theorem 4 of Cheng, Liao and Li, arXiv 2022: epsilon-DP per round, ``T * epsilon`` for the run.

    With Laplace noise ``sigma(t) = Delta(t) / epsilon`` and Lemma 1's
    ``Delta = 2 n L_hat``, the paper claims each round's messages are
    epsilon-DP and, by basic composition, the ``T``-round run is
    ``T epsilon``-DP. ``per="round"`` returns the per-round claim,
    ``per="run"`` the composed one. The paper applies the per-node
    sensitivity to the stacked messages of all nodes; at network level the
    sensitivity is ``2 n^2 L_hat`` (see :func:`dpsda_effective_epsilon`).

    Args:
        epsilon: per-round epsilon, ``> 0``.
        T: number of rounds, ``>= 1``.
        per: ``"round"`` or ``"run"``.

    Returns:
        The :class:`Claim`.

    Raises:
        PrivacyParameterError: an invalid parameter or level.

    Example:
        >>> dpsda_claim(0.5, 10).epsilon, dpsda_claim(0.5, 10, per="round").epsilon
        (5.0, 0.5)
    """
    eps = check_positive(epsilon, "epsilon", error=_E)
    T = check_integer(T, "T", minimum=1, error=_E)
    if per not in ("round", "run"):
        raise PrivacyParameterError(f"per must be 'round' or 'run' for Cheng, Liao and Li (arXiv 2022), got {per!r}")
    notes = (
        "Lemma 1: Delta = 2 n L_hat bounds a sup by an expectation; it holds only with u_i clipped to "
        "[-L_hat, L_hat]. It is one node's sensitivity; a change of f_t0 moves every node's z_i, so "
        "the stacked messages have Delta = 2 n^2 L_hat."
    )
    if per == "round":
        return Claim(_CHENG2022, "Theorem 2: epsilon-DP at each round", eps, 0.0, "round", notes)
    return Claim(_CHENG2022, f"Theorem 2: T*epsilon-DP over T = {T} rounds (basic composition)", T * eps, 0.0,
                 "run", notes)


def dpsda_effective_epsilon(
    scales: Sequence[float],
    *,
    n: int,
    L_hat: float,
    level: str = "network",
    block_sizes: int | Sequence[int] | None = None,
    clip: str = "coordinate",
) -> float:
    """Privacy loss ``sum_t Delta / sigma(t)`` of Cheng, Liao and Li (arXiv 2022) from realized Laplace scales.

    This is Theorem 2's own argument (the product of per-round Laplace density
    ratios) with an independently derived ``Delta``:
    ``level="network"`` uses :func:`dpsda_network_sensitivity`
    (an observer of every node's messages; the paper's eavesdropper),
    ``level="node"`` uses :func:`dpsda_node_sensitivity`
    (an observer of one node only; with blocks, the largest block). Every
    round counts: the sensitivity of later rounds is not zero once the dual
    variables diverge. A single scale gives the per-round epsilon.

    Args:
        scales: ``sigma(t)`` for each round, positive and finite.
        n: number of nodes, ``>= 1``.
        L_hat: clipping bound of the local signals, ``>= 0``.
        level: ``"network"`` or ``"node"``.
        block_sizes, clip: as in :func:`dpsda_network_sensitivity`.

    Returns:
        The pure-DP epsilon of the rounds given.

    Raises:
        PrivacyParameterError: an invalid scale, constant or level.

    Example:
        >>> sigma = 2 * 7 * 1.0 / 0.5          # the paper's sigma for n=7, L_hat=1, epsilon=0.5
        >>> dpsda_effective_epsilon([sigma] * 10, n=7, L_hat=1.0, level="node")
        5.0
        >>> dpsda_effective_epsilon([sigma] * 10, n=7, L_hat=1.0, level="network")
        35.0
    """
    if level not in ("network", "node"):
        raise PrivacyParameterError(f"level must be 'network' or 'node', got {level!r}")
    delta_net = dpsda_network_sensitivity(n=n, L_hat=L_hat, block_sizes=block_sizes, clip=clip)
    if level == "network":
        sens = delta_net
    else:
        sizes = _dpsda_block_sizes(int(n), block_sizes)
        sens = max(dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip) for d in sizes)
    total = 0.0
    for t, s in enumerate(scales):
        s = check_real(s, f"scales[{t}]", error=_E)
        if s <= 0:
            raise PrivacyParameterError(f"scales[{t}] must be > 0, got {s!r}")
        total += sens / s
    return total



def dpsda_noise_scale(
    epsilon: float,
    *,
    n: int,
    L_hat: float,
    level: str = "node",
    block_sizes: int | Sequence[int] | None = None,
    clip: str = "coordinate",
) -> float:
    """The Laplace scale ``sigma = Delta / epsilon`` of Theorem 2, with an independently derived ``Delta``.

    Theorem 2 of Cheng, Liao and Li (arXiv 2022).

    ``level="node"``: the paper's choice, ``Delta`` = the largest
    :func:`dpsda_node_sensitivity` over the blocks (each round epsilon-DP for
    an observer of one node); ``level="network"``: ``Delta`` =
    :func:`dpsda_network_sensitivity` (each round epsilon-DP for an observer
    of every node).

    Args:
        epsilon: per-round epsilon, ``> 0``.
        n, L_hat, block_sizes, clip: as in :func:`dpsda_network_sensitivity`.
        level: ``"node"`` or ``"network"``.

    Returns:
        ``sigma``.

    Raises:
        PrivacyParameterError: an invalid parameter or level.

    Example:
        >>> dpsda_noise_scale(0.5, n=7, L_hat=1.0), dpsda_noise_scale(0.5, n=7, L_hat=1.0, level="network")
        (28.0, 196.0)
    """
    eps = check_positive(epsilon, "epsilon", error=_E)
    if level not in ("network", "node"):
        raise PrivacyParameterError(f"level must be 'network' or 'node', got {level!r}")
    if level == "network":
        return dpsda_network_sensitivity(n=n, L_hat=L_hat, block_sizes=block_sizes, clip=clip) / eps
    sizes = _dpsda_block_sizes(check_integer(n, "n", minimum=1, error=_E), block_sizes)
    return max(dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip) for d in sizes) / eps


SPEC = AccountantSpec(
    names=("dpsda-c", "dpsda-ps"),
    paper=_CHENG2022,
    mechanism="laplace",
    norm="l1",
    sensitivity=dpsda_node_sensitivity,
    release_sensitivity=dpsda_node_sensitivity,  # one node's message masks that node's dual variable
    claim=dpsda_claim,
    effective_epsilon=dpsda_effective_epsilon,
    noise_scale=dpsda_noise_scale,
)
"""The accountant's record of Cheng, Liao and Li (arXiv 2022) (DPSDA-C and DPSDA-PS account alike)."""


def _dpsda_c_theta(phi: float, n: int) -> dict[str, float]:
    return {"theta": _C.dpsda_c_theta(phi, n)}


ASSUMPTIONS_C = AssumptionSet("dpsda-c", "Cheng, Liao and Li 2022, Lemmas 2-3", (
    EachRound(_P.check_nonnegative, "nonnegative", "every weight W_ij(t) >= 0"),
    EachRound(_P.check_symmetric, "symmetric",
              "W(t) symmetric: the proof of Lemma 2(a) of Cheng, Liao and Li 2022 uses it "
              "(the paper only states W1 = 1)"),
    EachRound(_P.check_doubly_stochastic, "doubly_stochastic", "W(t)1 = 1 and 1^T W(t) = 1^T"),
    EachRound(_P.check_connected_undirected, "connected_each_round",
              "each G1(t) connected: needed by Lemma 3's per-step bound (the paper states no connectivity)"),
    MinWeight("phi", "min_weight_phi",
              "W_ii(t) >= phi and W_ij(t) >= phi on links, phi > 0 (Cheng, Liao and Li 2022, Sec. 3)",
              _dpsda_c_theta),
    MinimalB(),
), "doubly")
"""DPSDA-C (Lemmas 2-3): every ``W(t)`` symmetric, doubly stochastic, positive entries ``>= phi``, each round
connected; constants ``phi``, ``theta = 1 - phi/(4 n^2)``."""

ASSUMPTIONS_PS = AssumptionSet("dpsda-ps", "Cheng, Liao and Li 2022, Lemma 6", (
    EachRound(_P.check_nonnegative, "nonnegative", "every weight A_ij(t) >= 0"),
    EachRound(_P.check_column_stochastic, "column_stochastic",
              "1^T A(t) = 1^T: push-sum weights (Cheng, Liao and Li 2022, Algorithm 2)"),
    EachRound(_P.check_positive_diagonal, "positive_diagonal", "A_ii(t) > 0 (self in N_i^out)"),
    EachRound(_P.check_weights_at_least_inverse_n, "weights_at_least_1_over_n",
              "A_ii(t) >= 1/n and A_ij(t) >= 1/n on links, as the uniform weights 1/deg_j^out(t) of Algorithm 2 "
              "give: lambda = (1 - 1/n^(nB))^(1/B) of Lemma 6 (after Nedic and Olshevsky 2015) rests on it"),
    BStronglyConnected(),
), "column")
"""DPSDA-PS (Lemma 6): every ``A(t)`` column stochastic with a positive diagonal and every self weight and
positive weight at least ``1/n`` (the uniform weighting ``lambda`` rests on), B-strongly connected over
fixed windows; constants the minimal ``B``, ``lambda``, ``gamma``, ``beta = 2``."""

ASSUMPTIONS = {"dpsda-c": ASSUMPTIONS_C, "dpsda-ps": ASSUMPTIONS_PS}
"""Rule name -> its topology assumption set."""

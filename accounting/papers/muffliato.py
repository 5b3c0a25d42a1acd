"""Muffliato (Cyffers, Even, Bellet and Massoulié, NeurIPS 2022): local Gaussian noise, then gossip averaging.

The accountant's side of the paper:

* the sensitivity lemma: the one noisy release of agent ``u`` is its value
  ``x_u + sigma N(0, I)``; two values of ``u`` lie at L2 distance at most the
  diameter of their domain (:func:`muffliato_sensitivity`); every later
  message is a linear function of released messages (post-processing);
* the local claim: Renyi DP of order ``alpha`` with
  ``alpha Delta^2 / (2 sigma^2)`` against an observer of everything
  (:func:`muffliato_claim`; the Gaussian mechanism's Renyi divergence);
* the pairwise network claim (their Theorem 3 for averaging, evaluated as the
  authors' public code does for their privacy-vs-distance figure):
  :func:`muffliato_pairwise_claim`, a matrix of per-pair Renyi bounds from
  :func:`accounting.network.muffliato.authors_pairwise_loss`, one observer row
  at a time;
* the topology assumptions (:data:`ASSUMPTIONS`): after the local noising
  round, one symmetric doubly stochastic nonnegative ``W``.

Like the rest of :mod:`accounting`, nothing here imports ``asyncdp``.

Example:
    >>> round(muffliato_claim(sigma=1.0, alpha=2.0).form.epsilon, 12)
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.audit import AssumptionSet, EachRound, Static
from topology.checks import properties as _P
from topology.validation import check_positive

from ..claims import Claim
from ..errors import PrivacyParameterError
from .spec import AccountantSpec

__all__ = ["ASSUMPTIONS", "SPEC", "muffliato_sensitivity", "muffliato_release_sensitivity", "muffliato_claim",
           "muffliato_local_renyi", "muffliato_effective_epsilon", "PairwiseClaim", "muffliato_pairwise_claim"]

_E = PrivacyParameterError
_MUFFLIATO = "Cyffers, Even, Bellet and Massoulié (NeurIPS 2022)"


def muffliato_sensitivity(*, diameter: float) -> float:
    """L2 sensitivity of an agent's private value: the diameter of the set the values lie in.

    Bounded quantity: ``x_u`` (Muffliato's averaging setting, values in a bounded set; the authors' figure
    uses ``[0, 1]``, sensitivity 1).

    Args:
        diameter: ``sup ||a - b||`` over the value set, > 0, finite.

    Returns:
        ``diameter``.

    Raises:
        PrivacyParameterError: a non-positive or infinite diameter.

    Example:
        >>> muffliato_sensitivity(diameter=1.0)
        1.0
    """
    d = check_positive(diameter, "diameter", error=_E)
    if not math.isfinite(d):
        raise PrivacyParameterError(f"diameter must be finite, got {diameter!r}")
    return d


def muffliato_release_sensitivity(t: int, *, diameter: float) -> float:
    """L2 sensitivity of the release of round ``t``: the value in round 1, nothing new afterwards.

    Round ``t >= 2`` messages are linear combinations of round-1 releases (post-processing), so they carry
    sensitivity 0 in the ledger.

    Example:
        >>> muffliato_release_sensitivity(1, diameter=2.0), muffliato_release_sensitivity(2, diameter=2.0)
        (2.0, 0.0)
    """
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1:
        raise PrivacyParameterError(f"t must be an integer >= 1, got {t!r}")
    return muffliato_sensitivity(diameter=diameter) if t == 1 else 0.0


def muffliato_local_renyi(*, sigma: float, alpha: float, sensitivity: float = 1.0) -> float:
    """``alpha Delta^2 / (2 sigma^2)``: the Renyi divergence of the local Gaussian release.

    Example:
        >>> muffliato_local_renyi(sigma=2.0, alpha=2.0)
        0.25
    """
    s = check_positive(sigma, "sigma", error=_E)
    a = check_positive(alpha, "alpha", error=_E)
    if not a > 1:
        raise PrivacyParameterError(f"alpha must be > 1, got {alpha!r}")
    d = check_positive(sensitivity, "sensitivity", error=_E)
    return a * d * d / (2.0 * s * s)


def muffliato_claim(*, sigma: float, alpha: float = 2.0, sensitivity: float = 1.0, delta: float = 1e-6) -> Claim:
    """The local claim: ``(alpha, alpha Delta^2 / (2 sigma^2))``-Renyi DP against an observer of every message.

    ``(epsilon, delta)`` hold the standard conversion of that Renyi bound (Mironov, CSF 2017, Prop. 3):
    ``epsilon = rdp + log(1/delta) / (alpha - 1)``.

    Args:
        sigma: the local noise's standard deviation.
        alpha: the Renyi order (the figure: 2).
        sensitivity: the values' L2 sensitivity.
        delta: the delta of the conversion, in ``(0, 1)``.

    Returns:
        The :class:`~accounting.claims.Claim` (``per="run"``, with its Renyi form).

    Example:
        >>> muffliato_claim(sigma=1.0).statement.startswith("local Gaussian")
        True
    """
    from ..claim_forms import RenyiDP

    eps = muffliato_local_renyi(sigma=sigma, alpha=alpha, sensitivity=sensitivity)
    if not 0 < delta < 1:
        raise PrivacyParameterError(f"delta must lie in (0, 1), got {delta!r}")
    return Claim(paper=_MUFFLIATO, statement="local Gaussian noise: Renyi DP of order alpha before gossip",
                 epsilon=eps + math.log(1.0 / delta) / (float(alpha) - 1.0), delta=float(delta), per="run", form=RenyiDP(float(alpha), eps),
                 notes="Gossip steps are post-processing of the one noisy release per agent.")


def muffliato_effective_epsilon(*, sigma: float, diameter: float, delta: float = 1e-6) -> float:
    """The exact epsilon at ``delta`` of the one local release against an observer of every message.

    The release is the Gaussian mechanism with ``mu = diameter / sigma``; later messages are post-processing,
    so this is the whole run's loss (Balle and Wang, ICML 2018, Theorem 8, solved for epsilon by bisection).

    Example:
        >>> 4.0 < muffliato_effective_epsilon(sigma=1.0, diameter=1.0) < 5.0
        True
    """
    from ..network.gaussian_views import _epsilon_by_bisection

    mu = muffliato_sensitivity(diameter=diameter) / check_positive(sigma, "sigma", error=_E)
    if not 0 < delta < 1:
        raise PrivacyParameterError(f"delta must lie in (0, 1), got {delta!r}")
    return _epsilon_by_bisection(mu, delta)


@dataclass(frozen=True)
class PairwiseClaim:
    """A pairwise network DP claim: the Renyi divergence (order ``alpha``) from source ``u`` to observer ``v``.

    Exactly one of ``matrix`` (``n x n``, ``[u, v]``; or a callable ``v -> (n,)`` column streamed one
    observer at a time) and ``by_distance`` (a callable ``shortest-path length -> bound``) is given.

    Attributes:
        alpha: the Renyi order (> 1).
        paper: whom the claim is from.
        statement: what it asserts and under which convention.
        column: ``v -> (n,)`` array of bounds ``u -> v`` (the matrix, one observer at a time).
        by_distance: ``d -> bound`` (used when ``column`` is ``None``).

    Example:
        >>> c = PairwiseClaim(2.0, "me", "flat", by_distance=lambda d: 1.0 / d)
        >>> c.bounds_for(0, np.array([0, 1, 2])).tolist()
        [inf, 1.0, 0.5]
    """

    alpha: float
    paper: str
    statement: str
    column: Callable[[int], np.ndarray] | None = None
    by_distance: Callable[[int], float] | None = None

    def __post_init__(self) -> None:
        if not (self.alpha > 1 and math.isfinite(self.alpha)):
            raise PrivacyParameterError(f"PairwiseClaim: alpha must be finite and > 1, got {self.alpha!r}")
        if (self.column is None) == (self.by_distance is None):
            raise PrivacyParameterError("PairwiseClaim: give exactly one of column= and by_distance=")

    def bounds_for(self, v: int, distances: np.ndarray | None = None) -> np.ndarray:
        """The claimed bound from every ``u`` to ``v`` (``inf`` at ``u = v`` for a distance claim).

        Args:
            v: the observer.
            distances: shortest-path lengths from ``v`` (needed by a distance claim); a negative length
                means no path (no information can reach ``v``: the bound is 0).

        Raises:
            PrivacyParameterError: a distance claim without distances.
        """
        if self.column is not None:
            return np.asarray(self.column(v), dtype=float)
        if distances is None:
            raise PrivacyParameterError("PairwiseClaim: a claim by distance needs the shortest-path distances")
        fn = self.by_distance
        assert fn is not None
        # d < 0: no path at all (nothing can flow: the bound is 0, whatever the function says at -1)
        return np.array([math.inf if d == 0 else 0.0 if d < 0 else float(fn(int(d))) for d in np.asarray(distances)])


def muffliato_pairwise_claim(weights: Any, steps: int, gamma: float | None = None, *, alpha: float = 2.0,
                             sigma: float = 1.0, eps_local: float = 1.0) -> PairwiseClaim:
    """The per-pair Renyi bounds of the authors' figure, as their public code computes them (a column per v).

    Convention of that code: the observer ``v`` sees its neighbours' states after each of ``steps`` gossip
    steps, not the first exchange of raw noisy values; no clipping in the linear model; each value is
    capped at ``eps_local``.

    Args:
        weights: ``W`` (scipy sparse or dense, symmetric).
        steps: number of gossip steps ``T``.
        gamma: ``None`` (plain) or the Chebyshev constant.
        alpha, sigma, eps_local: as :func:`accounting.network.muffliato.authors_pairwise_loss`.

    Returns:
        A :class:`PairwiseClaim` whose column ``v`` is the authors' value for every source.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> c = muffliato_pairwise_claim(hamilton_weights(nx.path_graph(3)), 1)
        >>> c.bounds_for(0).shape
        (3,)
    """
    import scipy.sparse as sp

    from ..network.muffliato import authors_pairwise_loss

    w = sp.csr_array(weights)

    def column(v: int) -> np.ndarray:
        return authors_pairwise_loss(w, v, steps, gamma, alpha=alpha, sigma=sigma, eps_local=eps_local)

    return PairwiseClaim(alpha, _MUFFLIATO, "pairwise network DP (per-pair values of the authors' code, "
                         "first exchange not counted, capped at the local budget)", column=column)


def iter_columns(claim: PairwiseClaim, observers: Any) -> Iterator[tuple[int, np.ndarray]]:
    """``(v, claim column)`` for each observer (streamed).

    Example:
        >>> c = PairwiseClaim(2.0, "me", "flat", column=lambda v: np.zeros(2))
        >>> [v for v, _ in iter_columns(c, [0, 1])]
        [0, 1]
    """
    for v in observers:
        yield int(v), claim.bounds_for(int(v))


ASSUMPTIONS = AssumptionSet("muffliato", f"{_MUFFLIATO}, Section 3", (
    Static(2, "one fixed gossip matrix W from round 2 on (round 1, the local noising round: the identity or W; "
              f"{_MUFFLIATO}, Algorithms 1-2)"),
    EachRound(_P.check_nonnegative, "nonnegative", "every weight w_ij >= 0"),
    EachRound(_P.check_symmetric, "symmetric", f"W = W^T ({_MUFFLIATO})"),
    EachRound(_P.check_doubly_stochastic, "doubly_stochastic", f"W1 = 1 and 1^T W = 1^T ({_MUFFLIATO})"),
    EachRound(_P.check_connected_undirected, "connected",
              f"W is a gossip matrix on a connected graph: spectral gap > 0, which the number of gossip steps "
              f"and the convergence results need ({_MUFFLIATO}, Section 3)", first=2),
), "doubly")
"""The topology assumptions: one fixed gossip matrix ``W`` from round 2 on (round 1, the local noising round: the
identity or ``W``), every round's matrix nonnegative, symmetric, doubly stochastic, and the gossip rounds' graph
connected (the identity, or a graph in pieces, has no spectral gap: values never mix between the pieces)."""


SPEC = AccountantSpec(
    names=("muffliato",),
    paper=_MUFFLIATO,
    mechanism="gaussian",
    norm="l2",
    sensitivity=muffliato_sensitivity,
    release_sensitivity=muffliato_release_sensitivity,
    claim=muffliato_claim,
    effective_epsilon=muffliato_effective_epsilon,
    noise_scale=lambda t, *, sigma: float(sigma) if t == 1 else 0.0,
)
"""The accountant's record of Muffliato."""

"""Weight rules: from a link pattern to a weight matrix.

Every rule takes an adjacency pattern (anything :func:`topology.matrices.as_pattern`
accepts: a boolean/0-1 matrix with ``A[i, j]`` meaning ``j -> i``, or a networkx
graph) and returns a ``scipy.sparse.csr_array`` weight matrix. Every node
always keeps a positive self-weight.

=====================  ==========================================  ======================
rule                   weights                                     stochastic
=====================  ==========================================  ======================
``metropolis``         ``1/max(d_i, d_j)`` (self-inclusive degree)  doubly, symmetric
``lazy-max-degree``    ``(I + I - L/(d_max+1)) / 2``                doubly, symmetric
``row-stochastic``     ``1/|N_i^in|`` (self included)               rows
``column-stochastic``  ``1/|N_j^out|`` (self included; push-sum)    columns
``laplacian``          ``I - a L``, ``a = 2/(3 lambda_max(L))``     rows (doubly if undirected)
=====================  ==========================================  ======================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .errors import ParameterError
from .matrices import as_pattern

__all__ = [
    "metropolis",
    "lazy_max_degree",
    "row_stochastic",
    "column_stochastic",
    "laplacian",
    "laplacian_step",
    "WEIGHT_RULES",
    "get_rule",
]

WeightRule = Callable[[Any], sp.csr_array]


def _require_symmetric(pat: sp.csr_array, rule: str) -> None:
    one_way = (pat > pat.T).tocoo()  # [i, j] set: link j -> i exists, i -> j does not
    if one_way.nnz:
        i, j = int(one_way.row[0]), int(one_way.col[0])
        raise ParameterError(
            f"{rule} weights need an undirected (symmetric) pattern; link {j} -> {i} has no reverse link"
        )


def _with_diagonal(offdiag: sp.csr_array) -> sp.csr_array:
    n = offdiag.shape[0]
    diag = 1.0 - np.asarray(offdiag.sum(axis=1)).ravel()
    out = sp.csr_array(offdiag + sp.diags_array(diag, shape=(n, n)))
    out.sort_indices()
    return out


def metropolis(adjacency: Any) -> sp.csr_array:
    """Metropolis–Hastings weights: ``W_ij = 1/max(d_i, d_j)`` on links, ``W_ii = 1 - sum``.

    Degrees ``d_i`` count the node itself. The result is symmetric and doubly
    stochastic with a positive diagonal for any undirected pattern.

    Raises:
        ParameterError: the pattern is not symmetric.

    Example:
        >>> import networkx as nx
        >>> metropolis(nx.path_graph(3)).toarray().round(3).tolist()
        [[0.667, 0.333, 0.0], [0.333, 0.333, 0.333], [0.0, 0.333, 0.667]]
    """
    pat = as_pattern(adjacency)
    _require_symmetric(pat, "metropolis")
    deg = np.asarray(pat.sum(axis=1)).ravel() + 1.0
    coo = pat.tocoo()
    vals = 1.0 / np.maximum(deg[coo.row], deg[coo.col])
    off = sp.csr_array((vals, (coo.row, coo.col)), shape=pat.shape)
    return _with_diagonal(off)


def lazy_max_degree(adjacency: Any) -> sp.csr_array:
    """Lazy max-degree weights: ``W = (I + M) / 2`` with ``M_ij = 1/(d_max + 1)`` on links.

    ``d_max`` is the largest degree (self excluded). Symmetric and doubly
    stochastic for an undirected pattern, diagonal at least 1/2.

    Raises:
        ParameterError: the pattern is not symmetric.
    """
    pat = as_pattern(adjacency)
    _require_symmetric(pat, "lazy-max-degree")
    deg = np.asarray(pat.sum(axis=1)).ravel()
    dmax = float(deg.max()) if deg.size else 0.0
    off = sp.csr_array(pat.astype(float) * (0.5 / (dmax + 1.0)))
    return _with_diagonal(off)


def row_stochastic(adjacency: Any) -> sp.csr_array:
    """Uniform row-stochastic weights: ``W_ij = 1/|N_i^in ∪ {i}|`` for each sender ``j``.

    Example:
        >>> row_stochastic([[0, 1], [0, 0]]).toarray().tolist()
        [[0.5, 0.5], [0.0, 1.0]]
    """
    pat = as_pattern(adjacency).astype(float)
    n = pat.shape[0]
    full = sp.csr_array(pat + sp.eye_array(n, format="csr"))
    indeg = np.asarray(full.sum(axis=1)).ravel()
    out = sp.csr_array(sp.diags_array(1.0 / indeg) @ full)
    out.sort_indices()
    return out


def column_stochastic(adjacency: Any) -> sp.csr_array:
    """Uniform column-stochastic (push-sum) weights: ``A_ij = 1/|N_j^out ∪ {j}|``.

    Each sender splits its mass equally over its out-neighbours and itself.

    Example:
        >>> column_stochastic([[0, 1], [0, 0]]).toarray().tolist()
        [[1.0, 0.5], [0.0, 0.5]]
    """
    pat = as_pattern(adjacency).astype(float)
    n = pat.shape[0]
    full = sp.csr_array(pat + sp.eye_array(n, format="csr"))
    outdeg = np.asarray(full.sum(axis=0)).ravel()
    out = sp.csr_array(full @ sp.diags_array(1.0 / outdeg))
    out.sort_indices()
    return out


def _laplacian(pat: sp.csr_array) -> sp.csr_array:
    a = pat.astype(float)
    return sp.csr_array(sp.diags_array(np.asarray(a.sum(axis=1)).ravel()) - a)


def laplacian_step(adjacency: Any) -> float:
    """The step ``a = 2 / (3 lambda_max(L))`` used with :func:`laplacian` (0 with no links).

    ``L = D_in - A`` is the in-degree Laplacian (the usual one when undirected);
    ``lambda_max`` is its largest eigenvalue modulus (dense for ``N <= 64``, else ARPACK from a fixed start
    vector: the same pattern gives the same step, to the bit, on every call).
    """
    pat = as_pattern(adjacency)
    if pat.nnz == 0:
        return 0.0
    lap = _laplacian(pat)
    n = lap.shape[0]
    if n <= 64:
        lam = float(np.max(np.abs(np.linalg.eigvals(lap.toarray()))))
    else:
        # a fixed start vector: ARPACK's default is random, so the step (and every weight) changed in its last
        # digits from call to call, and with it every run on these weights
        v0 = np.random.default_rng(0).standard_normal(n)
        lam = float(abs(spla.eigs(lap, k=1, which="LM", v0=v0, return_eigenvectors=False)[0]))
    return 2.0 / (3.0 * lam)


def laplacian(adjacency: Any, a: float | None = None) -> sp.csr_array:
    """Laplacian weights ``W = I - a L`` (the experiments of Showkatbakhsh, Karakus and
    Diggavi, arXiv 2019, use ``a = 2/(3 lambda_max)``).

    Rows sum to one; for an undirected pattern ``W`` is symmetric and doubly
    stochastic with eigenvalues in ``[1/3, 1]`` under the default ``a``.

    Args:
        adjacency: the link pattern.
        a: the step; default :func:`laplacian_step`.

    Raises:
        ParameterError: ``a`` is not positive and finite, or makes a diagonal
            entry negative (the message names the node).
    """
    pat = as_pattern(adjacency)
    if a is None:
        a = laplacian_step(pat)
    elif not np.isfinite(a) or a <= 0:
        raise ParameterError(f"laplacian step a must be positive and finite, got {a!r}")
    lap = _laplacian(pat)
    n = lap.shape[0]
    out = sp.csr_array(sp.eye_array(n, format="csr") - a * lap)
    diag = out.diagonal()
    if (diag < 0).any():
        i = int(np.flatnonzero(diag < 0)[0])
        raise ParameterError(f"laplacian step a={a!r} gives node {i} a negative self-weight {diag[i]!r}")
    out.eliminate_zeros()
    out.sort_indices()
    return out


WEIGHT_RULES: dict[str, WeightRule] = {
    "metropolis": metropolis,
    "lazy-max-degree": lazy_max_degree,
    "row-stochastic": row_stochastic,
    "column-stochastic": column_stochastic,
    "laplacian": laplacian,
}


def get_rule(rule: str | WeightRule) -> WeightRule:
    """Look up a weight rule by name (or pass a callable through).

    Raises:
        ParameterError: an unknown name (the message lists the known ones).
    """
    if callable(rule):
        return rule
    try:
        return WEIGHT_RULES[rule]
    except KeyError:
        raise ParameterError(
            f"unknown weight rule {rule!r}; known rules: {', '.join(sorted(WEIGHT_RULES))}"
        ) from None

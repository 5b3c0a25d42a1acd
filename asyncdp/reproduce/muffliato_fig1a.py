"""``asyncdp reproduce muffliato-fig1a``: the figure of Cyffers, Even, Bellet and Massoulié (NeurIPS 2022) with
the engine-run panel.

The figure itself (authors' per-pair values beside the exact values, witnesses) is
:func:`asyncdp.papers.muffliato.reproduce.fig1a.reproduce_fig1a`; this module adds the panel computed from
engine runs through the privacy checker's linear model (:mod:`asyncdp.privacy.network`), a layer above the
papers: lockstep gossip and asynchronous gossip over lossy links, where no analytic bound exists.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from accounting.network.muffliato_gossip import chebyshev_gamma, hamilton_weights, muffliato_steps, spectral_gap
from accounting.network.muffliato_graphs import distances_from, grid

from ..papers.muffliato.reproduce import fig1a as _fig

__all__ = ["reproduce_fig1a", "asynchronous_series"]

ALPHA, SIGMA = _fig.ALPHA, _fig.SIGMA


def asynchronous_series(side: int = 5, *, runs: int = 4, loss: float = 0.1, seed: int = 0, source: int = 0
                        ) -> dict[str, Any]:
    """The same curve from engine runs on a ``side x side`` grid: lockstep gossip, and asynchronous gossip
    (:class:`~asyncdp.engine.timing.Async`, rate 1) over lossy links, where no analytic bound exists.

    Convention of the engine's node observer: every message ``v`` combines, the first exchange included
    (so neighbours of ``u`` see its full local release); rounds: the local noising round, then the authors'
    step count plus one. Asynchronous values are schedule-averaged Renyi divergences over ``runs`` runs
    (:func:`asyncdp.privacy.network.averaged_rows`), with their upper confidence bounds.

    Returns:
        ``{"graph", "n", "steps", "loss", "runs", "distance", "lockstep", "async", "async_upper"}`` (means over
        the observers at each distance).
    """
    from ..engine.links import LinkModel, Links
    from ..engine.timing import Async
    from ..privacy.network import averaged_rows, leakage_rows
    from ..problems.costs import RendezvousQuadratic
    from ..problems.domains import Box
    from ..problems.problem import Problem
    from ..scenario import Scenario
    from ..papers.muffliato.rule import Muffliato, muffliato_topology

    graph = grid(side)
    n = graph.number_of_nodes()
    w = hamilton_weights(graph)
    gap = spectral_gap(w)
    steps = muffliato_steps(n, SIGMA, gap, accelerated=True)
    values = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, 1))
    base = Scenario(Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values)), muffliato_topology(w),
                    Muffliato(sigma=SIGMA, gamma=chebyshev_gamma(gap)), horizon=steps + 2, seed=seed)
    lock = np.array([r.values[source] for r in leakage_rows(base, alpha=ALPHA)])
    asy = replace(base, timing=Async(rate=1.0), links=Links(LinkModel(loss=loss)))
    est, up = np.zeros(n), np.zeros(n)
    for row, upper in averaged_rows(asy, runs, alpha=ALPHA):
        est[row.v], up[row.v] = row.values[source], upper[source]
    dist = distances_from(graph, source)
    ds = sorted({int(d) for d in dist if d > 0})
    return {"graph": f"grid {side}x{side}", "n": n, "steps": steps, "loss": loss, "runs": runs, "distance": ds,
            "lockstep": [float(np.mean(lock[dist == d])) for d in ds],
            "async": [float(np.mean(est[dist == d])) for d in ds],
            "async_upper": [float(np.mean(up[dist == d])) for d in ds]}



def reproduce_fig1a(out_dir: str | Path, *, seed: int = 0, full: bool = False, runs: int = 4, workers: int = 1,
                    **options: Any) -> dict[str, Any]:
    """The figure with the asynchronous panel (:func:`asynchronous_series`); options as
    :func:`asyncdp.papers.muffliato.reproduce.fig1a.reproduce_fig1a`.

    Example:
        >>> callable(reproduce_fig1a)
        True
    """
    return _fig.reproduce_fig1a(out_dir, seed=seed, full=full, runs=runs, asynchronous=asynchronous_series,
                                workers=workers, **options)

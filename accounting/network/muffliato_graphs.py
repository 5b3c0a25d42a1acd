"""The graphs of Muffliato's Figure 1a and the shortest-path distances its curves are plotted against.

Cyffers, Even, Bellet and Massoulié (NeurIPS 2022), Fig. 1a: the hypercube of
dimension 11, an Erdős–Rényi graph and a random geometric graph on 2048 nodes,
and the 45 x 45 grid (``figure_graphs``); the pairwise loss from ``u`` to
``v`` (:mod:`.muffliato`) is drawn against their distance (``distances_from``).

Example:
    >>> distances_from(grid(3), 0).tolist()
    [0, 1, 2, 1, 2, 3, 2, 3, 4]
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from ..errors import AccountingError

__all__ = [
    "hypercube",
    "erdos_renyi_connected",
    "random_geometric",
    "grid",
    "figure_graphs",
    "distances_from",
]


def hypercube(dim: int = 11) -> nx.Graph:
    """The hypercube of dimension ``dim`` on nodes ``0..2^dim - 1`` (binary labels in networkx order).

    Args:
        dim: the dimension.

    Returns:
        The graph.

    Example:
        >>> hypercube(3).number_of_nodes()
        8
    """
    return nx.convert_node_labels_to_integers(nx.hypercube_graph(dim))


def erdos_renyi_connected(n: int = 2048, p: float | None = None, seed: int = 0, max_draws: int = 1000
                          ) -> nx.Graph:
    """Erdős–Rényi ``G(n, p)``, ``p = log(n)/n`` by default, redrawn until connected.

    Draw ``k`` uses the seed ``numpy.random.SeedSequence(seed).spawn(max_draws)[k]`` (first 32-bit word), so
    one ``seed`` fixes the graph.

    Args:
        n: number of nodes.
        p: edge probability (default ``log(n) / n``).
        seed: the seed.
        max_draws: how many graphs to try.

    Returns:
        The first connected draw.

    Raises:
        AccountingError: no connected draw in ``max_draws``.

    Example:
        >>> nx.is_connected(erdos_renyi_connected(64, seed=1))
        True
    """
    prob = math.log(n) / n if p is None else p
    for child in np.random.SeedSequence(seed).spawn(max_draws):
        g = nx.fast_gnp_random_graph(n, prob, seed=int(child.generate_state(1)[0]))
        if nx.is_connected(g):
            return g
    raise AccountingError(f"erdos_renyi_connected: no connected G({n}, {prob}) in {max_draws} draws (seed={seed})")


def random_geometric(n: int = 2048, radius: float = 0.07, seed: int = 0) -> nx.Graph:
    """Random geometric graph: ``n`` uniform points in the unit square, edges within ``radius``.

    Args:
        n: number of nodes.
        radius: connection radius.
        seed: networkx's seed for the points.

    Returns:
        The graph.

    Raises:
        AccountingError: the drawn graph is not connected (naming the seed).

    Example:
        >>> random_geometric(200, 0.2, seed=0).number_of_nodes()
        200
    """
    g = nx.random_geometric_graph(n, radius, seed=seed)
    if not nx.is_connected(g):
        raise AccountingError(f"random_geometric: the graph for n={n}, radius={radius}, seed={seed} is not "
                              "connected; choose another seed")
    return g


def grid(side: int = 45) -> nx.Graph:
    """The ``side x side`` grid, node ``i * side + j`` at row ``i``, column ``j``.

    Args:
        side: nodes per side.

    Returns:
        The graph.

    Example:
        >>> sorted(grid(3).neighbors(4))
        [1, 3, 5, 7]
    """
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side), ordering="sorted")


def figure_graphs(seed: int = 0) -> dict[str, nx.Graph]:
    """The four graphs of the figure: hypercube 11, Erdős–Rényi 2048, random geometric 2048 (0.07), grid 45.

    Args:
        seed: the seed of the two random graphs.

    Returns:
        ``{"hypercube", "erdos-renyi", "geometric", "grid"}`` to graphs (a few seconds to build).

    Raises:
        AccountingError: a random graph could not be drawn connected.
    """
    return {"hypercube": hypercube(11), "erdos-renyi": erdos_renyi_connected(2048, seed=seed),
            "geometric": random_geometric(2048, 0.07, seed=seed), "grid": grid(45)}


def distances_from(graph: nx.Graph, v: int) -> np.ndarray:
    """Shortest-path distances from ``v`` to every node ``0..n-1`` (``-1`` where unreachable).

    Args:
        graph: a graph on nodes ``0..n-1``.
        v: the source.

    Returns:
        ``(n,)`` integer array.

    Example:
        >>> distances_from(nx.path_graph(3), 0).tolist()
        [0, 1, 2]
    """
    out = np.full(graph.number_of_nodes(), -1, dtype=np.int64)
    for u, d in nx.single_source_shortest_path_length(graph, v).items():
        out[u] = d
    return out

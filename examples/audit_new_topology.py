"""Audit a user's own 12-node topology against the assumptions of every algorithm the library knows.

The network: 12 sensors on a ring-shaped corridor. Every round, each corridor
link is down independently with probability 0.2 (seeded), and every third round
a long-range link 0 <-> 6 is added. Weights are Metropolis (symmetric, doubly
stochastic). Some theorems need every round connected; a failed link can break
that, and the audit says in which round and between which nodes.

Run:  python examples/audit_new_topology.py
"""

from __future__ import annotations

import networkx as nx
import numpy as np

import topology
from asyncdp.papers import assumption_set, rules

N, ROUNDS, SEED = 12, 30, 2024


def corridor_graphs(num_rounds: int = ROUNDS, seed: int = SEED) -> list[nx.Graph]:
    """One networkx graph per round: a ring with random link failures plus a periodic shortcut."""
    rng = np.random.default_rng(seed)
    ring = nx.cycle_graph(N)
    graphs = []
    for t in range(1, num_rounds + 1):
        g = nx.Graph()
        g.add_nodes_from(range(N))
        g.add_edges_from(e for e in ring.edges if rng.random() > 0.2)
        if t % 3 == 0:
            g.add_edge(0, 6)
        graphs.append(g)
    return graphs


def main() -> dict[str, topology.AuditReport]:
    sequence = topology.from_networkx(corridor_graphs(), rule="metropolis")
    reports = {}
    for name in sorted(rules()):  # every rule of every discovered paper (seed papers, installed, registered)
        report = topology.audit(sequence, assumption_set(name))
        reports[name] = report
        print(report.to_table())
        print()
    return reports


def plot_audit(reports: dict[str, topology.AuditReport]) -> None:
    """Left: the corridor's links up in each round (red: that round is disconnected). Right: each algorithm's
    assumptions over the rounds: green while it holds, a red cross at its first failure. Saves
    out/audit_new_topology.png."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    graphs = corridor_graphs()
    rounds = np.arange(1, len(graphs) + 1)
    colors = ["tab:blue" if nx.is_connected(g) else "tab:red" for g in graphs]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained",
                                   gridspec_kw={"width_ratios": [1, 1.4]})
    ax1.bar(rounds, [g.number_of_edges() for g in graphs], color=colors)
    ax1.set(xlabel="round t", ylabel="links up", title="the corridor (red: disconnected round)")
    rows = [(name, a) for name, report in reports.items() for a in report.to_dict()["assumptions"]]
    for y, (_, a) in enumerate(rows):
        end = a["first_failure_round"] if not a["holds"] and a["first_failure_round"] else rounds[-1]
        ax2.plot([1, end], [y, y], color="tab:green", lw=3)
        if not a["holds"]:
            ax2.plot([end], [y], "x", color="tab:red", ms=9, mew=2.5)
    ax2.set_yticks(range(len(rows)), [f"{name}: {a['name']}" for name, a in rows], fontsize=7)
    ax2.invert_yaxis()
    ax2.set(xlabel="round t", title="assumptions: held (green), first failure (red x)")
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/audit_new_topology.png", dpi=100)
    print("figure: out/audit_new_topology.png")
    plt.show()


if __name__ == "__main__":
    plot_audit(main())

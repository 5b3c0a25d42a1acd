"""Private rendezvous (Huang, Mitra and Vaidya, ICDCN 2015, Examples 1-2) with the Huang-Mitra-Vaidya algorithm, lockstep rounds.

Ten agents with private addresses in X = [-1, 1]^2 minimize sum_i ||x - a_i||^2
over a time-varying doubly stochastic digraph: round t uses
W_t = (I + P_t) / 2, with P_t a directed ring "i -> i + s_t" whose stride s_t
cycles through 1, 3, 7 (each round strongly connected, every weight 1/2).

Reading the output: at epsilon = 1 the run ends with a consensus error of
about 2.3 and ||xbar(T) - x*||^2 about 0.6 on a box of diameter 2.8, while
the same run without its privacy noise ends with a consensus error near 1e-6
and ||xbar(T) - x*||^2 near 0.02 (the bias of the finite step budget). That is a
noise-dominated result: the error is the price of the privacy level, not a
bug; ``noise_effect`` prints this comparison (and its verdict) for any
scenario. Raise epsilon (or the horizon) and the error shrinks.

Run:  python examples/huang2015_rendezvous.py     or     asyncdp run examples/huang2015_rendezvous.py
"""

from __future__ import annotations

import numpy as np

import topology
from asyncdp import Huang2015, Lockstep, Scenario, noise_effect, rendezvous_problem
from asyncdp.papers import assumption_set

N, HORIZON, SEED = 10, 60, 2015  # (c, q, p) below: best mean error of a small grid at epsilon = 1


def ring_weights(n: int, stride: int) -> np.ndarray:
    """(I + P) / 2 where P sends agent i's message to agent (i + stride) mod n."""
    w = 0.5 * np.eye(n)
    for i in range(n):
        w[(i + stride) % n, i] += 0.5  # receiver (i + stride) weighs sender i
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, 2))
problem = rendezvous_problem(addresses)  # X = [-1, 1]^2, C2 = 4 sqrt(2), C3 = C4 = 2
graphs = topology.periodic([ring_weights(N, s) for s in (1, 3, 7)], description="strided rings 1, 3, 7")
scenario = Scenario(
    problem, graphs, Huang2015(epsilon=1.0, c=0.05, q=0.8, p=0.97),
    timing=Lockstep(), horizon=HORIZON, seed=SEED,
)


def main() -> dict:
    private = scenario.run()
    exact = scenario.replace(algorithm=Huang2015(epsilon=float("inf"), c=0.05, q=0.8, p=0.97)).run()
    print(f"x* = {np.round(problem.optimum, 4)}")
    print("private run (epsilon = 1):")
    print(private.summary_table())
    print(f"noise-free run (epsilon = inf): ||xbar(T) - x*||^2 = {exact.optimality_error()[-1]:.3e}")
    print(noise_effect(scenario, private).explain())
    print(topology.audit(graphs, assumption_set("huang2015")).to_table())
    return {"private": private, "exact": exact}


if __name__ == "__main__":
    import matplotlib.pyplot as plt
    from pathlib import Path

    runs = main()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    for label, res in (("epsilon = 1", runs["private"]), ("no privacy noise", runs["exact"])):
        ax1.semilogy(res.optimality_error(), label=label)
        ax2.semilogy(res.consensus_error(), label=label)
    ax1.set(xlabel="round t", title="optimality error ||xbar(t) - x*||^2")
    ax2.set(xlabel="round t", title="consensus error max_ij ||x_i(t) - x_j(t)||")
    ax1.legend()
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/huang2015_rendezvous.png", dpi=100)
    print("figure: out/huang2015_rendezvous.png")
    plt.show()

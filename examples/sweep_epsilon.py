"""Monte-Carlo sweep over the privacy level epsilon of the private rendezvous (Huang, Mitra and Vaidya, ICDCN 2015, Examples 1-2).

``factory(epsilon, c, q, p)`` rebuilds the scenario of
``examples/huang2015_rendezvous.py`` (ten agents in [-1, 1]^2, strided rings
1, 3, 7, Huang-Mitra-Vaidya with lockstep rounds, T = 60) with another
privacy level and schedule. The script is self-contained on purpose: as a
``asyncdp.experiments.factories.ScriptFactory`` it travels as source text to Dask
workers that may not see this folder (a test checks that it builds the same
scenario as the rendezvous example).

What to expect: with T = 60 and these schedules the last round's noise scale
is ``M_60 = 2 C2 sqrt(2) c p^59 / (epsilon (p - q)) ~ 0.75 / epsilon`` while
the step sizes add up to only ``c / (1 - q) = 0.25``, so for epsilon up to
about 10 the final iterates are dominated by projected noise: the spread of
the agents (``deviation``) shrinks as epsilon grows, but the optimality error
stays around 0.3-0.45 and is not monotone in epsilon over the default grid.
It falls clearly only beyond that (try ``--grid epsilon=10,100,1000``).

Run:  python examples/sweep_epsilon.py
      asyncdp sweep examples/sweep_epsilon.py --runs 200 --out eps.csv
      asyncdp sweep examples/sweep_epsilon.py --grid epsilon=10,100,1000 --runs 200 --executor processes
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import topology
from asyncdp import Huang2015, Lockstep, Scenario, rendezvous_problem

N, HORIZON, SEED = 10, 60, 2015  # as in examples/huang2015_rendezvous.py


def ring_weights(n: int, stride: int) -> np.ndarray:
    """(I + P) / 2 where P sends agent i's message to agent (i + stride) mod n."""
    w = 0.5 * np.eye(n)
    for i in range(n):
        w[(i + stride) % n, i] += 0.5  # receiver (i + stride) weighs sender i
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, 2))
problem = rendezvous_problem(addresses)
graphs = topology.periodic([ring_weights(N, s) for s in (1, 3, 7)], description="strided rings 1, 3, 7")


def factory(epsilon: float, c: float = 0.05, q: float = 0.8, p: float = 0.97) -> Scenario:
    """The rendezvous scenario with privacy level ``epsilon`` and schedule ``(c, q, p)``.

    The sweep replaces the seed per task; ``SEED`` is only the default.
    """
    return Scenario(problem, graphs, Huang2015(epsilon=epsilon, c=c, q=q, p=p),
                    timing=Lockstep(), horizon=HORIZON, seed=SEED)


grid = {"epsilon": [0.5, 1, 2, 5]}


def main(runs: int = 100, seed: int = 0) -> pd.DataFrame:
    """Sweep the default grid in-process and print the per-point summary."""
    from asyncdp.experiments.summaries import format_summary, summarize
    from asyncdp.experiments.sweep import sweep

    df = sweep(factory, grid, runs=runs, seed=seed)
    print(f"private rendezvous, {runs} runs per epsilon (sweep seed {seed}):")
    print(format_summary(summarize(df)))
    return df


if __name__ == "__main__":
    import matplotlib.pyplot as plt
    from pathlib import Path

    df = main()
    eps = sorted(df["epsilon"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    for ax, column in zip(axes, ("optimality_error", "deviation")):
        ax.boxplot([df.loc[df["epsilon"] == e, column] for e in eps])
        ax.set_xticks(range(1, len(eps) + 1), [f"{e:g}" for e in eps])
        ax.set(xlabel="epsilon", title=f"{column} at T = {HORIZON}, spread over {df['run'].nunique()} runs")
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/sweep_epsilon.png", dpi=100)
    print("figure: out/sweep_epsilon.png")
    plt.show()

"""Privacy check of huang2015 (eq. 8 schedule) on private rendezvous: verdict ``pass``.

Five agents on a time-varying doubly stochastic digraph; ``adjacent`` is the
same scenario with agent 0's address moved from the corner (1, 1) to the
opposite corner (-1, -1). The accountant recomputes the sensitivity, composes
the realized ledger, probes the update, replays transcripts exactly and runs a
black-box test.

Run:  asyncdp privacy check examples/privacy_check_rendezvous.py --runs 2000
"""

from __future__ import annotations

import numpy as np

import topology
from asyncdp import Huang2015, Scenario, rendezvous_problem

N, HORIZON, SEED = 5, 30, 3
SCHEDULE = "eq8"


def ring_weights(n: int, stride: int) -> np.ndarray:
    w = 0.5 * np.eye(n)
    for i in range(n):
        w[(i + stride) % n, i] += 0.5
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, 2))
addresses[0] = [1.0, 1.0]
problem = rendezvous_problem(addresses)
graphs = topology.periodic([ring_weights(N, s) for s in (1, 2)])
scenario = Scenario(problem, graphs, Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.6, schedule=SCHEDULE),
                    horizon=HORIZON, seed=SEED)
adjacent = scenario.replace(problem=problem.adjacent(0, address=[-1.0, -1.0]))


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=2000)
    print(report.to_table())
    return report.to_dict()


def plot_report(report: dict, checked: Scenario, name: str) -> None:
    """Left: each round's declared loss of the changed agent (sensitivity / noise scale, from one run's ledger),
    and its running sum. Right: what each method of the check found, against the claim. Saves out/NAME.png."""
    import matplotlib.pyplot as plt
    from pathlib import Path

    ledger = checked.run().ledger.to_dataframe()
    agent = report["changed_agent"]
    mine = ledger if agent is None else ledger[ledger["agent"] == agent]
    per_round = (mine["claimed_sensitivity"] / mine["scale"]).groupby(mine["round"]).sum()
    if agent is None:  # one round's loss changed: every agent's releases
        per_round = per_round / ledger["agent"].nunique()
    found = {"accountant (composition)": report["epsilon_accountant"], "PLD at delta": report["epsilon_tight"],
             "exact replay, max": report["replay_max_loss"], "worst case": report["worst_case_loss"],
             "black-box lower bound": report["empirical_epsilon_lower_bound"]}
    found = {k: float(v) for k, v in found.items() if v is not None and np.isfinite(float(v))}
    claim = float(report["epsilon_claimed"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    ax1.bar(per_round.index, per_round.values, color="tab:blue", label="declared loss of the round")
    ax1.step(per_round.index, per_round.cumsum().values, where="mid", color="k", label="running sum")
    ax1.axhline(claim, color="tab:red", ls="--", label=f"claimed epsilon = {claim:g}")
    ax1.set(xlabel="round t", ylabel="sensitivity / noise scale", title=f"agent {agent}" if agent is not None
            else "mean over agents")
    ax1.legend(fontsize=8)
    ax2.barh(list(found), list(found.values()), color="tab:gray")
    ax2.axvline(claim, color="tab:red", ls="--")
    ax2.set(xlabel="epsilon", title=f"verdict: {report['verdict']}")
    Path("out").mkdir(exist_ok=True)
    fig.savefig(f"out/{name}.png", dpi=100)
    print(f"figure: out/{name}.png")
    plt.show()


if __name__ == "__main__":
    plot_report(main(), scenario, "privacy_check_rendezvous")

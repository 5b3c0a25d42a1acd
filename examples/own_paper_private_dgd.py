"""Bring your own algorithm: a private distributed gradient method as a paper of its own, in one file.

The algorithm is the consensus-based distributed (sub)gradient method of
Nedić and Ozdaglar (IEEE TAC 2009), made private the standard way: every
broadcast is perturbed by the Laplace mechanism (Dwork, McSherry, Nissim and
Smith, TCC 2006) and the rounds compose by basic composition (Dwork and
Roth, The Algorithmic Foundations of Differential Privacy, 2014, Thm. 3.16),
for a pure epsilon over the run. Agent ``i`` in round ``t``::

    y_i(t) = x_i(t-1) + Lap(b)^n                              (broadcast)
    z_i(t) = sum_j W_ij(t) y_j(t)                             (mixing, by the engine)
    x_i(t) = Proj_X(z_i(t) - alpha clip(grad f_i(z_i(t)), C))  (local step)

**The user's own lemma.** ``y(1)`` masks ``x(0)``, which no cost touches:
sensitivity 0. For ``t >= 2``, fix every release up to ``t - 1``: every
``z_j(t-1)`` is then the same under two adjacent problems (one agent's cost
changed), so only that agent's ``x(t-1)`` moves, by at most ``alpha`` times
the L2 distance of two clipped gradients, ``2 alpha C``; in L1, ``2 alpha C
sqrt(n)`` (projection is non-expansive). With ``b = 2 alpha C sqrt(n) (T -
1) / epsilon`` the run is ``epsilon``-DP. The lemma holds for **any** two
costs (clipping), so its adjacency class for the worst-case search is
"gradients of L2 norm at most ``C``", whose extremal pairs attain it.

**Its topology assumptions** (Nedić and Ozdaglar 2009, for the optimization
guarantee, not for privacy): nonnegative, doubly stochastic weights with a
positive lower bound on the used weights, and the union graph over every
window of ``B`` rounds strongly connected.

What this file shows (``tests/asyncdp/papers/test_own_paper_example.py`` runs it):

* ``scenario`` / ``adjacent``: the correct algorithm: ``asyncdp privacy check`` says **pass**,
  and the report says the sensitivity came from this file's lemma;
* ``variant("half-noise")``: declares ``b`` but adds ``b / 2``: **violation**;
* ``variant("small-lemma")``: a lemma too small by a factor 2, with noise and declaration
  consistent with it: **violation**; the reported witness is one step of the rule on the class's
  own extremal pair that moves a release twice as far as the lemma allows (the sensitivity
  prober), and the worst-case pair refutes it too (the user's own pair moves releases as far,
  but its gradients exceed the class's bound, where a rule that does not clip would not be
  covered: sensitivity coverage reports a doubt);
* ``user_digraph()``: a time-varying digraph of the user's: the audit names the failed
  assumption with its witness (``asyncdp topology audit FILE --algorithm THIS_FILE``).

Run:  asyncdp privacy check examples/own_paper_private_dgd.py --runs 1000
      python examples/own_paper_private_dgd.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

import topology
from accounting.claims import Claim, verify
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass, Paper, register
from topology.audit import AssumptionSet, BStronglyConnected, EachRound, MinWeight

REFERENCE = ("Nedić and Ozdaglar (IEEE TAC 2009) with the Laplace mechanism of Dwork, McSherry, Nissim and Smith "
             "(TCC 2006); lemma: this file's docstring")


@dataclass(frozen=True)
class PrivateDGD(Algorithm):
    """Private distributed gradient descent (module docstring); noise calibrated to ``epsilon`` over ``rounds``."""

    epsilon: float = 1.0
    step: float = 0.1
    clip: float = 1.0
    rounds: int = 20
    dim: int = 0  # filled by bind
    name: ClassVar[str] = "private-dgd"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"),)

    def bind(self, problem: Any) -> PrivateDGD:
        return replace(self, dim=problem.dim)

    def lemma_value(self) -> float:
        """The per-release L1 sensitivity the rule's author believes in (used to calibrate and declare)."""
        return 2 * self.step * self.clip * math.sqrt(self.dim)

    def scale(self) -> float:
        return self.lemma_value() * (self.rounds - 1) / self.epsilon

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("laplace", self.scale(), self.dim, 0.0 if t == 1 else self.lemma_value())

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + self.scale() * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), self.clip)
        return {"x": problem.domain.project(z - self.step * g)}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """Basic composition of the releases ``y(2..T)``, each ``lemma_value / scale``-DP."""
        return self.epsilon * (horizon - 1) / (self.rounds - 1), 0.0


def lemma(scenario: Any) -> np.ndarray:
    """The sensitivity of each release, from the rule's parameters and the problem's dimension only."""
    alg = scenario.algorithm
    out = np.full(scenario.horizon, 2 * alg.step * alg.clip * math.sqrt(scenario.problem.dim))
    out[0] = 0.0  # y(1) masks the initial point
    return out


def adjacency(scenario: Any) -> GradientClass:
    """Any two costs: the clipped gradients have L2 norm at most ``C``; the lemma is in L1."""
    return GradientClass(scenario.algorithm.clip, "l1")


def claim_check(scenario: Any, eps_ledger: float, delta_ledger: float) -> str:
    """The claim against the accountant's epsilon of the ledger (composed with the lemma)."""
    alg = scenario.algorithm.bind(scenario.problem)
    eps, delta = alg.claimed_privacy(scenario.horizon)
    return verify(Claim(REFERENCE, "basic composition of Laplace releases", eps, delta, "run"),
                  eps_ledger, delta_ledger).message


ASSUMPTIONS = AssumptionSet("private-dgd", "Nedić and Ozdaglar (IEEE TAC 2009)", (
    EachRound(topology.check_nonnegative, "nonnegative", "every weight W_ij(t) >= 0"),
    EachRound(topology.check_doubly_stochastic, "doubly_stochastic",
              "every W(t) has rows and columns summing to 1 (Nedić and Ozdaglar 2009, doubly stochastic weights)"),
    MinWeight("eta", "min_weight_eta", "W_ii(t) >= eta and every positive W_ij(t) >= eta for one eta > 0"),
    BStronglyConnected(source="Nedić and Ozdaglar 2009, bounded intercommunication interval", push_sum=False),
), "doubly")

PAPER = register(Paper("private-dgd", (PrivateDGD,), lemma=lemma, reference=REFERENCE, adjacency=adjacency,
                       claim_check=claim_check, assumptions=ASSUMPTIONS))


# -- the scenario and its adjacent twin -------------------------------------------------------------------
N, HORIZON, SEED = 5, 20, 7


def ring_weights(n: int, stride: int) -> np.ndarray:
    """Doubly stochastic: each agent keeps half and sends half to the agent ``stride`` ahead."""
    w = 0.5 * np.eye(n)
    w[(np.arange(n) + stride) % n, np.arange(n)] += 0.5
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, 2))
addresses[0] = [1.0, 1.0]
problem = rendezvous_problem(addresses, low=-5.0, high=5.0)
graphs = topology.periodic([ring_weights(N, s) for s in (1, 2)])
scenario = Scenario(problem, graphs, PrivateDGD(rounds=HORIZON), horizon=HORIZON, seed=SEED)
adjacent = scenario.replace(problem=problem.adjacent(0, address=[-1.0, -1.0]))


# -- two wrong versions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class HalfNoiseDGD(PrivateDGD):
    """Declares ``b`` but adds ``b / 2``: the released noise contradicts the declaration.

    A subclass of :class:`PrivateDGD`: it uses that paper's record (found through the MRO).
    """

    name: ClassVar[str] = "private-dgd-half-noise"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + 0.5 * self.scale() * noise["y"]}


@dataclass(frozen=True)
class SmallLemmaDGD(PrivateDGD):
    """Believes the per-release sensitivity is ``alpha C sqrt(n)``, half the truth, and calibrates to it.

    Noise, declaration and claim agree with that lemma; the lemma is wrong. It registers its own paper
    record (a subclass that registers one uses it instead of its base class's).
    """

    name: ClassVar[str] = "private-dgd-small-lemma"

    def lemma_value(self) -> float:
        return self.step * self.clip * math.sqrt(self.dim)


register(Paper("private-dgd-small-lemma", (SmallLemmaDGD,), lemma=lambda sc: 0.5 * lemma(sc),
               reference="a mistaken reading of this file's lemma (factor 2 lost)", adjacency=adjacency,
               claim_check=claim_check, assumptions=ASSUMPTIONS))


def variant(kind: str) -> tuple[Scenario, Scenario]:
    """``(scenario, adjacent)`` of ``"correct"``, ``"half-noise"`` or ``"small-lemma"``."""
    rule = {"correct": PrivateDGD, "half-noise": HalfNoiseDGD, "small-lemma": SmallLemmaDGD}[kind](rounds=HORIZON)
    return scenario.replace(algorithm=rule), adjacent.replace(algorithm=rule)


# -- a time-varying digraph of the user's ------------------------------------------------------------------
def user_digraph(rounds: int = 12) -> topology.GraphSequence:
    """A directed ring in odd rounds; in even rounds agent 0 also hears everyone (each agent averages what it hears).

    Row-stochastic weights on a digraph whose in-degrees differ: in even rounds agent 0's column no longer sums
    to 1, so the doubly stochastic assumption fails there.
    """
    mats = []
    for t in range(1, rounds + 1):
        adj = np.eye(N)
        adj[np.arange(N), (np.arange(N) - 1) % N] = 1.0  # i hears i - 1
        if t % 2 == 0:
            adj[:, 0] = 1.0  # everyone hears agent 0
        mats.append(adj / adj.sum(axis=1, keepdims=True))
    return topology.from_matrices(mats)


def main() -> dict[str, Any]:
    from asyncdp.privacy import check_privacy

    out: dict[str, Any] = {}
    for kind in ("correct", "half-noise", "small-lemma"):
        sc, adj = variant(kind)
        report = check_privacy(sc, adj, runs=600, search_examples=5)
        print(f"{kind:12} verdict {report.verdict}: {report.sensitivity_source}")
        out[kind] = report
    audit = topology.audit(user_digraph(), ASSUMPTIONS)
    print(audit.to_table())
    out["audit"] = audit
    return out


def plot_results(out: dict[str, Any]) -> None:
    """Left: per variant, the claim and what the check found (accountant, exact replay, worst case, black box).
    Right: the user's digraph fails the doubly stochastic assumption: column sums of W(t) per round.
    Saves out/own_paper_private_dgd.png."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    figures = {"accountant": "epsilon_accountant", "replay, max": "replay_max_loss",
               "worst case": "worst_case_loss", "black-box bound": "empirical_epsilon_lower_bound"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    kinds = ("correct", "half-noise", "small-lemma")
    width = 0.8 / (len(figures) + 1)
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
    verdicts = []
    for k, kind in enumerate(kinds):
        d = out[kind].to_dict()
        verdicts.append(d["verdict"])
        ax1.bar(k, float(d["epsilon_claimed"]), width, color="tab:red", label="claimed" if k == 0 else None)
        for j, (label, key) in enumerate(figures.items(), 1):
            v = d.get(key)
            if v is not None and np.isfinite(float(v)):
                ax1.bar(k + j * width, float(v), width, color=colors[j - 1], label=label if k == 0 else None)
    ax1.set_xticks([k + 0.4 for k in range(len(kinds))], [f"{k}\n({v})" for k, v in zip(kinds, verdicts)])
    ax1.set(ylabel="epsilon", title="what the privacy check found, per variant")
    ax1.legend(fontsize=7)
    seq = user_digraph()
    sums = np.array([seq.weights(t).toarray().sum(axis=0) for t in range(1, 13)])
    for i in range(N):
        ax2.plot(range(1, 13), sums[:, i], marker="o", label=f"agent {i}")
    ax2.axhline(1.0, color="k", ls="--", lw=1)
    ax2.set(xlabel="round t", ylabel="column sum of W(t)",
            title="user digraph: doubly stochastic fails in even rounds")
    ax2.legend(fontsize=7)
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/own_paper_private_dgd.png", dpi=100)
    print("figure: out/own_paper_private_dgd.png")
    plt.show()


if __name__ == "__main__":
    plot_results(main())

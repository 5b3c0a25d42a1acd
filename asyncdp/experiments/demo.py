"""``asyncdp demo``: one small scenario end to end, in a few seconds.

Private rendezvous (Huang, Mitra and Vaidya, ICDCN 2015, Example 1) with ten agents on a time-varying
doubly stochastic digraph, run three ways — the papers' lockstep rounds, the
same with asynchronous agents over lossy, slow links, and 500 lockstep runs
at once on the batch engine — followed by an independent privacy check and
topology audits of the designed and of the realized mixing weights. Prints a
compact table and writes a plot.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

import topology
from accounting.papers.huang2015 import ASSUMPTIONS as _ASSUMPTIONS
from topology.validation import check_integer

from ..papers.huang2015.rule import Huang2015
from ..errors import ScenarioError
from ..engine.links import LinkModel, Links, LogNormalLatency
from ..problems.problem import rendezvous_problem
from ..scenario import Scenario
from ..engine.timing import Async

__all__ = ["demo_scenario", "run_demo"]

N_AGENTS, HORIZON = 10, 60


def _strided_ring(n: int, stride: int) -> np.ndarray:
    w = 0.5 * np.eye(n)
    w[(np.arange(n) + stride) % n, np.arange(n)] += 0.5  # agent i sends to i + stride
    return w


def demo_scenario(seed: int = 2015) -> Scenario:
    """The demo's lockstep scenario: ``huang2015`` (epsilon = 1) on strided rings 1, 3, 7.

    ``(c, q, p) = (0.2, 0.3, 0.75)``: the noise has decayed by round 60, so
    the agents reach consensus (the best of a small grid on simulated error).

    Raises:
        ScenarioError: ``seed`` is not a nonnegative integer.
    """
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError, where="demo_scenario")
    addresses = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(N_AGENTS, 2))
    graphs = topology.periodic([_strided_ring(N_AGENTS, s) for s in (1, 3, 7)], description="strided rings 1, 3, 7")
    return Scenario(rendezvous_problem(addresses), graphs, Huang2015(epsilon=1.0, c=0.2, q=0.3, p=0.75),
                    horizon=HORIZON, seed=seed)


def _plot(path: Path, lockstep: Any, lossy: Any, batch: Any, exact: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..reproduce._outputs import save_figure

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    rounds = np.arange(lockstep.horizon + 1)
    ax1.semilogy(rounds, lockstep.optimality_error(), label="lockstep (one run)")
    ax1.semilogy(rounds, lossy.optimality_error(), label="async, lossy links (one run)")
    ax1.semilogy(rounds, batch.optimality_error.mean(axis=0), "k--", label=f"lockstep, mean of {batch.runs} runs")
    ax1.semilogy(rounds, exact.optimality_error(), "k:", label="noise-free (epsilon = inf)")
    ax1.set_xlabel("round t")
    ax1.set_ylabel(r"$\|\bar x(t) - x^*\|^2$")
    ax1.legend(fontsize=8)
    ax2.plot(rounds, lockstep.consensus_error(), label="lockstep")
    ax2.plot(rounds, lossy.consensus_error(), label="async, lossy links")
    ax2.set_yscale("log")
    ax2.set_xlabel("round t")
    ax2.set_ylabel(r"$\max_{ij} \|x_i(t) - x_j(t)\|$")
    ax2.legend(fontsize=8)
    fig.suptitle("asyncdp demo: huang2015, epsilon = 1, 10 agents")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=120)


def run_demo(out_dir: str | Path = "out", *, seed: int = 2015, privacy_runs: int = 1000,
             batch_runs: int = 500) -> dict[str, Any]:
    """Run the demo, print the table, write ``out_dir/demo.png``; return the numbers.

    Args:
        out_dir: where the plot goes (created if needed).
        seed: the scenario seed.
        privacy_runs: transcripts sampled by the privacy check.
        batch_runs: lockstep runs on the batch engine.

    Returns:
        A dictionary of the printed numbers and the plot's path.

    Raises:
        ScenarioError: ``seed``, ``privacy_runs`` or ``batch_runs`` is not an
            integer in range (seed >= 0, runs >= 1).

    Example:
        >>> run_demo(seed=-1)
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: run_demo: seed must be >= 0, got -1
    """
    from ..privacy.check import check_privacy

    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError, where="run_demo")
    privacy_runs = check_integer(privacy_runs, "privacy_runs", minimum=1, error=ScenarioError, where="run_demo")
    batch_runs = check_integer(batch_runs, "batch_runs", minimum=1, error=ScenarioError, where="run_demo")

    start = time.perf_counter()
    scenario = demo_scenario(seed)
    lossy_scenario = scenario.replace(
        timing=Async(rate=1.0, staleness=3),
        links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)),
    )
    lockstep, lossy = scenario.run(), lossy_scenario.run()
    alg = scenario.algorithm
    exact = scenario.replace(algorithm=Huang2015(epsilon=float("inf"), c=alg.c, q=alg.q, p=alg.p)).run()
    batch = scenario.run(engine="batch", runs=batch_runs, keep="final")
    moved = -np.asarray(scenario.problem.costs.to_dict()["addresses"][0])  # agent 0 to the mirror point
    adjacent = scenario.replace(problem=scenario.problem.adjacent(0, address=moved))
    privacy = check_privacy(scenario, adjacent, runs=privacy_runs, seed=seed)
    designed = topology.audit(scenario.topology, _ASSUMPTIONS, horizon=HORIZON)
    realized = topology.audit(lossy.realized, _ASSUMPTIONS)
    plot = Path(out_dir) / "demo.png"
    _plot(plot, lockstep, lossy, batch, exact)

    def first_failure(report: Any) -> str:
        bad = report.failed()
        return "all hold" if not bad else f"{bad[0].name} fails: {bad[0].witness}"

    rows = [
        ("run", "||xbar(T)-x*||^2", "consensus", "lost/sent", "doubly stoch."),
        ("lockstep", f"{lockstep.optimality_error()[-1]:.4f}", f"{lockstep.consensus_error()[-1]:.4f}",
         f"{lockstep.messages_lost}/{lockstep.messages_sent}", str(lockstep.realized_doubly_stochastic())),
        ("async, lossy", f"{lossy.optimality_error()[-1]:.4f}", f"{lossy.consensus_error()[-1]:.4f}",
         f"{lossy.messages_lost}/{lossy.messages_sent}", str(lossy.realized_doubly_stochastic())),
        ("noise-free", f"{exact.optimality_error()[-1]:.2e}", f"{exact.consensus_error()[-1]:.2e}",
         f"{exact.messages_lost}/{exact.messages_sent}", str(exact.realized_doubly_stochastic())),
        (f"batch mean ({batch.runs})", f"{batch.optimality_error[:, -1].mean():.4f}",
         f"{batch.consensus_error().mean():.4f}", "0/-", "True"),
    ]
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    lines = ["asyncdp demo — huang2015 (Huang, Mitra and Vaidya, ICDCN 2015), private rendezvous, 10 agents, "
             "60 rounds, epsilon = 1", ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines += [
        "",
        f"privacy: claimed epsilon {privacy.epsilon_claimed:g}; accountant (independent sensitivity) "
        f"{privacy.epsilon_ledger:.4f} basic, {privacy.epsilon_tight:.4f} PLD at delta {privacy.delta:g}; "
        f"replay max loss {privacy.replay_max_loss:.4f} over {privacy.replay_runs} transcripts -> {privacy.verdict}",
        f"audit, designed topology: {first_failure(designed)}",
        f"audit, realized mixing (async, lossy): {first_failure(realized)}",
        f"plot: {plot}    ({time.perf_counter() - start:.1f} s)",
    ]
    print("\n".join(lines))
    return {
        "lockstep_optimality_error": float(lockstep.optimality_error()[-1]),
        "lossy_optimality_error": float(lossy.optimality_error()[-1]),
        "batch_optimality_error_mean": float(batch.optimality_error[:, -1].mean()),
        "noise_free_optimality_error": float(exact.optimality_error()[-1]),
        "messages_lost": int(lossy.messages_lost),
        "privacy": privacy.to_dict(),
        "designed_audit_holds": designed.all_hold,
        "realized_audit_holds": realized.all_hold,
        "plot": str(plot),
    }

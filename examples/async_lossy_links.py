"""The rendezvous scenario of huang2015_rendezvous.py on a real network: latency, loss, own clocks.

Links have lognormal latency (median 0.2, sigma 0.5) and lose 10% of messages;
agents run deadline rounds (period 1, combine at 0.8 with up to 5% clock
drift) and renormalize over the messages that arrived. The noise draws are the
same as in the lockstep run (noise is keyed by round, not by timing), so the
accuracy change is due to the network alone. The realized mixing weights are
audited: renormalized rows break double stochasticity. Both runs are
noise-dominated (errors of the order of the domain, see
huang2015_rendezvous.py); ``noise_effect`` shows the lossy run beside the same
lossy run without privacy noise (same losses and latencies), so the network's
share and the noise's share of the error can be told apart.

Run:  python examples/async_lossy_links.py
"""

from __future__ import annotations

from pathlib import Path

import topology
from asyncdp import Deadline, LinkModel, Links, LogNormalLatency, load_script, noise_effect
from asyncdp.papers import assumption_set

lockstep = load_script(Path(__file__).with_name("huang2015_rendezvous.py"))["scenario"]
scenario = lockstep.replace(
    timing=Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
    links=Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)),
)


def main() -> dict:
    base, lossy = lockstep.run(), scenario.run()
    e0, e1 = base.optimality_error()[-1], lossy.optimality_error()[-1]
    print(f"messages lost: {lossy.messages_lost} of {lossy.messages_sent}")
    print(f"||xbar(T) - x*||^2: lockstep {e0:.4f}, deadline + lossy links {e1:.4f} (change {e1 - e0:+.4f})")
    print(f"consensus error at T: lockstep {base.consensus_error()[-1]:.4f}, lossy {lossy.consensus_error()[-1]:.4f}")
    print("lossy run against the same lossy run without privacy noise:")
    print(noise_effect(scenario, lossy).explain())
    print("audit of the realized mixing weights:")
    print(topology.audit(lossy.realized, assumption_set("huang2015")).to_table())
    return {"lockstep": base, "lossy": lossy}


if __name__ == "__main__":
    import matplotlib.pyplot as plt

    runs = main()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    for label, res in (("lockstep", runs["lockstep"]), ("deadline + lossy links", runs["lossy"])):
        ax1.semilogy(res.optimality_error(), label=label)
        ax2.semilogy(res.consensus_error(), label=label)
    ax1.set(xlabel="round t", title="optimality error ||xbar(t) - x*||^2")
    ax2.set(xlabel="round t", title="consensus error max_ij ||x_i(t) - x_j(t)||")
    ax1.legend()
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/async_lossy_links.png", dpi=100)
    print("figure: out/async_lossy_links.png")
    plt.show()

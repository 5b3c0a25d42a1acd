"""A huang2015 variant that releases less noise than it declares: verdict ``violation``.

``UnderNoised`` declares the noise of eq. (8) (``noise()`` is Huang2015's) but
its ``message`` adds only ``FRACTION`` of it, so the true epsilon is about
``1 / FRACTION`` times the claim. The checker does not trust the declaration:
it replays the engine's runs on their realized schedules, recomputes every
release's noise-free value, and tests the residuals against the declared
Laplace scale; the witness names the agent, round, channel, declared and
estimated scale and the p-value.

Choose the variant with environment variables (defaults: 0.1, async):

* ``ASYNCDP_FRACTION``: the fraction of the declared noise released (e.g. 0.1, 0.5, 1.0);
* ``ASYNCDP_TIMING``: ``lockstep``, ``deadline`` (renormalize over what arrived) or
  ``async`` (Poisson wake-ups); the last two on lossy lognormal links.

Run:  asyncdp privacy check examples/privacy_check_under_noised.py --runs 1000
      ASYNCDP_FRACTION=0.5 ASYNCDP_TIMING=deadline asyncdp privacy check examples/privacy_check_under_noised.py
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncdp import Async, Deadline, Huang2015, LinkModel, Links, Lockstep, LogNormalLatency, load_script

FRACTION = float(os.environ.get("ASYNCDP_FRACTION", "0.1"))
TIMING = os.environ.get("ASYNCDP_TIMING", "async")


@dataclass(frozen=True)
class UnderNoised(Huang2015):
    """Huang2015 whose message adds ``fraction`` of the noise its ``noise()`` declares."""

    fraction: float = 0.1

    def message(self, state: Any, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + self.fraction * self.noise_scale(t) * noise["y"]}


def timed(base: Any, timing: str) -> Any:
    """``base`` under ``timing`` (lockstep, deadline or async; the last two on lossy lognormal links)."""
    lossy = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
    if timing == "lockstep":
        return base.replace(timing=Lockstep())
    if timing == "deadline":
        return base.replace(timing=Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
                            links=lossy)
    if timing == "async":
        return base.replace(timing=Async(rate=1.0), links=lossy)
    raise ValueError(f"ASYNCDP_TIMING must be lockstep, deadline or async, got {timing!r}")


_base = load_script(Path(__file__).with_name("privacy_check_rendezvous.py"), names=("scenario", "adjacent"))
_alg = _base["scenario"].algorithm
algorithm = UnderNoised(epsilon=_alg.epsilon, c=_alg.c, q=_alg.q, p=_alg.p, schedule=_alg.schedule,
                        fraction=FRACTION)
scenario = timed(_base["scenario"].replace(algorithm=algorithm), TIMING)
adjacent = timed(_base["adjacent"].replace(algorithm=algorithm), TIMING)


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=400)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_under_noised")

"""Noise calibrated (and declared) for 2 epsilon, epsilon claimed: verdict ``violation`` via a constructed pair.

``Overclaiming`` is huang2015 run with ``epsilon = 2`` (eq. 8's noise for 2,
declared consistently) that claims 1. The user's adjacent pair (agent 0's
address moved between opposite corners of the box) realizes only half of
Lemma 4's sensitivity bound, so replaying the engine's runs of that pair
finds no loss above 1. The accountant then builds the worst pair of Lemma
4's class itself: agent 0's cost replaced by opposite linear costs along a
sign pattern, which attain the bound; a transcript constructed on a realized
schedule has loss 2 > 1. ``--worst-pair FILE`` writes that pair as a script.

Run:  asyncdp privacy check examples/privacy_check_weak_noise.py --runs 1000 --worst-pair out/worst_pair.py
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from asyncdp import Huang2015, load_script


@dataclass(frozen=True)
class Overclaiming(Huang2015):
    """Huang2015 whose claim is half the epsilon its noise is calibrated for."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.epsilon / 2.0, 0.0


_base = load_script(Path(__file__).with_name("privacy_check_rendezvous.py"), names=("scenario", "adjacent"))
_alg = _base["scenario"].algorithm
algorithm = Overclaiming(epsilon=2.0 * _alg.epsilon, c=_alg.c, q=_alg.q, p=_alg.p, schedule=_alg.schedule)
scenario = _base["scenario"].replace(algorithm=algorithm)
adjacent = _base["adjacent"].replace(algorithm=algorithm)


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=400)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_weak_noise")

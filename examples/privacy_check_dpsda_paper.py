"""Privacy check of DPSDA-C as printed (Cheng, Liao and Li, arXiv 2022): unclipped, noise calibrated per node. Verdict ``violation``.

It uses the adjacent loss sequences of ``examples/privacy_check_dpsda.py``.
Theorem 2 calibrates ``sigma = 2 N L_hat / epsilon`` and bounds the change
of *all* nodes' dual variables by ``2 N L_hat``. Changing round 2's loss
moves every node's block, so the stacked change is ``N ||grad f_2 - grad f_2'||_1``.
The prober finds it above the claimed value: a witness. The accountant's
network-level epsilon is ``N`` times the claim per round.

Run:  asyncdp privacy check examples/privacy_check_dpsda_paper.py --runs 2000
"""

from __future__ import annotations

import runpy
from pathlib import Path

_build = runpy.run_path(str(Path(__file__).with_name("privacy_check_dpsda.py")))["build"]
scenario, adjacent = _build("dpsda-c", clip=False, level="node")


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=2000)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_dpsda_paper")

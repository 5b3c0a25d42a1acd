"""Privacy check of huang2015 with the Theorem 5 proof's noise schedule (p < 1/2): verdict ``violation``.

The proof of Theorem 5 (Huang, Mitra and Vaidya, ICDCN 2015) writes the noise scale with ``p^t`` instead
of eq. (8)'s ``p^(t-1)``. Since ``y(t)`` masks ``x(t-1)``, this spends
``epsilon / p`` instead of ``epsilon``. The witness is the worst pair of Lemma 4's
class: a constructed transcript of opposite linear costs, whose loss is about
``epsilon / p`` (3.3 with ``p = 0.3``). On this pair of quadratics the realized
change of the update is half of Lemma 4's bound, so the pair's own worst
transcript has loss ``epsilon / (2 p)`` (1.67); the engine's runs replayed
exactly stay below that (``replay_max_loss`` 1.19 with ``--runs 1000``, 1.28
with ``--runs 2000``), yet above 1. The noise scales shrink to the resolution of
the released values, and the replay's round-off allowance (1.54) is larger than
that excess, so no replayed run is the witness.

Run:  asyncdp privacy check examples/privacy_check_broken_schedule.py --runs 2000
"""

from __future__ import annotations

from pathlib import Path

from asyncdp import Huang2015, load_script

_base = load_script(Path(__file__).with_name("privacy_check_rendezvous.py"), names=("scenario", "adjacent"))
_broken = Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.3, schedule="theorem5-proof")
scenario = _base["scenario"].replace(algorithm=_broken)
adjacent = _base["adjacent"].replace(algorithm=_broken)


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=2000)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_broken_schedule")

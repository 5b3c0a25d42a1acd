"""A user's own algorithm without a paper record: verdict ``inconclusive``, with evidence.

``NoisyConsensusGD`` is written here from scratch against the rule interface
(:class:`asyncdp.algorithms.base.Algorithm`): each agent broadcasts its
state plus Laplace noise, mixes what it receives, and takes a clipped
gradient step. It declares its noise and claims an epsilon from its own
reasoning. The accountant has no independent sensitivity bound for it (no
paper record, so no lemma), so nothing is composed and the verdict cannot be
``pass``; but the released noise is still tested against the declaration,
every engine run is replayed exactly on its realized schedule, and the
engine's transcripts are audited black-box; none refutes the claim. The
report says which methods applied and why the others did not. To get the
full check (and a ``pass`` when the algorithm is right), give it a paper
record with its lemma and adjacency class: ``examples/own_paper_private_dgd.py``.

Run:  asyncdp privacy check examples/privacy_check_own_algorithm.py --runs 1000
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from asyncdp import load_script
from asyncdp.algorithms.base import Algorithm, Channel, NoiseDeclaration


@dataclass(frozen=True)
class NoisyConsensusGD(Algorithm):
    """x_i <- Proj(z_i - step * clip(grad f_i(z_i), bound)), z_i = sum_j W_ij (x_j + Lap(scale))."""

    scale: float = 1.5
    step: float = 0.05
    bound: float = 1.0
    name: ClassVar[str] = "my-noisy-consensus-gd"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"),)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def sensitivity(self) -> float:
        """L1 change of x_i after one step when only f_i changes: 2 step bound sqrt(n), n = 2."""
        return 2 * self.step * self.bound * np.sqrt(2.0)

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        # y(1) masks the cost-free x(0); y(t) masks one step's change
        return NoiseDeclaration("laplace", self.scale, 2, 0.0 if t == 1 else self.sensitivity())

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + self.scale * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = problem.costs.gradient(agents, z, round_index=t)
        norm = np.maximum(np.linalg.norm(g, axis=-1, keepdims=True), 1e-300)
        g = g * np.minimum(1.0, self.bound / norm)
        return {"x": problem.domain.project(z - self.step * g)}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The author's own argument: the releases y(2..T) each cost sensitivity / scale."""
        return (horizon - 1) * self.sensitivity() / self.scale, 0.0


_base = load_script(Path(__file__).with_name("privacy_check_rendezvous.py"), names=("scenario", "adjacent"))
algorithm = NoisyConsensusGD()
scenario = _base["scenario"].replace(algorithm=algorithm, horizon=10)
adjacent = _base["adjacent"].replace(algorithm=algorithm, horizon=10)


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=400)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_own_algorithm")

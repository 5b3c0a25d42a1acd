"""Accountant inputs for ``dpsda-ps`` (seed 004, DPSDA-PS, Algorithm 2); shared code in :mod:`._dpsda`."""

from __future__ import annotations

from ._dpsda import claim, network_sensitivity, node_sensitivities, sensitivity, theorem_verdict

__all__ = ["sensitivity", "node_sensitivities", "network_sensitivity", "claim", "theorem_verdict"]

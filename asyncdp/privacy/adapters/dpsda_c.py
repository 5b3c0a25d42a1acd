"""Accountant inputs for ``dpsda-c`` (seed 004, DPSDA-C, Algorithm 1); shared code in :mod:`._dpsda`."""

from __future__ import annotations

from ._dpsda import claim, network_sensitivity, node_sensitivities, sensitivity, theorem_verdict

__all__ = ["sensitivity", "node_sensitivities", "network_sensitivity", "claim", "theorem_verdict"]

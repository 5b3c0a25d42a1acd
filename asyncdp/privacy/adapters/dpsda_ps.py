"""Accountant inputs for ``dpsda-ps`` (Cheng, Liao and Li, arXiv 2022: DPSDA-PS, Algorithm 2).

Shared code in :mod:`._dpsda`.
"""

from __future__ import annotations

from ._dpsda import ADAPTER, claim, claimed_scale, network_sensitivity, node_sensitivities, sensitivity, theorem_verdict

__all__ = ["ADAPTER", "claimed_scale", "sensitivity", "node_sensitivities", "network_sensitivity", "claim", "theorem_verdict"]

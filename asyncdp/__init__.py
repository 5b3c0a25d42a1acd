"""asyncdp: differentially private distributed optimization (simulator, accounting, CLI)."""

__version__ = "0.1.0"

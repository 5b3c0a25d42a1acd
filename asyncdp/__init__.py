"""asyncdp: an asynchronous event-driven simulator for differentially private distributed optimization.

The public API in one place; see the README for the three uses (scenario
scripts, property-based privacy checks, topology audits).

The public names are imported on first access (PEP 562, via
``lazy_loader``; the names and their submodules are listed in
``__init__.pyi``), so ``import asyncdp`` (and the command line's start-up)
stays cheap.
"""

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

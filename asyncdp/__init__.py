"""asyncdp: an asynchronous event-driven simulator for differentially private distributed optimization.

The public API in one place; see the README for the three uses (scenario
scripts, property-based privacy checks, topology audits).

The public names are imported on first access (PEP 562, via
``lazy_loader``; the names and their submodules are listed in
``__init__.pyi``), so ``import asyncdp`` (and the command line's start-up)
stays cheap.
"""

import lazy_loader

from topology import _moved

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

# modules that moved to subpackages: old import paths and old pickles keep working
_moved.install(
    {
        "asyncdp.batch_engine": "asyncdp.engine.batch_engine",
        "asyncdp.simpy_engine": "asyncdp.engine.simpy_engine",
        "asyncdp.links": "asyncdp.engine.links",
        "asyncdp.timing": "asyncdp.engine.timing",
        "asyncdp.transcript": "asyncdp.engine.transcript",
        "asyncdp.finite": "asyncdp.problems.finite",
        "asyncdp.datasets": "asyncdp.problems.datasets",
        "asyncdp.domains": "asyncdp.problems.domains",
        "asyncdp.online": "asyncdp.problems.online",
        "asyncdp.problem": "asyncdp.problems.problem",
        "asyncdp.problems_nonconvex": "asyncdp.problems.nonconvex",
        "asyncdp.costs": "asyncdp.problems.costs",
        "asyncdp.regret": "asyncdp.experiments.regret",
        "asyncdp.sweep": "asyncdp.experiments.sweep",
        "asyncdp.demo": "asyncdp.experiments.demo",
        "asyncdp.tuning": "asyncdp.reproduce.huang2015.tuning",
        "asyncdp.reproduce.huang2015_fig1": "asyncdp.reproduce.huang2015.fig1",
        "asyncdp.privacy_adapters": "asyncdp.privacy.adapters",
        "asyncdp.strategies": "asyncdp.privacy.strategies",
    }
)

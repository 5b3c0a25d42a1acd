"""asyncdp: an asynchronous event-driven simulator for differentially private distributed optimization.

The public API in one place; see the README for the three uses (scenario
scripts, property-based privacy checks, topology audits).

The public names are imported on first access (PEP 562, via
``lazy_loader``), so ``import asyncdp`` (and the command line's start-up)
stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .algorithms import DPSDAC, DPSDAPS, REGISTRY, Algorithm, Huang2015, Showkatbakhsh, WangBasar, get_algorithm
    from .batch_engine import BatchResult, run_batch
    from .costs import FunctionClass, RendezvousQuadratic, UserCost, WeightedQuadratic, check_constants
    from .domains import Ball, Box, Reals
    from .errors import ScenarioError
    from .links import (
        ConstantLatency,
        ExponentialLatency,
        LinkModel,
        Links,
        LogNormalLatency,
        ZeroLatency,
    )
    from .noise import InjectedNoise, SeededNoise, ZeroNoise
    from .problem import Problem, rendezvous_problem
    from .result import Result
    from .scenario import Scenario, load_script
    from .timing import Async, Deadline, Lockstep
    from .transcript import Transcript


_EXPORTS: dict[str, tuple[str, ...]] = {
    "algorithms": (
        "DPSDAC",
        "DPSDAPS",
        "REGISTRY",
        "Algorithm",
        "Huang2015",
        "Showkatbakhsh",
        "WangBasar",
        "get_algorithm",
    ),
    "batch_engine": ("BatchResult", "run_batch"),
    "costs": ("FunctionClass", "RendezvousQuadratic", "UserCost", "WeightedQuadratic", "check_constants"),
    "domains": ("Ball", "Box", "Reals"),
    "errors": ("ScenarioError",),
    "links": (
        "ConstantLatency",
        "ExponentialLatency",
        "LinkModel",
        "Links",
        "LogNormalLatency",
        "ZeroLatency",
    ),
    "noise": ("InjectedNoise", "SeededNoise", "ZeroNoise"),
    "problem": ("Problem", "rendezvous_problem"),
    "result": ("Result",),
    "scenario": ("Scenario", "load_script"),
    "timing": ("Async", "Deadline", "Lockstep"),
    "transcript": ("Transcript",),
}
"""Submodule -> the public names it defines."""

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)

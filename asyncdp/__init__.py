"""asyncdp: an asynchronous event-driven simulator for differentially private distributed optimization.

The public API in one place; see the README for the three uses (scenario
scripts, property-based privacy checks, topology audits).
"""

__version__ = "0.1.0"

from .algorithms import DPSDAC, DPSDAPS, REGISTRY, Algorithm, Huang2015, Showkatbakhsh, WangBasar, get_algorithm
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
from .batch_engine import BatchResult, run_batch
from .scenario import Scenario, load_script
from .timing import Async, Deadline, Lockstep
from .transcript import Transcript

__all__ = [
    "__version__",
    "REGISTRY",
    "Algorithm",
    "Huang2015",
    "Showkatbakhsh",
    "WangBasar",
    "DPSDAC",
    "DPSDAPS",
    "get_algorithm",
    "FunctionClass",
    "RendezvousQuadratic",
    "UserCost",
    "WeightedQuadratic",
    "check_constants",
    "Ball",
    "Box",
    "Reals",
    "ScenarioError",
    "ConstantLatency",
    "ExponentialLatency",
    "LinkModel",
    "Links",
    "LogNormalLatency",
    "ZeroLatency",
    "InjectedNoise",
    "SeededNoise",
    "ZeroNoise",
    "Problem",
    "rendezvous_problem",
    "Result",
    "BatchResult",
    "run_batch",
    "Scenario",
    "load_script",
    "Async",
    "Deadline",
    "Lockstep",
    "Transcript",
]

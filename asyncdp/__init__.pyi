"""Public names of ``asyncdp`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

__version__: str

from .algorithms import DPSDAC, DPSDAPS, REGISTRY, Algorithm, Huang2015, Showkatbakhsh, WangBasar, get_algorithm
from .engine.batch_engine import BatchResult, run_batch
from .problems.costs import FunctionClass, RendezvousQuadratic, UserCost, WeightedQuadratic, check_constants
from .problems.domains import Ball, Box, Reals
from .errors import AsyncdpError, ScenarioError
from .engine.links import (
    ConstantLatency,
    ExponentialLatency,
    LinkModel,
    Links,
    LogNormalLatency,
    ZeroLatency,
)
from .noise import InjectedNoise, SeededNoise, ZeroNoise
from .problems.problem import Problem, rendezvous_problem
from .result import Result
from .scenario import Scenario, load_script
from .engine.timing import Async, Deadline, Lockstep
from .engine.transcript import Transcript

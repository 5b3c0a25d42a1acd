"""Public names of ``asyncdp`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

# "name as name": an explicit re-export for type checkers (PEP 484); lazy_loader reads the names

__version__: str

from .algorithms import (
    Algorithm as Algorithm,
)
from .papers import (
    REGISTRY as REGISTRY,
    GradientClass as GradientClass,
    Paper as Paper,
    get_algorithm as get_algorithm,
    get_paper as get_paper,
)
from .papers.dpsda.rule import (
    DPSDAC as DPSDAC,
    DPSDAPS as DPSDAPS,
)
from .papers.huang2015.rule import (
    Huang2015 as Huang2015,
)
from .papers.showkatbakhsh.rule import (
    Showkatbakhsh as Showkatbakhsh,
)
from .papers.wang_basar.rule import (
    WangBasar as WangBasar,
)
from .engine.batch_engine import (
    BatchResult as BatchResult,
    run_batch as run_batch,
)
from .problems.costs import (
    FunctionClass as FunctionClass,
    LinearOverride as LinearOverride,
    RendezvousQuadratic as RendezvousQuadratic,
    UserCost as UserCost,
    WeightedQuadratic as WeightedQuadratic,
    check_constants as check_constants,
)
from .problems.domains import (
    Ball as Ball,
    Box as Box,
    Reals as Reals,
)
from .errors import (
    AsyncdpError as AsyncdpError,
    ScenarioError as ScenarioError,
)
from .engine.links import (
    ConstantLatency as ConstantLatency,
    ExponentialLatency as ExponentialLatency,
    LinkModel as LinkModel,
    Links as Links,
    LogNormalLatency as LogNormalLatency,
    ZeroLatency as ZeroLatency,
)
from .noise import (
    InjectedNoise as InjectedNoise,
    SeededNoise as SeededNoise,
    ZeroNoise as ZeroNoise,
)
from .problems.problem import (
    Problem as Problem,
    rendezvous_problem as rendezvous_problem,
)
from .result import (
    Result as Result,
)
from .scenario import (
    Scenario as Scenario,
    load_script as load_script,
)
from .engine.timing import (
    Async as Async,
    Deadline as Deadline,
    Lockstep as Lockstep,
)
from .engine.transcript import (
    Transcript as Transcript,
)
from .engine.schedule import (
    RealizedSchedule as RealizedSchedule,
)
from .experiments.noise_effect import (
    NoiseEffect as NoiseEffect,
    noise_effect as noise_effect,
)

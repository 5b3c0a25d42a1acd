"""Scenarios: a problem, a topology, an algorithm, timing, links and a seed.

A *scenario script* is a Python file that defines a module-level ``scenario``
(a :class:`Scenario`); ``asyncdp run SCRIPT.py`` loads and runs it, and
``asyncdp privacy check`` also reads ``adjacent``. See :func:`load_script`.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading
import traceback
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from topology.sequence import GraphSequence

from .algorithms.base import Algorithm
from .errors import HorizonError, LinkModelError, ScenarioError, TimingError, TopologyMismatchError
from .engine.links import LinkModel, Links
from .noise import NoiseSource
from .problems.problem import Problem
from .engine.timing import Async, Deadline, Lockstep

__all__ = ["Scenario", "MODES", "load_script", "exec_script_source", "call_script_function", "describe_script_error"]

MODES = ("broadcast", "unicast")


@dataclass(frozen=True)
class Scenario:
    """Everything that defines a run.

    Args:
        problem: the domain and the agents' private costs.
        topology: the graph sequence; round ``t`` uses ``topology.weights(t)``.
        algorithm: the per-agent rule (e.g. :class:`~asyncdp.papers.huang2015.rule.Huang2015`).
        timing: :class:`~asyncdp.engine.timing.Lockstep` (default),
            :class:`~asyncdp.engine.timing.Deadline` or :class:`~asyncdp.engine.timing.Async`.
        links: latency/loss per link (default: zero latency, no loss).
        seed: the one seed behind every random draw (see :mod:`asyncdp.noise`).
        horizon: number of rounds ``T`` each agent performs.
        x0: initial points, shape ``(N, n)``; default ``Proj_X(0)`` for everyone.
        mode: ``"broadcast"`` (one noisy message per agent and round, as in the
            papers; the agent mixes its own noisy message) or ``"unicast"`` (one
            independently noised message per link; as its own term the agent
            mixes the average of the copies it released that round, so its
            combination still depends on released values only — with no
            out-neighbour, its noise-free value).
        noise: a noise source; default :class:`~asyncdp.noise.SeededNoise` of ``seed``.
        record_transcript: keep the eavesdropper's transcript.

    Raises:
        TopologyMismatchError: the topology has a different number of nodes,
            or fewer rounds than ``horizon``.
        HorizonError: ``horizon`` is not a positive integer.
        ScenarioError: a bad ``mode``, ``x0`` shape, timing or seed.

    Warns:
        UserWarning: ``horizon`` is shorter than the rounds the algorithm
            plans (e.g. Showkatbakhsh's ``T + T2``: Stage II would not run, or not fully).

    Example:
        >>> import networkx as nx, topology
        >>> from asyncdp.problems.problem import rendezvous_problem
        >>> from asyncdp import Huang2015
        >>> sc = Scenario(rendezvous_problem([[0.5, 0.5], [-0.5, 0.0], [0.0, -0.5]]),
        ...               topology.from_networkx([nx.cycle_graph(3)], "metropolis", periodic=True),
        ...               Huang2015(epsilon=1.0, c=0.3, q=0.8, p=0.9), horizon=20, seed=1)
        >>> sc.run().trajectory.shape
        (21, 3, 2)
    """

    problem: Problem
    topology: GraphSequence
    algorithm: Algorithm
    timing: Lockstep | Deadline | Async = field(default_factory=Lockstep)
    links: Links = field(default_factory=Links)
    seed: int = 0
    horizon: int = 100
    x0: Any = None
    mode: str = "broadcast"
    noise: NoiseSource | None = None
    record_transcript: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.horizon, bool) or not isinstance(self.horizon, (int, np.integer)) or self.horizon < 1:
            raise HorizonError(f"horizon must be a positive integer, got {self.horizon!r}")
        if not isinstance(self.problem, Problem):
            raise ScenarioError(f"problem must be an asyncdp.problems.problem.Problem, got {type(self.problem).__name__}")
        if not isinstance(self.topology, GraphSequence):
            raise ScenarioError(f"topology must be a topology.GraphSequence, got {type(self.topology).__name__}")
        if not isinstance(self.algorithm, Algorithm):
            raise ScenarioError(f"algorithm must be an asyncdp Algorithm, got {type(self.algorithm).__name__}")
        if self.topology.num_nodes != self.problem.num_agents:
            raise TopologyMismatchError(
                f"topology has {self.topology.num_nodes} nodes but the problem has {self.problem.num_agents} agents"
            )
        if self.topology.length is not None and self.topology.length < self.horizon:
            raise TopologyMismatchError(
                f"topology has {self.topology.length} rounds, fewer than the horizon {self.horizon}"
            )
        rounds = getattr(self.problem.costs, "num_rounds", None)  # online losses (asyncdp.problems.online): one per round
        if rounds is not None and rounds < self.horizon:
            raise HorizonError(f"horizon {self.horizon} exceeds the {rounds} rounds of the online loss sequence")
        if not isinstance(self.timing, (Lockstep, Deadline, Async)):
            raise TimingError(f"timing must be Lockstep, Deadline or Async, got {type(self.timing).__name__}")
        if self.mode not in MODES:
            raise ScenarioError(f"mode must be one of {MODES}, got {self.mode!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ScenarioError(f"seed must be a nonnegative integer, got {self.seed!r}")
        if not isinstance(self.links, Links):
            hint = " (one model for every link: links=Links(model))" if isinstance(self.links, LinkModel) else ""
            raise LinkModelError(f"links must be an asyncdp.engine.links.Links, got {type(self.links).__name__}{hint}")
        self.links.validate(self.problem.num_agents)
        self._warn_short_horizon()
        if self.x0 is not None:
            x0 = np.asarray(self.x0, dtype=float)
            shape = (self.problem.num_agents, self.problem.dim)
            if x0.shape != shape:
                raise ScenarioError(f"x0 must have shape {shape}, got {x0.shape}")
            if not np.isfinite(x0).all():
                raise ScenarioError("x0 holds NaN or infinite entries")

    def _warn_short_horizon(self) -> None:
        """Warn when the horizon stops before the rounds the algorithm plans (its ``horizon``, e.g. ``T + T2``)."""
        planned = getattr(self.algorithm, "horizon", None)
        if isinstance(planned, (int, np.integer)) and not isinstance(planned, bool) and self.horizon < planned:
            stages = ""
            T, T2 = getattr(self.algorithm, "T", None), getattr(self.algorithm, "T2", None)
            if isinstance(T, (int, np.integer)) and isinstance(T2, (int, np.integer)):
                stages = (f" (T + T2 = {T} + {T2}); Stage II never runs" if self.horizon <= T else
                          f" (T + T2 = {T} + {T2}); Stage II stops after {self.horizon - T} of its {T2} rounds")
            warnings.warn(f"horizon {self.horizon} is shorter than the {int(planned)} rounds "
                          f"{self.algorithm.name} plans{stages}", UserWarning, stacklevel=4)

    def initial_points(self) -> np.ndarray:
        """``x0``, or ``Proj_X(0)`` for every agent."""
        if self.x0 is not None:
            return np.asarray(self.x0, dtype=float)
        zero = np.zeros((self.problem.num_agents, self.problem.dim))
        return self.problem.domain.project(zero)

    def replace(self, **changes: Any) -> Scenario:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description for provenance in results."""
        def _d(obj: Any) -> Any:
            return obj.to_dict() if hasattr(obj, "to_dict") else repr(obj)

        return {
            "algorithm": self.algorithm.name,
            "algorithm_params": self.algorithm.params(),
            "claim_level": getattr(self.algorithm, "claim_level", "run"),
            "num_agents": self.problem.num_agents,
            "dim": self.problem.dim,
            "topology": repr(self.topology),
            "timing": _d(self.timing),
            "links": _d(self.links),
            "seed": int(self.seed),
            "horizon": int(self.horizon),
            "mode": self.mode,
        }

    def run(self, engine: str = "simpy", *, runs: int = 1, keep: str = "all", transcripts: bool = False,
            freeze_gc: bool = True, progress: Any = None, layout: str = "auto") -> Any:
        """Run the scenario.

        Args:
            engine: ``"simpy"`` (the reference engine, every timing policy;
                returns a :class:`~asyncdp.result.Result`) or ``"batch"``
                (``runs`` Monte-Carlo runs at once; every timing, any links,
                either mode; run 0 of a timed batch is the SimPy run of the
                seed; returns a :class:`~asyncdp.engine.batch_engine.BatchResult`).
            runs, keep, transcripts, layout: batch engine options (see
                :func:`~asyncdp.engine.batch_engine.run_batch`).
            freeze_gc: SimPy engine: keep pre-existing objects out of the
                cyclic garbage collector's scans during the run (see
                :func:`~asyncdp.engine.simpy_engine.run_simpy`).
            progress: SimPy engine: ``progress(done, total)`` called as the run
                goes on (agent-rounds combined; see
                :func:`~asyncdp.engine.simpy_engine.run_simpy`).

        Raises:
            ScenarioError: an unknown engine, a scenario outside the batch
                engine's scope, a non-bool ``freeze_gc`` or ``transcripts``,
                a ``keep`` other than ``"all"``/``"final"``, or a batch
                option (``keep="final"``, ``transcripts=True``) given to the
                SimPy engine, which would ignore it, or ``progress`` given to
                the batch engine.
        """
        if not isinstance(freeze_gc, bool):
            raise ScenarioError(f"freeze_gc must be True or False, got {freeze_gc!r}")
        if not isinstance(transcripts, bool):
            raise ScenarioError(f"transcripts must be True or False, got {transcripts!r}")
        if not isinstance(keep, str) or keep not in ("all", "final"):
            raise ScenarioError(f"keep must be one of ('all', 'final'), got {keep!r}")
        if engine == "simpy":
            if keep != "all" or transcripts:
                raise ScenarioError(
                    f"keep={keep!r}, transcripts={transcripts!r}: batch engine options; the SimPy engine keeps the "
                    "whole run and records the transcript when record_transcript=True (use engine='batch')")
            if runs != 1:
                raise ScenarioError("the SimPy engine runs one run at a time; use engine='batch' for runs > 1")
            if layout != "auto":
                raise ScenarioError(f"layout={layout!r}: a batch engine option; the SimPy engine always draws from "
                                    "the per-agent and per-link streams")
            from .engine.simpy_engine import run_simpy

            return run_simpy(self, freeze_gc=freeze_gc, progress=progress)
        if engine == "batch":
            if progress is not None:
                raise ScenarioError("progress is a SimPy engine option; the batch engine reports no progress")
            from .engine.batch_engine import run_batch

            return run_batch(self, runs, keep=keep, transcripts=transcripts, layout=layout)
        raise ScenarioError(f"unknown engine {engine!r}; known: 'simpy', 'batch'")


def _script_frame(exc: BaseException, filename: str | None) -> tuple[str, int | None]:
    """The user's own frame of ``exc``: the deepest in ``filename`` (else outside asyncdp, topology, accounting)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if filename is not None:
        mine = [f for f in frames if f.filename == filename]
    else:
        roots = tuple(str(Path(m.__file__).resolve().parent) for m in _library_modules())
        mine = [f for f in frames if not str(Path(f.filename).resolve()).startswith(roots)
                and not f.filename.startswith("<frozen")]
    if not mine:
        return (filename or "<script>"), None
    return mine[-1].filename, mine[-1].lineno


def _library_modules() -> list[Any]:
    import accounting
    import topology

    return [sys.modules[__name__.rpartition(".")[0]], accounting, topology]


def describe_script_error(exc: BaseException, filename: str | None = None) -> str:
    """One line for an exception raised by user code: ``FILE, line N: Type: message`` (the user's own frame).

    Args:
        exc: the exception (with its traceback).
        filename: the script's file name as compiled; ``None``: the deepest frame outside the library.

    Returns:
        The line (no traceback).

    Example:
        >>> try:
        ...     exec(compile("x = 1\\nraise RuntimeError('boom')", "my.py", "exec"), {})
        ... except RuntimeError as e:
        ...     describe_script_error(e, "my.py")
        'my.py, line 2: RuntimeError: boom'
    """
    where, line = _script_frame(exc, filename)
    text = " ".join(str(exc).splitlines())
    head = f"{where}, line {line}" if line is not None else where
    return f"{head}: {type(exc).__name__}" + (f": {text}" if text else "")


def exec_script_source(source: str | bytes, filename: str, module_name: str,
                       error: type[Exception] = ScenarioError) -> dict[str, Any]:
    """Execute a user script's source as module ``module_name``; its namespace.

    Every failure of the script is one ``error`` line naming the file and the
    line (the user's own frame, no traceback; the original exception is the
    ``__cause__``): a syntax error, null bytes or an undecodable file, an
    exception raised while it runs, and a call to ``sys.exit`` (a script must
    define names, not exit: that is refused, never passed on as the command's
    exit code). ``KeyboardInterrupt`` passes through. The module is not
    ``__main__``, so an ``if __name__ == "__main__":`` block does not run.

    Args:
        source: the script's text (bytes honour a PEP 263 coding line).
        filename: shown in messages and tracebacks.
        module_name: the module's name while it runs (in ``sys.modules``).
        error: the exception class to raise.

    Returns:
        The module's namespace.

    Raises:
        ScenarioError: (or the class given as ``error``) the script cannot be compiled or fails while running.

    Example:
        >>> exec_script_source("x = (", "bad.py", "m")
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: bad.py, line 1: SyntaxError: '(' was never closed
        >>> exec_script_source("import sys; sys.exit(3)", "ex.py", "m")
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: ex.py: the script called sys.exit(3) while loading; a script defines names, it must not exit
    """
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = f", line {exc.lineno}" if exc.lineno else ""
        raise error(f"{filename}{line}: {type(exc).__name__}: {exc.msg}") from exc
    except (ValueError, UnicodeDecodeError) as exc:  # null bytes (Python < 3.12), bad encoding
        raise error(f"{filename}: not a readable Python script: {exc}") from exc
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module  # dataclasses and typing look the module up while it executes
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the user's script is the point
    except SystemExit as exc:
        raise error(f"{filename}: the script called sys.exit({exc.code!r}) while loading; "
                    "a script defines names, it must not exit") from None
    except Exception as exc:
        raise error(describe_script_error(exc, filename)) from exc
    finally:
        sys.modules.pop(module_name, None)
    return module.__dict__


def call_script_function(fn: Any, label: str, filename: str | None = None,
                         error: type[Exception] = ScenarioError, **kwargs: Any) -> Any:
    """Call a function a script defined; a bad signature or an exception is one ``error`` line.

    Args:
        fn: the function.
        label: how to name it in messages, e.g. ``"scenario()"``.
        filename: the script's file (named in messages; its frames are the user's).
        error: the exception class to raise.
        **kwargs: the arguments.

    Raises:
        ScenarioError: (or the class given as ``error``) ``fn`` cannot take ``kwargs`` (names the missing or unexpected
            parameters), raises, or calls ``sys.exit``.

    Example:
        >>> call_script_function(lambda n: n, "scenario()", "my.py")
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: my.py: scenario() cannot be called with no arguments: missing a required argument: 'n'
    """
    where = f"{filename}: " if filename else ""
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as exc:
        given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
        raise error(f"{where}{label} cannot be called with {given}: {exc}") from None
    except ValueError:  # no signature (some builtins): just call it
        pass
    try:
        return fn(**kwargs)
    except SystemExit as exc:
        raise error(f"{where}{label} called sys.exit({exc.code!r})") from None
    except Exception as exc:
        raise error(f"{describe_script_error(exc, filename)} (in {label})") from exc


_LOADING = threading.local()
"""``_LOADING.stack``: the scripts :func:`load_script` is executing in this thread, outermost first (a script may
load another; another thread loading the same script is no cycle)."""


def load_script(path: str | Path, names: tuple[str, ...] = ("scenario",)) -> dict[str, Any]:
    """Execute a scenario script and return the requested module-level names.

    A name may be a :class:`Scenario` or a function of no arguments returning
    one (it is called). Any failure of the script is one line naming the file
    and the line of the user's own code (see :func:`exec_script_source`).

    Args:
        path: the ``.py`` file.
        names: names the script must define (e.g. ``("scenario", "adjacent")``).

    Raises:
        FileNotFoundError: no such file.
        ScenarioError: not a ``.py`` file; the script does not compile, raises
            or calls ``sys.exit`` while loading, or loads itself (directly or through
            other scripts); it does not define a required
            name, defines it with the wrong type, or as a function that needs
            arguments or raises.

    Example:
        >>> load_script("notes.txt")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        FileNotFoundError: no scenario script at 'notes.txt'
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no scenario script at {str(path)!r}")
    if path.suffix != ".py":
        raise ScenarioError(f"{path}: a scenario script must be a Python file ending in .py, got {path.suffix or 'no suffix'!r}")
    key = str(path.resolve())
    loading: list[str] = _LOADING.__dict__.setdefault("stack", [])
    if key in loading:  # a script that loads itself (or a cycle): one line, not a RecursionError per level
        cycle = " -> ".join([*loading[loading.index(key):], key])
        raise ScenarioError(f"{path}: the script loads itself while loading (load_script cycle: {cycle})")
    loading.append(key)
    try:
        namespace = exec_script_source(path.read_bytes(), str(path), f"asyncdp_script_{abs(hash(key))}")
    finally:
        loading.pop()
    out = {}
    for name in names:
        if name not in namespace:
            raise ScenarioError(f"{path.name} does not define {name!r}")
        value = namespace[name]
        if callable(value) and not isinstance(value, Scenario):
            value = call_script_function(value, f"{name}()", str(path))
        if not isinstance(value, Scenario):
            raise ScenarioError(f"{path.name}: {name!r} must be a Scenario (or a function returning one), "
                                f"got {type(value).__name__}")
        out[name] = value
    return out

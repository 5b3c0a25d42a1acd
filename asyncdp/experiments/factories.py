"""Sweep factories: building the scenario of a grid point from a callable or from a script's source text.

A factory is ``factory(**params) -> Scenario``: a callable (picklable for
the process and Dask executors) or a :class:`ScriptFactory`, which carries a
script's source so any worker can exec it.

Example:
    >>> f = ScriptFactory("def factory(x):\\n    return x\\n")
    >>> f(x=2)
    2
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ScenarioError, SweepError
from ..noise import ZeroNoise
from ..scenario import Scenario, describe_script_error, exec_script_source

__all__ = ["ScriptFactory"]


@functools.lru_cache(maxsize=16)
def _exec_script(source: str, filename: str) -> dict[str, Any]:
    """Execute a script's source once per process; its module namespace.

    A failing script (syntax error, exception, ``sys.exit``) is one
    :class:`SweepError` line naming the file and line (see
    :func:`asyncdp.scenario.exec_script_source`).
    """
    digest = hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()[:16]
    return exec_script_source(source, filename, f"asyncdp_sweep_script_{digest}", error=SweepError)


@dataclass(frozen=True)
class ScriptFactory:
    """A factory defined in a script, carried as source text so any worker can exec it.

    The script runs as a module named ``asyncdp_sweep_script_<hash>`` (not
    ``__main__``, so an ``if __name__ == "__main__":`` block does not run),
    with ``__file__`` set to ``filename``, at most once per process. It must
    define ``factory(**params) -> Scenario`` (or the callable named ``name``)
    and may define a default ``grid`` dict. Any other callable of a script can
    travel the same way, e.g. ``ScriptFactory(source, name="my_metrics")`` as
    :func:`sweep`'s ``metrics``.

    Args:
        source: the script's Python source.
        filename: shown in tracebacks and error messages; not read.
        name: the factory's name in the script.

    Example:
        >>> f = ScriptFactory("def factory(epsilon):\\n    return epsilon\\ngrid = {'epsilon': [1, 2]}\\n")
        >>> f.default_grid(), f.load()(epsilon=3)
        ({'epsilon': [1, 2]}, 3)
    """

    source: str
    filename: str = "<sweep script>"
    name: str = "factory"

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], name: str = "factory") -> ScriptFactory:
        """Read a script file.

        Raises:
            FileNotFoundError: no such file.
            SweepError: not a ``.py`` file, or not UTF-8 text.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        if path.suffix != ".py":
            raise SweepError(f"{path}: a sweep script must be a Python file ending in .py, "
                             f"got {path.suffix or 'no suffix'!r}")
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SweepError(f"{path}: not a readable Python script (not UTF-8 text: {exc})") from None
        return cls(source, str(path), name)

    def namespace(self) -> dict[str, Any]:
        """The executed script's module-level names (cached per process)."""
        return _exec_script(self.source, self.filename)

    def load(self) -> Callable[..., Scenario]:
        """The script's factory.

        Raises:
            SweepError: the script does not define a callable ``name``.
        """
        ns = self.namespace()
        fn = ns.get(self.name)
        if fn is None:
            raise SweepError(f"{Path(self.filename).name} does not define {self.name!r}")
        if not callable(fn):
            raise SweepError(f"{Path(self.filename).name}: {self.name!r} must be a function, got {type(fn).__name__}")
        return fn

    def default_grid(self) -> dict[str, Any] | None:
        """The script's module-level ``grid``, or ``None``.

        Raises:
            SweepError: ``grid`` is not a mapping.
        """
        grid = self.namespace().get("grid")
        if grid is not None and not isinstance(grid, Mapping):
            raise SweepError(f"{Path(self.filename).name}: 'grid' must be a dict name -> list, "
                             f"got {type(grid).__name__}")
        return None if grid is None else dict(grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the script's callable (so a ScriptFactory with ``name="my_metrics"`` also serves as ``metrics``)."""
        return self.load()(*args, **kwargs)


def _resolve(factory: Any) -> Callable[..., Any]:
    if isinstance(factory, ScriptFactory):
        return factory.load()
    if not callable(factory):
        raise SweepError(f"factory must be callable or a ScriptFactory, got {type(factory).__name__}")
    return factory


def _fmt(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _check_signature(fn: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Fail early, naming the parameter, when ``fn`` cannot take the grid's names."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and some C callables
        return
    try:
        sig.bind(**params)
    except TypeError as exc:
        kinds = {p.kind for p in sig.parameters.values()}
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            for k, v in params.items():
                p = sig.parameters.get(k)
                if p is None or p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
                    raise SweepError(f"the factory does not accept grid parameter {k!r} (value {v!r}); "
                                     f"its signature is {sig}") from None
        raise SweepError(f"the factory cannot be called with ({_fmt(params)}): {exc}; its signature is {sig}") from None


def _build(fn: Callable[..., Any], params: Mapping[str, Any], point: int) -> Scenario:
    try:
        scenario = fn(**params)
    except ScenarioError as exc:
        raise SweepError(f"point {point} ({_fmt(params)}): the factory raised {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:
        raise SweepError(f"point {point} ({_fmt(params)}): the factory called sys.exit({exc.code!r})") from None
    except Exception as exc:
        code = getattr(fn, "__code__", None)
        where = describe_script_error(exc, code.co_filename if code is not None else None)
        raise SweepError(f"point {point} ({_fmt(params)}): the factory raised {where}") from exc
    if not isinstance(scenario, Scenario):
        raise SweepError(f"point {point} ({_fmt(params)}): the factory returned {type(scenario).__name__}, "
                         "not an asyncdp Scenario")
    return scenario


def _check_own_noise(scenario: Scenario, point: int, params: Mapping[str, Any]) -> None:
    """Refuse a scenario with its own random noise source in a sweep whose point runs several tasks.

    The sweep makes its runs differ by replacing ``Scenario.seed`` per task;
    a noise source the factory built (e.g. ``SeededNoise(0)``) ignores that
    seed, so every task of a point drew the same privacy noise: SimPy runs
    were copies (a standard error of 0) and batch chunks repeated chunk 0.
    ``ZeroNoise`` draws nothing and is allowed.
    """
    noise = scenario.noise
    if noise is None or isinstance(noise, ZeroNoise):
        return
    raise SweepError(
        f"point {point} ({_fmt(params)}): the factory's scenario has its own noise source "
        f"({type(noise).__name__}), which the sweep's per-task seed does not re-seed: its runs would repeat the same "
        "privacy noise. Leave noise=None (noise from Scenario.seed), or run one task per point "
        "(the batch engine with chunk_runs >= runs)")


def _warn_shared_gradient_noise(scenario: Scenario, runs: int) -> None:
    """Warn when the runs of a point share a rule's own gradient noise (DP-SDA's ``xi``, from its ``xi_seed``).

    The sweep varies ``Scenario.seed`` only; DP-SDA draws ``xi`` from the algorithm's ``xi_seed``
    (:mod:`asyncdp.papers.dpsda.rule`), so every run of a point (of every point with the same ``xi_seed``) has
    the same ``xi``: the means are conditional on one draw of it, and the standard errors leave its spread out.
    """
    alg = scenario.algorithm
    xi_seed = getattr(alg, "xi_seed", None)
    if runs > 1 and xi_seed is not None and float(getattr(alg, "gradient_noise_std", 0.0)) > 0.0:
        warnings.warn(
            f"the {runs} runs of each point share {alg.name}'s gradient noise xi: it is drawn from the algorithm's "
            f"xi_seed={xi_seed}, which the sweep's per-run seeds do not change, so the means are conditional on one "
            "draw of xi and the standard errors leave its spread out; to average over xi, make xi_seed a grid "
            "parameter and run one run per point", UserWarning, stacklevel=3)


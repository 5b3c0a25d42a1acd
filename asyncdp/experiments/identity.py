"""A sweep's identity: what its factory, metrics function and grid values are, as text a checkpoint or a worker compares.

A function is its code object and the values its code does not show: its closure, its defaults and the
module-level values it reads (a helper function and what that reads, a user's module, class or object; a
library's by name, the versions of asyncdp, numpy and Python standing for its code). A value is its ``repr`` with
what the repr hides shown (:func:`_shown`: arrays, tables, graphs, data sets). A repr that shows a memory address
is marked (:data:`_ADDRESS_MARK`): it differs in every process.

:mod:`.checkpoint` writes :func:`~asyncdp.experiments.checkpoint.fingerprint` to a checkpoint's manifest;
:mod:`.executors` checks on each worker that the factory has the identity it has in the sweep's process;
:mod:`.sweep` builds point 0 twice and compares the scenarios (:func:`_same_contents`).

Example:
    >>> namespace = {"__name__": "user_module", "SCALE": 2.0}
    >>> exec("def factory(epsilon):\\n    return SCALE * epsilon\\n", namespace)
    >>> list(_read_values(_identity(namespace["factory"])))
    ['SCALE']
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import os
import platform
import re
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .factories import ScriptFactory


def _identity(fn: Any) -> str:
    """What a factory or metrics function is, for the manifest: a script's SHA-256, a function's code and inputs.

    A function is its name, its code object (:func:`_code_digest`: its bytecode, constants and names, so a
    function typed at a prompt, without source, is told apart too) and what its code does not show: the values
    its closure captured and its defaults, and the module-level names it reads (:func:`_reads`: a constant, a
    helper function and what that reads). A ``functools.partial`` is its function and bound arguments, a bound
    method its function and object, a callable object its ``repr`` (two factories ``make(1.0)`` and
    ``make(100.0)`` of one source differ); an object of a user's class also its class (:func:`_global_state`). A :class:`ScriptFactory` is its whole text.
    """
    if _MEMO.get() is not None:
        return _identity_of(fn)
    token = _MEMO.set({})  # the outermost call: a helper read by several functions is fingerprinted once
    try:
        return _identity_of(fn)
    finally:
        _MEMO.reset(token)


def _identity_of(fn: Any) -> str:
    """:func:`_identity` within one fingerprint (``_MEMO`` set)."""
    if fn is None:
        return "none"
    if isinstance(fn, ScriptFactory):
        out = f"script:{fn.name}:sha256:{hashlib.sha256(fn.source.encode()).hexdigest()}"
        modules = _imported_modules(fn.namespace(), fn.source)
        return out + (":imports:" + ",".join(f"{k}={v}" for k, v in modules.items()) if modules else "")
    if isinstance(fn, functools.partial):
        return (f"partial({_identity(fn.func)}, args={_state(fn.args)}, "
                f"keywords={_state(sorted(fn.keywords.items()))})")
    name = f"{_module_name(fn)}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
    if inspect.ismethod(fn):  # its object, with its class's methods and attributes (those it calls, say)
        bound = f":self:{_global_state(fn.__self__, set())}"
        fn = fn.__func__
    else:
        bound = ""
    if not inspect.isfunction(fn):  # a callable object: what its repr shows, and its class (``__call__`` included)
        return f"callable:{name}:repr:{_global_state(fn, set())}"
    memo = _MEMO.get()
    assert memo is not None
    if id(fn) in memo:
        return (memo[id(fn)] or f"callable:{name}:recursive") + bound
    memo[id(fn)] = ""  # in progress: a function reading itself, or two reading each other
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if c.cell_contents is not fn]
    extra = ""
    if cells or fn.__defaults__ or fn.__kwdefaults__:
        extra = f":state:{_state([cells, fn.__defaults__, sorted((fn.__kwdefaults__ or {}).items())])}"
    reads = _reads(fn)
    if reads:
        extra += ":reads:" + ",".join(f"{k}={v}" for k, v in reads.items())
    memo[id(fn)] = out = f"callable:{name}:code:{_code_digest(fn.__code__)}{extra}"
    return out + bound


_MEMO: contextvars.ContextVar[dict[int, str] | None] = contextvars.ContextVar("asyncdp_identity_memo", default=None)


def _module_name(obj: Any) -> str:
    """The module an object was defined in, ``__main__`` for a worker's re-import of the main script (``__mp_main__``)."""
    name = str(getattr(obj, "__module__", "?"))
    return "__main__" if name == "__mp_main__" else name


def _code_digest(code: types.CodeType) -> str:
    """A SHA-256 (16 hex digits) of a code object: its bytecode, names, arguments and constants, nested code included.

    Line numbers and the file name are left out (moving a function in its file does not change it); the bytecode
    is that of the running Python.
    """
    digest = hashlib.sha256()

    def update(c: types.CodeType) -> None:
        digest.update(c.co_code)
        digest.update(repr((c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars, c.co_argcount,
                            c.co_posonlyargcount, c.co_kwonlyargcount, c.co_flags)).encode())
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                update(const)
            else:  # a frozenset's order follows the process's hash seed
                digest.update(repr(sorted(const, key=repr) if isinstance(const, frozenset) else const).encode())

    update(code)
    return digest.hexdigest()[:16]


def _names_read(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object and the code nested in it (lambdas, comprehensions) use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _is_library(namespace: Mapping[str, Any]) -> bool:
    """Whether a module's namespace is a library's (the standard library, an installed package, asyncdp and its
    accountant and topology packages), whose code the fingerprint's versions stand for, rather than the user's."""
    name = str(namespace.get("__name__", ""))
    if name.partition(".")[0] in ("asyncdp", "accounting", "topology"):
        return True
    file = namespace.get("__file__")
    if not file:
        return name in sys.builtin_module_names
    path = os.path.realpath(file)
    return any(path.startswith(os.path.realpath(root) + os.sep) for root in _library_roots())


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}))


def _reads(fn: types.FunctionType) -> dict[str, str]:
    """The module-level names a user's function reads, each with the fingerprint of its value.

    A helper function is its :func:`_identity` (so what it reads counts too), a class of the user's its methods
    and plain attributes, a module of the user's the attributes the function names, a library's function, class
    or module its name only (the versions stand for its code); any other value its :func:`_state`. A library's
    function reads nothing here.

    Example:
        >>> namespace = {"SCALE": 2.0, "OTHER": 1.0}  # a user's module
        >>> exec("def f(x):\\n    return x * SCALE", namespace)
        >>> list(_reads(namespace["f"]))
        ['SCALE']
    """
    namespace = fn.__globals__
    if _is_library(namespace):
        return {}
    names = _names_read(fn.__code__)
    out = {}
    for name in sorted(names & namespace.keys()):
        value = namespace[name]
        if value is not fn:
            out[name] = _global_state(value, names)
    return out


def _global_state(value: Any, names: set[str]) -> str:
    """The fingerprint of a module-level value a function reads (see :func:`_reads`); an object of a user's class
    with the default repr (its memory address) is its attributes."""
    if inspect.ismodule(value):
        if _is_library(vars(value)):
            return f"module:{value.__name__}"
        memo = _MEMO.get()
        assert memo is not None
        if id(value) in memo:  # a module reached again through the modules it imports
            return f"module:{value.__name__}:recursive"
        memo[id(value)] = ""
        try:  # ``pkg.config.C``: the names the function uses, followed into the user's modules
            attrs = [(n, _global_state(getattr(value, n), names)) for n in sorted(names)
                     if not n.startswith("__") and hasattr(value, n)]
        finally:
            del memo[id(value)]  # another function's names may reach it again
        return f"module:{value.__name__}:{_state(attrs)}"
    if not inspect.isfunction(value) and inspect.isfunction(getattr(value, "__wrapped__", None)):
        value = value.__wrapped__  # a functools.lru_cache or cache of a function: the function (its cache aside)
    if isinstance(value, type) or inspect.isfunction(value):
        label = f"{_module_name(value)}.{value.__qualname__}"
        if _is_library(_namespace_of(value)):
            return label
        if inspect.isfunction(value):
            return _state(_identity(value))
        return _class_state(value, label)
    library = _is_library(_namespace_of(type(value)))
    if not library and type(value).__repr__ is object.__repr__ and isinstance(getattr(value, "__dict__", None), dict):
        shown: Any = (type(value).__qualname__, sorted(vars(value).items()))  # its attributes, not its address
    else:
        shown = value
    try:
        state = _state(shown)
    except Exception:  # noqa: BLE001 - a repr that fails (an object half set up): never the same (no resume)
        return ("unreadable" if _COMPARING.get() else os.urandom(8).hex()) + _ADDRESS_MARK
    if library:
        return state
    return f"{state}:{_global_state(type(value), set())}"  # an object of the user's: its methods' reads too


def _class_state(cls: type, label: str) -> str:
    """The fingerprint of a user's class: its methods' :func:`_identity` and its attributes, inherited ones
    included (from the user's base classes; a library's base class is its version).

    An attribute whose repr shows a memory address (an ``abc`` class's machinery, a lock) is left out: it would
    stop every resume, and is no setting. Example: ``class B: K = 0.1`` and ``class D(B): pass``; ``D.K = 0.2``
    and ``B.K = 0.2`` both change ``D``'s fingerprint.
    """
    memo = _MEMO.get()
    assert memo is not None
    if id(cls) in memo:  # in progress: a class attribute holding an object of the class
        return memo[id(cls)] or f"class:{label}:recursive"
    memo[id(cls)] = ""
    members, seen = [], set()
    for klass in cls.__mro__:
        if klass is not cls and _is_library(_namespace_of(klass)):
            continue
        for key, member in sorted(vars(klass).items()):
            if key in seen:  # overridden in a subclass
                continue
            seen.add(key)
            if isinstance(member, functools.cached_property):
                member = member.func
            member = getattr(member, "__func__", getattr(member, "fget", member))  # static/class methods, properties
            if inspect.isfunction(member):  # one made elsewhere (a NamedTuple's __new__, _make) by its name
                own = _module_name(member) == _module_name(klass)
                members.append((key, _global_state(member, set()) if own else f"{member.__module__}.{member.__qualname__}"))
            elif key.startswith("__"):
                continue
            elif isinstance(member, (bool, int, float, complex, str, bytes, type(None))):
                members.append((key, repr(member)))
            else:
                state = _global_state(member, set())
                if _ADDRESS_MARK not in state:
                    members.append((key, state))
    memo[id(cls)] = out = f"class:{label}:{_state(members)}"
    return out


def _namespace_of(value: type | types.FunctionType) -> Mapping[str, Any]:
    """The module namespace a function or class was defined in: a class's is its methods' (a class Dask's
    cloudpickle shipped by value has no module on the worker)."""
    if inspect.isfunction(value):
        return value.__globals__
    # its own methods (an Enum's or NamedTuple's class holds functions of the enum or collections module)
    methods = [m for m in vars(value).values() if inspect.isfunction(m) and m.__module__ == value.__module__]
    module = sys.modules.get(getattr(value, "__module__", "") or "")
    return methods[0].__globals__ if methods else vars(module) if module is not None else {}


def _full_repr(value: Any) -> str:
    """``repr(value)`` with every number of the data it holds shown, each float to all its digits.

    Reprs hide data: numpy abbreviates arrays of over 1000 elements with ``...`` and prints floats to 8 digits;
    pandas shows 60 rows and 6 decimals; a scenario, problem or cost family shows its sizes, not its agents' data;
    a graph sequence its size and period, not its weights. Two values that differ where a repr hides would look
    alike, so :func:`_shown` replaces them by their contents first (see there).
    """
    with np.printoptions(threshold=sys.maxsize, floatmode="unique"):
        text = repr(_shown(value))
    return re.sub(r"\b__mp_main__\b", "__main__", text)  # a worker's re-import of the main script (a logger's name)


ARRAY_ELEMENTS_SHOWN = 1000
"""A numpy array with more elements is shown by its dtype, shape and the SHA-256 of its bytes: numpy's full repr
takes time quadratic in the elements (30,000 floats: 3 s, 90,000: 30 s, in the sweep's process and in every
worker task's check), and its text would be hashed anyway (over 200 characters)."""

GRAPH_ROUNDS_SHOWN = 100
"""Rounds of a graph sequence whose weights a fingerprint holds (a round can cost a millisecond to generate and
validate); the later rounds by the :func:`_identity` of its round function."""


def _shown(value: Any) -> Any:
    """``value`` with what its repr hides shown, recursively through lists, tuples, mappings and dataclasses.

    A pandas table or series becomes its columns, dtypes, index and column arrays; a graph sequence its size,
    period, description, the SHA-256 of its weight matrices (:data:`GRAPH_ROUNDS_SHOWN`) and, for longer ones, its
    round function's :func:`_identity`; a cost family its
    parameters (its structure, else its instance attributes: a data set's arrays), a domain its ``to_dict()``; a
    sparse matrix the SHA-256 of its canonical CSR arrays; a networkx graph its nodes and edges with their data; an
    array of over :data:`ARRAY_ELEMENTS_SHOWN` elements the SHA-256 of its bytes; a dataclass (a scenario, a
    problem, an algorithm, links, ...) its class and fields; a function its :func:`_identity`; a set its sorted
    elements. Anything else stays as it is (its repr is used).
    """
    import dataclasses

    import pandas as pd
    import scipy.sparse as sp

    from topology.sequence import GraphSequence

    from ..problems.costs.family import CostFamily
    from ..problems.domains import Domain

    if isinstance(value, pd.DataFrame):
        return _shown(("DataFrame", list(value.columns), [str(d) for d in value.dtypes], value.index.to_numpy(),
                       [value[c].to_numpy() for c in value.columns]))
    if isinstance(value, pd.Series):
        return _shown(("Series", value.name, str(value.dtype), value.index.to_numpy(), value.to_numpy()))
    if isinstance(value, pd.Index):
        return _shown(("Index", str(value.dtype), value.to_numpy()))
    if isinstance(value, GraphSequence):
        weights = hashlib.sha256()
        rounds = value.length or value.period
        for t in range(1, min(rounds or GRAPH_ROUNDS_SHOWN, GRAPH_ROUNDS_SHOWN) + 1):
            try:
                m = value.weights(t)
            except Exception as exc:  # noqa: BLE001 - a round the run may never reach (a sequence of 60 rounds, say)
                weights.update(f"round {t}: {type(exc).__name__}".encode())
                break
            _hash_sparse(weights, m)
        # the rounds past GRAPH_ROUNDS_SHOWN: its round function tells them (a from_matrices one holds them)
        rest = _identity(value._round_function) if rounds is None or rounds > GRAPH_ROUNDS_SHOWN else None
        return ("GraphSequence", value.num_nodes, value.length, value.period, value.directed, value.description,
                "weights:sha256:" + weights.hexdigest(), rest)
    if sp.issparse(value):  # its repr shows the shape and the number of entries, not their values
        return ("sparse", value.format, value.shape, "sha256:" + _hash_sparse(hashlib.sha256(), value).hexdigest())
    if "networkx" in sys.modules and isinstance(value, sys.modules["networkx"].Graph):  # its repr shows the sizes
        return (type(value).__qualname__, _shown(value.graph), [(_shown(n), _shown(d)) for n, d in
                value.nodes(data=True)], [(_shown(u), _shown(v), _shown(d)) for u, v, d in value.edges(data=True)])
    if isinstance(value, CostFamily):  # its parameters (exact, as Problem.adjacent compares them), else its state
        described = value._described()
        if described is not None:
            return (type(value).__qualname__, _shown(described))
        return (type(value).__qualname__, [(k, _shown(v)) for k, v in sorted(vars(value).items())])
    if isinstance(value, Domain):
        return (type(value).__qualname__, _shown(value.to_dict()))
    if (isinstance(value, np.ndarray) and value.dtype != object
            and value.size > (0 if _COMPARING.get() else ARRAY_ELEMENTS_SHOWN)):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return ("ndarray", str(value.dtype), value.shape, "sha256:" + digest)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__qualname__, [(f.name, _shown(getattr(value, f.name))) for f in dataclasses.fields(value)])
    if inspect.isfunction(value) or inspect.ismethod(value) or isinstance(value, functools.partial):
        return _identity(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_shown(v) for v in value) if type(value) in (list, tuple) else [_shown(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):  # sorted: their order (and repr) changes with the process's hash seed
        return (type(value).__qualname__, sorted((_shown(v) for v in value), key=repr))
    return value


def _hash_sparse(digest: Any, matrix: Any) -> Any:
    """Update a ``hashlib`` hash with a sparse (or dense) matrix's canonical CSR form: shape, dtype and arrays."""
    import scipy.sparse as sp

    m = sp.csr_array(matrix, copy=True)
    m.sum_duplicates()  # sorted indices, one entry per position
    digest.update(f"{m.shape}:{m.data.dtype.str}".encode())
    for part in (m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data):
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest


_COMPARING: contextvars.ContextVar[bool] = contextvars.ContextVar("asyncdp_same_contents", default=False)
"""Set by :func:`_same_contents`: memory addresses are left out before anything is hashed (a function capturing a
fresh object), an unreadable repr is one value, and every array is its bytes' SHA-256 (bitwise; several times
faster than its full repr)."""


def _same_contents(a: Any, b: Any) -> bool:
    """Whether two values show the same contents (:func:`_full_repr`), memory addresses in their reprs aside
    (also inside the hashed identity of a function that captured an object), arrays bitwise.

    Example:
        >>> _same_contents([object(), 1.0], [object(), 1.0]), _same_contents([0.1], [0.1 + 1e-17 + 2e-17])
        (True, False)
    """
    def text(value: Any) -> str:
        return re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", _full_repr(value))

    token = _COMPARING.set(True)
    try:
        return text(a) == text(b)
    except Exception:  # noqa: BLE001 - a repr that fails cannot tell them apart
        return True
    finally:
        _COMPARING.reset(token)


def _grid_value(key: str, value: Any) -> str:
    """A grid point's ``key=repr`` for the manifest; a repr over 200 characters as its SHA-256 (marked as
    :func:`_state` marks one that holds a memory address)."""
    shown = _full_repr(value)
    mark = _ADDRESS_MARK if re.search(r" at 0x[0-9a-fA-F]+", shown) else ""
    if len(shown) > 200:
        shown = "sha256:" + hashlib.sha256(shown.encode()).hexdigest()
    return f"{key}={shown}{mark}"


def _state(value: Any) -> str:
    """A SHA-256 of the ``repr`` of ``value``, functions inside it by their :func:`_identity`."""
    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(text(x) for x in v) + "]"
        if inspect.isfunction(v) or inspect.ismethod(v) or isinstance(v, functools.partial):
            return _identity(v)
        return _full_repr(v)

    shown = text(value)
    hashed = re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", shown) if _COMPARING.get() else shown
    digest = hashlib.sha256(hashed.encode()).hexdigest()[:16]
    # a default repr names the object's memory address, which differs in every process: marked, so that a refused
    # resume can say why
    return digest + (_ADDRESS_MARK if re.search(r" at 0x[0-9a-fA-F]+", shown) or _ADDRESS_MARK in shown else "")


_ADDRESS_MARK = "~address"
"""Appended to a state's hash when its ``repr`` holds a memory address (such a factory cannot be resumed)."""


def _versions() -> dict[str, str]:
    from importlib import metadata

    import asyncdp

    try:
        version = metadata.version("asyncdp")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout that is not installed
        version = asyncdp.__version__
    return {"asyncdp": version, "numpy": np.__version__, "python": platform.python_version()}


def _read_values(identity: Any) -> dict[str, str]:
    """The ``name=fingerprint`` pairs an :func:`_identity` lists after ``:reads:`` (of the outer function)."""
    text = str(identity)
    if not text.startswith("callable:") or ":reads:" not in text:
        return {}
    listed = text.split(":reads:", 1)[1].split(":self:", 1)[0]
    return dict(item.partition("=")[::2] for item in listed.split(","))


_CACHE_HINT = "a cache the factory fills counts too: a functools.lru_cache's contents do not"
"""Said where a changed module-level value refuses a resume or a worker: a dict the factory fills is a value."""


def _imported_modules(namespace: Mapping[str, Any], source: str) -> dict[str, str]:
    """The user's modules a script imports, directly or through each other, each with the SHA-256 (16 hex digits)
    of its file: a script's text does not show them, and a resumed sweep or a worker imports them afresh.

    A module counts when an import statement names it (``from mylab import C``), or the namespace holds it or a
    function or class defined in it; a library's module (:func:`_is_library`) does not, nor what it imports.

    Example:
        >>> _imported_modules({"np": np}, "import numpy as np\\nfrom numpy import pi\\n")  # a library's
        {}
    """
    out: dict[str, str] = {}
    seen = {id(namespace)}
    stack: list[tuple[Mapping[str, Any], str | None]] = [(namespace, source)]
    while stack:
        names, text = stack.pop()
        values = list(names.values())
        values += [sys.modules[n] for n in _import_statements(text, names.get("__package__")) if n in sys.modules]
        for value in values:
            module = value if inspect.ismodule(value) else None
            if module is None and (inspect.isfunction(value) or isinstance(value, type)):
                module = sys.modules.get(getattr(value, "__module__", "") or "")
            if module is None or id(vars(module)) in seen:
                continue
            seen.add(id(vars(module)))
            if _is_library(vars(module)):
                continue
            file = getattr(module, "__file__", None)
            try:
                data = Path(file).read_bytes() if file else b""
                digest = hashlib.sha256(data).hexdigest()[:16] if file else "no file"
            except OSError as exc:
                data, digest = b"", f"unreadable ({type(exc).__name__})"
            out[module.__name__] = digest
            stack.append((vars(module), data.decode("utf-8", "replace") if str(file).endswith(".py") else None))
    return dict(sorted(out.items()))


def _import_statements(source: str | None, package: str | None) -> set[str]:
    """The modules a source's import statements name (``import a.b``: ``a`` and ``a.b``; relative ones resolved
    against ``package``), or none if it does not parse."""
    import ast
    import importlib.util

    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                    else node.module or ""
            except (ImportError, ValueError):
                continue
            found = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in found:
            parts = name.split(".")
            names.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return names


def _import_values(identity: Any) -> dict[str, str]:
    """The ``module=digest`` pairs a script's :func:`_identity` lists after ``:imports:``."""
    text = str(identity)
    if not text.startswith("script:") or ":imports:" not in text:
        return {}
    return dict(item.partition("=")[::2] for item in text.split(":imports:", 1)[1].split(","))


def _identity_change(parent: str, worker: str) -> str | None:
    """How a function's :func:`_identity` in a worker process differs from the one in the sweep's process, or
    ``None``. Values whose repr shows a memory address (different in every process) are not compared."""
    def comparable(text: str) -> str:
        return re.sub(r"[0-9a-f]{16}" + re.escape(_ADDRESS_MARK), _ADDRESS_MARK, text)

    if comparable(parent) == comparable(worker):
        return None
    ours, theirs = _read_values(parent), _read_values(worker)
    changed = sorted(k for k in ours.keys() | theirs.keys() if comparable(ours.get(k, "")) != comparable(theirs.get(k, "")))
    if changed:
        return f"the module-level {', '.join(changed)} it reads {'has' if len(changed) == 1 else 'have'} another value there"
    ours, theirs = _import_values(parent), _import_values(worker)
    changed = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
    if changed and parent.split(":imports:")[0] == worker.split(":imports:")[0]:
        return f"the file of the module {', '.join(changed)} the script imports differs there"
    return "its code or the values it captured differ there"


def _rule_name(cls: type) -> str:
    """A class's module and qualified name (``__main__`` for a worker's ``__mp_main__``)."""
    return f"{_module_name(cls)}.{cls.__qualname__}"


def _papers() -> dict[str, list[Any]]:
    """The paper records registered in this process: per paper its rules (module and qualified name) and the
    identity of the parts a run's ``epsilon_accountant`` reads (its lemma and adjacency class,
    :func:`~asyncdp.experiments.summaries._sensitivity`, :func:`~asyncdp.experiments.summaries._network_wide`): what a
    worker process (:func:`~asyncdp.experiments.executors._run_task`) and a resumed checkpoint
    (:func:`~asyncdp.experiments.checkpoint.fingerprint`) compare."""
    from ..papers import registered

    return {name: [[_rule_name(c) for c in r.paper.rules], _identity(r.paper.lemma), _identity(r.paper.adjacency)]
            for name, r in sorted(registered().items())}

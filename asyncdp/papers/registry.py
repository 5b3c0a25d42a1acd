"""Finding papers: discovery (no central list), entry points, inline registration, lookup through the MRO.

Papers come from three sources, all discovered lazily on the first lookup:

1. **The library's own folders**: every subpackage of :mod:`asyncdp.papers`
   that defines ``PAPER`` (found with ``pkgutil``; adding a paper is adding
   a folder, plus its accountant module in :mod:`accounting.papers`).
2. **Entry points** of the group :data:`ENTRY_POINT_GROUP` (``asyncdp.papers``)
   of installed packages: each loads to a :class:`~asyncdp.papers.record.Paper`,
   a sequence of them, or a module defining ``PAPER``. By convention the entry
   point's name is the paper's name. One that fails to load gives a warning
   naming it; the other papers still load, and asking for the failed one is
   a :class:`~asyncdp.papers.record.PaperError`.
3. **Inline**: a script or module calls :func:`register`. Registering again
   from the same source (a script re-executed by :func:`asyncdp.load_script`)
   replaces the earlier record (rule objects of the earlier execution keep
   finding theirs); a *different* paper under a taken name is an error.

A rule finds its record through its class MRO (:func:`paper_of`): a subclass
of a paper's rule uses that paper's record unless it registers its own.

Example:
    >>> get_paper("huang2015").name, get_paper("dpsda-ps").name
    ('huang2015', 'dpsda')
    >>> "wang-basar" in rules()
    True
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..algorithms.base import Algorithm
from .record import Paper, PaperError, is_paper

__all__ = ["REGISTRY", "ENTRY_POINT_GROUP", "Registered", "register", "papers", "get_paper", "paper_of", "find_paper",
           "find_registered", "rules", "get_algorithm", "assumption_set", "registered", "failed_entry_points",
           "unregister"]

ENTRY_POINT_GROUP = "asyncdp.papers"
"""The entry-point group third-party packages register their papers under."""

LIBRARY = "asyncdp"
"""The origin of the library's own (published, seed) papers."""


@dataclass(frozen=True)
class Registered:
    """A registered paper and where it came from.

    Attributes:
        paper: the record.
        origin: ``"asyncdp"`` (a library folder), ``"entry point NAME (VALUE)"``, or the registering
            script's or module's file.
        published: ``True`` for the library's own papers (their lemmas are the published papers');
            ``False`` for a user's paper (its lemma is the user's own).
    """

    paper: Paper
    origin: str
    published: bool

    def published_for(self, algorithm: Any) -> bool:
        """Whether the record's lemma is a published paper's lemma *of this rule*: the paper is one of the library's
        own and ``algorithm`` (a rule object or class) is one of its rules, not a subclass of one.

        A subclass finds its base's record through the MRO, but may change any step (say its message): the
        published lemma is then only the user's assumption about the subclass, to be tested like a user's own.

        Example:
            >>> from asyncdp.papers.huang2015.rule import Huang2015
            >>> class Tuned(Huang2015):
            ...     pass
            >>> found = find_registered(Huang2015)
            >>> found.published_for(Huang2015), found.published_for(Tuned)
            (True, False)
        """
        rule = algorithm if isinstance(algorithm, type) else type(algorithm)
        return self.published and rule in self.paper.rules


_lock = threading.RLock()
_papers: dict[str, Registered] = {}
_replaced: weakref.WeakKeyDictionary[type, Registered] = weakref.WeakKeyDictionary()
"""Rule classes of records replaced by a re-executed script: objects made by the earlier execution keep
their record (found through the MRO as before)."""
_failed: dict[str, str] = {}
_discovered = False


def _index_conflict(paper: Paper, origin: str) -> None:
    """Raise if ``paper`` (from ``origin``) would take a paper or rule name another source holds."""
    old = _papers.get(paper.name)
    if old is not None and old.origin != origin and old.paper != paper:
        raise PaperError(f"two different papers are registered under the name {paper.name!r}: one from {old.origin}, "
                         f"one from {origin}")
    for other in _papers.values():
        if other.paper.name == paper.name:
            continue
        clash = set(other.paper.rule_names) & set(paper.rule_names)
        if clash:
            raise PaperError(f"rule name {sorted(clash)[0]!r} of paper {paper.name!r} ({origin}) is already the rule "
                             f"of paper {other.paper.name!r} ({other.origin})")


def _add(paper: Any, origin: str, published: bool) -> Paper:
    if not is_paper(paper):
        raise PaperError(f"register: expected an asyncdp.papers.Paper, got {paper!r} (from {origin})"[:300])
    with _lock:
        _index_conflict(paper, origin)
        old = _papers.get(paper.name)
        if old is not None and old.paper is not paper:
            for rule in old.paper.rules:
                if rule not in paper.rules:
                    _replaced[rule] = old
        _papers[paper.name] = Registered(paper, origin, published)
    return paper


def _caller_file() -> str:
    """The file of the code that called :func:`register` (a script's path, a module's file)."""
    frame = inspect.currentframe()
    try:
        f = frame
        while f is not None and f.f_globals.get("__name__") == __name__:
            f = f.f_back
        if f is None:
            return "<unknown>"
        name = str(f.f_code.co_filename)
        # one script loaded by a relative and by an absolute path is one source
        return name if name.startswith("<") else str(Path(name).resolve())
    finally:
        del frame


def register(paper: Paper, *, origin: str | None = None) -> Paper:
    """Register a user's paper (inline, from a script or module).

    Args:
        paper: the record.
        origin: where it comes from; default the calling file. Registering again from the same origin
            replaces the earlier record (scripts are re-executed).

    Returns:
        ``paper``.

    Raises:
        PaperError: not a :class:`Paper`, or another source already registered a different paper under its
            name, or one of its rule names.

    Example:
        >>> import numpy as np
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> class Mine(Huang2015):
        ...     name = "doc-mine"
        >>> p = register(Paper("doc-mine", (Mine,), lemma=lambda sc: np.zeros(sc.horizon)))
        >>> paper_of(Mine(epsilon=1.0, c=0.1, q=0.5, p=0.6)) is p, register(p) is p
        (True, True)
        >>> unregister("doc-mine")
    """
    _discover()
    return _add(paper, origin if origin is not None else _caller_file(), published=False)


def _load_builtin() -> None:
    package = importlib.import_module(__package__)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        paper = getattr(module, "PAPER", None)
        if paper is not None:
            _add(paper, LIBRARY, published=True)


def _as_papers(value: Any) -> list[Paper]:
    if is_paper(value):
        return [value]
    if inspect.ismodule(value):
        return _as_papers(getattr(value, "PAPER", None))
    if isinstance(value, (list, tuple)) and value and all(is_paper(p) for p in value):
        return list(value)
    raise PaperError(f"loads to {value!r}, not a Paper, a list of them or a module defining PAPER"[:300])


def _load_entry_points() -> None:
    from importlib import metadata

    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        origin = f"entry point {ep.name} ({ep.value})"
        try:
            for paper in _as_papers(ep.load()):
                _add(paper, origin, published=False)
        except Exception as exc:  # a broken third-party package must not break the others
            _failed[ep.name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"asyncdp: the paper entry point {ep.name!r} ({ep.value}) failed to load, its papers are "
                          f"unavailable: {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    with _lock:
        if _discovered:
            return
        _discovered = True
        _load_builtin()
        _load_entry_points()


def registered() -> dict[str, Registered]:
    """Every discovered paper with its origin, by paper name."""
    _discover()
    return dict(_papers)


def papers() -> dict[str, Paper]:
    """Every discovered paper, by name (library folders, entry points, inline registrations)."""
    return {name: r.paper for name, r in registered().items()}


def failed_entry_points() -> dict[str, str]:
    """Entry points that failed to load: name -> the error."""
    _discover()
    return dict(_failed)


def rules() -> dict[str, type[Algorithm]]:
    """Every registered rule, by rule name.

    Example:
        >>> rules()["huang2015"].__name__
        'Huang2015'
    """
    return {rule.name: rule for r in registered().values() for rule in r.paper.rules}


def _lookup_name(name: str) -> Registered | None:
    found = registered()
    if name in found:
        return found[name]
    for r in found.values():
        if name in r.paper.rule_names:
            return r
    return None


def _lookup_class(cls: type) -> Registered | None:
    found = registered().values()
    for klass in cls.__mro__:
        for r in found:
            if klass in r.paper.rules:
                return r
        if klass in _replaced:
            return _replaced[klass]
    return None


def find_registered(algorithm_or_name: Any) -> Registered | None:
    """The registration of a paper name, rule name, rule class or rule object (MRO), or ``None``."""
    if isinstance(algorithm_or_name, str):
        return _lookup_name(algorithm_or_name)
    if isinstance(algorithm_or_name, Algorithm):
        return _lookup_class(type(algorithm_or_name))
    if isinstance(algorithm_or_name, type) and issubclass(algorithm_or_name, Algorithm):
        return _lookup_class(algorithm_or_name)
    raise PaperError(f"expected a paper name, a rule name, an Algorithm subclass or instance, got "
                     f"{algorithm_or_name!r}"[:300])


def find_paper(algorithm_or_name: Any) -> Paper | None:
    """:func:`get_paper`, or ``None`` when nothing matches."""
    found = find_registered(algorithm_or_name)
    return None if found is None else found.paper


def paper_of(algorithm: Any) -> Paper | None:
    """The record of a rule (class or object) through its MRO, or ``None``.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> class Tuned(Huang2015):
        ...     pass
        >>> paper_of(Tuned(epsilon=1.0, c=0.1, q=0.5, p=0.6)).name
        'huang2015'
    """
    return find_paper(algorithm)


def get_paper(algorithm_or_name: Any) -> Paper:
    """The record of a paper name, a rule name, a rule class or a rule object.

    Raises:
        PaperError: nothing matches (the message lists the known names, and says so when an entry point of
            that name failed to load).
    """
    found = find_paper(algorithm_or_name)
    if found is not None:
        return found
    name = algorithm_or_name if isinstance(algorithm_or_name, str) else getattr(algorithm_or_name, "name", "?")
    if name in _failed:
        raise PaperError(f"paper {name!r} is unavailable: its entry point failed to load ({_failed[name]})")
    known = sorted(set(papers()) | set(rules()))
    raise PaperError(f"no paper record for {name!r}; known: {', '.join(known)}")


def assumption_set(name: str) -> Any:
    """The topology assumption set (:class:`topology.audit.AssumptionSet`) of a rule or paper name.

    A paper name with several rules is ambiguous: name the rule.

    Raises:
        PaperError: no such paper or rule, an ambiguous name, or a paper without assumptions.

    Example:
        >>> assumption_set("dpsda-ps").contraction
        'column'
    """
    from .loading import resolve

    paper, rule = resolve(name)
    found = paper.assumption_set(rule)
    if found is None:
        raise PaperError(f"paper {paper.name!r} declares no topology assumptions for {rule!r}")
    return found


def get_algorithm(name: str) -> type[Algorithm]:
    """The rule class registered under rule name ``name``.

    Raises:
        PaperError: an unknown name (the message lists the known ones).
    """
    found = rules()
    if name in found:
        return found[name]
    if name in _failed:
        raise PaperError(f"algorithm {name!r} is unavailable: its entry point failed to load ({_failed[name]})")
    raise PaperError(f"unknown algorithm {name!r}; known: {', '.join(sorted(found))}")


class _Rules(Mapping[str, type[Algorithm]]):
    """A live, read-only view: rule name -> rule class, over every discovered paper (see :func:`rules`)."""

    def __getitem__(self, name: str) -> type[Algorithm]:
        return rules()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(rules())

    def __len__(self) -> int:
        return len(rules())

    def __repr__(self) -> str:
        return f"REGISTRY({sorted(rules())})"


REGISTRY: Mapping[str, type[Algorithm]] = _Rules()
"""Every registered rule by name, discovered on first use (engines, the CLI and engine tests read it).

Example:
    >>> sorted(REGISTRY)[:2]
    ['dpsda-c', 'dpsda-ps']
"""


def unregister(name: str) -> None:
    """Drop the user's paper ``name`` (e.g. in a notebook, before redefining it under another origin).

    Raises:
        PaperError: ``name`` is one of the library's own papers, or is not registered.
    """
    _discover()
    with _lock:
        found = _papers.get(name)
        if found is None:
            raise PaperError(f"no paper {name!r} is registered")
        if found.published:
            raise PaperError(f"paper {name!r} is one of the library's own and cannot be unregistered")
        del _papers[name]

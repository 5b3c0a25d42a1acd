"""Papers named on the command line: a name, a script ``my_paper.py[:NAME]`` or a module ``pkg.mod:NAME``.

:func:`resolve` turns such a reference into a paper record and one of its
rule names (whose topology assumptions, for example, ``asyncdp topology
audit --algorithm`` checks). A script is executed once (it may call
:func:`asyncdp.papers.register` or just define :class:`~asyncdp.papers.Paper`
objects at module level); a module is imported.

Example:
    >>> paper, rule = resolve("dpsda-ps")
    >>> paper.name, rule
    ('dpsda', 'dpsda-ps')
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from .record import Paper, PaperError, is_paper
from .registry import get_paper, registered

__all__ = ["resolve", "load_source"]


def load_source(source: str) -> list[Paper]:
    """The papers a script (``*.py``) or an importable module defines or registers.

    Raises:
        FileNotFoundError: no such script.
        PaperError: the module cannot be imported, or defines no paper.
        ScenarioError: the script fails (one line naming the file and line).
    """
    if source.endswith(".py"):
        from ..scenario import exec_script_source

        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no paper script at {source!r}")
        namespace = exec_script_source(path.read_bytes(), str(path), f"asyncdp_papers_{abs(hash(str(path.resolve())))}")
        origin = str(path.resolve())  # register() records a script by its resolved path
        values: list[Any] = list(namespace.values())
    else:
        try:
            module = importlib.import_module(source)
        except ImportError as exc:
            raise PaperError(f"cannot import the paper module {source!r}: {exc}") from None
        file = getattr(module, "__file__", None)
        origin = str(Path(file).resolve()) if file else source  # as register() records its caller
        values = list(vars(module).values())
    found = {p.name: p for p in values if is_paper(p)}
    for r in registered().values():
        if r.origin == origin:
            found.setdefault(r.paper.name, r.paper)
    if not found:
        raise PaperError(f"{source} defines no paper: define a Paper at module level or call asyncdp.papers.register")
    return list(found.values())


def _pick(paper: Paper, name: str | None) -> tuple[Paper, str]:
    if name is None or name == paper.name:
        if len(paper.rules) > 1 and name is None:
            raise PaperError(f"paper {paper.name!r} has rules {list(paper.rule_names)}: name one as SOURCE:RULE")
        return paper, paper.rules[0].name
    if name in paper.rule_names:
        return paper, name
    raise PaperError(f"paper {paper.name!r} has no rule {name!r} (rules: {', '.join(paper.rule_names)})")


def resolve(reference: str) -> tuple[Paper, str]:
    """The paper and rule name that ``reference`` names.

    Args:
        reference: a paper or rule name (``"huang2015"``, ``"dpsda-ps"``); a script ``"my_paper.py"`` or
            ``"my_paper.py:NAME"``; or a module ``"pkg.module:NAME"``. ``NAME`` is a paper or rule name; it may
            be left out when the source defines one paper with one rule.

    Returns:
        ``(paper, rule_name)``.

    Raises:
        PaperError: nothing matches, or the reference is ambiguous (the message lists the choices).
        FileNotFoundError: a script that does not exist.
    """
    if not isinstance(reference, str) or not reference:
        raise PaperError(f"expected a paper reference (name, FILE.py[:NAME] or module:NAME), got {reference!r}")
    if reference.endswith(".py") or ".py:" in reference:
        head, _, name = reference.rpartition(".py")
        source, name = head + ".py", name[1:]
    elif ":" in reference:
        source, _, name = reference.partition(":")
    else:
        paper = get_paper(reference)
        return _pick(paper, reference if reference in paper.rule_names else None)
    candidates = load_source(source)
    wanted = name or None
    if wanted is None:
        if len(candidates) != 1:
            raise PaperError(f"{source} defines papers {sorted(p.name for p in candidates)}: name one as "
                             f"{source}:NAME")
        return _pick(candidates[0], None)
    for paper in candidates:
        if wanted == paper.name or wanted in paper.rule_names:
            return _pick(paper, wanted)
    names = sorted({p.name for p in candidates} | {r for p in candidates for r in p.rule_names})
    raise PaperError(f"{source} defines no paper or rule {wanted!r} (it defines: {', '.join(names)})")

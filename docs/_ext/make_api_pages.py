"""Write docs/api/topology.rst and docs/api/accounting.rst: every public name, at the module that defines it.

Run from the repository's root after a package's public names change:
``python docs/_ext/make_api_pages.py``. ``tests/docs/test_build.py`` checks
that the pages name every public name. Besides the public names, each page
documents the few module-level names their docstrings refer to (``EXTRAS``),
so that every cross-reference resolves; a name is documented once, where it
is defined.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

API = Path(__file__).resolve().parents[1] / "api"

LEFT_OUT = {
    "topology": {"paper004_fig2_sequence", "WEIGHT_RULES"},  # a former name; a mapping whose docstring is not reST
    "accounting": set(),
}
"""Public names not documented (tests/docs/test_build.py lists the same)."""

EXTRAS: dict[str, dict[str, list[str]]] = {
    "topology": {
        "topology.audit": ["ALGORITHMS", "ASSUMPTIONS", "DEFAULT_HORIZON", "Static", "EachRound", "MinWeight",
                           "Spectral", "MinimalB", "BStronglyConnected"],
        "topology.checks.constants": ["push_sum_log_one_minus_lambda"],
        "topology.generators.b_connected": ["b_connected_edge_groups", "CHENG2022_FIG2_EDGE_GROUPS"],
    },
    "accounting": {
        "accounting.ledger": ["MECHANISMS"],
        "accounting.papers": ["ACCOUNTANTS"],
        "accounting.auditors": ["BlackBoxReport", "PLRVReport"],
        "accounting.auditing.mechanism": ["draw_samples", "PROGRESS_MIN"],
        "accounting.auditing.samples": ["split_sizes", "MAX_ATOMS", "MIN_SAMPLES", "AuditInputError"],
        "accounting.auditing.certify": ["certify_event", "CertifiedEvent"],
        "accounting.claims": ["LEVELS"],
        "accounting.replay": ["replay_loss"],
        "accounting.errors": ["AccountingError", "PrivacyParameterError", "UnknownMethodError"],
        "accounting.composition.report": ["METHODS", "CompositionReport"],
        "accounting.papers.spec": ["NORMS", "PARTS"],
    },
}
"""Per package: module -> names documented besides the public ones (the docstrings refer to them)."""

MANUAL = {
    ("accounting.claims", "LEVELS"): """.. py:data:: LEVELS
   :value: ("run", "iteration", "round")

   What a claim covers: the whole run, one iteration, or one round.""",
}
"""Names written by hand: napoleon misreads their docstring (a colon in its first line) as a type."""

PREAMBLE = {
    "accounting.composition.report": """``accounting.composition``
--------------------------

.. py:module:: accounting.composition

Composition of a ledger's releases: basic and advanced composition, RDP and PLD (the last two through
dp-accounting), each with the sensitivity the caller vouches for, never the algorithm's claimed one.
:func:`accounting.composition.report.compose` below runs several methods by name.""",
}
"""Text put before a module's section (a module that is referred to but not documented whole)."""

TITLES = {
    "topology": ("``topology``: graph sequences and theorem-assumption audits",
                 "Every public name of ``topology``, importable as ``topology.NAME``, grouped by the module that "
                 "defines it, with the few module-level names their docstrings refer to. (``topology.WEIGHT_RULES`` "
                 "maps each weight rule's name to its function; the rules are documented below.)"),
    "accounting": ("``accounting``: the independent privacy accountant",
                   "Every public name of ``accounting``, importable as ``accounting.NAME``, grouped by the module "
                   "that defines it, with the few module-level names their docstrings refer to."),
}


def _directive(obj: object) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    return "autofunction" if inspect.isfunction(obj) else "autodata"


def _defining_module(package: ModuleType, name: str, extras: dict[str, list[str]]) -> str:
    obj = getattr(package, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return obj.__module__
    for module in extras:  # data: the module that EXTRAS names, else the first (sub)module holding it
        if name in extras[module]:
            return module
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.ispkg and name in vars(importlib.import_module(info.name)):
            return info.name
    raise LookupError(f"{package.__name__}.{name}: no module defines it")


def page(package: ModuleType) -> str:
    """The reST text of ``package``'s API page."""
    name = package.__name__
    extras = EXTRAS[name]
    groups: dict[str, list[str]] = {}
    for public in package.__all__:
        if public not in LEFT_OUT[name] and not inspect.ismodule(getattr(package, public)):
            groups.setdefault(_defining_module(package, public, extras), []).append(public)
    for module, names in extras.items():
        groups.setdefault(module, []).extend(n for n in names if n not in groups[module])
    title, intro = TITLES[name]
    out = [title, "=" * len(title), "", intro, "", f".. automodule:: {name}", ""]
    for module in sorted(groups):
        if module in PREAMBLE:
            out += [PREAMBLE[module], ""]
        heading = f"``{module}``"
        out += [heading, "-" * len(heading), "", f".. py:module:: {module}", ""]
        mod = importlib.import_module(module)
        for item in groups[module]:
            if (module, item) in MANUAL:
                out += [MANUAL[module, item], ""]
                continue
            directive = _directive(getattr(mod, item))
            out += [f".. {directive}:: {item}"]
            out += ["   :members:"] if directive == "autoclass" else []
            out += ["   :no-value:"] if directive == "autodata" else []
            out += [""]
    return "\n".join(out)


def main() -> None:
    """Write the two pages."""
    for name in ("topology", "accounting"):
        (API / f"{name}.rst").write_text(page(importlib.import_module(name)), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Write the API pages (docs/api/*.rst): every public name, at the module that defines it.

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
}
"""Public names not documented (tests/docs/test_build.py lists the same)."""

EXTRAS: dict[str, dict[str, list[str]]] = {
    "asyncdp": {"asyncdp.problems.costs.structure": ["compare", "family_name", "same_value", "shadowed"]},
    "asyncdp.papers": {"asyncdp.papers.wang_basar.rule": ["TwoPhaseStep"], "asyncdp.papers.muffliato.rule": ["Muffliato"]},
    "asyncdp.privacy": {"asyncdp.privacy.context": ["prepare", "check_deterministic", "STATISTICAL_METHODS", "focus_rounds",
                                                    "decision_magnitude"],
                        "asyncdp.privacy.behavior": ["RecordingNoise", "engine_disagreement", "engines_disagree",
                                                     "simpy_run0", "seed_free_ledger"],
                        "asyncdp.privacy.evidence": ["CHECKED_AGAINST", "find_figure"],
                        "asyncdp.privacy.steps": ["STEPS"],  # (asyncdp.privacy.properties imports it too)
                        "asyncdp.privacy.coverage": ["class_measure"],
                        "asyncdp.privacy.kinked": ["KinkedOverride", "KinkedRound"],
                        "asyncdp.privacy.verdict": ["VERDICTS"],
                        "asyncdp.privacy.affine_check": ["verify_affine", "AffineCheck", "affinity_tolerance", "ROUNDOFF_ULPS",
                                                         "DROPPED_DRAW_LEVEL", "NOISE_PROBE_TAILS"],
                        "asyncdp.privacy.observer_claim": ["check_observer_claim", "ObserverClaimCheck"],
                        "asyncdp.privacy.network": ["deterministic_schedule"],
                        "asyncdp.privacy.constructed": ["CandidateRuns", "DenseSchedules", "DENSE_CACHE_ENTRIES"],
                        "asyncdp.privacy.additivity": ["AdditivityProbe", "probe_finding", "probe_pairs",
                                                       "probe_wrapper", "ADDITIVITY_STREAM", "ADDITIVITY_RTOL"]},
    "asyncdp.experiments": {},
    "topology": {
        "topology.audit": ["DEFAULT_HORIZON", "Static", "EachRound", "MinWeight",
                           "Spectral", "MinimalB", "BStronglyConnected"],
        "topology.checks.constants": ["push_sum_log_one_minus_lambda"],
        "topology.generators.b_connected": ["b_connected_edge_groups", "CHENG2022_FIG2_EDGE_GROUPS"],
        "topology.strategies": ["doubly_stochastic_matrices"],
    },
    "accounting": {
        "accounting.ledger": ["MECHANISMS"],
        "accounting.papers": ["ACCOUNTANTS"],
        "accounting.auditors": ["BlackBoxReport", "PLRVReport", "LOWER_BOUNDS"],
        "accounting.auditing.mechanism": ["draw_samples", "PROGRESS_MIN"],
        "accounting.auditing.samples": ["split_sizes", "MAX_ATOMS", "MIN_SAMPLES", "AuditInputError"],
        "accounting.auditing.certify": ["certify_event", "CertifiedEvent"],
        "accounting.claims": ["LEVELS"],
        "accounting.replay": ["replay_loss", "NOISE_FREE_RTOL"],
        "accounting.schedule_reads": ["reads_ahead"],
        "accounting.errors": ["AccountingError", "PrivacyParameterError", "UnknownMethodError"],
        "accounting.composition.report": ["METHODS", "CompositionReport"],
        "accounting.papers.spec": ["NORMS", "PARTS"],
        "accounting.papers.muffliato": ["muffliato_claim"],
        "accounting.network.gaussian_views": ["faint_directions", "count_outside"],
        "accounting.network.muffliato": ["WITNESS_MARGIN", "witness_margin", "pairwise_rows"],
        "accounting.network.muffliato_gossip": ["chebyshev_gamma"],
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

SURFACES: dict[str, list[str]] = {
    "topology": ["topology"],
    "accounting": ["accounting", "accounting.claim_forms", "accounting.delta_bounds", "accounting.profiles",
                   "accounting.refutation", "accounting.renyi", "accounting.coverage", "accounting.tilting",
                   "accounting.tilted_replay", "accounting.sequential", "accounting.network", "accounting.scheduled_replay",
                   "accounting.replay_inputs", "accounting.replay_densities", "accounting.schedule_reads",
                   "accounting.round_gather", "accounting.shared_rounds",
                   "accounting.mechanisms", "accounting.conformance", "accounting.prober"],
    "asyncdp": ["asyncdp", "asyncdp.algorithms", "asyncdp.scenario", "asyncdp.engine.batch_engine",
                "asyncdp.engine.batch_deadline", "asyncdp.engine.batch_draws", "asyncdp.engine.batch_detail",
                "asyncdp.engine.links", "asyncdp.engine.schedule", "asyncdp.engine.simpy_engine",
                "asyncdp.engine.timing", "asyncdp.engine.transcript", "asyncdp.engine.transcript_io", "asyncdp.errors",
                "asyncdp.metrics", "asyncdp.problems.problem", "asyncdp.problems.costs", "asyncdp.problems.domains",
                "asyncdp.problems.online"],
    "asyncdp.papers": ["asyncdp.papers"],
    "asyncdp.privacy": ["asyncdp.privacy", "asyncdp.privacy.worst_case", "asyncdp.privacy.candidate_pairs",
                        "asyncdp.privacy.candidate_evaluation", "asyncdp.privacy.search_objective",
                        "asyncdp.privacy.pair_search", "asyncdp.privacy.search_evidence", "asyncdp.privacy.worst_pair",
                        "asyncdp.privacy.value_class", "asyncdp.privacy.strategies", "asyncdp.privacy.properties"],
    "asyncdp.experiments": ["asyncdp.experiments.sweep", "asyncdp.experiments.checkpoint",
                            "asyncdp.experiments.executors", "asyncdp.experiments.grid",
                            "asyncdp.experiments.summaries", "asyncdp.experiments.results_io",
                            "asyncdp.experiments.factories", "asyncdp.experiments.noise_effect",
                            "asyncdp.experiments.regret", "asyncdp.experiments.demo"],
}
"""Per page: the modules whose ``__all__`` it documents. A name is documented on the page whose name is the
longest prefix of the module that defines it (``asyncdp.Paper`` is defined in ``asyncdp.papers.record``: the
``asyncdp.papers`` page)."""

TITLES = {
    "topology": ("``topology``: graph sequences and theorem-assumption audits",
                 "Every public name of ``topology``, importable as ``topology.NAME``, grouped by the module that "
                 "defines it, with the few module-level names their docstrings refer to. (``topology.WEIGHT_RULES`` "
                 "maps each weight rule's name to its function; the rules are documented below.)"),
    "accounting": ("``accounting``: the independent privacy accountant",
                   "Every public name of ``accounting``, importable as ``accounting.NAME``, grouped by the module "
                   "that defines it (the package's own names and those of its submodules ``claim_forms``, "
                   "``delta_bounds``, ``profiles``, ``refutation``, ``renyi``, ``coverage``, ``tilting``, "
                   "``tilted_replay``, ``sequential`` and ``network``), with the few module-level names their "
                   "docstrings refer to."),
    "asyncdp": ("``asyncdp``: scenarios, rules, engines and transcripts",
                "Every public name of ``asyncdp`` (importable as ``asyncdp.NAME``), of the rule interface "
                "``asyncdp.algorithms``, and of the engine's modules (``asyncdp.engine.*``), grouped by the module "
                "that defines it. The papers' records, the privacy check and the experiments have pages of their "
                "own: :doc:`asyncdp.papers`, :doc:`asyncdp.privacy`, :doc:`asyncdp.experiments`."),
    "asyncdp.papers": ("``asyncdp.papers``: paper records, registration and discovery",
                       "Every public name of ``asyncdp.papers``: the ``Paper`` record an algorithm's author writes "
                       "(rule, sensitivity lemma, adjacency class, claim check, topology assumptions, "
                       "reproductions), ``register`` and the registry, and the discovery of papers shipped "
                       "with the library or installed through the ``asyncdp.papers`` entry point group."),
    "asyncdp.privacy": ("``asyncdp.privacy``: the privacy check",
                        "Every public name of ``asyncdp.privacy``: ``check_privacy`` and its report, and the "
                        "steps it runs. :doc:`../privacy-check` explains the methods and the verdicts."),
    "asyncdp.experiments": ("``asyncdp.experiments``: sweeps and summaries",
                            "The public names of the experiment modules: ``sweep`` (local processes or a Dask "
                            "cluster, checkpoints and ``--resume``), grids and seeds, summaries and their files, "
                            "the demo."),
}


def _directive(obj: object) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    return "autofunction" if inspect.isfunction(obj) else "autodata"


def _defining_module(surface: ModuleType, name: str, extras: dict[str, list[str]]) -> str:
    obj = getattr(surface, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return obj.__module__
    for module in extras:  # data: the module that EXTRAS names, else the first (sub)module holding it
        if name in extras[module]:
            return module
    if not hasattr(surface, "__path__"):
        return surface.__name__
    for info in pkgutil.walk_packages(surface.__path__, surface.__name__ + "."):
        if not info.ispkg and name in vars(importlib.import_module(info.name)):
            return info.name
    raise LookupError(f"{surface.__name__}.{name}: no module defines it")


def _page_of(module: str) -> str:
    """The page (a key of SURFACES) whose name is the longest prefix of ``module``."""
    return max((p for p in SURFACES if module == p or module.startswith(p + ".")), key=len)


def groups() -> dict[str, dict[str, list[str]]]:
    """Per page: defining module -> the names documented there, each name once."""
    out: dict[str, dict[str, list[str]]] = {page: {} for page in SURFACES}
    extras = {module: names for page in SURFACES for module, names in EXTRAS.get(page, {}).items()}
    for page in SURFACES:
        for surface_name in SURFACES[page]:
            surface = importlib.import_module(surface_name)
            for public in surface.__all__:
                if public in LEFT_OUT.get(surface_name, set()) or inspect.ismodule(getattr(surface, public)):
                    continue
                module = _defining_module(surface, public, extras)
                names = out[_page_of(module)].setdefault(module, [])
                if public not in names:
                    names.append(public)
    for module, names in extras.items():
        group = out[_page_of(module)].setdefault(module, [])
        group.extend(n for n in names if n not in group)
    return out


def page(name: str, modules: dict[str, list[str]]) -> str:
    """The reST text of page ``name`` documenting ``modules`` (defining module -> names)."""
    title, intro = TITLES[name]
    out = [title, "=" * len(title), "", intro, ""]
    if "." not in name:
        out += [f".. automodule:: {name}", ""]
    for module in sorted(modules):
        if module in PREAMBLE:
            out += [PREAMBLE[module], ""]
        heading = f"``{module}``"
        out += [heading, "-" * len(heading), "", f".. py:module:: {module}", ""]
        mod = importlib.import_module(module)
        for item in modules[module]:
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
    """Write the pages."""
    for name, modules in groups().items():
        (API / f"{name}.rst").write_text(page(name, modules), encoding="utf-8")


if __name__ == "__main__":
    main()

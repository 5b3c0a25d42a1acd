"""Lazy imports: the command line starts without the heavy libraries; every public name still resolves.

Each check runs in a fresh interpreter (``sys.executable``), since this test
session has long imported everything. Speed itself is measured by hand, not
asserted here: only which modules get imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "scipy.stats", "scipy.optimize", "dp_accounting", "dask", "distributed", "matplotlib", "sklearn")
"""Modules that ``import asyncdp.cli`` and the ``--help`` texts must not import."""

PACKAGES = ("accounting", "topology", "asyncdp")


def _probe(code: str) -> object:
    """Run ``code`` in a fresh interpreter; it prints one JSON value as its last line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded(setup: str) -> list[str]:
    return _probe(f"import json, sys\n{setup}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")


def test_cli_import_leaves_heavy_modules_out():
    assert _loaded("import asyncdp.cli") == []


@pytest.mark.parametrize("package", PACKAGES)
def test_package_import_leaves_heavy_modules_out(package):
    assert _loaded(f"import {package}") == []


def test_help_texts_leave_heavy_modules_out():
    setup = """
import contextlib, io
from asyncdp.cli import main
commands = [[], ["demo"], ["run"], ["privacy"], ["privacy", "check"], ["topology"], ["topology", "audit"],
            ["topology", "generate"], ["topology", "info"], ["sweep"], ["reproduce"]]
for argv in commands:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "--help"]) == 0, argv
"""
    assert _loaded(setup) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package):
    missing = _probe(f"""
import json, {package} as pkg
print(json.dumps([name for name in pkg.__all__ if getattr(pkg, name, pkg) is pkg]))
""")
    assert missing == []


@pytest.mark.parametrize("package", PACKAGES)
def test_star_import_binds_exactly_all(package):
    bound, exported = _probe(f"""
import json, {package}
ns = {{}}
exec("from {package} import *", ns)
print(json.dumps([sorted(set(ns) - {{"__builtins__"}}), sorted({package}.__all__)]))
""")
    assert bound == exported


@pytest.mark.parametrize("package", PACKAGES)
def test_dir_lists_every_public_name(package):
    assert _probe(f"import json, {package} as p; print(json.dumps(sorted(set(p.__all__) - set(dir(p)))))") == []


@pytest.mark.parametrize("package", PACKAGES)
def test_unknown_name_is_an_attribute_error(package):
    message = _probe(f"""
import json, {package}
try:
    {package}.no_such_name
except AttributeError as exc:
    print(json.dumps(str(exc)))
""")
    assert "no_such_name" in message and package in message


def test_names_and_submodules_resolve_lazily():
    checks = _probe("""
import json, inspect
import accounting, asyncdp, topology
import asyncdp.reproduce  # a submodule outside __all__ is imported as usual
from topology.audit import AssumptionSet  # first import the submodule that shares the function's name
from accounting import compose
from asyncdp import Scenario, Huang2015
from topology import audit
import topology.audit as audit_module_import  # the package attribute: the function, as before
print(json.dumps({
    "compose": compose is accounting.composition.compose,
    "auditors": inspect.ismodule(accounting.auditors),
    "reproduce": inspect.ismodule(asyncdp.reproduce) and "huang2015-fig1" in asyncdp.reproduce.EXPERIMENTS,
    "Scenario": Scenario is asyncdp.scenario.Scenario,
    "Huang2015": Huang2015 is asyncdp.papers.huang2015.rule.Huang2015,
    "audit": inspect.isfunction(audit) and topology.audit is audit and audit_module_import is audit,
}))
""")
    assert checks == dict.fromkeys(checks, True)


def test_paper_discovery_leaves_heavy_modules_out():
    """Discovering every paper (as ``asyncdp --help`` does for the reproductions) imports no heavy library."""
    assert _loaded("from asyncdp.papers import papers, rules\nassert len(papers()) >= 4 and 'huang2015' in rules()") \
        == []


def test_experiment_names_match_experiments():
    from asyncdp.reproduce import EXPERIMENT_NAMES, EXPERIMENTS, TABLES

    assert EXPERIMENT_NAMES == tuple(EXPERIMENTS) == tuple(TABLES)


def test_module_help_exits_0():
    out = subprocess.run([sys.executable, "-m", "asyncdp", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "reproduce" in out.stdout

"""The dependency rules: ``accounting`` and ``topology`` never import ``asyncdp``; asyncdp's layers import downward only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys, pkgutil, importlib
import {package}
for mod in pkgutil.walk_packages({package}.__path__, "{package}."):
    importlib.import_module(mod.name)
print(json.dumps(sorted(m for m in sys.modules if m == "asyncdp" or m.startswith("asyncdp."))))
"""


@pytest.mark.parametrize("package", ["topology", "accounting"])
def test_package_does_not_import_asyncdp(package):
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(package=package)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_topology_does_not_import_accounting():
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(package="topology").replace('"asyncdp"', '"accounting"').replace(
            '"asyncdp."', '"accounting."')],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_probe_detects_an_import():
    # the probe itself must be able to fail: asyncdp imports asyncdp
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(package="asyncdp")], capture_output=True, text=True, check=True
    )
    assert "asyncdp" in json.loads(out.stdout.strip().splitlines()[-1])


# -- the layers inside asyncdp ----------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("asyncdp.errors", "asyncdp.noise", "asyncdp.atomic_write", "asyncdp.reproduce._outputs",
                    "asyncdp.reproduce._stats")),
    ("simulator", ("asyncdp.problems", "asyncdp.algorithms", "asyncdp.engine", "asyncdp.scenario", "asyncdp.result",
                   "asyncdp.metrics", "asyncdp.experiments.regret")),
    ("papers", ("asyncdp.papers",)),
    ("checker", ("asyncdp.privacy",)),
    ("applications", ("asyncdp.experiments", "asyncdp.reproduce", "asyncdp.cli", "asyncdp.__main__", "asyncdp")),
)
"""asyncdp's layers, lowest first. A module may import its own layer and the layers below, never one above:
the rules (algorithms) know no paper, the papers (records, rules, lemmas, reproductions) know no checker, and
the checker knows no command line. A module belongs to the layer of its longest matching prefix (regret curves
are metrics of a run, which reproductions use, so :mod:`asyncdp.experiments.regret` sits with the simulator)."""


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    assert best is not None, module
    return best


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every ``asyncdp`` module ``source`` imports, at any depth (inside functions too): ``(line, module)``."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "asyncdp"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "asyncdp":
                continue
            # "from pkg import sub" imports the submodule pkg.sub when there is one
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                path = ROOT / Path(*sub.split("."))
                out.append((node.lineno, sub if path.with_suffix(".py").exists() or path.is_dir() else target))
    return out


def upward_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    mine = layer_of(module)
    return sorted({f"{module}:{line} imports {target} ({LAYERS[layer_of(target)][0]} above {LAYERS[mine][0]})"
                   for line, target in imported_modules(source, module, is_package) if layer_of(target) > mine})


def _modules() -> list[tuple[str, Path, bool]]:
    out = []
    for path in sorted((ROOT / "asyncdp").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out.append((".".join(parts[:-1] if is_package else parts), path, is_package))
    return out


def test_no_module_imports_a_layer_above_its_own():
    found = [v for module, path, pkg in _modules() for v in upward_imports(path.read_text(), module, pkg)]
    assert found == []


def test_papers_and_algorithms_never_import_the_checker():
    checker = [m for m, _, _ in _modules() if m.startswith("asyncdp.privacy")]
    assert checker
    for module, path, pkg in _modules():
        if module.startswith(("asyncdp.papers", "asyncdp.algorithms")):
            targets = {t for _, t in imported_modules(path.read_text(), module, pkg)}
            assert not {t for t in targets if t.startswith("asyncdp.privacy")}, module


def test_the_rule_catches_an_upward_import_inside_a_function():
    source = "def lemma(sc):\n    from ...privacy.check import check_privacy\n    return check_privacy\n"
    found = upward_imports(source, "asyncdp.papers.mine.privacy")
    assert found == ["asyncdp.papers.mine.privacy:2 imports asyncdp.privacy.check (checker above papers)"]
    assert upward_imports("import asyncdp.cli\n", "asyncdp.algorithms.base") != []
    assert upward_imports("from ..errors import ScenarioError\n", "asyncdp.papers.record") == []

"""The paper registry (asyncdp.papers): discovery, inline registration, entry points, bad records and lemmas."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from asyncdp import Huang2015
from asyncdp.papers import (GradientClass, Paper, PaperError, find_paper, get_algorithm, get_paper, paper_of,
                            papers, register, registered, unregister)
from asyncdp.papers.loading import resolve

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


class Mine(Huang2015):
    name: ClassVar[str] = "test-mine"


def _lemma(sc):
    return np.full(sc.horizon, 0.5)


@pytest.fixture
def cleanup():
    names: list[str] = []
    yield names
    for name in names:
        if name in registered():
            unregister(name)


def test_seed_papers_are_discovered_from_their_folders():
    found = registered()
    assert {"huang2015", "showkatbakhsh", "wang-basar", "dpsda"} <= set(found)
    assert all(found[n].origin == "asyncdp" and found[n].published for n in ("huang2015", "dpsda"))
    folders = {p.name for p in (ROOT / "asyncdp" / "papers").iterdir() if (p / "__init__.py").exists()}
    assert folders == {"huang2015", "showkatbakhsh", "wang_basar", "dpsda", "muffliato"}
    assert get_algorithm("dpsda-ps").__name__ == "DPSDAPS"
    with pytest.raises(PaperError, match="unknown algorithm 'nope'; known: .*huang2015"):
        get_algorithm("nope")


def test_inline_registration_is_idempotent_from_one_source_and_subclasses_register_their_own(cleanup):
    cleanup.append("test-mine")
    first = register(Paper("test-mine", (Mine,), lemma=_lemma), origin="script.py")
    # a re-executed script builds new objects: same origin, replaced without complaint
    second = register(Paper("test-mine", (Mine,), lemma=lambda sc: np.zeros(sc.horizon)), origin="script.py")
    assert get_paper("test-mine") is second is not first
    assert paper_of(Mine(epsilon=1.0, c=0.1, q=0.5, p=0.6)) is second  # its own record, not Huang's
    assert paper_of(Huang2015(epsilon=1.0, c=0.1, q=0.5, p=0.6)).name == "huang2015"
    assert registered()["test-mine"].published is False and registered()["test-mine"].origin == "script.py"


def test_two_different_papers_under_one_name_is_an_error(cleanup):
    cleanup.append("test-mine")
    register(Paper("test-mine", (Mine,), lemma=_lemma), origin="a.py")
    with pytest.raises(PaperError, match=r"two different papers are registered under the name 'test-mine': one "
                                         r"from a\.py, one from b\.py"):
        register(Paper("test-mine", (Mine,), lemma=lambda sc: np.zeros(sc.horizon)), origin="b.py")
    with pytest.raises(PaperError, match="rule name 'huang2015' of paper 'other' .* is already the rule of paper "
                                         "'huang2015'"):
        register(Paper("other", (Huang2015,), lemma=_lemma), origin="c.py")
    with pytest.raises(PaperError, match="expected an asyncdp.papers.Paper"):
        register("huang2015")
    with pytest.raises(PaperError, match="library's own"):
        unregister("huang2015")


@pytest.mark.parametrize("value,match", [
    (lambda sc: np.ones(sc.horizon + 1), r"shape \(25,\), for channel 'y'; got shape \(26,\)"),
    (lambda sc: np.full(sc.horizon, np.nan), "channel 'y' in round 1 is nan; it must be finite and >= 0"),
    (lambda sc: -np.ones(sc.horizon), "round 1 is -1.0"),
    (lambda sc: {"z": np.ones(sc.horizon)}, r"gives channels \['z'\], the rule 'test-mine' has noisy channels"),
    (lambda sc: "abc", "not numeric"),
    (lambda sc: 1 / 0, "the sensitivity lemma raised ZeroDivisionError"),
])
def test_a_bad_lemma_value_is_one_clear_error(value, match):
    paper = Paper("test-mine", (Mine,), lemma=value)
    sc = Huang2015.example_scenario().replace(algorithm=Mine(epsilon=1.0, c=0.1, q=0.5, p=0.6))
    with pytest.raises(PaperError, match=match):
        paper.sensitivity(sc)


def test_resolve_names_scripts_and_modules(tmp_path, cleanup):
    assert resolve("huang2015")[1] == "huang2015" and resolve("dpsda-c") == (get_paper("dpsda"), "dpsda-c")
    with pytest.raises(PaperError, match="has rules .*dpsda-c.*name one"):
        resolve("dpsda")
    script = tmp_path / "my_paper.py"
    script.write_text("import numpy as np\nfrom typing import ClassVar\nfrom asyncdp import Huang2015\n"
                      "from asyncdp.papers import Paper\n"
                      "class Other(Huang2015):\n    name: ClassVar[str] = 'test-other'\n"
                      "PAPER = Paper('test-other', (Other,), lemma=lambda sc: np.zeros(sc.horizon))\n")
    paper, rule = resolve(str(script))
    assert (paper.name, rule) == ("test-other", "test-other")
    assert resolve(f"{script}:test-other")[1] == "test-other"
    with pytest.raises(PaperError, match="defines no paper or rule 'nope'"):
        resolve(f"{script}:nope")
    with pytest.raises(FileNotFoundError):
        resolve(str(tmp_path / "missing.py"))
    with pytest.raises(PaperError, match="cannot import the paper module 'no_such_module_xyz'"):
        resolve("no_such_module_xyz:thing")
    assert resolve("asyncdp.papers.huang2015:huang2015")[0] is get_paper("huang2015")


def _run(args: list[str], *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "asyncdp", *args], capture_output=True, text=True, env=env, cwd=ROOT)


def test_entry_points_load_and_a_broken_one_is_a_warning_until_requested(tmp_path):
    ring = tmp_path / "ring.json"
    assert _run(["topology", "generate", "static", "--graph", "ring", "--nodes", "5", "-o", str(ring)]).returncode == 0
    both = (FIXTURES / "third_party", FIXTURES / "broken_entry_point")
    ok = _run(["topology", "audit", str(ring), "--algorithm", "huang2015"], *both)
    assert ok.returncode == 0, ok.stderr
    assert "'broken-paper'" in ok.stderr and "failed to load" in ok.stderr and "Traceback" not in ok.stderr
    bad = _run(["topology", "audit", str(ring), "--algorithm", "broken-paper"], *both)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith(
        "asyncdp: error: paper 'broken-paper' is unavailable: its entry point failed to load (ModuleNotFoundError")
    # the working third-party paper is there, next to the broken one
    third = _run(["privacy", "check", "--help"], *both)
    assert third.returncode == 0
    probe = subprocess.run([sys.executable, "-W", "ignore", "-c",
                            "from asyncdp.papers import registered; r = registered()['fixture-paper'];"
                            "print(r.origin, r.published)"], capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, both))})
    assert probe.stdout.strip() == "entry point fixture-paper (asyncdp_fixture_paper:PAPER) False", probe.stderr


def test_find_paper_of_a_user_rule_without_record_is_none():
    class Lone(Huang2015.__mro__[1]):  # Algorithm
        name: ClassVar[str] = "test-lone"

    assert find_paper(Lone) is None and "test-lone" not in papers()
    assert GradientClass(2.0).norm == "l1"
    with pytest.raises(PaperError, match="bound must be a finite number > 0"):
        GradientClass(float("nan"))


def test_one_script_loaded_by_relative_and_absolute_path_is_one_source(tmp_path, monkeypatch, cleanup):
    """Re-executing a script that registers a paper inline is idempotent whatever path names it."""
    from asyncdp import load_script

    script = tmp_path / "mine.py"
    script.write_text(
        "import numpy as np\n"
        "from asyncdp import Huang2015\n"
        "from asyncdp.papers import Paper, register\n"
        "class PathMine(Huang2015):\n"
        "    name = 'test-path-mine'\n"
        "register(Paper('test-path-mine', (PathMine,), lemma=lambda sc: np.zeros(sc.horizon)))\n"
        "scenario = Huang2015.example_scenario()\n")
    cleanup.append("test-path-mine")
    load_script(script.resolve())
    monkeypatch.chdir(tmp_path)
    load_script(Path("mine.py"))  # a relative path to the same file: no 'two different papers' error
    assert registered()["test-path-mine"].origin == str(script.resolve())

"""Modules moved to subpackages: old import paths and objects pickled by the previous layout still work."""

import importlib
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import asyncdp
from asyncdp.engine.timing import Deadline
from asyncdp.engine.transcript import Transcript
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem

OLD_PICKLE = Path(__file__).parent / "data" / "old_layout_objects.pkl"
"""Pickled by the layout before the subpackages (modules asyncdp.transcript, asyncdp.timing, ...)."""


def test_pickle_from_previous_layout_loads_into_the_current_classes():
    raw = OLD_PICKLE.read_bytes()
    assert b"asyncdp.transcript" in raw and b"asyncdp.engine" not in raw
    with pytest.warns(DeprecationWarning):
        objs = pickle.loads(raw)
    assert isinstance(objs["transcript"], Transcript) and len(objs["transcript"]) > 0
    assert isinstance(objs["timing"], Deadline) and objs["timing"].missing == "renormalize"
    assert isinstance(objs["domain"], Box)
    assert isinstance(objs["problem"], Problem) and objs["problem"].num_agents == 3
    assert isinstance(objs["algorithm"], asyncdp.Huang2015)
    lat = objs["latency"]
    assert lat.sample(np.random.default_rng(3)) == asyncdp.LogNormalLatency(median=0.2, sigma=0.5).sample(
        np.random.default_rng(3)
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("asyncdp.simpy_engine", "asyncdp.engine.simpy_engine"),
        ("asyncdp.costs.quadratics", "asyncdp.problems.costs.quadratics"),
        ("asyncdp.privacy_adapters.huang2015", "asyncdp.privacy.adapters.huang2015"),
        ("topology.properties", "topology.checks.properties"),
    ],
)
def test_old_module_paths_import_the_moved_module(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # an earlier test may have imported it
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_unknown_module_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("asyncdp.no_such_module")


def test_old_submodule_path_is_the_new_module_in_a_fresh_interpreter():
    # in a fresh process nothing is cached: the old path of a moved package's submodule must still
    # resolve to the one new module (not a second copy loaded from the new folder under the old name)
    import subprocess

    code = (
        "import warnings, importlib; warnings.simplefilter('ignore'); "
        "old = importlib.import_module('asyncdp.costs.quadratics'); "
        "new = importlib.import_module('asyncdp.problems.costs.quadratics'); "
        "assert old is new, (old, new); print('same')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "same", proc.stderr

"""Loads ``tests/fixtures/noisy_dgd.py`` (the privacy tests' small noisy gradient rule and its paper record) once
per process, as the module ``asyncdp_tests_noisy_dgd``.

The suite imports test files by path, not as a package, so a test module cannot import a shared file; pytest
imports this folder's ``conftest.py`` before the folder's test modules, which read the module from
``sys.modules`` (its rule classes pickle by that name).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

NOISY_DGD = "asyncdp_tests_noisy_dgd"

if NOISY_DGD not in sys.modules:
    _spec = importlib.util.spec_from_file_location(NOISY_DGD, Path(__file__).resolve().parents[2] / "fixtures"
                                                   / "noisy_dgd.py")
    assert _spec is not None and _spec.loader is not None
    sys.modules[NOISY_DGD] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[NOISY_DGD])

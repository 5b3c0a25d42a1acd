"""Loads the privacy tests' shared files from ``tests/fixtures/`` once per process: ``noisy_dgd.py`` (a small
noisy gradient rule and its paper record) as the module ``asyncdp_tests_noisy_dgd`` and ``example_scripts.py``
(example scripts run at a module's import, their papers kept to that module) as ``asyncdp_tests_example_scripts``.

The suite imports test files by path, not as a package, so a test module cannot import a shared file; pytest
imports this folder's ``conftest.py`` before the folder's test modules, which read the modules from
``sys.modules`` (the rule classes pickle by those names).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

NOISY_DGD = "asyncdp_tests_noisy_dgd"
EXAMPLE_SCRIPTS = "asyncdp_tests_example_scripts"

for _name, _file in ((NOISY_DGD, "noisy_dgd.py"), (EXAMPLE_SCRIPTS, "example_scripts.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, Path(__file__).resolve().parents[2] / "fixtures" / _file)
        assert _spec is not None and _spec.loader is not None
        sys.modules[_name] = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(sys.modules[_name])

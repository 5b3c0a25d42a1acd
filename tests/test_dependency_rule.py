"""The dependency rule: ``accounting`` and ``topology`` never import ``asyncdp``."""

from __future__ import annotations

import json
import subprocess
import sys

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

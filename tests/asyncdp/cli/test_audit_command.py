"""Tests of ``asyncdp privacy audit MODULE.py`` (asyncdp/cli/audit.py), run as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BROKEN = """
import numpy as np
epsilon = 0.5
data, data_prime = 0.0, 1.0
def mechanism(data, rng, size):
    return data + rng.laplace(0.0, 1.0, size)   # Laplace of scale 1 is 1-DP, not 0.5-DP
"""

CORRECT = """
epsilon = 1.0
data, data_prime = 0, 1
def mechanism(data, rng):
    return data if rng.random() < 0.7 else 1 - data   # randomized response: log(7/3) = 0.85-DP
"""

LAST_BIT = """
import numpy as np
epsilon = 1.0
data, data_prime = 0, 1
def mechanism(data, rng, size):   # Laplace values whatever data; data written into bit 0 of coordinate 1
    x = rng.laplace(0.0, 1.0, (size, 2))
    u = x.view(np.uint64)
    u[:, 1] = (u[:, 1] & ~np.uint64(1)) | np.uint64(data)
    return x
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "asyncdp", "privacy", "audit", *args],
                          capture_output=True, text=True, timeout=120)


def _module(tmp_path: Path, text: str, name: str = "mech.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_violation_exits_1_and_writes_json(tmp_path):
    out = tmp_path / "sub" / "report.json"
    proc = _run(str(_module(tmp_path, BROKEN)), "--samples", "20000", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("verdict: VIOLATION")
    report = json.loads(out.read_text())
    assert report["violation"] is True and report["epsilon"] == 0.5 and report["samples"] == 20000
    assert 0.5 < report["epsilon_lower_bound"] <= 1.0
    assert report["counts"]["n"] + report["counts"]["n_train"] == 20000
    assert report["method"] == "classifier" and report["confidence"] == 0.95


def test_no_violation_exits_0(tmp_path):
    out = tmp_path / "report.json"
    proc = _run(str(_module(tmp_path, CORRECT)), "--samples", "4000", "--seed", "3", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "no violation found" in proc.stdout
    report = json.loads(out.read_text())
    assert report["violation"] is False and report["method"] == "exact" and report["seed"] == 3


def test_flags_override_the_module_claim(tmp_path):
    proc = _run(str(_module(tmp_path, CORRECT)), "--samples", "4000", "--epsilon", "0.2", "--confidence", "0.9")
    assert proc.returncode == 1, proc.stderr
    assert "claim epsilon=0.2" in proc.stdout and "confidence 0.9" in proc.stdout


@pytest.mark.parametrize("text, message", [
    ("data = 0\ndata_prime = 1\nepsilon = 1.0\n", "does not define 'mechanism'"),
    ("mechanism = 3\ndata = 0\ndata_prime = 1\nepsilon = 1.0\n", "'mechanism' must be callable"),
    ("def mechanism(d, rng):\n    return d\ndata = 0\ndata_prime = 1\n", "epsilon: give --epsilon"),
])
def test_unusable_module_is_one_error_line(tmp_path, text, message):
    proc = _run(str(_module(tmp_path, text)), "--samples", "200")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asyncdp: error:") and message in lines[0]
    assert "Traceback" not in proc.stderr


def test_missing_file_and_bad_parameter(tmp_path):
    proc = _run(str(tmp_path / "nope.py"))
    assert proc.returncode == 2 and proc.stderr.startswith("asyncdp: error:") and "nope.py" in proc.stderr
    proc = _run(str(_module(tmp_path, CORRECT)), "--samples", "400", "--confidence", "1.5")
    assert proc.returncode == 2 and "argument --confidence: value must lie in (0, 1), got 1.5" in proc.stderr
    proc = _run(str(_module(tmp_path, CORRECT)), "--samples", "400", "--delta", "1")
    assert proc.returncode == 2 and "argument --delta: value must lie in [0, 1), got 1.0" in proc.stderr


def test_help_documents_the_exit_codes():
    proc = _run("--help")
    assert proc.returncode == 0
    assert "exit codes:" in proc.stdout and "1  violation" in proc.stdout and "0  no violation found" in proc.stdout


def test_low_bits_flag_reaches_the_audit(tmp_path):
    """A secret in the last mantissa bit: refuted with --low-bits (the event is on the low-bits score), unseen
    without it (fixed seed, confidence 0.999)."""
    module = str(_module(tmp_path, LAST_BIT))
    out = tmp_path / "report.json"
    proc = _run(module, "--samples", "4000", "--confidence", "0.999", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["low_bits"] is False and report["details"]["scores"] == ["quadratic", "linear"]
    proc = _run(module, "--samples", "4000", "--confidence", "0.999", "--low-bits", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(out.read_text())
    assert report["low_bits"] is True and report["event"].startswith("low-bits score")
    assert report["details"]["scores"] == ["quadratic", "linear", "low-bits"]


def test_low_bits_flag_keeps_bad_input_one_error_line(tmp_path):
    proc = _run(str(_module(tmp_path, LAST_BIT)), "--low-bits", "--samples", "50")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("asyncdp: error:") and "at least 100 samples" in lines[0]
    assert "Traceback" not in proc.stderr


def test_help_says_why_low_bits_is_opt_in():
    proc = _run("--help")
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0
    assert "--low-bits" in text and "Laplace leaks through its last bits too (Mironov, CCS 2012)" in text

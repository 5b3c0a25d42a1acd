"""Tests of ``asyncdp topology`` (audit, generate, info)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from asyncdp.cli import main
from asyncdp.cli.topology import GENERATE_KINDS
from topology.io import load_sequence

REPORT_KEYS = {"algorithm", "horizon", "assumptions", "constants", "all_hold"}
ASSUMPTION_KEYS = {"name", "holds", "first_failure_round", "witness", "description"}

GENERATE_ARGS = {
    "static": ["--graph", "ring", "--nodes", "6"],
    "erdos-renyi": ["--nodes", "6", "--p", "0.5", "--rounds", "4", "--seed", "3"],
    "link-failures": ["--base", "ring", "--nodes", "6", "--failure-prob", "0.3", "--rounds", "4"],
    "geometric": ["--nodes", "8", "--radius", "0.6", "--rounds", "3", "--seed", "1"],
    "b-connected": ["--nodes", "6", "--B", "3", "--seed", "2"],
}


def _single_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("asyncdp: error: ")
    assert "Traceback" not in err
    return lines[0]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def ring_file(tmp_path: Path) -> Path:
    doc = {"nodes": 5, "periodic": True, "rule": "metropolis",
           "rounds": [{"links": [[i, (i + 1) % 5] for i in range(5)] + [[(i + 1) % 5, i] for i in range(5)]}]}
    return _write(tmp_path / "ring.json", json.dumps(doc))


# -- help ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["topology", "--help"],
        ["topology", "audit", "--help"],
        ["topology", "generate", "--help"],
        ["topology", "info", "--help"],
        *[["topology", "generate", kind, "--help"] for kind in GENERATE_KINDS],
    ],
)
def test_help_exits_zero(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: asyncdp " + " ".join(argv[:-1]))


def test_audit_help_lists_algorithms(capsys):
    main(["topology", "audit", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("huang2015", "showkatbakhsh", "wang-basar", "dpsda-c", "dpsda-ps"))
    assert "PAPER.py[:NAME]" in out


def test_topology_without_subcommand_is_usage_error(capsys):
    assert main(["topology"]) == 2
    assert "required" in capsys.readouterr().err


# -- generate -> info -> audit ---------------------------------------------------------


@pytest.mark.parametrize("kind", GENERATE_KINDS)
def test_generate_then_audit_round_trip(tmp_path: Path, capsys, kind: str):
    out = tmp_path / f"{kind}.json"
    assert main(["topology", "generate", kind, *GENERATE_ARGS[kind], "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    seq = load_sequence(out)
    assert seq.num_nodes == int(GENERATE_ARGS[kind][GENERATE_ARGS[kind].index("--nodes") + 1])
    if "--rounds" in GENERATE_ARGS[kind]:
        assert seq.length == int(GENERATE_ARGS[kind][GENERATE_ARGS[kind].index("--rounds") + 1])
    else:
        assert seq.length is None and seq.period is not None
    algorithm = "dpsda-ps" if kind == "b-connected" else "huang2015"
    assert main(["topology", "audit", str(out), "--algorithm", algorithm, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == REPORT_KEYS
    assert report["algorithm"] == algorithm
    if kind == "b-connected":
        assert report["all_hold"] is True
        assert report["constants"]["minimal_B_fixed"] == 3


def test_generate_is_deterministic_in_seed(tmp_path: Path, capsys):
    args = ["topology", "generate", "erdos-renyi", "--nodes", "7", "--p", "0.4", "--rounds", "3"]
    assert main([*args, "--seed", "5", "-o", str(tmp_path / "a.json")]) == 0
    assert main([*args, "--seed", "5", "-o", str(tmp_path / "b.json")]) == 0
    assert main([*args, "--seed", "6", "-o", str(tmp_path / "c.json")]) == 0
    a, b, c = (load_sequence(tmp_path / f"{x}.json") for x in "abc")
    assert all(np.array_equal(a.dense(t), b.dense(t)) for t in (1, 2, 3))
    assert not all(np.array_equal(a.dense(t), c.dense(t)) for t in (1, 2, 3))


def test_generate_static_options(tmp_path: Path, capsys):
    out = tmp_path / "star.json"
    assert main(["topology", "generate", "static", "--graph", "star", "--nodes", "4", "--directed",
                 "--rounds", "3", "-o", str(out)]) == 0
    seq = load_sequence(out)
    assert seq.length == 3 and seq.directed
    w = seq.dense(2)
    assert np.allclose(w.sum(axis=0), 1.0)  # default rule with --directed: column-stochastic
    assert w[1, 0] > 0 and w[0, 1] == 0  # hub 0 -> leaf 1 only
    out = tmp_path / "path.json"
    assert main(["topology", "generate", "static", "--graph", "path", "--nodes", "4",
                 "--rule", "lazy-max-degree", "-o", str(out)]) == 0
    w = load_sequence(out).dense(1)
    assert np.allclose(w, w.T) and w[0, 2] == 0 and w[0, 1] == pytest.approx(0.5 / 3)


def test_generate_b_connected_with_rounds_is_finite(tmp_path: Path, capsys):
    out = tmp_path / "b.json"
    assert main(["topology", "generate", "b-connected", "--nodes", "5", "--B", "2", "--rounds", "5",
                 "-o", str(out)]) == 0
    assert load_sequence(out).length == 5


def test_generate_link_failures_from_file_base(tmp_path: Path, ring_file: Path, capsys):
    out = tmp_path / "lf.json"
    assert main(["topology", "generate", "link-failures", "--base", str(ring_file),
                 "--failure-prob", "0.5", "--rounds", "6", "--seed", "1", "-o", str(out)]) == 0
    seq = load_sequence(out)
    base_links = load_sequence(ring_file).pattern(1)
    for t in range(1, 7):
        assert (seq.pattern(t) > base_links).nnz == 0  # only base links survive


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["erdos-renyi", "--nodes", "5", "--p", "1.5", "--rounds", "2"], "1.5"),
        (["static", "--graph", "ring", "--nodes", "2"], "ring needs --nodes >= 3"),
        (["link-failures", "--base", "ring", "--failure-prob", "0.1", "--rounds", "2"], "needs --nodes"),
        (["b-connected", "--nodes", "4", "--B", "2", "--no-minimal", "--extra-edge-prob", "0.2"], "--rounds"),
        (["link-failures", "--base", "missing.json", "--failure-prob", "0.1", "--rounds", "2"],
         "No such file"),
    ],
)
def test_generate_bad_parameters_exit_2(tmp_path: Path, capsys, argv, message):
    out = tmp_path / "x.json"
    assert main(["topology", "generate", *argv, "-o", str(out)]) == 2
    line = _single_error_line(capsys.readouterr().err)
    assert message in line
    assert not out.exists()


def test_generate_random_kind_requires_rounds(tmp_path: Path, capsys):
    assert main(["topology", "generate", "geometric", "--nodes", "5", "--radius", "0.3",
                 "-o", str(tmp_path / "g.json")]) == 2
    assert "--rounds" in capsys.readouterr().err


def test_generate_rejects_unknown_rule(tmp_path: Path, capsys):
    assert main(["topology", "generate", "static", "--graph", "ring", "--nodes", "5", "--rule", "nope",
                 "-o", str(tmp_path / "r.json")]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


# -- info ----------------------------------------------------------------------------


def test_info_summarizes_file(tmp_path: Path, capsys):
    doc = {"nodes": 3, "rounds": [{"weights": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]},
                                  {"edges": [[0, 0, 0.5], [0, 1, 0.5], [1, 1, 1.0], [2, 2, 1.0]]}],
           "description": "two rounds"}
    path = _write(tmp_path / "two.json", json.dumps(doc))
    assert main(["topology", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nodes:       3" in out
    assert "rounds:      2 (finite)" in out
    assert "description: two rounds" in out
    assert "nonzeros per round (incl. diagonal): min 3, mean 3.50, max 4" in out
    assert "links per round (off-diagonal):      min 0, mean 0.50, max 1" in out


def test_info_periodic(ring_file: Path, capsys):
    assert main(["topology", "info", str(ring_file)]) == 0
    out = capsys.readouterr().out
    assert "period:      1" in out and "links per round (off-diagonal):      min 10" in out


# -- audit ---------------------------------------------------------------------------


def test_audit_table(ring_file: Path, capsys):
    assert main(["topology", "audit", str(ring_file), "--algorithm", "huang2015", "--horizon", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("audit of huang2015 over 5 rounds: all assumptions hold")
    assert "doubly_stochastic" in out


def test_audit_json_keys_and_out_file(tmp_path: Path, ring_file: Path, capsys):
    report_path = tmp_path / "report.json"
    assert main(["topology", "audit", str(ring_file), "--algorithm", "showkatbakhsh", "--json",
                 "--out", str(report_path)]) == 0
    assert capsys.readouterr().out == ""
    report = json.loads(report_path.read_text())
    assert set(report) == REPORT_KEYS
    assert report["assumptions"] and all(set(a) == ASSUMPTION_KEYS for a in report["assumptions"])
    assert report["all_hold"] is True and report["horizon"] == 100  # topology.audit.DEFAULT_HORIZON for a static file


def test_audit_failing_assumptions_still_exit_0(tmp_path: Path, capsys):
    # a row-stochastic but not column-stochastic one-way link: huang2015 needs doubly stochastic
    path = _write(tmp_path / "one_way.json",
                  json.dumps({"nodes": 2, "rounds": [{"weights": [[1.0, 0.0], [0.5, 0.5]]}]}))
    assert main(["topology", "audit", str(path), "--algorithm", "huang2015", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["all_hold"] is False
    failed = [a for a in report["assumptions"] if not a["holds"]]
    assert failed and all(a["first_failure_round"] == 1 and a["witness"] for a in failed)


def test_audit_b_option(tmp_path: Path, capsys):
    out = tmp_path / "b.json"
    assert main(["topology", "generate", "b-connected", "--nodes", "5", "--B", "2", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["topology", "audit", str(out), "--algorithm", "dpsda-ps", "--B", "1", "--json",
                 "--horizon", "4"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["all_hold"] is False and report["constants"]["B"] == 1
    assert main(["topology", "audit", str(out), "--algorithm", "huang2015", "--B", "2"]) == 2
    assert "--B applies only to algorithms whose assumptions include B-strong connectivity" in _single_error_line(
        capsys.readouterr().err)


def test_audit_horizon_past_end_is_user_error(tmp_path: Path, capsys):
    path = _write(tmp_path / "one.json", json.dumps({"nodes": 1, "rounds": [{"weights": [[1.0]]}]}))
    assert main(["topology", "audit", str(path), "--algorithm", "huang2015", "--horizon", "3"]) == 2
    assert "horizon 3" in _single_error_line(capsys.readouterr().err)


def test_audit_unknown_algorithm_is_one_error_line(ring_file: Path, capsys):
    assert main(["topology", "audit", str(ring_file), "--algorithm", "nope"]) == 2
    line = _single_error_line(capsys.readouterr().err)
    assert "no paper record for 'nope'; known: " in line and "dpsda-ps" in line


BAD_INPUTS = {
    "not-json": ("bad.json", '{"nodes": 2,\n  "rounds": [}', "not valid JSON"),
    "negative": ("neg.json", '{"nodes": 2, "rounds": [{"weights": [[1, 0], [-0.5, 1.5]]}]}',
                 "round 1: entry [1, 0] is negative: -0.5"),
    "nan": ("nan.json", '{"nodes": 2, "rounds": [{"weights": [[1, 0], [NaN, 1]]}]}', "non-finite"),
    "empty": ("empty.json", '{"nodes": 2, "rounds": []}', '"rounds" is empty'),
    "missing": ("missing.json", None, "No such file or directory"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
@pytest.mark.parametrize("command", ["audit", "info"])
def test_bad_input_exits_2_in_process(tmp_path: Path, capsys, case: str, command: str):
    name, text, message = BAD_INPUTS[case]
    path = tmp_path / name
    if text is not None:
        _write(path, text)
    extra = ["--algorithm", "huang2015"] if command == "audit" else []
    assert main(["topology", command, str(path), *extra]) == 2
    captured = capsys.readouterr()
    line = _single_error_line(captured.err)
    assert message in line and str(path) in line
    assert captured.out == ""


def test_directory_as_file_is_user_error(tmp_path: Path, capsys):
    assert main(["topology", "info", str(tmp_path)]) == 2
    assert "Is a directory" in _single_error_line(capsys.readouterr().err)


# -- real subprocesses -----------------------------------------------------------------


def _asyncdp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "asyncdp", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_subprocess_generate_then_audit_json(tmp_path: Path):
    res = _asyncdp("topology", "generate", "b-connected", "--nodes", "5", "--B", "2", "-o", "b.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = _asyncdp("topology", "audit", "b.json", "--algorithm", "dpsda-ps", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert set(report) == REPORT_KEYS and report["all_hold"] is True


@pytest.mark.parametrize("case", ["not-json", "negative", "missing"])
def test_subprocess_bad_input_exits_2_without_traceback(tmp_path: Path, case: str):
    name, text, message = BAD_INPUTS[case]
    if text is not None:
        _write(tmp_path / name, text)
    res = _asyncdp("topology", "audit", name, "--algorithm", "huang2015", cwd=tmp_path)
    assert res.returncode == 2
    assert message in _single_error_line(res.stderr)
    assert res.stdout == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nodes", "0", "--p", "0.5", "--rounds", "3"], "argument --nodes: value must be >= 1, got 0"),
        (["--nodes", "3", "--p", "inf", "--rounds", "3"], "argument --p: value must be finite, got inf"),
        (["--nodes", "3", "--p", "0.5", "--rounds", "x"], "argument --rounds: expected an integer, got 'x'"),
        (["--nodes", "3", "--p", "half", "--rounds", "3"], "argument --p: expected a number, got 'half'"),
        (["--nodes", "3", "--p", "0.5", "--rounds", "3", "--seed", "-1"],
         "argument --seed: value must be >= 0, got -1"),
    ],
)
def test_bad_numbers_are_usage_errors_naming_option_and_value(capsys, args, message):
    """Options are checked by topology.validation: exit code 2 and one line naming the option and the value."""
    assert main(["topology", "generate", "erdos-renyi", *args, "--out", "unused.json"]) == 2
    assert message in capsys.readouterr().err


def test_audit_of_an_all_zero_round_reports_failures_and_exits_0(tmp_path: Path, capsys):
    # valid input whose round has no positive weight: the audit used to exit 2 ("W has no positive entry")
    path = _write(tmp_path / "zero.json", json.dumps({"nodes": 2, "rounds": [{"weights": [[0, 0], [0, 0]]}]}))
    assert main(["topology", "audit", str(path), "--algorithm", "huang2015", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    failed = {a["name"]: a for a in report["assumptions"] if not a["holds"]}
    assert set(failed) == {"doubly_stochastic", "strongly_connected", "min_weight_eta"}
    assert failed["min_weight_eta"]["first_failure_round"] == 1

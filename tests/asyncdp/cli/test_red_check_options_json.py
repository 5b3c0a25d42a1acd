"""``asyncdp privacy check`` options: ``--delta`` outside (0, 1), NaN in ``--json``, ``--worst-pair`` SCRIPT.py.

``delta`` is where ``epsilon_tight`` (PLD) is read and where a Rényi/zCDP claim is converted, so it must lie in
(0, 1). The options accepted any ``delta >= 0`` (as documented), and ``0``, ``1`` or ``2`` then failed deep in the
PLD composition, after the engine runs, with an ``accounting`` error naming neither ``check_privacy`` nor the
option: ``asyncdp: error: delta must lie in (0, 1), got 0.0``.
"""

from __future__ import annotations

import pytest

from asyncdp.errors import ScenarioError
from asyncdp.privacy.context import CheckOptions


@pytest.mark.parametrize("delta", [0.0, 1.0, 2.0])
def test_a_delta_outside_the_open_unit_interval_is_refused_by_the_options(delta):
    with pytest.raises(ScenarioError, match=rf"^check_privacy: delta must lie in \(0, 1\), got {delta!r}$"):
        CheckOptions(delta=delta)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--delta", "0", "value must lie in (0, 1), got 0.0"), ("--delta", "nan", "value must be finite, got nan"),
    ("--confidence", "1", "value must lie in (0, 1), got 1.0")])
def test_the_cli_names_the_option_and_the_value(capsys, option, value, message):
    """A bad ``--delta`` or ``--confidence`` is a usage error naming the option (as a bad ``--runs`` is), before the
    script is loaded; it was ``check_privacy: delta must lie in (0, 1)``, naming the API's parameter."""
    from asyncdp.cli import main

    from .test_bad_input import REPO

    script = str(REPO / "examples" / "privacy_check_rendezvous.py")
    assert main(["privacy", "check", script, "--runs", "20", "--search-examples", "0", option, value]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"asyncdp privacy check: error: argument {option}: {message}"


def test_a_nan_figure_is_written_as_nan_not_minus_inf():
    """The JSON writer turned every non-finite float that is not above 0 into ``"-inf"``: a NaN figure (a figure
    that was not evaluated) read as minus infinity in ``--json``."""
    import math

    from asyncdp.privacy.evidence import Evidence

    d = Evidence("x", "declaration", {"a": math.nan, "b": -math.inf, "c": math.inf}, bound=math.nan).to_dict()
    assert d["figures"] == {"a": "nan", "b": "-inf", "c": "inf"} and d["bound"] == "nan"


def test_the_worst_pair_file_cannot_be_the_scenario_script(tmp_path, capsys):
    """``--worst-pair SCRIPT.py`` (the checked script itself) replaced the user's scenario script with the worst
    pair's, which loads that very path: the scenario was lost and the next check ended in a RecursionError."""
    import shutil

    from asyncdp.cli import main

    from .test_bad_input import REPO, one_error_line

    script = tmp_path / "mine.py"
    shutil.copy(REPO / "examples" / "privacy_check_rendezvous.py", script)
    before = script.read_text()
    argv = ["privacy", "check", str(script), "--runs", "20", "--search-examples", "0", "--worst-pair"]
    assert main([*argv, str(tmp_path / "." / "mine.py")]) == 2
    assert "is the input file" in one_error_line(capsys.readouterr().err)
    assert script.read_text() == before


def test_a_script_that_loads_itself_is_one_short_error(tmp_path, capsys):
    """A script that loads itself (a worst-pair file written over its own scenario, or a typo in a path) ended in a
    RecursionError whose one error line repeated the file name a thousand times."""
    from asyncdp.cli import main

    from .test_bad_input import one_error_line

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(f"from asyncdp import load_script\nscenario = load_script({str(b)!r})['scenario']\n")
    b.write_text(f"from asyncdp import load_script\nscenario = load_script({str(a)!r})['scenario']\n")
    assert main(["run", str(a)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "load_script cycle" in line and "RecursionError" not in line and len(line) < 600, line


def test_a_nested_non_finite_float_is_written_as_a_string():
    """Only the top-level floats of a witness, figure or report field were converted: a NaN or infinity inside a
    nested dict or list (a witness's ``kink``, an observer's black-box figures) was written as the bare ``NaN`` or
    ``Infinity`` of Python's json module, which strict JSON readers refuse."""
    import json
    import math

    from asyncdp.privacy.evidence import Evidence
    from asyncdp.privacy.report import PrivacyCheckReport

    e = Evidence("x", "declaration", {"a": {"b": math.nan}}, witness={"kink": {"w": math.inf}, "g": [1.0, -math.inf]})
    d = json.loads(json.dumps(e.to_dict(), allow_nan=False))
    assert d["figures"] == {"a": {"b": "nan"}} and d["witness"] == {"kink": {"w": "inf"}, "g": [1.0, "-inf"]}
    report = PrivacyCheckReport(
        algorithm="a", changed_agent=0, epsilon_claimed=1.0, delta_claimed=1e-3, epsilon_ledger=6.9,
        epsilon_tight=1.0, delta=1e-6, sensitivity_probe_max=0.0, sensitivity_probe_ratio=0.0, replay_max_loss=None,
        replay_exceed_fraction=None, replay_runs=0, empirical_epsilon_lower_bound=0.0, confidence=0.95, theorem="-",
        verdict="violation", witness={"kink": {"w": math.nan}}, reasons=[], epsilon_at_claimed_delta=0.56)
    assert json.loads(json.dumps(report.to_dict(), allow_nan=False))["witness"] == {"kink": {"w": "nan"}}

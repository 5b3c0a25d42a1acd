"""The Wang and Başar (Automatica 2023) reproductions: Table 1, the saddle escape and ICA; files, summaries, bad input."""

from __future__ import annotations

import csv
import json
import math

import pytest

from asyncdp.errors import ScenarioError
from asyncdp.papers.wang_basar import reproduce as rep


def test_reproductions_write_their_files(tmp_path):
    t1 = rep.reproduce_table1(tmp_path, runs=3, horizon=40, variances=(0.1, 0.6))
    s = rep.reproduce_saddle(tmp_path, runs=3, horizon=40, variances=(0.5,))
    ica = rep.reproduce_ica(tmp_path, runs=2, group=1, horizon=15, variances=(0.0, 0.5))
    for name, summary, keys, cols in (("table1", t1, rep.TABLE1_KEYS, rep.TABLE1_COLUMNS),
                                      ("saddle", s, rep.SADDLE_KEYS, rep.SADDLE_COLUMNS),
                                      ("ica", ica, rep.ICA_KEYS, rep.ICA_COLUMNS)):
        assert set(summary) == set(keys)
        on_disk = json.loads((tmp_path / f"{name}_summary.json").read_text())
        assert on_disk["experiment"] == f"wang-basar-{name}"
        assert on_disk["paper"]["source"].startswith("Wang and Basar (Automatica 2023), ")
        with (tmp_path / f"{name}.csv").open() as fh:
            assert tuple(next(csv.reader(fh))) == cols
        assert (tmp_path / f"{name}.png").stat().st_size > 0
    assert set(t1["per_sigma"][0]) == set(rep.TABLE1_ENTRY_KEYS) and t1["per_sigma"][0]["paper"] == 0.048
    assert t1["per_sigma"][0]["privacy"]["composed"]["pld"] > 0
    assert {"graph", "weights", "eta", "starts", "error"} <= set(t1["choices"])
    assert s["checks"]["homogeneous_noise_free_stays"] and not s["checks"]["paper_noise_free_stays"]
    with pytest.raises(ScenarioError, match="multiple of group"):
        rep.reproduce_ica(tmp_path, runs=3, group=2)


@pytest.mark.parametrize(("experiment", "bad"), [
    ("reproduce_table1", ()), ("reproduce_saddle", (0.5, 0.0)), ("reproduce_saddle", (math.inf,)),
    ("reproduce_ica", (-0.1,)), ("reproduce_ica", ("x",)), ("reproduce_table1", None),
])
def test_reproductions_reject_bad_variances_by_name(tmp_path, experiment, bad):
    with pytest.raises(ScenarioError, match="variances must be a nonempty list"):
        getattr(rep, experiment)(tmp_path, variances=bad)
    assert not any(tmp_path.iterdir())  # rejected before anything is written


def test_ica_accepts_a_zero_variance_the_others_do_not():
    from asyncdp.papers.wang_basar.reproduce.common import _check_variances

    assert _check_variances([0, 0.5], allow_zero=True) == (0.0, 0.5)
    with pytest.raises(ScenarioError, match="positive numbers"):
        _check_variances([0, 0.5])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"group": 0}, "group must be >= 1, got 0"),
    ({"runs": 0}, "runs must be >= 1, got 0"),
    ({"seed": -1}, "seed must be >= 0, got -1"),
    ({"horizon": 2.5}, "horizon must be an integer, got 2.5"),
    # from the command line 'group' is no option: the message says what it is and gives a runs value that works
    ({"runs": 2}, r"^runs=2 must be a multiple of group=10, the runs that share one draw of the data \(A, Z\) "
                  r"\(e\.g\. runs=10\)$"),
    ({"runs": 27}, r"\(e\.g\. runs=30\)$"),
])
def test_ica_names_the_bad_count(tmp_path, kwargs, match):
    with pytest.raises(ScenarioError, match=match):
        rep.reproduce_ica(tmp_path, **kwargs)
    assert not any(tmp_path.iterdir())


def test_variances_are_taken_in_increasing_order_and_distinct():
    """table1's 'monotone increasing' and paired increments compare neighbours: (0.6, 0.1) reported a decrease."""
    from asyncdp.papers.wang_basar.reproduce.common import _check_variances

    assert _check_variances([0.6, 0.1, 0.3]) == (0.1, 0.3, 0.6)
    with pytest.raises(ScenarioError, match="variances repeat a value"):
        _check_variances([0.1, 0.1])


def test_table1_level_line_says_same_trend_only_when_ours_rises():
    from asyncdp.papers.wang_basar.reproduce.table1 import _table1_statements

    def entry(var, paper, ours):
        return {"noise_variance": var, "paper": paper, "ours": ours, "ci_low": ours, "ci_high": ours,
                "paper_over_ours": paper / ours, "alternatives": {}, "privacy": None}

    def level(ours):
        entries = [entry(0.1, 0.048, ours[0]), entry(0.6, 0.091, ours[1])]
        checks = {"monotone_increasing_ours": ours[1] > ours[0], "increments_positive_at_95": False,
                  "loglog_slope_ours": 0.0, "loglog_slope_paper": 0.36, "ratio_last_first_paper": 0.091 / 0.048,
                  "paper_over_ours_range": [min(e["paper_over_ours"] for e in entries),
                                            max(e["paper_over_ours"] for e in entries)]}
        return next(line for line in _table1_statements(entries, checks) if line.startswith("Level:"))

    assert "with the same rising trend" in level((0.002, 0.004))
    # two runs per variance can give a falling pair: then the line must not claim the paper's trend
    falling = level((0.004, 0.002))
    assert "same rising trend" not in falling and "ours do not rise with sigma" in falling

"""Sweep result files (asyncdp.experiments.results_io); the round trip of a real sweep's table is tested in test_sweep.py."""

from __future__ import annotations

import pandas as pd
import pytest

from asyncdp.errors import SweepError
from asyncdp.experiments.results_io import read_results, write_results


def test_results_bad_suffix(tmp_path):
    with pytest.raises(SweepError, match=r"\.csv or \.parquet"):
        write_results(pd.DataFrame({"a": [1]}), tmp_path / "out.xlsx")
    with pytest.raises(SweepError, match=r"\.csv or \.parquet"):
        read_results(tmp_path / "out.json")


def test_csv_round_trip_keeps_strings_pandas_reads_as_missing(tmp_path):
    """A grid value "None" or "NA" came back as NaN (pandas' default NA strings); NaN and inf still round-trip."""
    import numpy as np

    df = pd.DataFrame({"weights": ["None", "NA", "null", "metropolis"], "point": [0, 1, 2, 3], "run": 0,
                       "task_seed": 1, "m": [np.nan, np.inf, -0.0, 0.1 + 0.2]})
    back = read_results(write_results(df, tmp_path / "r.csv"))
    assert back["weights"].tolist() == df["weights"].tolist()
    assert np.array_equal(back["m"].to_numpy(), df["m"].to_numpy(), equal_nan=True)
    assert np.signbit(back["m"][2]) and back["m"].dtype == np.float64


def test_parquet_of_a_mixed_type_column_is_a_sweep_error_naming_the_file(tmp_path):
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"w": [1, "a"], "point": [0, 1], "run": 0, "task_seed": 1, "m": [1.0, 2.0]})
    with pytest.raises(SweepError, match=r"r\.parquet.*as Parquet.*one type"):
        write_results(df, tmp_path / "r.parquet")
    assert not list(tmp_path.iterdir())  # no partial file left


def test_csv_round_trip_of_float32_columns_keeps_their_values(tmp_path):
    """A user metric computed in float32: pandas wrote float32(0.1) as '0.1', read back as the float64 0.1, another
    number (by 1.5e-9) than the one the sweep computed; the file now holds the float64 of each float32 value."""
    import numpy as np

    m = np.array([0.1, 1 / 3, np.nan, np.inf], dtype=np.float32)
    df = pd.DataFrame({"point": [0, 1, 2, 3], "run": 0, "task_seed": 1, "m": m})
    back = read_results(write_results(df, tmp_path / "r.csv"))
    assert np.array_equal(back["m"].to_numpy(), m.astype(np.float64), equal_nan=True)
    assert df["m"].dtype == np.float32  # the caller's table is left as it is


@pytest.mark.parametrize("texts", [["007", "010"], ["1e3", "2"], ["True", "False"], ["1", 2], ["", "a"]])
def test_csv_of_texts_that_would_read_back_as_other_values_is_refused(tmp_path, texts):
    """Before: a grid of labels "007" and "010" was written to CSV and read back as the numbers 7 and 10 ("1e3" as
    1000.0, "True" as True, "" as NaN), silently. Parquet keeps them."""
    df = pd.DataFrame({"label": texts, "point": [0, 1], "run": 0, "task_seed": 1, "m": [1.0, 2.0]})
    with pytest.raises(SweepError, match=r"r\.csv.*as CSV: column 'label' holds the text .*\.parquet"):
        write_results(df, tmp_path / "r.csv")
    assert not list(tmp_path.iterdir())
    pytest.importorskip("pyarrow")
    if all(isinstance(t, str) for t in texts):
        assert read_results(write_results(df, tmp_path / "r.parquet"))["label"].tolist() == texts


def test_cli_refuses_a_csv_of_such_texts_before_the_sweep_runs(tmp_path, capsys):
    from asyncdp.cli import main

    script = tmp_path / "labels.py"
    script.write_text("from asyncdp import Huang2015\n\ngrid = {'label': ['007', '010']}\n\n\n"
                      "def factory(label):\n    raise AssertionError('the sweep ran')\n")
    assert main(["sweep", str(script), "--out", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert "column 'label' holds the text '007'" in err and "the sweep ran" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.py"]

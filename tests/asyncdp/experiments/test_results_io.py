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

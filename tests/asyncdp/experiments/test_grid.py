"""Grids, tasks and seeds of a sweep (asyncdp.experiments.grid); grid order and the seed layout through a whole sweep are tested in test_sweep.py."""

from __future__ import annotations

import math

import pytest

from asyncdp.errors import SweepError
from asyncdp.experiments.grid import grid_from_strings


def test_grid_from_strings():
    assert grid_from_strings(["epsilon=0.1,1,1e3,inf", "c=0.2", "mode=broadcast, unicast"]) == {
        "epsilon": [0.1, 1, 1000.0, math.inf], "c": [0.2], "mode": ["broadcast", "unicast"]}
    assert isinstance(grid_from_strings(["n=3"])["n"][0], int)
    for bad, msg in [("epsilon", "NAME=V1"), ("=1", "NAME=V1"), ("epsilon=1,,2", "empty value"),
                     ("1x=2", "identifier"), ("epsilon=", "empty value")]:
        with pytest.raises(SweepError, match=msg):
            grid_from_strings([bad])
    with pytest.raises(SweepError, match="twice"):
        grid_from_strings(["a=1", "a=2"])


def test_true_and_false_are_booleans():
    """``--grid lossy=True,False`` gave the factory the text 'False', which is true: ``if lossy:`` ran the lossy
    scenario at both points, silently."""
    grid = grid_from_strings(["lossy=True,False", "flag=true, FALSE", "word=Truth,no"])
    assert grid == {"lossy": [True, False], "flag": [True, False], "word": ["Truth", "no"]}
    assert all(type(v) is bool for v in grid["lossy"] + grid["flag"])


def test_labels_with_underscores_or_other_digits_stay_text():
    """Before: ``--grid batch=2024_01`` gave the factory the number 202401 (Python's int reads underscores) and a label
    of Arabic-Indic digits the number 12, silently."""
    assert grid_from_strings(["batch=2024_01,1_0.5,\u0661\u0662", "n=12,1.5"]) == {
        "batch": ["2024_01", "1_0.5", "\u0661\u0662"], "n": [12, 1.5]}

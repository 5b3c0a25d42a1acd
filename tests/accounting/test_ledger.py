"""The privacy ledger: record validation, the columnar form, exports and round trips."""

from __future__ import annotations

import dataclasses
import math
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.errors import LedgerFormatError, PrivacyParameterError, UnknownMechanismError
from accounting.ledger import Ledger, Release

RECORDS = [
    Release(0, 1, 0.0, "laplace", 2.0, 2, 1.0, channel="y"),
    Release(0, 2, 0.0, "laplace", 1.5, 2, 0.5, channel="y"),
    Release(0, 2, 0.0, "gaussian", 0.7, 3, math.nan, channel="z"),
]


@st.composite
def stamped(draw):
    """(record, agent, time, receiver) rows over RECORDS; receiver -1 = broadcast."""
    m = draw(st.integers(0, 30))
    rows = draw(st.lists(st.tuples(st.integers(0, len(RECORDS) - 1), st.integers(0, 9),
                                   st.floats(0, 1e6, allow_nan=False), st.integers(-1, 9)),
                         min_size=m, max_size=m))
    return rows


def _eager(rows):
    return Ledger(RECORDS[k].copy_for(a, t, None if j < 0 else j) for k, a, t, j in rows)


def _columnar(rows):
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return Ledger.from_columns(RECORDS, record=cols[0], agent=cols[1], time=cols[2], receiver=cols[3])


# --------------------------------------------------------------------------- records


@pytest.mark.parametrize("field, value, match", [
    ("scale", 0.0, "noise scale must be positive and finite, got 0.0"),
    ("scale", -1.0, "got -1.0"),
    ("scale", math.nan, "got nan"),
    ("scale", math.inf, "got inf"),
    ("dimension", 0, "dimension must be a positive integer, got 0"),
    ("dimension", 1.5, "got 1.5"),
    ("claimed_sensitivity", -0.2, "claimed sensitivity must be >= 0 \\(or nan: not stated\\), got -0.2"),
    ("claimed_sensitivity", "0.2", "got '0.2'"),
    ("scale", True, "noise scale must be positive and finite, got True \\(channel 'y'\\)"),
    ("claimed_sensitivity", True, "got True"),
])
def test_release_rejects_bad_fields_naming_agent_and_round(field, value, match):
    kw = dict(agent=4, round=7, time=0.0, mechanism="laplace", scale=1.0, dimension=2)
    kw[field] = value
    with pytest.raises(PrivacyParameterError, match=f"agent 4, round 7: .*{match}"):
        Release(**kw)


def test_release_takes_numpy_integers_as_numbers():
    r = Release(agent=4, round=7, time=0.0, mechanism="laplace", scale=np.int64(2), dimension=2,
                claimed_sensitivity=np.int64(1))
    assert (r.scale, r.claimed_sensitivity) == (2, 1)
    assert type(r.scale) is type(r.claimed_sensitivity) is float  # stored as floats: the ledger's JSON writes them
    assert '"scale": 2.0' in Ledger([r]).to_json()


def test_release_rejects_unknown_mechanism():
    with pytest.raises(UnknownMechanismError, match="agent 1, round 2: unknown mechanism 'cauchy'"):
        Release(1, 2, 0.0, "cauchy", 1.0, 1)


@given(k=st.integers(0, 2), agent=st.integers(0, 10**6), time=st.floats(-1e9, 1e9), receiver=st.none() | st.integers(0, 99))
def test_copy_for_is_the_constructor_with_three_fields_changed(k, agent, time, receiver):
    r = RECORDS[k]
    copy = r.copy_for(agent, time, receiver)
    expected = Release(agent=agent, round=r.round, time=time, mechanism=r.mechanism, scale=r.scale,
                       dimension=r.dimension, claimed_sensitivity=r.claimed_sensitivity, channel=r.channel,
                       receiver=receiver)
    assert (copy.agent, copy.time, copy.receiver) == (agent, time, receiver)
    if math.isnan(r.claimed_sensitivity):  # nan != nan: compare the other fields
        assert math.isnan(copy.claimed_sensitivity)
        assert [getattr(copy, f) for f in ("round", "mechanism", "scale", "dimension", "channel")] == \
            [getattr(expected, f) for f in ("round", "mechanism", "scale", "dimension", "channel")]
    else:
        assert copy == expected
    assert r.agent == 0 and r.receiver is None  # the original is untouched
    with pytest.raises(AttributeError):
        copy.scale = 3.0  # still frozen


# --------------------------------------------------------------------------- columnar form


@given(rows=stamped())
def test_columnar_ledger_equals_the_object_ledger(rows):
    eager, lazy = _eager(rows), _columnar(rows)
    assert len(lazy) == len(rows)
    assert lazy.agents == eager.agents == sorted({a for _, a, _, _ in rows})
    pd.testing.assert_frame_equal(lazy.to_dataframe(), eager.to_dataframe(), check_exact=True)
    got = list(lazy)  # materialized
    assert len(got) == len(rows)
    for r, (k, a, t, j) in zip(got, rows):
        assert (r.agent, r.time, r.receiver, r.round, r.scale, r.channel) == \
            (a, t, None if j < 0 else j, RECORDS[k].round, RECORDS[k].scale, RECORDS[k].channel)
    for a in eager.agents:
        assert len(lazy.for_agent(a)) == len(eager.for_agent(a))
    assert lazy.summary() == eager.summary()


def _frame(led):
    return led.to_dataframe()


@settings(max_examples=60, deadline=None)
@given(rows=stamped(), probe=st.integers(0, 12))
def test_one_ledger_in_every_public_method(rows, probe):
    """The same releases built both ways (objects; columns, before and after its records are made) are one ledger."""
    eager, lazy, made = _eager(rows), _columnar(rows), _columnar(rows)
    list(made)  # the columnar ledger with its records already made: same answers
    n = len(rows)
    for led in (lazy, made):
        assert len(led) == len(eager) == n and bool(led) == bool(eager)
        assert led == eager and eager == led and not (led != eager)
        assert repr(led) == repr(eager) == f"Ledger({n} releases)"
        assert list(led) == list(eager)
        for k in range(-n, n):
            assert led[k] == eager[k]
        with pytest.raises(IndexError):
            led[n]
        assert led.agents == eager.agents
        for agent in (*eager.agents, probe):  # probe: sometimes an agent without releases
            sub, want = led.for_agent(agent), eager.for_agent(agent)
            assert sub == want and repr(sub) == repr(want) and sub.agents == want.agents
            pd.testing.assert_frame_equal(_frame(sub), _frame(want), check_exact=True)
        pd.testing.assert_frame_equal(_frame(led), _frame(eager), check_exact=True)
        assert led.to_json() == eager.to_json()
        assert led.summary() == eager.summary()
        # pickles: the same table after loading (NaN claims make the loaded records != by identity, so compare tables)
        again, again_eager = pickle.loads(pickle.dumps(led)), pickle.loads(pickle.dumps(eager))
        pd.testing.assert_frame_equal(_frame(again), _frame(again_eager), check_exact=True)
        assert again.to_json() == eager.to_json() and len(again) == n
        # the table and JSON forms read back to the same ledger whichever form wrote them
        pd.testing.assert_frame_equal(_frame(Ledger.from_dataframe(_frame(led))),
                                      _frame(Ledger.from_dataframe(_frame(eager))), check_exact=True)
        assert Ledger.from_json(led.to_json()).to_json() == eager.to_json()
    with tempfile.TemporaryDirectory() as tmp:
        for name, led in (("lazy", lazy), ("eager", eager)):
            led.save(Path(tmp) / f"{name}.parquet")
        pd.testing.assert_frame_equal(_frame(Ledger.load(Path(tmp) / "lazy.parquet")),
                                      _frame(Ledger.load(Path(tmp) / "eager.parquet")), check_exact=True)


def test_records_are_made_by_the_constructor_and_stay_frozen():
    """copy_for and a columnar ledger's records go through Release's constructor (validated), and are frozen."""
    calls = []

    class Counted(Release):
        def __init__(self, *args, **kwargs):
            calls.append(args[:3])
            super().__init__(*args, **kwargs)

    rec = Counted(0, 1, 0.0, "laplace", 1.0, 1)
    led = Ledger.from_columns([rec], record=[0, 0], agent=[1, 2], time=[0.5, 0.7])
    calls.clear()
    made = list(led)
    assert calls == [(1, 1, 0.5), (2, 1, 0.7)] and all(type(r) is Counted for r in made)
    for r in made:
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.agent = 9
    assert dataclasses.replace(made[0], scale=3.0).scale == 3.0
    with pytest.raises(PrivacyParameterError, match="agent 1, round 1: noise scale must be positive"):
        dataclasses.replace(made[0], scale=-1.0)


def test_columnar_ledger_validates_rows_naming_the_row():
    ok = dict(record=[0, 1], agent=[0, 1], time=[0.0, 1.0])
    with pytest.raises(LedgerFormatError, match="record has 2 rows, agent 1"):
        Ledger.from_columns(RECORDS, **{**ok, "agent": [0]})
    with pytest.raises(LedgerFormatError, match=r"row 1: record must be an index into the 3 records, got 3"):
        Ledger.from_columns(RECORDS, **{**ok, "record": [0, 3]})
    with pytest.raises(LedgerFormatError, match=r"row 0: agent must be a nonnegative integer, got -2"):
        Ledger.from_columns(RECORDS, **{**ok, "agent": [-2, 0]})
    with pytest.raises(LedgerFormatError, match=r"row 1: time must be finite, got nan"):
        Ledger.from_columns(RECORDS, **{**ok, "time": [0.0, math.nan]})
    with pytest.raises(LedgerFormatError, match=r"row 0: receiver must be -1 \(broadcast\)"):
        Ledger.from_columns(RECORDS, **ok, receiver=[-3, 0])
    with pytest.raises(LedgerFormatError, match="holds Release records, got dict"):
        Ledger.from_columns([{"agent": 0}], record=[0], agent=[0], time=[0.0])


def test_columnar_ledger_columns_are_read_only():
    led = Ledger.from_columns(RECORDS, record=[0], agent=[0], time=[0.0])
    with pytest.raises(ValueError):
        led._cols["agent"][0] = 5


def test_empty_ledgers_agree():
    empty = Ledger.from_columns(RECORDS, record=[], agent=[], time=[])
    assert len(empty) == 0 and empty == Ledger() and empty.agents == []
    pd.testing.assert_frame_equal(empty.to_dataframe(), Ledger().to_dataframe())


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("suffix", [".json", ".parquet", ".csv"])
@pytest.mark.parametrize("form", [_eager, _columnar])
def test_save_and_load_round_trip(tmp_path, suffix, form):
    rows = [(0, 3, 0.25, -1), (1, 4, 1.5, 2), (2, 3, 2.0, -1)]
    led = form(rows)
    path = tmp_path / f"ledger{suffix}"
    led.save(path)
    back = Ledger.load(path)
    assert len(back) == 3
    pd.testing.assert_frame_equal(back.to_dataframe(), led.to_dataframe(), check_exact=True)
    assert math.isnan(back[2].claimed_sensitivity) and back[1].receiver == 2 and back[0].receiver is None


def test_bad_files_are_clear_errors(tmp_path):
    with pytest.raises(LedgerFormatError, match="unknown ledger file type '.txt'"):
        Ledger().save(tmp_path / "x.txt")
    with pytest.raises(LedgerFormatError, match="not valid JSON"):
        Ledger.from_json("{nope")
    with pytest.raises(LedgerFormatError, match="record 0"):
        Ledger.from_json('[{"agent": 0, "bogus": 1}]')
    with pytest.raises(LedgerFormatError, match=r"lacks column\(s\) \['scale'\]"):
        Ledger.from_dataframe(_eager([(0, 0, 0.0, -1)]).to_dataframe().drop(columns=["scale"]))
    with pytest.raises(LedgerFormatError, match="holds Release records, got int"):
        Ledger([1])
    assert np.array_equal(Ledger.from_json(_eager([(0, 1, 0.5, -1)]).to_json()).to_dataframe()["agent"], [1])


def test_columnar_ledger_rejects_non_integer_and_multidimensional_columns():
    with pytest.raises(LedgerFormatError, match="column agent must hold integers, got dtype float64"):
        Ledger.from_columns(RECORDS, record=[0], agent=[1.7], time=[0.0])
    with pytest.raises(LedgerFormatError, match="column record must be one-dimensional, got shape \\(1, 2\\)"):
        Ledger.from_columns(RECORDS, record=[[0, 1]], agent=[0, 1], time=[0.0, 0.0])
    with pytest.raises(LedgerFormatError, match="column time must hold numbers"):
        Ledger.from_columns(RECORDS, record=[0], agent=[0], time=["soon"])


def test_copy_for_keeps_the_subclass():
    class Tagged(Release):
        pass

    r = Tagged(0, 1, 0.0, "laplace", 1.0, 1)
    assert type(r.copy_for(2, 0.5)) is Tagged


def test_ledgers_pickled_by_earlier_versions_still_load():
    """Earlier versions pickled a ledger as the state {'_releases': (Release, ...)}."""
    old = Ledger.__new__(Ledger)
    old.__setstate__({"_releases": tuple(RECORDS)})
    assert old == Ledger(RECORDS) and len(old) == 3 and old.agents == [0]
    for led in (_eager([(0, 1, 0.5, -1)]), _columnar([(0, 1, 0.5, -1), (1, 4, 1.0, 3)])):  # no NaN claims: nan != nan
        assert pickle.loads(pickle.dumps(led)) == led

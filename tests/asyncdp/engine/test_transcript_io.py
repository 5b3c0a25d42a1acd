"""Tests of asyncdp.engine.transcript_io (the file formats and the table form) and of the split from transcript.py.

The module-level functions, the transcript class they build, the constants
shared by both modules, that either module may be imported first, and the
round trips through the methods :meth:`Transcript.save` /
:meth:`Transcript.load` / :meth:`Transcript.to_dataframe` that delegate here
(the transcript builders are fixtures of ``conftest.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from asyncdp.engine import transcript, transcript_io
from asyncdp.engine.transcript import COLUMNS, Transcript, TranscriptError, Transmission
from asyncdp.errors import AsyncdpError, ScenarioError


class _Tagged(Transcript):
    """A subclass: load and from_dataframe must build it, not the base class."""


def _small() -> Transcript:
    tr = Transcript()
    mid = tr.new_message_id()
    tr.append(1, 0, 1, "y", 0.0, 0.25, False, [1.0, -0.0], mid)
    tr.append(1, 0, 2, "y", 0.0, None, True, [1.0, -0.0], mid)
    tr.append(2, 1, 0, "z", 1.0, 1.5, False, [math.inf], tr.new_message_id())
    return tr


@pytest.mark.parametrize("suffix", [".npz", ".json", ".parquet"])
def test_functions_round_trip_and_build_the_given_class(tmp_path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    tr = _small()
    path = transcript_io.save(tr, tmp_path / f"t{suffix}")
    back = transcript_io.load(path)
    assert type(back) is Transcript and back == tr and back.frozen
    tagged = _Tagged.load(path)
    assert type(tagged) is _Tagged and tagged == tr
    assert type(transcript_io.load(path, _Tagged)) is _Tagged


def test_table_functions_match_the_methods() -> None:
    tr = _small()
    df = transcript_io.to_dataframe(tr)
    assert df.equals(tr.to_dataframe())
    assert transcript_io.from_dataframe(df) == tr
    assert type(_Tagged.from_dataframe(df)) is _Tagged


def test_format_constants_are_shared() -> None:
    assert transcript.FORMAT_NAME is transcript_io.FORMAT_NAME == "asyncdp-transcript"
    assert transcript.FORMAT_VERSION == transcript_io.FORMAT_VERSION == 1
    assert transcript_io.SUFFIXES == (".npz", ".parquet", ".json")


def test_json_header(tmp_path) -> None:
    data = json.loads(transcript_io.save(_small(), tmp_path / "t.json").read_text())
    assert data["format"] == transcript_io.FORMAT_NAME and data["version"] == transcript_io.FORMAT_VERSION
    assert data["transmissions"][1]["receive_time"] is None and data["transmissions"][2]["payload"] == ["Infinity"]


@pytest.mark.parametrize("first", ["asyncdp.engine.transcript_io", "asyncdp.engine.transcript"])
def test_either_module_may_be_imported_first(first: str) -> None:
    code = (f"import {first}\nfrom asyncdp.engine.transcript import FORMAT_NAME, Transcript\n"
            "from asyncdp.engine.transcript_io import load, save\nprint(FORMAT_NAME)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "asyncdp-transcript"


def test_transmissions_read_back_are_built_by_the_constructor() -> None:
    """No ``object.__new__`` bypass: rows read back go through ``__init__`` with ``_checked=True``."""
    tr = _small()
    t = tr[2]
    assert type(t) is Transmission and t.receive_time == 1.5 and not t.payload.flags.writeable
    assert t == Transmission(2, 1, 0, "z", 1.0, 1.5, False, [math.inf], 1)
    assert [f.name for f in dataclasses.fields(Transmission)][-1] == "message_id"  # _checked is no field
    with pytest.raises(TypeError):
        Transmission(2, 1, 0, "z", 1.0, 1.5, False, [1.0], 1, True)  # _checked is keyword-only
    # a changed copy is checked again
    assert dataclasses.replace(t, round=3).round == 3
    with pytest.raises(TranscriptError, match=r"round must be >= 0, got -1"):
        dataclasses.replace(t, round=-1)
    assert np.array_equal(list(tr)[0].payload, np.array([1.0, -0.0]))


# --------------------------------------------------------------------------- round trips through the Transcript methods (moved from test_transcript.py)


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".json"])
def test_file_round_trip_is_exact(tmp_path, suffix: str, payload_bits, awkward_transcript) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    tr = awkward_transcript()
    back = Transcript.load(tr.save(tmp_path / f"t{suffix}"))
    assert back == tr
    for name in ("round", "sender", "receiver", "message_id", "dim", "lost"):
        np.testing.assert_array_equal(back.column(name), tr.column(name))
    assert back.column("channel").tolist() == tr.column("channel").tolist()
    for a, b in zip(tr, back):
        assert payload_bits(a.payload[~np.isnan(a.payload)]) == payload_bits(b.payload[~np.isnan(b.payload)])
        assert np.isnan(a.payload).tolist() == np.isnan(b.payload).tolist()
        assert a.send_time.hex() == b.send_time.hex()
        both_nan = math.isnan(a.receive_time) and math.isnan(b.receive_time)
        assert both_nan or a.receive_time.hex() == b.receive_time.hex()


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".json"])
def test_empty_round_trip(tmp_path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    back = Transcript.load(Transcript().save(tmp_path / f"e{suffix}"))
    assert len(back) == 0 and back == Transcript()


def test_json_is_strict_json(tmp_path, awkward_transcript) -> None:
    path = awkward_transcript().save(tmp_path / "t.json")
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))
    assert data["format"] == "asyncdp-transcript" and data["transmissions"][-2]["payload"][1] == "NaN"


def test_unknown_suffix(tmp_path, build_transcript) -> None:
    with pytest.raises(TranscriptError, match=r"unknown transcript file suffix '\.csv'.*\.npz, \.parquet, \.json"):
        build_transcript().save(tmp_path / "t.csv")
    with pytest.raises(AsyncdpError, match="suffix"):
        Transcript.load(tmp_path / "t")
    assert issubclass(TranscriptError, ValueError) and issubclass(TranscriptError, AsyncdpError)
    assert not issubclass(TranscriptError, ScenarioError)  # a sibling of the scenario errors (issue 13)


def test_malformed_files(tmp_path) -> None:
    np.savez(tmp_path / "bad.npz", x=np.zeros(3))
    with pytest.raises(TranscriptError, match="not an asyncdp-transcript"):
        Transcript.load(tmp_path / "bad.npz")
    (tmp_path / "bad.json").write_text('{"format": "asyncdp-transcript", "transmissions": [{"round": 1}]}')
    with pytest.raises(TranscriptError, match="transmission 0 is malformed"):
        Transcript.load(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError):
        Transcript.load(tmp_path / "missing.npz")


def test_dataframe_layout_and_round_trip(awkward_transcript) -> None:
    tr = awkward_transcript()
    df = tr.to_dataframe()
    assert list(df.columns) == [*COLUMNS, *(f"payload_{j}" for j in range(5))]
    assert len(df) == len(tr)
    y = df[df["channel"] == "y"]
    assert (y["dim"] == 2).all() and y["payload_2"].isna().all()
    assert Transcript.from_dataframe(df) == tr
    full = df[df["channel"] == "z"].drop(columns=["dim", "payload_3", "payload_4"])
    assert Transcript.from_dataframe(full).column("dim").tolist() == [3] * len(full)
    with pytest.raises(TranscriptError, match="lacks columns"):
        Transcript.from_dataframe(df.drop(columns=["lost"]))
    with pytest.raises(TranscriptError, match="payload_0 .. payload_"):
        Transcript.from_dataframe(df.drop(columns=["payload_1"]))
    bad = df.copy()
    bad.loc[0, "receive_time"] = bad.loc[0, "send_time"] - 1.0
    bad.loc[0, "lost"] = False
    with pytest.raises(TranscriptError, match="transmission 0: receive_time"):
        Transcript.from_dataframe(bad)

"""Tests of asyncdp.engine.transcript_io (the file formats and the table form) and of the split from transcript.py.

The round trips through :meth:`Transcript.save` / :meth:`Transcript.load` are
tested in ``test_transcript.py``; here: the module-level functions, the
transcript class they build, the constants shared by both modules, and that
either module may be imported first.
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
from asyncdp.engine.transcript import Transcript, TranscriptError, Transmission


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

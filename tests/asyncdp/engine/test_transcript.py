"""Tests of asyncdp.engine.transcript: recording, queries, eavesdropper views and files."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from asyncdp.errors import AsyncdpError, ScenarioError
from asyncdp.engine.transcript import COLUMNS, Transcript, TranscriptError, Transmission


def _build(seed: int = 0, rounds: int = 4, n: int = 4) -> Transcript:
    """Broadcasts of a 2-vector on "y" to all others (some lost), plus a 3-vector on "z" to one neighbour."""
    rng = np.random.default_rng(seed)
    tr = Transcript()
    for r in range(1, rounds + 1):
        for s in range(n):
            mid, p = tr.new_message_id(), rng.standard_normal(2)
            for v in range(n):
                if v != s:
                    lost = bool(rng.random() < 0.3)
                    tr.append(r, s, v, "y", r + 0.01 * s, None if lost else r + 0.01 * s + rng.random(), lost, p, mid)
            tr.append(r, s, (s + 1) % n, "z", r + 0.5, r + 0.75, False, rng.standard_normal(3), tr.new_message_id())
    return tr


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64).tobytes()


# --------------------------------------------------------------------------- recording


def test_counts_and_columns() -> None:
    tr = _build()
    lost = tr.column("lost")
    assert len(tr) == tr.messages_sent == 4 * 4 * (3 + 1)
    assert tr.messages_lost == int(lost.sum()) > 0
    assert tr.messages_delivered == len(tr) - tr.messages_lost
    assert np.isnan(tr.column("receive_time")[lost]).all()
    assert tr.channels == ["y", "z"]
    assert tr.payloads("y").shape == (48, 2) and tr.payloads("z").shape == (16, 3)
    mixed = tr.payloads()
    assert mixed.shape == (64, 3) and np.isnan(mixed[tr.column("channel") == "y", 2]).all()


def test_append_copies_payload_and_transmissions_are_read_only() -> None:
    tr, buf = Transcript(), np.array([1.0, 2.0])
    tr.append(1, 0, 1, "y", 0.0, 0.5, False, buf, 0)
    buf[0] = 99.0
    t = tr[0]
    assert t.payload.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        t.payload[0] = 5.0
    assert t == Transmission(1, 0, 1, "y", 0.0, 0.5, False, [1.0, 2.0], 0)
    own = Transmission(1, 0, 1, "y", 0.0, 0.5, False, buf, 0)
    buf[1] = -1.0
    assert own.payload.tolist() == [99.0, 2.0] and not own.payload.flags.writeable


def test_iteration_returns_what_was_appended() -> None:
    tr = _build(rounds=2)
    items = list(tr)
    assert len(items) == len(tr) and all(isinstance(t, Transmission) for t in items)
    assert items[-1] == tr[-1] and items[3] == tr[3]
    again = Transcript()
    again.extend(items)
    assert again == tr


def test_append_after_read_then_freeze() -> None:
    tr = _build(rounds=1)
    n = len(tr)
    assert tr.payloads("y").shape[0] == 12
    tr.append(9, 0, 1, "y", 9.0, 9.5, False, [0.0, 0.0], tr.new_message_id())
    assert len(tr) == n + 1 and tr.payloads("y").shape[0] == 13
    tr.freeze()
    assert tr.frozen and len(tr) == n + 1
    with pytest.raises(TranscriptError, match="frozen"):
        tr.append(9, 1, 0, "y", 9.0, 9.5, False, [0.0, 0.0], 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lost=True, receive_time=1.0), "lost transmission.*receive_time"),
        (dict(lost=False, receive_time=None), "receive_time"),
        (dict(lost=False, receive_time=-1.0), "receive_time >= send_time"),
        (dict(payload=[[1.0, 2.0]]), "1-D"),
        (dict(payload=["a"]), "numeric"),
        (dict(sender=-1), "sender"),
        (dict(round=1.5), "round"),
        (dict(channel=""), "channel"),
        (dict(send_time=math.inf), "send_time"),
        (dict(lost=1), "lost"),
        (dict(message_id=-3), "message_id"),
    ],
)
def test_append_validation(kwargs, match) -> None:
    row = dict(
        round=1, sender=0, receiver=1, channel="y", send_time=0.0, receive_time=0.5, lost=False,
        payload=[1.0], message_id=0,
    )
    row.update(kwargs)
    with pytest.raises(TranscriptError, match=match):
        Transcript().append(**row)


def test_for_round_and_select() -> None:
    tr = _build()
    r3 = tr.for_round(3)
    assert len(r3) == 16 and set(r3.column("round").tolist()) == {3}
    assert r3.frozen and len(tr.for_round(99)) == 0
    only_lost = tr.select(tr.column("lost"))
    assert len(only_lost) == only_lost.messages_lost == tr.messages_lost


# --------------------------------------------------------------------------- eavesdropper


def test_observations_of_broadcast() -> None:
    tr = _build()
    obs = tr.observations("y")
    assert sorted(obs) == [(r, s) for r in range(1, 5) for s in range(4)]
    for t in tr:
        if t.channel == "y":
            assert _bits(obs[(t.round, t.sender)]) == _bits(t.payload)
    delivered = tr.observations("y", include_lost=False)
    assert set(delivered) <= set(obs)


def test_unicast_is_detected() -> None:
    tr2 = Transcript()
    tr2.append(1, 0, 1, "u", 0.0, 0.1, False, [1.0], 0)
    tr2.append(1, 0, 2, "u", 0.0, 0.1, False, [2.0], 1)
    with pytest.raises(TranscriptError, match=r"round 1, sender 0.*receivers 1 and 2.*observations_by_link"):
        tr2.observations("u")
    by_link = tr2.observations_by_link("u")
    assert {k: v.tolist() for k, v in by_link.items()} == {(1, 0, 1): [1.0], (1, 0, 2): [2.0]}


def test_signed_zero_counts_as_a_different_payload() -> None:
    tr = Transcript()
    tr.append(1, 0, 1, "y", 0.0, 0.1, False, [0.0], 0)
    tr.append(1, 0, 2, "y", 0.0, 0.1, False, [-0.0], 0)
    with pytest.raises(TranscriptError, match="different payloads"):
        tr.observations("y")


def test_unknown_channel_is_an_error() -> None:
    with pytest.raises(TranscriptError, match=r"channel 'x'.*\['y', 'z'\]"):
        _build().observations("x")
    assert Transcript().observations("x") == {}


# --------------------------------------------------------------------------- tables and files


def _awkward() -> Transcript:
    """Mixed widths, lost messages, NaN/inf payload entries, signed zero and unrounded floats."""
    tr = _build(seed=3)
    tr.append(5, 2, 0, "w", 1 / 3, 1 / 3 + 0.1, False, [-0.0, np.nan, np.inf, -np.inf, 5e-324], tr.new_message_id())
    tr.append(5, 2, 1, "w1", 7.0, None, True, [1.0], tr.new_message_id())
    return tr


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".json"])
def test_file_round_trip_is_exact(tmp_path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    tr = _awkward()
    back = Transcript.load(tr.save(tmp_path / f"t{suffix}"))
    assert back == tr
    for name in ("round", "sender", "receiver", "message_id", "dim", "lost"):
        np.testing.assert_array_equal(back.column(name), tr.column(name))
    assert back.column("channel").tolist() == tr.column("channel").tolist()
    for a, b in zip(tr, back):
        assert _bits(a.payload[~np.isnan(a.payload)]) == _bits(b.payload[~np.isnan(b.payload)])
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


def test_json_is_strict_json(tmp_path) -> None:
    path = _awkward().save(tmp_path / "t.json")
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))
    assert data["format"] == "asyncdp-transcript" and data["transmissions"][-2]["payload"][1] == "NaN"


def test_unknown_suffix(tmp_path) -> None:
    with pytest.raises(TranscriptError, match=r"unknown transcript file suffix '\.csv'.*\.npz, \.parquet, \.json"):
        _build().save(tmp_path / "t.csv")
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


def test_dataframe_layout_and_round_trip() -> None:
    tr = _awkward()
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


def test_transcripts_pickled_by_earlier_versions_still_load():
    """Earlier versions kept one list per field in the state key '_lists'."""
    tr = Transcript()
    tr.append(1, 0, 1, "y", 0.0, 0.1, False, [1.0, 2.0], tr.new_message_id())
    tr.append(1, 0, 2, "y", 0.0, math.nan, True, [1.0, 2.0], 0)
    state = dict(tr.__dict__)
    rows = state.pop("_pending_rows")
    fields = ("round", "sender", "receiver", "channel", "send_time", "receive_time", "lost", "payload", "message_id")
    state["_lists"] = {f: [row[k] for row in rows] for k, f in enumerate(fields)}
    old = Transcript.__new__(Transcript)
    old.__setstate__(state)
    assert old == tr and old.messages_lost == 1
    assert pickle.loads(pickle.dumps(tr)) == tr


def test_append_trusted_is_one_row_of_extend_trusted():
    a, b = Transcript(), Transcript()
    payload = np.array([1.0, 2.0])
    payload.setflags(write=False)
    a.append_trusted(2, 1, 0, "y", 1.5, 1.75, False, payload, 4)
    b.extend_trusted([(2, 1, 0, "y", 1.5, 1.75, False, payload, 4)])
    assert a == b and a.new_message_id() == 5

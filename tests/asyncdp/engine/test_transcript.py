"""Tests of asyncdp.engine.transcript: recording, queries, eavesdropper views, pickles (files: test_transcript_io.py)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from asyncdp.engine.transcript import Transcript, TranscriptError, Transmission


# --------------------------------------------------------------------------- recording


def test_counts_and_columns(build_transcript) -> None:
    tr = build_transcript()
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


def test_iteration_returns_what_was_appended(build_transcript) -> None:
    tr = build_transcript(rounds=2)
    items = list(tr)
    assert len(items) == len(tr) and all(isinstance(t, Transmission) for t in items)
    assert items[-1] == tr[-1] and items[3] == tr[3]
    again = Transcript()
    again.extend(items)
    assert again == tr


def test_append_after_read_then_freeze(build_transcript) -> None:
    tr = build_transcript(rounds=1)
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


def test_for_round_and_select(build_transcript) -> None:
    tr = build_transcript()
    r3 = tr.for_round(3)
    assert len(r3) == 16 and set(r3.column("round").tolist()) == {3}
    assert r3.frozen and len(tr.for_round(99)) == 0
    only_lost = tr.select(tr.column("lost"))
    assert len(only_lost) == only_lost.messages_lost == tr.messages_lost


# --------------------------------------------------------------------------- eavesdropper


def test_observations_of_broadcast(build_transcript, payload_bits) -> None:
    tr = build_transcript()
    obs = tr.observations("y")
    assert sorted(obs) == [(r, s) for r in range(1, 5) for s in range(4)]
    for t in tr:
        if t.channel == "y":
            assert payload_bits(obs[(t.round, t.sender)]) == payload_bits(t.payload)
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


def test_unknown_channel_is_an_error(build_transcript) -> None:
    with pytest.raises(TranscriptError, match=r"channel 'x'.*\['y', 'z'\]"):
        build_transcript().observations("x")
    assert Transcript().observations("x") == {}


# --------------------------------------------------------------------------- pickles


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

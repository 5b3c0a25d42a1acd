"""Exhaustive runs, skipped unless ``pytest --run-slow`` is given (minutes, not seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accounting.replay import replay_loss, sample_transcripts
from asyncdp import load_script
from asyncdp.privacy import replay_rule, replay_setup

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
def test_replay_loss_below_epsilon_over_1e5_transcripts():
    ex = load_script(EXAMPLES / "privacy_check_rendezvous.py", names=("scenario", "adjacent"))
    sc, adj = ex["scenario"], ex["adjacent"]
    setup, P, Pp = replay_setup(sc), replay_rule(sc), replay_rule(adj)
    worst = 0.0
    for seed in range(10):
        losses = replay_loss(sample_transcripts(setup, P, 10_000, seed=seed), setup, P, Pp)
        worst = max(worst, float(losses.max()))
    assert worst <= sc.algorithm.epsilon * (1 + 1e-9)


@pytest.mark.slow
def test_full_size_online_regression_trends(tmp_path):
    from asyncdp.papers.dpsda.reproduce import reproduce_olr

    summary = reproduce_olr(tmp_path)
    failed = [c for c in summary["checks"] if not c["holds"]]
    assert not failed, failed

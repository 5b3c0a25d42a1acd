"""``asyncdp demo``, the README's main job."""

from __future__ import annotations

from asyncdp.cli import main
from asyncdp.experiments.demo import run_demo


def test_demo_end_to_end(tmp_path, capsys):
    out = run_demo(tmp_path, privacy_runs=300, batch_runs=50)
    text = capsys.readouterr().out
    png = (tmp_path / "demo.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert out["privacy"]["verdict"] == "pass" and out["privacy"]["replay_max_loss"] <= 1.0
    assert out["designed_audit_holds"] and not out["realized_audit_holds"]
    assert out["messages_lost"] > 0
    # privacy costs accuracy: the noise-free run is far closer to x* than the private mean
    assert out["noise_free_optimality_error"] < out["batch_optimality_error_mean"]
    assert f"PLD at delta {out['privacy']['delta']:g};" in text  # the delta the tight epsilon is read at, named
    for needle in ("lockstep", "async, lossy", "privacy:", "audit, designed topology: all hold", "demo.png"):
        assert needle in text


def test_demo_cli(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "demo.png").exists()
    assert "-> pass" in capsys.readouterr().out

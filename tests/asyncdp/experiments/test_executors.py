"""Sweep executors (asyncdp.experiments.executors); that every executor gives bitwise the same table is tested in test_sweep.py."""

from __future__ import annotations


def test_worker_processes_are_not_forked():
    from asyncdp.experiments.executors import _process_context

    assert _process_context().get_start_method() in ("forkserver", "spawn")

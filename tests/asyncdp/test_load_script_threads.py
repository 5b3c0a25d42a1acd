"""``load_script`` from two threads at once: the self-load guard is per thread.

The guard against a script that loads itself kept the scripts being loaded in one module-level list: a second thread
loading the same script while the first was still executing it (a threaded Dask worker, a user's thread pool) was
refused with "the script loads itself", and each thread's ``pop`` could remove the other's entry.
"""

from __future__ import annotations

import sys
import threading
import types

from asyncdp import load_script


def test_two_threads_may_load_the_same_script_at_once(tmp_path, monkeypatch):
    sync = types.SimpleNamespace(inside=threading.Event(), gate=threading.Event())
    monkeypatch.setitem(sys.modules, "_load_script_threads_sync", sync)
    script = tmp_path / "slow.py"
    script.write_text("import _load_script_threads_sync as s\ns.inside.set()\ns.gate.wait(10)\n"
                      "from asyncdp.papers.muffliato.rule import Muffliato\n"
                      "scenario = Muffliato.example_scenario()\n")
    errors: list[BaseException] = []

    def load() -> None:
        try:
            load_script(script)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    first = threading.Thread(target=load)
    first.start()
    assert sync.inside.wait(10)  # the first thread is executing the script
    sync.inside.clear()
    second = threading.Thread(target=load)
    second.start()
    sync.inside.wait(2)  # the second thread enters the script too (or was refused before it)
    sync.gate.set()
    first.join(10)
    second.join(10)
    assert errors == []


def test_a_script_that_loads_itself_is_still_refused(tmp_path):
    import pytest

    from asyncdp.errors import ScenarioError

    script = tmp_path / "me.py"
    script.write_text(f"from asyncdp import load_script\nscenario = load_script({str(script)!r})['scenario']\n")
    with pytest.raises(ScenarioError, match="load_script cycle"):
        load_script(script)

"""Shared pytest configuration: Hypothesis profiles and the ``--run-slow`` flag.

Profiles (select with ``HYPOTHESIS_PROFILE=<name>``; ``CI=true`` selects ``ci``):

* ``ci``: derandomized (a green run stays green), 50 examples, no deadline.
* ``dev``: the default locally, 50 random examples, no deadline.
* ``thorough``: 1000 examples, for exhaustive local runs.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=50,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
_default = "ci" if os.environ.get("CI", "").lower() in {"1", "true", "yes"} else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _user_papers_stay_in_their_module():
    """Papers a test module registers (e.g. by running an example script) are dropped when the module ends.

    Tests that enumerate the registry (every algorithm on its example scenario) then see the library's own
    papers and whatever their own module registered, whichever modules an xdist worker ran before them.
    """
    from asyncdp.papers import registered, unregister

    before = set(registered())
    yield
    for name in sorted(set(registered()) - before):
        unregister(name)

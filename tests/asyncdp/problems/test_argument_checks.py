"""Online losses and the nonconvex problems check their arguments through topology.validation (ProblemError)."""

from __future__ import annotations

import math

import pytest

from asyncdp.errors import ProblemError
from asyncdp.problems.nonconvex import NonconvexEstimation, paper_measurements
from asyncdp.problems.online import node_blocks, synthetic_olr


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: node_blocks(0, 1), r"^dim must be >= 1, got 0$"),
        (lambda: node_blocks(4, True), r"^num_nodes must be an integer, got True$"),
        (lambda: synthetic_olr(num_rounds=2.0), r"^num_rounds must be an integer, got 2\.0$"),
        (lambda: synthetic_olr(batch=0), r"^batch must be >= 1, got 0$"),
        (lambda: synthetic_olr(noise_var=-0.1), r"^noise_var must be >= 0, got -0\.1$"),
        (lambda: synthetic_olr(noise_var=math.nan), r"^noise_var must be finite, got nan$"),
        (lambda: synthetic_olr(box=0.0), r"^box must be > 0, got 0\.0$"),
        (lambda: synthetic_olr(box="5"), r"^box must be a real number, got '5'$"),
        (lambda: paper_measurements(0), r"^num_agents must be >= 1, got 0$"),
        (lambda: NonconvexEstimation(paper_measurements(), kappa=math.inf), r"^kappa must be finite, got inf$"),
        (lambda: NonconvexEstimation(paper_measurements(), soft_width=-1), r"^soft_width must be > 0, got -1$"),
    ],
)
def test_bad_arguments_name_parameter_and_value(build, message):
    with pytest.raises(ProblemError, match=message):
        build()

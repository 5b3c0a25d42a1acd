"""Network privacy: what each observer of a linear Gaussian gossip run learns, exactly.

Modules, one topic each:

* :mod:`.gaussian_views`: the exact loss of a Gaussian view under a mean shift
  (Renyi of every order, KL, ``delta(epsilon)``, rank-deficient covariances,
  shifts outside the covariance's range reported as infinite);
* :mod:`.schedule`: :class:`LinearSchedule`, a plain-data realized schedule of
  a linear gossip protocol, and every message as an affine map of data and noise;
* :mod:`.observers`: eavesdropper, ``node:v``, colluding ``nodes:S``,
  ``link:a,b``; their views and exact pairwise losses;
* :mod:`.combination`: combining per-schedule Renyi divergences over sampled
  data-independent schedules, with a one-sided confidence bound;
* :mod:`.muffliato`: the per-pair values of Cyffers, Even, Bellet and
  Massoulié (NeurIPS 2022) as their code computes them, next to the exact
  values, streamed one observer at a time;
* :mod:`.muffliato_gossip`: their gossip protocol (the authors' weights, step
  count and Chebyshev constant, the gossip matrices' rows);
* ``muffliato_graphs``: the four graphs of their figure and the
  shortest-path distances;
* ``row_space``: the orthonormal basis of a view streamed block by block, with
  its ambiguous directions counted (the exact values' default route).

Example:
    >>> import numpy as np
    >>> s = LinearSchedule.from_mixing([np.full((2, 2), 0.5)], noise_scale=1.0)
    >>> pairwise_loss(s, Observer.parse("node:1"), 0).renyi(2.0)
    1.0
"""

from __future__ import annotations

from .combination import CombinedRenyi, combine_renyi
from .gaussian_views import (
    RANGE_RTOL,
    RANK_RTOL,
    GaussianViewLoss,
    delta_from_mu,
    gaussian_view_loss,
    gaussian_view_losses,
    renyi_from_mu,
)
from .observers import (
    ObservedView,
    Observer,
    observed_view,
    pairwise_loss,
    pairwise_losses,
    schedule_averaged_renyi,
)
from .schedule import LinearSchedule, ScheduleError, message_maps

__all__ = [
    "RANGE_RTOL",
    "RANK_RTOL",
    "GaussianViewLoss",
    "gaussian_view_loss",
    "gaussian_view_losses",
    "renyi_from_mu",
    "delta_from_mu",
    "LinearSchedule",
    "ScheduleError",
    "message_maps",
    "Observer",
    "ObservedView",
    "observed_view",
    "pairwise_loss",
    "pairwise_losses",
    "schedule_averaged_renyi",
    "CombinedRenyi",
    "combine_renyi",
]

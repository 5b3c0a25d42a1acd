"""Composition of the releases in a :class:`~accounting.ledger.Ledger`: basic, advanced, RDP and PLD.

The accountant does **not** trust ``Release.claimed_sensitivity``. Every
function takes a ``sensitivity`` argument, the sensitivity the *caller* vouches
for, in one of three forms:

* a float: the same sensitivity for every release;
* a callable ``Release -> float`` (e.g. ``lambda r: huang2015_release_sensitivity(r.round, ...)``);
* a mapping ``(agent, round) -> float``; every release of that agent in that
  round gets that value, a missing key is an error.

To use the algorithm's own claim, pass :func:`claimed` explicitly.
Sensitivities are L1 for Laplace and L2 for Gaussian releases and refer to the
whole released vector, so ``Release.dimension`` never enters. A release with
sensitivity 0 does not depend on the private datum and costs nothing: it is
skipped explicitly (not turned into a zero-noise-multiplier event).

Per release, with ``ratio = sensitivity / scale``: a Laplace release is pure
``ratio``-DP; a Gaussian release is the Gaussian mechanism with
``mu = ratio`` (exact delta(epsilon) curve, :func:`~accounting.mechanisms.gaussian_delta`).
For Laplace, the one-dimensional pair ``Lap(0, b)`` vs ``Lap(Delta, b)`` is
used, as dp_accounting's ``LaplaceDpEvent`` does: exact for pure epsilon; for
(epsilon, delta), shifts split over several coordinates came out dominated by
it in our numerical checks (tests), which is evidence, not a proof. For
Gaussian noise the L2 pair is exact by rotation invariance.

Methods (each returns an epsilon valid at the stated total delta):

* :func:`basic_composition`, :func:`basic_composition_table`: sum of per-release epsilons;
* :func:`advanced_composition`: Dwork-Rothblum-Vadhan (2010) / Kairouz et al. (2015);
* :func:`rdp_epsilon`: Renyi DP via dp_accounting's ``RdpAccountant``;
* :func:`pld_epsilon`, :func:`pld_epsilons`, :func:`pld_epsilon_table`, :func:`pld_delta`,
  :func:`delta_curve`: privacy loss
  distributions (connect-the-dots, pessimistic), the tightest of the four.

Scope: :func:`network_wide` composes the releases of *all* agents: the
guarantee when one private datum can influence every agent's releases (e.g. a
datum of agent i propagates through consensus into everybody's iterates).
:func:`per_agent` composes each agent's releases separately: the guarantee
when only its owner's releases depend on a datum.

Modules: :mod:`.inputs` (sensitivity forms and checks), :mod:`.basic` (basic
and advanced), :mod:`.rdp`, :mod:`.pld` (PLD construction and queries),
:mod:`.report` (the scopes, :class:`CompositionReport` and :func:`compose`).
Every name is importable from :mod:`accounting.composition` itself.
"""

from __future__ import annotations

from .basic import advanced_composition, basic_composition, basic_composition_table
from .inputs import Sensitivity, claimed
from .pld import delta_curve, pld_delta, pld_epsilon, pld_epsilon_table, pld_epsilons
from .rdp import rdp_epsilon
from .report import METHODS, CompositionReport, compose, network_wide, per_agent


__all__ = [
    "Sensitivity",
    "claimed",
    "basic_composition",
    "basic_composition_table",
    "advanced_composition",
    "rdp_epsilon",
    "pld_epsilon",
    "pld_epsilons",
    "pld_epsilon_table",
    "pld_delta",
    "delta_curve",
    "per_agent",
    "network_wide",
    "CompositionReport",
    "compose",
    "METHODS",
]

"""Black-box auditing of any mechanism from samples of its outputs under neighbouring inputs.

* :func:`audit_samples` (:mod:`.samples`): two arrays of outputs (any shape,
  numeric or categorical), a claimed ``(epsilon, delta)`` and a confidence ->
  a :class:`SampleAuditReport` with a certified epsilon lower bound, a
  certified delta lower bound at the claimed epsilon, the event and the
  counts. Exact event search for small discrete outputs (:mod:`.events`), a
  logistic-regression score (:mod:`.classifier`, :mod:`.features`) with the
  DP-Sniper threshold-randomized event (:mod:`.sniper`) otherwise; honest
  train/certify split and Clopper–Pearson bounds with a union bound
  (:mod:`.certify`).
* :func:`audit_mechanism` (:mod:`.mechanism`): samples a callable
  ``mechanism(data, rng)`` on a pair of inputs (seeded, in blocks, vectorized
  when the callable takes ``size``) and audits the samples.
* :mod:`.testbed`: Laplace, Gaussian and broken mechanisms written from their
  published definitions, with the neighbouring inputs used in the tests and
  the benchmark.

Heavy libraries (scikit-learn, scipy.stats) load only when an audit runs.
"""

from __future__ import annotations

from .certify import CertifiedEvent, certify_event, per_bound_alpha
from .mechanism import audit_mechanism, draw_samples
from .report import SampleAuditReport
from .samples import METHODS, AuditInputError, audit_samples

__all__ = ["audit_samples", "audit_mechanism", "draw_samples", "SampleAuditReport", "AuditInputError", "METHODS",
           "CertifiedEvent", "certify_event", "per_bound_alpha"]

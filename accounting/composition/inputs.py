"""What every composition method takes: the caller's sensitivity, the argument checks, the ledger as ratios.

The sensitivity comes in three forms (:data:`Sensitivity`; see
:mod:`accounting.composition`); :func:`claimed` is the one that trusts the
algorithm's own claim, and must be passed explicitly. Each method reduces
the ledger to counts of ``sensitivity / scale`` per mechanism (releases of
sensitivity 0 are free and skipped).

Example:
    >>> claimed(Release(0, 1, 1.0, "gaussian", 2.0, 3, claimed_sensitivity=0.25))
    0.25
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from dp_accounting import dp_event

from topology.validation import check_nonnegative, check_open_unit, check_real

from ..errors import AccountingError, PrivacyParameterError
from ..ledger import Ledger, Release
from ..mechanisms import _gaussian_epsilon_mu

__all__ = ["Sensitivity", "claimed"]

Sensitivity = float | Callable[[Release], float] | Mapping[tuple[int, int], float]
"""A float, a callable ``Release -> float`` or a mapping ``(agent, round) -> float``."""

# --------------------------------------------------------------------------- sensitivities


def claimed(release: Release) -> float:
    """The algorithm's claimed sensitivity of a release, for callers who choose to trust it.

    Pass it explicitly as ``sensitivity=claimed``; the accountant never uses it
    on its own.

    Args:
        release: a ledger record.

    Returns:
        ``release.claimed_sensitivity``.

    Raises:
        PrivacyParameterError: the release claims no sensitivity (NaN).

    Example:
        >>> claimed(Release(0, 1, 1.0, "laplace", 2.0, 1, claimed_sensitivity=0.5))
        0.5
    """
    s = release.claimed_sensitivity
    if s is None or math.isnan(s):
        raise PrivacyParameterError(
            f"agent {release.agent}, round {release.round}: the release claims no sensitivity "
            f"(claimed_sensitivity={s!r})"
        )
    return float(s)
def _sensitivity_of(release: Release, sensitivity: Sensitivity) -> float:
    if isinstance(sensitivity, Mapping):
        key = (release.agent, release.round)
        if key not in sensitivity:
            raise PrivacyParameterError(
                f"sensitivity mapping has no entry for (agent, round) = {key!r}"
            )
        value: Any = sensitivity[key]
    elif callable(sensitivity):
        value = sensitivity(release)
    else:
        value = sensitivity
    return check_nonnegative(value, "sensitivity", error=PrivacyParameterError,
                             where=f"agent {release.agent}, round {release.round}")


def _check_sensitivity_arg(sensitivity: object) -> None:
    if isinstance(sensitivity, Mapping) or callable(sensitivity):
        return
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, float, np.integer, np.floating)):
        raise PrivacyParameterError(
            f"sensitivity must be a float, a callable Release -> float or a mapping (agent, round) -> float, "
            f"got {sensitivity!r}"
        )


def _ratios(ledger: Ledger, sensitivity: Sensitivity) -> tuple[Counter[float], Counter[float]]:
    """Counts of ``sensitivity / scale`` per mechanism, zero-sensitivity releases skipped."""
    if not isinstance(ledger, Ledger):
        raise AccountingError(f"expected a Ledger, got {type(ledger).__name__}")
    _check_sensitivity_arg(sensitivity)
    lap: Counter[float] = Counter()
    gau: Counter[float] = Counter()
    for r in ledger:
        s = _sensitivity_of(r, sensitivity)
        if s == 0:
            continue  # does not depend on the private datum: free
        ratio = s / r.scale
        if not math.isfinite(ratio):
            raise PrivacyParameterError(
                f"agent {r.agent}, round {r.round}: sensitivity / scale = {s!r} / {r.scale!r} is not finite"
            )
        (lap if r.mechanism == "laplace" else gau)[ratio] += 1
    return lap, gau


def _ratio_multisets(lap: Counter[float], gau: Counter[float]) -> tuple[tuple[tuple[float, int], ...], ...]:
    """The multisets of the Laplace and the Gaussian ratios, as a key (what order-free compositions read)."""
    return tuple(sorted(lap.items())), tuple(sorted(gau.items()))


# --------------------------------------------------------------------------- argument checks


def _check_delta(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A delta in (0, 1), or in [0, 1) with ``allow_zero``."""
    if not allow_zero:
        return check_open_unit(value, name, error=PrivacyParameterError)
    v = check_real(value, name, error=PrivacyParameterError)
    if not 0 <= v < 1:
        raise PrivacyParameterError(f"{name} must lie in [0, 1), got {value!r}")
    return v


def _check_epsilon(name: str, value: object) -> float:
    return check_nonnegative(value, name, error=PrivacyParameterError)


def _check_interval(h: object) -> float:
    """The PLD loss grid ``h``, in (0, 1]."""
    v = check_real(h, "value_discretization_interval", error=PrivacyParameterError)
    if not 0 < v <= 1:
        raise PrivacyParameterError(f"value_discretization_interval must lie in (0, 1], got {h!r}")
    return v


def _gaussian_share_epsilons(gau: Counter[float], delta: float, what: str) -> tuple[list[float], list[int]]:
    """Per distinct Gaussian ratio: epsilon at an equal share ``delta / k`` of the delta budget."""
    k = sum(gau.values())
    if k and delta <= 0:
        raise PrivacyParameterError(
            f"{what}: the ledger has {k} Gaussian release(s) with nonzero sensitivity, "
            f"which need delta > 0, got delta={delta!r}"
        )
    share = delta / k if k else delta
    # a share that underflows to 0 (e.g. delta = 5e-324): a Gaussian release has no finite epsilon at delta 0
    eps = [_gaussian_epsilon_mu(mu, share) if share > 0 else math.inf for mu in gau]
    return eps, list(gau.values())


# --------------------------------------------------------------------------- dp_accounting events (RDP, PLD accountant)


def _events(lap: Counter[float], gau: Counter[float]) -> dp_event.DpEvent:
    """One ``ComposedDpEvent`` of self-composed Laplace / Gaussian events (noise multiplier = 1 / ratio)."""
    events: list[dp_event.DpEvent] = []
    for ratio, n in lap.items():
        e = dp_event.LaplaceDpEvent(noise_multiplier=1.0 / ratio)
        events.append(e if n == 1 else dp_event.SelfComposedDpEvent(e, n))
    for ratio, n in gau.items():
        e = dp_event.GaussianDpEvent(noise_multiplier=1.0 / ratio)
        events.append(e if n == 1 else dp_event.SelfComposedDpEvent(e, n))
    return dp_event.ComposedDpEvent(events)

"""Renyi-DP composition of a ledger's releases, through dp_accounting's ``RdpAccountant``.

The ledger becomes one dp_accounting ``ComposedDpEvent`` (the same one the
``PLDAccountant`` cross-check of :mod:`.pld` composes).

Example:
    >>> led = Ledger([Release(0, 1, 1.0, "gaussian", 1.0, 1)])
    >>> rdp_epsilon(led, 0.0, 1e-5)
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dp_accounting.rdp import rdp_privacy_accountant

from ..errors import PrivacyParameterError
from ..ledger import Ledger, Release  # noqa: F401  (Release: docstring examples)
from .inputs import Sensitivity, _check_delta, _events, _ratios

__all__ = ["rdp_epsilon"]


def _rdp_accountant(ledger: Ledger, sensitivity: Sensitivity,
                    orders: Sequence[float] | None) -> rdp_privacy_accountant.RdpAccountant | None:
    lap, gau = _ratios(ledger, sensitivity)
    if not lap and not gau:
        return None
    if orders is not None:
        orders = [float(o) for o in orders]
        if not orders or any(not (o > 1 and math.isfinite(o)) for o in orders):
            raise PrivacyParameterError(f"RDP orders must be a nonempty list of finite numbers > 1, got {orders!r}")
    acc = rdp_privacy_accountant.RdpAccountant(orders=orders)
    acc.compose(_events(lap, gau))
    return acc


def rdp_epsilon(ledger: Ledger, sensitivity: Sensitivity, delta: float,
                orders: Sequence[float] | None = None) -> float:
    """Epsilon from Renyi-DP composition (dp_accounting ``RdpAccountant``).

    Each release becomes ``LaplaceDpEvent(scale / sensitivity)`` or
    ``GaussianDpEvent(sigma / sensitivity)``; identical events are grouped in a
    ``SelfComposedDpEvent`` and all composed in one ``ComposedDpEvent``. The
    RDP-to-DP conversion (Canonne, Kamath & Steinke 2020, Prop. 12) is looser
    than PLD accounting.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see module docstring).
        delta: target delta in (0, 1).
        orders: RDP orders (> 1); ``None`` for dp_accounting's defaults (1.1 ... 1024).

    Returns:
        epsilon.

    Raises:
        PrivacyParameterError: bad delta, orders or sensitivities.

    Example:
        >>> from accounting.composition.pld import pld_epsilon
        >>> led = Ledger([Release(0, t, float(t), "gaussian", 10.0, 1) for t in range(1, 101)])
        >>> round(rdp_epsilon(led, 1.0, 1e-5), 3), round(pld_epsilon(led, 1.0, 1e-5), 3)
        (4.729, 4.377)
    """
    d = _check_delta("delta", delta)
    acc = _rdp_accountant(ledger, sensitivity, orders)
    return 0.0 if acc is None else float(acc.get_epsilon(d))

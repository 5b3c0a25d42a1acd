"""The accountant's own Rényi DP and zCDP, from its own sensitivities, and whether they confirm a claim.

The accountant never uses the algorithm's claimed sensitivity unless told to
(:mod:`accounting.composition`); here too every function takes the
sensitivity the caller vouches for.

* :func:`ledger_rdp`: the RDP curve of a ledger's releases composed by
  dp_accounting's ``RdpAccountant`` (``GaussianDpEvent`` and
  ``LaplaceDpEvent``, exact per release: ``alpha mu^2 / 2`` and Mironov's
  Laplace form), at the orders asked for.
* :func:`ledger_zcdp`: ``rho = sum mu_k^2 / 2 + rho_L``: a Gaussian
  release is ``mu^2/2``-zCDP and zCDP composes additively (Bun and Steinke,
  TCC 2016, Props. 1.6 and Lemma 2.3); ``rho_L`` of the Laplace releases is
  ``sup_alpha R(alpha) / alpha`` of their composed RDP curve ``R`` (Mironov's
  exact form), bounded above on a grid of orders (:func:`laplace_zcdp`), and
  never above ``sum r_j^2 / 2`` (an ``r``-DP release is ``r^2/2``-zCDP, Bun
  and Steinke, Prop. 1.4).
* :func:`accountant_confirms`: whether those bounds imply a claim of any form;
  :func:`accountant_confirms_all`: whether they do on each of several ledgers
  (one per agent whose change the claim covers), the worst one reported.

Amplification by subsampling is out of scope: every release is accounted on
the whole data set.

Example:
    >>> from accounting.ledger import Ledger, Release
    >>> led = Ledger([Release(0, t, float(t), "gaussian", 2.0, 1) for t in (1, 2)])
    >>> ledger_zcdp(led, 1.0), ledger_rdp(led, 1.0, orders=[4.0])[1].tolist()
    (0.25, [1.0])
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant

from .claim_forms import as_form
from .composition.inputs import Sensitivity, _events, _ratios
from .composition.rdp import _rdp_accountant
from .errors import PrivacyParameterError
from .ledger import Ledger

__all__ = ["ledger_rdp", "ledger_zcdp", "laplace_zcdp", "Confirmation", "accountant_confirms", "accountant_confirms_all"]


def ledger_rdp(ledger: Ledger, sensitivity: Sensitivity,
               orders: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The composed RDP curve of the ledger (dp_accounting ``RdpAccountant``).

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see :mod:`accounting.composition`).
        orders: orders ``> 1``; ``None`` for dp_accounting's defaults.

    Returns:
        ``(orders, epsilons)`` arrays (epsilons 0 for an empty or all-free ledger).

    Raises:
        PrivacyParameterError: bad orders or sensitivities.

    Example:
        >>> from accounting.ledger import Ledger, Release
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 1.0, 1)])
        >>> [round(float(v), 4) for v in ledger_rdp(led, 1.0, orders=[2.0, 1e6])[1]]
        [0.6191, 1.0]
    """
    acc = _rdp_accountant(ledger, sensitivity, orders)
    if acc is None:
        o = np.asarray(orders if orders is not None else [1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], dtype=float)
        return o, np.zeros_like(o)
    return np.asarray(acc.orders, dtype=float), np.asarray(acc.rdp, dtype=float)


ZCDP_ORDERS: tuple[float, ...] = tuple(float(a) for a in 1.0 + np.geomspace(1e-4, 1e4, 801))
"""The orders at which :func:`laplace_zcdp` evaluates the Laplace releases' RDP curve."""


@functools.lru_cache(maxsize=4096)
def _laplace_curve(ratio: float) -> np.ndarray:
    """The RDP curve of one Laplace release of ``ratio`` at ``ZCDP_ORDERS`` (dp_accounting's
    ``LaplaceDpEvent``), computed once per ratio (some 14 ms: the agents of a check share their ratios).
    Read-only."""
    acc = rdp_privacy_accountant.RdpAccountant(orders=list(ZCDP_ORDERS))
    acc.compose(_events(Counter({ratio: 1}), Counter()))
    curve = np.asarray(acc.rdp, dtype=float)
    curve.setflags(write=False)
    return curve


def laplace_zcdp(lap: Counter[float]) -> float:
    """An upper bound on ``sup_{alpha > 1} R(alpha) / alpha``: the ``rho`` of zCDP of Laplace releases.

    ``R`` is the composed RDP curve of releases of ratios ``r`` (``n`` of each;
    dp_accounting's ``LaplaceDpEvent``, Mironov, CSF 2017, Prop. 6), evaluated
    at ``ZCDP_ORDERS`` ``a_0 < ... < a_m``. ``R`` does not decrease with
    the order (van Erven and Harremoës, IEEE Trans. Inf. Theory 2014, Thm. 3),
    so ``R(alpha) / alpha <= R(a_(i+1)) / a_i`` on ``[a_i, a_(i+1)]``,
    ``<= R(a_0)`` on ``(1, a_0]`` and ``<= sum n r / a_m`` beyond ``a_m``
    (``R <= D_inf = sum n r``): the largest of these is a bound, not an
    estimate. The result is also at most ``sum n r^2 / 2`` (Bun and Steinke,
    TCC 2016, Prop. 1.4): the bound of pure DP, which the curve improves on
    (four releases of ratio 0.4: about 0.2813 instead of 0.32).

    Args:
        lap: ``{r: n}``, ratios ``sensitivity / scale > 0`` and counts.

    Returns:
        ``rho >= 0`` (0 for no release).

    Example:
        >>> from collections import Counter
        >>> round(laplace_zcdp(Counter({0.4: 4})), 4), 4 * 0.4**2 / 2
        (0.2813, 0.32000000000000006)
    """
    if not lap:
        return 0.0
    pure = math.fsum(r * r * n / 2 for r, n in lap.items())
    a = np.asarray(ZCDP_ORDERS, dtype=float)
    curve = np.sum([n * _laplace_curve(float(r)) for r, n in lap.items()], axis=0)  # RDP adds over releases
    tail = math.fsum(r * n for r, n in lap.items()) / a[-1]
    bound = max(float(curve[0]), float(np.max(curve[1:] / a[:-1])), tail)
    return min(pure, bound)


def ledger_zcdp(ledger: Ledger, sensitivity: Sensitivity) -> float:
    """``rho`` of the ledger: ``sum mu_k^2 / 2`` (Gaussian) plus :func:`laplace_zcdp` of the Laplace releases.

    Args:
        ledger: the releases.
        sensitivity: float, callable or mapping (see :mod:`accounting.composition`).

    Returns:
        ``rho >= 0``.

    Raises:
        PrivacyParameterError: bad sensitivities.

    Example:
        >>> from accounting.ledger import Ledger, Release
        >>> round(ledger_zcdp(Ledger([Release(0, 1, 1.0, "laplace", 2.0, 1)]), 1.0), 4)  # 0.125 from pure DP
        0.1065
    """
    lap, gau = _ratios(ledger, sensitivity)
    return math.fsum(r * r * n / 2 for r, n in gau.items()) + laplace_zcdp(lap)


@dataclass(frozen=True)
class Confirmation:
    """Whether the accountant's own bound implies a claim.

    Attributes:
        confirmed: the accountant's bound is within the claim.
        form: the claim's form.
        method: ``"basic composition"``, ``"pld"``, ``"rdp"`` or ``"zcdp"``.
        accountant: the accountant's value (epsilon, RDP epsilon at the claimed order, or rho).
        claimed: the claim's value in the same unit.
        reason: one line for the report.
    """

    confirmed: bool
    form: str
    method: str
    accountant: float
    claimed: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field (``inf`` as the string ``"inf"``)."""
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in self.__dict__.items()}


def accountant_confirms(claim: Any, ledger: Ledger, sensitivity: Sensitivity, *, rtol: float = 1e-9,
                        value_discretization_interval: float = 1e-4) -> Confirmation:
    """Whether the accountant's composition, from its own sensitivity, implies the claim.

    * pure ``epsilon``: basic composition of Laplace releases (a ledger with
      Gaussian releases is never pure);
    * ``(epsilon, delta)``: PLD composition (pessimistic) at the claimed delta;
    * ``(alpha, epsilon)``-RDP: :func:`ledger_rdp` at the claimed order;
    * ``rho``-zCDP: :func:`ledger_zcdp`.

    Args:
        claim: a claim form, an ``(epsilon, delta)`` pair or a :class:`~accounting.claims.Claim`.
        ledger: the releases (the scope is the caller's: network-wide or one agent's).
        sensitivity: the sensitivity the caller vouches for.
        rtol: relative slack for rounding, ``>= 0``.
        value_discretization_interval: the PLD grid.

    Returns:
        A :class:`Confirmation`.

    Raises:
        PrivacyParameterError: bad claim or sensitivities.

    Example:
        >>> from accounting.claim_forms import RenyiDP
        >>> from accounting.ledger import Ledger, Release
        >>> led = Ledger([Release(0, 1, 1.0, "gaussian", 2.0, 1)])
        >>> accountant_confirms(RenyiDP(4.0, 0.5), led, 1.0).confirmed, accountant_confirms(RenyiDP(4.0, 0.4), led, 1.0).confirmed
        (True, False)
    """
    from .composition.basic import basic_composition
    from .composition.pld import pld_epsilon

    form = as_form(claim)
    if form.form == "pure":
        _, gau = _ratios(ledger, sensitivity)
        value = math.inf if gau else basic_composition(ledger, sensitivity, 0.0)
        method, claimed = "basic composition", float(form.epsilon)  # type: ignore[union-attr]
    elif form.form == "approximate":
        value = pld_epsilon(ledger, sensitivity, form.delta, value_discretization_interval)  # type: ignore[union-attr]
        method, claimed = "pld", float(form.epsilon)  # type: ignore[union-attr]
    elif form.form == "renyi":
        value = float(ledger_rdp(ledger, sensitivity, orders=[form.alpha])[1][0])  # type: ignore[union-attr]
        method, claimed = "rdp", float(form.epsilon)  # type: ignore[union-attr]
    elif form.form == "zcdp":
        value, method, claimed = ledger_zcdp(ledger, sensitivity), "zcdp", float(form.rho)  # type: ignore[union-attr]
    else:  # pragma: no cover - as_form returns one of the four
        raise PrivacyParameterError(f"unknown claim form {form!r}")
    ok = value <= claimed * (1 + rtol)
    word = "within" if ok else "exceeds"
    reason = f"the accountant's {method} value {value:.6g} {word} the claim {form.describe()} ({claimed:.6g})"
    return Confirmation(bool(ok), form.form, method, float(value), claimed, reason)


def accountant_confirms_all(claim: Any, ledgers: Sequence[Ledger], sensitivity: Sensitivity, *, rtol: float = 1e-9,
                            value_discretization_interval: float = 1e-4) -> tuple[int, Confirmation]:
    """:func:`accountant_confirms` on each ledger; the first one that does not confirm the claim, else the largest.

    A claim bounds the change of *any* agent's data: every agent's releases
    (each a ledger here) must meet it, not only those of the agent a given
    pair changes (agents may release differently, e.g. one noised copy per
    receiver in unicast mode). Ledgers with the same ``sensitivity / scale``
    ratios per mechanism have the same composition and are confirmed once.

    Args:
        claim: a claim form, an ``(epsilon, delta)`` pair or a :class:`~accounting.claims.Claim`.
        ledgers: one or more ledgers (the caller's scopes).
        sensitivity: the sensitivity the caller vouches for.
        rtol: relative slack for rounding, ``>= 0``.
        value_discretization_interval: the PLD grid.

    Returns:
        ``(index, confirmation)``: the first ledger of the worst confirmation (not confirmed before confirmed,
        then the largest accountant's value).

    Raises:
        PrivacyParameterError: no ledger, a bad claim or bad sensitivities.

    Example:
        >>> from accounting.claim_forms import ZeroConcentratedDP
        >>> from accounting.ledger import Ledger, Release
        >>> one = Ledger([Release(0, 1, 1.0, "gaussian", 2.0, 1)])
        >>> four = Ledger([Release(3, 1, 1.0, "gaussian", 2.0, 1, receiver=j) for j in range(4)])
        >>> k, conf = accountant_confirms_all(ZeroConcentratedDP(0.125), [one, four], 1.0)
        >>> k, conf.confirmed, conf.accountant
        (1, False, 0.5)
    """
    items = list(ledgers)
    if not items:
        raise PrivacyParameterError("accountant_confirms_all: no ledger to confirm the claim on")
    done: dict[tuple[Any, ...], Confirmation] = {}
    best: tuple[int, Confirmation] | None = None
    for k, ledger in enumerate(items):
        lap, gau = _ratios(ledger, sensitivity)
        key = (tuple(sorted(lap.items())), tuple(sorted(gau.items())))
        if key not in done:
            done[key] = accountant_confirms(claim, ledger, sensitivity, rtol=rtol,
                                            value_discretization_interval=value_discretization_interval)
        conf = done[key]
        if best is None or (not conf.confirmed, conf.accountant) > (not best[1].confirmed, best[1].accountant):
            best = (k, conf)
    assert best is not None
    return best

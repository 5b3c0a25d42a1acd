"""Importance sampling of lockstep Gaussian transcripts, tilted toward high privacy loss, with exact weights.

:mod:`accounting.tilting` tilts pairs with known, fixed shifts. When the
shift of a round depends on the earlier messages (a projection or clipping
active in some runs, a nonlinear update), the profile has no closed form, but
the tilt can be applied round by round. With :class:`accounting.replay.ReplayRule`
recursions for ``P`` and ``P'`` replayed on the same messages, round ``t``'s
messages are ``N(m_t, s_t^2 I)`` under ``P`` and ``N(m'_t, s_t^2 I)`` under
``P'`` given the past, and the proposal draws

    y_t ~ N(m_t + lambda (m_t - m'_t), s_t^2 I),

the exponential tilt ``p_t^(1+lambda) p'_t^(-lambda)`` of the round (normalizer
``log M_t = lambda (1 + lambda) mu_t^2 / 2``, ``mu_t = ||m_t - m'_t|| / s_t``).
The proposal is a product of conditionals, so the likelihood ratio is exact:

    log p_P(y) - log q(y) = sum_t (lambda (1 + lambda) mu_t^2 / 2 - lambda l_t),

with ``l_t`` round ``t``'s privacy loss (noise-free rounds: loss 0 or ``+inf``
as in :mod:`accounting.replay`, weight factor 1). If the pair's composed
``mu = sqrt(sum_t mu_t^2)`` never exceeds ``mu_bound``, every weighted summand
is at most the cap of :func:`accounting.tilting.chernoff_log_cap` at
``mu_bound``; :func:`accounting.delta_bounds.importance_delta_lower` truncates
at that cap, so its bound holds whatever the realized shifts (the cap only
decides how tight it is). Take ``mu_bound`` from the accountant's own
sensitivities, or from plain replayed runs drawn independently of these.

Scope: broadcast messages, lockstep rounds, Gaussian noise (a Laplace round
would need a piecewise tilt per coordinate).

Example:
    >>> class Shift:  # one agent, message = state, state never changes
    ...     def __init__(self, a): self.a = a
    ...     def initial_state(self, runs): return np.full((runs, 1, 1), self.a)
    ...     def message_mean(self, x, t): return x
    ...     def next_state(self, x, mixed, t): return x
    >>> from accounting.replay import ReplaySetup
    >>> setup = ReplaySetup([np.eye(1)] * 2, "gaussian", np.ones(2))
    >>> s = tilted_transcripts(setup, Shift(0.0), Shift(1.0), 5, epsilon=2.0, mu_bound=2 ** 0.5, seed=0)
    >>> s.transcripts.shape, s.realized_mu.round(6).tolist()[:2]
    ((5, 2, 1, 1), [1.414214, 1.414214])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from topology.validation import check_integer, check_nonnegative

from .errors import PrivacyParameterError, UnknownMechanismError
from .replay import ReplayRule, ReplaySetup, _mix, _noise_free_ratio, check_point_masses, log_density
from .tilting import chernoff_log_cap, chernoff_tilt

__all__ = ["TiltedTranscripts", "tilted_transcripts"]


@dataclass(frozen=True)
class TiltedTranscripts:
    """Transcripts drawn under the round-by-round tilt, with their exact losses and weights.

    Attributes:
        transcripts: ``(R, T, N, n)`` messages.
        losses: exact privacy losses ``L`` (as :func:`accounting.replay.replay_loss` gives).
        log_weights: ``log p_P(y) - log q(y)``.
        cap: the truncation level for :func:`accounting.delta_bounds.importance_delta_lower`.
        tilt: ``lambda``.
        realized_mu: per run ``sqrt(sum_t mu_t^2)`` (above ``mu_bound`` the cap truncates).
    """

    transcripts: np.ndarray
    losses: np.ndarray
    log_weights: np.ndarray
    cap: float
    tilt: float
    realized_mu: np.ndarray


def tilted_transcripts(setup: ReplaySetup, rule: ReplayRule, rule_prime: ReplayRule, runs: int, *, epsilon: float,
                       mu_bound: float, seed: int = 0, tilt: float | None = None) -> TiltedTranscripts:
    """Draw ``runs`` lockstep broadcast transcripts under the tilt toward ``P``'s high-loss tail.

    See the module docstring for the proposal and why the weights are exact.
    Noise is drawn from ``numpy.random.default_rng(seed)``, one block per
    round with a positive scale, in round order.

    Args:
        setup: weights and per-round Gaussian noise standard deviations.
        rule: the recursion under ``P``; ``rule_prime``: under ``P'``.
        runs: ``>= 2``.
        epsilon: where ``delta`` is to be bounded (``>= 0``).
        mu_bound: the composed ``mu`` the pair should not exceed (``> 0``); sets the tilt and the cap.
        seed: the generator's seed.
        tilt: ``lambda >= 0``; ``None`` for :func:`accounting.tilting.chernoff_tilt` at ``mu_bound``.

    Returns:
        A :class:`TiltedTranscripts`.

    Raises:
        UnknownMechanismError: a Laplace setup.
        PrivacyParameterError: bad runs, epsilon, mu_bound or tilt.
        AccountingError: noise-free rounds whose messages match neither problem's.
    """
    if setup.mechanism != "gaussian":
        raise UnknownMechanismError(f"tilted transcripts need Gaussian noise, got mechanism {setup.mechanism!r}")
    n = check_integer(runs, "runs", minimum=2, error=PrivacyParameterError)
    eps = check_nonnegative(epsilon, "epsilon", error=PrivacyParameterError)
    mb = check_nonnegative(mu_bound, "mu_bound", error=PrivacyParameterError)
    if mb == 0:
        raise PrivacyParameterError("mu_bound must be > 0 (a pair with no shift has delta = 0)")
    lam = chernoff_tilt(eps, gaussian_mus=[mb]) if tilt is None else \
        check_nonnegative(tilt, "tilt", error=PrivacyParameterError)
    rng = np.random.default_rng(seed)
    x, xp = rule.initial_state(n), rule_prime.initial_state(n)
    out = np.empty((n, setup.horizon) + x.shape[1:])
    contributions = np.empty((n, setup.horizon))
    log_w = np.zeros(n)
    mu2 = np.zeros(n)
    for t in range(1, setup.horizon + 1):
        b = setup.scales[t - 1]
        mean, mean_p = rule.message_mean(x, t), rule_prime.message_mean(xp, t)
        if b == 0:
            yt = np.array(mean, dtype=float)
            contributions[:, t - 1] = _noise_free_ratio(yt, mean, mean_p, None, t)
        else:
            d = mean - mean_p
            yt = mean + lam * d + rng.normal(0.0, b, size=mean.shape)
            lt = log_density(yt - mean, "gaussian", b) - log_density(yt - mean_p, "gaussian", b)
            m2 = (d * d).sum(axis=(-1, -2)) / (b * b)
            contributions[:, t - 1] = lt
            log_w += lam * (1.0 + lam) * m2 / 2.0 - lam * lt
            mu2 += m2
        out[:, t - 1] = yt
        mixed = _mix(setup.matrix(t), yt)
        x, xp = rule.next_state(x, mixed, t), rule_prime.next_state(xp, mixed, t)
    check_point_masses(contributions, "transcript")
    cap = math.exp(chernoff_log_cap(lam, eps, gaussian_mus=[mb]))
    return TiltedTranscripts(out, contributions.sum(axis=1), log_w, cap, lam, np.sqrt(mu2))

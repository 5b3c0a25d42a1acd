"""Importance sampling of Gaussian transcripts, tilted toward high privacy loss, with exact weights.

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

:func:`tilted_scheduled_transcripts` applies the same tilt release by
release on realized schedules (deadline and asynchronous runs, which read
messages of other rounds); :func:`tilted_transcripts` is its lockstep case.

Unicast messages (every receiver its own noisy copy, ``(R, T, N, N, d)``):
each copy ``i -> j`` is a release of its own, ``N(m_i, s_t^2 I)`` under ``P``
given the past and ``N(m'_i, s_t^2 I)`` under ``P'``, with its own standard
normal draw (the engine's noise, which the replay's density and the noise
conformance test take as independent per copy). The proposal moves each copy
by ``lambda (m_i - m'_i)``, its own shift: the sums above run over copies,
``mu_t^2`` is the sum of the copies' ``||m_i - m'_i||^2 / s_t^2`` and ``l_t``
of their losses, and the weights are exact for the same reason (a product of
per-copy conditionals, unit Jacobian). A receiver's combination reads its own
copy; a sender's self term is the average of the copies it sent, as in
:mod:`accounting.scheduled_replay`.

Scope: Gaussian noise (a Laplace round would need a piecewise tilt per
coordinate).

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
from typing import Any

import numpy as np
import scipy.sparse as sp

from topology.validation import check_integer, check_nonnegative

from .errors import PrivacyParameterError, UnknownMechanismError
from .replay import ReplayRule, ReplaySetup
from .tilting import chernoff_log_cap, chernoff_tilt

_LOG_MAX = math.log(np.finfo(float).max)
"""The log of the largest float: a cap above it is ``inf``."""

__all__ = ["TiltedTranscripts", "tilted_transcripts", "ScheduledTilt", "tilted_scheduled_transcripts"]


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
    The lockstep case of :func:`tilted_scheduled_transcripts` (one
    implementation of the tilt): the topology's weights are every run's
    schedule; noise is drawn from ``numpy.random.default_rng(seed)``.

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
    from .replay_inputs import ChannelNoise

    if setup.mechanism != "gaussian":
        raise UnknownMechanismError(f"tilted transcripts need Gaussian noise, got mechanism {setup.mechanism!r}")
    n = check_integer(runs, "runs", minimum=2, error=PrivacyParameterError)
    shape = np.shape(rule.message_mean(rule.initial_state(1), 1))[1:]
    lockstep = _LockstepSchedule(setup, shape[0])
    out = tilted_scheduled_transcripts({"y": np.zeros((n, setup.horizon) + tuple(shape))}, [lockstep] * n,
                                       {"y": ChannelNoise("gaussian", setup.scales)}, _OneChannel(rule),
                                       _OneChannel(rule_prime), epsilon=epsilon, mu_bound=mu_bound, seed=seed, tilt=tilt)
    return TiltedTranscripts(out.messages["y"], out.losses, out.log_weights, out.cap, out.tilt, out.realized_mu)


class _LockstepSchedule:
    """The topology's weights of every round as a realized schedule (every combination reads its own round)."""

    def __init__(self, setup: ReplaySetup, agents: int) -> None:
        self.setup, self.agents = setup, agents

    def dense(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        w = self.setup.matrix(t)
        return (w.toarray() if sp.issparse(w) else np.asarray(w, dtype=float)), np.full((self.agents,) * 2, t)


class _OneChannel:
    """A :class:`~accounting.replay.ReplayRule` as a one-channel :class:`~accounting.replay_inputs.ChannelRule`."""

    def __init__(self, rule: ReplayRule) -> None:
        self.rule = rule

    def initial_state(self, runs: int) -> Any:
        return self.rule.initial_state(runs)

    def message_means(self, state: Any, t: int) -> dict[str, np.ndarray]:
        return {"y": self.rule.message_mean(state, t)}

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        return self.rule.next_state(state, mixed["y"], t)


@dataclass(frozen=True)
class ScheduledTilt:
    """Transcripts constructed on realized schedules under the tilt, with exact losses and weights.

    Attributes:
        messages: per channel the settled transcripts.
        losses: per run the privacy loss over the tilted rounds (``sum_t l_t``, ``t`` in ``rounds``).
        log_weights: ``log p_P(y | S) - log q(y | S)``.
        cap: the truncation level for :func:`accounting.delta_bounds.importance_delta_lower` (``inf`` when it
            exceeds the largest float: a tilt far beyond the Chernoff tilt, e.g. a Rényi escort).
        tilt: ``lambda``.
        realized_mu: per run ``sqrt(sum_t mu_t^2)`` over the tilted rounds (with ``offsets``: the offsets').
        passes: construction passes until the transcripts settled.
        matched: with ``offsets``: per run, whether every tilted release's shift kept its offset (within
            ``tolerance``, coordinate by coordinate), else ``None``.
    """

    messages: dict[str, np.ndarray]
    losses: np.ndarray
    log_weights: np.ndarray
    cap: float
    tilt: float
    realized_mu: np.ndarray
    passes: int
    matched: np.ndarray | None = None


def tilted_scheduled_transcripts(template: Any, schedules: Any, noise: Any, rule: Any, rule_prime: Any, *,
                                 epsilon: float, mu_bound: float, seed: int = 0, tilt: float | None = None,
                                 rounds: Any = None, offsets: Any = None, tolerance: Any = None) -> ScheduledTilt:
    """Draw one transcript per realized schedule under the release-by-release tilt (any timing), exact weights.

    The lockstep construction of :func:`tilted_transcripts` generalized to
    deadline and asynchronous runs. Given a realized schedule ``S`` (drawn by
    the engine from its link and clock streams, independently of the data and
    the noise: :mod:`accounting.scheduled_replay`), a run under ``P`` releases,
    in the run's causal order, ``y_r = m_r + s_r xi_r`` with ``xi_r`` standard
    normal and ``m_r`` the noise-free value given the messages released before
    it. The proposal ``Q_S`` releases ``y_r = m_r + lambda_r (m_r - m'_r) + s_r xi_r``
    instead (``m'_r`` the value under ``P'`` given the same past). Both are
    triangular maps of the same ``xi`` with unit Jacobian, so

        log p_P(y | S) - log q(y | S) = sum_r (lambda_r (1 + lambda_r) mu_r^2 / 2 - lambda_r l_r),

    ``mu_r = ||m_r - m'_r|| / s_r`` and ``l_r`` release ``r``'s exact privacy
    loss (noise-free releases: weight factor 1). With ``lambda_r = lambda`` on
    the rounds of ``rounds`` (0 elsewhere) and ``L`` the loss of those rounds,
    ``w = exp(lambda (1 + lambda) mu^2 / 2 - lambda L)``, the form of
    :mod:`accounting.tilting`; every weighted summand ``w (1 - e^(epsilon - L))_+``
    is at most :func:`accounting.tilting.chernoff_log_cap` at ``mu_bound`` when
    the realized ``mu <= mu_bound``, and
    :func:`accounting.delta_bounds.importance_delta_lower` truncates at that cap,
    so its bound holds whatever the realized shifts. With one schedule per
    run, drawn i.i.d. by the engine, the summands are i.i.d. with mean
    ``E_S[delta_S(epsilon)]``: the pair's ``delta(epsilon)`` when the
    schedule is part of what the observer sees (the convention of
    :mod:`accounting.scheduled_replay`).

    The construction is :func:`accounting.scheduled_replay.scheduled_replay`
    with every agent pinned and a :class:`~accounting.replay_inputs.TiltedDraw`,
    repeated on its own output until nothing changes: rounds are processed in
    order, so an asynchronous combination may read a message of a later
    round before it was drawn; each pass fixes the next releases in the run's
    causal order (acyclic; a chain of reads ahead runs through releases, not
    rounds: agent 0's round-2 release computed from agent 1's, computed from
    agent 2's), so at most ``T N + 1`` passes are needed (``N`` agents). On the
    settled transcript every noise-free value is the one its past gives, so
    the last pass's losses and weights are exact. Each run settles on its
    own (a run's replay reads that run alone), as soon as no combination of
    it reads ahead a message its last pass changed: every value that pass
    read is then the one its output holds, so the pass computed what a
    replay of its output computes (a further pass would reproduce it entry
    for entry), and only the other runs are replayed again. Where no
    combination reads a message of a later round (lockstep and deadline
    schedules) the first pass has settled.

    Args:
        template: per channel ``(R, T, N, d)`` arrays (unicast ``(R, T, N, N, d)``, ``[.., sender, receiver]``:
            each copy its own release, drawn and weighted on its own) whose NaN entries mark the
            releases that did not happen (e.g. the engine's transcripts of
            these schedules; the values are overwritten).
        schedules: ``R`` realized schedules (``dense(t)``), or one batch of them
            (:class:`~accounting.replay_inputs.ScheduleBatch`).
        noise: per channel a :class:`~accounting.replay_inputs.ChannelNoise` (Gaussian or noise-free).
        rule, rule_prime: the recursions under ``P`` and ``P'``
            (:class:`~accounting.replay_inputs.ChannelRule`).
        epsilon: where ``delta`` is bounded (``>= 0``).
        mu_bound: the composed ``mu`` the pair should not exceed (``> 0``); sets the tilt and the cap.
        seed: seeds ``numpy.random.default_rng``: one standard normal block per noisy channel, in channel order.
        tilt: ``lambda >= 0``; ``None`` for :func:`accounting.tilting.chernoff_tilt` at ``mu_bound``.
        rounds: ``(T,)`` booleans, the rounds whose loss is bounded (default all; a per-iteration claim: one).
        offsets, tolerance: per noisy channel, a fixed shift for every release (shaped like its messages) and how
            far each coordinate of a release's shift may be from it: each release moves by ``lambda`` times its
            offset, not its own shift (the weights are that proposal's), and every run reports whether all its
            tilted releases kept their offsets (:class:`~accounting.replay_inputs.TiltedDraw`).

    Returns:
        A :class:`ScheduledTilt`.

    Raises:
        PrivacyParameterError: bad ``epsilon``, ``mu_bound``, ``tilt`` or fewer than 2 runs.
        UnknownMechanismError: a Laplace channel.
        AccountingError: shapes that disagree, or a construction that does not settle.

    Example:
        >>> from accounting.scheduled_replay import ChannelNoise
        >>> class Shift:  # one agent, message = state, state never changes
        ...     def __init__(self, a): self.a = a
        ...     def initial_state(self, runs): return np.full((runs, 1, 1), self.a)
        ...     def message_means(self, x, t): return {"y": x}
        ...     def next_state(self, x, mixed, t): return x
        >>> class One:
        ...     def dense(self, t): return np.ones((1, 1)), np.full((1, 1), t)
        >>> s = tilted_scheduled_transcripts({"y": np.zeros((4, 2, 1, 1))}, [One()] * 4,
        ...                                  {"y": ChannelNoise("gaussian", np.ones(2))}, Shift(0.0), Shift(1.0),
        ...                                  epsilon=2.0, mu_bound=2 ** 0.5, seed=0)
        >>> s.realized_mu.round(6).tolist(), s.passes
        ([1.414214, 1.414214, 1.414214, 1.414214], 1)
    """
    from .errors import AccountingError
    from .replay_inputs import TiltedDraw
    from .scheduled_replay import scheduled_replay

    eps = check_nonnegative(epsilon, "epsilon", error=PrivacyParameterError)
    mb = check_nonnegative(mu_bound, "mu_bound", error=PrivacyParameterError)
    if mb == 0:
        raise PrivacyParameterError("mu_bound must be > 0 (a pair with no shift has delta = 0)")
    lam = chernoff_tilt(eps, gaussian_mus=[mb]) if tilt is None else \
        check_nonnegative(tilt, "tilt", error=PrivacyParameterError)
    names = list(template)
    if not names:
        raise AccountingError("template must hold at least one channel")
    first = np.asarray(template[names[0]])
    runs, horizon, agents = first.shape[:3]
    unicast = first.ndim == 5
    check_integer(runs, "runs", minimum=2, error=PrivacyParameterError)
    mask = np.ones(horizon, dtype=bool) if rounds is None else np.asarray(rounds, dtype=bool)
    rng = np.random.default_rng(seed)
    draws = {n: rng.standard_normal(np.shape(template[n])) for n in names if noise[n].mechanism is not None}
    draw = TiltedDraw(draws, lam, mask, offsets, tolerance)
    built: dict[str, np.ndarray] = {n: np.array(template[n], dtype=float) for n in names}
    everyone = list(range(agents))
    rows = _Rows(schedules, horizon, agents)
    ahead = rows.ahead()
    out = scheduled_replay(built, rows, noise, rule, rule_prime, unicast=unicast, pin_agent=everyone, draw=draw)
    assert out.messages is not None and out.per_round is not None and out.log_weights is not None
    assert out.tilted_mu is not None
    per_round, log_w, mu, matched = out.per_round, out.log_weights, out.tilted_mu, out.matched
    open_ = _read_changed(ahead, out.messages, built, names, np.arange(runs), runs)  # not yet settled
    built = out.messages
    passes, limit = 1, horizon * agents + 1  # a causal order through at most T N releases
    while open_.any():  # a settled run's values are final: only the others are replayed again
        if passes == limit:
            raise AccountingError(f"the tilted transcripts did not settle within {limit} passes")
        passes += 1
        idx = np.flatnonzero(open_)
        sub = {n: built[n][idx] for n in names}
        got = scheduled_replay(sub, rows.take(idx), noise, rule, rule_prime, unicast=unicast, pin_agent=everyone,
                               draw=TiltedDraw({n: d[idx] for n, d in draws.items()}, lam, mask,
                                               None if offsets is None else {n: o[idx] for n, o in offsets.items()},
                                               tolerance))
        assert got.messages is not None and got.per_round is not None and got.log_weights is not None
        assert got.tilted_mu is not None
        for n in names:
            built[n][idx] = got.messages[n]
        per_round[idx], log_w[idx], mu[idx] = got.per_round, got.log_weights, got.tilted_mu
        if matched is not None:
            assert got.matched is not None
            matched[idx] = got.matched
        open_ = _read_changed(ahead, got.messages, sub, names, idx, runs)
    log_cap = chernoff_log_cap(lam, eps, gaussian_mus=[mb])  # beyond the largest float for a large tilt: inf
    cap = math.exp(log_cap) if log_cap < _LOG_MAX else math.inf
    return ScheduledTilt(built, per_round[:, mask].sum(axis=1), log_w, cap, lam, mu, passes, matched)


def _read_changed(ahead: tuple[np.ndarray, ...], new: Any, old: Any, names: list[str], rows: np.ndarray,
                  runs: int) -> np.ndarray:
    """Per run (of ``runs``), whether a pass over ``rows`` changed a message (``new`` against ``old``, its input)
    that some combination of the run reads ahead (``ahead``: ``(t, r, s, j, i)`` of every read by receiver ``i``
    of another agent ``j``'s message of a later round ``s`` in round ``t``; unicast: the copy ``j -> i``). A run
    without one has settled: every value its pass read is the one its output holds, so the pass computed what a
    replay of its output computes."""
    t, r, s, j, i = ahead
    shape = np.shape(new[names[0]])
    unicast = len(shape) == 5
    changed = np.zeros((runs,) + shape[1:-1], dtype=bool)
    out = np.zeros(runs, dtype=bool)
    for n in names:
        a, b = new[n], old[n]
        changed[rows] = ~((a == b) | (np.isnan(a) & np.isnan(b))).all(axis=-1)
        out[r[changed[r, s - 1, j, i] if unicast else changed[r, s - 1, j]]] = True
    return out


_DENSE_ENTRIES = 4_000_000
"""Largest ``T x R x N x N`` whose dense rounds :class:`_Rows` keeps (above it each round is recomputed)."""


class _Rows:
    """Some runs of a set of schedules, as a :class:`~accounting.replay_inputs.ScheduleBatch` (``take(rows)``).

    Round ``t`` of every run is computed once (``dense_round``) and kept when the rounds of every run fit in
    :data:`_DENSE_ENTRIES`, so that a pass over a few unsettled runs reads rows of it. A batch whose runs share
    a round (``shared_round(t)``, e.g. lockstep runs) shares it with any of its runs: the replay combines them as
    that round without reading the dense rounds.
    """

    def __init__(self, schedules: Any, horizon: int, agents: int, rows: np.ndarray | None = None,
                 cache: dict[int, Any] | None = None) -> None:
        self._schedules, self._horizon, self._agents = schedules, horizon, agents
        self._rows = rows  # None: every run
        self._cache: dict[int, Any] = {} if cache is None else cache
        if rows is None and hasattr(schedules, "gather_index"):  # what the replay's combinations of a round read,
            # kept by the batch for every run: read from it (a subset of the runs: the replay's own, from their rounds)
            self.gather_index = schedules.gather_index
        if hasattr(schedules, "shared_round"):  # a round every run has alike, every subset of the runs has alike
            self.shared_round = schedules.shared_round

    def take(self, rows: np.ndarray) -> _Rows:
        """The runs ``rows`` (indices into these runs)."""
        picked = np.asarray(rows, dtype=np.int64) if self._rows is None else self._rows[rows]
        return _Rows(self._schedules, self._horizon, self._agents, picked, self._cache)

    def __len__(self) -> int:
        return len(self._schedules) if self._rows is None else int(self._rows.size)

    def __getitem__(self, runs: slice) -> _Rows:
        if range(len(self))[runs] == range(len(self)):  # every run (the replay's one chunk): these runs
            return self
        return self.take(np.arange(len(self))[runs])

    def ahead(self) -> tuple[np.ndarray, ...]:
        """Every read of another agent's message of a later round: ``(t, r, s, j, i)`` arrays, receiver ``i`` of
        run ``r`` in round ``t`` reading sender ``j``'s message of round ``s > t``."""
        from .schedule_reads import later_reads

        return later_reads(self, self._horizon)

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        from .schedule_reads import dense_round

        got = self._cache.get(t)
        if got is None:
            got = dense_round(self._schedules, t)
            if self._horizon * len(self._schedules) * self._agents ** 2 <= _DENSE_ENTRIES:
                self._cache[t] = got
        return got if self._rows is None else (got[0][self._rows], got[1][self._rows])

"""Who sees what: observers of a linear gossip run and their exact pairwise loss.

Observers (parse them from text with :meth:`Observer.parse`):

* ``eavesdropper``: every released message ``y_j(t)``; it knows no noise and no data;
* ``node:v``: the messages that *arrive* at ``v`` (every ``y_j(s)`` some
  entry of the schedule hands to ``v``, ``j != v``, and every ``y_j(s)``
  passed as ``delivered``: a copy ``v`` received without combining it, late
  or superseded; a realized schedule records combinations only, so the
  caller that knows the deliveries passes them), and ``v``'s own data,
  noise and state. ``v`` knows its own noise, so the view is conditioned on
  it (its noise columns leave the covariance); ``v``'s own messages and state
  are functions of what it received, its data and its noise, so they add
  nothing and are not stacked;
* ``nodes:a,b,...``: a colluding set, the union of its members' views and
  knowledge (messages between members are functions of the members' own
  knowledge and received messages, and are left out);
* ``link:a,b``: the wire between ``a`` and ``b``: the messages ``b`` used
  from ``a`` and those ``a`` used from ``b``, and the copies passed as
  ``delivered``; it knows nothing.

Conditioning on known noise is exact: the view is ``(y, z_K)`` with ``z_K``
the known noise; ``z_K`` has the same law under both inputs and, given it,
``y`` is Gaussian with covariance from the other noise columns only and the
same mean shift, whatever ``z_K`` is.

An observer that holds agent ``u``'s datum (``u`` in the set) sees the
change itself: the loss is infinite (reported with that reason).

Why ``node:v`` never beats the eavesdropper (``u`` not ``v``): given ``v``'s
datum, ``v``'s noise is a function of all messages (``y_v(t)`` minus ``v``'s
state, itself a function of earlier messages), so ``v``'s view is a function
of the eavesdropper's and data processing applies. The same holds for any
set not containing ``u``.

Example:
    >>> import numpy as np
    >>> W = np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    >>> s = LinearSchedule.from_mixing([W, W], noise_scale=[[1.0] * 3, [0.0] * 3])
    >>> round(pairwise_loss(s, Observer.parse("eavesdropper"), 0).mu, 12)
    1.0
    >>> round(pairwise_loss(s, Observer.parse("node:2"), 0).mu ** 2, 12)  # x_1 + xi_1, (x_0 + xi_0 + x_2 + xi_2)/2
    1.0
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from ..errors import AccountingError
from .combination import CombinedRenyi, combine_renyi
from .gaussian_views import RANGE_RTOL, RANK_RTOL, GaussianViewLoss, gaussian_view_losses
from .schedule import LinearSchedule

__all__ = ["Observer", "ObservedView", "observed_view", "pairwise_loss", "pairwise_losses", "schedule_averaged_renyi"]

Kind = Literal["eavesdropper", "nodes", "link"]


@dataclass(frozen=True)
class Observer:
    """An observer: ``kind`` and the agents involved (none, the colluding set, or the link's two ends).

    Example:
        >>> Observer.parse("nodes:3,1"), Observer.parse("node:2").agents
        (Observer(kind='nodes', agents=(1, 3)), (2,))
    """

    kind: Kind
    agents: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "eavesdropper" and self.agents:
            raise AccountingError(f"observer 'eavesdropper' takes no agents, got {self.agents}")
        if self.kind == "nodes" and not self.agents:
            raise AccountingError("observer 'nodes' needs at least one agent")
        if self.kind == "link" and (len(self.agents) != 2 or self.agents[0] == self.agents[1]):
            raise AccountingError(f"observer 'link' needs two different agents, got {self.agents}")
        if self.kind not in ("eavesdropper", "nodes", "link"):
            raise AccountingError(f"unknown observer kind {self.kind!r}: use eavesdropper, nodes or link")
        if any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 0 for a in self.agents):
            raise AccountingError(f"observer agents must be integers >= 0, got {self.agents}")
        object.__setattr__(self, "agents", tuple(sorted({int(a) for a in self.agents})) if self.kind == "nodes"
                           else tuple(int(a) for a in self.agents))

    @classmethod
    def node(cls, v: int) -> Observer:
        """The observer ``node:v`` (a colluding set of one).

        Args:
            v: the node.

        Returns:
            ``Observer("nodes", (v,))``.
        """
        return cls("nodes", (v,))

    @classmethod
    def parse(cls, text: str) -> Observer:
        """``eavesdropper``, ``node:v``, ``nodes:a,b,...`` or ``link:a,b``.

        Args:
            text: the observer as text (``str(observer)`` gives it back).

        Returns:
            The :class:`Observer`.

        Raises:
            AccountingError: any other text, naming it.
        """
        kind, _, rest = text.strip().partition(":")
        try:
            agents = tuple(int(x) for x in rest.split(",")) if rest.strip() else ()
        except ValueError:
            raise AccountingError(f"observer {text!r}: agents must be integers separated by commas") from None
        if kind == "eavesdropper" and not rest:
            return cls("eavesdropper")
        if kind == "node" and len(agents) == 1:
            return cls("nodes", agents)
        if kind in ("nodes", "link") and agents:
            return cls(kind, agents)  # type: ignore[arg-type]
        raise AccountingError(f"observer {text!r}: use eavesdropper, node:v, nodes:a,b,... or link:a,b")

    def __str__(self) -> str:
        if self.kind == "eavesdropper":
            return "eavesdropper"
        if self.kind == "nodes" and len(self.agents) == 1:
            return f"node:{self.agents[0]}"
        return f"{self.kind}:" + ",".join(map(str, self.agents))


@dataclass(frozen=True)
class ObservedView:
    """An observer's view as maps: observed values ``= data_map @ data + noise_map @ xi_unknown + known``.

    Attributes:
        data_map: ``(k, n)``.
        noise_map: ``(k, m)``: the columns of the noise the observer does not know (unit variance).
        messages: ``(round, sender)`` of each row.
        knows_data: agents whose data the observer holds.
        noise_ids: ``(round, agent)`` of each noise column (the unknown noise that reaches the view).
    """

    data_map: np.ndarray
    noise_map: np.ndarray
    messages: list[tuple[int, int]]
    knows_data: frozenset[int]
    noise_ids: list[tuple[int, int]]


def _seen(schedule: LinearSchedule, observer: Observer, delivered: Iterable[tuple[int, int]] | None = None
          ) -> set[tuple[int, int]]:
    n = schedule.num_agents
    for a in observer.agents:
        if a >= n:
            raise AccountingError(f"observer {observer}: agent {a} is not in [0, {n})")
    if observer.kind == "eavesdropper":
        return {(t, j) for t in range(1, schedule.horizon + 1) for j in range(n)}
    if observer.kind == "link":
        a, b = observer.agents
        sel = (((schedule.receiver == a) & (schedule.sender == b)) | ((schedule.receiver == b)
                                                                       & (schedule.sender == a)))
    else:
        members = np.array(observer.agents)
        sel = np.isin(schedule.receiver, members) & ~np.isin(schedule.sender, members)
    seen = {(int(t), int(j)) for t, j in zip(schedule.sender_round[sel], schedule.sender[sel])}
    for t, j in delivered or ():
        t, j = int(t), int(j)
        if not (1 <= t <= schedule.horizon and 0 <= j < n):
            raise AccountingError(f"delivered message ({t}, {j}) is not a message of the schedule (rounds 1..."
                                  f"{schedule.horizon}, agents 0..{n - 1})")
        if observer.kind == "nodes" and j in observer.agents:
            continue  # a member's own message: a function of the members' knowledge
        seen.add((t, j))
    return seen


def _backward_rows(schedule: LinearSchedule, messages: list[tuple[int, int]], knows: frozenset[int]
                   ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Rows of ``messages`` over the data and the unknown noise, by one backward pass through the rounds.

    ``Cy[s]`` (``k x n``) holds each observed value's coefficients on the messages ``y(s)``. Going from
    round ``T`` down to 1: the mixing of round ``s`` turns the coefficients on ``x(s)`` (those on
    ``y(s + 1)``) into coefficients on the messages it combined (``Cy[sr] += Cy[s + 1] W_{s, sr}``);
    then ``Cy[s]`` is complete, its columns times the noise scales are the noise coefficients of round
    ``s``, and it becomes the coefficients on ``x(s - 1)`` (plus ``Cy[s + 1]`` times the noise-free
    state weights). At the end ``Cy[1]`` holds the data
    coefficients. Work ``O(T k nnz)``; memory ``k x n`` per pending round, plus the output.
    """
    n, horizon = schedule.num_agents, schedule.horizon
    k = len(messages)
    cy: dict[int, np.ndarray] = {}
    for r, (t, j) in enumerate(messages):
        cy.setdefault(t, np.zeros((k, n)))[r, j] += 1.0
    order = np.argsort(schedule.round, kind="stable")
    starts = np.searchsorted(schedule.round[order], np.arange(1, horizon + 2))
    noise_cols: list[np.ndarray] = []
    noise_ids: list[tuple[int, int]] = []
    for s in range(horizon, 0, -1):
        cx = cy.pop(s + 1, None)  # coefficients on x(s)
        sel = order[starts[s - 1]:starts[s]]
        if cx is not None and sel.size:
            for sr in np.unique(schedule.sender_round[sel]):
                e = sel[schedule.sender_round[sel] == sr]
                w = sp.csr_array((schedule.weight[e], (schedule.receiver[e], schedule.sender[e])), shape=(n, n))
                contrib = np.asarray((w.T @ cx.T).T)
                if int(sr) in cy:
                    cy[int(sr)] += contrib
                else:
                    cy[int(sr)] = contrib
        cur = cy.get(s)
        extra = None if cx is None or not np.any(schedule.state_weight[s - 1]) else cx * schedule.state_weight[s - 1]
        if cur is None:
            if extra is not None:
                cy[s] = extra
            continue
        for jj in np.flatnonzero(schedule.noise_scale[s - 1] > 0):
            col = cur[:, jj] * schedule.noise_scale[s - 1, jj]
            if int(jj) not in knows and np.any(col):
                noise_cols.append(col)
                noise_ids.append((s, int(jj)))
        if extra is not None:
            cur += extra  # now the coefficients on x(s - 1)
    data = cy.get(1, np.zeros((k, n)))
    rank_of = sorted(range(len(noise_ids)), key=lambda c: noise_ids[c])
    noise = np.column_stack([noise_cols[c] for c in rank_of]) if noise_cols else np.zeros((k, 0))
    return data, noise, [noise_ids[c] for c in rank_of]


def observed_view(schedule: LinearSchedule, observer: Observer,
                  delivered: Iterable[tuple[int, int]] | None = None) -> ObservedView:
    """The rows of the messages ``observer`` sees, with the noise it knows removed.

    Computed by a backward pass from the observed messages (only their
    ``k`` rows are ever held; :func:`~.schedule.message_maps` is the forward
    computation of every message, used to cross-check). Noise variables that
    do not reach the view are left out of ``noise_map``.

    Args:
        schedule: the realized :class:`LinearSchedule`.
        observer: the :class:`Observer`.
        delivered: messages ``(round, sender)`` (in the schedule's numbering) that reached the observer
            although no entry of the schedule combines them: a copy that arrived after its receiver's
            deadline, or that a fresher copy superseded. A node holds every message delivered to it, combined
            or not; a caller that knows the deliveries (a transcript) passes them here. Members' own
            messages are ignored for a ``nodes`` observer.

    Returns:
        The :class:`ObservedView` (rows ordered by round, then sender).

    Raises:
        AccountingError: an observer agent outside the schedule's agents, a delivered message outside it.

    Example:
        >>> import numpy as np
        >>> s = LinearSchedule.from_mixing([np.full((3, 3), 1 / 3)], noise_scale=1.0)
        >>> v = observed_view(s, Observer.parse("link:0,1"))
        >>> v.messages, v.noise_ids
        ([(1, 0), (1, 1)], [(1, 0), (1, 1)])
    """
    seen = sorted(_seen(schedule, observer, delivered))
    knows = frozenset(observer.agents) if observer.kind == "nodes" else frozenset()
    data, noise, ids = _backward_rows(schedule, seen, knows)
    return ObservedView(data, noise, seen, knows, ids)


def pairwise_losses(schedule: LinearSchedule, observer: Observer, sources: Iterable[int] | None = None, *,
                    sensitivity: float = 1.0, rank_rtol: float = RANK_RTOL, range_rtol: float = RANGE_RTOL,
                    delivered: Iterable[tuple[int, int]] | None = None) -> dict[int, GaussianViewLoss]:
    """Exact loss of each source agent's datum to ``observer`` on this schedule (one SVD for all sources).

    Agent ``u``'s datum ``x_u(0)`` changes by ``sensitivity``; the view's mean moves by
    ``sensitivity * data_map[:, u]`` and :func:`~.gaussian_views.gaussian_view_losses` does the rest.

    Args:
        schedule: the realized :class:`LinearSchedule`.
        observer: the :class:`Observer`.
        sources: the agents ``u`` (default: all).
        sensitivity: the size of the change, > 0 (L2 norm for vector data).
        rank_rtol, range_rtol: tolerances (see :mod:`.gaussian_views`).
        delivered: messages that reached the observer without being combined (:func:`observed_view`).

    Returns:
        ``{u: GaussianViewLoss}``; ``mu = inf`` with a reason when the observer holds ``u``'s datum
        or the shift leaves ``range(C)``.

    Raises:
        AccountingError: a source outside the agents, a sensitivity that is not > 0.

    Example:
        >>> import numpy as np
        >>> s = LinearSchedule.from_mixing([np.full((2, 2), 0.5)], noise_scale=2.0)  # node 1 sees x_0 + 2 xi_0
        >>> {u: x.mu for u, x in pairwise_losses(s, Observer.parse("node:1")).items()}
        {0: 0.5, 1: inf}
    """
    if not (isinstance(sensitivity, (int, float)) and not isinstance(sensitivity, bool) and sensitivity > 0
            and np.isfinite(sensitivity)):
        raise AccountingError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
    n = schedule.num_agents
    src = list(range(n)) if sources is None else [int(u) for u in sources]
    for u in src:
        if not 0 <= u < n:
            raise AccountingError(f"source agent {u} is not in [0, {n})")
    view = observed_view(schedule, observer, delivered)
    out: dict[int, GaussianViewLoss] = {}
    rest = [u for u in src if u not in view.knows_data]
    if rest:
        shifts = view.data_map[:, rest] * float(sensitivity)
        for u, loss in zip(rest, gaussian_view_losses(view.noise_map, shifts, rank_rtol=rank_rtol,
                                                      range_rtol=range_rtol)):
            out[u] = loss
    for u in src:
        if u in view.knows_data:
            out[u] = GaussianViewLoss(mu=np.inf, in_range=False, range_residual=1.0, rank=0, dropped=0,
                                      view_dim=len(view.messages),
                                      reason=f"observer {observer} holds agent {u}'s datum")
    return {u: out[u] for u in src}


def pairwise_loss(schedule: LinearSchedule, observer: Observer, source: int, *, sensitivity: float = 1.0,
                  rank_rtol: float = RANK_RTOL, range_rtol: float = RANGE_RTOL) -> GaussianViewLoss:
    """Exact loss of agent ``source``'s datum to ``observer`` (see :func:`pairwise_losses`).

    Args:
        schedule: the realized :class:`LinearSchedule`.
        observer: the :class:`Observer`.
        source: the agent ``u``.
        sensitivity: the size of the change, > 0.
        rank_rtol, range_rtol: tolerances.

    Returns:
        The :class:`~.gaussian_views.GaussianViewLoss`.

    Raises:
        AccountingError: as :func:`pairwise_losses`.

    Example:
        >>> import numpy as np
        >>> s = LinearSchedule.from_mixing([np.eye(2)], noise_scale=1.0)
        >>> pairwise_loss(s, Observer.parse("link:0,1"), 0).mu
        0.0
    """
    return pairwise_losses(schedule, observer, [source], sensitivity=sensitivity, rank_rtol=rank_rtol,
                           range_rtol=range_rtol)[source]


def schedule_averaged_renyi(schedules: Iterable[LinearSchedule], observer: Observer, source: int, alpha: float,
                            d_max: float, *, sensitivity: float = 1.0, confidence_gap: float = 0.05,
                            rank_rtol: float = RANK_RTOL) -> tuple[CombinedRenyi, bool]:
    """Renyi loss of ``source`` to ``observer`` over i.i.d. sampled data-independent schedules it also sees.

    Per schedule, :func:`pairwise_loss`; then :func:`~.combination.combine_renyi` (estimate and one-sided
    upper confidence bound). An infinite per-schedule loss makes the combination infinite (the schedule
    has positive probability): ``estimate = upper = inf`` with ``bound = "infinite"``.

    Args:
        schedules: sampled realized schedules (at least one).
        observer: the :class:`Observer`.
        source: the agent ``u``.
        alpha: the order, > 1.
        d_max: a bound on the per-schedule divergence valid for every schedule (see
            :mod:`.combination`), e.g. an analytic bound on the eavesdropper's loss.
        sensitivity: the size of the change, > 0.
        confidence_gap: the bound holds with probability >= 1 - confidence_gap.
        rank_rtol: rank tolerance.

    Returns:
        ``(combined, exact)``: ``exact`` is ``False`` if any per-schedule value was not certified
        (:attr:`~.gaussian_views.GaussianViewLoss.exact`): the combination is then built from lower
        estimates, and its upper bound is not a certificate.

    Raises:
        AccountingError, PrivacyParameterError: as the functions called; no schedules.

    Example:
        >>> import numpy as np
        >>> s = LinearSchedule.from_mixing([np.full((2, 2), 0.5)], noise_scale=1.0)
        >>> r, exact = schedule_averaged_renyi([s, s], Observer.node(1), 0, 2.0, d_max=1.0)
        >>> round(r.estimate, 12), exact
        (1.0, True)
    """
    losses = [pairwise_loss(s, observer, source, sensitivity=sensitivity, rank_rtol=rank_rtol) for s in schedules]
    if not losses:
        raise AccountingError("schedules: no sampled schedules")
    exact = all(x.exact for x in losses)
    if any(not np.isfinite(x.mu) for x in losses):
        return CombinedRenyi(float(alpha), np.inf, np.inf, 1 - confidence_gap, len(losses), float(d_max),
                             "infinite"), exact
    return combine_renyi([x.renyi(alpha) for x in losses], alpha, d_max, confidence_gap), exact

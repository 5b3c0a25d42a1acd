"""One round's combinations of a channel under both problems: the self term, the other agents' terms (by a
shared round, else by the general gather) and their sum."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import AccountingError
from .round_gather import _gather, _RoundIndex
from .schedule_reads import dense_round
from .shared_rounds import SharedRound


def _own(y_t: np.ndarray, mean: np.ndarray, unicast: bool) -> np.ndarray:
    """The self term of round ``t``: the own message (broadcast) or the average of the copies sent (unicast)."""
    if not unicast:
        return y_t
    sent = ~np.isnan(y_t).any(axis=-1)  # (R, N, N): copy i -> j observed
    n_sent = sent.sum(axis=2)
    avg = np.where(sent[..., None], y_t, 0.0).sum(axis=2) / np.maximum(n_sent, 1)[..., None]
    return np.where((n_sent > 0)[..., None], avg, mean)


def _others(y: np.ndarray, w: np.ndarray, src: np.ndarray, t: int, unicast: bool,
            index: _RoundIndex | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The combinations' terms from the other agents' messages ``(R, N, d)``, and the self weights ``(R, N)``.

    They depend on the transcript and the schedule only, so one computation serves both problems' combinations.
    """
    return np.einsum("rij,rijk->rik", w, _gather(y, src, t, unicast, index)), np.einsum("rii->ri", w)


def _mixed(others: tuple[np.ndarray, np.ndarray], own: np.ndarray, t: int) -> np.ndarray:
    """One problem's combinations: the other agents' terms plus the self weight times its own term."""
    terms, diag = others
    nan = np.isnan(own)
    if nan.any() and (diag > 0).any():
        bad = nan.any(axis=-1) & (diag > 0)
        if bad.any():
            r, i = (int(v) for v in np.argwhere(bad)[0])
            raise AccountingError(f"round {t}: agent {i}'s own message (run {r}) is not in the transcript but "
                                  "enters its combination")
    clean = np.where(nan, 0.0, own)
    if not np.isfinite(clean).all():
        clean = np.nan_to_num(clean)
    return terms + diag[..., None] * clean


def _combine(y: np.ndarray, yt: np.ndarray, mu: np.ndarray, mp_all: np.ndarray | None, t: int, unicast: bool,
             name: str, mixed: dict[str, np.ndarray], mixed_p: dict[str, np.ndarray], one: SharedRound | None,
             schedules: Any, w: Any, src: Any, index: Any, work: dict[Any, np.ndarray] | None = None) -> None:
    """Round ``t``'s combinations of channel ``name`` under both problems, into ``mixed`` and ``mixed_p``
    (``work``: the replay's arrays a shared round may reuse, :meth:`SharedRound.mixed`)."""
    if one is not None:
        both = one.mixed(y, t, work)
        if both is not None:
            mixed[name] = both
            if mp_all is not None:  # broadcast: the same combinations under both problems
                mixed_p[name] = both.copy()
            return
    terms = one.others(y, work) if one is not None else None
    if terms is not None:
        assert one is not None
        others: tuple[np.ndarray, np.ndarray] = (terms, one.diag)
    else:
        if w is None:  # the general path computes (or names what is wrong with) what the shared one did not
            w, src = dense_round(schedules, t)
        if index is None:
            index = schedules.gather_index(t) if hasattr(schedules, "gather_index") else _RoundIndex(src)
        others = _others(y, w, src, t, unicast, index)  # shared by both problems' combinations
    mixed[name] = _mixed(others, _own(yt, mu, unicast), t)
    if mp_all is not None:
        # broadcast: the self term is the own message under both problems, so are the combinations
        mixed_p[name] = mixed[name].copy() if not unicast else _mixed(others, _own(yt, mp_all, unicast), t)

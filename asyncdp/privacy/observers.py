"""What each observer learns of a run: every source's pairwise loss (the asyncdp side of pairwise network DP).

The exact losses come from :mod:`accounting.network` (the accountant's model of a linear Gaussian protocol).
``pairwise_figures`` gives the exact pairwise loss of every source to an observer on the run's realized schedule
(or averaged over several runs' schedules), labelled exact / lower estimate / upper bound; ``observer_blackbox``, a
black-box lower bound from the observer's view. The parts: ``asyncdp.privacy.observer_views`` (the observers and
what each one sees), ``asyncdp.privacy.linear_model`` (a run as the accountant's model),
:mod:`asyncdp.privacy.affine_check` (the model verified on the runs) and ``asyncdp.privacy.observer_bounds``
(bounds valid on every schedule).

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> sc = Muffliato.example_scenario()
    >>> fig = pairwise_figures(sc, "node:5", sources=[0, 4])
    >>> [(r.source, r.kind) for r in fig.rows]
    [(0, 'exact'), (4, 'exact')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.claim_forms import ZeroConcentratedDP
from accounting.network import LinearSchedule, Observer, combine_renyi, pairwise_losses

from ..errors import ScenarioError
from .affine_check import AffineCheck, verify_affine, verify_affine_probed
from .linear_model import _global_steps, linear_schedule
from .observer_bounds import (
    _data_sensitivity,
    _unverified_lemma,
    above_affine_bound,
    affine_renyi_bound,
    eavesdropper_renyi_bound,
    epsilon_from_mu,
    rounded_to_bound,
)
from .observer_views import NODE_KNOWLEDGE, delivered_messages, observed_transcript, parse_observer, run_for_views

__all__ = ["PairwiseRow", "PairwiseFigures", "pairwise_figures", "observer_blackbox"]


STRUCTURAL = "structural bound"
"""The kind of a :class:`PairwiseRow` whose computed loss was above :func:`affine_renyi_bound` (see
:func:`above_affine_bound`): the row reports that bound, ``D_alpha <= alpha Delta^2 / (2 s_1^2)``."""


@dataclass(frozen=True)
class PairwiseRow:
    """One source's loss to the observer.

    Attributes:
        source: the agent whose datum changes.
        renyi: the Renyi divergence of order ``alpha`` (an average over schedules when several runs).
        epsilon: the epsilon at ``delta`` (one schedule only; ``nan`` when averaged over schedules); for an
            ``"upper bound"`` row, the bound's zCDP conversion to ``delta`` (an upper bound too).
        kind: ``"exact"``, ``"lower estimate"`` (rank tolerance, see :mod:`accounting.network.gaussian_views`),
            ``"estimate over schedules"``, ``"upper bound"`` (the eavesdropper's composition bound) or
            ``"structural bound"`` (:data:`STRUCTURAL`: the computed value was above :func:`affine_renyi_bound`, a
            numerical artifact; the row gives that bound instead, which holds).
        reason: why a figure is not exact.
    """

    source: int
    renyi: float
    epsilon: float
    kind: str
    reason: str = ""


@dataclass(frozen=True)
class PairwiseFigures:
    """Every source's loss to one observer (see :func:`pairwise_figures`)."""

    observer: str
    alpha: float
    delta: float
    rows: tuple[PairwiseRow, ...]
    affine: AffineCheck
    runs: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinities as strings)."""
        def num(v: float) -> Any:
            return v if math.isfinite(v) else str(v)

        return {"observer": self.observer, "alpha": self.alpha, "delta": self.delta, "runs": self.runs,
                "affine": {"ok": self.affine.ok, "reason": self.affine.reason}, "notes": list(self.notes),
                "rows": [{"source": r.source, "renyi": num(r.renyi), "epsilon": num(r.epsilon), "kind": r.kind,
                          "reason": r.reason} for r in self.rows]}

    def to_table(self) -> str:
        """One line per source."""
        lines = [f"observer {self.observer}: Renyi order {self.alpha:g}, epsilon at delta {self.delta:g}, "
                 f"{self.runs} run(s); {self.affine.reason}"]
        lines += [f"  note: {n}" for n in self.notes]
        for r in self.rows:
            rel = " <= " if r.kind == STRUCTURAL else "="
            lines.append(f"  u={r.source:>4}  D_alpha{rel}{r.renyi:.6g}  eps{rel}{r.epsilon:.6g}  [{r.kind}]"
                         + (f" ({r.reason})" if r.reason else ""))
        return "\n".join(lines)


def _losses(sched: LinearSchedule, obs: Observer, srcs: list[int], sens: float, result: Any) -> dict[int, Any]:
    """Exact losses on one schedule; a node or link observer also holds every message delivered to it
    (:func:`delivered_messages`); for the eavesdropper of a re-indexed asynchronous run, only the rows of
    real releases (a step's copy of a state that was not released is not on the wire)."""
    from accounting.network import gaussian_view_losses, message_maps

    rs = result.schedule
    if obs.kind != "eavesdropper":
        return pairwise_losses(sched, obs, srcs, sensitivity=sens, delivered=delivered_messages(result, obs, sched))
    if sched.horizon == rs.horizon:
        return pairwise_losses(sched, obs, srcs, sensitivity=sens)
    _, release = _global_steps(rs.num_agents, rs.horizon, result.times)
    real = {(int(release[r, j]), j) for r in range(rs.horizon) for j in range(rs.num_agents)}
    d, nmap, msgs = message_maps(sched)
    rows = [i for i, m in enumerate(msgs) if m in real]
    out = gaussian_view_losses(nmap[rows], d[rows][:, srcs] * sens)
    return dict(zip(srcs, out))


def observer_blackbox(scenario: Any, adjacent: Any, observer: str | Observer, *, runs: int = 200, seed: int = 0,
                      epsilon: float, delta: float = 0.0, confidence: float = 0.95) -> Any:
    """A black-box lower bound on what ``observer`` learns: :func:`accounting.auditing.audit_samples` on the
    observer's view of ``runs`` engine runs of each scenario (same seeds: the schedule is data independent).

    The view of a run: every message the observer saw (:func:`observed_transcript`) and, for ``node``/``nodes``
    observers, the members' own released messages (functions of their data, noise and what they received),
    flattened, ``NaN`` where nothing was seen.

    Args:
        scenario, adjacent: the two scenarios (one agent's datum differs).
        observer: the observer.
        runs: runs per side (SimPy engine), >= 2.
        seed: run ``r`` uses seed ``seed + r`` on both sides.
        epsilon, delta: the claim the auditor tries to refute.
        confidence: of the certified bounds.

    Returns:
        The :class:`accounting.auditing.SampleAuditReport` (``epsilon_lower_bound``: a certified lower bound).
    """
    from dataclasses import replace

    from accounting.auditing import audit_samples

    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ScenarioError(f"runs must be an integer >= 2, got {runs!r}")
    obs = parse_observer(observer, scenario.problem.num_agents)
    own = list(obs.agents) if obs.kind == "nodes" else []
    sides = []
    for sc in (scenario, adjacent):
        rows = []
        for r in range(runs):
            res = replace(sc, seed=seed + r).run("simpy")
            channels = [c.name for c in sc.algorithm.channels]
            parts = []
            for c in channels:
                view = observed_transcript(res, obs, c)
                parts.append(view.messages.ravel())
                if own:
                    parts.append(np.asarray(res.messages[c], dtype=float)[:, own].ravel())
            rows.append(np.concatenate(parts))
        sides.append(np.array(rows))
    return audit_samples(sides[0], sides[1], epsilon=epsilon, delta=delta, confidence=confidence, seed=seed)


def _structural_row(scenario: Any, obs: Observer, u: int, losses: list[Any], alpha: float,
                    delta: float) -> PairwiseRow | None:
    """The :data:`STRUCTURAL` row of source ``u`` when some schedule's computed loss is above
    :func:`affine_renyi_bound` (:func:`above_affine_bound`; not for a source the observer holds, whose loss is
    infinite); else ``None``. Its epsilon is that of the bound's Gaussian shift ``Delta / s_1``."""
    if obs.kind == "nodes" and u in obs.agents:
        return None
    d_max = affine_renyi_bound(scenario, alpha)
    values = [loss.renyi(alpha) for loss in losses]
    worst = max(range(len(values)), key=lambda i: values[i])
    if not (math.isfinite(d_max) and above_affine_bound(values[worst], d_max)):
        return None
    why = ("the view has directions at rounding level" if not losses[worst].exact else
           losses[worst].reason or "a value the model computed against the structure it verified")
    on = f" on run {worst}" if len(losses) > 1 else ""
    return PairwiseRow(u, d_max, epsilon_from_mu(math.sqrt(2.0 * d_max / alpha), delta), STRUCTURAL,
                       f"computed {values[worst]:.6g}{on}, above the bound alpha Delta^2 / (2 s_1^2) = {d_max:.6g} "
                       f"every view of the verified structure obeys: a numerical artifact ({why}); the bound holds")


def pairwise_figures(scenario: Any, observer: str | Observer = "eavesdropper", *, runs: int = 1,
                     seed: int | None = None,
                     alpha: float = 2.0, delta: float = 1e-6, sources: Any = None,
                     engine: str = "simpy", confidence_gap: float = 0.05, adjacent: Any = None) -> PairwiseFigures:
    """Each source's loss to ``observer`` on the scenario's realized schedule(s).

    With one run: the exact Renyi divergence and exact epsilon at ``delta`` of the observer's view (a
    Gaussian vector given the schedule), when the rule is verified affine on the run. With several runs
    (asynchronous or lossy schedules differ): the divergence averaged over the sampled schedules,
    ``(1/(alpha-1)) log E_S exp((alpha-1) D_alpha(. | S))``, reported as an estimate with its bound
    (:func:`accounting.network.schedule_averaged_renyi`). A rule that is not (verified) affine gets the
    sound upper bound of :func:`eavesdropper_renyi_bound` (data processing), labelled so.

    Args:
        scenario: the scenario (rule, topology, timing, links, seed).
        observer: the observer.
        runs: engine runs (each one realized schedule); run ``r`` uses seed ``seed + r``.
        seed: the first run's seed (default ``scenario.seed``; run ``r`` uses ``seed + r``).
        alpha: Renyi order, > 1.
        delta: delta of the reported epsilon.
        sources: the agents whose datum changes (default: every agent).
        engine: ``"simpy"`` or ``"batch"``.
        confidence_gap: of the bound over sampled schedules.
        adjacent: an adjacent scenario whose run must match the model too (a rule may behave otherwise on
            its data); the model is also checked with the private values at the domain's extremes
            (:func:`verify_affine_probed`).

    Returns:
        The :class:`PairwiseFigures`.

    Raises:
        ScenarioError: a bad observer, source or parameter.
    """
    from dataclasses import replace

    if not (alpha > 1 and math.isfinite(alpha)):
        raise ScenarioError(f"alpha must be a finite number > 1, got {alpha!r}")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ScenarioError(f"runs must be an integer >= 1, got {runs!r}")
    n = scenario.problem.num_agents
    obs = parse_observer(observer, n)
    srcs = list(range(n)) if sources is None else [int(u) for u in sources]
    bad = [u for u in srcs if not 0 <= u < n]
    if bad:
        raise ScenarioError(f"source agent {bad[0]} does not exist (agents are 0..{n - 1})")
    seed = scenario.seed if seed is None else seed
    bound = eavesdropper_renyi_bound(scenario, alpha)
    notes = [NODE_KNOWLEDGE] if obs.kind == "nodes" else []
    results = [run_for_views(replace(scenario, seed=seed + r), engine) for r in range(runs)]
    schedules, check = [], AffineCheck(False, "not checked")
    for res in results:
        try:
            sched = linear_schedule(res, scenario)
        except ScenarioError as exc:
            check = AffineCheck(False, str(exc))
            break
        check = verify_affine(res, scenario)
        if not check.ok:
            break
        schedules.append(sched)
    if check.ok:
        for other in ([] if adjacent is None else [adjacent]):
            adj = verify_affine(run_for_views(replace(other, seed=seed), engine), other)
            if not adj.ok:
                check = AffineCheck(False, f"on the adjacent scenario: {adj.reason}", adj.max_residual)
        if check.ok:
            check = verify_affine_probed(scenario, engine)
    sens = _data_sensitivity(scenario)
    rows = []
    if not check.ok:
        notes.append("not a verified linear Gaussian rule: every figure is the eavesdropper's composition bound "
                     "(data processing); a black-box lower bound from the observer's view: observer_blackbox")
        lemma = _unverified_lemma(scenario)
        if lemma is not None:
            notes.append(f"the composition bound rests on {lemma}, which this figure does not verify: it is an upper "
                         "bound only if that lemma holds for this rule")
        # the bound is alpha * rho with rho = sum (s / scale)^2 / 2 at every order (a Gaussian release's zCDP; a
        # Laplace release is (s / scale)-DP, hence (s / scale)^2 / 2-zCDP): its epsilon at delta is rho-zCDP's
        rho = bound / alpha
        eps_bound = math.inf if math.isinf(rho) else 0.0 if rho == 0 else ZeroConcentratedDP(rho).epsilon_at(delta)
        for u in srcs:
            inf_self = obs.kind == "nodes" and u in obs.agents
            rows.append(PairwiseRow(u, math.inf if inf_self else bound, math.inf if inf_self else eps_bound,
                                    "upper bound", "the observer holds u's datum" if inf_self else check.reason))
    elif runs == 1:
        losses = _losses(schedules[0], obs, srcs, sens, results[0])
        for u in srcs:
            loss = losses[u]
            kind = "exact" if loss.exact else "lower estimate"
            artifact = _structural_row(scenario, obs, u, [loss], alpha, delta)
            rows.append(artifact or PairwiseRow(u, loss.renyi(alpha), epsilon_from_mu(loss.mu, delta), kind,
                                                loss.reason or ""))
    else:
        per_run = [_losses(sc_, obs, srcs, sens, res) for sc_, res in zip(schedules, results)]
        for u in srcs:
            artifact = _structural_row(scenario, obs, u, [pr[u] for pr in per_run], alpha, delta)
            if artifact is not None:
                rows.append(artifact)
                continue
            ds = [pr[u].renyi(alpha) for pr in per_run]
            exact = all(pr[u].exact for pr in per_run)
            if not all(math.isfinite(d) for d in ds):
                why = next(pr[u].reason for pr in per_run if not math.isfinite(pr[u].renyi(alpha)))
                rows.append(PairwiseRow(u, math.inf, math.nan, "exact", f"infinite on some schedule: {why}"))
                continue
            d_max = affine_renyi_bound(scenario, alpha)  # the verified structure's range, not the lemma's
            comb = combine_renyi(rounded_to_bound(ds, d_max), alpha, d_max, confidence_gap)
            est = float(getattr(comb, "estimate", math.nan))
            upper = getattr(comb, "upper", None)
            reason = f"upper confidence bound {upper:.6g} ({comb.bound}, confidence {comb.confidence:g})" \
                if isinstance(upper, float) else ""
            rows.append(PairwiseRow(u, est, math.nan, "estimate over schedules" if exact else "lower estimate",
                                    reason))
    return PairwiseFigures(str(obs), float(alpha), float(delta), tuple(rows), check, runs, tuple(notes))

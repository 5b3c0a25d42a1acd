"""A paper's pairwise network DP claim verified for one observer's pairs (``asyncdp privacy check --observer``).

A paper record may claim pairwise network DP (Cyffers, Even, Bellet and
Massoulié, NeurIPS 2022): a bound on the Renyi divergence of order
``alpha`` from each source ``u`` to each node ``v``, as a matrix or as a
function of graph distance (:class:`accounting.papers.muffliato.PairwiseClaim`,
declared by the paper's ``pairwise_claim(scenario)``). With ``--observer
node:v`` (or a colluding ``nodes:S``), the check verifies that claim on the
observer's pairs ``(u, v)`` for every source ``u != v`` and every ``v`` in
``S`` (a colluding set is checked member by member: the claim is about one
node's view; what the members learn together is the observer section's
figure). Without a node observer the pairwise claim is not checked by
``privacy check`` (it is about nodes, not the eavesdropper); ``asyncdp
privacy network`` checks it on every pair.

Two methods, named in the report:

* **exact** (lockstep timing, lossless links: one deterministic schedule):
  the exact Renyi divergence of ``v``'s Gaussian view on the realized
  schedule (:func:`asyncdp.privacy.network.leakage_rows`, the rule verified
  affine on the run); a value above the claim is a witness, with the pair
  and the first round after which the loss exceeds it. Confidence 1 (no
  sampling); values that are lower estimates (ambiguous rank decisions) can
  still witness a violation but cannot certify a pass.
* **sampled schedules** (asynchronous or deadline timing, lossy links: the
  schedule is random and the observer sees it): per run, the exact
  divergence ``D_s`` on that run's schedule; the schedule-averaged Renyi
  divergence ``(1/(alpha-1)) log E_S exp((alpha-1) D_S)`` is at least
  ``E_S D_S`` (Jensen), whose Hoeffding lower confidence bound
  ``mean - d_max sqrt(log(1/g) / (2 m))`` over ``m`` runs (``d_max =
  alpha Delta^2 / (2 s_1^2)``, valid on every schedule for the structure
  verified on the runs, :func:`~asyncdp.privacy.observer_bounds.affine_renyi_bound`;
  never the paper's lemma, which a rare schedule could exceed unseen) witnesses a violation when
  it exceeds the claim; a pass needs the one-sided upper confidence bound of
  :func:`accounting.network.combine_renyi` below the claim on every pair.
  ``g`` is ``1 - confidence`` split over the pairs (union bound). The
  witness round is the first round of the run with the largest ``D_s``
  after which that run's loss exceeds the claim.

Example:
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> r = check_observer_claim(Muffliato.example_scenario(), "node:5", find_rounds=False)
    >>> r.verdict, r.method, r.pairs
    ('violation', 'exact', 5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.network import Observer, combine_renyi
from accounting.network.muffliato import witness_margin

from ..errors import ScenarioError, TopologyMismatchError
from .network import (
    PairFailure,
    check_pairwise_claim,
    claimed_bounds,
    deterministic_schedule,
    gossip_graph,
    leakage_rows,
    pairwise_claim_of,
    shortest_paths,
)
from .observer_bounds import affine_renyi_bound, rounded_to_bound
from .observer_views import parse_observer
from .observers import _losses

__all__ = ["ObserverClaimCheck", "check_observer_claim"]

EXACT = "exact"
SAMPLED = "sampled schedules"


@dataclass(frozen=True)
class ObserverClaimCheck:
    """The pairwise claim on an observer's pairs.

    Attributes:
        observer: the observer as text.
        statement: the claim's statement.
        alpha: its Renyi order (``None`` when the paper states no claim for this run: ``reason`` says why).
        verdict: ``"pass"``, ``"violation"`` or ``"inconclusive"`` (see the module docstring).
        method: ``"exact"`` or ``"sampled schedules"``.
        confidence: 1.0 for the exact method; the family-wise confidence of the sampled bounds otherwise.
        runs: engine runs actually made (0 when the claim was not checked before any run).
        pairs: pairs checked.
        failed: pairs above the claim (exact value, or lower confidence bound when sampled).
        failures: the witnesses (largest excess first).
        reason: why the verdict is inconclusive (``""`` otherwise).
        checked: whether the pairs were checked (``False``: no exact pairwise value or no claim; ``reason``).
    """

    observer: str
    statement: str
    alpha: float | None
    verdict: str
    method: str
    confidence: float
    runs: int
    pairs: int
    failed: int
    failures: tuple[PairFailure, ...] = field(default_factory=tuple)
    reason: str = ""
    checked: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (witnesses as dicts; an infinite value as the string ``"inf"``; no order: ``null``).

        ``claim_form`` is ``"renyi"`` (each pair's bound is on the Renyi divergence of order ``alpha``), ``null`` when
        no claim is stated for the run; with ``method`` and ``confidence`` it qualifies every witness."""
        def num(x: float) -> Any:
            return float(x) if math.isfinite(x) else str(x)

        return {"observer": self.observer, "statement": self.statement, "alpha": self.alpha,
                "claim_form": None if self.alpha is None else "renyi",
                "verdict": self.verdict, "method": self.method, "confidence": self.confidence, "runs": self.runs,
                "pairs": self.pairs, "failed": self.failed, "checked": self.checked, "reason": self.reason,
                "witnesses": [{"u": f.u, "v": f.v, "distance": f.distance, "claimed": num(f.claimed),
                               "value": num(f.exact), "round": f.round} for f in self.failures]}

    def witness(self) -> dict[str, Any] | None:
        """The first (largest-excess) witness as a report's top-level witness, or ``None`` without one.

        ``privacy check --json`` writes it as ``witness`` when only the pairwise claim is violated (the central
        check found none): ``kind`` ``"pairwise claim"`` says whose it is, and it carries what qualifies it
        (``claim_form``, ``alpha``, ``method``, ``confidence``, ``runs``) beside the pair's fields (``u``, ``v``,
        ``distance``, ``claimed``, ``value``, ``round``); ``failed`` counts every pair above the claim (all under
        ``pairwise_claim``).

        Example:
            >>> from asyncdp.papers.muffliato.rule import Muffliato
            >>> w = check_observer_claim(Muffliato.example_scenario(), "node:1", find_rounds=False).witness()
            >>> w["kind"], w["claim_form"], w["method"], (w["u"], w["v"]), w["value"] > w["claimed"]
            ('pairwise claim', 'renyi', 'exact', (5, 1), True)
        """
        d = self.to_dict()
        if not d["witnesses"]:
            return None
        keys = ("observer", "statement", "claim_form", "alpha", "method", "confidence", "runs", "failed")
        return {"kind": "pairwise claim", "against": "pairwise_claim", **{k: d[k] for k in keys}, **d["witnesses"][0]}

    def to_table(self) -> str:
        """The verdict, the method and the witnesses."""
        how = ("exact, on the run's deterministic schedule" if self.method == EXACT else
               f"sampled schedules: {self.runs} runs, confidence {self.confidence:g}; a witness's value is the "
               "lower confidence bound of the schedule-averaged divergence")
        if not self.checked:
            how = (f"{self.method}: " if self.runs else "") + (f"{self.runs} run(s) made" if self.runs else "no run")
        order = f"order {self.alpha:g}; " if self.alpha is not None else ""
        none = "; none stated for this run, so no Renyi order" if self.alpha is None else ""
        members = Observer.parse(self.observer).agents
        each = (f"; checked member by member: the claim is about one node's view, not the {len(members)} "
                "members' joint view" if len(members) > 1 else "")
        found = (f"{self.failed} of {self.pairs} pairs above it" if self.checked else
                 f"its {self.pairs} pairs not checked")
        lines = [f"pairwise claim for observer {self.observer} ({order}{self.statement}{none}{each}): "
                 f"{self.verdict}: {found} [{how}]"]
        for f in self.failures:
            lines.append(f"  witness u={f.u} -> v={f.v} (distance {f.distance}): {f.exact:.6g} > claimed "
                         f"{f.claimed:.6g}" + (f", from round {f.round}" if f.round is not None else ""))
        if self.reason:
            lines.append(f"  {self.reason}")
        return "\n".join(lines)


def check_observer_claim(scenario: Any, observer: str | Observer, *, runs: int = 20, seed: int | None = None,
                         engine: str = "simpy", confidence: float = 0.95, max_witnesses: int = 5,
                         find_rounds: bool = True) -> ObserverClaimCheck | None:
    """Verify the paper's pairwise claim on the pairs ``(u, v)``, ``v`` the observer's node(s).

    Args:
        scenario: the scenario (its rule must be affine in the noise, verified on the runs).
        observer: ``node:v`` or ``nodes:S`` (other observers: ``None``, nothing to check).
        runs: engine runs for a random schedule (>= 2; unused for a deterministic one).
        seed: seed of the first run (run ``r`` uses ``seed + r``; default the scenario's).
        engine: the engine of the runs.
        confidence: family-wise confidence of the sampled bounds, in (0, 1).
        max_witnesses: witnesses kept.
        find_rounds: locate each witness's first round.

    Returns:
        The :class:`ObserverClaimCheck`, or ``None`` when the paper claims no pairwise bound or the observer is
        not a node set.

    Raises:
        ScenarioError: a bad observer, ``runs`` or ``confidence``.

    A rule that fails the affinity check on a run gets an ``inconclusive`` result saying so (the claim is
    about exact pairwise values, which such a rule does not have).
    """
    obs = parse_observer(observer, scenario.problem.num_agents) if isinstance(observer, str) else observer
    if obs.kind != "nodes":
        return None
    if not 0 < confidence < 1:
        raise ScenarioError(f"confidence must lie in (0, 1), got {confidence!r}")
    nodes = list(obs.agents)
    try:
        claim = pairwise_claim_of(scenario)
    except TopologyMismatchError as e:  # the paper's claim does not describe this run: no verdict, with the reason
        return ObserverClaimCheck(str(obs), "the paper's pairwise claim", None, "inconclusive",
                                  EXACT if deterministic_schedule(scenario) else SAMPLED, confidence, 0,
                                  len(nodes) * (scenario.problem.num_agents - 1), 0, checked=False,
                                  reason=f"not checked (no claim, so no Renyi order, for this run): {e}")
    if claim is None:
        return None
    try:
        return _checked(scenario, claim, obs, nodes, runs, seed, engine, confidence, max_witnesses, find_rounds)
    except _NotAffine as e:
        pairs = len(nodes) * (scenario.problem.num_agents - 1)
        return ObserverClaimCheck(str(obs), getattr(claim, "statement", ""), claim.alpha, "inconclusive",
                                  EXACT if deterministic_schedule(scenario) else SAMPLED, confidence, e.runs, pairs,
                                  0, checked=False, reason=f"not checked: {e} (no exact pairwise value for a rule "
                                  "that is not affine in the noise)")


class _NotAffine(Exception):
    """The rule failed the affinity check on a run (``runs``: the engine runs made up to that one)."""

    def __init__(self, message: str, runs: int) -> None:
        super().__init__(message)
        self.runs = runs


def _checked(scenario: Any, claim: Any, obs: Observer, nodes: list[int], runs: int, seed: int | None, engine: str,
             confidence: float, max_witnesses: int, find_rounds: bool) -> ObserverClaimCheck:
    if deterministic_schedule(scenario):
        try:
            rows = list(leakage_rows(scenario, alpha=claim.alpha, observers=nodes, engine=engine))
        except ScenarioError as e:
            if "affine in the noise" in str(e):
                raise _NotAffine(str(e), 1) from None
            raise
        check = check_pairwise_claim(scenario, claim, rows, max_witnesses=max_witnesses, find_rounds=find_rounds)
        reason = (check.reason or "no pair above the claim, but some values are lower estimates (ambiguous rank "
                  "decisions): they certify nothing") if check.verdict == "inconclusive" else ""
        return ObserverClaimCheck(str(obs), check.statement, claim.alpha, check.verdict, EXACT, 1.0, 1, check.pairs,
                                  check.failed, check.failures, reason)
    return _sampled(scenario, claim, obs, nodes, runs, seed, engine, confidence, max_witnesses, find_rounds)


def _sampled(scenario: Any, claim: Any, obs: Observer, nodes: list[int], runs: int, seed: int | None, engine: str,
             confidence: float, max_witnesses: int, find_rounds: bool) -> ObserverClaimCheck:
    from .network import affine_runs, run_witness_round

    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ScenarioError(f"runs must be an integer >= 2 for a random schedule, got {runs!r}")
    n = scenario.problem.num_agents
    alpha = claim.alpha
    sens = float(scenario.problem.domain.diameter)
    d_max = affine_renyi_bound(scenario, alpha)  # the verified structure's bound, not the paper's lemma
    first = scenario.seed if seed is None else seed
    results, scheds, not_affine = affine_runs(scenario, runs, first, engine)
    if not_affine is not None:
        raise _NotAffine(f"{not_affine[0]}: {not_affine[1]}", len(results) + (not_affine[0] != "a probe run"))
    pairs = len(nodes) * (n - 1)
    gap = (1.0 - confidence) / max(pairs, 1)
    margin = d_max * math.sqrt(math.log(1.0 / gap) / (2.0 * runs)) if math.isfinite(d_max) else math.inf
    rounding = witness_margin(d_max)  # in the values' unit, the local budget
    found: list[tuple[PairFailure, int]] = []
    all_below, all_exact = True, True
    lemma_broken: Any = None
    artifact: tuple[int, int] | None = None  # an infinite lower estimate with no round-1 noise: no witness
    graph = gossip_graph(scenario)
    for v in nodes:
        per_run = [_losses(s, Observer.node(v), list(range(n)), sens, res) for s, res in zip(scheds, results)]
        dist = shortest_paths(scenario, v, graph)
        bounds = claimed_bounds(claim, v, dist, n)
        for u in range(n):
            if u == v:
                continue
            ds = [pr[u].renyi(alpha) for pr in per_run]
            all_exact &= all(pr[u].exact for pr in per_run)
            if not all(math.isfinite(d) for d in ds) and not math.isfinite(d_max):
                # an exact infinite loss on a sampled schedule makes the average infinite; an infinite lower estimate
                # (a shift outside the numerical range of a view with directions at rounding level) is no witness
                sure = [r for r, d in enumerate(ds) if math.isinf(d) and per_run[r][u].exact]
                if sure:
                    found.append((PairFailure(u, v, int(dist[u]), float(bounds[u]), math.inf, None), sure[0]))
                else:
                    artifact = artifact or (u, v)
                all_below = False
                continue
            if max(ds) > d_max * (1 + 1e-9):
                # above the bound every schedule obeys under the verified structure: the confidence bounds
                # (whose range is d_max) cannot be formed
                lemma_broken = lemma_broken or (u, v, max(ds))
                all_below = False
                continue
            lower = float(np.mean(ds)) - margin
            if lower > bounds[u] + rounding:
                found.append((PairFailure(u, v, int(dist[u]), float(bounds[u]), lower, None), int(np.argmax(ds))))
            if all_below:
                upper = (combine_renyi(rounded_to_bound(ds, d_max), alpha, d_max, gap).upper
                         if math.isfinite(d_max) else math.inf)
                all_below = upper <= bounds[u] + rounding
    found.sort(key=lambda x: -(x[0].exact - x[0].claimed))
    kept = found[:max_witnesses]
    failures = []
    for f, run in kept:
        rnd = run_witness_round(results[run], scheds[run], f.u, f.v, f.claimed, alpha, sens, rounding) if find_rounds else None
        failures.append(PairFailure(f.u, f.v, f.distance, f.claimed, f.exact, rnd))
    if found:
        verdict, reason = "violation", ""
    elif all_below and all_exact:
        verdict, reason = "pass", ""
    elif lemma_broken:
        u, v, worst = lemma_broken
        verdict = "inconclusive"
        reason = (f"pair u={u} -> v={v}: the computed loss on a sampled schedule ({worst:.6g}) exceeds the bound "
                  f"alpha Delta^2 / (2 s_1^2) = {d_max:.6g} that every schedule obeys under the verified structure: "
                  "no confidence bound can be formed")
    elif artifact:
        verdict = "inconclusive"
        reason = (f"pair u={artifact[0]} -> v={artifact[1]}: the computed loss is infinite on a sampled schedule and "
                  "only a lower estimate (the view has directions at rounding level) and, without round-1 noise, no "
                  "bound holds on every schedule: it may be a numerical artifact or a true infinite loss (a noise-free "
                  "release too faint to certify), which the figures do not tell apart: no witness")
    else:
        verdict = "inconclusive"
        reason = ("no pair's lower confidence bound exceeds the claim, but not every upper confidence bound is "
                  "below it" if not all_below else "some per-schedule values are lower estimates")
        reason += f" ({runs} runs; more runs narrow the bounds)"
    return ObserverClaimCheck(str(obs), getattr(claim, "statement", ""), alpha, verdict, SAMPLED, confidence, runs,
                              pairs, len(found), tuple(failures), reason)

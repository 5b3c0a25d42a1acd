"""Does the accountant's sensitivity cover the user's pair? :func:`check_coverage`.

The accountant composes every release with the paper record's sensitivity
lemma (:meth:`asyncdp.papers.Paper.sensitivity`). The lemma speaks of an
*adjacency class* (:class:`asyncdp.papers.GradientClass`); the user's pair
need not lie in it. A bound composed for pairs the user's pair is not one of
may say ``pass`` while the pair's own releases move further than the bound
allows. So the check measures the pair:

* **realized shifts**: replaying the engine's runs of both scenarios under both problems on
  their realized schedules gives every release's noise-free value under
  ``P`` and ``P'`` (:func:`accounting.coverage.realized_shifts`); each shift
  is compared with the lemma's value of its release
  (:func:`accounting.coverage.uncovered_releases`; L2 for Gaussian, L1 for
  Laplace noise). Given the released past, only the changed agent's
  releases can move (every agent's under round adjacency);
* **the class relation on the pair itself**: a class stated as a relation
  between the two costs (``kind="difference"``: the gradients differ by at
  most ``C``, e.g. the gradient adjacency of Wang and Başar, Automatica
  2023, eq. 30; or a paper record's ``relation``, a condition every pair of
  its adjacency meets, e.g. their eq. 28's ``nu / n_i`` for one changed
  sample) is checked on the pair directly, at the points the runs
  visit (the changed agent's initial point, its released values, projected
  onto the domain, its decisions in the replays, and every point where the
  replays evaluate its gradient, e.g. the mixed point ``z`` of a step
  ``x = z - a grad f(z)``, neither a release nor a decision) in every run of
  both scenarios (a pair may break the class only where a few runs go, or only
  where it evaluates its cost: its noisy releases need not come near). A class ``kind="each"`` (every gradient bounded by ``C``)
  contains the pair whenever the problem meets its declared constants or the
  rule clips its gradients, so a pair is never shown to lie outside it; but a
  shift above the bound on a pair whose gradients exceed ``C`` at a released
  value is a doubt, not a witness (an unclipped rule outside its class and a
  clipping rule with a wrong lemma move alike).

A shift above the bound on a pair shown to lie outside the class is a
**refusal**: the pair says nothing about the claim, and
:class:`accounting.errors.AdjacencyError` names the class, the agent, the
round and the shift (the command line exits 2). A pair outside a relation
class is refused even when every shift is covered: it is never ``pass``
(the claim says nothing of it either way). A shift above
the bound on a pair not shown to lie outside the class is a **witness
against the lemma** (exact: no sampling error, given the replay), and the
verdict is ``violation``. A pair whose runs cannot be replayed leaves the
coverage unverified: a doubt, never ``pass``.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> e = check_coverage(*small_example())
    >>> e.witness is None, e.figures["coverage_max_ratio"] <= 1.0 + 1e-9
    (True, True)
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np

from accounting.coverage import realized_shifts, release_norms, uncovered_by_norms
from accounting.errors import AccountingError, AdjacencyError

from .behavior import declared_noise, replay_runs, run_origin
from .context import CheckContext, ScenarioPair
from .evidence import Evidence, find_figure, set_aside_witnesses
from .roundoff import release_spacing

__all__ = ["check_coverage", "class_measure", "each_class_exceeded", "set_aside_outside_class", "PAIR_WITNESS_KINDS", "PAIR_METHOD", "class_outside_at", "class_roundoff", "class_relation", "pair_shifts",
           "CLASS_RTOL", "OUTSIDE_REFUSAL"]

CLASS_RTOL = 1e-9
"""Relative tolerance of a class measure against its bound (:func:`class_measure`): round-off of a norm at the bound."""

OUTSIDE_REFUSAL = ("; refused: the claim speaks of pairs in that class, so this pair is evidence neither for nor "
                   "against it (the check stops; check a pair of the class)")
"""How a refusal of a pair outside its paper's class ends (:func:`check_coverage`, the prober's)."""

UNRESOLVED_LEMMA = 1e-4
"""Above this fraction of the lemma's loss (``sum_t lemma_t / scale_t``; one round's for a per-iteration claim), the
loss the comparisons' allowance on each shift may hide (``sum_t allowance / scale_t``: :func:`shift_roundoff`, at
least the floor ``1e-12``) leaves the comparison with the lemma unresolved: a rule computing at the resolution of
its values (states near ``1e8``, a lemma and noise near ``1e-7``) could move its releases past the lemma unseen."""


def _unresolved(ctx: CheckContext, horizon: int, allowance: float) -> str | None:
    """Why the lemma comparisons cannot see a release moved past the lemma by the allowance they grant, or ``None``.

    Each noisy release may be moved by ``allowance`` past its bound unseen, adding at most ``allowance / scale``
    to its loss. Unresolved when that loss exceeds :data:`UNRESOLVED_LEMMA` of the lemma's own loss: summed over
    the rounds for a claim over the run, in any one round against the largest round's for a per-iteration claim
    (``ctx.focus``; a sum over many rounds would dilute one round's), and wherever the lemma allows no loss at all.

    Args:
        ctx: the check's context (the algorithm's declared noise, the lemma, the focus round).
        horizon: the rounds.
        allowance: the absolute tolerance of the comparisons (round-off, at least their floor ``1e-12``).

    Returns:
        One line naming the allowance and the loss it may hide, or ``None``.
    """
    assert ctx.sensitivity is not None
    hidden = np.zeros(horizon)
    lemma = np.zeros(horizon)
    for c, ch in declared_noise(ctx.algorithm, horizon).items():
        if ch.mechanism is None or c not in ctx.sensitivity:
            continue
        sc = np.asarray(ch.scales, dtype=float)[:horizon]
        noisy = sc > 0
        inv = np.where(noisy, 1.0 / np.where(noisy, sc, 1.0), 0.0)
        hidden += allowance * inv
        lemma += np.asarray(ctx.sensitivity[c], dtype=float)[:horizon] * inv
    reduce = np.max if ctx.focus is not None else np.sum
    hidden_loss, lemma_loss = float(reduce(hidden, initial=0.0)), float(reduce(lemma, initial=0.0))
    if not hidden_loss > UNRESOLVED_LEMMA * lemma_loss:
        return None
    share = f"{hidden_loss / lemma_loss:.3g} of" if lemma_loss > 0 else "while the lemma allows no loss, against"
    where = "in one round" if ctx.focus is not None else "over the rounds"
    return (f"coverage: each shift may carry {allowance:.3g} of round-off (the floating-point spacing of the released "
            f"values or of the states they are computed from, at least the comparisons' floor 1e-12), a loss of "
            f"{hidden_loss:.3g} {where}, {share} the lemma's {lemma_loss:.3g}: releases moved past the lemma by "
            "that little are not seen")


def _under_adjacent(pair: ScenarioPair, ctx: CheckContext, side: int, replay: Any) -> Any:
    """One side's engine runs replayed under ``P'`` (what :func:`realized_shifts` subtracts from ``replay``).

    The replay under both problems already holds ``y - mu_P'`` (the same combinations a second replay with
    ``P'`` as its rule computes), so the shifts cost no further replay when it kept them.
    """
    return (SimpleNamespace(residuals=replay.residuals_prime) if replay.residuals_prime is not None
            else replay_runs(ctx.engine_runs(side), pair.adjacent, algorithm=ctx.algorithm))


def _both_sides(sides: list[tuple[Any, Any]], noisy: set[str]) -> dict[str, np.ndarray]:
    """Per noisy channel the shifts of both sides' runs, the scenario's runs first along the first axis: each side's
    written into its rows of one array (not two arrays concatenated), or concatenated where the sides' releases
    differ in shape beyond the runs (raising what ``numpy.concatenate`` raises)."""
    (p0, q0), (p1, q1) = sides
    shapes = {c: (np.shape(r), np.shape(p1.residuals.get(c))) for c, r in p0.residuals.items() if c in noisy}
    if any(not b or a[1:] != b[1:] for a, b in shapes.values()):
        side0, side1 = realized_shifts(p0, q0), realized_shifts(p1, q1)
        return {c: np.concatenate([s, side1[c]], axis=0) for c, s in side0.items() if c in noisy}
    out = {c: np.empty((a[0] + b[0],) + a[1:]) for c, (a, b) in shapes.items()}
    realized_shifts(p0, q0, out={c: o[:shapes[c][0][0]] for c, o in out.items()})
    realized_shifts(p1, q1, out={c: o[shapes[c][0][0]:] for c, o in out.items()})
    return out


def pair_shifts(pair: ScenarioPair, ctx: CheckContext) -> dict[str, np.ndarray] | AccountingError:
    """Per noisy channel, every release's realized shift ``mu_P - mu_P'`` on both scenarios' engine runs (or why not).

    Args:
        pair: the scenario pair.
        ctx: the shared context (its engine runs and their replay under ``P`` and ``P'``, whose residuals under
            ``P'`` give the shifts without a second replay).

    Returns:
        Per channel the shifts, the scenario's runs then the adjacent scenario's runs along the first axis
        (NaN where nothing was released), or the replay's error.
    """
    if "shifts" not in ctx.cache:
        replay = ctx.realized_replay()
        if isinstance(replay, AccountingError):
            ctx.cache["shifts"] = replay
        else:
            try:
                noisy = {c for c, ch in declared_noise(ctx.algorithm, pair.scenario.horizon).items()
                         if ch.mechanism is not None}
                side0 = (replay, _under_adjacent(pair, ctx, 0, replay))
                # the adjacent scenario's runs too: a cost difference that only matters where the adjacent data
                # leads (or another agent's, away from the points the adjacency check compares) moves releases
                # of those runs and need not move any release of the scenario's own runs
                adjacent = ctx.adjacent_replay()
                if isinstance(adjacent, AccountingError):
                    raise adjacent
                ctx.cache["shifts"] = _both_sides([side0, (adjacent, _under_adjacent(pair, ctx, 1, adjacent))], noisy)
            except AccountingError as exc:
                ctx.cache["shifts"] = exc
    return ctx.cache["shifts"]


def _class_points(pair: ScenarioPair, ctx: CheckContext, agent: int, runs: int | None = None,
                  sides: tuple[int, ...] = (0, 1)) -> np.ndarray:
    """Points of the runs where the class relation is evaluated, ``(k, d)``: the agent's ``x0`` and its released
    values (projected onto the domain) from the first ``runs`` runs (``None``: all) of each side in ``sides`` (0: the
    scenario's, 1: the adjacent)."""
    problem = pair.scenario.problem
    d = problem.dim
    pts = [np.asarray(pair.scenario.initial_points(), dtype=float)[agent].reshape(1, d)]
    for side in sides:
        engine = ctx.engine_runs(side)
        for arr in engine.messages.values():
            if arr.shape[-1] != d:
                continue
            a = arr[:runs, :, agent] if not engine.unicast else arr[:runs, :, agent].mean(axis=2)
            a = a.reshape(-1, d)
            a = a[np.isfinite(a).all(axis=1)]
            if len(a):
                pts.append(np.asarray(problem.domain.project(a), dtype=float))
    return np.concatenate(pts, axis=0)


def class_measure(cls: Any, gradient: Any, gradient_prime: Any) -> np.ndarray:
    """What a gradient class bounds, at each point: a pair lies in the class where it is at most ``cls.bound``.

    ``kind="difference"``: the norm ``cls.norm`` of ``g - g'``; ``kind="each"`` (and a
    :class:`~asyncdp.papers.RoundClass`): the larger L2 norm of ``g`` and ``g'``.

    Args:
        cls: a :class:`~asyncdp.papers.GradientClass` or :class:`~asyncdp.papers.RoundClass`.
        gradient, gradient_prime: the two costs' gradients at the same points, ``(k, d)``.

    Returns:
        ``(k,)`` values.

    Example:
        >>> from asyncdp.papers import GradientClass
        >>> class_measure(GradientClass(1.0, "l1", "difference"), [[1.0, 1.0]], [[0.5, 0.0]]).tolist()
        [1.5]
        >>> class_measure(GradientClass(1.0, "l2"), [[3.0, 4.0]], [[0.0, 1.0]]).tolist()
        [5.0]
    """
    g, g2 = np.asarray(gradient, dtype=float), np.asarray(gradient_prime, dtype=float)
    if cls.kind == "difference":
        return release_norms(g - g2, cls.norm)
    return np.maximum(release_norms(g, "l2"), release_norms(g2, "l2"))


def class_relation(pair: ScenarioPair, ctx: CheckContext) -> str | None:
    """Why the pair lies outside its paper's adjacency class, found at a point of the runs, or ``None``.

    ``None`` means "not shown to be outside": no class, a class that is not a
    relation of the two costs (``kind="each"``), round adjacency, or every
    evaluated point meets it. The points are those of every run of both
    scenarios: the changed agent's releases (:func:`_class_points`), and its
    decisions in the replays of :func:`pair_shifts`
    (:meth:`~asyncdp.privacy.context.CheckContext.replayed_decisions`) and the
    points where those replays evaluate its gradient
    (:meth:`~asyncdp.privacy.context.CheckContext.replayed_gradient_points`):
    a pair outside the class only where a few runs go, or only where the rule
    evaluates its cost, is never ``pass``. Both
    costs' gradients are evaluated once on each set of points (the answer is
    kept in ``ctx.cache``): one vectorized call per cost, or, for a cost that
    loops over points in Python (:class:`~asyncdp.problems.costs.UserCost`),
    about ``4 runs T`` calls of each of the changed agent's two gradient
    callables (releases and decisions of both scenarios' runs, as many again
    for each gradient call per round of the rule; some 0.4 s of
    CPU at 1000 runs of 20 rounds, against some 40 ms for a vectorized family
    at 1000 runs of 30). Nothing is evaluated without a relation class.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        One sentence naming the class, the agent, the point and the value, or ``None``.

    Raises:
        PaperError: the paper record's ``relation`` fails (:func:`_difference_class`).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> class_relation(*small_example()) is None
        True
    """
    if "class_relation" not in ctx.cache:
        agent = ctx.changed_agent
        if agent is None or ctx.sensitivity is None or _difference_class(pair) is None:
            ctx.cache["class_relation"] = None
        else:
            pair_shifts(pair, ctx)  # the replays keep the changed agent's decisions (once, for the shifts too)
            states = ctx.replayed_decisions()
            ctx.cache["class_relation"] = (
                class_outside_at(pair, ctx, _class_points(pair, ctx, agent), "a released value of the runs")
                or class_outside_at(pair, ctx, states, "a state of the replayed runs, where its cost is evaluated")
                or class_outside_at(pair, ctx, ctx.replayed_gradient_points(),
                                    "a point where the replays evaluate its gradient"))
    return ctx.cache["class_relation"]


EACH_CLASS_DOUBT = (": a rule that does not clip its gradients is not covered by its lemma there (the pair is "
                    "outside the class), a rule that clips is (the lemma is wrong), and the check cannot tell which; "
                    "check a pair of the class (the worst-case search constructs such pairs itself)")
"""Why a move past a bound where the user's pair leaves a class of bounded gradients is a doubt
(``each_class_exceeded``)."""


def each_class_exceeded(pair: ScenarioPair, ctx: CheckContext, points: Any, where: str) -> str | None:
    """Where the changed agent's gradients exceed a class of bounded gradients (``kind="each"``), or ``None``.

    Such a class is not a relation of the two costs: a rule that clips its gradients meets it on every pair, so a
    pair is never refused for it (:func:`class_relation`). It is evaluated where a step of the user's pair moved a
    release more than its bound (sensitivity coverage: ``x0`` and the released values; the prober: its witness's
    input): gradients above the bound there make that move evidence against the lemma only for a rule that clips,
    and an unclipped rule outside its class moves alike, so the move is a doubt, not a witness.

    Args:
        pair: the scenario pair.
        ctx: the shared context (the changed agent).
        points: ``(k, d)`` points at which the changed agent's two gradients are evaluated.
        where: what the points are, for the sentence (e.g. ``"a released value of the runs"``).

    Returns:
        One clause naming the class's bound, the agent, the point and the norm, or ``None`` (no such class, round
        adjacency, or every point meets the bound).
    """
    from .candidate_pairs import adjacency_class

    agent, cls = ctx.changed_agent, adjacency_class(pair.scenario)
    if agent is None or cls is None or getattr(cls, "kind", None) != "each":
        return None
    pts = np.asarray(points, dtype=float)
    if pts.size % pair.scenario.problem.dim:  # not points of the domain (a probe of a wider state)
        return None
    beyond = _beyond_class(pair, agent, cls, pts)
    if beyond is None:
        return None
    point, value = beyond
    return (f"agent {agent}'s gradients reach L2 norm {value:.6g} at x = {point} ({where}), above the "
            f"bound {cls.bound:.6g} of paper {ctx.paper.paper.name!r}'s class of bounded gradients")


def _beyond_class(pair: ScenarioPair, agent: int, cls: Any, points: Any) -> tuple[str, float] | None:
    """The point (printed) and class measure (:func:`class_measure`) of the first of ``points`` where the changed
    agent's two gradients lie furthest beyond ``cls.bound``, allowing :data:`CLASS_RTOL` and
    :func:`class_roundoff`; ``None`` when no point does (or there is none)."""
    pts = np.asarray(points, dtype=float).reshape(-1, pair.scenario.problem.dim)
    if not len(pts):
        return None
    g = np.asarray(pair.scenario.problem.costs.gradient(agent, pts), dtype=float)
    g2 = np.asarray(pair.adjacent.problem.costs.gradient(agent, pts), dtype=float)
    # each coordinate of a computed gradient is within a few spacings of its own magnitude: a pair whose gradients
    # differ by exactly the bound, near 1e8, differs by 1 + 1.5e-8 once computed (:func:`class_roundoff`)
    vals = class_measure(cls, g, g2)
    k = int(np.argmax(vals - class_roundoff(g, g2)))
    if vals[k] - class_roundoff(g[k], g2[k]) <= cls.bound * (1 + CLASS_RTOL):
        return None
    return np.array2string(pts[k], precision=4, separator=", "), float(vals[k])


PAIR_WITNESS_KINDS = ("replay", "blackbox", "pair")
"""Witnesses that rest on the user's pair's own losses or outputs (exact replay, the black-box audit, the property
check's pair step)."""

PAIR_METHOD = "the pair's delta(epsilon)"
"""The property check's step on the user's own pair (:func:`~asyncdp.privacy.properties.decide_pair`): each of its
witnesses rests on that pair, whatever its kind (its realized shifts over the lemma are of kind ``"sensitivity"``)."""


def set_aside_outside_class(evidence: list[Evidence]) -> list[Evidence]:
    """``evidence`` with every witness on the user's pair (:data:`PAIR_WITNESS_KINDS`, :data:`PAIR_METHOD`) turned into a doubt when
    sensitivity coverage found the pair's releases moving past the lemma where its gradients exceed a class of
    bounded gradients (figure ``coverage_outside_class``, ``each_class_exceeded``).

    Such a pair says something of the claim only if the rule clips its gradients, which the runs cannot tell: a
    loss or an audit of that pair above the claim is then no witness against it (a correct rule that does not clip
    would show the same). Witnesses on pairs of the class (the prober's, the worst-case search's) are kept.

    Args:
        evidence: every method's evidence, in order.

    Returns:
        The same list, or a copy with those witnesses set aside.
    """
    outside = find_figure(evidence, "coverage_outside_class")
    if outside is None:
        return evidence
    return set_aside_witnesses(
        evidence, lambda e: e.witness.get("kind") in PAIR_WITNESS_KINDS or e.method == PAIR_METHOD,
        lambda e: (f"{e.method}: its witness is on the user's pair, whose releases move past the lemma where its "
                   f"gradients exceed the class of bounded gradients ({outside}): evidence against the claim only "
                   "for a rule that clips its gradients, which the runs cannot tell; set aside"))


def _difference_class(pair: ScenarioPair) -> Any:
    """The relation of the two costs every pair of the paper's adjacency meets (its record's ``relation``, by default
    its adjacency class where that is one, ``kind="difference"``), else ``None``.

    Raises:
        PaperError: the record's ``relation`` raises or returns something other than a relation-type
            :class:`~asyncdp.papers.GradientClass` (a :class:`~asyncdp.errors.ScenarioError` passes through).
    """
    from ..errors import ScenarioError
    from ..papers import GradientClass, PaperError, find_paper
    from .candidate_pairs import adjacency_class

    paper = find_paper(pair.scenario.algorithm)
    if paper is None or paper.relation is None:
        cls = adjacency_class(pair.scenario)
        return cls if cls is not None and cls.kind == "difference" else None
    try:
        cls = paper.relation(pair.scenario)
    except ScenarioError:
        raise
    except Exception as exc:  # a user's relation: report it as its fault, in one line (as the adjacency's)
        raise PaperError(f"paper {paper.name!r}: the relation raised {type(exc).__name__}: {exc}") from exc
    if cls is not None and not (isinstance(cls, GradientClass) and cls.kind == "difference"):
        raise PaperError(f"paper {paper.name!r}: relation must return a GradientClass of kind 'difference' or None, "
                         f"got {cls!r}"[:300])
    return cls


def class_outside_at(pair: ScenarioPair, ctx: CheckContext, points: Any, where: str) -> str | None:
    """Why the pair lies outside its paper's relation class at one of ``points``, or ``None`` (see :func:`class_relation`).

    Args:
        pair: the scenario pair.
        ctx: the shared context (the changed agent).
        points: ``(k, d)`` points at which the changed agent's two gradients are compared.
        where: what the points are, for the sentence (e.g. ``"a point of the runs"``).

    Returns:
        One sentence naming the class, the agent, the point and the value, or ``None`` (no relation class, round
        adjacency, or every point meets it).
    """
    agent = ctx.changed_agent
    cls = _difference_class(pair)
    if agent is None or cls is None:
        return None
    beyond = _beyond_class(pair, agent, cls, points)
    if beyond is None:
        return None
    point, value = beyond
    what = f"gradients differing by at most {cls.bound:.6g} in {cls.norm}"
    return (f"the pair lies outside the adjacency class of paper {ctx.paper.paper.name!r} ({what}): at x = "
            f"{point} ({where}) agent {agent}'s two gradients differ by {value:.10g}")


def class_roundoff(gradient: Any, gradient_prime: Any) -> np.ndarray:
    """The most round-off can add to a class measure at each point: ``4 sum_k spacing(max(|g_k|, |g'_k|))``.

    Each computed gradient coordinate carries a few floating-point spacings of its own magnitude (the same
    ``4 spacing`` :func:`shift_roundoff` allows a shift's coordinate), so their difference carries at most the sum
    over the coordinates (its L1 norm, and a fortiori its L2 norm). Negligible unless the gradients are far larger
    than the class's bound (near ``1e8`` it is about ``1e-7``, above :data:`CLASS_RTOL` of a bound of 1).

    Args:
        gradient, gradient_prime: the two costs' gradients at the same points, ``(k, d)``.

    Returns:
        ``(k,)`` allowances.

    Example:
        >>> bool(class_roundoff([[1e8, 0.0]], [[1e8 - 1, 0.0]])[0] == 4 * (np.spacing(1e8) + np.spacing(0.0)))
        True
    """
    top = np.maximum(np.abs(np.asarray(gradient, dtype=float)), np.abs(np.asarray(gradient_prime, dtype=float)))
    return 4.0 * np.spacing(top).sum(axis=-1)


def shift_roundoff(messages: Any, state_magnitude: float = 0.0) -> float:
    """The most floating-point round-off can add to a realized shift's norm: ``4 d spacing(M)``.

    A shift ``mu_P - mu_P'`` is a difference of two means computed from the same released transcript, each
    within a few floating-point spacings of the values it is computed from, so each of its ``d`` coordinates
    carries at most ``4 spacing(M)`` of round-off, ``M`` the larger of the largest released value and
    ``state_magnitude`` (the replay's budget of ``asyncdp.privacy.roundoff`` assumes the same); its L1 norm
    (and a fortiori its L2 norm) at most ``d`` times that. The comparison with the lemma allows this much on
    top of its relative tolerance: a correct rule whose releases are large numbers (near ``1e8``, spacing
    ``1.5e-8``), or offsets from states that large, and whose shifts attain the lemma was refuted by
    round-off. Negligible unless the releases or states are far larger than the lemma.

    Args:
        messages: per channel the released values, ``(R, T, N, ..., d)`` (NaN where nothing was released).
        state_magnitude: the largest absolute state the means are computed from
            (:attr:`~asyncdp.privacy.context.CheckContext.state_magnitude`), ``>= 0``.

    Returns:
        The tolerance, over every channel (0 without a finite release).

    Example:
        >>> bool(shift_roundoff({"y": np.full((1, 1, 1, 2), 1e8 + 0.1)}) == 8 * np.spacing(1e8))
        True
        >>> bool(shift_roundoff({"y": np.full((1, 1, 1, 2), 0.1)}, 1e8) == 8 * np.spacing(1e8))
        True
    """
    return max((np.shape(m)[-1] * coordinate_roundoff(m, state_magnitude) for m in messages.values()), default=0.0)


def coordinate_roundoff(messages: Any, state_magnitude: float = 0.0) -> float:
    """The round-off one coordinate of a shift of one channel may carry: ``4 spacing(M)`` (:func:`shift_roundoff`),
    float32's spacing for a channel whose releases are all float32 numbers
    (``asyncdp.privacy.roundoff.release_spacing``: each release is rounded to that resolution).

    Args:
        messages: the channel's released values (NaN where nothing was released).
        state_magnitude: the largest absolute state the means are computed from.

    Returns:
        The tolerance (0 without a finite release).

    Example:
        >>> bool(coordinate_roundoff(np.array([0.1, np.nan]), 1e8) == 4 * np.spacing(1e8))
        True
        >>> bool(coordinate_roundoff(np.array([0.5, np.nan]), 1e8) == 4 * np.spacing(np.float32(1e8)))  # float32 values
        True
    """
    a = np.abs(np.asarray(messages, dtype=float))
    top = float(np.max(a, where=np.isfinite(a), initial=-np.inf))  # the largest finite value (-inf: none)
    return 4.0 * float(release_spacing(a, max(top, state_magnitude))) if top >= 0 else 0.0


def _bounds(ctx: CheckContext, shifts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per channel the ``(T, N)`` bound table: the lemma for the changed agent(s), 0 for every other agent."""
    assert ctx.sensitivity is not None
    out = {}
    for c, s in shifts.items():
        agents = s.shape[2]
        table = np.zeros((s.shape[1], agents))
        cols = range(agents) if ctx.changed_agent is None else [ctx.changed_agent]
        for i in cols:
            table[:, i] = ctx.sensitivity[c]
        out[c] = table
    return out


def check_coverage(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Compare every release's realized shift with the accountant's sensitivity; check the class on the pair.

    See the module docstring for what is compared and how a hit is read.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"sensitivity coverage"`` (realized behavior) with figures
        ``coverage_max_ratio`` (largest shift over its bound; ``None`` when
        not measured) and ``coverage_uncovered`` (releases over their
        bound); witness ``{"kind": "coverage", "against": "lemma", "channel",
        "agent", "round", "shift", "bound", "run", "side" (0: the scenario's runs, 1: the adjacent
        scenario's), "run_seed" (and "batch_row": :func:`~asyncdp.privacy.behavior.run_origin`), "norm", "method",
        "confidence", "claim_form"}`` when the pair is not shown to lie
        outside the class; for a class of bounded gradients (``kind="each"``) whose bound the changed agent's
        gradients exceed at a released value, a doubt instead (``each_class_exceeded``).

    Raises:
        AdjacencyError: the pair lies outside the paper's adjacency class
            and a release moves more than its bound, or the class is a
            relation of the two costs that the pair breaks (one line naming
            the class, the agent, the round and the shift or the point).
    """
    figures: dict[str, Any] = {"coverage_max_ratio": None, "coverage_uncovered": None}
    if ctx.sensitivity is None:
        return Evidence("sensitivity coverage", "realized behavior", figures,
                        reasons=(f"coverage: not measured: {ctx.no_sensitivity}",))
    outside = class_relation(pair, ctx)
    shifts = pair_shifts(pair, ctx)
    if isinstance(shifts, AccountingError):
        if outside is not None:
            raise AdjacencyError(f"{outside}{OUTSIDE_REFUSAL}")
        why = f"coverage: the runs cannot be replayed under both problems, so the shifts are unmeasured: {shifts}"
        return Evidence("sensitivity coverage", "realized behavior", figures, reasons=(why,), doubt=why)
    mechanisms = {c: str(ch.mechanism) for c, ch in declared_noise(ctx.algorithm, pair.scenario.horizon).items()
                  if c in shifts}
    bounds = _bounds(ctx, shifts)
    norms = {c: release_norms(s, mechanisms[c], c) for c, s in shifts.items()}  # once, for the hits and the ratio
    roundoff = max(shift_roundoff({c: ctx.engine_runs(k).messages[c] for c in shifts}, ctx.state_magnitude)
                   for k in (0, 1))
    allowance = max(1e-12, roundoff)
    hits = uncovered_by_norms(norms, bounds, mechanisms, atol=allowance)
    ratio = 0.0
    for c, mags in norms.items():
        if np.isnan(mags).all():
            continue
        # each release's largest shift over the runs, then over its bound: the bound is the same on every run and
        # division by a positive bound is monotone, so this is the largest of the runs' ratios
        top = np.max(np.where(np.isnan(mags), -np.inf, mags), axis=0)
        lim = bounds[c] if top.ndim == 2 else bounds[c][:, :, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(lim > 0, top / np.where(lim > 0, lim, 1.0), np.where(top > 1e-12, np.inf, 0.0))
        ratio = max(ratio, float(np.max(np.where(np.isneginf(top), -np.inf, r))))
    figures.update(coverage_max_ratio=ratio, coverage_uncovered=len(hits))
    if outside is not None:
        shift = (f"; channel {hits[0].channel!r}, agent {hits[0].agent}, round {hits[0].round}: shift "
                 f"{hits[0].shift:.6g} > the lemma's bound {hits[0].bound:.6g} ({hits[0].norm})" if hits
                 else "; every release's shift is within the lemma's bound, no pass")
        raise AdjacencyError(f"{outside}{shift}{OUTSIDE_REFUSAL}")
    if not hits:
        unseen = _unresolved(ctx, pair.scenario.horizon, allowance)
        if unseen is not None:
            return Evidence("sensitivity coverage", "realized behavior", figures, reasons=(unseen,), doubt=unseen)
        return Evidence("sensitivity coverage", "realized behavior", figures)
    u = hits[0]
    # the shifts hold the scenario's runs, then the adjacent scenario's: name the run within its own scenario
    runs0 = ctx.engine_runs(0).runs
    side = 0 if u.run < runs0 else 1
    u = dataclasses.replace(u, run=u.run - side * runs0)
    witness = {"kind": "coverage", "against": "lemma", **u.to_dict(), "side": side, "runs_checked": runs0,
               **run_origin(ctx.engine_runs(side), u.run), "seed": ctx.options.seed,
               "method": "realized shift (exact replay under both problems)",
               "confidence": 1.0, "claim_form": ctx.form_name}
    origin = ctx.paper.paper.name
    which = "the scenario's" if side == 0 else "the adjacent scenario's"
    reason = (f"coverage: {u.describe()} of {which} runs: the pair is not shown to lie outside paper {origin!r}'s adjacency class, "
              f"so its sensitivity lemma does not cover a pair it claims to ({len(hits)} release(s) uncovered)")
    agent = ctx.changed_agent
    points = _class_points(pair, ctx, agent) if agent is not None else ()
    above = each_class_exceeded(pair, ctx, points, "x0 or a released value of the runs")
    if above is not None:  # an unclipped rule on a pair outside the class, or a wrong lemma: the runs cannot tell
        why = f"coverage: {u.describe()} of {which} runs ({len(hits)} release(s) uncovered), but {above}{EACH_CLASS_DOUBT}"
        figures["coverage_outside_class"] = f"{u.describe()}, but {above}"
        return Evidence("sensitivity coverage", "realized behavior", figures, reasons=(why,), doubt=why)
    return Evidence("sensitivity coverage", "realized behavior", figures, witness=witness, reasons=(reason,))

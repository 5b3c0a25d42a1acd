"""The worst pairs of a value class: the changed agent's private value at two antipodal points of the domain.

A rule that reads its agents' private values themselves (Muffliato, Cyffers,
Even, Bellet and Massoulié, NeurIPS 2022: the addresses of a
:class:`~asyncdp.problems.costs.RendezvousQuadratic`) declares a
:class:`~asyncdp.papers.ValueClass`: any two values of one agent in the
domain are adjacent. The user's pair is one point of it; the pairs that move
the released values furthest are the changed agent's value at two extreme
points of the domain at distance its diameter (the sensitivity Section 3
assumes): a box's opposite vertices, a ball's ``center +- radius e_k``. At most
:data:`MAX_VALUE_PAIRS` such pairs are decided, each by
:func:`asyncdp.privacy.worst_pair.delta_evidence` on its own engine runs: the
realized shifts first against the sensitivity lemma, then the pair's exact
profile (lockstep: exact Gaussian, so a Rényi or zCDP claim is compared with
its exact divergences and a pure claim with ``delta(epsilon) > 0``; no sampling
error), then importance sampling and threshold events of its replay losses.

Example:
    >>> from asyncdp.problems.domains import Box
    >>> [(a.tolist(), b.tolist()) for _, a, b in antipodal_values(Box(0.0, 1.0, dim=1))]
    [([0.0], [1.0])]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..scenario import Scenario

__all__ = ["MAX_VALUE_PAIRS", "antipodal_values", "value_scenarios", "search_value_class"]

MAX_VALUE_PAIRS = 2
"""Antipodal pairs decided per check (each costs up to ``--runs`` engine runs when it does not refute)."""

_RTOL = 1e-9
"""Relative tolerance of "at distance the diameter" (round-off of the extreme points)."""


def antipodal_values(domain: Any, limit: int = MAX_VALUE_PAIRS) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Pairs of the domain's extreme points at distance its diameter, in the domain's order of extreme points.

    The partner of an extreme point ``a`` is its reflection through the domain's center (projected onto the
    domain against round-off): a box's opposite vertex, a ball's opposite pole. It need not be among
    :meth:`~asyncdp.problems.domains.Domain.extreme_points`, which samples at most 1024 of a box's ``2^dim``
    vertices (above 10 dimensions, rarely two opposite ones). A domain that is not centrally symmetric falls
    back on the farthest of its extreme points.

    Args:
        domain: a bounded :class:`~asyncdp.problems.domains.Domain`.
        limit: at most this many pairs.

    Returns:
        ``[(label, a, a')]`` (``[]`` for an unbounded domain, or one with no two extreme points at its diameter).

    Example:
        >>> from asyncdp.problems.domains import Box
        >>> [float(abs(a - b).sum()) for _, a, b in antipodal_values(Box(0.0, 1.0, dim=30))]  # 1024 of 2^30 vertices
        [30.0, 30.0]
    """
    if not domain.bounded:
        return []
    pts = np.asarray(domain.extreme_points(), dtype=float)
    center = np.asarray(domain.center, dtype=float)
    out: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[tuple[bytes, bytes]] = set()
    for a in pts:
        b = np.asarray(domain.project(2.0 * center - a), dtype=float)
        if np.linalg.norm(a - b) < domain.diameter * (1.0 - _RTOL):  # not symmetric: the farthest extreme point
            b = pts[int(np.argmax(np.linalg.norm(pts - a, axis=1)))]
        key = (min(a.tobytes(), b.tobytes()), max(a.tobytes(), b.tobytes()))
        if np.linalg.norm(a - b) < domain.diameter * (1.0 - _RTOL) or key in seen:
            continue
        seen.add(key)
        out.append((f"value {_fmt(a)} vs {_fmt(b)} (antipodal points of the domain)", a, b))
        if len(out) == limit:
            break
    return out


def value_scenarios(scenario: Scenario, agent: int, value: Any, value_prime: Any) -> tuple[Scenario, Scenario]:
    """The scenario pair with ``agent``'s address ``value`` vs ``value_prime``.

    Each problem is :meth:`~asyncdp.problems.problem.Problem.adjacent` to the user's: its domain, its declared
    constants (a lemma may read them) and every other agent's cost kept. The algorithm is bound to the user's
    problem (its constants filled: the same noise), the initial points kept.

    Args:
        scenario: the user's scenario.
        agent: the changed agent.
        value, value_prime: its two addresses, points of the domain.

    Returns:
        ``(P, P')``.

    Raises:
        ScenarioError: the problem's costs are not a :class:`~asyncdp.problems.costs.RendezvousQuadratic`.
    """
    from ..errors import ScenarioError
    from ..problems.costs import RendezvousQuadratic

    base = scenario.problem
    if not isinstance(base.costs, RendezvousQuadratic):
        raise ScenarioError(f"a value class changes an address of a RendezvousQuadratic; the costs are "
                            f"{type(base.costs).__name__}")
    alg = scenario.algorithm.bind(base)

    def one(v: Any) -> Scenario:
        return scenario.replace(problem=base.adjacent(agent, address=np.asarray(v, dtype=float)), algorithm=alg,
                                x0=scenario.initial_points())

    return one(value), one(value_prime)


def search_value_class(ctx: Any, scenario: Scenario, agent: int, untested: str | None) -> Any:
    """Evidence ``"worst-case adjacency search"`` of a value class: its antipodal pairs (module docstring).

    Args:
        ctx: the check's context.
        scenario: the user's scenario.
        agent: the changed agent.
        untested: the doubt on a lemma not published for this rule (a user's, or one a subclass inherits), or
            ``None``; kept (reworded) when no pair refutes: only the extremes of the class are checked.

    Returns:
        Evidence (constructed worst case), with the first refuting pair's witness (``kind`` ``"worst-case"``,
        ``address``, ``address_prime``, ``method``, ``confidence``, ``claim_form``), if any.
    """
    from .evidence import Evidence
    from .search_evidence import _whose_lemma
    from .worst_pair import delta_evidence

    method, kind = "worst-case adjacency search", "constructed worst case"
    figures: dict[str, Any] = {"worst_case_loss": None, "worst_case_pair": None, "worst_case_delta_lower": None,
                               "worst_case_objective": None, "worst_pair_script": None}
    pairs = antipodal_values(scenario.problem.domain)
    if not pairs:
        why = ("needs a bounded domain" if not scenario.problem.domain.bounded else
               "found no two extreme points at the diameter")
        return Evidence(method, kind, figures, doubt=untested, reasons=(
            f"worst-case search: the value class of {scenario.algorithm.name} {why}, got "
            f"{scenario.problem.domain!r}: only the user's pair is checked",))
    reasons: list[str] = []
    for label, a, b in pairs:
        p, q = value_scenarios(scenario, agent, a, b)
        figures["worst_case_pair"] = label
        base_witness = {"kind": "worst-case", "pair": label, "agent": agent, "address": a.tolist(),
                        "address_prime": b.tolist(), "seed": ctx.options.seed, "claim_form": ctx.form_name}
        evidence = delta_evidence(ctx, p, q, figures, base_witness, f"{label}: agent {agent}'s value")
        if evidence.witness is not None:
            return evidence
        reasons.extend(evidence.reasons)
    doubt = None if untested is None else (
        f"the sensitivity lemma of {_whose_lemma(ctx)} was tested against {len(pairs)} antipodal pair(s) of its "
        "value class only (no search inside the class), so the bound composed with it is not trusted")
    return Evidence(method, kind, figures, doubt=doubt, reasons=tuple(reasons))


def _fmt(v: Any) -> str:
    """The first 6 coordinates, each to its shortest round-trip digits: ``1e6`` and ``1e6 + 1`` read apart."""
    flat = np.ravel(v)
    return "(" + ", ".join(repr(float(x)) for x in flat[:6]) + (", ..." if flat.size > 6 else "") + ")"


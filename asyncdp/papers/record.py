"""The public paper record: :class:`Paper`, what the library knows about one published (or user's own) algorithm.

A seed paper and a user's own algorithm are described the same way. One
:class:`Paper` names

* its rules (:class:`~asyncdp.algorithms.base.Algorithm` subclasses; one
  paper may have several, e.g. Cheng, Liao and Li's DPSDA-C and DPSDA-PS);
* its **sensitivity lemma**: ``lemma(scenario)``, the sensitivity of every
  release on every noisy channel, computed from the scenario's declared
  constants (the problem's function class, the rule's parameters, horizon,
  mode and topology), never from the rule's own ``noise()`` declarations.
  It returns a ``(T,)`` array (rules with one noisy channel) or a mapping
  ``channel -> (T,)`` array; :meth:`Paper.sensitivity` checks and normalizes it;
* its **adjacency class** for the worst-case search (:class:`GradientClass`:
  any two costs of the changed agent with gradients of L2 norm at most ``C``,
  or whose gradients differ by at most ``C``; :class:`RoundClass`: two online
  loss sequences that differ in one round's loss, of gradient L2 norm at most ``L``;
  :class:`ValueClass`: the changed agent's private value anywhere in the domain);
* its claim check (``claim_check(scenario, eps, delta) -> str``);
* its topology assumptions (a :class:`topology.audit.AssumptionSet`, or one
  per rule name);
* optional parts: reproductions (:class:`Reproduction`), the noise scale the
  paper prescribes (``claimed_scale``), the accountant's own record
  (:class:`accounting.papers.AccountantSpec`), a reference to cite.

A rule finds its record through its class MRO (:func:`asyncdp.papers.paper_of`).
Registering, discovering and looking up papers is :mod:`asyncdp.papers.registry`.

Example:
    >>> import numpy as np
    >>> from asyncdp.papers.huang2015.rule import Huang2015
    >>> toy = Paper("toy", (Huang2015,), lemma=lambda sc: np.full(sc.horizon, 0.1), reference="me (2026)")
    >>> toy.sensitivity(Huang2015.example_scenario())["y"].shape
    (25,)
    >>> toy.rule_names
    ('huang2015',)
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..algorithms.base import Algorithm
from ..errors import AlgorithmParameterError, ScenarioError

__all__ = ["Paper", "PaperError", "GradientClass", "RoundClass", "ValueClass", "AdjacencyClass", "Reproduction", "is_paper",
           "require_out_neighbours", "OPTIONAL_PARTS"]

OPTIONAL_PARTS = ("adjacency", "claim_check", "assumptions", "reproductions", "claimed_scale", "accountant",
                  "example_scenario", "relation")
"""Parts a user's paper may leave out (the paper contract test checks them only where present; seed papers
provide them all but ``relation``, which defaults to a relation-type adjacency class). ``example_scenario`` is
the rule's classmethod."""


class PaperError(AlgorithmParameterError):
    """A paper record is malformed, its lemma returns a bad value, or two different papers claim one name."""


@dataclass(frozen=True)
class GradientClass:
    """An adjacency class of the changed agent's two costs, stated on their gradients.

    ``kind="each"``: "both costs have gradients of L2 norm at most ``bound``" (any two such costs are
    adjacent). ``kind="difference"``: "the two gradients differ by at most ``bound`` in the norm ``norm``"
    (e.g. the gradient adjacency of Wang and Başar, Automatica 2023: ``||g - g'||_1 <= 1``).

    Attributes:
        bound: ``C`` (> 0, finite).
        norm: the norm of the lemma's bound, ``"l1"`` (Laplace) or ``"l2"`` (Gaussian); for
            ``kind="difference"`` also the norm of the difference.
        kind: ``"each"`` or ``"difference"``.

    The worst-case search builds the extremal pairs of the class (opposite linear costs along sign patterns
    and coordinates) and searches it with Hypothesis.

    Example:
        >>> GradientClass(1.0, "l1").norm, GradientClass(1.0, "l1", kind="difference").kind
        ('l1', 'difference')
    """

    bound: float
    norm: str = "l1"
    kind: str = "each"

    def __post_init__(self) -> None:
        b = self.bound
        if isinstance(b, bool) or not isinstance(b, (int, float, np.floating, np.integer)) or not math.isfinite(b) \
                or b <= 0:
            raise PaperError(f"GradientClass: bound must be a finite number > 0, got {b!r}")
        if self.norm not in ("l1", "l2"):
            raise PaperError(f"GradientClass: norm must be 'l1' or 'l2', got {self.norm!r}")
        if self.kind not in ("each", "difference"):
            raise PaperError(f"GradientClass: kind must be 'each' or 'difference', got {self.kind!r}")


@dataclass(frozen=True)
class RoundClass:
    """Round adjacency of online losses: two loss sequences equal in every round but one.

    The adjacency of Cheng, Liao and Li (arXiv 2022), Def. 1, with their gradient bound (Assumption 1(d)):
    the changed round's two losses both have gradients of L2 norm at most ``bound`` on the domain; every
    other round's loss is the same in both sequences. Such a change reaches every agent (each computes its
    block of the changed gradient), so the worst-case search (:mod:`asyncdp.privacy.worst_case`) replaces
    round ``t0``'s loss by opposite linear losses ``<g, x>``, ``<g', x>`` (sign patterns and coordinates of
    norm ``bound``, at the early rounds and the user's), then searches every round with Hypothesis.

    Attributes:
        bound: ``L`` (> 0, finite), the L2 bound on the changed round's gradients.
        norm: the norm of the lemma's bound, ``"l1"`` (Laplace) or ``"l2"`` (Gaussian).
        kind: ``"each"`` (a class attribute): like ``GradientClass(kind="each")`` it bounds each member's
            gradients, so it contains the user's pair whenever the problem meets its declared constants.

    Example:
        >>> RoundClass(2.0).norm, RoundClass(2.0).kind
        ('l1', 'each')
    """

    bound: float
    norm: str = "l1"
    kind: ClassVar[str] = "each"

    def __post_init__(self) -> None:
        b = self.bound
        if isinstance(b, bool) or not isinstance(b, (int, float, np.floating, np.integer)) or not math.isfinite(b) \
                or b <= 0:
            raise PaperError(f"RoundClass: bound must be a finite number > 0, got {b!r}")
        if self.norm not in ("l1", "l2"):
            raise PaperError(f"RoundClass: norm must be 'l1' or 'l2', got {self.norm!r}")


@dataclass(frozen=True)
class ValueClass:
    """Value adjacency: the changed agent's private value (its address of a
    :class:`~asyncdp.problems.costs.RendezvousQuadratic`) anywhere in the problem's domain, every other value kept.

    The class of a rule that reads the values themselves, not gradients (Cyffers, Even, Bellet and Massoulié,
    NeurIPS 2022, Section 3: values in ``[0, 1]``, sensitivity 1, the domain's diameter). The worst-case search
    pairs antipodal extreme points of the domain (:mod:`asyncdp.privacy.value_class`).

    Attributes:
        kind: ``"value"`` (a class attribute): it bounds no gradient, so the gradient checks (the prober's lemma
            ratio, the class relation of the user's pair) do not read it.

    Example:
        >>> ValueClass().kind
        'value'
    """

    kind: ClassVar[str] = "value"


AdjacencyClass = GradientClass | RoundClass | ValueClass
"""The adjacency classes a paper may declare: a class of one agent's costs (:class:`GradientClass`), round
adjacency of online losses (:class:`RoundClass`) or one agent's private value (:class:`ValueClass`)."""


@dataclass(frozen=True)
class Reproduction:
    """One reproduction of a paper's experiment, loaded only when run.

    Attributes:
        name: the experiment's name (``asyncdp reproduce NAME``).
        function: ``"module:attribute"`` of ``(out_dir, **options) -> summary dict``.
        table: ``"module:attribute"`` of ``summary dict -> text table``.

    Example:
        >>> Reproduction("x", "math:sqrt", "math:floor").load()[0](4.0)
        2.0
    """

    name: str
    function: str
    table: str

    def __post_init__(self) -> None:
        for part in ("function", "table"):
            value = getattr(self, part)
            if not isinstance(value, str) or value.count(":") != 1:
                raise PaperError(f"reproduction {self.name!r}: {part} must be 'module:attribute', got {value!r}")

    def load(self) -> tuple[Callable[..., dict[str, Any]], Callable[[dict[str, Any]], str]]:
        """Import and return ``(function, table)``."""
        out = []
        for ref in (self.function, self.table):
            module, attr = ref.split(":")
            out.append(getattr(importlib.import_module(module), attr))
        return out[0], out[1]


def is_paper(value: Any) -> bool:
    """Whether ``value`` is a :class:`Paper` (also one made by a second copy of this module, as pytest's
    ``importlib`` import mode can create while collecting doctests).

    Example:
        >>> is_paper("huang2015")
        False
    """
    kind = type(value)
    return isinstance(value, Paper) or (kind.__name__ == "Paper" and kind.__module__ == __name__)


def _is_rule(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Algorithm) and isinstance(getattr(value, "name", None), str)


@dataclass(frozen=True)
class Paper:
    """Everything the library knows about one paper's algorithm(s) (see the module docstring).

    Attributes:
        name: the paper's name (registry key), e.g. ``"huang2015"``.
        rules: its rule classes (at least one); each rule's ``name`` also finds the paper.
        lemma: ``scenario -> (T,) array | {channel: (T,) array}``: the sensitivity of each release of
            each noisy channel, from declared constants only (required).
        reference: whom to cite for the lemma (quoted by the privacy report).
        adjacency: ``scenario -> GradientClass | RoundClass | ValueClass``, the class the worst-case search draws pairs from.
        claim_check: ``(scenario, eps_ledger, delta_ledger) -> str``, the paper's claim checked independently.
        assumptions: a :class:`topology.audit.AssumptionSet` (every rule) or ``{rule name: AssumptionSet}``.
        reproductions: its :class:`Reproduction` records.
        claimed_scale: ``(scenario, t) -> float``, the noise scale the paper prescribes for round ``t``.
        accountant: the accountant's record of the paper (:class:`accounting.papers.AccountantSpec`).
        relation: ``scenario -> GradientClass | None`` of ``kind="difference"``, a relation of the changed agent's
            two gradients that every pair of the paper's adjacency meets (a necessary condition, e.g. eq. 28 of
            Wang and Başar for one changed sample); the privacy check refuses a pair that breaks it. Unlike
            ``adjacency`` nothing is drawn from it (its pairs need not be pairs of the paper's adjacency). Default
            (``None``): the adjacency class where that is itself a relation (``kind="difference"``).

    Raises:
        PaperError: no rule, a rule that is not a named Algorithm subclass, no lemma, a part of the wrong type,
            assumptions keyed by a name that is not one of its rules.
    """

    name: str
    rules: tuple[type[Algorithm], ...]
    lemma: Callable[[Any], Any]
    reference: str = ""
    adjacency: Callable[[Any], AdjacencyClass | None] | None = None
    claim_check: Callable[[Any, float, float], str] | None = None
    assumptions: Any = None
    reproductions: tuple[Reproduction, ...] = ()
    claimed_scale: Callable[[Any, int], float] | None = None
    accountant: Any = None
    relation: Callable[[Any], GradientClass | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PaperError(f"a paper needs a non-empty name, got {self.name!r}")
        rules = (self.rules,) if isinstance(self.rules, type) else self.rules
        if not isinstance(rules, (tuple, list)) or not rules:
            raise PaperError(f"paper {self.name!r}: rules must name at least one Algorithm subclass, got {self.rules!r}")
        for rule in rules:
            if not _is_rule(rule):
                raise PaperError(f"paper {self.name!r}: every rule must be an Algorithm subclass with a str `name`, "
                                 f"got {rule!r}")
        object.__setattr__(self, "rules", tuple(rules))
        if self.lemma is None:
            raise PaperError(f"paper {self.name!r} has no sensitivity lemma: pass lemma=scenario -> per-release "
                             "sensitivities")
        for part in ("lemma", "adjacency", "relation", "claim_check", "claimed_scale"):
            value = getattr(self, part)
            if value is not None and not callable(value):
                raise PaperError(f"paper {self.name!r}: {part} must be callable, got {value!r}")
        reps = tuple(self.reproductions)
        if not all(isinstance(r, Reproduction) for r in reps):
            raise PaperError(f"paper {self.name!r}: reproductions must be Reproduction records, got {reps!r}")
        object.__setattr__(self, "reproductions", reps)
        if self.assumptions is not None:
            from topology.audit import AssumptionSet

            sets = self.assumptions.values() if isinstance(self.assumptions, Mapping) else [self.assumptions]
            if not all(isinstance(s, AssumptionSet) for s in sets):
                raise PaperError(f"paper {self.name!r}: assumptions must be a topology AssumptionSet or a mapping "
                                 f"rule name -> AssumptionSet, got {self.assumptions!r}")
            # a misspelt rule name would leave that rule without assumptions: no audit, no warning
            unknown = sorted(set(self.assumptions) - set(self.rule_names), key=str) \
                if isinstance(self.assumptions, Mapping) else []
            if unknown:
                raise PaperError(f"paper {self.name!r}: assumptions name rule {unknown[0]!r}, which is not one of its "
                                 f"rules {list(self.rule_names)}")

    @property
    def rule_names(self) -> tuple[str, ...]:
        """The names of its rules."""
        return tuple(r.name for r in self.rules)

    def assumption_set(self, rule_name: str | None = None) -> Any:
        """The topology assumptions of rule ``rule_name`` (default: the paper's first rule), or ``None``.

        Example:
            >>> from asyncdp.papers import get_paper
            >>> get_paper("dpsda").assumption_set("dpsda-ps").contraction
            'column'
        """
        if self.assumptions is None:
            return None
        if not isinstance(self.assumptions, Mapping):
            return self.assumptions
        return self.assumptions.get(rule_name if rule_name is not None else self.rules[0].name)

    def sensitivity(self, scenario: Any) -> dict[str, np.ndarray]:
        """The lemma's sensitivity of every release: ``{noisy channel: (T,) array}``, checked.

        Release ``t`` (1-based) of channel ``c`` has sensitivity ``out[c][t - 1]``.

        Raises:
            PaperError: the lemma returns the wrong shape or channels, NaN, an infinite or a negative value,
                or raises (the message names the paper, channel and round).
            ScenarioError: the lemma itself rejects the scenario (passed through).
        """
        alg = scenario.algorithm
        channels = [c.name for c in alg.noisy_channels()]
        horizon = scenario.horizon
        try:
            raw = self.lemma(scenario)
        except ScenarioError:
            raise
        except Exception as exc:  # a user's lemma: report it as the lemma's fault, in one line
            raise PaperError(f"paper {self.name!r}: the sensitivity lemma raised {type(exc).__name__}: {exc}") from exc
        if isinstance(raw, Mapping):
            given = {str(k): v for k, v in raw.items()}
            if set(given) != set(channels):
                raise PaperError(f"paper {self.name!r}: the lemma gives channels {sorted(given)}, the rule "
                                 f"{alg.name!r} has noisy channels {channels}")
        else:
            if len(channels) != 1:
                raise PaperError(f"paper {self.name!r}: the rule {alg.name!r} has noisy channels {channels}: the "
                                 "lemma must return a mapping channel -> (T,) array")
            given = {channels[0]: raw}
        out = {}
        for c, value in given.items():
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise PaperError(f"paper {self.name!r}: the lemma's value for channel {c!r} is not numeric: "
                                 f"{value!r}"[:300]) from None
            if arr.shape != (horizon,):
                raise PaperError(f"paper {self.name!r}: the lemma must give one value per release, shape "
                                 f"({horizon},), for channel {c!r}; got shape {arr.shape}")
            bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
            if bad.size:
                t = int(bad[0])
                raise PaperError(f"paper {self.name!r}: the lemma's sensitivity of channel {c!r} in round {t + 1} is "
                                 f"{float(arr[t])!r}; it must be finite and >= 0")
            out[c] = arr
        return out


def out_neighbour_counts(w: Any) -> np.ndarray:
    """How many other agents each agent sends to under weight matrix ``w`` (``w[i, j] != 0``: ``i`` receives from
    ``j``; the diagonal, its own term, is not counted): the copies it sends in unicast mode.

    Args:
        w: a round's weight matrix (dense or scipy sparse).

    Returns:
        ``(N,)`` integer counts, indexed by sender.

    Example:
        >>> out_neighbour_counts(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])).tolist()
        [1, 1, 0]
    """
    nonzero = w != 0
    return np.asarray(nonzero.sum(axis=0)).ravel() - (np.asarray(w.diagonal()) != 0)


def require_out_neighbours(scenario: Any, why: str) -> None:
    """In unicast mode, check that every agent sends to someone in every round.

    An agent without out-neighbours mixes its own noise-free value, so its
    combination is no longer a function of released messages and a lemma
    that assumes it (``why``) does not apply.

    Raises:
        ScenarioError: naming the first round and agent without an out-neighbour.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> require_out_neighbours(Huang2015.example_scenario(), "Lemma 4") is None
        True
    """
    if scenario.mode != "unicast":
        return
    for t in range(1, scenario.horizon + 1):
        outdeg = out_neighbour_counts(scenario.topology.weights(t))
        if (outdeg == 0).any():
            raise ScenarioError(
                f"round {t}: agent {int(np.flatnonzero(outdeg == 0)[0])} has no out-neighbour in unicast mode; "
                f"its noise-free self term breaks the sensitivity argument ({why})"
            )

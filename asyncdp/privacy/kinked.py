"""Non-linear members of an adjacency class for the worst-case search: kinked costs at visited states.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) draws linear costs
``<g, x>``; a rule whose sensitivity depends on how the gradient *changes*
(a finite difference of gradients, a curvature correction) moves no further
under a linear cost than the lemma allows, yet the class
(:class:`~asyncdp.papers.GradientClass`: every cost whose gradient norm is at
most ``C``) also holds costs whose gradient flips sign within a short
distance. This module adds such members of the class:

    ``f(x) = C sqrt((<u, x> - c)^2 + eta^2)``,   ``grad f(x) = C (<u, x> - c) / sqrt((<u, x> - c)^2 + eta^2) u``

(:class:`KinkedOverride`), with ``u`` a coordinate axis, so that
``||grad f|| < C`` in the L2 and in the L1 norm. Away from the kink ``c`` the
cost is the extremal linear cost ``-C u`` (below) or ``C u`` (above); within
about ``eta`` of it the gradient turns over. The kinks are placed where the
changed agent's computations read the cost: at the coordinate values of its
combinations of received messages and of its own messages in the
constructed transcript of the extremal linear cost ``s C e_k`` (the
transcript the pair is evaluated on, :func:`kink_positions`), just on the
far side of them (``c`` at those values plus ``s KINK_OFFSET``). The pair is
that linear cost (``P``: it pins the transcript, so the states read are the
ones the kinks were placed at) against the kinked cost (``P'``), whose
gradient at those states is the opposite extremal one, ``-s C e_k``: the
pair keeps the largest linear shift and adds whatever the kink adds.

A rule that reads the gradient at two points (a gradient difference, as gradient tracking takes) moves by
twice as much under a kinked cost against its mirror image (``-f``, the gradient the opposite at every point:
:meth:`KinkedPair.mirror`) as under a linear cost against a kinked one: each cost's gradient turns over between
the two points, the opposite way under ``P'``, where a linear cost's does not turn at all. The mirrored pairs
are kinked at the positions above (a gradient read a short distance beyond the state), between where the
changed agent is and where it moves (:func:`mirrored_pairs`; along every step it takes, a sawtooth cost
(:class:`SawtoothOverride`, :func:`sawtooth_pairs`), which moves a gradient-difference rule that far in every
round, not in one), and on the first points it reads
(:func:`vanishing_pairs`): every other pair's gradients have the same size at every point read, where a step
scaled by the gradients seen so far (AdaGrad, RMSProp) is longest when they were small early and large later.

For ``kind="difference"`` (a bound on ``grad f - grad f'``) both costs are
scaled by ``C / 2``: the linear ``s (C / 2) e_k`` (the extremal pairs'
halves) and the kinked cost with ``C / 2``, whose gradient difference has
norm at most ``C``.

Round adjacency (:class:`~asyncdp.papers.RoundClass`: one round's loss
changes, its gradients of norm at most ``L``) gets the same pairs in the
changed round ``t0``: the linear loss ``s L e_k`` of round ``t0`` against
the kinked loss of round ``t0`` (:class:`KinkedRound`), the kinks placed at
the points read in round ``t0`` by the node owning coordinate ``k`` (each
node computes its block of the gradient, so only that node's block of a loss
along ``e_k`` is not zero; :func:`kinked_round_pairs`), and the mirrored, vanishing and far kinks of the
changed round's loss (``changed_round`` of :func:`mirrored_pairs`, :func:`vanishing_pairs`, :func:`offset_pairs`:
placed at the points the owning node reads from round ``t0`` on; :class:`KinkedRound` with ``sign=-1`` is the
mirror image): an online rule reading the changed round's gradient at two points, adaptively or scaled by its
value is refuted as a one-agent rule is.

Example:
    >>> from asyncdp.problems.costs import RendezvousQuadratic
    >>> fam = KinkedOverride(RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 1, 0, 0.5, 2.0, 1e-3)
    >>> fam.gradient(1, np.array([0.0, 3.0])).round(4).tolist()  # below the kink: -C e_0
    [-2.0, 0.0]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..problems.domains import Domain
from ..problems.online import OnlineLoss
from ..errors import ProblemError
from ..problems.costs.family import CostFamily, _fmt
from ..problems.costs.override import AgentOverride
from ..problems.costs.function_class import FunctionClass
from ..problems.costs.structure import Structure

__all__ = ["KinkedOverride", "SawtoothOverride", "KinkedRound", "KinkedPair", "kink_slope", "kink_positions",
           "kinked_pairs", "mirrored_pairs", "sawtooth_pairs", "vanishing_pairs", "offset_pairs", "kinked_round_pairs",
           "OFFSET_DISTANCE", "MAX_KINKED_PAIRS", "KINK_OFFSET", "KINK_WIDTH"]

MAX_KINKED_PAIRS = 8
"""At most this many kinked pairs against a linear cost are evaluated per check (two coordinates, both signs, two
positions each); the mirrored pairs come on top: those of the ``+`` signs' positions, and per coordinate and
channel one of :func:`mirrored_pairs` and up to four of :func:`vanishing_pairs`, and per channel one of
:func:`offset_pairs` along coordinate 0 (under round adjacency, of the first changed round the pairs are placed
in)."""

KINK_OFFSET = 0.25
"""How far beyond a visited state's coordinate the kink is placed (in the state's units): close enough that a
rule comparing gradients a short distance apart (up to twice this and more) straddles it."""

KINK_WIDTH = 1e-3
"""``eta`` in units of :data:`KINK_OFFSET`: at the visited state (distance ``KINK_OFFSET`` from the kink) the
gradient's norm is ``C / sqrt(1 + 1e-6)``, the extremal linear one up to 5e-7, so the pair keeps the linear
shift; the gradient turns over within ``~eta`` of the kink, far closer than any state the runs visit."""


def kink_slope(t: np.ndarray, width: Any) -> np.ndarray:
    """``t / sqrt(t^2 + width^2)``, the kinked cost's derivative over its scale, never above 1 in size.

    In floating point ``sqrt(t^2 + width^2)`` can round below ``|t|`` when ``|t|`` is far above ``width``; the
    denominator is therefore at least ``|t|`` (equal in exact arithmetic), so the gradient stays within the
    class's bound to the bit.

    Example:
        >>> float(kink_slope(np.array(-549.85986097675), 1e-6)), float(kink_slope(np.array(0.0), 1e-3))
        (-1.0, 0.0)
    """
    return t / np.maximum(np.sqrt(t * t + width * width), np.abs(t))


def _kink_gradient(x: np.ndarray, axis: int, position: float, scale: float, width: float) -> np.ndarray:
    """The gradient of ``scale sqrt((x_axis - position)^2 + width^2)`` at points ``x`` ``(..., n)``."""
    out = np.zeros(x.shape)
    out[..., axis] = scale * kink_slope(x[..., axis] - position, width)
    return out


def _widened(base: FunctionClass, scale: float, width: float, convex: bool = True) -> FunctionClass:
    """``base``'s constants widened by a kinked cost: gradient bound ``max(base, scale)``, Hessian bound and
    smoothness at least ``scale / width`` (the Hessian's largest value, at the kink), ``mu = 0`` (``None``, no
    lower bound on the Hessian, for a mirrored, concave one: ``convex=False``)."""
    curv = scale / width
    return FunctionClass(diameter=base.diameter,
                         gradient_bound=None if base.gradient_bound is None else max(base.gradient_bound, scale),
                         strong_convexity=0.0 if convex else None,
                         hessian_bound=None if base.hessian_bound is None else max(base.hessian_bound, curv),
                         smoothness=None if base.smoothness is None else max(base.smoothness, curv))


class KinkedOverride(AgentOverride):
    """``base``'s costs, except agent ``agent``'s: ``f(x) = sign scale sqrt((x_axis - position)^2 + width^2)``.

    Its gradient ``sign scale (x_axis - position) / sqrt(...) e_axis`` has norm below ``scale`` in every ``l_p``
    norm; ``sign = -1`` is the mirror image (concave, the gradient the opposite at every point).

    Args:
        base: the cost family whose other agents' costs are kept.
        agent: the agent whose cost is replaced.
        axis: the coordinate ``k`` of ``u = e_k``.
        position: the kink ``c``, finite.
        scale: ``C > 0``.
        width: ``eta > 0``.
        sign: ``1`` (default) or ``-1``.

    Raises:
        ProblemError: a bad agent or axis, a position, scale or width that is not finite or not positive, or a
            sign other than 1 and -1.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> fam = KinkedOverride(RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 0, 1, 0.0, 1.0, 1e-3)
        >>> fam.gradient(0, np.array([5.0, 1.0])).round(6).tolist(), float(fam.value(0, np.array([0.0, 0.0])))
        ([0.0, 1.0], 0.001)
    """

    private_fields = ("position",)

    def __init__(self, base: CostFamily, agent: int, axis: int, position: float, scale: float, width: float,
                 sign: float = 1.0) -> None:
        super().__init__(base, agent)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not 0 <= int(axis) < base.dim:
            raise ProblemError(f"axis must be a coordinate in 0..{base.dim - 1}, got {axis!r}")
        for name, v, positive in (("position", position, False), ("scale", scale, True), ("width", width, True)):
            if not np.isfinite(v) or (positive and not v > 0):
                raise ProblemError(f"{name} must be finite{' and > 0' if positive else ''}, got {_fmt(v)}")
        if isinstance(sign, bool) or sign not in (1, -1):
            raise ProblemError(f"sign must be 1 or -1, got {sign!r}")
        self._axis = int(axis)
        self._c, self._scale, self._eta, self._sign = float(position), float(scale), float(width), float(sign)

    @property
    def signed_scale(self) -> float:
        """``sign scale``: the factor of the kink's slope in the gradient."""
        return self._sign * self._scale

    def _own_value(self, x: np.ndarray) -> np.ndarray:
        t = x[..., self._axis] - self._c
        return self.signed_scale * np.sqrt(t * t + self._eta * self._eta)

    def _own_gradient(self, x: np.ndarray) -> np.ndarray:
        return _kink_gradient(x, self._axis, self._c, self.signed_scale, self._eta)

    def _own_parameters(self) -> Any:
        """``(axis, position, scale, width, sign)`` (this class only)."""
        if type(self) is not KinkedOverride:
            return super()._own_parameters()
        return (self._axis, self._c, self._scale, self._eta, self._sign)

    def function_class(self, domain: Domain) -> FunctionClass:
        """The base class widened by the kinked cost: ``C2 = max(C2_base, scale)``, smoothness at least
        ``scale / width`` (its Hessian's largest value, at the kink), ``mu = 0`` (unknown for the mirror image,
        which is concave)."""
        return _widened(self._base.function_class(domain), self._scale, self._eta, self._sign > 0)

    def with_agent(self, agent: int, **changes: Any) -> KinkedOverride:
        """Copy with ``position=`` of the overridden agent's kink replaced (the only private field).

        Raises:
            ProblemError: another agent, or an unknown field.
        """
        self._same_agent(agent, changes)
        return KinkedOverride(self._base, self._agent, self._axis, changes["position"], self._scale, self._eta,
                              self._sign)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "KinkedOverride", "base": self._base.to_dict(), "agent": self._agent, "axis": self._axis,
                "position": self._c, "scale": self._scale, "width": self._eta, "sign": self._sign}


class SawtoothOverride(KinkedOverride):
    """``base``'s costs, except agent ``agent``'s: a cost kinked at every one of ``positions`` ``c_0 < ... < c_K``.

    Near kink ``c_j`` (closer to it than to any other) the cost is ``sign (-1)^j scale sqrt((x_axis - c_j)^2 +
    width^2) + b_j``, the constants ``b_j`` making it continuous at the midpoints between kinks, where the
    neighbouring pieces' derivatives agree; so its gradient ``sign (-1)^j scale kink_slope(x_axis - c_j) e_axis``
    is continuous, never above ``scale`` in any ``l_p`` norm, ``-sign scale e_axis`` below ``c_0`` and alternates
    between about ``+-scale e_axis`` from one gap between kinks to the next. ``sign = -1`` is the mirror image.

    Args:
        base, agent, axis, scale, width, sign: as :class:`KinkedOverride`.
        positions: the kinks, finite, strictly increasing, two at least, each gap at least ``2 width``.

    Raises:
        ProblemError: as :class:`KinkedOverride`; positions that are not finite, increasing, or spaced so.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> fam = SawtoothOverride(RendezvousQuadratic([[0.0], [1.0]]), 0, 0, (0.0, 1.0, 2.0), 1.0, 1e-3)
        >>> [round(float(fam.gradient(0, np.array([x]))[0]), 4) for x in (-1.0, 0.5, 1.5, 3.0)]
        [-1.0, 1.0, -1.0, 1.0]
    """

    def __init__(self, base: CostFamily, agent: int, axis: int, positions: Any, scale: float, width: float,
                 sign: float = 1.0) -> None:
        super().__init__(base, agent, axis, 0.0, scale, width, sign)  # (checks all but the positions)
        c = np.asarray(positions, dtype=float)
        if c.ndim != 1 or c.size < 2 or not np.isfinite(c).all() or not (np.diff(c) >= 2 * self._eta).all():
            raise ProblemError(f"positions must be two or more finite, increasing kinks at least 2 width = "
                               f"{_fmt(2 * self._eta)} apart, got {positions!r}")
        self._c, self._cs = float(c[0]), c
        half = np.sqrt((np.diff(c) / 2) ** 2 + self._eta ** 2)  # each piece's sqrt at the midpoint after it
        alt = (-1.0) ** np.arange(c.size)
        self._alt, self._offsets = alt, np.concatenate([[0.0], np.cumsum(2 * alt[:-1] * half)])
        self._mid = (c[1:] + c[:-1]) / 2

    @property
    def positions(self) -> tuple[float, ...]:
        """The kinks."""
        return tuple(self._cs.tolist())

    def _piece(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The nearest kink's index and ``x_axis`` minus it."""
        u = x[..., self._axis]
        j = np.searchsorted(self._mid, u)
        return j, u - self._cs[j]

    def _own_value(self, x: np.ndarray) -> np.ndarray:
        j, t = self._piece(x)
        return self.signed_scale * (self._alt[j] * np.sqrt(t * t + self._eta * self._eta) + self._offsets[j])

    def _own_gradient(self, x: np.ndarray) -> np.ndarray:
        j, t = self._piece(x)
        out = np.zeros(x.shape)
        out[..., self._axis] = self.signed_scale * self._alt[j] * kink_slope(t, self._eta)
        return out

    def _own_parameters(self) -> Any:
        """``(axis, positions, scale, width, sign)`` (this class only)."""
        if type(self) is not SawtoothOverride:
            return AgentOverride._own_parameters(self)
        return (self._axis, self.positions, self._scale, self._eta, self._sign)

    def function_class(self, domain: Domain) -> FunctionClass:
        """As :class:`KinkedOverride`'s, with no lower bound on the Hessian (``mu`` ``None``): each piece between two
        kinks is concave or convex in turn."""
        return _widened(self._base.function_class(domain), self._scale, self._eta, convex=False)

    def with_agent(self, agent: int, **changes: Any) -> SawtoothOverride:
        """Copy with ``positions=`` of the overridden agent's kinks replaced (the only private field).

        Raises:
            ProblemError: another agent, or an unknown field.
        """
        self._same_agent(agent, changes)
        return SawtoothOverride(self._base, self._agent, self._axis, changes["positions"], self._scale, self._eta,
                                self._sign)

    private_fields = ("positions",)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "SawtoothOverride", "base": self._base.to_dict(), "agent": self._agent, "axis": self._axis,
                "positions": list(self.positions), "scale": self._scale, "width": self._eta, "sign": self._sign}


class KinkedRound(OnlineLoss):
    """``base``'s loss sequence, except round ``round_index``'s: ``f(x) = sign scale sqrt((x_axis - position)^2 +
    width^2)``.

    The round-adjacency counterpart of :class:`KinkedOverride` (a member of a
    :class:`~asyncdp.papers.RoundClass`: its gradient ``sign scale (x_axis - position) / sqrt(...) e_axis`` has
    norm below ``scale`` in every ``l_p`` norm); node ``i`` reads its block of it, as of every online loss.
    ``sign = -1`` is the mirror image (concave, the gradient the opposite at every point).

    Args:
        base: the online loss whose other rounds are kept.
        round_index: the replaced round (1-based).
        axis: the coordinate ``k`` of ``u = e_k``.
        position: the kink ``c``, finite.
        scale: ``L > 0``.
        width: ``eta > 0``.
        sign: ``1`` (default) or ``-1``.

    Raises:
        ProblemError: ``base`` is not an online loss, a bad round or axis, a position, scale or width that is
            not finite or not positive, or a sign other than 1 and -1.

    Example:
        >>> from asyncdp.problems.online import synthetic_olr
        >>> loss, _ = synthetic_olr(num_nodes=2, dim=2, num_rounds=3, seed=0)
        >>> k = KinkedRound(loss, 2, 1, 0.5, 2.0, 1e-3)
        >>> k.round_gradient(2, [0.0, 3.0]).round(4).tolist(), k.gradient(0, [0.0, 3.0], round_index=2).tolist()
        ([0.0, 2.0], [0.0, 0.0])
    """

    def __init__(self, base: OnlineLoss, round_index: int, axis: int, position: float, scale: float,
                 width: float, sign: float = 1.0) -> None:
        if not isinstance(base, OnlineLoss):
            raise ProblemError(f"base must be an OnlineLoss, got {type(base).__name__}")
        super().__init__(base.num_agents, base.dim, base.num_rounds)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not 0 <= int(axis) < base.dim:
            raise ProblemError(f"axis must be a coordinate in 0..{base.dim - 1}, got {axis!r}")
        for name, v, positive in (("position", position, False), ("scale", scale, True), ("width", width, True)):
            if not np.isfinite(v) or (positive and not v > 0):
                raise ProblemError(f"{name} must be finite{' and > 0' if positive else ''}, got {_fmt(v)}")
        if isinstance(sign, bool) or sign not in (1, -1):
            raise ProblemError(f"sign must be 1 or -1, got {sign!r}")
        self._base, self._round, self._axis = base, base._check_round(round_index), int(axis)
        self._c, self._scale, self._eta, self._sign = float(position), float(scale), float(width), float(sign)

    @property
    def round_index(self) -> int:
        """The round with the kinked loss."""
        return self._round

    @property
    def signed_scale(self) -> float:
        """``sign scale``: the factor of the kink's slope in the gradient."""
        return self._sign * self._scale

    def _round_value(self, t: int, x: np.ndarray) -> np.ndarray:
        if t != self._round:
            return self._base._round_value(t, x)
        u = x[..., self._axis] - self._c
        return self.signed_scale * np.sqrt(u * u + self._eta * self._eta)

    def _round_gradient(self, t: int, x: np.ndarray) -> np.ndarray:
        if t != self._round:
            return self._base._round_gradient(t, x)
        return _kink_gradient(x, self._axis, self._c, self.signed_scale, self._eta)

    def _round_structure(self) -> Structure | None:
        """The base's structure with the kinked round's row ``("KinkedRound", axis, position, scale, width, sign)``
        (this class only)."""
        base = self._base._described_rounds() if type(self) is KinkedRound else None
        if base is None:
            return None
        rows = list(base.rows)
        rows[self._round - 1] = ("KinkedRound", self._axis, self._c, self._scale, self._eta, self._sign)
        return Structure(base.kind, base.shared, tuple(rows))

    def function_class(self, domain: Domain) -> FunctionClass:
        """The base's constants widened by the kinked loss: ``L = max(L_base, scale)``, smoothness at least
        ``scale / width`` (its Hessian's largest value, at the kink), ``mu = 0`` (unknown for the mirror image,
        which is concave)."""
        return _widened(self._base.function_class(domain), self._scale, self._eta, self._sign > 0)

    def with_round(self, t: int, **data: Any) -> OnlineLoss:
        """Round ``t`` changed in the base sequence (the kinked round stays).

        Raises:
            ProblemError: ``t`` is the kinked round.
        """
        if self._check_round(t) == self._round:
            raise ProblemError(f"round {t} is the kinked round of this KinkedRound; build a new KinkedRound")
        return KinkedRound(self._base.with_round(t, **data), self._round, self._axis, self._c, self._scale,
                           self._eta, self._sign)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "KinkedRound", "base": self._base.to_dict(), "round_index": self._round, "axis": self._axis,
                "position": self._c, "scale": self._scale, "width": self._eta, "sign": self._sign}


@dataclass(frozen=True)
class KinkedPair:
    """A pair of the class: the linear cost ``<gradient, x>`` (``P``) against a kinked cost (``P'``), or (``mirrored``)
    a kinked cost against its mirror image.

    Attributes:
        label: how it was built, e.g. ``"kinked along coordinate 0 at 0.81 (mixed, round 1) vs coordinate 0 (+)"``.
        gradient: ``g`` of the linear cost (of the reference whose transcript placed the kink, when ``mirrored``).
        axis, position, scale, width: the kinked cost's (:class:`KinkedOverride`).
        round_index: round adjacency: the changed round (both losses of the pair are that round's,
            :class:`KinkedRound`); ``None`` for one agent's cost.
        mirrored: ``P`` is the kinked cost (:meth:`first_costs`) and ``P'`` its mirror image (sign ``-1``): their
            gradients are opposite at every point and each turns over at the kink.
        prime_position: ``P`` is the kinked cost (:meth:`first_costs`) and ``P'`` the same kinked at this
            position (:func:`offset_pairs`); ``None`` otherwise.
        positions: a sawtooth pair (:func:`sawtooth_pairs`, with ``mirrored``): ``P`` is kinked at every one of
            these (:class:`SawtoothOverride`; :attr:`position` is the first) and ``P'`` its mirror image; ``None``
            otherwise.
    """

    label: str
    gradient: tuple[float, ...]
    axis: int
    position: float
    scale: float
    width: float
    round_index: int | None = None
    mirrored: bool = False
    prime_position: float | None = None
    positions: tuple[float, ...] | None = None

    @property
    def kinked_first(self) -> bool:
        """Whether ``P`` is a kinked cost (:meth:`first_costs`), not the linear one."""
        return self.mirrored or self.prime_position is not None

    def _kink(self, first: bool) -> tuple[float, float, float, float]:
        """``(position, scale, width, sign)`` of ``P``'s kinked cost (``first``) or of ``P'``'s.

        Raises:
            ValueError: ``first`` and ``P`` is the linear cost.
        """
        if first and not self.kinked_first:
            raise ValueError(f"{self.label}: P is the linear cost <g, x>, not a kinked one")
        if first:
            return self.position, self.scale, self.width, 1.0
        position = self.position if self.prime_position is None else self.prime_position
        return position, self.scale, self.width, -1.0 if self.mirrored else 1.0

    def costs(self, base: CostFamily, agent: int) -> KinkedOverride:
        """``P'``: the kinked cost family (agent ``agent``'s cost replaced in ``base``; mirrored if :attr:`mirrored`,
        kinked at :attr:`prime_position` if set; the sawtooth's mirror image if :attr:`positions` is)."""
        if self.positions is not None:
            return SawtoothOverride(base, agent, self.axis, self.positions, self.scale, self.width, -1.0)
        return KinkedOverride(base, agent, self.axis, *self._kink(False))

    def first_costs(self, base: CostFamily, agent: int) -> KinkedOverride:
        """``P`` of a mirrored pair or of one with a :attr:`prime_position`: the kinked cost family, not mirrored.

        Raises:
            ValueError: ``P`` is the linear cost.
        """
        if self.positions is not None:
            return SawtoothOverride(base, agent, self.axis, self.positions, self.scale, self.width)
        return KinkedOverride(base, agent, self.axis, *self._kink(True))

    def round_costs(self, base: OnlineLoss, first: bool = False) -> KinkedRound:
        """The kinked loss sequence of ``P'`` (``first``: of ``P``, as :meth:`first_costs`), round
        :attr:`round_index`'s loss replaced in ``base``.

        Raises:
            ValueError: ``first`` and ``P`` is the linear loss.
        """
        assert self.round_index is not None and self.positions is None
        return KinkedRound(base, self.round_index, self.axis, *self._kink(first))

    def mirror(self) -> KinkedPair:
        """The same kink as a mirrored pair: the kinked cost (``P``) against its mirror image (``P'``).

        Example:
            >>> KinkedPair("kinked at 0.5 vs coordinate 0 (+)", (1.0,), 0, 0.5, 1.0, 1e-3).mirror().label
            'kinked at 0.5 vs its mirror image'
        """
        label = self.label.rsplit(" vs ", 1)[0] + " vs its mirror image"
        return dataclasses.replace(self, label=label, mirrored=True)

    def describe(self) -> str:
        """The pair in words (for reasons)."""
        kink = f"{self.scale:.4g} sqrt((x_{self.axis} - {self.position:.6g})^2 + {self.width:.3g}^2)"
        if self.positions is not None:
            kinks = ", ".join(f"{c:.6g}" for c in self.positions)
            return (f"the sawtooth f (gradient +-{self.scale:.4g} e_{self.axis}, turning over within "
                    f"{self.width:.3g} of each of x_{self.axis} = {kinks}) vs its mirror image f' = -f")
        if self.prime_position is not None:
            prime = f"{self.scale:.4g} sqrt((x_{self.axis} - {self.prime_position:.6g})^2 + {self.width:.3g}^2)"
            return f"the kinked f(x) = {kink} vs f'(x) = {prime}"
        if self.mirrored:
            return f"the kinked f(x) = {kink} vs its mirror image f'(x) = -{kink}"
        return f"f(x) = <g, x>, g = ({', '.join(f'{v:.4g}' for v in self.gradient)}) vs the kinked f'(x) = {kink}"


def kink_positions(messages: dict[str, np.ndarray], schedules: Any, agent: int, run: int, rounds: int,
                   start: int = 1) -> Iterator[tuple[str, int, np.ndarray]]:
    """The points agent ``agent`` reads in rounds ``start..rounds`` of run ``run`` of a transcript.

    Per round ``t`` and channel: its combination of the messages it receives (the weights and sender rounds of
    the schedule, its own round-``t`` message with its self weight, as the replay combines them) and its own
    message.

    Args:
        messages: per channel ``(R, T, N, d)`` (unicast ``(R, T, N, N, d)``, copy ``j -> i`` at ``[..., j, i, :]``).
        schedules: the runs' schedules (what :func:`accounting.schedule_reads.dense_round` reads).
        agent: the agent.
        run: the run.
        rounds: the last round.
        start: the first round (default 1).

    Yields:
        ``(what, t, point)`` round by round, ``what`` ``"mixed"`` or ``"own"``; points with a NaN entry are
        left out (computed as they are asked for); none without a channel (e.g. a rule with no channel as
        wide as its state, :func:`_points`).

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)], [np.ones((2, 2), dtype=int)])
        >>> y = {"y": np.array([[[[0.0], [1.0]]]])}
        >>> [(w, t, p.tolist()) for w, t, p in kink_positions(y, [one], 0, 0, 1)]
        [('mixed', 1, [0.5]), ('own', 1, [0.0])]
    """
    from accounting.schedule_reads import dense_round

    horizon = max((m.shape[1] for m in messages.values()), default=0)  # no channel: no point
    for t in range(start, min(rounds, horizon) + 1):
        w, src = dense_round(schedules, t)
        w, src = w[run, agent], src[run, agent]  # (N,) each
        for y in messages.values():
            unicast = y.ndim == 5
            mixed = np.zeros(y.shape[-1])
            ok = True
            for j in np.flatnonzero(w != 0):
                s = t if j == agent else int(src[j])
                if s <= 0:
                    continue
                m = y[run, s - 1, j, agent] if unicast and j != agent else y[run, s - 1, j]
                if unicast and j == agent:
                    m = np.nanmean(y[run, t - 1, agent], axis=0) if not np.isnan(y[run, t - 1, agent]).all() \
                        else np.full(y.shape[-1], np.nan)
                ok = ok and bool(np.isfinite(m).all())
                mixed = mixed + w[j] * m
            own = np.nanmean(y[run, t - 1, agent], axis=0) if unicast else y[run, t - 1, agent]
            if ok:
                yield "mixed", t, mixed
            if np.isfinite(own).all():
                yield "own", t, np.asarray(own, dtype=float)


def _points(messages: dict[str, np.ndarray], dim: int) -> dict[str, np.ndarray]:
    """The channels whose messages are points (``dim`` wide): a kink's position is a coordinate of one; another
    channel (a one-coordinate loss value, a round counter) has no coordinate ``k`` of the state to read.

    Example:
        >>> sorted(_points({"y": np.zeros((1, 1, 2, 3)), "v": np.zeros((1, 1, 2, 1))}, 3))
        ['y']
    """
    return {name: m for name, m in messages.items() if m.shape[-1] == dim}


def kinked_pairs(transcripts: dict[tuple[int, float], dict[str, np.ndarray]], schedules: Any, agent: int,
                 bound: float, dim: int, per_reference: int) -> list[KinkedPair]:
    """The kinked pairs of the references' transcripts (module docstring).

    Args:
        transcripts: by reference ``(axis k, sign s)``, the constructed transcript of the linear cost
            ``s bound e_k`` (per channel; run 0 is read).
        schedules: those runs' schedules.
        agent: the changed agent.
        bound: ``C`` of the linear and the kinked cost (``C / 2`` for a difference class).
        dim: ``n``.
        per_reference: kinks per reference: the first distinct positions met, round by round (the combination
            before the own message; an early round's kink changes the most releases).

    Returns:
        The pairs, reference by reference.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)], [np.ones((2, 2), dtype=int)])
        >>> y = {"y": np.array([[[[0.0], [1.0]]]])}
        >>> [p.position for p in kinked_pairs({(0, 1.0): y}, [one], 0, 1.0, 1, 2)]
        [0.75, 0.25]
    """
    out: list[KinkedPair] = []
    for (k, s), messages in transcripts.items():
        g = np.zeros(dim)
        g[k] = s * bound
        seen: list[float] = []
        horizon = next(iter(messages.values())).shape[1]
        for what, t, point in kink_positions(_points(messages, dim), schedules, agent, 0, horizon):
            c = float(point[k]) + s * KINK_OFFSET
            if any(abs(c - v) < KINK_OFFSET / 2 for v in seen):  # (near another kink: the same states straddled)
                continue
            seen.append(c)
            out.append(KinkedPair(f"kinked along coordinate {k} at {c:.4g} ({what}, round {t}) vs coordinate {k} "
                                  f"({'+' if s > 0 else '-'})", tuple(g.tolist()), k, c, bound,
                                  KINK_WIDTH * KINK_OFFSET))
            if len(seen) == per_reference:
                break
    return out


def _pair(label: str, gradient: np.ndarray, axis: int, position: float, bound: float, width: float,
          changed_round: int | None, **kind: Any) -> KinkedPair:
    """A :class:`KinkedPair` of one agent's cost, or (``changed_round``) of that round's loss, its label saying so."""
    if changed_round is not None:
        label = f"round {changed_round}, {label}"
    return KinkedPair(label, tuple(np.asarray(gradient, dtype=float).tolist()), axis, position, bound, width,
                      changed_round, **kind)


def _steps(m: np.ndarray, schedules: Any, agent: int, axis: int, start: int) -> Iterator[tuple[int, float, float]]:
    """``(t, own, mixed)`` per round ``t >= start`` of run 0 of channel ``m``: coordinate ``axis`` of the agent's
    own message and of its combination of the received ones (:func:`kink_positions`), the rounds where both are
    finite; the step the agent takes runs between them."""
    mixed: tuple[int, float] | None = None
    for what, t, point in kink_positions({"": m}, schedules, agent, 0, m.shape[1], start):
        if what == "mixed":
            mixed = (t, float(point[axis]))
        elif mixed is not None and mixed[0] == t:
            yield t, float(point[axis]), mixed[1]


def mirrored_pairs(messages: dict[str, np.ndarray], schedules: Any, agent: int, axis: int, gradient: np.ndarray,
                   bound: float, changed_round: int | None = None) -> list[KinkedPair]:
    """Per channel, a kinked cost against its mirror image, kinked between where the agent is and where it moves.

    The kink ``c`` is the midpoint, along ``axis``, of the agent's own message and its combination of the
    messages it receives in the first round where the two differ (run 0 of the transcript): a rule that reads
    the gradient at both (a gradient difference, as gradient tracking takes) sees it turn over under ``P``
    (``f``, :class:`KinkedOverride`) and the opposite way under ``P'`` (``-f``): twice the change a kinked cost
    against a linear one gives, and no linear pair gives any. The width is :data:`KINK_WIDTH` of the distance
    to either point, so the gradient there is the extremal one up to 5e-7.

    Args:
        messages: per channel ``(R, T, N, d)`` (unicast ``(R, T, N, N, d)``), the reference's transcript.
        schedules: those runs' schedules.
        agent: the changed agent.
        axis: the kink's coordinate.
        gradient: the reference's linear gradient (recorded in the pair).
        bound: ``C``.
        changed_round: round adjacency: the changed round ``t0`` (the pairs are of that round's loss,
            :class:`KinkedRound`, and read from round ``t0`` on, where the node first reads it); ``None`` (one
            agent's cost): from round 1.

    Returns:
        At most one pair per channel whose messages are points (as wide as ``gradient``).

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)], [np.ones((2, 2), dtype=int)])
        >>> y = {"y": np.array([[[[0.0], [1.0]]]])}
        >>> [(p.position, p.mirrored) for p in mirrored_pairs(y, [one], 0, 0, np.ones(1), 1.0)]
        [(0.25, True)]
    """
    out = []
    for name, m in messages.items():
        if m.shape[-1] != np.size(gradient):  # a channel of other values than points (e.g. a round counter)
            continue
        for t, own, mixed in _steps(m, schedules, agent, axis, changed_round or 1):
            gap = abs(own - mixed)
            if not gap > 1e-9 * max(1.0, abs(own)):
                continue
            c = 0.5 * (own + mixed)
            out.append(_pair(f"mirrored kink along coordinate {axis} at {c:.4g} (between the own and the mixed "
                             f"{name!r}, round {t})", gradient, axis, c, bound, KINK_WIDTH * gap / 2, changed_round,
                             mirrored=True))
            break
    return out


def sawtooth_pairs(messages: dict[str, np.ndarray], schedules: Any, agent: int, axis: int, gradient: np.ndarray,
                   bound: float) -> list[KinkedPair]:
    """Per channel, a cost kinked between where the agent is and where it moves in *every* round, against its mirror
    image (:class:`SawtoothOverride`).

    :func:`mirrored_pairs` kinks the first step the agent takes; a rule reading the gradient at both ends of every
    step (gradient tracking's ``g(x_new) - g(x_old)``) then moves by ``4 C`` in that round only, ``0`` after. The
    sawtooth is kinked at the midpoint, along ``axis``, of the agent's own message and its combination of the
    received ones in every round where they differ (run 0), so the gradient turns over along every step (the
    opposite way under the mirror image): ``4 C`` every round, where the path crosses one kink a step. Kinks
    closer to an earlier one than a tenth of either one's step are left out; the width is :data:`KINK_WIDTH` of
    the smallest half step or half spacing, so the gradient at the points read is extremal up to 5e-7.

    Args:
        messages, schedules, agent, axis, gradient, bound: as :func:`mirrored_pairs` (one agent's cost).

    Returns:
        At most one pair per channel whose messages are points, with two kinks at least.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)] * 2, [np.ones((2, 2), dtype=int)] * 2)
        >>> y = {"y": np.array([[[[0.0], [1.0]], [[0.5], [1.0]]]])}
        >>> [p.positions for p in sawtooth_pairs(y, [one], 0, 0, np.ones(1), 1.0)]
        [(0.25, 0.625)]
    """
    out = []
    for name, m in messages.items():
        if m.shape[-1] != np.size(gradient):  # a channel of other values than points (e.g. a round counter)
            continue
        kinks: list[tuple[float, float]] = []  # (position, half step)
        for _, own, mixed in _steps(m, schedules, agent, axis, 1):
            half = abs(own - mixed) / 2
            c = own + (mixed - own) / 2
            if half > 5e-10 * max(1.0, abs(own)) and all(abs(c - v) > 0.2 * max(half, h) for v, h in kinks):
                kinks.append((c, half))
        if len(kinks) < 2:
            continue
        cs = np.sort([c for c, _ in kinks])
        width = KINK_WIDTH * min(min(h for _, h in kinks), float(np.diff(cs).min()) / 2)
        out.append(_pair(f"sawtooth kinked along coordinate {axis} at {cs.size} points (between the own and the "
                         f"mixed {name!r} of every round) vs its mirror image", gradient, axis, float(cs[0]), bound,
                         width, None, mirrored=True, positions=tuple(cs.tolist())))
    return out


def vanishing_pairs(messages: dict[str, np.ndarray], schedules: Any, agent: int, axis: int, gradient: np.ndarray,
                    bound: float, changed_round: int | None = None) -> list[KinkedPair]:
    """Per channel, a kinked cost against its mirror image, kinked *at* the first points the agent reads.

    The kink ``c`` is the coordinate, along ``axis``, of the agent's combination of the messages it receives in
    the first round it reads the changed cost (round 1, or the changed round ``t0`` under round adjacency), and of
    its own message of that round where that differs (run 0 of the transcript): both costs' gradients
    vanish there. With the width :data:`KINK_WIDTH` of the distance to the nearest other point the agent reads,
    they are extremal (``+-C`` up to 5e-7) at the points read later; with the width the largest such distance,
    their size grows with the distance to ``c`` (to ``C / sqrt(2)`` at the farthest point). Every linear or kinked
    pair has gradients of the same size at every point read; a rule that scales its step by the gradients seen so
    far (AdaGrad, RMSProp or Adam preconditioning ``g / sqrt(v)``, ``v`` a running sum or average of squared
    gradients) moves by its largest steps only when the gradient is small early and large later: under the
    narrow kink by ``sqrt(1 + beta)`` times the step of any constant-size gradient in round 2 (RMSProp with bias
    correction), where a lemma "the preconditioned step is at most the step size" allows one; Adam's momentum
    averages a sudden change out, and its longest steps follow a gradient that grows a few percent a round, as
    under the wide kink along a path that moves away from ``c``.

    Args:
        messages: per channel ``(R, T, N, d)`` (unicast ``(R, T, N, N, d)``), the reference's transcript.
        schedules: those runs' schedules.
        agent: the changed agent.
        axis: the kink's coordinate.
        gradient: the reference's linear gradient (recorded in the pair).
        bound: ``C``.
        changed_round: round adjacency: the changed round ``t0`` (the pairs are of that round's loss,
            :class:`KinkedRound`, and read from round ``t0`` on, where the node first reads it); ``None`` (one
            agent's cost): from round 1.

    Returns:
        At most four pairs per channel whose messages are points (as wide as ``gradient``): per point, the
        narrow kink, then the wide one.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)] * 2, [np.ones((2, 2), dtype=int)] * 2)
        >>> y = {"y": np.array([[[[0.0], [1.0]], [[0.25], [1.0]]]])}
        >>> [(p.position, p.width, p.mirrored) for p in vanishing_pairs(y, [one], 0, 0, np.ones(1), 1.0)]
        [(0.5, 0.000125, True), (0.5, 0.5, True), (0.0, 0.00025, True), (0.0, 0.625, True)]
    """
    out = []
    horizon = next(iter(messages.values())).shape[1]
    for name, m in messages.items():
        if m.shape[-1] != np.size(gradient):  # a channel of other values than points (e.g. a round counter)
            continue
        first = changed_round or 1
        read = [(what, t, float(point[axis])) for what, t, point in kink_positions({name: m}, schedules, agent, 0,
                                                                                   horizon, first)]
        placed: list[float] = []
        for what, t, c in read:
            if t != first:
                break
            gaps = [abs(v - c) for *_, v in read if abs(v - c) > 1e-9 * max(1.0, abs(c))]
            if not gaps or any(abs(c - v) <= 1e-9 * max(1.0, abs(c)) for v in placed):
                continue
            placed.append(c)
            for width, how in ((KINK_WIDTH * min(gaps), "vanishes there"),
                               (max(gaps), "vanishes there and grows with the distance to it")):
                out.append(_pair(f"mirrored kink along coordinate {axis} at {c:.4g} (on the {what} {name!r} of "
                                 f"round {first}, width {width:.3g}: its gradient {how})", gradient, axis, c, bound,
                                 width, changed_round, mirrored=True))
    return out


OFFSET_DISTANCE = 1e6
"""How far from the first point the changed agent reads the two costs of :func:`offset_pairs` are kinked (in the
state's units): their values there are about ``C`` times this."""


def offset_pairs(messages: dict[str, np.ndarray], schedules: Any, agent: int, axis: int, gradient: np.ndarray,
                 bound: float, changed_round: int | None = None) -> list[KinkedPair]:
    """Per channel, two kinked costs far away on either side (:data:`OFFSET_DISTANCE`): opposite gradients, large
    values.

    With ``c`` the coordinate, along ``axis``, of the first point the agent reads in the first round it reads the
    changed cost (round 1, or the changed round ``t0`` under round adjacency; its combination of the messages it
    receives, or its own message where the combination is not finite; run 0), ``P`` is kinked at ``c - D`` and
    ``P'`` at ``c + D`` (width 1): at the points the runs reach their
    gradients are ``+C e_axis`` and ``-C e_axis`` up to ``1 / (2 D^2)``, as the extremal linear pair's, and both
    values are about ``C D``. The class bounds gradients, not values: a rule that reads the cost's value (a step
    scaled by the current loss, clipped at ``B``) moves by ``B`` times the gradient's change under this pair,
    where the linear pairs' values ``<g, z>`` and ``-<g, z>`` have one of them below 0 and both near it; a clip
    above ``C D`` is still out of reach (the class leaves values unbounded: no finite candidate set covers it).

    Args:
        messages: per channel ``(R, T, N, d)`` (unicast ``(R, T, N, N, d)``), the reference's transcript.
        schedules: those runs' schedules.
        agent: the changed agent.
        axis: the kinks' coordinate.
        gradient: the reference's linear gradient (recorded in the pair).
        bound: ``C``.
        changed_round: round adjacency: the changed round ``t0`` (the pairs are of that round's loss,
            :class:`KinkedRound`, and read from round ``t0`` on, where the node first reads it); ``None`` (one
            agent's cost): from round 1.

    Returns:
        At most one pair per channel whose messages are points (as wide as ``gradient``).

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)], [np.ones((2, 2), dtype=int)])
        >>> y = {"y": np.array([[[[0.0], [1.0]]]])}
        >>> [(p.position, p.prime_position) for p in offset_pairs(y, [one], 0, 0, np.ones(1), 1.0)]
        [(-999999.5, 1000000.5)]
    """
    out = []
    for name, m in messages.items():
        if m.shape[-1] != np.size(gradient):  # a channel of other values than points (e.g. a round counter)
            continue
        first = changed_round or 1
        for what, _, point in kink_positions({name: m}, schedules, agent, 0, first, first):
            c = float(point[axis])
            out.append(_pair(f"kinked along coordinate {axis} at {c - OFFSET_DISTANCE:.7g} vs at "
                             f"{c + OFFSET_DISTANCE:.7g} (about {OFFSET_DISTANCE:g} from the {what} {name!r} of "
                             f"round {first}: opposite gradients, values near {bound * OFFSET_DISTANCE:.3g})",
                             gradient, axis, c - OFFSET_DISTANCE, bound, 1.0, changed_round,
                             prime_position=c + OFFSET_DISTANCE))
            break
    return out


def kinked_round_pairs(transcripts: dict[int, dict[str, np.ndarray]], schedules: Any, owners: dict[int, int],
                       bound: float, per_reference: int, dim: int) -> list[KinkedPair]:
    """The kinked pairs of a round class: per changed round ``t0`` and reference ``(axis k, sign s)``, kinks at the
    points the node owning coordinate ``k`` reads in round ``t0`` (the only node whose block of a loss along
    ``e_k`` is not zero), just beyond them (``c`` at the point's ``k``-th value plus ``s KINK_OFFSET``), against
    the linear loss ``s bound e_k`` of that round.

    Args:
        transcripts: by changed round ``t0``, a constructed transcript whose rounds ``1..t0`` are those of the
            linear losses of round ``t0`` (per channel; run 0 is read): a change of round ``t0``'s loss reaches
            the messages of round ``t0 + 1`` on only, so every reference of ``t0`` reads the same points there.
        schedules: those runs' schedules.
        owners: the references' axes, each with the node owning it.
        bound: ``L`` of the linear and the kinked loss.
        per_reference: kinks per reference and round: the first distinct positions met (the combination before
            the own message).
        dim: ``n``; the kinks are read from the channels whose messages are points (``n`` wide).

    Returns:
        The pairs, round by round, then reference by reference (both signs of each axis).

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)], [np.ones((2, 2), dtype=int)])
        >>> y = {"y": np.array([[[[0.0], [1.0]]]])}
        >>> [(p.round_index, p.gradient, p.position) for p in kinked_round_pairs({1: y}, [one], {0: 1}, 1.0, 1, 1)]
        [(1, (1.0,), 0.75), (1, (-1.0,), 0.25)]
    """
    out: list[KinkedPair] = []
    for t0, messages in transcripts.items():
        for k, agent in owners.items():
            points = [(what, p) for what, t, p in kink_positions(_points(messages, dim), schedules, agent, 0, t0)
                      if t == t0]
            for s in (1.0, -1.0):
                g = np.zeros(dim)
                g[k] = s * bound
                seen: list[float] = []
                for what, point in points:
                    c = float(point[k]) + s * KINK_OFFSET
                    if any(abs(c - v) < KINK_OFFSET / 2 for v in seen):
                        continue
                    seen.append(c)
                    out.append(KinkedPair(f"round {t0}, kinked along coordinate {k} at {c:.4g} ({what}, node "
                                          f"{agent}) vs coordinate {k} ({'+' if s > 0 else '-'})",
                                          tuple(g.tolist()), k, c, bound, KINK_WIDTH * KINK_OFFSET, t0))
                    if len(seen) == per_reference:
                        break
    return out

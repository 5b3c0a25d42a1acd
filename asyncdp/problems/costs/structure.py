"""Which entries of two cost families differ, read from their structure: :class:`Difference`, :func:`compare`.

Two problems are adjacent when exactly one agent's cost differs (Huang, Mitra
and Vaidya, ICDCN 2015, Def. 3) or, for online losses, one round's loss
(Cheng, Liao and Li, arXiv 2022, Def. 1). Comparing the costs' gradients at
finitely many points can show that an entry *differs*, never that it is the
*same*: a cost may differ from another everywhere except at the points
compared. So a family describes its costs by their parameters
(:class:`Structure`: the parameters every entry shares and each entry's own),
and two families of the same kind are compared entry by entry, exactly:

* a parametric entry (an address, a center and weight, a measurement) is the
  same when its parameters are equal (:func:`same_value`), and differs
  otherwise;
* an :class:`Opaque` entry (a user's callables) is the same only when it holds
  the very same objects; otherwise the structure cannot tell (*unknown*);
* families of different kinds, or a family that describes no structure,
  cannot be compared: every entry is unknown.

Example:
    >>> a = Structure("points", (), ([0.0, 1.0], [2.0, 3.0], [4.0, 5.0]))
    >>> b = Structure("points", (), ([0.0, 1.0], [9.0, 3.0], [4.0, 5.0]))
    >>> d = compare(a, b, 3)
    >>> sorted(d.differ), sorted(d.unknown), d.exact
    ([1], [], frozenset({1}))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Difference", "Opaque", "Structure", "compare", "family_name", "same_value", "shadowed"]


def same_value(a: Any, b: Any) -> bool:
    """Whether two parameter values are equal, exactly.

    Arrays: the same shape and entries; NaN equals NaN; sparse matrices by
    their entries; tuples, lists and dicts item by item (a tuple never equals
    a list). Values that cannot be compared count as different.

    Example:
        >>> same_value((np.array([1.0, np.nan]), 2), (np.array([1.0, np.nan]), 2)), same_value([1.0], (1.0,))
        (True, False)
    """
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True))
        except (TypeError, ValueError):  # (object arrays of uncomparable items, ragged sequences)
            return False
    if sp.issparse(a) or sp.issparse(b):
        return bool(sp.issparse(a) and sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b) or (a != a and b != b)  # (NaN parameters on both sides are the same parameter)
    except (TypeError, ValueError):  # no single truth value: nothing shows they are the same parameter
        return False


def shadowed(obj: Any) -> tuple[str, ...]:
    """The instance attributes of ``obj`` that shadow an attribute of its class (a method, a property ...).

    A family whose ``gradient`` (say) is replaced on the instance computes its costs otherwise than its class
    does, so its class's description of its structure does not describe them.

    Example:
        >>> class Family:
        ...     def gradient(self, x):
        ...         return 2 * x
        >>> f = Family()
        >>> shadowed(f)
        ()
        >>> f.gradient = lambda x: 3 * x
        >>> shadowed(f)
        ('gradient',)
    """
    cls = type(obj)
    return tuple(sorted(str(k) for k in getattr(obj, "__dict__", {}) if hasattr(cls, k)))


def family_name(family: Any) -> str:
    """The family's type name, and the methods the object replaces (quoted when its structure is not read).

    Example:
        >>> class Family:
        ...     pass
        >>> f = Family()
        >>> f.__repr__ = lambda: "?"
        >>> family_name(f)
        'Family (whose __repr__ the object replaces)'
    """
    replaced = shadowed(family)
    return type(family).__name__ + (f" (whose {', '.join(replaced)} the object replaces)" if replaced else "")


@dataclass(frozen=True, eq=False)
class Opaque:
    """An entry known only by its objects (e.g. a user's value and gradient callables).

    Two opaque entries are the same entry when they hold the very same objects
    (``is``); otherwise nothing shows whether the functions they compute are
    equal, and the entry is *unknown*.

    Attributes:
        objects: the objects that define the entry.
    """

    objects: tuple[Any, ...]

    def same_as(self, other: Any) -> bool | None:
        """``True`` for the same objects, else ``None`` (cannot tell)."""
        if (isinstance(other, Opaque) and len(other.objects) == len(self.objects)
                and all(x is y for x, y in zip(self.objects, other.objects))):
            return True
        return None


@dataclass(frozen=True, eq=False)
class Structure:
    """A family's costs described by their parameters.

    Attributes:
        kind: the family's kind; families of different kinds are not compared.
        shared: the parameters every entry depends on (compared with :func:`same_value`).
        rows: one description per entry (agent, or round): its parameters, or an :class:`Opaque`.
    """

    kind: str
    shared: Any
    rows: Sequence[Any]


@dataclass(frozen=True)
class Difference:
    """What the structure of two families says about each entry (agent, or round).

    Every entry in neither set is the same in both families.

    Attributes:
        differ: entries whose parameters differ.
        unknown: entries the structure cannot show the same or different
            (different callables, families of different kinds, no structure).
        why: why some entries are unknown (empty when none is), or which shared
            parameters differ.
    """

    differ: frozenset[int]
    unknown: frozenset[int]
    why: str = ""

    @property
    def exact(self) -> frozenset[int] | None:
        """The entries that differ, or ``None`` when the structure cannot tell for some entry."""
        return None if self.unknown else self.differ


def _same_entry(a: Any, b: Any) -> bool | None:
    if isinstance(a, Opaque):
        return a.same_as(b)
    if isinstance(b, Opaque):
        return None
    return same_value(a, b)


def compare(a: Structure | None, b: Structure | None, count: int, *, names: tuple[str, str] = ("", ""),
            first: int = 0) -> Difference:
    """Compare two families' structures entry by entry (see the module docstring).

    Args:
        a, b: the two structures (``None``: the family describes none).
        count: the number of entries (agents, or rounds) of both families.
        names: the families' type names, quoted when they cannot be compared.
        first: the number of the first entry (0 for agents, 1 for rounds).

    Returns:
        The :class:`Difference`.

    Example:
        >>> f = lambda x: x
        >>> d = compare(Structure("user", (), [Opaque((f,)), Opaque((f,))]),
        ...             Structure("user", (), [Opaque((f,)), Opaque((lambda x: x,))]), 2)
        >>> sorted(d.differ), sorted(d.unknown), d.exact is None
        ([], [1], True)
    """
    everything = frozenset(range(first, first + count))
    if a is None or b is None:
        which = " and ".join(n for n, s in zip(names, (a, b)) if s is None and n) or "a family"
        return Difference(frozenset(), everything, f"{which} describes no parameters to compare its costs by")
    if a.kind != b.kind:
        return Difference(frozenset(), everything, f"the families are of different kinds ({a.kind} and {b.kind})")
    if len(a.rows) != count or len(b.rows) != count:
        return Difference(frozenset(), everything, f"the families describe {len(a.rows)} and {len(b.rows)} "
                                                   f"entries, not {count}")
    if not same_value(a.shared, b.shared):
        return Difference(everything, frozenset(), f"the {a.kind} families' shared parameters differ")
    differ, unknown = set(), set()
    for i, (x, y) in enumerate(zip(a.rows, b.rows), start=first):
        same = _same_entry(x, y)
        if same is None:
            unknown.add(i)
        elif not same:
            differ.add(i)
    why = (f"{a.kind} compares user callables by identity, and those of {sorted(unknown)} are different objects"
           if unknown else "")
    return Difference(frozenset(differ), frozenset(unknown), why)

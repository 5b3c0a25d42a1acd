"""One record per paper: the rule, its accountant inputs, its claim, its topology assumptions, its reproductions.

:data:`PAPERS` maps every shipped algorithm's name to its :class:`PaperSpec`:

* ``rule``: the per-agent rule class (:mod:`asyncdp.algorithms`);
* ``adapter``: what the privacy check hands the independent accountant, an
  :class:`~asyncdp.privacy.adapters.Adapter` imported directly from the
  paper's adapter module (its ``sensitivity`` and its theorem ``verdict``);
* ``accountant``: the paper's :class:`~accounting.papers.AccountantSpec`
  (sensitivity bounds, claim, recomputed epsilon), from :mod:`accounting.papers`;
* ``topology``: the name of its assumption set in :data:`topology.audit.ASSUMPTIONS`;
* ``experiments``: its reproductions, keys of :data:`asyncdp.reproduce.EXPERIMENT_NAMES`.

:func:`get_spec` finds the record of an algorithm (a name, a rule class or a
rule object); a missing record or a missing part raises
:class:`NotSupportedError` ("... not supported for this algorithm ..."),
naming the algorithm and the part. The privacy check reads two functions
from here: :func:`adapter` (an algorithm's accountant inputs, or ``None``) and
:func:`theorem_verdict` (its paper's claim checked independently).

This module imports the privacy adapters (and through them the accountant's
composition code), so :mod:`asyncdp.algorithms` loads it on first use only.

Adding a paper: its rule module in :mod:`asyncdp.algorithms` (and its class in
``REGISTRY``), its adapter module, its module in :mod:`accounting.papers`, its
assumption set in :mod:`topology.audit`, its reproductions, and one
:class:`PaperSpec` in :data:`_SPECS` below.

Example:
    >>> spec = get_spec("huang2015")
    >>> spec.rule.__name__, spec.topology, spec.experiments
    ('Huang2015', 'huang2015', ('huang2015-fig1',))
    >>> get_spec("dpsda-ps").accountant is get_spec("dpsda-c").accountant
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accounting.papers import AccountantSpec, get_accountant

from ..errors import AlgorithmParameterError
from ..privacy.adapters import Adapter
from ..privacy.adapters import dpsda_c as _dpsda_c
from ..privacy.adapters import dpsda_ps as _dpsda_ps
from ..privacy.adapters import huang2015 as _huang2015
from ..privacy.adapters import showkatbakhsh as _showkatbakhsh
from ..privacy.adapters import wang_basar as _wang_basar
from .base import Algorithm
from .dpsda import DPSDAC, DPSDAPS
from .huang2015 import Huang2015
from .showkatbakhsh import Showkatbakhsh
from .wang_basar import WangBasar

__all__ = ["PARTS", "PAPERS", "PaperSpec", "NotSupportedError", "get_spec", "adapter", "theorem_verdict"]

PARTS = ("adapter", "accountant", "topology", "experiments", "theorem_verdict")
"""The parts of a :class:`PaperSpec` that :meth:`PaperSpec.require` can ask for."""


class NotSupportedError(AlgorithmParameterError, NotImplementedError):
    """An algorithm has no paper record, or its record lacks the part asked for.

    A :class:`~asyncdp.errors.AlgorithmParameterError` (so a
    :class:`~asyncdp.errors.ScenarioError`) and, as the privacy check raised
    for a missing adapter before, a ``NotImplementedError``. The message names
    the algorithm and the missing part.
    """


@dataclass(frozen=True)
class PaperSpec:
    """Everything the library knows about one paper's algorithm (see the module docstring).

    Attributes:
        rule: the rule class; its ``name`` is the record's name.
        adapter: the privacy check's inputs, or ``None``.
        accountant: the accountant's record of the paper, or ``None``.
        topology: the name of its assumption set for :func:`topology.audit`, or ``None``.
        experiments: names of its reproductions (keys of :data:`asyncdp.reproduce.EXPERIMENT_NAMES`).

    Raises:
        AlgorithmParameterError: a rule that is not an :class:`~asyncdp.algorithms.base.Algorithm`
            subclass, or experiment names that are not strings.
    """

    rule: type[Algorithm]
    adapter: Adapter | None = None
    accountant: AccountantSpec | None = None
    topology: str | None = None
    experiments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (isinstance(self.rule, type) and issubclass(self.rule, Algorithm)):
            raise AlgorithmParameterError(f"rule must be an Algorithm subclass, got {self.rule!r}")
        if isinstance(self.experiments, str) or not all(isinstance(e, str) for e in self.experiments):
            raise AlgorithmParameterError(f"{self.name}: experiments must be a tuple of names, got {self.experiments!r}")

    @property
    def name(self) -> str:
        """The algorithm's registry name (the rule's ``name``)."""
        return self.rule.name

    @property
    def theorem_verdict(self) -> Callable[[Any, float, float], str] | None:
        """``(scenario, eps_ledger, delta_ledger) -> str``: the paper's claim checked independently, or ``None``."""
        return None if self.adapter is None else self.adapter.verdict

    def supports(self, part: str) -> bool:
        """Whether the record provides ``part`` (one of :data:`PARTS`; ``experiments`` needs at least one).

        Raises:
            AlgorithmParameterError: ``part`` is not one of :data:`PARTS`.
        """
        if part not in PARTS:
            raise AlgorithmParameterError(f"part must be one of {PARTS}, got {part!r}")
        value = getattr(self, part)
        return bool(value) if part == "experiments" else value is not None

    def require(self, part: str) -> Any:
        """The part ``part`` of this record, or an error naming the algorithm and the part.

        Raises:
            NotSupportedError: the record lacks it.
            AlgorithmParameterError: ``part`` is not one of :data:`PARTS`.

        Example:
            >>> get_spec("wang-basar").require("topology")
            'wang-basar'
        """
        if not self.supports(part):
            raise NotSupportedError(f"{part} is not supported for this algorithm ({self.name!r}): its paper record "
                                    f"has no {part}")
        return getattr(self, part)


_SPECS: tuple[PaperSpec, ...] = (
    PaperSpec(Huang2015, _huang2015.ADAPTER, get_accountant(Huang2015.name), "huang2015", ("huang2015-fig1",)),
    PaperSpec(Showkatbakhsh, _showkatbakhsh.ADAPTER, get_accountant(Showkatbakhsh.name), "showkatbakhsh",
              ("showkatbakhsh-fig1", "showkatbakhsh-fig2", "showkatbakhsh-fig3", "showkatbakhsh-fig4")),
    PaperSpec(DPSDAC, _dpsda_c.ADAPTER, get_accountant(DPSDAC.name), "dpsda-c",
              ("dpsda-olr", "dpsda-classification", "dpsda-dp-check")),
    PaperSpec(DPSDAPS, _dpsda_ps.ADAPTER, get_accountant(DPSDAPS.name), "dpsda-ps",
              ("dpsda-olr", "dpsda-classification", "dpsda-dp-check")),
    PaperSpec(WangBasar, _wang_basar.ADAPTER, get_accountant(WangBasar.name), "wang-basar",
              ("wang-basar-table1", "wang-basar-saddle", "wang-basar-ica")),
)

PAPERS: dict[str, PaperSpec] = {spec.name: spec for spec in _SPECS}
"""Algorithm name -> its paper record."""


def _name_of(algorithm_or_name: Any) -> str:
    if isinstance(algorithm_or_name, str):
        return algorithm_or_name
    if isinstance(algorithm_or_name, Algorithm) or (
            isinstance(algorithm_or_name, type) and issubclass(algorithm_or_name, Algorithm)):
        name = getattr(algorithm_or_name, "name", None)
        if isinstance(name, str):
            return name
        raise NotSupportedError(f"{algorithm_or_name!r} has no name: a paper record is not supported for this "
                                "algorithm")
    raise AlgorithmParameterError(
        f"algorithm_or_name must be an algorithm name, an Algorithm subclass or instance, got {algorithm_or_name!r}")


def get_spec(algorithm_or_name: Any, *parts: str) -> PaperSpec:
    """The paper record of an algorithm, checked to provide ``parts``.

    Args:
        algorithm_or_name: a registry name, an :class:`~asyncdp.algorithms.base.Algorithm`
            subclass or an instance (its ``name`` is looked up).
        parts: parts the caller needs (see :data:`PARTS`); each must be present.

    Returns:
        The :class:`PaperSpec`.

    Raises:
        NotSupportedError: no record for this algorithm (e.g. a user's own
            Algorithm subclass), or the record lacks one of ``parts``.
        AlgorithmParameterError: ``algorithm_or_name`` is neither a name nor an algorithm,
            or a part is not one of :data:`PARTS`.

    Example:
        >>> from asyncdp.algorithms import WangBasar
        >>> get_spec(WangBasar(noise_variance=0.1), "adapter").name
        'wang-basar'
    """
    name = _name_of(algorithm_or_name)
    spec = PAPERS.get(name)
    if spec is None:
        what = ", ".join(parts) if parts else "a paper record"
        raise NotSupportedError(f"{what} is not supported for this algorithm: {name!r} has no paper record "
                                f"(known: {', '.join(sorted(PAPERS))})")
    for part in parts:
        spec.require(part)
    return spec


def adapter(algorithm_name: str) -> Adapter | None:
    """The accountant inputs of ``algorithm_name``, or ``None`` if it has none (what the privacy check asks).

    Example:
        >>> adapter("huang2015") is get_spec("huang2015").adapter
        True
        >>> adapter("my-own-rule") is None
        True
    """
    spec = PAPERS.get(algorithm_name) if isinstance(algorithm_name, str) else None
    return None if spec is None else spec.adapter


def theorem_verdict(scenario: Any, alg: Algorithm, eps_ledger: float, delta_ledger: float) -> str:
    """The paper's claim of ``alg`` checked independently, as one line of the privacy report.

    Dispatches to the ``verdict`` of the algorithm's adapter (for Huang, Mitra and Vaidya, ICDCN 2015 the
    claim against the ledger's ``eps_ledger``/``delta_ledger``; for the other
    papers their own argument recomputed from the declared scales).

    Args:
        scenario: the scenario checked.
        alg: its algorithm (bound to the problem).
        eps_ledger: the accountant's epsilon of the run.
        delta_ledger: the accountant's delta of the run.

    Returns:
        The verdict, or ``"no theorem check for '<name>' yet"`` when the algorithm has none.
    """
    found = adapter(getattr(alg, "name", None))
    if found is None or found.verdict is None:
        return f"no theorem check for {getattr(alg, 'name', alg)!r} yet"
    return str(found.verdict(scenario, eps_ledger, delta_ledger))

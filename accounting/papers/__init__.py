"""One record per paper on the accountant's side: sensitivity bounds, claims and recomputed epsilons.

Each module is one paper (:mod:`.huang2015`, :mod:`.showkatbakhsh`,
:mod:`.wang_basar`, :mod:`.dpsda`) and ends with its ``SPEC``, an
:class:`~accounting.papers.spec.AccountantSpec`. :data:`ACCOUNTANTS` maps every
algorithm name a paper accounts for to its record; :func:`get_accountant`
looks one up. Like the rest of :mod:`accounting`, nothing here imports
``asyncdp``: the simulator's registry (``asyncdp.algorithms.registry``) reads
these records.

Adding a paper: one module here with its functions and its ``SPEC``, and one
entry in :data:`_SPECS`.

Example:
    >>> get_accountant("dpsda-ps").paper
    'Cheng, Liao and Li (arXiv 2022)'
    >>> get_accountant("dpsda-c") is get_accountant("dpsda-ps")
    True
"""

from __future__ import annotations

from . import dpsda, huang2015, showkatbakhsh, wang_basar
from .spec import PARTS, AccountantSpec, NotSupportedError

__all__ = ["ACCOUNTANTS", "AccountantSpec", "NotSupportedError", "PARTS", "get_accountant"]

_SPECS: tuple[AccountantSpec, ...] = (huang2015.SPEC, showkatbakhsh.SPEC, wang_basar.SPEC, dpsda.SPEC)

ACCOUNTANTS: dict[str, AccountantSpec] = {name: spec for spec in _SPECS for name in spec.names}
"""Algorithm name -> the accountant's record of its paper."""


def get_accountant(name: str) -> AccountantSpec:
    """The accountant's record of the paper behind algorithm ``name``.

    Args:
        name: an algorithm's registry name, e.g. ``"huang2015"``.

    Returns:
        Its :class:`~accounting.papers.spec.AccountantSpec`.

    Raises:
        NotSupportedError: no paper record covers ``name`` (the message lists the known names).

    Example:
        >>> get_accountant("huang2015").mechanism
        'laplace'
    """
    try:
        return ACCOUNTANTS[name]
    except (KeyError, TypeError):
        raise NotSupportedError(
            f"the accountant is not supported for this algorithm: {name!r} has no paper record; "
            f"known: {', '.join(sorted(ACCOUNTANTS))}"
        ) from None

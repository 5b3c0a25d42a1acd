"""One module per paper on the accountant's side: sensitivity lemmas, claims, recomputed epsilons, assumptions.

Each module is one paper (:mod:`.huang2015`, :mod:`.showkatbakhsh`,
:mod:`.wang_basar`, :mod:`.dpsda`): plain functions of numbers, its
topology assumption set ``ASSUMPTIONS`` (in :mod:`topology.audit` terms) and
its ``SPEC``, an :class:`~accounting.papers.spec.AccountantSpec`. Modules are
found, not listed: :data:`ACCOUNTANTS` maps every algorithm name a module's
``SPEC`` accounts for to it; :func:`get_accountant` looks one up. Like the
rest of :mod:`accounting`, nothing here imports ``asyncdp``: the
simulator's paper records (``asyncdp.papers``) read these modules.

Adding a paper: one module here with its functions, its ``ASSUMPTIONS`` and its ``SPEC``.

Example:
    >>> get_accountant("dpsda-ps").paper
    'Cheng, Liao and Li (arXiv 2022)'
    >>> get_accountant("dpsda-c") is get_accountant("dpsda-ps")
    True
"""

from __future__ import annotations

import importlib
import pkgutil

from .spec import PARTS, AccountantSpec, NotSupportedError

__all__ = ["ACCOUNTANTS", "AccountantSpec", "NotSupportedError", "PARTS", "get_accountant"]


def _discover() -> dict[str, AccountantSpec]:
    found: dict[str, AccountantSpec] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "spec" or info.name.startswith("_"):
            continue
        spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "SPEC", None)
        if isinstance(spec, AccountantSpec):
            found.update(dict.fromkeys(spec.names, spec))
    return found


ACCOUNTANTS: dict[str, AccountantSpec] = _discover()
"""Algorithm name -> the accountant's record of its paper (every module here with a ``SPEC``)."""


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

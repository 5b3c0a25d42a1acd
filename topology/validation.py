"""Argument checks shared by the three packages: one place for "must be a finite real", "> 0", ....

Each check returns the value converted (``float`` or ``int``) or raises
``error`` (default :class:`~topology.errors.ParameterError`) with a message
that names the parameter, the value found and, if given, where it was found
(``where``: an algorithm, a link model, a round ...). ``accounting`` and
``asyncdp`` pass their own exception classes; booleans are never numbers here.

Example:
    >>> check_positive(0.5, "sigma")
    0.5
    >>> check_positive(0, "sigma", where="LogNormalLatency")
    Traceback (most recent call last):
    ...
    topology.errors.ParameterError: LogNormalLatency: sigma must be > 0, got 0
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from .errors import ParameterError

__all__ = ["check_real", "check_positive", "check_nonnegative", "check_open_unit", "check_integer"]


def _fail(error: type[Exception], where: str, message: str) -> Exception:
    return error(f"{where}: {message}" if where else message)


def check_real(
    value: Any, name: str, *, error: type[Exception] = ParameterError, where: str = "", finite: bool = True
) -> float:
    """``value`` as a float: a real number (not a bool, not NaN), finite unless ``finite=False``.

    Args:
        value: the argument as given.
        name: the parameter's name, for the message.
        error: the exception class to raise.
        where: optional context put before the message (e.g. the algorithm's name).
        finite: also reject +-inf.

    Returns:
        ``float(value)``.

    Raises:
        error: not a real number, NaN, or infinite when ``finite``.

    Example:
        >>> check_real(2, "c")
        2.0
        >>> check_real(float("inf"), "bound", finite=False)
        inf
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _fail(error, where, f"{name} must be a real number, got {value!r}")
    v = float(value)
    if finite and not math.isfinite(v):
        raise _fail(error, where, f"{name} must be finite, got {value!r}")
    if math.isnan(v):  # finite=False admits +-inf, never NaN
        raise _fail(error, where, f"{name} must be a real number, got {value!r}")
    return v


def check_positive(value: Any, name: str, *, error: type[Exception] = ParameterError, where: str = "") -> float:
    """A finite real ``> 0`` (see :func:`check_real` for the arguments).

    Example:
        >>> check_positive(1e-3, "epsilon")
        0.001
    """
    v = check_real(value, name, error=error, where=where)
    if v <= 0:
        raise _fail(error, where, f"{name} must be > 0, got {value!r}")
    return v


def check_nonnegative(value: Any, name: str, *, error: type[Exception] = ParameterError, where: str = "") -> float:
    """A finite real ``>= 0`` (see :func:`check_real` for the arguments).

    Example:
        >>> check_nonnegative(0, "loss")
        0.0
    """
    v = check_real(value, name, error=error, where=where)
    if v < 0:
        raise _fail(error, where, f"{name} must be >= 0, got {value!r}")
    return v


def check_open_unit(value: Any, name: str, *, error: type[Exception] = ParameterError, where: str = "") -> float:
    """A real in the open interval ``(0, 1)`` (see :func:`check_real` for the arguments).

    Example:
        >>> check_open_unit(0.9, "q")
        0.9
    """
    v = check_real(value, name, error=error, where=where)
    if not 0 < v < 1:
        raise _fail(error, where, f"{name} must lie in (0, 1), got {value!r}")
    return v


def check_integer(
    value: Any, name: str, *, minimum: int | None = None, error: type[Exception] = ParameterError, where: str = ""
) -> int:
    """An integer (Python or numpy; not a bool, not a float), at least ``minimum`` if given.

    Example:
        >>> check_integer(3, "horizon", minimum=1)
        3
        >>> check_integer(0, "horizon", minimum=1)
        Traceback (most recent call last):
        ...
        topology.errors.ParameterError: horizon must be >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise _fail(error, where, f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise _fail(error, where, f"{name} must be >= {minimum}, got {value!r}")
    return int(value)

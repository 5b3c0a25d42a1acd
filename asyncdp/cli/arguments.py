"""Argument types and resource guards shared by the ``asyncdp`` commands.

Counts (``--runs``, ``--horizon``, ``--nodes``) accept integers written
``2000``, ``10_000`` or ``1e4`` (an integral value in scientific notation);
seeds are nonnegative integers (of any size); counts at most ``2**63 - 1``. A bad value is an argparse usage error naming
the option (exit code 2). :func:`require_memory` refuses a job whose memory
estimate exceeds the machine's available memory, naming the parameter, the
estimate and what is available, before anything is allocated.

Example:
    >>> count("1e4"), nonnegative_int("0"), nonnegative_int("1e23") == 10**23
    (10000, 0, True)
    >>> positive_int("2.5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer, got '2.5'
"""

from __future__ import annotations

import argparse
import decimal
import os

from topology.validation import check_integer, check_open_unit, check_real

from ..errors import AsyncdpError

__all__ = ["ResourceLimitError", "MAX_COUNT", "integer", "count", "positive_int", "nonnegative_int", "finite_float",
           "open_unit", "unit_from_zero", "available_memory", "format_bytes", "require_memory"]


class ResourceLimitError(AsyncdpError, ValueError):
    """A job would need more memory than the machine has (reported before allocating)."""


def _integer(text: str) -> int:
    """``text`` as an int; scientific notation is read exactly (``1e23`` is 10**23, not 99999999999999991611392)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = decimal.Decimal(text.strip().replace("_", ""))
    except decimal.InvalidOperation:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if (not value.is_finite() or "e" not in text.lower() or value.adjusted() > 4300
            or value != value.to_integral_value()):
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


MAX_COUNT = 2**63 - 1
"""The largest count (runs, rounds, nodes, samples): no array or loop can be longer, and memory estimates of
larger ones would overflow a float (``--horizon 1e400`` ended in an ``OverflowError`` traceback)."""


def _sized(text: str) -> int:
    """``text`` as an int no larger than :data:`MAX_COUNT`."""
    value = _integer(text)
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"value must be at most 2**63 - 1, got {text!r}")
    return value


def integer(text: str) -> int:
    """argparse type: an integer up to ``2**63 - 1`` (lower bound checked by the command); ``1e6`` is accepted."""
    return _sized(text)


def count(text: str) -> int:
    """argparse type: an integer from 1 to ``2**63 - 1``; ``1e6`` is accepted for 1000000."""
    return check_integer(_sized(text), "value", minimum=1, error=argparse.ArgumentTypeError)


positive_int = count
"""argparse type: an integer >= 1 (alias of :func:`count`)."""


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds)."""
    return check_integer(_integer(text), "value", minimum=0, error=argparse.ArgumentTypeError)


def finite_float(text: str) -> float:
    """argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    return check_real(value, "value", error=argparse.ArgumentTypeError)


def open_unit(text: str) -> float:
    """argparse type: a number in ``(0, 1)`` (a ``--delta`` or a ``--confidence``).

    Example:
        >>> open_unit("1e-6")
        1e-06
        >>> open_unit("1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: value must lie in (0, 1), got 1.0
    """
    return check_open_unit(finite_float(text), "value", error=argparse.ArgumentTypeError)


def unit_from_zero(text: str) -> float:
    """argparse type: a number in ``[0, 1)`` (a claimed ``--delta``, 0 for pure DP)."""
    value = finite_float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"value must lie in [0, 1), got {value!r}")
    return value


def available_memory() -> int | None:
    """Bytes of memory available to a new job, ``None`` if unknown.

    psutil's ``available`` (free memory plus what the page cache can give back); without psutil (a declared
    dependency, so only on a platform it does not support) ``sysconf``'s free pages, which leave the page cache
    out and so understate it. Container (cgroup) limits are not read.
    """
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil missing or unsupported platform
        pass
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return int(pages * size)
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: float) -> str:
    """``1.5 GB`` style (powers of 1000).

    Example:
        >>> format_bytes(1.5e9), format_bytes(512)
        ('1.5 GB', '512 B')
    """
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def require_memory(estimate: float, parameter: str, detail: str) -> None:
    """Refuse a job needing more than the available memory.

    Args:
        estimate: bytes the job would hold at once (an estimate, made before allocating).
        parameter: the option(s) that set the size, e.g. ``"--runs 10000000000"``.
        detail: how the estimate was made (shown in the message).

    Raises:
        ResourceLimitError: ``estimate`` exceeds the available memory.

    Example:
        >>> require_memory(1e21, "--runs 1e16", "runs x rounds x agents x 8 bytes")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        asyncdp.cli.arguments.ResourceLimitError: --runs 1e16 needs about 1e+06 PB of memory (runs x rounds ...
    """
    available = available_memory()
    if available is not None and estimate > available:
        raise ResourceLimitError(
            f"{parameter} needs about {format_bytes(estimate)} of memory ({detail}); "
            f"this machine has {format_bytes(available)} available: use a smaller value")

"""Exception hierarchy of the ``topology`` package.

Every error raised for bad input is a :class:`TopologyError` (itself a
``ValueError``) whose message names the offending round, row/column, parameter
or value, so that a user can find the defect in their own data.
"""

from __future__ import annotations


class TopologyError(ValueError):
    """Base class of every input error raised by :mod:`topology`."""


class InvalidMatrixError(TopologyError):
    """A weight matrix is not square, is ragged, or holds NaN/inf/negative entries."""


class NodeCountMismatchError(TopologyError):
    """A round's matrix has a different number of nodes than the sequence."""


class EmptySequenceError(TopologyError):
    """A sequence with no rounds was given where at least one is needed."""


class RoundIndexError(TopologyError, IndexError):
    """A round index outside the rounds the sequence defines (rounds start at 1)."""


class ParameterError(TopologyError):
    """A constructor or check received an invalid parameter (e.g. ``B <= 0``)."""


class TopologyFormatError(TopologyError):
    """A topology file is not valid JSON or does not follow the documented format."""

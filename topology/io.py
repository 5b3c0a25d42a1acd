"""Reading and writing topology sequences as JSON files.

File format
===========

A topology file is one JSON object::

    {
      "nodes": 4,
      "periodic": false,
      "directed": true,
      "rule": "metropolis",
      "description": "a ring that loses a link",
      "rounds": [
        {"weights": [[0.5, 0.5, 0.0, 0.0], ...]},
        {"edges": [[0, 0, 0.5], [0, 1, 0.5], ...]},
        {"links": [[0, 1], [1, 0], ...], "rule": "metropolis"}
      ]
    }

Top-level keys (any other key is an error, to catch typos such as ``"round"``):

``nodes`` (required)
    The number of nodes ``N`` (a positive integer). Nodes are ``0 .. N-1``.
``rounds`` (required)
    A non-empty list with one entry per round; the first entry is round 1.
``periodic`` (optional, default ``false``)
    ``false``: the sequence is finite and has exactly ``len(rounds)`` rounds.
    ``true``: the list is one period, cycled for ever (round ``t`` uses entry
    ``(t - 1) % len(rounds)``).
``directed`` (optional, default ``true``)
    Flag stored on the sequence; no check relies on it, and a link ``[j, i]``
    is always one-way. With ``false``, every link of a ``links`` round must be
    listed in both directions (a link listed once is an error, not read as
    one-way).
``rule`` (optional)
    Default weight rule for rounds in the pattern form (below).
``description`` (optional)
    A free-text string.

Each round is an object holding exactly one of ``weights``, ``edges`` or
``links`` (plus ``rule`` for a ``links`` round). The orientation is always
``W[i][j]`` = weight node ``i`` (receiver) gives to the message from node ``j``
(sender); a positive off-diagonal ``W[i][j]`` is a link ``j -> i``.

Dense form ``{"weights": [[...], ...]}``
    ``N`` rows of ``N`` numbers; row ``i`` holds the weights node ``i`` gives
    each sender ``j``.
Sparse form ``{"edges": [[i, j, w], ...]}``
    ``W[i][j] = w`` (``i`` receives from ``j``); every unlisted entry is 0.
    Self-weights are **not** added: list them explicitly as ``[i, i, w]``.
    Each ``(i, j)`` may appear at most once; ``w = 0`` is allowed (no link).
Pattern form ``{"links": [[j, i], ...], "rule": "metropolis"}``
    Each pair is a link ``j -> i`` (sender first). The weights, including the
    self-weights, come from the named rule of :mod:`topology.weights`
    (``metropolis``, ``lazy-max-degree``, ``row-stochastic``,
    ``column-stochastic``, ``laplacian``); the round's ``rule`` overrides the
    top-level one, and one of them is required. Self-links ``[i, i]`` and
    repeated links are errors. ``"links": []`` is a round with no links.

Node indices are JSON integers; weights are JSON numbers (``true``/``false``
and strings are rejected). Weights must be finite and nonnegative: Python's
``json`` module accepts the non-standard literals ``NaN`` and ``Infinity``,
and such an entry is rejected with the round, row, column and value.

Errors
------
Every defect raises a :class:`~topology.errors.TopologyError` subclass whose
message starts with the file name (or the ``source`` given to
:func:`loads_sequence`) and names the round (1-based), the row/column or the
entry (``edges[k]``/``links[k]``, 0-based position in the list) and the value,
e.g. ``ring.json: round 3: entry [1, 0] is negative: -0.5``:

* not valid JSON, a key repeated in one object, a missing or ill-typed key, a round with none (or several) of
  ``weights``/``edges``/``links``, an index out of range, a repeated entry, an
  unknown rule: :class:`~topology.errors.TopologyFormatError` (for invalid
  JSON the message gives the parser's line and column);
* ``"rounds": []``: :class:`~topology.errors.EmptySequenceError`;
* ragged rows, a non-square matrix, NaN/infinite/negative weights:
  :class:`~topology.errors.InvalidMatrixError`;
* a dense round with a number of rows other than ``nodes``:
  :class:`~topology.errors.NodeCountMismatchError`.

Writing
-------
:func:`save_sequence` writes finite sequences in full, periodic ones as one
period with ``"periodic": true`` and needs a ``horizon`` for other infinite
sequences. Floats are written with ``repr`` precision, so loading a saved file
gives back exactly the same matrices.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import IO, Any, Literal

import numpy as np
import scipy.sparse as sp

from .errors import (
    EmptySequenceError,
    InvalidMatrixError,
    NodeCountMismatchError,
    ParameterError,
    TopologyError,
    TopologyFormatError,
)
from .matrices import as_weight_matrix
from .sequence import GraphSequence, from_matrices, periodic as periodic_sequence
from .weights import WEIGHT_RULES, get_rule

__all__ = [
    "load_sequence",
    "loads_sequence",
    "parse_sequence",
    "sequence_to_dict",
    "dumps_sequence",
    "save_sequence",
]

Form = Literal["auto", "dense", "edges"]

_TOP_KEYS = frozenset({"nodes", "rounds", "periodic", "directed", "rule", "description"})
_ROUND_FORMS = ("weights", "edges", "links")


# -- reading ---------------------------------------------------------------------


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _to_float(x: Any, where: str) -> float:
    try:
        return float(x)
    except OverflowError:
        raise InvalidMatrixError(f"{where} is too large to be a float: {x!r}") from None


def _type_name(x: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(x), type(x).__name__)


def _check_rule(rule: Any, where: str) -> str:
    if not isinstance(rule, str):
        raise TopologyFormatError(f'{where}"rule" must be a string, got {_type_name(rule)} ({rule!r})')
    if rule not in WEIGHT_RULES:
        raise TopologyFormatError(
            f"{where}unknown weight rule {rule!r}; known rules: {', '.join(sorted(WEIGHT_RULES))}"
        )
    return rule


def _dense_round(rows: Any, n: int, t: int) -> sp.csr_array:
    where = f"round {t}"
    if not isinstance(rows, list):
        raise TopologyFormatError(f'{where}: "weights" must be a list of rows, got {_type_name(rows)}')
    if len(rows) != n:
        raise NodeCountMismatchError(
            f'{where}: "weights" has {len(rows)} rows, the file declares "nodes": {n}'
        )
    out = np.empty((n, n), dtype=float)
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            raise TopologyFormatError(f"{where}: row {i} must be a list of numbers, got {_type_name(row)}")
        if len(row) != n:
            raise InvalidMatrixError(
                f'{where}: row {i} has {len(row)} entries, expected {n} (the "nodes" value)'
            )
        for j, v in enumerate(row):
            if not _is_number(v):
                raise TopologyFormatError(
                    f"{where}: entry [{i}, {j}] must be a number, got {_type_name(v)} ({v!r})"
                )
            out[i, j] = _to_float(v, f"{where}: entry [{i}, {j}]")
    return as_weight_matrix(out, num_nodes=n, round_index=t)


def _index(x: Any, n: int, where: str, what: str) -> int:
    if not _is_int(x):
        raise TopologyFormatError(f"{where}: {what} index must be an integer, got {_type_name(x)} ({x!r})")
    if not 0 <= x < n:
        raise TopologyFormatError(f"{where}: {what} index {x} is out of range 0..{n - 1}")
    return x


def _edges_round(edges: Any, n: int, t: int) -> sp.csr_array:
    if not isinstance(edges, list):
        raise TopologyFormatError(f'round {t}: "edges" must be a list of [i, j, w], got {_type_name(edges)}')
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    seen: dict[tuple[int, int], int] = {}
    for k, entry in enumerate(edges):
        where = f"round {t}: edges[{k}] = {json.dumps(entry)}"
        if not (isinstance(entry, list) and len(entry) == 3):
            raise TopologyFormatError(f"{where}: an edge must be a list [i, j, w]")
        i = _index(entry[0], n, where, "receiver i")
        j = _index(entry[1], n, where, "sender j")
        w = entry[2]
        if not _is_number(w):
            raise TopologyFormatError(f"{where}: weight must be a number, got {_type_name(w)} ({w!r})")
        if (i, j) in seen:
            raise TopologyFormatError(
                f"{where}: entry [{i}, {j}] is already given by edges[{seen[(i, j)]}]"
            )
        seen[(i, j)] = k
        rows.append(i)
        cols.append(j)
        vals.append(_to_float(w, f"round {t}: entry [{i}, {j}]"))
    # Non-finite/negative values are reported by as_weight_matrix with round and entry.
    mat = sp.csr_array((np.asarray(vals, dtype=float), (rows, cols)), shape=(n, n))
    return as_weight_matrix(mat, num_nodes=n, round_index=t)


def _links_round(links: Any, rule: str, n: int, t: int, directed: bool) -> sp.csr_array:
    if not isinstance(links, list):
        raise TopologyFormatError(f'round {t}: "links" must be a list of [j, i], got {_type_name(links)}')
    rows: list[int] = []
    cols: list[int] = []
    seen: dict[tuple[int, int], int] = {}
    for k, entry in enumerate(links):
        where = f"round {t}: links[{k}] = {json.dumps(entry)}"
        if not (isinstance(entry, list) and len(entry) == 2):
            raise TopologyFormatError(f"{where}: a link must be a pair [j, i] (sender j, receiver i)")
        j = _index(entry[0], n, where, "sender j")
        i = _index(entry[1], n, where, "receiver i")
        if i == j:
            raise TopologyFormatError(
                f"{where}: self-link of node {i}; the weight rule adds self-weights itself"
            )
        if (i, j) in seen:
            raise TopologyFormatError(f"{where}: link {j} -> {i} is already given by links[{seen[(i, j)]}]")
        seen[(i, j)] = k
        rows.append(i)
        cols.append(j)
    if not directed:  # an undirected file listing each link once meant it both ways; the rule would read it one way
        bad = next((k for k, (i, j) in enumerate(zip(rows, cols)) if (j, i) not in seen), None)
        if bad is not None:
            raise TopologyFormatError(
                f"round {t}: links[{bad}] = [{cols[bad]}, {rows[bad]}]: link {cols[bad]} -> {rows[bad]} has no reverse link "
                f'[{rows[bad]}, {cols[bad]}], but the file declares "directed": false (a link [j, i] is one-way: list '
                'both directions of every undirected link, or drop "directed": false)')
    pattern = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n, n), dtype=bool)
    try:
        mat = get_rule(rule)(pattern)
    except TopologyError as exc:
        raise type(exc)(f"round {t}: rule {rule!r}: {exc}") from None
    return as_weight_matrix(mat, num_nodes=n, round_index=t)


def _parse_round(rnd: Any, t: int, n: int, default_rule: str | None, directed: bool) -> sp.csr_array:
    if not isinstance(rnd, Mapping):
        raise TopologyFormatError(f"round {t}: must be a JSON object, got {_type_name(rnd)}")
    forms = [f for f in _ROUND_FORMS if f in rnd]
    if len(forms) != 1:
        found = f"found {', '.join(map(repr, forms))}" if forms else "found none"
        raise TopologyFormatError(f'round {t}: needs exactly one of "weights", "edges" or "links", {found}')
    form = forms[0]
    allowed = {form, "rule"} if form == "links" else {form}
    extra = sorted(set(rnd) - allowed)
    if extra:
        raise TopologyFormatError(
            f"round {t}: unexpected key(s) {', '.join(map(repr, extra))} in a {form!r} round"
        )
    if form == "weights":
        return _dense_round(rnd["weights"], n, t)
    if form == "edges":
        return _edges_round(rnd["edges"], n, t)
    if "rule" in rnd:
        rule = _check_rule(rnd["rule"], f"round {t}: ")
    elif default_rule is not None:
        rule = default_rule
    else:
        raise TopologyFormatError(
            f'round {t}: a "links" round needs a "rule" (in the round or at the top level); '
            f"known rules: {', '.join(sorted(WEIGHT_RULES))}"
        )
    return _links_round(rnd["links"], rule, n, t, directed)


def parse_sequence(data: Any, *, source: str = "topology data") -> GraphSequence:
    """Build a :class:`GraphSequence` from an already-decoded JSON object.

    Args:
        data: the decoded JSON (a dict following the module's file format).
        source: a name for the data, used in error messages.

    Returns:
        A finite sequence of ``len(rounds)`` rounds, or a periodic one if
        ``"periodic": true``.

    Raises:
        TopologyFormatError, EmptySequenceError, InvalidMatrixError,
        NodeCountMismatchError: see the module docstring.

    Example:
        >>> seq = parse_sequence({"nodes": 2, "rounds": [{"edges": [[0, 0, 1.0], [1, 1, 1.0]]}]})
        >>> seq.length, seq.dense(1).tolist()
        (1, [[1.0, 0.0], [0.0, 1.0]])
    """
    if not isinstance(data, Mapping):
        raise TopologyFormatError(f"{source}: the top level must be a JSON object, got {_type_name(data)}")
    extra = sorted(set(data) - _TOP_KEYS)
    if extra:
        raise TopologyFormatError(
            f"{source}: unknown top-level key(s) {', '.join(map(repr, extra))}; "
            f"allowed: {', '.join(sorted(_TOP_KEYS))}"
        )
    if "nodes" not in data:
        raise TopologyFormatError(f'{source}: missing required key "nodes"')
    n = data["nodes"]
    if not _is_int(n) or n < 1:
        raise TopologyFormatError(f'{source}: "nodes" must be a positive integer, got {n!r}')
    if "rounds" not in data:
        raise TopologyFormatError(f'{source}: missing required key "rounds"')
    rounds = data["rounds"]
    if not isinstance(rounds, list):
        raise TopologyFormatError(f'{source}: "rounds" must be a list, got {_type_name(rounds)}')
    if not rounds:
        raise EmptySequenceError(f'{source}: "rounds" is empty; a sequence needs at least one round')
    flags = {}
    for key, default in (("periodic", False), ("directed", True)):
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise TopologyFormatError(f'{source}: "{key}" must be true or false, got {value!r}')
        flags[key] = value
    description = data.get("description", "")
    if not isinstance(description, str):
        raise TopologyFormatError(f'{source}: "description" must be a string, got {_type_name(description)}')
    default_rule = _check_rule(data["rule"], f"{source}: top level: ") if "rule" in data else None

    mats: list[sp.csr_array] = []
    for t, rnd in enumerate(rounds, start=1):
        try:
            mats.append(_parse_round(rnd, t, n, default_rule, flags["directed"]))
        except TopologyError as exc:  # prefix the source, keep the class
            raise type(exc)(f"{source}: {exc}") from None

    if flags["periodic"]:
        return periodic_sequence(mats, directed=flags["directed"], description=description)
    return from_matrices(mats, directed=flags["directed"], description=description)


class _RepeatedKey(Exception):
    """A JSON object names one key twice (the key is the argument)."""


def _without_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def loads_sequence(text: str | bytes, *, source: str = "<string>") -> GraphSequence:
    """Parse a topology sequence from JSON text.

    Args:
        text: the JSON document (see the module docstring for the format).
        source: a name for the text, used in error messages.

    Returns:
        The :class:`GraphSequence` described by the text.

    Raises:
        TopologyFormatError: invalid JSON (the message gives line and column)
            or a document that does not follow the format; other
            :class:`~topology.errors.TopologyError` subclasses as listed in the
            module docstring.

    Example:
        >>> seq = loads_sequence('{"nodes": 3, "periodic": true, "rule": "metropolis",'
        ...                      ' "rounds": [{"links": [[0, 1], [1, 0]]}]}')
        >>> seq.period, seq.dense(5)[1].tolist()
        (1, [0.5, 0.5, 0.0])
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TopologyFormatError(f"{source}: not UTF-8 text ({exc})") from None
    try:
        data = json.loads(text, object_pairs_hook=_without_repeated_keys)
    except _RepeatedKey as exc:
        raise TopologyFormatError(f"{source}: key {exc.args[0]!r} appears twice in one JSON object (a parser keeps "
                                  "only the last value: the first would be dropped silently)") from None
    except json.JSONDecodeError as exc:
        raise TopologyFormatError(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise TopologyFormatError(f"{source}: not valid JSON: nesting too deep") from None
    return parse_sequence(data, source=source)


def load_sequence(path_or_file: str | os.PathLike[str] | IO[str] | IO[bytes]) -> GraphSequence:
    """Load a topology sequence from a JSON file.

    Args:
        path_or_file: a path, or an open (text or binary) file object.

    Returns:
        The :class:`GraphSequence` described by the file.

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError: the file cannot be read.
        TopologyFormatError, EmptySequenceError, InvalidMatrixError,
        NodeCountMismatchError: see the module docstring; messages start with
            the file name.

    Example:
        >>> import io
        >>> load_sequence(io.StringIO('{"nodes": 1, "rounds": [{"weights": [[1]]}]}')).length
        1
    """
    if hasattr(path_or_file, "read"):
        source = str(getattr(path_or_file, "name", "<file>"))
        return loads_sequence(path_or_file.read(), source=source)
    path = os.fspath(path_or_file)
    with open(path, "rb") as fh:
        raw = fh.read()
    return loads_sequence(raw, source=str(path))


# -- writing ---------------------------------------------------------------------


def _rounds_to_write(seq: GraphSequence, horizon: int | None) -> tuple[list[sp.csr_array], bool]:
    if horizon is None and seq.length is None:
        if seq.period is None:
            raise ParameterError(
                "a horizon is required to save an infinite non-periodic sequence"
            )
        return [seq.weights(t) for t in range(1, seq.period + 1)], True
    return [w for _, w in seq.rounds(horizon)], False


def _dense_json(mat: sp.csr_array) -> dict[str, Any]:
    return {"weights": mat.toarray().tolist()}


def _edges_json(mat: sp.csr_array) -> dict[str, Any]:
    coo = mat.tocoo()
    return {
        "edges": [[int(i), int(j), float(w)] for i, j, w in zip(coo.row, coo.col, coo.data)]
    }


def sequence_to_dict(
    seq: GraphSequence, horizon: int | None = None, form: Form = "auto"
) -> dict[str, Any]:
    """The JSON-ready dict of a sequence in the documented file format.

    Args:
        seq: the sequence.
        horizon: number of rounds to write (as a finite sequence). If ``None``:
            all rounds of a finite sequence, or one period of a periodic one
            (written with ``"periodic": true``).
        form: ``"dense"`` (``weights`` rows), ``"edges"`` (``[i, j, w]`` lists
            including the diagonal) or ``"auto"``: edges when the written rounds
            are sparse (total nnz < rounds * N * N / 4), else dense.

    Returns:
        A dict with keys ``nodes``, ``periodic``, ``directed``, ``rounds`` and,
        if the sequence has one, ``description``.

    Raises:
        ParameterError: an unknown ``form``, a bad ``horizon``, or no horizon for
            an infinite non-periodic sequence.
        RoundIndexError: ``horizon`` exceeds a finite sequence's length.

    Example:
        >>> from topology.sequence import static
        >>> sequence_to_dict(static([[1.0, 0.0], [0.0, 1.0]]), form="edges")["rounds"]
        [{'edges': [[0, 0, 1.0], [1, 1, 1.0]]}]
    """
    if form not in ("auto", "dense", "edges"):
        raise ParameterError(f"form must be 'auto', 'dense' or 'edges', got {form!r}")
    mats, is_periodic = _rounds_to_write(seq, horizon)
    n = seq.num_nodes
    if form == "auto":
        total = sum(m.nnz for m in mats)
        form = "edges" if total < len(mats) * n * n / 4 else "dense"
    encode = _edges_json if form == "edges" else _dense_json
    out: dict[str, Any] = {
        "nodes": n,
        "periodic": is_periodic,
        "directed": bool(seq.directed),
    }
    if seq.description:
        out["description"] = str(seq.description)
    out["rounds"] = [encode(m) for m in mats]
    return out


def dumps_sequence(seq: GraphSequence, horizon: int | None = None, form: Form = "auto") -> str:
    """The JSON text of :func:`sequence_to_dict`, one matrix row or edge per line.

    Floats are written with ``repr`` precision, so parsing the text back with
    :func:`loads_sequence` gives exactly the same matrices.

    Example:
        >>> from topology.sequence import static
        >>> print(dumps_sequence(static([[1.0]]), form="dense"), end="")
        {
          "nodes": 1,
          "periodic": true,
          "directed": true,
          "description": "static",
          "rounds": [
            {"weights": [
              [1.0]
            ]}
          ]
        }
    """
    data = sequence_to_dict(seq, horizon=horizon, form=form)
    lines = ["{"]
    for key, value in data.items():
        if key != "rounds":
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, allow_nan=False)},")
    lines.append('  "rounds": [')
    for t, rnd in enumerate(data["rounds"]):
        (key, items), = rnd.items()
        body = ",\n".join(f"      {json.dumps(item, allow_nan=False)}" for item in items)
        inner = f"\n{body}\n    " if items else ""
        sep = "," if t < len(data["rounds"]) - 1 else ""
        lines.append(f"    {{{json.dumps(key)}: [{inner}]}}{sep}")
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_sequence(
    seq: GraphSequence,
    path: str | os.PathLike[str],
    horizon: int | None = None,
    form: Form = "auto",
) -> None:
    """Write a sequence to ``path`` in the documented JSON format.

    Args:
        seq: the sequence.
        path: the output file (overwritten).
        horizon: rounds to write; see :func:`sequence_to_dict`.
        form: ``"auto"``, ``"dense"`` or ``"edges"``; see :func:`sequence_to_dict`.

    Raises:
        ParameterError: no horizon for an infinite non-periodic sequence, or a
            bad ``form``/``horizon``.
        RoundIndexError: ``horizon`` exceeds a finite sequence's length.
        OSError: the file cannot be written.

    Example:
        >>> import tempfile, pathlib
        >>> from topology.sequence import static
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "ring.json"
        >>> save_sequence(static([[0.5, 0.5], [0.5, 0.5]]), p)
        >>> load_sequence(p).dense(7).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    text = dumps_sequence(seq, horizon=horizon, form=form)
    with open(os.fspath(path), "w", encoding="utf-8") as fh:
        fh.write(text)

"""Keep an attribute's docstring as written when its first line has a colon.

Napoleon reads the first line of a data, attribute or property docstring as
``type: description`` and turns the part before the colon into a ``:type:``
field, which nitpicky mode then resolves as a class ("The largest privacy
loss: ..." becomes a reference to a class ``The largest privacy loss``). The
project's docstrings give no types that way (types come from the
annotations, which the site does not show), so this ``autodoc-process-docstring``
hook, run after napoleon's, puts such a line back together.
"""

from __future__ import annotations

from typing import Any

KINDS = ("data", "attribute", "property")


def rejoin_type_field(what: str, lines: list[str]) -> None:
    """Move napoleon's ``:type: X`` field of an attribute back to the front of its description, in place.

    Args:
        what: the kind of object autodoc documents (only data, attributes and properties are changed).
        lines: the docstring's lines after napoleon, edited in place.

    Example:
        >>> lines = ["``inf`` with Gaussian releases.", "", ":type: The largest privacy loss"]
        >>> rejoin_type_field("property", lines)
        >>> lines
        ['The largest privacy loss: ``inf`` with Gaussian releases.']
    """
    if what not in KINDS:
        return
    fields = [k for k, line in enumerate(lines) if line.startswith(":type: ")]
    if len(fields) != 1:
        return
    k = fields[0]
    prefix = lines[k][len(":type: "):].strip()
    del lines[k]
    while lines and not lines[-1].strip():
        lines.pop()
    first = next((j for j, line in enumerate(lines) if line.strip()), None)
    if first is None:
        lines[:] = [prefix]
    else:
        lines[first] = f"{prefix}: {lines[first].lstrip()}"


def _hook(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    rejoin_type_field(what, lines)


def setup(app: Any) -> dict:
    """Connect :func:`rejoin_type_field` after napoleon (whose hook has the default priority, 500)."""
    app.connect("autodoc-process-docstring", _hook, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

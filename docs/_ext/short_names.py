"""Resolve a Python cross-reference by its short name when exactly one documented object has that name.

Docstrings name objects of their own package briefly: ``GraphSequence`` in
``topology.io``, ``ALGORITHMS`` in ``topology.audit``'s functions. Sphinx
looks such a name up in the current module and class only, while the object
is documented once, at the module that defines it (``topology.sequence``).
This ``missing-reference`` hook finds the documented objects whose full name
ends with ``.`` + the reference's target (``GraphSequence.resolve_horizon``
matches ``topology.sequence.GraphSequence.resolve_horizon``) and links to the
object when there is exactly one; a dotted target that imports as a
documented function or class under another name (a package's re-export, such
as ``accounting.auditing.audit_samples``) links to that object; otherwise the reference stays unresolved
and nitpicky mode reports it. Nothing is ignored: a name that is documented
nowhere, or documented twice, still fails the build.
"""

from __future__ import annotations

import pydoc
from typing import Any

from docutils import nodes


def resolve_short_name(app: Any, env: Any, node: Any, contnode: nodes.Element) -> nodes.Element | None:
    """The reference node for a unique documented object ending in the target, else ``None``.

    Args:
        app: the Sphinx application.
        env: the build environment.
        node: the ``pending_xref`` node that did not resolve.
        contnode: the node to wrap in the reference.

    Returns:
        The resolved reference, or ``None`` to leave the reference unresolved.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain = env.get_domain("py")
    matches = [name for name in domain.objects if name.endswith("." + target)]
    canonical = _canonical_name(target)
    if not matches and canonical in domain.objects:
        matches = [canonical]  # a re-export (accounting.auditing.audit_samples) of a documented object
    if len(matches) > 1:  # a module and a function of one name (asyncdp.experiments.sweep.sweep): the role decides
        kinds = domain.objtypes_for_role(node.get("reftype", "obj")) or []
        matches = [name for name in matches if domain.objects[name].objtype in kinds]
    if len(matches) != 1:
        return None
    obj = domain.objects[matches[0]]
    return domain.resolve_xref(env, node["refdoc"], app.builder, obj.objtype if obj.objtype != "module" else "mod",
                               matches[0], node, contnode)


def _canonical_name(target: str) -> str | None:
    """``module.qualname`` of the function or class that the dotted ``target`` imports as, if any."""
    obj = pydoc.locate(target)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname and "." in target else None


def setup(app: Any) -> dict[str, Any]:
    """Register :func:`resolve_short_name`."""
    app.connect("missing-reference", resolve_short_name)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

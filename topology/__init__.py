"""Graphs over time, weight rules, property checks and theorem-assumption audits.

``topology`` depends only on numpy, scipy and networkx (and ``lazy_loader``);
it never imports ``asyncdp`` or ``accounting``.

The public names are imported on first access (PEP 562, via
``lazy_loader``; the names and their submodules are listed in
``__init__.pyi``), so ``import topology`` stays cheap. ``topology.audit`` is
the function :func:`audit`, also after the submodule of the same name has
been imported.
"""

import lazy_loader

# lazy_loader keeps ``topology.audit`` the function, also once the submodule
# of the same name has been imported.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

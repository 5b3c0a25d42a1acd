"""Independent privacy accounting: ledgers, mechanisms, composition and audits.

``accounting`` reaches its verdicts from plain data (the ledger, transcripts,
function-class constants); it never imports ``asyncdp``.

The public names are imported on first access (PEP 562, via
``lazy_loader``; the names and their submodules are listed in
``__init__.pyi``), so ``import accounting`` stays cheap: scipy.stats, pandas
and dp_accounting load only when a name that needs them is used.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

"""Per-algorithm inputs for the independent accountant.

Module ``asyncdp.privacy_adapters.<name>`` (the algorithm's registry name with
``-`` read as ``_``) defines ``sensitivity(scenario) -> numpy array (T,)``: the
sensitivity of each round's release, computed by :mod:`accounting.sensitivity`
from the problem's function-class constants and the algorithm's parameters —
never from the algorithm's own claimed values.
"""

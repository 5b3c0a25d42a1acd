"""The engine-independent rule interface (:mod:`.base`) and helpers shared by rules (:mod:`.clipping`).

Every algorithm, published or a user's own, is an :class:`Algorithm`
subclass: a pure per-agent rule both engines call. The library's published
rules live in their papers' folders (:mod:`asyncdp.papers`); every
registered rule is listed by :data:`asyncdp.REGISTRY`.
"""

from __future__ import annotations

from .base import Algorithm, Channel, NoiseDeclaration

__all__ = ["Algorithm", "Channel", "NoiseDeclaration"]

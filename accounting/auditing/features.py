"""Features of a numeric output for the learned score (:mod:`.classifier`).

An output row ``x`` (flattened to ``d`` numbers) becomes

* ``v``: ``x`` with non-finite entries replaced by 0 (clipped to ``+-1e150`` so
  that ``v**2`` stays finite),
* ``|v|`` and ``v**2`` (a linear score on them is any even/odd quadratic per
  coordinate: Gaussian and Laplace likelihood ratios and their tails),
* for ``d > 1``: ``v`` sorted (order statistics: the maximum of report-noisy-max,
  the answered values of the sparse vector technique wherever they sit) and a
  one-hot encoding of ``argmax v``,
* (a *linear* map keeps only ``v``, the order statistics and the indicators
  below),
* for each column that held a non-finite value *in the training samples*: an
  is-NaN indicator and the sign of an infinity (``-1``, ``0``, ``+1``), so
  outputs such as "no answer" (NaN) are features rather than errors.

The column set is fixed from the training samples only (:func:`fit_features`),
so the certification samples never influence the event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FeatureMap", "FeaturePart", "fit_features"]

CLIP = 1e150
"""Finite entries are clipped to ``[-CLIP, CLIP]`` before squaring."""


@dataclass(frozen=True)
class FeaturePart:
    """One part of a feature map's features (:meth:`FeatureMap.parts`): the columns from ``start`` on.

    Attributes:
        start: its first column among the map's features.
        values: its features, ``(n, width)``; ``None`` for the one-hot encoding of the argmax.
        top: for the one-hot encoding, the argmax of each row, ``(n,)`` (its ``dim`` columns are 1 there and
            0 elsewhere); else ``None``.
    """

    start: int
    values: np.ndarray | None
    top: np.ndarray | None = None

    def width(self, dim: int) -> int:
        """Its number of columns (``dim`` for the one-hot encoding)."""
        return dim if self.values is None else int(self.values.shape[1])


@dataclass(frozen=True)
class FeatureMap:
    """The feature transformation of :func:`fit_features` (see the module docstring).

    Attributes:
        dim: number of output coordinates ``d``.
        nonfinite_columns: columns that get a NaN indicator and an infinity sign.
    """

    dim: int
    nonfinite_columns: tuple[int, ...]
    linear: bool = False

    @property
    def size(self) -> int:
        """Number of features."""
        d = self.dim
        if self.linear:
            return d + (d if d > 1 else 0) + 2 * len(self.nonfinite_columns)
        return 3 * d + (2 * d if d > 1 else 0) + 2 * len(self.nonfinite_columns)

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Features of the rows of ``x`` (shape ``(n, dim)``), as a float array ``(n, size)``.

        Example:
            >>> fm = fit_features(np.array([[1.0, np.nan], [3.0, -2.0]]))
            >>> fm.transform(np.array([[1.0, np.nan]])).tolist()
            [[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]]
        """
        x = np.asarray(x, dtype=float)
        out = np.empty((x.shape[0], self.size))  # each part written into its columns (no concatenation copy)
        for part in self.parts(x):
            if part.values is not None:
                out[:, part.start:part.start + part.values.shape[1]] = part.values
            else:
                onehot = out[:, part.start:part.start + self.dim]
                onehot[...] = 0.0
                onehot[np.arange(x.shape[0]), part.top] = 1.0
        return out

    def parts(self, x: np.ndarray) -> list[FeaturePart]:
        """The features of the rows of ``x`` part by part, in column order, without the ``(n, size)`` matrix.

        Every part but the one-hot encoding of ``argmax v`` is given by its
        values; that one by the argmax of each row (:attr:`FeaturePart.top`).
        :meth:`transform` writes them into their columns; a linear score can
        read them part by part (:class:`~accounting.auditing.classifier.LearnedScore`).

        Example:
            >>> fm = fit_features(np.zeros((4, 2)))
            >>> [(p.start, p.top is None) for p in fm.parts(np.array([[1.0, 3.0]]))]
            [(0, True), (2, True), (4, True), (6, True), (8, False)]
        """
        x = np.asarray(x, dtype=float)
        d = self.dim
        v = np.where(np.isfinite(x), x, 0.0)
        np.clip(v, -CLIP, CLIP, out=v)
        out = [FeaturePart(0, v)]
        col = d
        if not self.linear:
            out += [FeaturePart(d, np.abs(v)), FeaturePart(2 * d, np.multiply(v, v))]
            col = 3 * d
        if d > 1:
            out.append(FeaturePart(col, np.sort(v, axis=1)))
            col += d
            if not self.linear:
                out.append(FeaturePart(col, None, np.argmax(v, axis=1)))
                col += d
        if self.nonfinite_columns:
            k = len(self.nonfinite_columns)
            sub = x[:, list(self.nonfinite_columns)]
            out.append(FeaturePart(col, np.isnan(sub).astype(float)))
            out.append(FeaturePart(col + k, np.where(np.isinf(sub), np.sign(np.nan_to_num(
                sub, nan=0.0, posinf=1.0, neginf=-1.0)), 0.0)))
        return out

    def columns_in(self, full: FeatureMap) -> np.ndarray | None:
        """Where this map's features sit among ``full``'s: the column indices, or ``None`` if some do not.

        The linear map of the same outputs keeps ``v``, the order statistics
        and the indicators of the quadratic map, in that order, so its
        features are a column selection of the quadratic ones (the scores
        compute them once, :class:`~accounting.auditing.classifier.ScoreCandidates`).

        Example:
            >>> full = fit_features(np.array([[1.0, np.nan], [3.0, -2.0]]))
            >>> lin = fit_features(np.array([[1.0, np.nan], [3.0, -2.0]]), linear=True)
            >>> lin.columns_in(full).tolist(), full.columns_in(lin), full.columns_in(full).size == full.size
            ([0, 1, 6, 7, 10, 11], None, True)
        """
        if self == full:
            return np.arange(full.size)
        if (self.dim, self.nonfinite_columns, self.linear, full.linear) != (full.dim, full.nonfinite_columns, True,
                                                                             False):
            return None
        d, k = self.dim, 2 * len(self.nonfinite_columns)
        parts = [np.arange(d)]
        if d > 1:
            parts.append(np.arange(3 * d, 4 * d))
        parts.append(np.arange(full.size - k, full.size))
        return np.concatenate(parts)


def fit_features(x_train: np.ndarray, *, linear: bool = False) -> FeatureMap:
    """The :class:`FeatureMap` for rows like ``x_train`` (shape ``(n, d)``, numeric).

    ``linear=True``: only ``v``, its order statistics and the non-finite
    indicators, so a linear score on them is monotone in every value and
    order statistic (see :func:`accounting.auditing.classifier.fit_scores`).

    Example:
        >>> fit_features(np.zeros((5, 3))).size
        15
    """
    x = np.asarray(x_train, dtype=float)
    cols = tuple(int(j) for j in np.flatnonzero(~np.isfinite(x).all(axis=0)))
    return FeatureMap(dim=int(x.shape[1]), nonfinite_columns=cols, linear=linear)

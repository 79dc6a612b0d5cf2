"""Data loading: the IDX parser, the pipelines, and the rule that nothing waits on tfds offline."""

import gzip
import os
import socket
import struct
import sys
import threading
import time
import types

import numpy as np
import pytest

from tf_fftconv.experiments import data

FASHION_MNIST = data.FASHION_MNIST_DIR
have_fashion_mnist = pytest.mark.skipif(
    not os.path.isdir(FASHION_MNIST),
    reason=f"Fashion-MNIST IDX files not found in {FASHION_MNIST} "
           "(Debian package dataset-fashion-mnist)")


def _idx_bytes(array, code):
    """An IDX file built by hand from the format description (independent of write_idx)."""
    array = np.asarray(array)
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def _write(path, payload, compress=False):
    with open(path, "wb") as f:
        f.write(gzip.compress(payload) if compress else payload)
    return str(path)


def _mnist_dir(tmp_path, rng, n_train=300, n_test=100, compress=True, size=28):
    """A small MNIST-format directory; returns it and its arrays."""
    arrays = {
        ("train", "images"): rng.integers(0, 256, (n_train, size, size), dtype=np.uint8),
        ("train", "labels"): rng.integers(0, 10, n_train, dtype=np.uint8),
        ("t10k", "images"): rng.integers(0, 256, (n_test, size, size), dtype=np.uint8),
        ("t10k", "labels"): rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for (split, kind), a in arrays.items():
        name = f"{split}-{kind}-idx{a.ndim}-ubyte" + (".gz" if compress else "")
        _write(tmp_path / name, _idx_bytes(a, 0x08), compress)
    return tmp_path, arrays


# ----------------------------------------------------------------------------- read_idx

@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("dtype,code", [(np.uint8, 0x08), (np.int8, 0x09), (np.int16, 0x0B),
                                        (np.int32, 0x0C), (np.float32, 0x0D), (np.float64, 0x0E)])
def test_read_idx_types(tmp_path, rng, compress, dtype, code):
    array = (rng.standard_normal((3, 4, 5)) * 100).astype(dtype)
    path = _write(tmp_path / "a.idx", _idx_bytes(array, code), compress)
    got = data.read_idx(path)
    assert got.dtype == np.dtype(dtype) and got.dtype.isnative
    np.testing.assert_array_equal(got, array)


def test_read_idx_gzip_detected_by_content_not_name(tmp_path, rng):
    labels = rng.integers(0, 10, 17, dtype=np.uint8)
    path = _write(tmp_path / "labels-no-gz-suffix", _idx_bytes(labels, 0x08), compress=True)
    np.testing.assert_array_equal(data.read_idx(path), labels)


def test_write_idx_round_trip(tmp_path, rng):
    for name, array in (("i.gz", rng.integers(0, 256, (2, 3), dtype=np.uint8)),
                        ("f", rng.standard_normal(7).astype(np.float32))):
        data.write_idx(tmp_path / name, array)
        np.testing.assert_array_equal(data.read_idx(tmp_path / name), array)
    assert (tmp_path / "i.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "f").read_bytes() == _idx_bytes(array, 0x0D)
    with pytest.raises(ValueError, match="IDX cannot hold dtype"):
        data.write_idx(tmp_path / "c", np.zeros(3, np.complex64))


@pytest.mark.parametrize("payload,match", [
    (b"", r"0 bytes, too short for the 4-byte IDX magic number"),
    (b"\x00\x00\x08", r"3 bytes, too short"),
    (b"\x00\x01\x08\x01" + b"\x00" * 8, r"bad magic number 0x00010801"),
    (b"\x00\x00\x07\x01" + b"\x00" * 8, r"bad magic number 0x00000701"),
    (b"\x00\x00\x08\x00", r"bad magic number 0x00000800"),
    (b"PK\x03\x04" + b"\x00" * 8, r"bad magic number 0x504b0304"),
    (b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00", r"truncated header: 3 dimensions need 16"),
    (b"\x00\x00\x08\x02\x00\x00\x00\x02\x00\x00\x00\x03" + b"\x01" * 5,
     r"header says shape \(2, 3\) of uint8, i\.e\. 6 data bytes, but the file has 5"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x02" + b"\x01" * 3,
     r"header says shape \(2,\) .* 2 data bytes, but the file has 3"),
    (b"\x00\x00\x0d\x01\x00\x00\x00\x02" + b"\x01" * 7,
     r"shape \(2,\) of float32, i\.e\. 8 data bytes, but the file has 7"),
])
def test_read_idx_rejects_corrupt_files(tmp_path, payload, match):
    path = _write(tmp_path / "bad.idx", payload)
    with pytest.raises(data.IdxFormatError, match=match):
        data.read_idx(path)
    gz = _write(tmp_path / "bad.idx.gz", payload, compress=True)
    with pytest.raises(data.IdxFormatError, match=match):
        data.read_idx(gz)


def test_read_idx_rejects_broken_gzip(tmp_path, rng):
    whole = gzip.compress(_idx_bytes(rng.integers(0, 9, 1000, dtype=np.uint8), 0x08))
    path = _write(tmp_path / "cut.gz", whole[: len(whole) // 2])
    with pytest.raises(data.IdxFormatError, match="cannot be decompressed"):
        data.read_idx(path)
    assert issubclass(data.IdxFormatError, ValueError)


# ----------------------------------------------------------------------------- idx:DIR

@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_directory(tmp_path, rng, compress):
    directory, arrays = _mnist_dir(tmp_path, rng, compress=compress)
    train, test, info = data.load(f"idx:{directory}", batch_size=64, seed=3,
                                  data_format="channels_last")
    assert (info.name, info.num_train, info.num_test, info.num_classes) == ("idx", 300, 100, 10)
    assert info.image_shape == (32, 32, 1) and not info.is_fallback
    assert info.display_name == f"IDX {directory.name}"
    batches = list(test)
    assert [len(y) for _, y in batches] == [64, 36]
    images = np.concatenate([x.numpy() for x, _ in batches])
    labels = np.concatenate([y.numpy() for _, y in batches])
    assert images.dtype == np.float32 and images.shape == (100, 32, 32, 1)
    # Centred zero padding 28 -> 32 and scaling to [0, 1]; test order is the file's order.
    np.testing.assert_array_equal(images[:, 2:30, 2:30, 0] * 255.0,
                                  arrays[("t10k", "images")].astype(np.float32))
    assert not images[:, :2].any() and not images[:, 30:].any()
    np.testing.assert_array_equal(labels, arrays[("t10k", "labels")])
    # The training pipeline holds every example exactly once per epoch, shuffled.
    train_labels = np.concatenate([y.numpy() for _, y in train])
    assert sorted(train_labels) == sorted(arrays[("train", "labels")])
    assert train.cardinality().numpy() == 5


def test_load_idx_directory_channels_first_limits_and_no_padding(tmp_path, rng):
    directory, _ = _mnist_dir(tmp_path, rng)
    train, test, info = data.load(f"idx:{directory}", batch_size=32, limit_train=50,
                                  limit_test=10, pad_to=None, data_format="channels_first")
    x, _ = next(iter(train))
    assert x.shape == (32, 1, 28, 28) and info.image_shape == (1, 28, 28)
    assert (info.num_train, info.num_test) == (50, 10)
    assert sum(len(y) for _, y in train) == 50


def test_load_idx_directory_errors(tmp_path, rng):
    with pytest.raises(data.DatasetUnavailableError, match="does not exist"):
        data.load(f"idx:{tmp_path / 'nowhere'}")
    with pytest.raises(ValueError, match="needs a directory"):
        data.load("idx:")
    directory, arrays = _mnist_dir(tmp_path, rng)
    os.remove(directory / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(data.DatasetUnavailableError, match=r"lacks t10k-labels-idx1-ubyte\[\.gz\]"):
        data.load(f"idx:{directory}")
    # Labels that do not match the images in number.
    _write(directory / "t10k-labels-idx1-ubyte", _idx_bytes(np.zeros(99, np.uint8), 0x08))
    with pytest.raises(data.IdxFormatError, match="test has 100 images but 99 labels"):
        data.load(f"idx:{directory}")
    # Images that are not [N, H, W] uint8.
    _write(directory / "t10k-labels-idx1-ubyte", _idx_bytes(np.zeros(100, np.uint8), 0x08))
    _write(directory / "train-images-idx3-ubyte",
           _idx_bytes(np.zeros((300, 28, 28), np.float32), 0x0D))
    with pytest.raises(data.IdxFormatError, match="expected uint8 images of rank 3"):
        data.load(f"idx:{directory}")


def test_unknown_name():
    with pytest.raises(ValueError, match="unknown data set 'cifar10'"):
        data.load("cifar10")


def test_check_name_needs_no_data(tmp_path, rng):
    for name in ("mnist", "auto", "fashion_mnist", "synthetic"):
        data.check_name(name)
    with pytest.raises(ValueError, match="unknown data set 'foo'"):
        data.check_name("foo")
    with pytest.raises(ValueError, match="needs a directory"):
        data.check_name("idx:")
    with pytest.raises(data.DatasetUnavailableError, match="does not exist"):
        data.check_name(f"idx:{tmp_path / 'missing'}")
    with pytest.raises(data.DatasetUnavailableError, match="lacks train-images"):
        data.check_name(f"idx:{tmp_path}")
    directory, _ = _mnist_dir(tmp_path, rng)
    data.check_name(f"idx:{directory}")


# ----------------------------------------------------------------------------- order

def _epoch_labels(dataset, epochs=2):
    return [np.concatenate([y.numpy() for _, y in dataset]) for _ in range(epochs)]


def test_same_seed_same_order_independent_of_global_seed(tmp_path, rng):
    import keras

    directory, _ = _mnist_dir(tmp_path, rng, n_train=500)
    keras.utils.set_random_seed(1)
    a = _epoch_labels(data.load(f"idx:{directory}", batch_size=50, seed=7)[0])
    keras.utils.set_random_seed(2)
    b = _epoch_labels(data.load(f"idx:{directory}", batch_size=50, seed=7)[0])
    c = _epoch_labels(data.load(f"idx:{directory}", batch_size=50, seed=8)[0])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])  # a new order every epoch
    assert not np.array_equal(a[0], c[0])  # another seed, another order


# ----------------------------------------------------------------------------- synthetic

def test_synthetic(capsys):
    with pytest.warns(UserWarning, match="SYNTHETIC data"):
        train, test, info = data.load("synthetic", batch_size=100, limit_train=1000,
                                      limit_test=200)
    assert (info.name, info.display_name, info.num_train, info.num_test) == (
        "synthetic", "Synthetic", 1000, 200)
    assert not info.is_fallback
    assert "SYNTHETIC" in capsys.readouterr().err  # always announced
    x, y = next(iter(test))
    assert x.shape == (100, 32, 32, 1) and 0 <= float(np.min(x)) and float(np.max(x)) <= 1
    a = data.synthetic_arrays()
    assert [v.shape for v in a] == [(60000, 28, 28), (60000,), (10000, 28, 28), (10000,)]
    assert set(np.unique(a[1])) == set(range(10))
    assert data.synthetic_arrays(num_train=10, num_test=5)[0].shape == (10, 28, 28)
    np.testing.assert_array_equal(data.synthetic_arrays(20, 5, data_seed=0)[0],
                                  data.synthetic_arrays(20, 5, data_seed=0)[0])
    with pytest.raises(ValueError, match="read-only"):
        a[0][0, 0, 0] = 1


def test_synthetic_classes_are_separable():
    """A nearest-class-mean classifier does well: the data set carries a learnable signal."""
    x_train, y_train, x_test, y_test = data.synthetic_arrays(num_train=2000, num_test=500)
    means = np.stack([x_train[y_train == c].mean(0) for c in range(10)]).reshape(10, -1)
    distances = ((x_test.reshape(len(x_test), 1, -1) - means[None]) ** 2).sum(-1)
    assert (distances.argmin(1) == y_test).mean() > 0.8


# ----------------------------------------------------------------------------- Fashion-MNIST

@have_fashion_mnist
def test_fashion_mnist_from_idx_directory(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("Fashion-MNIST from its directory must not touch the network")

    monkeypatch.setattr(data, "tfds_reachable", no_network)
    train, test, info = data.load("fashion_mnist", batch_size=128)
    assert (info.name, info.display_name, info.num_train, info.num_test, info.num_classes) == (
        "fashion_mnist", "Fashion-MNIST", 60000, 10000, 10)
    assert info.source == os.path.abspath(FASHION_MNIST) and not info.is_fallback
    x, y = next(iter(test))
    assert x.shape[1:] == (32, 32, 1) and y.dtype == "int32"
    assert train.cardinality().numpy() == 469


# ----------------------------------------------------------------------------- never wait offline

class _FakeTfds(types.ModuleType):
    """Stands in for tensorflow_datasets; records calls, serves tiny arrays."""

    def __init__(self, fail=False):
        super().__init__("tensorflow_datasets")
        self.calls, self.fail = [], fail

    def load(self, name, **kwargs):
        self.calls.append((name, kwargs))
        if self.fail:
            raise AssertionError("tfds.load must not be called here")
        rng = np.random.default_rng(0)
        make = lambda n: (rng.integers(0, 256, (n, 28, 28, 1), dtype=np.uint8),
                          rng.integers(0, 10, n))
        return [make(60), make(20)]

    def as_numpy(self, tree):
        return tree


@pytest.fixture
def fake_tfds(monkeypatch):
    def install(fail):
        fake = _FakeTfds(fail)
        monkeypatch.setitem(sys.modules, "tensorflow_datasets", fake)
        data._tfds_arrays.cache_clear()
        return fake
    yield install
    data._tfds_arrays.cache_clear()


@pytest.fixture
def empty_tfds_dir(tmp_path, monkeypatch):
    d = tmp_path / "tfds"
    d.mkdir()
    monkeypatch.setenv("TFDS_DATA_DIR", str(d))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TF_FFTCONV_OFFLINE", raising=False)
    monkeypatch.setenv("TF_FFTCONV_INPUT_ROOT", str(tmp_path / "no-attached-data"))
    return d


def test_offline_mnist_falls_back_at_once(fake_tfds, empty_tfds_dir, monkeypatch, tmp_path, rng,
                                          capsys):
    fake = fake_tfds(fail=True)
    probes = []
    monkeypatch.setattr(data, "tfds_reachable",
                        lambda timeout=None, **kw: probes.append(timeout) or False)
    fashion_dir = tmp_path / "fashion"
    fashion_dir.mkdir()
    _mnist_dir(fashion_dir, rng)
    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(fashion_dir))
    start = time.monotonic()
    with pytest.warns(UserWarning, match="using FASHION-MNIST"):
        train, test, info = data.load("mnist", batch_size=32)
    assert time.monotonic() - start < 10
    assert fake.calls == [] and probes == [data.PROBE_TIMEOUT_S]
    assert (info.name, info.requested, info.display_name) == ("fashion_mnist", "mnist",
                                                              "Fashion-MNIST")
    assert info.is_fallback and "cannot be reached" in info.fallback_reason
    assert "FASHION-MNIST" in capsys.readouterr().err


def test_offline_without_fashion_mnist_falls_back_to_synthetic(fake_tfds, empty_tfds_dir,
                                                               monkeypatch, tmp_path, capsys):
    fake_tfds(fail=True)
    monkeypatch.setattr(data, "tfds_reachable", lambda *a, **k: False)
    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    with pytest.warns(UserWarning, match="SYNTHETIC data instead"):
        _, _, info = data.load("mnist", limit_train=100, limit_test=10)
    assert info.name == "synthetic" and "Fashion-MNIST unavailable" in info.fallback_reason
    assert "dataset-fashion-mnist" in info.fallback_reason
    assert "install Debian's package dataset-fashion-mnist" in capsys.readouterr().err
    with pytest.raises(data.DatasetUnavailableError, match="'mnist' cannot be loaded here"):
        data.load("mnist", fallback=False)
    with pytest.raises(data.DatasetUnavailableError, match="'fashion_mnist' cannot be loaded"):
        data.load("fashion_mnist", fallback=False)


def test_offline_env_skips_the_probe(fake_tfds, empty_tfds_dir, monkeypatch, tmp_path):
    fake_tfds(fail=True)
    monkeypatch.setenv("TF_FFTCONV_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection",
                        lambda *a, **k: pytest.fail("probe ran although offline was forced"))
    assert data.tfds_reachable() is False
    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    with pytest.warns(UserWarning):
        _, _, info = data.load("mnist", limit_train=10, limit_test=10)
    assert "forbids downloading" in info.fallback_reason


def test_reachable_mnist_downloads_through_tfds(fake_tfds, empty_tfds_dir, monkeypatch):
    fake = fake_tfds(fail=False)
    monkeypatch.setattr(data, "tfds_reachable", lambda *a, **k: True)
    _, _, info = data.load("mnist", batch_size=16)
    assert (info.name, info.num_train, info.num_test) == ("mnist", 60, 20)
    assert fake.calls[0][0] == "mnist" and fake.calls[0][1]["download"] is True
    assert not info.is_fallback


def test_prepared_tfds_copy_is_used_without_probe(fake_tfds, empty_tfds_dir, monkeypatch):
    fake = fake_tfds(fail=False)
    (empty_tfds_dir / "mnist" / "3.0.1").mkdir(parents=True)
    (empty_tfds_dir / "mnist" / "3.0.1" / "dataset_info.json").write_text("{}")
    monkeypatch.setattr(data, "tfds_reachable",
                        lambda *a, **k: pytest.fail("a prepared copy needs no probe"))
    _, _, info = data.load("mnist")
    assert info.name == "mnist" and str(empty_tfds_dir) in info.source
    assert fake.calls[0][1]["download"] is False
    assert fake.calls[0][1]["data_dir"] == str(empty_tfds_dir)


def test_tfds_failure_is_a_fallback_not_a_crash(fake_tfds, empty_tfds_dir, monkeypatch,
                                                tmp_path):
    fake_tfds(fail=True)  # raises inside tfds.load
    monkeypatch.setattr(data, "tfds_reachable", lambda *a, **k: True)
    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    with pytest.warns(UserWarning):
        _, _, info = data.load("mnist", limit_train=10, limit_test=10)
    assert info.name == "synthetic" and "tensorflow-datasets failed" in info.fallback_reason


# ----------------------------------------------------------------------------- attached copies

def _write_csv(path, images, labels, label_first=True, with_labels=True):
    pixels = [f"pixel{i}" for i in range(784)]
    header = (["label"] if with_labels else []) + pixels if label_first else pixels + ["label"]
    rows = []
    for image, label in zip(images, labels):
        values = [str(v) for v in image.reshape(-1)]
        if with_labels:
            values = [str(label)] + values if label_first else values + [str(label)]
        rows.append(",".join(values))
    path.write_text(",".join(header) + "\n" + "\n".join(rows) + "\n")


@pytest.fixture
def probes(monkeypatch):
    """Offline: every network probe fails, and is recorded."""
    calls = []
    monkeypatch.setattr(data, "tfds_reachable", lambda *a, **k: calls.append(a) or False)
    return calls


@pytest.fixture
def attached(tmp_path, monkeypatch, fake_tfds, probes):
    """An empty input root in place of /kaggle/input, on an offline machine without other data."""
    root = tmp_path / "input"
    root.mkdir()
    monkeypatch.setenv("TF_FFTCONV_INPUT_ROOT", str(root))
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TF_FFTCONV_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    fake_tfds(fail=True)
    return root


def test_attached_idx_files_in_kaggle_layout(attached, probes, rng, capsys):
    """Dot-named files beside folders of the same names, as in Kaggle's MNIST data sets."""
    directory = attached / "mnist-dataset"
    directory.mkdir()
    arrays = {}
    for split, n in (("train", 70), ("t10k", 14)):
        arrays[split] = (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
                         rng.integers(0, 10, n, dtype=np.uint8))
        for kind, array in zip(("images", "labels"), arrays[split]):
            name = f"{split}-{kind}.idx{array.ndim}-ubyte"
            _write(directory / name, _idx_bytes(array, 0x08))
            (directory / f"{split}-{kind}-idx{array.ndim}-ubyte").mkdir()
    got = data.load_arrays("mnist")
    assert (got.name, got.source, got.fallback_reason) == ("mnist", str(directory), None)
    np.testing.assert_array_equal(got.x_train, arrays["train"][0])
    np.testing.assert_array_equal(got.y_test, arrays["t10k"][1])
    assert f"found MNIST attached under {attached}: {directory}" in capsys.readouterr().err
    assert probes == []  # found before any download was considered


def test_attached_gzipped_idx_files_in_a_subfolder(attached, probes, rng):
    deep = attached / "mnist" / "raw"
    deep.mkdir(parents=True)
    _, arrays = _mnist_dir(deep, rng, n_train=30, n_test=10, compress=True)
    got = data.load_arrays("auto")
    assert got.name == "mnist" and got.source == str(deep)
    np.testing.assert_array_equal(got.x_test, arrays[("t10k", "images")])
    assert probes == []  # found before any download was considered


def test_attached_digit_recognizer_csv_holds_out_a_test_split(attached, probes, rng, capsys):
    directory = attached / "digit-recognizer"
    directory.mkdir()
    images = rng.integers(0, 256, (70, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 70)
    _write_csv(directory / "train.csv", images, labels)
    _write_csv(directory / "test.csv", images[:5], labels[:5], with_labels=False)  # no labels
    (directory / "sample_submission.csv").write_text("ImageId,Label\n1,0\n")
    got = data.load_arrays("mnist")
    assert got.name == "mnist" and got.fallback_reason is None
    assert (len(got.x_train), len(got.x_test)) == (60, 10)  # the last seventh held out
    np.testing.assert_array_equal(got.x_train, images[:60])
    np.testing.assert_array_equal(got.y_test, labels[60:])
    assert "last 10 rows are the test split" in got.source
    assert "found MNIST attached" in capsys.readouterr().err
    assert probes == []
    _, test, info = data.pipelines(got, 4, data_format="channels_last")
    assert info.display_name == "MNIST" and info.num_test == 10
    assert next(iter(test))[0].shape == (4, 32, 32, 1)


def test_attached_csv_with_a_labelled_test_partner(attached, probes, rng):
    directory = attached / "mnist-in-csv"
    directory.mkdir()
    train = rng.integers(0, 256, (20, 28, 28), dtype=np.uint8), rng.integers(0, 10, 20)
    test = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8), rng.integers(0, 10, 6)
    _write_csv(directory / "mnist_train.csv", *train, label_first=False)
    _write_csv(directory / "mnist_test.csv", *test, label_first=False)
    got = data.load_arrays("mnist")
    assert (len(got.x_train), len(got.x_test)) == (20, 6)
    np.testing.assert_array_equal(got.x_test, test[0])
    np.testing.assert_array_equal(got.y_train, train[1])
    assert "mnist_test.csv" in got.source
    assert probes == []  # found before any download was considered


def test_attached_fashion_mnist_is_not_taken_for_mnist(attached, rng, capsys):
    fashion = attached / "fashionmnist"
    fashion.mkdir()
    _mnist_dir(fashion, rng, n_train=20, n_test=5)
    assert data.find_attached("mnist") is None
    assert data.find_attached("fashion_mnist") == ("idx", str(fashion))
    with pytest.warns(UserWarning, match="using FASHION-MNIST"):
        got = data.load_arrays("mnist")
    assert got.name == "fashion_mnist" and got.source == str(fashion)
    assert f"no copy attached under {attached}" in got.fallback_reason
    got = data.load_arrays("fashion_mnist")
    assert got.name == "fashion_mnist" and got.fallback_reason is None


def test_attached_search_is_bounded_in_depth(attached, rng):
    too_deep = attached.joinpath(*"abcdef")
    too_deep.mkdir(parents=True)
    _mnist_dir(too_deep, rng, n_train=20, n_test=5)
    assert data.find_attached("mnist") is None
    assert data.find_attached("mnist", root=attached / "a" / "b") == ("idx", str(too_deep))


def test_attached_csv_that_does_not_parse_is_a_fallback_not_a_crash(attached):
    directory = attached / "digits"
    directory.mkdir()
    header = ",".join(["label"] + [f"p{i}" for i in range(784)])
    (directory / "train.csv").write_text(header + "\n" + ",".join(["x"] * 785) + "\n")
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        got = data.load_arrays("mnist")
    assert got.name == "synthetic" and "cannot be read" in got.fallback_reason


# ----------------------------------------------------------------------------- the probe itself

def test_probe_on_loopback():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert data.tfds_reachable(timeout=2, host="127.0.0.1", port=port) is True
    # Nobody listens on that port any more: refused, at once (long before a timeout of a minute,
    # however loaded the machine).
    start = time.monotonic()
    assert data.tfds_reachable(timeout=60, host="127.0.0.1", port=port) is False
    assert time.monotonic() - start < 30


def test_probe_never_exceeds_its_timeout(monkeypatch):
    """The probe answers while the connection attempt still hangs: it waits for its timeout,
    not for the attempt."""
    release = threading.Event()

    def hang(*args, **kwargs):  # e.g. a resolver that hangs, until the test releases it
        release.wait(120)
        raise OSError("gave up")

    monkeypatch.delenv("TF_FFTCONV_OFFLINE", raising=False)
    monkeypatch.setattr(socket, "create_connection", hang)
    try:
        start = time.monotonic()
        assert data.tfds_reachable(timeout=0.5) is False
        elapsed = time.monotonic() - start
        assert 0.5 <= elapsed < 60, elapsed   # its timeout, not the attempt's two minutes
    finally:
        release.set()


def test_data_module_needs_no_op_library(tmp_path):
    """The data loader imports and loads data from a copy of the package without the op library."""
    import shutil
    import subprocess

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shutil.copytree(os.path.join(repo, "tf_fftconv"), tmp_path / "tf_fftconv",
                    ignore=shutil.ignore_patterns("*.so", "_build_info.json", "__pycache__"))
    code = ("import tf_fftconv.experiments.data as d\n"
            "d.load('synthetic', limit_train=10, limit_test=10)\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

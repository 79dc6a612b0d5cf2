"""Image classification data for the LeNet reproduction, as `tf.data` pipelines.

    train, test, info = tf_fftconv.experiments.data.load("mnist", batch_size=128, seed=0)

Names:
  "mnist"          MNIST from what is on the machine first: a prepared tensorflow-datasets copy,
                   then a copy attached under /kaggle/input (IDX files, gzipped or not, or Kaggle's
                   Digit Recognizer `train.csv`); else a tensorflow-datasets download, but only
                   after a quick reachability probe (a few seconds), because `tfds.load` retries
                   for minutes when it is offline. When MNIST cannot be had, the loader falls back
                   to Fashion-MNIST, then to synthetic data, and says so loudly (`fallback=False`
                   raises instead). "auto" is a synonym.
  "fashion_mnist"  Fashion-MNIST from IDX files (Debian's package dataset-fashion-mnist puts them
                   in /usr/share/datasets/fashion-mnist; $TF_FFTCONV_FASHION_MNIST_DIR overrides),
                   else a copy attached under /kaggle/input, else through tensorflow-datasets,
                   else synthetic data (announced).
  "idx:DIR"        any directory holding the four MNIST-format files
                   (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...).
  "synthetic"      a deterministic 10-class stand-in of MNIST's shape, generated here.

`info` (a `DatasetInfo`) says which data set was actually used and why, when it is not the
one asked for. Batches are `(images, labels)`: images float32 in [0, 1], zero-padded
(centred) to `pad_to` x `pad_to` (32, LeNet-5's input), one channel, laid out per
`data_format`; labels int32.

The training order is a function of `seed` and of how many times that pipeline has been
iterated (one permutation per epoch), and of nothing else: two pipelines made with the same
seed give the same batches epoch after epoch, whatever the global TensorFlow seed. That is
how two models are trained on the same data order.

This module needs TensorFlow and NumPy only (tensorflow-datasets when MNIST comes from it),
never the compiled op library.

Attached copies: the directory tree under the input root (/kaggle/input, where Kaggle mounts the
data sets attached to a notebook) is searched a few levels deep for the four IDX files or for a CSV
`*train.csv` with a `label` column and 784 pixel columns. A copy whose path says "fashion" is
Fashion-MNIST, any other MNIST. A CSV's test split is its `*test.csv` partner when that has labels;
Kaggle's Digit Recognizer `test.csv` has none, so the last seventh of `train.csv` (MNIST's own
60000:10000 proportion) is held out instead, and the source says so.

Environment:
  TF_FFTCONV_OFFLINE=1            skip the network probe: never download
  TF_FFTCONV_FASHION_MNIST_DIR    where the Fashion-MNIST IDX files are
  TF_FFTCONV_INPUT_ROOT           where attached data sets are searched (default /kaggle/input)
  TFDS_DATA_DIR                   tensorflow-datasets' own data directory (prepared copies)
"""

import collections
import dataclasses
import functools
import gzip
import itertools
import math
import os
import re
import socket
import struct
import sys
import threading
import warnings

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"  # the Debian package that installs it there
INPUT_ROOT = "/kaggle/input"
TFDS_HOST = "storage.googleapis.com"  # serves tensorflow-datasets' MNIST and prepared data
TFDS_PORT = 443
PROBE_TIMEOUT_S = 2.5
NAMES = ("mnist", "fashion_mnist", "synthetic", "idx:DIR")
DISPLAY_NAMES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "synthetic": "Synthetic"}

_OFFLINE_ENV = "TF_FFTCONV_OFFLINE"
_FASHION_DIR_ENV = "TF_FFTCONV_FASHION_MNIST_DIR"
_INPUT_ROOT_ENV = "TF_FFTCONV_INPUT_ROOT"
_SEARCH_DEPTH = 4  # levels below the input root: /kaggle/input/<data set>/<folder>/<folder>
_SEARCH_MAX_DIRS = 2000  # directories looked at, at most: a large attached collection is not walked
_SYNTHETIC_SOURCE = "generated (tf_fftconv.experiments.data.synthetic_arrays)"


class IdxFormatError(ValueError):
    """An IDX file whose header or size is not what the format says."""


class DatasetUnavailableError(RuntimeError):
    """The data set asked for cannot be had here (and falling back was not allowed)."""


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """What `load` actually delivered."""

    name: str  # "mnist" | "fashion_mnist" | "idx" | "synthetic"
    display_name: str  # for tables: "MNIST", "Fashion-MNIST", ...
    requested: str  # the name passed to `load`
    source: str  # where the arrays came from (tfds, a directory, generated)
    num_train: int  # examples in the training pipeline (after limit_train)
    num_test: int  # examples in the test pipeline (after limit_test)
    image_shape: tuple  # one example as yielded, e.g. (32, 32, 1)
    num_classes: int
    batch_size: int
    seed: int
    fallback_reason: str = None  # why this is not the data set requested, else None

    @property
    def is_fallback(self):
        return self.fallback_reason is not None

    def to_dict(self):
        d = dataclasses.asdict(self)
        d["image_shape"] = list(self.image_shape)
        return d


def _read_only(*arrays):
    """The arrays, made read-only: cached data sets are shared between callers."""
    for a in arrays:
        a.setflags(write=False)
    return tuple(arrays)


# ----------------------------------------------------------------------------- IDX files

# Type code (third magic byte) -> big-endian NumPy dtype.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_IDX_CODES = {np.dtype(v).newbyteorder("="): k for k, v in _IDX_DTYPES.items()}


def read_idx(path):
    """Reads one IDX file (the original MNIST format), gzipped or not, into a NumPy array.

    Layout: two zero bytes, a type code (0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int,
    0x0D float, 0x0E double), the number of dimensions, one big-endian uint32 per
    dimension, then the data, big-endian, row-major. Raises `IdxFormatError` on a bad
    magic number, a truncated header, or a data size that does not match the header.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":  # gzip magic, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise IdxFormatError(f"{path}: gzip data that cannot be decompressed ({e})") from e
    if len(raw) < 4:
        raise IdxFormatError(
            f"{path}: {len(raw)} bytes, too short for the 4-byte IDX magic number")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES or raw[3] == 0:
        raise IdxFormatError(
            f"{path}: bad magic number 0x{raw[:4].hex()}; an IDX file starts with two zero "
            "bytes, a type code (08 ubyte, 09 byte, 0b short, 0c int, 0d float, 0e double) "
            "and the number of dimensions (>= 1)")
    ndim = raw[3]
    header_bytes = 4 + 4 * ndim
    if len(raw) < header_bytes:
        raise IdxFormatError(
            f"{path}: truncated header: {ndim} dimensions need {header_bytes} header bytes, "
            f"the file has {len(raw)}")
    shape = struct.unpack(f">{ndim}I", raw[4:header_bytes])
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = math.prod(shape) * dtype.itemsize
    actual = len(raw) - header_bytes
    if actual != expected:
        raise IdxFormatError(
            f"{path}: header says shape {shape} of {dtype.newbyteorder('=').name}, i.e. "
            f"{expected} data bytes, but the file has {actual}")
    data = np.frombuffer(raw, dtype=dtype, offset=header_bytes).reshape(shape)
    return data.astype(dtype.newbyteorder("="), copy=False)


def write_idx(path, array, compress=None):
    """Writes `array` as an IDX file; gzipped when `compress` is true (default: path ends in .gz)."""
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in _IDX_CODES:
        raise ValueError(f"IDX cannot hold dtype {array.dtype}; use one of "
                         f"{sorted(d.name for d in _IDX_CODES)}")
    if array.ndim < 1 or array.ndim > 255:
        raise ValueError(f"IDX needs 1 to 255 dimensions, got {array.ndim}")
    code = _IDX_CODES[native]
    payload = (bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
               + np.ascontiguousarray(array, dtype=_IDX_DTYPES[code]).tobytes())
    if compress is None:
        compress = os.fspath(path).endswith(".gz")
    if compress:
        payload = gzip.compress(payload)
    with open(path, "wb") as f:
        f.write(payload)


_IDX_NAME = re.compile(
    r"^(?P<split>train|t10k|test)[-_.](?P<kind>images|labels)[-_.]idx[13][-_.]ubyte(?P<gz>\.gz)?$")


_IDX_KEYS = (("train", "images"), ("train", "labels"), ("test", "images"), ("test", "labels"))


def _idx_files_among(directory, names):
    """{(split, kind): path} of the MNIST-format files among the file `names` of `directory`."""
    found = {}
    for entry in sorted(names):
        m = _IDX_NAME.match(entry)
        if not m:
            continue
        key = ("train" if m["split"] == "train" else "test", m["kind"])
        # Prefer the uncompressed file when both are there (faster to read).
        if key not in found or not m["gz"]:
            found[key] = os.path.join(directory, entry)
    return found


def _find_idx_files(directory):
    """{(split, kind): path} for the four MNIST-format files in `directory`."""
    if not os.path.isdir(directory):
        raise DatasetUnavailableError(f"IDX directory {directory!r} does not exist")
    # Files only: some copies also hold folders named like the files (each with the file inside).
    found = _idx_files_among(directory, [e.name for e in os.scandir(directory) if e.is_file()])
    missing = [k for k in _IDX_KEYS if k not in found]
    if missing:
        want = ", ".join(f"{'train' if s == 'train' else 't10k'}-{k}-idx{3 if k == 'images' else 1}"
                         "-ubyte[.gz]" for s, k in missing)
        raise DatasetUnavailableError(
            f"IDX directory {directory!r} lacks {want}; it holds {sorted(os.listdir(directory))}")
    return found


def _idx_arrays(directory):
    """(x_train, y_train, x_test, y_test) from an MNIST-format directory, checked."""
    files = _find_idx_files(directory)
    # Cached by path, size and modification time: a rewritten file is read again.
    stamps = tuple((key, path, os.stat(path).st_size, os.stat(path).st_mtime_ns)
                   for key, path in sorted(files.items()))
    return _read_idx_set(directory, stamps)


@functools.lru_cache(maxsize=4)
def _read_idx_set(directory, stamps):
    files = {key: path for key, path, _, _ in stamps}
    arrays = []
    for split in ("train", "test"):
        images = read_idx(files[(split, "images")])
        labels = read_idx(files[(split, "labels")])
        if images.ndim != 3 or images.dtype != np.uint8:
            raise IdxFormatError(f"{files[(split, 'images')]}: expected uint8 images of rank 3 "
                                 f"[N, H, W], got {images.dtype} {images.shape}")
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise IdxFormatError(f"{files[(split, 'labels')]}: expected integer labels of rank 1, "
                                 f"got {labels.dtype} {labels.shape}")
        if len(images) != len(labels):
            raise IdxFormatError(f"{directory}: {split} has {len(images)} images but "
                                 f"{len(labels)} labels")
        if labels.size and labels.min() < 0:
            raise IdxFormatError(f"{files[(split, 'labels')]}: negative label {labels.min()}")
        arrays += [images, labels.astype(np.int32)]
    arrays = _read_only(*arrays)
    if arrays[0].shape[1:] != arrays[2].shape[1:]:
        raise IdxFormatError(f"{directory}: train images are {arrays[0].shape[1:]}, test images "
                             f"{arrays[2].shape[1:]}")
    return tuple(arrays)


# ----------------------------------------------------------------------------- CSV files

_CSV_TRAIN_NAME = re.compile(r"^(?P<stem>.*)train\.csv$", re.IGNORECASE)
_CSV_PIXELS = 28 * 28


def _csv_label_column(path):
    """Index of the `label` column when `path` is a label + 784 pixel CSV, else None."""
    try:
        with open(path) as f:
            header = [name.strip().strip('"').lower() for name in f.readline().split(",")]
    except (OSError, UnicodeDecodeError):
        return None
    if len(header) != _CSV_PIXELS + 1 or "label" not in header:
        return None
    return header.index("label")


def _read_csv(path, label_column):
    """(images uint8 [N, 28, 28], labels int32 [N]) from a label + 784 pixel CSV."""
    try:
        table = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    except ValueError as e:
        raise IdxFormatError(f"{path}: not a CSV of integers ({e})") from e
    if table.shape[1] != _CSV_PIXELS + 1:
        raise IdxFormatError(f"{path}: rows of {table.shape[1]} values, expected "
                             f"{_CSV_PIXELS + 1} (label + 28x28 pixels)")
    labels = table[:, label_column]
    pixels = np.delete(table, label_column, axis=1)
    if table.size and (pixels.min() < 0 or pixels.max() > 255 or labels.min() < 0):
        raise IdxFormatError(f"{path}: pixels must lie in [0, 255] and labels be >= 0")
    return pixels.astype(np.uint8).reshape(-1, 28, 28), labels.astype(np.int32)


def _csv_test_partner(train_csv):
    """The `*test.csv` next to a `*train.csv` when it has labels, else None."""
    directory, name = os.path.split(train_csv)
    stem = _CSV_TRAIN_NAME.match(name)["stem"]
    for entry in os.listdir(directory):
        if entry.lower() == f"{stem}test.csv".lower():
            path = os.path.join(directory, entry)
            if _csv_label_column(path) is not None:
                return path
    return None


def _csv_arrays(train_csv):
    """(arrays, source) from a label + pixel CSV and its test partner or held-out rows."""
    test_csv = _csv_test_partner(train_csv)
    stamps = tuple((path, os.stat(path).st_size, os.stat(path).st_mtime_ns)
                   for path in (train_csv, test_csv) if path)
    return _read_csv_set(stamps)


@functools.lru_cache(maxsize=4)
def _read_csv_set(stamps):
    train_csv = stamps[0][0]
    x, y = _read_csv(train_csv, _csv_label_column(train_csv))
    if len(stamps) == 2:
        test_csv = stamps[1][0]
        x_test, y_test = _read_csv(test_csv, _csv_label_column(test_csv))
        return _read_only(x, y, x_test, y_test), f"{train_csv} and {test_csv}"
    held_out = max(1, len(x) // 7)
    if len(x) < 2:
        raise IdxFormatError(f"{train_csv}: {len(x)} rows, too few to hold out a test split")
    arrays = _read_only(x[:-held_out].copy(), y[:-held_out].copy(), x[-held_out:].copy(),
                        y[-held_out:].copy())
    return arrays, (f"{train_csv} (no labelled test CSV beside it: its last {held_out} rows are "
                    f"the test split)")


# ----------------------------------------------------------------------------- attached copies

def input_root(root=None):
    """Where attached data sets are searched: `root`, else $TF_FFTCONV_INPUT_ROOT, else INPUT_ROOT."""
    return root or os.environ.get(_INPUT_ROOT_ENV) or INPUT_ROOT


def find_attached(name, root=None):
    """The first copy of `name` ("mnist" or "fashion_mnist") under the input root, else None.

    Returns ("idx", directory) or ("csv", train_csv). A copy whose path contains "fashion" is
    Fashion-MNIST, any other MNIST. The walk is bounded in depth and directories (a data set of
    image files is not read through) and lists names only, so it takes no time worth waiting for.
    """
    root = os.path.abspath(input_root(root))
    if not os.path.isdir(root):
        return None
    for visited, (directory, folders, files) in enumerate(os.walk(root)):
        if visited >= _SEARCH_MAX_DIRS:
            break
        folders.sort()
        if directory[len(root):].count(os.sep) >= _SEARCH_DEPTH:
            folders.clear()
        is_fashion = "fashion" in directory[len(root):].lower()
        if is_fashion != (name == "fashion_mnist"):
            continue
        if all(key in _idx_files_among(directory, files) for key in _IDX_KEYS):
            return "idx", directory
        for entry in sorted(files):
            if _CSV_TRAIN_NAME.match(entry):
                path = os.path.join(directory, entry)
                if _csv_label_column(path) is not None:
                    return "csv", path
    return None


def _from_attached(name, root):
    """(arrays, source) from a copy attached under the input root, or (None, what was searched)."""
    where = input_root(root)
    found = find_attached(name, root)
    if found is None:
        if os.path.isdir(where):
            return None, f"no copy attached under {where}"
        return None, None  # not a machine with attached data sets: nothing to report
    kind, path = found
    try:
        if kind == "idx":
            arrays, source = _idx_arrays(path), path
        else:
            arrays, source = _csv_arrays(path)
    except (DatasetUnavailableError, IdxFormatError, OSError) as e:
        return None, f"the copy attached at {path} cannot be read ({e})"
    _say(f"found {DISPLAY_NAMES[name]} attached under {where}: {source}")
    return arrays, source


# ----------------------------------------------------------------------------- tensorflow-datasets

def _offline_forced():
    return os.environ.get(_OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def tfds_reachable(timeout=PROBE_TIMEOUT_S, host=TFDS_HOST, port=TFDS_PORT):
    """True when a TCP connection to tensorflow-datasets' storage host opens within `timeout` s.

    Name resolution and connect run in a daemon thread, so the answer never takes longer than
    `timeout` even when the resolver hangs. $TF_FFTCONV_OFFLINE=1 answers False at once.
    """
    if _offline_forced():
        return False
    outcome = []

    def attempt():
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(True)
        except OSError:
            outcome.append(False)

    thread = threading.Thread(target=attempt, name="tfds-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(outcome and outcome[0])


def _tfds_data_dirs(data_dir):
    dirs = [data_dir, os.environ.get("TFDS_DATA_DIR"),
            os.path.join(os.path.expanduser("~"), "tensorflow_datasets")]
    return [d for d in dict.fromkeys(dirs) if d]


def _tfds_prepared_dir(name, data_dir=None):
    """The first data directory holding a prepared copy of tfds data set `name`, else None."""
    for d in _tfds_data_dirs(data_dir):
        root = os.path.join(d, name)
        if not os.path.isdir(root):
            continue
        for version in sorted(os.listdir(root), reverse=True):
            if os.path.isfile(os.path.join(root, version, "dataset_info.json")):
                return d
    return None


@functools.lru_cache(maxsize=4)
def _tfds_arrays(name, data_dir, download):
    import tensorflow_datasets as tfds  # imported only when tfds is used

    (x_train, y_train), (x_test, y_test) = tfds.as_numpy(tfds.load(
        name, split=["train", "test"], batch_size=-1, as_supervised=True, data_dir=data_dir,
        download=download))
    squeeze = lambda x: x[..., 0] if x.ndim == 4 and x.shape[-1] == 1 else x
    return _read_only(squeeze(x_train).astype(np.uint8), y_train.astype(np.int32),
                      squeeze(x_test).astype(np.uint8), y_test.astype(np.int32))


def _from_tfds(name, data_dir, probe_timeout, download=True):
    """(arrays, source) from tensorflow-datasets, or (None, reason) without waiting on the net.

    A prepared copy is used as it is; without one, `download` allows a download after the probe.
    """
    prepared = _tfds_prepared_dir(name, data_dir)
    try:
        if prepared is not None:
            return _tfds_arrays(name, prepared, False), f"tensorflow-datasets ({prepared})"
        if not download:
            return None, f"{name} is not prepared locally"
        if _offline_forced():
            return None, f"{name} is not prepared locally and ${_OFFLINE_ENV} forbids downloading"
        if not tfds_reachable(probe_timeout):
            return None, (f"{name} is not prepared locally and {TFDS_HOST} cannot be reached "
                          f"within {probe_timeout:g} s")
        return _tfds_arrays(name, data_dir, True), "tensorflow-datasets (downloaded)"
    except ImportError as e:
        return None, f"tensorflow-datasets cannot be imported ({e})"
    except Exception as e:  # tfds raises many kinds of errors on download/prepare failures
        return None, f"tensorflow-datasets failed to load {name} ({type(e).__name__}: {e})"


# ----------------------------------------------------------------------------- synthetic data

@functools.lru_cache(maxsize=4)
def synthetic_arrays(num_train=60000, num_test=10000, image_size=28, num_classes=10, data_seed=0):
    """A deterministic, learnable 10-class stand-in shaped like MNIST (uint8 images).

    Each class is a fixed pattern of a few Gaussian blobs; an example is its class pattern
    shifted by up to 2 pixels, scaled in brightness and covered in noise. The data depend
    on `data_seed` only (the training order is chosen by `load`'s `seed`).
    """
    rng = np.random.default_rng(data_seed)
    yy, xx = np.mgrid[0:image_size + 4, 0:image_size + 4].astype(np.float32)
    templates = np.zeros((num_classes, image_size + 4, image_size + 4), np.float32)
    for c in range(num_classes):
        for _ in range(4):
            cy, cx = rng.uniform(6, image_size - 2, size=2)
            sigma = rng.uniform(1.5, 3.5)
            templates[c] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * sigma ** 2))
    templates = 255 * templates / templates.max(axis=(1, 2), keepdims=True)
    # Every shifted copy of every template: [class, dy, dx, H, W].
    shifted = np.stack([np.stack([templates[:, dy:dy + image_size, dx:dx + image_size]
                                  for dx in range(5)], 1) for dy in range(5)], 1)

    def make(n, stream):
        r = np.random.default_rng([data_seed, stream])
        labels = r.integers(0, num_classes, n).astype(np.int32)
        images = np.empty((n, image_size, image_size), np.uint8)
        for start in range(0, n, 8192):  # chunks bound the float32 temporaries
            stop = min(n, start + 8192)
            m = stop - start
            dy, dx = r.integers(0, 5, (2, m))
            x = shifted[labels[start:stop], dy, dx] * r.uniform(0.6, 1.2, (m, 1, 1))
            x += r.normal(0, 48, (m, image_size, image_size))
            images[start:stop] = np.clip(x, 0, 255).astype(np.uint8)
        return images, labels

    return _read_only(*make(num_train, 1), *make(num_test, 2))


# ----------------------------------------------------------------------------- pipelines

# Starts every announcement, so that a caller that shows the banner can silence the warning's echo.
ANNOUNCE_PREFIX = "tf_fftconv.experiments.data:"


def _say(message):
    """Says what the loader found, on stderr (a plain line: nothing is wrong)."""
    print(f"{ANNOUNCE_PREFIX} {message}", file=sys.stderr, flush=True)


def _announce(message):
    """Says something the user must not miss: a banner on stderr and a Python warning."""
    message = f"{ANNOUNCE_PREFIX} {message}"
    bar = "!" * 78
    print(f"\n{bar}\n{message}\n{bar}\n", file=sys.stderr, flush=True)
    warnings.warn(message, stacklevel=3)


def make_pipeline(images, labels, batch_size=128, *, shuffle=False, seed=0, pad_to=32,
                  data_format=None):
    """A batched `tf.data.Dataset` over uint8 `images` [N, H, W] and integer `labels` [N].

    With `shuffle`, each iteration (each epoch) visits the examples in the permutation drawn
    from NumPy's generator seeded with (seed, epoch index of this pipeline): reproducible, and
    the same for every pipeline made with the same seed.
    """
    import tensorflow as tf

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    images = np.asarray(images)
    labels = np.asarray(labels).astype(np.int32)
    if images.ndim != 3:
        raise ValueError(f"images must be [N, H, W], got shape {images.shape}")
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    n, height, width = images.shape
    pad_h = max(0, (pad_to or 0) - height)
    pad_w = max(0, (pad_to or 0) - width)
    channels_first = _channels_first(data_format)
    images_t = tf.constant(images)
    labels_t = tf.constant(labels)

    def prepare(index):  # index: [batch] int64 positions in the arrays
        x = tf.cast(tf.gather(images_t, index), tf.float32) / 255.0
        x = tf.pad(x, [[0, 0], [pad_h // 2, pad_h - pad_h // 2], [pad_w // 2, pad_w - pad_w // 2]])
        x = x[:, tf.newaxis] if channels_first else x[..., tf.newaxis]
        return x, tf.gather(labels_t, index)

    if shuffle:
        epochs = itertools.count()  # one draw per iteration of this pipeline

        def permutations():
            yield np.random.default_rng([seed, next(epochs)]).permutation(n)

        index = tf.data.Dataset.from_generator(
            permutations, output_signature=tf.TensorSpec([n], tf.int64)
        ).flat_map(lambda p: tf.data.Dataset.from_tensor_slices(p).batch(batch_size))
        index = index.apply(tf.data.experimental.assert_cardinality(math.ceil(n / batch_size)))
    else:
        index = tf.data.Dataset.range(n).batch(batch_size)
    return index.map(prepare, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True).prefetch(tf.data.AUTOTUNE)


def _channels_first(data_format):
    if data_format is None:
        import keras
        data_format = keras.config.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}")
    return data_format == "channels_first"


def _fashion_mnist_dir():
    return os.environ.get(_FASHION_DIR_ENV) or FASHION_MNIST_DIR


class Arrays(collections.namedtuple(
        "Arrays", "x_train y_train x_test y_test name source fallback_reason")):
    """A data set in memory: uint8 images [N, H, W], int32 labels [N], and where it came from.

    `name` is the data set actually delivered ("mnist", "fashion_mnist", "idx", "synthetic");
    `fallback_reason` says why it is not the one asked for (None when it is).
    """


def check_name(name):
    """Raises ValueError for a name `load` does not know, DatasetUnavailableError for an `idx:DIR`
    whose directory or files are missing: what can be said before anything is read."""
    if name.startswith("idx:"):
        if not name[4:]:
            raise ValueError("'idx:DIR' needs a directory, e.g. 'idx:/data/mnist'")
        _find_idx_files(os.path.abspath(name[4:]))
    elif name not in ("mnist", "auto", "fashion_mnist", "synthetic"):
        raise ValueError(f"unknown data set {name!r}; expected one of "
                         f"{', '.join(NAMES)} or 'auto'")


def _fashion_mnist(data_dir, probe_timeout, root):
    """(arrays, source) of Fashion-MNIST, or (None, why not): IDX files, attached copy, tfds."""
    fashion_dir = os.path.abspath(_fashion_mnist_dir())
    try:
        return _idx_arrays(fashion_dir), fashion_dir
    except (DatasetUnavailableError, IdxFormatError, OSError) as e:
        reasons = [f"no usable IDX files ({e}; Debian's package {FASHION_MNIST_PACKAGE} "
                   f"installs them in {FASHION_MNIST_DIR})"]
    arrays, source = _from_attached("fashion_mnist", root)
    if arrays is not None:
        return arrays, source
    reasons += [source] if source else []
    arrays, source = _from_tfds("fashion_mnist", data_dir, probe_timeout)
    if arrays is not None:
        return arrays, source
    return None, "; ".join(reasons + [source])


def _mnist(data_dir, probe_timeout, root):
    """(arrays, source) of MNIST, or (None, why not): local copies first, then a download."""
    arrays, source = _from_tfds("mnist", data_dir, probe_timeout, download=False)
    if arrays is not None:
        return arrays, source
    arrays, attached = _from_attached("mnist", root)
    if arrays is not None:
        return arrays, attached
    arrays, source = _from_tfds("mnist", data_dir, probe_timeout)
    if arrays is not None:
        return arrays, source
    return None, "; ".join([source] + ([attached] if attached else []))


def load_arrays(name="mnist", *, data_dir=None, fallback=True, probe_timeout=PROBE_TIMEOUT_S,
                input_root=None):
    """The data set `name` as `Arrays`, following the order given in the module docstring.

    Never waits on an unreachable network for longer than `probe_timeout` seconds. `input_root`
    is where attached copies are searched (default $TF_FFTCONV_INPUT_ROOT, else /kaggle/input).
    Substitutions and synthetic data are announced on stderr and as warnings.
    """
    check_name(name)
    requested = name
    if name == "auto":
        name = "mnist"
    if name.startswith("idx:"):
        directory = os.path.abspath(name[4:])
        return Arrays(*_idx_arrays(directory), "idx", directory, None)
    if name == "synthetic":
        _announce("using SYNTHETIC data (generated class patterns), as asked. "
                  "Accuracies are not MNIST accuracies.")
        return Arrays(*synthetic_arrays(), "synthetic", _SYNTHETIC_SOURCE, None)

    def unavailable(reason):
        return DatasetUnavailableError(
            f"{requested!r} cannot be loaded here: {reason}. Use a prepared tensorflow-datasets "
            f"directory ($TFDS_DATA_DIR or data_dir), 'idx:DIR', 'fashion_mnist' or "
            f"'synthetic', or allow falling back.")

    reasons = []
    if name == "mnist":
        arrays, source = _mnist(data_dir, probe_timeout, input_root)
        if arrays is not None:
            return Arrays(*arrays, "mnist", source, None)
        reasons.append(f"MNIST unavailable: {source}")
        if not fallback:
            raise unavailable(reasons[0])
    arrays, source = _fashion_mnist(data_dir, probe_timeout, input_root)
    if name == "fashion_mnist" and arrays is not None:
        return Arrays(*arrays, "fashion_mnist", source, None)
    if arrays is None:
        reasons.append(f"Fashion-MNIST unavailable: {source}")
    reason = "; ".join(reasons)
    if not fallback:
        raise unavailable(reason)
    if arrays is not None:
        _announce(f"asked for {requested!r}, using FASHION-MNIST from {source} "
                  f"instead. {reason}.")
        return Arrays(*arrays, "fashion_mnist", source, reason)
    _announce(f"asked for {requested!r}, using SYNTHETIC data instead (last resort). {reason}. "
              f"Accuracies are not MNIST accuracies. For real data offline, install Debian's "
              f"package {FASHION_MNIST_PACKAGE} (`make setup` does where apt is usable) or pass "
              f"'idx:DIR'.")
    return Arrays(*synthetic_arrays(), "synthetic", _SYNTHETIC_SOURCE, reason)


def pipelines(arrays, batch_size=128, *, seed=0, limit_train=None, limit_test=None, pad_to=32,
              data_format=None, shuffle=True, requested=None):
    """`(train, test, info)` from `Arrays`; see `load` for the arguments.

    Calling it twice with the same arguments gives two pipelines with the same batches in
    the same order (used to train two models on the same data order).
    """
    for limit, what in ((limit_train, "limit_train"), (limit_test, "limit_test")):
        if limit is not None and limit < 1:
            raise ValueError(f"{what} must be >= 1, got {limit}")
    x_train, y_train = arrays.x_train[:limit_train], arrays.y_train[:limit_train]
    x_test, y_test = arrays.x_test[:limit_test], arrays.y_test[:limit_test]
    train = make_pipeline(x_train, y_train, batch_size, shuffle=shuffle, seed=seed,
                          pad_to=pad_to, data_format=data_format)
    test = make_pipeline(x_test, y_test, batch_size, shuffle=False, pad_to=pad_to,
                         data_format=data_format)
    height = max(x_train.shape[1], pad_to or 0)
    width = max(x_train.shape[2], pad_to or 0)
    shape = (1, height, width) if _channels_first(data_format) else (height, width, 1)
    if arrays.name == "idx":
        display = f"IDX {os.path.basename(arrays.source.rstrip(os.sep)) or arrays.source}"
    else:
        display = DISPLAY_NAMES[arrays.name]
    labels_max = max(arrays.y_train.max(initial=0), arrays.y_test.max(initial=0))
    num_classes = int(labels_max) + 1 if arrays.name == "idx" else 10
    info = DatasetInfo(name=arrays.name, display_name=display,
                       requested=requested or arrays.name, source=arrays.source,
                       num_train=len(x_train), num_test=len(x_test), image_shape=shape,
                       num_classes=num_classes, batch_size=batch_size, seed=seed,
                       fallback_reason=arrays.fallback_reason)
    return train, test, info


def load(name="mnist", batch_size=128, *, seed=0, limit_train=None, limit_test=None, pad_to=32,
         data_format=None, shuffle=True, data_dir=None, fallback=True,
         probe_timeout=PROBE_TIMEOUT_S, input_root=None):
    """Returns `(train, test, info)`: batched `tf.data` pipelines and a `DatasetInfo`.

    Args:
      name: "mnist" (or "auto"), "fashion_mnist", "idx:DIR" or "synthetic"; see the module doc.
      batch_size: examples per batch (the last batch of an epoch may be smaller).
      seed: chooses the training order (one permutation per epoch, see `make_pipeline`).
      limit_train, limit_test: keep only the first N examples of each split.
      pad_to: zero-pad images (centred) to at least pad_to x pad_to; None keeps their size.
      data_format: "channels_last" ([B, H, W, 1]) or "channels_first" ([B, 1, H, W]);
        default keras.config.image_data_format().
      shuffle: shuffle the training pipeline (the test pipeline is never shuffled).
      data_dir: tensorflow-datasets data directory (default: $TFDS_DATA_DIR, ~/tensorflow_datasets).
      fallback: fall back to another data set (announced) when `name` cannot be had;
        False raises DatasetUnavailableError instead.
      probe_timeout: seconds allowed for the network probe before a tfds download.
      input_root: where attached copies are searched (default $TF_FFTCONV_INPUT_ROOT, else
        /kaggle/input).
    """
    arrays = load_arrays(name, data_dir=data_dir, fallback=fallback, probe_timeout=probe_timeout,
                         input_root=input_root)
    return pipelines(arrays, batch_size, seed=seed, limit_train=limit_train,
                     limit_test=limit_test, pad_to=pad_to, data_format=data_format,
                     shuffle=shuffle, requested=name)

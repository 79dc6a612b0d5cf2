"""Finds and loads the op library built by the Makefile (``tf_fftconv/_fftconv_ops.so``)."""

import json
import os
import threading

import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY = os.path.join(_HERE, "_fftconv_ops.so")
_BUILD_INFO = os.path.join(_HERE, "_build_info.json")

_lock = threading.Lock()
_module = None


def library_path():
    """Path of the op library, for ``tf.load_op_library(tf_fftconv.library_path())``."""
    return _LIBRARY


def build_info():
    """What the library was built with: TensorFlow version, CUDA or not, GPU architectures."""
    try:
        with open(_BUILD_INFO) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _check_library():
    if not os.path.exists(_LIBRARY):
        raise ImportError(
            "tf_fftconv: the op library is not built (%s is missing). Build it with `make build` "
            "in the source tree, or `pip install .`." % _LIBRARY)
    built_with = build_info().get("tensorflow_version")
    if built_with and built_with != tf.__version__:
        raise ImportError(
            "tf_fftconv: the op library was built against TensorFlow %s but TensorFlow %s is "
            "imported; rebuild it (`make clean build`, or reinstall the package) against the "
            "TensorFlow you use." % (built_with, tf.__version__))


def _other_copies_loaded():
    """Paths of op libraries of this name that the process has mapped from elsewhere (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            # address perms offset device inode [path]
            paths = {fields[5].strip() for fields in (line.split(None, 5) for line in maps)
                     if len(fields) == 6}
    except OSError:
        return []
    ours = os.path.realpath(_LIBRARY)
    name = os.path.basename(_LIBRARY)
    return sorted(p for p in paths
                  if os.path.basename(p) == name and os.path.realpath(p) != ours)


def load_library():
    """Loads the op library once and returns its generated op module."""
    global _module
    with _lock:
        if _module is None:
            _check_library()
            # A process can hold one copy of the kernels: a second copy registers none of its own
            # (its ops would silently run the first copy's), so say so instead of loading it.
            others = _other_copies_loaded()
            if others:
                raise ImportError(
                    "tf_fftconv: another copy of the op library is already loaded in this process "
                    "(%s); this package's copy is %s. Load only one of them per process (import "
                    "tf_fftconv, or tf.load_op_library(tf_fftconv.library_path()))."
                    % (others[0], _LIBRARY))
            try:
                _module = tf.load_op_library(_LIBRARY)
            except tf.errors.NotFoundError as e:
                raise ImportError(
                    "tf_fftconv: loading %s failed (%s). This usually means it was built "
                    "against another TensorFlow: rebuild it with `make clean build`."
                    % (_LIBRARY, e.message)) from e
        return _module

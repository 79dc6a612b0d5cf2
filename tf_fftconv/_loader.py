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


def load_library():
    """Loads the op library once and returns its generated op module."""
    global _module
    with _lock:
        if _module is None:
            _check_library()
            try:
                _module = tf.load_op_library(_LIBRARY)
            except tf.errors.NotFoundError as e:
                raise ImportError(
                    "tf_fftconv: loading %s failed (%s). This usually means it was built "
                    "against another TensorFlow: rebuild it with `make clean build`."
                    % (_LIBRARY, e.message)) from e
        return _module

"""Finds and loads the op library built by the Makefile (``tf_fftconv/_fftconv_ops.so``)."""

import functools
import inspect
import json
import os
import threading

import numpy as np
import tensorflow as tf

from tf_fftconv.errors import invalid_argument

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


INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def _checked_op(function):
    """``function``, an op of the generated module, refusing integers outside int64.

    TensorFlow converts an integer argument of an op to int64 (an ``int`` attribute such as
    ``offset_h``, or a size input ``fft_size``, ``out_h``, ``out_w``) without checking it; past
    int64 it leaves a Python error pending that stops the process at its next call. Every
    integer the kernels could not receive as given is refused here instead, naming it.
    """
    signature = inspect.signature(function)

    def past_int64(value):
        return (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
                and not INT64_MIN <= int(value) <= INT64_MAX)

    @functools.wraps(function)
    def op(*args, **kwargs):
        # The arguments are looked at first and named only when one is refused: this runs on
        # every eager call.
        if any(map(past_int64, args)) or any(map(past_int64, kwargs.values())):
            for name, value in signature.bind(*args, **kwargs).arguments.items():
                if past_int64(value):
                    raise invalid_argument("%s = %d does not fit in int64" % (name, value))
        return function(*args, **kwargs)
    # Nothing in it for AutoGraph to convert, and the generated function it wraps has no source:
    # converting it inside a tf.function only logged a warning per op.
    return tf.autograph.experimental.do_not_convert(op)


class _Ops:
    """The generated op module with every op function checked by ``_checked_op``; its other
    attributes are the module's own."""

    def __init__(self, module):
        self._module = module
        for name, value in vars(module).items():
            if name.startswith("fftconv_") and callable(value):
                setattr(self, name, _checked_op(value))

    def __getattr__(self, name):
        return getattr(self._module, name)


def load_library():
    """Loads the op library once and returns its generated op module, each op behind
    ``_checked_op``."""
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
                _module = _Ops(tf.load_op_library(_LIBRARY))
            except tf.errors.NotFoundError as e:
                raise ImportError(
                    "tf_fftconv: loading %s failed (%s). This usually means it was built "
                    "against another TensorFlow: rebuild it with `make clean build`."
                    % (_LIBRARY, e.message)) from e
        return _module

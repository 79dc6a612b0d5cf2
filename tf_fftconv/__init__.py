"""tf_fftconv: fast FFT convolution for TensorFlow (Mathieu, Henaff & LeCun 2013; fbfft).

``fft_conv2d`` is ``tf.nn.conv2d`` (strides, dilations and groups included) computed with three
custom ops (``tf_fftconv.ops``), or by ``tf.nn.conv2d`` where a cost model or a timing
(``autotune``) says that is faster; ``fft_depthwise_conv2d`` is ``tf.nn.depthwise_conv2d`` so;
``explain`` says which, and why. ``FFTConv2D`` and ``FFTDepthwiseConv2D`` are the Keras layers;
``to_fft`` and ``to_keras`` move a Keras model's convolutions onto those layers and back;
``reference.signal_fft_conv2d`` is the same convolution written with ``tf.signal``. ``tf.load_op_library(tf_fftconv.library_path())``
gives the raw ops to scripts.

The experiment tools around the library live in ``tf_fftconv.experiments`` (LeNet-5 models, data
loading, the reproduction and the benchmark) and are not imported here; ``tf_fftconv.models`` and
``tf_fftconv.data`` name two of them and import them on first use.
"""

import importlib as _importlib
import os as _os

from tf_fftconv._loader import build_info, library_path, load_library
from tf_fftconv import ops
from tf_fftconv.tuning import autotune
from tf_fftconv.conv import fft_conv2d, fft_depthwise_conv2d
from tf_fftconv.geometry import conv_geometry
from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D
from tf_fftconv.explanation import explain
from tf_fftconv.convert import to_fft, to_keras

__version__ = "0.1.0"

__all__ = ["FFTConv2D", "FFTDepthwiseConv2D", "autotune", "build_info", "conv_geometry", "data", "explain", "fft_conv2d",
           "fft_depthwise_conv2d", "library_path", "load_library", "models", "ops", "to_fft", "to_keras"]

# Public names served by the experiment tools, imported when first asked for so that a plain
# `import tf_fftconv` stays the library alone.
_LAZY_MODULES = {"data": "tf_fftconv.experiments.data",
                 "models": "tf_fftconv.experiments.models"}


def __getattr__(name):
    if name in _LAZY_MODULES:
        module = _importlib.import_module(_LAZY_MODULES[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES))


# Register the ops at import when the library is there, so that loading a SavedModel that uses them
# works after a plain `import tf_fftconv`. A missing or mismatched library is reported by the first
# op call instead (with how to rebuild), so the pure-Python parts stay importable.
if _os.path.exists(library_path()):
    try:
        load_library()
    except ImportError:
        pass

"""tf_fftconv: fast FFT convolution for TensorFlow (Mathieu, Henaff & LeCun 2013; fbfft).

``fft_conv2d`` is a stride-1 ``tf.nn.conv2d`` computed with three custom ops (``tf_fftconv.ops``);
``FFTConv2D`` is the Keras layer; ``models.lenet5`` is Mathieu's LeNet-5; ``data`` loads MNIST-style
data sets. ``tf.load_op_library(tf_fftconv.library_path())`` gives the raw ops to scripts.
"""

import os as _os

from tf_fftconv._loader import build_info, library_path, load_library
from tf_fftconv import ops
from tf_fftconv.conv import conv_geometry, fft_conv2d
from tf_fftconv.layers import FFTConv2D
from tf_fftconv import data, models

__version__ = "0.1.0"

__all__ = ["FFTConv2D", "build_info", "conv_geometry", "data", "fft_conv2d", "library_path",
           "load_library", "models", "ops"]

# Register the ops at import when the library is there, so that loading a SavedModel that uses them
# works after a plain `import tf_fftconv`. A missing or mismatched library is reported by the first
# op call instead (with how to rebuild), so the pure-Python parts stay importable.
if _os.path.exists(library_path()):
    try:
        load_library()
    except ImportError:
        pass

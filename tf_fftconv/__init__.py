"""tf_fftconv: fast FFT convolution for TensorFlow (Mathieu, Henaff & LeCun 2013; fbfft).

``fft_conv2d`` is a stride-1 ``tf.nn.conv2d`` computed with three custom ops (``tf_fftconv.ops``);
``FFTConv2D`` is the Keras layer. ``tf.load_op_library(tf_fftconv.library_path())`` gives the raw
ops to scripts.
"""

from tf_fftconv._loader import build_info, library_path, load_library
from tf_fftconv import ops
from tf_fftconv.conv import conv_geometry, fft_conv2d

__version__ = "0.1.0"

__all__ = ["build_info", "conv_geometry", "fft_conv2d", "library_path", "load_library", "ops"]

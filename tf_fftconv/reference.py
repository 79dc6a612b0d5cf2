"""FFT convolution written with `tf.signal`: the oracle's second opinion and the benchmark peer.

`signal_fft_conv2d` is the FFT convolution one writes by hand in plain TensorFlow: zero-pad into an
`S x S` frame with `tf.pad`, `tf.signal.rfft2d`, one complex matmul per frequency bin,
`tf.signal.irfft2d`, crop. It has the contract of `tf.nn.conv2d` with stride 1 and dilation 1
(cross-correlation, weights `[kh, kw, Cin, Cout]`) and is differentiable through TensorFlow's own
gradients of these ops.

It is not the product path (that is `tf_fftconv.fft_conv2d`, built on the custom ops); it exists to
check that path with an independent implementation and to measure it against what library FFTs give.
"""

import tensorflow as tf

from tf_fftconv.geometry import conv_geometry

__all__ = ["signal_fft_conv2d"]

_PADDINGS = ("VALID", "SAME")
_DATA_FORMATS = ("NHWC", "NCHW")
_DTYPES = (tf.float32, tf.float64)


def _static_dim(tensor, axis, what):
    dim = tensor.shape[axis]
    if dim is None:
        raise ValueError(f"{what} must have a static size, got shape {tensor.shape}")
    return int(dim)


def signal_fft_conv2d(x, w, padding="VALID", data_format="NHWC", fft_size=None, name=None):
    """Stride-1 2-D cross-correlation computed with `tf.signal` real FFTs.

    Args:
      x: float32 or float64 input, `[B, H, W, Cin]` (NHWC) or `[B, Cin, H, W]` (NCHW). Spatial sizes
        and channels must be static; the batch may be dynamic.
      w: weights `[kh, kw, Cin, Cout]` of the same dtype, as for `tf.nn.conv2d`.
      padding: "VALID" or "SAME" (case-insensitive).
      data_format: "NHWC" or "NCHW", the layout of `x` and of the result.
      fft_size: side `S` of the square FFT frame; default the smallest size of the ops (a power
        of two, 3 * 2^k or 5 * 2^k) that avoids wrap-around (see
        `tf_fftconv.geometry.conv_geometry`).
      name: optional name scope.

    Returns:
      The same tensor as `tf.nn.conv2d(x, w, strides=1, padding=padding, data_format=data_format)`,
      up to rounding. float64 inputs are transformed in complex128.
    """
    with tf.name_scope(name or "signal_fft_conv2d"):
        if not isinstance(padding, str) or padding.upper() not in _PADDINGS:
            raise ValueError(f"padding must be one of {_PADDINGS}, got {padding!r}")
        if not isinstance(data_format, str) or data_format.upper() not in _DATA_FORMATS:
            raise ValueError(f"data_format must be one of {_DATA_FORMATS}, got {data_format!r}")
        padding, data_format = padding.upper(), data_format.upper()

        x = tf.convert_to_tensor(x, name="x")
        w = tf.convert_to_tensor(w, dtype_hint=x.dtype, name="w")
        if x.dtype not in _DTYPES:
            raise TypeError(f"x must be float32 or float64, got {x.dtype.name}")
        if w.dtype != x.dtype:
            raise TypeError(f"w must have the dtype of x ({x.dtype.name}), got {w.dtype.name}")
        if x.shape.rank != 4:
            raise ValueError(f"x must be rank 4 ({data_format}), got shape {x.shape}")
        if w.shape.rank != 4:
            raise ValueError(f"w must be rank 4 [kh, kw, Cin, Cout], got shape {w.shape}")

        # x as [B, Cin, H, W]: the transforms act on the two innermost axes.
        x_nchw = tf.transpose(x, [0, 3, 1, 2]) if data_format == "NHWC" else x
        in_channels = _static_dim(x_nchw, 1, "the channel axis of x")
        in_h = _static_dim(x_nchw, 2, "the height of x")
        in_w = _static_dim(x_nchw, 3, "the width of x")
        kh, kw, w_in_channels, out_channels = (
            _static_dim(w, axis, "w") for axis in range(4))
        if w_in_channels != in_channels:
            raise ValueError(
                f"w has {w_in_channels} input channels, x has {in_channels} "
                f"(x {x.shape} {data_format}, w {w.shape})")

        geometry = conv_geometry(in_h, in_w, kh, kw, padding, fft_size, max_fft_size=None)
        size = geometry.fft_size

        # x_frame: [B, Cin, S, S], input at (pad_top, pad_left), zeros elsewhere.
        x_frame = tf.pad(x_nchw, [
            [0, 0], [0, 0],
            [geometry.pad_top, size - in_h - geometry.pad_top],
            [geometry.pad_left, size - in_w - geometry.pad_left],
        ])
        # w_frame: [Cout, Cin, S, S], kernel at (0, 0).
        w_frame = tf.pad(tf.transpose(w, [3, 2, 0, 1]),
                         [[0, 0], [0, 0], [0, size - kh], [0, size - kw]])

        # Spectra: [B, Cin, S, S/2+1] and [Cout, Cin, S, S/2+1], complex64 or complex128.
        x_spectrum = tf.signal.rfft2d(x_frame, fft_length=[size, size])
        w_spectrum = tf.signal.rfft2d(w_frame, fft_length=[size, size])

        # Frequency-major [S, S/2+1, B, Cin] · [S, S/2+1, Cout, Cin]^H -> [S, S/2+1, B, Cout]:
        # correlation is multiplication by the conjugate kernel spectrum, one matmul per bin.
        y_bins = tf.linalg.matmul(tf.transpose(x_spectrum, [2, 3, 0, 1]),
                                  tf.transpose(w_spectrum, [2, 3, 0, 1]),
                                  adjoint_b=True)
        y_spectrum = tf.transpose(y_bins, [2, 3, 0, 1])  # [B, Cout, S, S/2+1]

        # y_frame: [B, Cout, S, S]; the valid correlation is its [0, out_h) x [0, out_w) window.
        y_frame = tf.signal.irfft2d(y_spectrum, fft_length=[size, size])
        y = y_frame[:, :, :geometry.out_h, :geometry.out_w]
        return tf.transpose(y, [0, 2, 3, 1]) if data_format == "NHWC" else y

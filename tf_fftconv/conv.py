"""``fft_conv2d``: a stride-1 ``tf.nn.conv2d`` computed in the frequency domain with the three ops.

Per frequency bin (design: "Convolution as three ops"), with ``X = rfft2d(x)``, ``W = rfft2d(w)``
(w as ``[Cout, Cin, kh, kw]``) and ``dY = rfft2d(dy)``:

- forward       ``Y  = X  · W^H``   ``[B, Cin] · [Cin, Cout]``  -> ``y  = irfft2d(Y)``, window at 0
- input grad    ``dX = dY · W``     ``[B, Cout] · [Cout, Cin]`` -> ``dx = irfft2d(dX)``, window at pad
- weight grad   ``dW = dY^H · X``   ``[Cout, B] · [B, Cin]``    -> ``dw = irfft2d(dW)``, window [0, k)

``X`` and ``W`` from the forward pass are reused by the backward pass and ``dY`` is transformed once
for both gradients. The Hermitian weights and ``S^2`` factors of the op-level gradients cancel in
this composition, so none of them is applied here.
"""

import collections

import tensorflow as tf

from tf_fftconv import ops
from tf_fftconv.ops import invalid_argument as _invalid

# The largest fft_size of the ops: kMaxFftSize in cc/fftconv_params.h (tests/test_conv.py checks).
MAX_FFT_SIZE = 128

ConvGeometry = collections.namedtuple(
    "ConvGeometry", ["out_h", "out_w", "pad_top", "pad_left", "fft_size"])


def _next_power_of_two(n):
    size = 2
    while size < n:
        size *= 2
    return size


def conv_geometry(in_h, in_w, k_h, k_w, padding, fft_size=None, max_fft_size=MAX_FFT_SIZE):
    """Output size, padding offsets and FFT frame of a stride-1 convolution.

    SAME pads ``(k - 1) // 2`` before and the rest after, as ``tf.nn.conv2d`` does. The frame ``S``
    is the smallest power of two that holds the padded input and the kernel, so the circular
    correlation computed by the FFT never wraps around: ``S >= H + pad_total`` and ``S >= k``.
    ``max_fft_size=None`` lifts the limit of the custom ops and accepts any explicit ``fft_size``
    that is large enough (the ``tf.signal`` reference transforms any length).
    """
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise _invalid("padding must be \"VALID\" or \"SAME\", got %r" % (padding,))
    if min(k_h, k_w) < 1 or min(in_h, in_w) < 0:
        raise _invalid("kernel sizes must be >= 1 and input sizes >= 0, got input %dx%d and "
                       "kernel %dx%d" % (in_h, in_w, k_h, k_w))
    if padding == "VALID":
        out_h, out_w, pad_top, pad_left = in_h - k_h + 1, in_w - k_w + 1, 0, 0
        if out_h < 0 or out_w < 0:
            raise _invalid("with VALID padding the kernel (%dx%d) must not be larger than the "
                           "input (%dx%d)" % (k_h, k_w, in_h, in_w))
        need = max(in_h, in_w, k_h, k_w)
    else:
        out_h, out_w, pad_top, pad_left = in_h, in_w, (k_h - 1) // 2, (k_w - 1) // 2
        need = max(in_h + k_h - 1, in_w + k_w - 1)
    if fft_size is None:
        fft_size = _next_power_of_two(need)
        if max_fft_size is not None and fft_size > max_fft_size:
            raise _invalid(
                "input %dx%d with kernel %dx%d (%s) needs an FFT frame of %d > %d, the largest "
                "supported; tiling larger images is not supported yet"
                % (in_h, in_w, k_h, k_w, padding, fft_size, max_fft_size))
    else:
        fft_size = int(fft_size)
        if max_fft_size is not None and (
                fft_size < 2 or fft_size > max_fft_size or fft_size & (fft_size - 1)):
            raise _invalid("fft_size must be a power of two in [2, %d], got %d"
                           % (max_fft_size, fft_size))
        if fft_size < need:
            raise _invalid("fft_size %d is too small for input %dx%d with kernel %dx%d (%s): "
                           "needs >= %d to avoid wrap-around"
                           % (fft_size, in_h, in_w, k_h, k_w, padding, need))
    return ConvGeometry(out_h, out_w, pad_top, pad_left, fft_size)


def _static_dims(tensor, what):
    if tensor.shape.rank != 4:
        raise _invalid("%s must have rank 4, got shape %s" % (what, tensor.shape))
    return tensor.shape.as_list()


def _run_time_geometry(x, data_format, k_h, k_w, padding):
    """``conv_geometry`` as int32 tensors, for an input whose height or width is unknown.

    The sizes are computed in the graph from ``tf.shape(x)``; under XLA they fold to constants
    when the program is compiled for a concrete shape, which is all the ops' size inputs need.
    The frame is the smallest power of two that is large enough; inputs needing more than
    ``MAX_FFT_SIZE`` get that op's own error for the frame size they would need.
    """
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise _invalid("padding must be \"VALID\" or \"SAME\", got %r" % (padding,))
    shape = tf.shape(x, out_type=tf.int32)
    in_h, in_w = (shape[1], shape[2]) if data_format == "NHWC" else (shape[2], shape[3])
    if padding == "VALID":
        out_h, out_w, pad_top, pad_left = in_h - k_h + 1, in_w - k_w + 1, 0, 0
        need = tf.maximum(tf.maximum(in_h, in_w), max(k_h, k_w))
    else:
        out_h, out_w, pad_top, pad_left = in_h, in_w, (k_h - 1) // 2, (k_w - 1) // 2
        need = tf.maximum(in_h + k_h - 1, in_w + k_w - 1)
    # Powers of two from 2 up to twice the largest frame: the first one >= need.
    frames = tf.constant([2 ** i for i in range(1, MAX_FFT_SIZE.bit_length() + 1)], tf.int32)
    fft_size = tf.gather(frames, tf.reduce_sum(tf.cast(frames < need, tf.int32)))
    return ConvGeometry(out_h, out_w, pad_top, pad_left, fft_size), (in_h, in_w)


def fft_conv2d(x, w, padding="VALID", data_format="NHWC", fft_size=None, name=None):
    """Stride-1, dilation-1 ``tf.nn.conv2d`` (cross-correlation) computed with FFTs.

    Args:
      x: float32 or float64 input, ``[B, H, W, Cin]`` (NHWC) or ``[B, Cin, H, W]`` (NCHW).
        Cin must be known statically; B, H and W may be dynamic (with static H and W the sizes
        are Python numbers, otherwise they are computed in the graph).
      w: filters ``[kh, kw, Cin, Cout]``, the same dtype as ``x``, with a static shape.
      padding: "VALID" or "SAME".
      data_format: "NHWC" or "NCHW".
      fft_size: the FFT frame; default the smallest power of two without wrap-around. Needs a
        static height and width.
    Returns:
      ``[B, Ho, Wo, Cout]`` (NHWC) or ``[B, Cout, Ho, Wo]`` (NCHW), differentiable in ``x`` and
      ``w``.
    """
    with tf.name_scope(name or "fft_conv2d"):
        x = tf.convert_to_tensor(x)
        w = tf.convert_to_tensor(w)
        if x.dtype not in (tf.float32, tf.float64) or w.dtype != x.dtype:
            raise _invalid("x and w must both be float32 or both float64, got %s and %s"
                           % (x.dtype.name, w.dtype.name))
        if data_format not in ("NHWC", "NCHW"):
            raise _invalid("data_format must be \"NHWC\" or \"NCHW\", got %r" % (data_format,))
        x_dims = _static_dims(x, "x")
        k_h, k_w, w_in, w_out = _static_dims(w, "w")
        if data_format == "NHWC":
            _, in_h, in_w, in_channels = x_dims
        else:
            _, in_channels, in_h, in_w = x_dims
        if None in (in_channels, k_h, k_w, w_in, w_out):
            raise _invalid("the channels of x and the shape of w must be known statically, got "
                           "x %s and w %s" % (x.shape, w.shape))
        if w_in != in_channels:
            raise _invalid("x has %d input channels but w is [%d, %d, %d, %d] (dimension 2 must "
                           "match)" % (in_channels, k_h, k_w, w_in, w_out))
        if in_h is not None and in_w is not None:
            geometry = conv_geometry(in_h, in_w, k_h, k_w, padding, fft_size)
            image_size = (in_h, in_w)
        elif fft_size is not None:
            raise _invalid("an explicit fft_size needs a static height and width, got x %s"
                           % (x.shape,))
        else:
            geometry, image_size = _run_time_geometry(x, data_format, k_h, k_w, padding)
        return _frequency_domain_conv(geometry, image_size, (k_h, k_w), data_format)(x, w)


def _frequency_domain_conv(geometry, image_size, kernel_size, data_format):
    size, pad_top, pad_left = geometry.fft_size, geometry.pad_top, geometry.pad_left

    @tf.custom_gradient
    def conv(x, w):
        # x_spectrum [F, B, Cin]; w_spectrum [F, Cout, Cin]; y_spectrum [F, B, Cout].
        x_spectrum = ops.rfft2d(x, size, pad_top, pad_left, data_format)
        w_spectrum = ops.rfft2d(tf.transpose(w, [3, 2, 0, 1]), size)
        y_spectrum = ops.spectral_matmul(x_spectrum, w_spectrum, adjoint_b=True)
        y = ops.irfft2d(y_spectrum, size, geometry.out_h, geometry.out_w, 0, 0, data_format)

        def grad(dy):
            dy_spectrum = ops.rfft2d(dy, size, 0, 0, data_format)            # [F, B, Cout]
            dx_spectrum = ops.spectral_matmul(dy_spectrum, w_spectrum)         # [F, B, Cin]
            dx = ops.irfft2d(dx_spectrum, size, image_size[0], image_size[1], pad_top, pad_left,
                             data_format)
            dw_spectrum = ops.spectral_matmul(dy_spectrum, x_spectrum, adjoint_a=True)  # [F, Cout, Cin]
            dw = ops.irfft2d(dw_spectrum, size, kernel_size[0], kernel_size[1])  # [Cout, Cin, kh, kw]
            return dx, tf.transpose(dw, [2, 3, 1, 0])

        return y, grad

    return conv

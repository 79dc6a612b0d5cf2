"""The three tf_fftconv ops, their Python wrappers and their gradients.

Spectra are frequency-major ``[bins, batch, channels]`` complex tensors, ``bins = S * (S/2 + 1)``
for an ``S x S`` real FFT (bin ``ky * (S/2 + 1) + kx``). float16 and bfloat16 images have
half-precision spectra instead: ``[bins, batch, channels, 2]`` of the same type (real, imaginary),
computed in float32 and stored divided by ``S^2`` ("mean-normalised": no bin exceeds the largest
input magnitude, so a spectrum overflows only where its images would). Every gradient below is
made of the same three ops (plus a constant per-bin weight).
"""

import numpy as np
import tensorflow as tf

from tf_fftconv._loader import load_library
from tf_fftconv.device import compiled_here
from tf_fftconv.errors import invalid_argument

_COMPLEX_OF = {tf.float32: tf.complex64, tf.float64: tf.complex128, tf.float16: tf.float16,
               tf.bfloat16: tf.bfloat16}
_REAL_OF = {tf.complex64: tf.float32, tf.complex128: tf.float64, tf.float16: tf.float16,
            tf.bfloat16: tf.bfloat16}
HALF_DTYPES = (tf.float16, tf.bfloat16)


def is_half(dtype):
    """Whether ``dtype`` (of images or of a spectrum) is a half-precision type: its spectra are
    ``[bins, rows, cols, 2]`` pairs of that type, mean-normalised (divided by ``S^2``)."""
    return tf.as_dtype(dtype) in HALF_DTYPES


def _check_dtype(tensor, allowed, what):
    if tensor.dtype not in allowed:
        raise invalid_argument("%s must be %s, got %s" % (
            what, " or ".join(d.name for d in allowed), tensor.dtype.name))


def _size_input(value, name):
    """``fft_size``, ``out_h`` or ``out_w`` for the op's int32 scalar input.

    A Python or NumPy integer (checked to fit in int32, which TensorFlow would wrap silently) or
    an int32 tensor, possibly unknown until run time; the kernels check that it is a scalar.
    """
    if tf.is_tensor(value):
        if value.dtype != tf.int32:
            raise invalid_argument("%s must be an int32 tensor, got %s" % (name, value.dtype.name))
        return value
    if isinstance(value, (bool, np.bool_)):
        raise invalid_argument("%s must be an integer, got %r" % (name, value))
    if not isinstance(value, (int, np.integer)):
        try:
            return tf.convert_to_tensor(value, tf.int32)  # arrays: the kernel checks the shape
        except (TypeError, ValueError):
            raise invalid_argument("%s must be an integer or an int32 tensor, got %r"
                                   % (name, value)) from None
    if not -2**31 <= int(value) < 2**31:
        raise invalid_argument("%s = %d does not fit in int32" % (name, value))
    if tf.executing_eagerly():
        # Made on the host, where the kernels read it: converted under a GPU device scope it would
        # be copied to the GPU and back for every call.
        with tf.device("/CPU:0"):
            return tf.constant(int(value), tf.int32)
    return int(value)


def rfft2d(x, fft_size, offset_h=0, offset_w=0, data_format="NCHW", round_to_tf32=False,
           name=None):
    """Real 2-D FFT of images placed at ``(offset_h, offset_w)`` in an ``fft_size`` frame of zeros.

    Args:
      x: float32, float64, float16 or bfloat16 images, ``[B, C, H, W]`` (NCHW) or
        ``[B, H, W, C]`` (NHWC).
      fft_size: ``S``, a power of two in [2, 128], 3 * 2^k in [6, 96] or 5 * 2^k in [10, 80];
        ``offset + H <= S`` and ``offset + W <= S``. A Python or NumPy integer or an int32 scalar
        tensor (then known only at run time).
      round_to_tf32: store a float32 ``x``'s spectrum rounded to TF32 (10 mantissa bits), as the
        TF32 :func:`spectral_matmul` rounds its operands, for a spectrum that feeds only TF32
        products (``spectral_matmul(..., tf32_operands=True)``). Applies on a GPU of compute
        capability 8.0 or later with TensorFlow's TF32 switch on; elsewhere it changes nothing.
    Returns:
      complex64 / complex128 spectrum ``[S * (S/2 + 1), B, C]``; for float16 / bfloat16 x, the
      spectrum divided by ``S^2`` as ``[S * (S/2 + 1), B, C, 2]`` of x's type (real, imaginary).
    """
    x = tf.convert_to_tensor(x)
    _check_dtype(x, _COMPLEX_OF, "x")
    return load_library().fftconv_rfft2d(
        x=x, fft_size=_size_input(fft_size, "fft_size"), offset_h=offset_h, offset_w=offset_w, data_format=data_format,
        round_to_tf32=bool(round_to_tf32), Tcomplex=_COMPLEX_OF[x.dtype], name=name)


def spectral_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
                    alpha=1.0, allow_tf32=True, conjugate_a=False, conjugate_b=False,
                    tf32_operands=False, name=None):
    """One complex matmul per bin: ``alpha * op(a)[f] @ op(b)[f]`` for ``a [F, ., .]``,
    ``b [F, ., .]`` (complex64 / complex128), or half-precision spectra ``[F, ., ., 2]`` (float16 /
    bfloat16, accumulated in float32; ``alpha``, a Python float, is applied before rounding).
    complex64 products on a GPU use TF32 where TensorFlow's TF32 switch is on, unless
    ``allow_tf32`` is False. ``tf32_operands``: ``a`` and ``b`` hold TF32 values already
    (:func:`rfft2d` with ``round_to_tf32``), so the TF32 kernels take their bits unconverted, for
    the same product; the FP32, complex128, half-precision and CPU products ignore it.

    ``op(x)`` is ``x``, its transpose (``transpose_x``), its conjugate (``conjugate_x``) or its
    conjugate transpose (``adjoint_x``, or ``transpose_x`` with ``conjugate_x``); the kernels
    conjugate while they read, so no conjugated copy is made. ``adjoint_x`` with ``transpose_x``
    or ``conjugate_x`` is an InvalidArgumentError."""
    a = tf.convert_to_tensor(a)
    b = tf.convert_to_tensor(b)
    _check_dtype(a, _REAL_OF, "a")
    if b.dtype != a.dtype:
        raise invalid_argument("a and b must have the same dtype, got %s and %s"
                       % (a.dtype.name, b.dtype.name))
    return load_library().fftconv_spectral_matmul(
        a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b, adjoint_a=adjoint_a,
        adjoint_b=adjoint_b, conjugate_a=conjugate_a, conjugate_b=conjugate_b, alpha=float(alpha),
        allow_tf32=bool(allow_tf32), tf32_operands=bool(tf32_operands), name=name)


def irfft2d(spectrum, fft_size, out_h, out_w, offset_h=0, offset_w=0, data_format="NCHW",
            name=None):
    """Inverse of :func:`rfft2d`, keeping the window ``[offset, offset + out)``.

    A complex spectrum is inverted with the ``1/S^2`` scale; a half-precision one
    (``[bins, B, C, 2]``, float16 / bfloat16, mean-normalised as :func:`rfft2d` writes it) without
    it, so ``irfft2d(rfft2d(x))`` is ``x`` in every dtype. ``fft_size``, ``out_h`` and ``out_w`` are
    Python or NumPy integers or int32 scalar tensors. Returns images of the spectrum's real type
    ``[B, C, out_h, out_w]`` (NCHW) or ``[B, out_h, out_w, C]``.
    """
    spectrum = tf.convert_to_tensor(spectrum)
    _check_dtype(spectrum, _REAL_OF, "spectrum")
    return load_library().fftconv_irfft2d(
        spectrum=spectrum, fft_size=_size_input(fft_size, "fft_size"),
        out_h=_size_input(out_h, "out_h"), out_w=_size_input(out_w, "out_w"), offset_h=offset_h,
        offset_w=offset_w, data_format=data_format, T=_REAL_OF[spectrum.dtype], name=name)


# The activations the bias-and-activation ops take in (the names Keras gives them).
ACTIVATIONS = ("linear", "relu")


def _check_activation(activation):
    if activation not in ACTIVATIONS:
        raise invalid_argument("activation must be %s, got %r" % (
            " or ".join('"%s"' % a for a in ACTIVATIONS), activation))


def rfft2d_activation_gradient(dy, y, fft_size, offset_h=0, offset_w=0, data_format="NCHW",
                               activation="relu", name=None):
    """:func:`rfft2d` of ``dy * activation'(z)``, for the gradient ``dy`` of an activation's
    output ``y = activation(z)`` (``y`` of ``dy``'s shape): ReLU's derivative is 1 where ``y > 0``
    and 0 elsewhere, as TensorFlow's ReluGrad takes it; "linear" leaves ``dy`` as it is. The
    derivative is applied as the kernel reads ``dy``, with no pass of its own. CPU only (the FFT
    path takes it there, ``execute``; under XLA, which has no lowering of the op, the same from
    TensorFlow's ops and :func:`rfft2d`). Returns what :func:`rfft2d` returns for ``dy``'s
    dtype."""
    dy = tf.convert_to_tensor(dy)
    _check_dtype(dy, _COMPLEX_OF, "dy")
    y = tf.convert_to_tensor(y, dy.dtype)
    _check_activation(activation)
    if compiled_here():
        return rfft2d(activation_gradient(dy, y, activation), fft_size, offset_h, offset_w,
                      data_format, name=name)
    return load_library().fftconv_rfft2d_activation_gradient(
        dy=dy, fft_size=_size_input(fft_size, "fft_size"), y=y, offset_h=offset_h,
        offset_w=offset_w, data_format=data_format, activation=activation,
        Tcomplex=_COMPLEX_OF[dy.dtype], name=name)


def irfft2d_bias_activation(spectrum, bias, fft_size, out_h, out_w, offset_h=0, offset_w=0,
                            data_format="NCHW", activation="linear", name=None):
    """:func:`irfft2d`, then ``activation(y + bias[c])`` for every value of channel ``c``, applied
    as the kernel writes the window (one rounding for float16 and bfloat16): a convolution layer's
    bias and activation with no pass of their own over its output. ``bias``: ``[channels]`` of
    the output's dtype; ``activation``: "linear" (the bias alone) or "relu". CPU only (the FFT
    path takes it there, ``execute``; under XLA, which has no lowering of the op, the same from
    :func:`irfft2d` and TensorFlow's ops, which XLA fuses)."""
    spectrum = tf.convert_to_tensor(spectrum)
    _check_dtype(spectrum, _REAL_OF, "spectrum")
    bias = tf.convert_to_tensor(bias, _REAL_OF[spectrum.dtype])
    _check_activation(activation)
    if compiled_here():
        y = tf.nn.bias_add(irfft2d(spectrum, fft_size, out_h, out_w, offset_h, offset_w,
                                   data_format), bias, data_format=data_format)
        return tf.nn.relu(y, name=name) if activation == "relu" else y
    return load_library().fftconv_irfft2d_bias_activation(
        spectrum=spectrum, fft_size=_size_input(fft_size, "fft_size"),
        out_h=_size_input(out_h, "out_h"), out_w=_size_input(out_w, "out_w"), bias=bias,
        offset_h=offset_h, offset_w=offset_w, data_format=data_format, activation=activation,
        name=name)


def activation_gradient(dy, y, activation):
    """``dy * activation'(z)`` from the activation's output ``y``, as TensorFlow's ops (the
    gradients of the two ops above, which compose it from TensorFlow's and the three ops)."""
    if activation == "relu":
        return tf.where(y > 0, dy, tf.zeros_like(dy))
    return dy


def half_spectrum_multiplicity(fft_size, dtype):
    """``[bins, 1, 1]``: how often each half-spectrum bin stands in the full spectrum (1 or 2).

    Columns ``kx = 0`` and ``kx = S/2`` are their own mirror images; every other column also
    stands for its conjugate ``S - kx``. This is the Hermitian weighting that makes ``rfft2d`` and
    ``irfft2d`` adjoint to each other up to ``S^2``. ``fft_size`` may be an int32 tensor known only
    at run time; when its value is known the result has a static shape.
    """
    static = tf.get_static_value(fft_size)
    if static is not None:
        fft_size = int(static)
    half = fft_size // 2 + 1
    kx = tf.range(fft_size * half) % half
    weights = tf.where((kx == 0) | (kx == fft_size // 2), 1, 2)
    return tf.reshape(tf.cast(weights, dtype), [-1, 1, 1])


def _scale_spectrum(spectrum, fft_size, complex_scale, half_scale):
    """``spectrum * weight``, the weight ``[bins, 1, 1]`` being ``complex_scale(S^2) / m`` or, for a
    half-precision spectrum, ``half_scale(S^2) / m`` with m the multiplicity (as functions of the
    area and multiplicity, both float tensors); half spectra are scaled in float32 and rounded once.
    """
    if not is_half(spectrum.dtype):
        area = _frame_area(fft_size, spectrum.dtype)
        return spectrum * complex_scale(area, half_spectrum_multiplicity(fft_size, spectrum.dtype))
    area = _frame_area(fft_size, tf.float32)
    weights = half_scale(area, half_spectrum_multiplicity(fft_size, tf.float32))
    return tf.cast(tf.cast(spectrum, tf.float32) * weights[..., tf.newaxis], spectrum.dtype)


def _image_size(x, data_format):
    """Height and width of an image tensor: Python ints where static, else from ``tf.shape``."""
    axes = (1, 2) if data_format == "NHWC" else (2, 3)
    dynamic = None
    sizes = []
    for axis in axes:
        size = x.shape[axis] if x.shape.rank is not None else None
        if size is None:
            dynamic = tf.shape(x) if dynamic is None else dynamic
            size = dynamic[axis]
        sizes.append(size)
    return sizes


def _frame_area(fft_size, dtype):
    """``S^2`` as a ``dtype`` scalar, for a Python or tensor ``fft_size``."""
    return tf.cast(fft_size, dtype) * tf.cast(fft_size, dtype)


def _checked_fft_size(op):
    """An FFT op's ``fft_size`` input for its gradient: a Python int where the op's graph holds it
    as a constant, else the int32 tensor the wrappers pass (the raw ops also take int64, and the
    op has checked that it is an allowed size, so the cast changes no value).

    The constant is read, not the tensor passed on: a gradient built in a graph of its own (a
    persistent tape's backward function of a compiled function) receives the forward graph's
    tensors as arguments, which XLA cannot take as the compile-time constant the ops' sizes must
    be."""
    fft_size = op.inputs[1]
    static = tf.get_static_value(fft_size)
    if static is not None and np.ndim(static) == 0:
        return int(static)
    return fft_size if fft_size.dtype == tf.int32 else tf.cast(fft_size, tf.int32)


def _rfft2d_input_gradient(op, grad):
    # grad_x[h, w] = Re sum_k grad[k] e^{+i theta}  =  S^2 * irfft2d(grad / multiplicity).
    # Half precision: rfft2d is the standard transform / S^2 and irfft2d the standard inverse times
    # S^2, so the same gradient is irfft2d(grad / (S^2 multiplicity)).
    x, fft_size = op.inputs[0], _checked_fft_size(op)
    data_format = op.get_attr("data_format").decode()
    height, width = _image_size(x, data_format)
    weighted = _scale_spectrum(grad, fft_size, lambda area, m: area / m,
                               lambda area, m: 1.0 / (area * m))
    return irfft2d(weighted, fft_size, height, width, op.get_attr("offset_h"),
                   op.get_attr("offset_w"), data_format)


def _irfft2d_spectrum_gradient(op, grad):
    # grad_spectrum[k] = multiplicity[k] / S^2 * rfft2d(grad placed at the window); half precision
    # (the scales of both ops differ by S^2 each way): multiplicity[k] * S^2 * rfft2d(grad).
    fft_size = _checked_fft_size(op)
    spectrum = rfft2d(grad, fft_size, op.get_attr("offset_h"), op.get_attr("offset_w"),
                      op.get_attr("data_format").decode())
    return _scale_spectrum(spectrum, fft_size, lambda area, m: m / area,
                           lambda area, m: m * area)


@tf.RegisterGradient("FftconvRfft2d")
def _rfft2d_grad(op, grad):
    return _rfft2d_input_gradient(op, grad), None


@tf.RegisterGradient("FftconvIrfft2d")
def _irfft2d_grad(op, grad):
    return _irfft2d_spectrum_gradient(op, grad), None, None, None


@tf.RegisterGradient("FftconvRfft2dActivationGradient")
def _rfft2d_activation_gradient_grad(op, grad):
    # spectrum = rfft2d(dy * m) with m = activation'(z), a function of y that is constant almost
    # everywhere (ReLU's 0 or 1): grad_dy = m * rfft2d's gradient, and none for y (as ReluGrad's).
    grad_dy = _rfft2d_input_gradient(op, grad)
    return (activation_gradient(grad_dy, op.inputs[2], op.get_attr("activation").decode()),
            None, None)


@tf.RegisterGradient("FftconvIrfft2dBiasActivation")
def _irfft2d_bias_activation_grad(op, grad):
    # y = activation(irfft2d(spectrum) + bias): g = grad * activation'(z), then irfft2d's gradient
    # of g for the spectrum and g summed over every axis but the channels' for the bias.
    g = activation_gradient(grad, op.outputs[0], op.get_attr("activation").decode())
    channels_last = op.get_attr("data_format").decode() == "NHWC"
    grad_bias = tf.reduce_sum(g, axis=[0, 1, 2] if channels_last else [0, 2, 3])
    return _irfft2d_spectrum_gradient(op, g), None, None, None, grad_bias


# An operand's mode: N (as it is), T (transpose), C (conjugate), H (conjugate transpose), and the
# op's flags for each (H by adjoint_x alone, which is also what transpose_x with conjugate_x means).
_FLAGS_OF_MODE = {"N": (False, False, False), "T": (True, False, False),
                  "C": (False, False, True), "H": (False, True, False)}


def _mode(transpose, adjoint, conjugate):
    if adjoint or (transpose and conjugate):
        return "H"
    return "T" if transpose else ("C" if conjugate else "N")


def _product(x, mode_x, y, mode_y, alpha=1.0):
    """``alpha mode_x(x) @ mode_y(y)`` per bin, one spectral matmul whatever the modes."""
    (transpose_a, adjoint_a, conjugate_a), (transpose_b, adjoint_b, conjugate_b) = (
        _FLAGS_OF_MODE[mode_x], _FLAGS_OF_MODE[mode_y])
    return spectral_matmul(x, y, transpose_a=transpose_a, adjoint_a=adjoint_a,
                           conjugate_a=conjugate_a, transpose_b=transpose_b, adjoint_b=adjoint_b,
                           conjugate_b=conjugate_b, alpha=alpha)


# op(x)^H, op(x)^T and conj(op(x)) as modes of x.
_ADJOINT_OF = {"N": "H", "T": "C", "C": "T", "H": "N"}
_TRANSPOSE_OF = {"N": "T", "T": "N", "C": "H", "H": "C"}
_CONJ_OF = {"N": "C", "T": "H", "C": "N", "H": "T"}


@tf.RegisterGradient("FftconvSpectralMatmul")
def _spectral_matmul_grad(op, grad):
    # For c = A B with A = op_a(a), B = op_b(b): grad A = g B^H and grad B = A^H g (TensorFlow's
    # gradient of a real loss in a complex z is dL/dRe z + i dL/dIm z, so a real-linear map's
    # gradient is its adjoint under Re <u, v> = Re sum conj(u) v). Each op is its own adjoint
    # there (Re <u, v^T> = Re <u^T, v>, Re <u, conj(v)> = Re <conj(u), v>): grad a = op_a(grad A),
    #   A = a:       grad a = g B^H                       A = a^T:  grad a = (g B^H)^T = conj(B) g^T
    #   A = conj(a): grad a = conj(g B^H) = conj(g) B^T   A = a^H:  grad a = (g B^H)^H = B g^H
    # and likewise grad b = op_b(A^H g). alpha is real: both gradients carry it once.
    a, b = op.inputs
    alpha = op.get_attr("alpha")
    mode_a, mode_b = (_mode(op.get_attr("transpose_" + x), op.get_attr("adjoint_" + x),
                            op.get_attr("conjugate_" + x)) for x in "ab")
    if mode_a == "N":
        grad_a = _product(grad, "N", b, _ADJOINT_OF[mode_b], alpha)
    elif mode_a == "T":
        grad_a = _product(b, _CONJ_OF[mode_b], grad, "T", alpha)
    elif mode_a == "C":
        grad_a = _product(grad, "C", b, _TRANSPOSE_OF[mode_b], alpha)
    else:
        grad_a = _product(b, mode_b, grad, "H", alpha)
    if mode_b == "N":
        grad_b = _product(a, _ADJOINT_OF[mode_a], grad, "N", alpha)
    elif mode_b == "T":
        grad_b = _product(grad, "T", a, _CONJ_OF[mode_a], alpha)
    elif mode_b == "C":
        grad_b = _product(a, _TRANSPOSE_OF[mode_a], grad, "C", alpha)
    else:
        grad_b = _product(grad, "H", a, mode_a, alpha)
    return grad_a, grad_b

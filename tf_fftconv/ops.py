"""The three tf_fftconv ops, their Python wrappers and their gradients.

Spectra are frequency-major ``[bins, batch, channels]`` complex tensors, ``bins = S * (S/2 + 1)``
for an ``S x S`` real FFT (bin ``ky * (S/2 + 1) + kx``). Every gradient below is made of the same
three ops (plus a constant per-bin weight and, for two transpose-flag cases, a conjugate).
"""

import numpy as np
import tensorflow as tf

from tf_fftconv._loader import load_library

_COMPLEX_OF = {tf.float32: tf.complex64, tf.float64: tf.complex128}
_REAL_OF = {tf.complex64: tf.float32, tf.complex128: tf.float64}


def invalid_argument(message):
    """The InvalidArgumentError the Python side raises for bad input (the kernels raise the same)."""
    return tf.errors.InvalidArgumentError(None, None, "tf_fftconv: " + message)


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


def rfft2d(x, fft_size, offset_h=0, offset_w=0, data_format="NCHW", name=None):
    """Real 2-D FFT of images placed at ``(offset_h, offset_w)`` in an ``fft_size`` frame of zeros.

    Args:
      x: float32 or float64 images, ``[B, C, H, W]`` (NCHW) or ``[B, H, W, C]`` (NHWC).
      fft_size: ``S``, a power of two in [2, 128]; ``offset + H <= S`` and ``offset + W <= S``.
        A Python or NumPy integer or an int32 scalar tensor (then known only at run time).
    Returns:
      complex64 / complex128 spectrum ``[S * (S/2 + 1), B, C]``.
    """
    x = tf.convert_to_tensor(x)
    _check_dtype(x, _COMPLEX_OF, "x")
    return load_library().fftconv_rfft2d(
        x=x, fft_size=_size_input(fft_size, "fft_size"), offset_h=offset_h, offset_w=offset_w, data_format=data_format,
        Tcomplex=_COMPLEX_OF[x.dtype], name=name)


def spectral_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
                    name=None):
    """One complex matmul per bin: ``op(a)[f] @ op(b)[f]`` for ``a [F, ., .]``, ``b [F, ., .]``."""
    a = tf.convert_to_tensor(a)
    b = tf.convert_to_tensor(b)
    _check_dtype(a, _REAL_OF, "a")
    if b.dtype != a.dtype:
        raise invalid_argument("a and b must have the same dtype, got %s and %s"
                       % (a.dtype.name, b.dtype.name))
    return load_library().fftconv_spectral_matmul(
        a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b, adjoint_a=adjoint_a,
        adjoint_b=adjoint_b, name=name)


def irfft2d(spectrum, fft_size, out_h, out_w, offset_h=0, offset_w=0, data_format="NCHW",
            name=None):
    """Inverse of :func:`rfft2d` scaled by ``1/S^2``, keeping the window ``[offset, offset + out)``.

    ``fft_size``, ``out_h`` and ``out_w`` are Python or NumPy integers or int32 scalar tensors.
    Returns float32 / float64 images ``[B, C, out_h, out_w]`` (NCHW) or ``[B, out_h, out_w, C]``.
    """
    spectrum = tf.convert_to_tensor(spectrum)
    _check_dtype(spectrum, _REAL_OF, "spectrum")
    return load_library().fftconv_irfft2d(
        spectrum=spectrum, fft_size=_size_input(fft_size, "fft_size"),
        out_h=_size_input(out_h, "out_h"), out_w=_size_input(out_w, "out_w"), offset_h=offset_h,
        offset_w=offset_w, data_format=data_format, T=_REAL_OF[spectrum.dtype], name=name)


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


@tf.RegisterGradient("FftconvRfft2d")
def _rfft2d_grad(op, grad):
    # grad_x[h, w] = Re sum_k grad[k] e^{+i theta}  =  S^2 * irfft2d(grad / multiplicity).
    x, fft_size = op.inputs
    data_format = op.get_attr("data_format").decode()
    height, width = _image_size(x, data_format)
    weights = _frame_area(fft_size, grad.dtype) / half_spectrum_multiplicity(fft_size, grad.dtype)
    grad_x = irfft2d(grad * weights, fft_size, height, width, op.get_attr("offset_h"),
                     op.get_attr("offset_w"), data_format)
    return grad_x, None


@tf.RegisterGradient("FftconvIrfft2d")
def _irfft2d_grad(op, grad):
    # grad_spectrum[k] = multiplicity[k] / S^2 * rfft2d(grad placed at the window).
    fft_size = op.inputs[1]
    spectrum = rfft2d(grad, fft_size, op.get_attr("offset_h"), op.get_attr("offset_w"),
                      op.get_attr("data_format").decode())
    weights = half_spectrum_multiplicity(fft_size, spectrum.dtype) / _frame_area(
        fft_size, spectrum.dtype)
    return spectrum * weights, None, None, None


def _mode(transpose, adjoint):
    return "H" if adjoint else ("T" if transpose else "N")


def _product(x, mode_x, y, mode_y):
    """``mode_x(x) @ mode_y(y)`` per bin; modes N, T (transpose), H (adjoint), C (conjugate)."""
    if mode_x == "C":
        x, mode_x = tf.math.conj(x), "N"
    if mode_y == "C":
        y, mode_y = tf.math.conj(y), "N"
    return spectral_matmul(x, y, transpose_a=mode_x == "T", adjoint_a=mode_x == "H",
                           transpose_b=mode_y == "T", adjoint_b=mode_y == "H")


# For c = op_a(a) op_b(b): grad op_a(a) = g op_b(b)^H and grad op_b(b) = op_a(a)^H g, then undone
# through op_a / op_b. _ADJOINT_OF[m] writes op(x)^H as a mode of x; _CONJ_OF[m], conj(op(x)).
_ADJOINT_OF = {"N": "H", "T": "C", "H": "N"}
_CONJ_OF = {"N": "C", "T": "H", "H": "T"}


@tf.RegisterGradient("FftconvSpectralMatmul")
def _spectral_matmul_grad(op, grad):
    a, b = op.inputs
    mode_a = _mode(op.get_attr("transpose_a"), op.get_attr("adjoint_a"))
    mode_b = _mode(op.get_attr("transpose_b"), op.get_attr("adjoint_b"))
    if mode_a == "N":
        grad_a = _product(grad, "N", b, _ADJOINT_OF[mode_b])
    elif mode_a == "T":
        grad_a = _product(b, _CONJ_OF[mode_b], grad, "T")
    else:
        grad_a = _product(b, mode_b, grad, "H")
    if mode_b == "N":
        grad_b = _product(a, _ADJOINT_OF[mode_a], grad, "N")
    elif mode_b == "T":
        grad_b = _product(grad, "T", a, _CONJ_OF[mode_a])
    else:
        grad_b = _product(grad, "H", a, mode_a)
    return grad_a, grad_b

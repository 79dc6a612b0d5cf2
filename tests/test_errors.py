"""Bad input gets a clear InvalidArgumentError naming the problem, before any memory is touched."""

import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc

InvalidArgument = tf.errors.InvalidArgumentError
lib = fc.load_library()


def raises(match):
    return pytest.raises(InvalidArgument, match=match)


# (callable, expected message) for each way to get an op wrong; run eagerly on each device.
RFFT2D_CASES = [
    (lambda: fc.ops.rfft2d(tf.zeros([2, 3, 4]), 8), "rank 4"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4], tf.int32), 8), "x must be float32 or float64"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 9, 4]), 8), "height = 9 .* does not fit"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 9]), 8), "width = 9 .* does not fit"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 8, offset_h=5), "height = 4 at offset_h = 5"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 8, offset_w=-1), "offset_w = -1 lies outside"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 0, 0]), 8, offset_h=8), "offset_h = 8 lies outside"),
    # Allowed: powers of two in [2, 128], 3 * 2^k in [6, 96] and 5 * 2^k in [10, 80]; the message
    # names them. Not 15 or 30 (3 * 5 * 2^k), 160 (past 80) or 192 (past 96).
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 9),
     r"fft_size must be a power of two in \[2, 128\], 3 \* 2\^k in \[6, 96\] or 5 \* 2\^k in "
     r"\[10, 80\] \(one of 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128\), got 9"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 18), "fft_size must be a power of two .*, got 18"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 36), "fft_size must be a power of two .*, got 36"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 15), "fft_size must be a power of two .*, got 15"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 30), "fft_size must be a power of two .*, got 30"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 5), "fft_size must be a power of two .*, got 5"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 160), "fft_size must be a power of two .*, got 160"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 192), "fft_size must be a power of two .*, got 192"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 3), "fft_size must be a power of two .*, got 3"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 0), "fft_size must be a power of two"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), -8), "fft_size must be a power of two"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 256), "fft_size must be a power of two"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 130, 4]), 128), "height = 130 needs an FFT frame larger"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 8, data_format="NCWH"), "data_format"),
    (lambda: fc.ops.rfft2d(tf.zeros([512, 512, 1, 1]), 128),
     r"the spectrum \(8320 x 512 x 512\) would hold more than 2147483647 elements"),
    # The input is empty but its spectrum (all zeros) is not: the message names the spectrum.
    (lambda: fc.ops.rfft2d(tf.zeros([2**31, 1, 1, 0]), 8), r"the spectrum \(40 x 2147483648 x 1\)"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), tf.constant([8, 8])), "fft_size must be a scalar"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), tf.constant(8, tf.int64)), "fft_size must be an int32 tensor"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 2**32 + 8), "fft_size = 4294967304 does not fit in int32"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 8.0), "fft_size must be an integer"),
    # Past int64 the op module refuses before TensorFlow converts (offsets past int64, which
    # stop the process in TensorFlow's conversion, are in tests/test_size_safety.py).
    (lambda: lib.fftconv_rfft2d(x=tf.zeros([1, 1, 4, 4]), fft_size=-2**64),
     "fft_size = -18446744073709551616 does not fit in int64"),
    # The raw ops take int64 sizes, checked as given.
    (lambda: lib.fftconv_rfft2d(x=tf.zeros([1, 1, 4, 4]), fft_size=2**32 + 8),
     "fft_size must be a power of two .*, got 4294967304"),
    (lambda: fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), True), "fft_size must be an integer"),
    (lambda: lib.fftconv_rfft2d(x=tf.zeros([1, 1, 4, 4]), fft_size=[[8]]), "fft_size must be a scalar, got shape \\[1,1\\]"),
    (lambda: lib.fftconv_rfft2d(x=tf.zeros([1, 1, 4, 4]), fft_size=8, Tcomplex=tf.complex128),
     "T = float goes with Tcomplex = complex64"),
]

IRFFT2D_CASES = [
    (lambda: fc.ops.irfft2d(tf.zeros([40, 2], tf.complex64), 8, 4, 4), "rank 3"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1]), 8, 4, 4), "spectrum must be complex64 or complex128"),
    (lambda: fc.ops.irfft2d(tf.zeros([41, 1, 1], tf.complex64), 8, 4, 4), "41 bins but fft_size 8 needs"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 16, 4, 4), "40 bins but fft_size 16"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, 9, 4), "out_h = 9 .* does not fit"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, 4, 4, 2, 5), "out_w = 4 at offset_w = 5"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, -1, 4), "out_h and out_w must be >= 0"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, 4, 4, -2), "offset_h = -2 lies outside"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 15, 4, 4), "fft_size must be a power of two"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 160, 4, 4), "got 160"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 192, 4, 4), "got 192"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 6, 4, 4), "40 bins but fft_size 6 needs"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 10, 4, 4), "40 bins but fft_size 10 needs"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, 4, 4, data_format="HWCN"), "data_format"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), [8], 4, 4), "fft_size must be a scalar"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, tf.constant([4]), 4), "out_h must be a scalar"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, 4, np.zeros([2, 2], np.int32)), "out_w must be a scalar"),
    (lambda: fc.ops.irfft2d(tf.zeros([40, 1, 1], tf.complex64), 8, -2**31 - 1, 4), "out_h = -2147483649 does not fit"),
    (lambda: lib.fftconv_irfft2d(spectrum=tf.zeros([40, 1, 1], tf.complex64), fft_size=8, out_h=4,
                                 out_w=2**40), "out_w = 1099511627776 needs an FFT frame larger"),
    (lambda: lib.fftconv_irfft2d(spectrum=tf.zeros([40, 1, 1], tf.complex64), fft_size=8, out_h=4,
                                 out_w=4, T=tf.float64), "T = double goes with Tcomplex = complex128"),
]

MATMUL_CASES = [
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3], tf.complex64), tf.zeros([2, 3, 3], tf.complex64)), "rank 3"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3], tf.complex64), tf.zeros([2, 3], tf.complex64)), "rank 3"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 4], tf.complex64), tf.zeros([3, 4, 5], tf.complex64)), "a has 2 bins but b has 3"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 4], tf.complex64), tf.zeros([2, 5, 5], tf.complex64)), "inner dimensions do not match"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 4], tf.complex64), tf.zeros([2, 4, 4], tf.complex64), transpose_a=True), "inner dimensions do not match"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3], tf.complex64), tf.zeros([2, 3, 3], tf.complex64), transpose_a=True, adjoint_a=True), "transpose_a and adjoint_a"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3], tf.complex64), tf.zeros([2, 3, 3], tf.complex64), transpose_b=True, adjoint_b=True), "transpose_b and adjoint_b"),
    # Both conjugate: ambiguous (conjugate_x with transpose_x is the adjoint, tests/test_ops.py).
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3], tf.complex64), tf.zeros([2, 3, 3], tf.complex64), conjugate_a=True, adjoint_a=True),
     "conjugate_a and adjoint_a cannot both be true: adjoint_a already conjugates"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3, 2], tf.bfloat16), tf.zeros([2, 3, 3, 2], tf.bfloat16), conjugate_b=True, adjoint_b=True),
     "conjugate_b and adjoint_b cannot both be true: adjoint_b already conjugates"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3]), tf.zeros([2, 3, 3])), "a must be complex64 or complex128"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([2, 3, 3], tf.complex64), tf.zeros([2, 3, 3], tf.complex128)), "same dtype"),
    (lambda: fc.ops.spectral_matmul(tf.zeros([1, 65536, 1], tf.complex64), tf.zeros([1, 1, 65536], tf.complex64)),
     r"the product \(1 x 65536 x 65536\) would hold more than 2147483647 elements"),
    # Empty operands, but a product of zeros that is too large: the message names the product.
    (lambda: fc.ops.spectral_matmul(tf.zeros([2**31, 0, 3], tf.complex64), tf.zeros([2**31, 4, 0], tf.complex64),
                                    adjoint_a=True, transpose_b=True), r"the product \(2147483648 x 3 x 4\)"),
]

CONV_CASES = [
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 3, 2])), "x has 2 input channels"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([6, 3, 2, 2])), "must not be larger than the input"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 2, 2]), padding="FULL"), "padding"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 2, 2]), data_format="NWHC"), "data_format"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2], tf.int32), tf.zeros([3, 3, 2, 2], tf.int32)), "x and w must have the same dtype, float32, float64, float16 or bfloat16"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 2, 2], tf.float64)), "x and w must have the same dtype, float32, float64, float16 or bfloat16"),
    (lambda: fc.fft_conv2d(tf.zeros([4, 4, 2]), tf.zeros([3, 3, 2, 2])), "x must have rank 4"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([5, 5, 1, 1]), fft_size=4), "fft_size 4 is too small for kernel 5x5"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=36), "power of two .*, got 36"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=18), "3 \\* 2\\^k in \\[6, 96\\].*, got 18"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=30), "5 \\* 2\\^k in \\[10, 80\\].*, got 30"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 300, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=160), "power of two in \\[2, 128\\], .*, got 160"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 300, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=192), "power of two in \\[2, 128\\], .*, got 192"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 300, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=256), "power of two in \\[2, 128\\], .*, got 256"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=8.0), "fft_size must be None or an integer"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), algorithm="winograd"), "algorithm must be one of"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), tile=0), "tile must be >= 1, got 0"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), tile=7, fft_size=8), "tile 7 with kernel 3x3 needs a frame of at least 9"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 300, 9, 1]), tf.zeros([9, 3, 1, 1]), tile=121), "needs a frame of 256 > 128"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), fft_size=8, algorithm="spatial"), "fft_size and tile set the FFT path"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), memory_budget=0), "memory_budget must be a positive number of bytes"),
    (lambda: fc.fft_conv2d(tf.zeros([1, 9, 9, 1]), tf.zeros([3, 3, 1, 1]), memory_budget="much"), "memory_budget must be a number of bytes such as 2e9 or 512M"),
]


def _ids(cases):
    return [match[:30] for _, match in cases]


@pytest.mark.parametrize("call,match", RFFT2D_CASES + IRFFT2D_CASES + MATMUL_CASES + CONV_CASES,
                         ids=_ids(RFFT2D_CASES + IRFFT2D_CASES + MATMUL_CASES + CONV_CASES))
def test_bad_input_raises_invalid_argument(device, call, match):
    with raises(match):
        call()


def test_kernels_validate_shapes_only_known_at_run_time():
    """Shapes and sizes unknown while tracing reach the kernels, which give the same messages."""
    rfft = tf.function(lambda x: fc.ops.rfft2d(x, 8), input_signature=[tf.TensorSpec(None)])
    with raises("height = 9 .* does not fit"):
        rfft(tf.zeros([1, 1, 9, 4]))
    with raises("must have rank 4"):
        rfft(tf.zeros([1, 9, 4]))
    irfft = tf.function(lambda s: fc.ops.irfft2d(s, 8, 4, 4),
                        input_signature=[tf.TensorSpec(None, tf.complex64)])
    with raises("41 bins"):
        irfft(tf.zeros([41, 1, 1], tf.complex64))
    scalar = tf.TensorSpec(None, tf.int32)
    rfft_sized = tf.function(lambda x, s: fc.ops.rfft2d(x, s, 2, 0),
                             input_signature=[tf.TensorSpec(None), scalar])
    with raises("fft_size must be a power of two in \\[2, 128\\], 3 \\* 2\\^k in \\[6, 96\\] or "
                "5 \\* 2\\^k in \\[10, 80\\] .*, got 9"):
        rfft_sized(tf.zeros([1, 1, 4, 4]), 9)
    with raises("height = 7 at offset_h = 2 does not fit in the frame of fft_size 8"):
        rfft_sized(tf.zeros([1, 1, 7, 4]), 8)
    with raises("fft_size must be a scalar, got shape \\[1\\]"):
        rfft_sized(tf.zeros([1, 1, 4, 4]), [8])
    irfft_sized = tf.function(lambda s, size, h, w: fc.ops.irfft2d(s, size, h, w),
                              input_signature=[tf.TensorSpec(None, tf.complex64)] + [scalar] * 3)
    with raises("out_h and out_w must be >= 0, got 4 and -3"):
        irfft_sized(tf.zeros([40, 1, 1], tf.complex64), 8, 4, -3)
    with raises("40 bins but fft_size 16"):
        irfft_sized(tf.zeros([40, 1, 1], tf.complex64), 16, 4, 4)
    with raises("out_h must be a scalar"):
        irfft_sized(tf.zeros([40, 1, 1], tf.complex64), 8, [4, 4], 4)
    matmul = tf.function(lambda a, b: fc.ops.spectral_matmul(a, b),
                         input_signature=[tf.TensorSpec([None, None, None], tf.complex64)] * 2)
    with raises("inner dimensions do not match"):
        matmul(tf.zeros([2, 3, 4], tf.complex64), tf.zeros([2, 5, 5], tf.complex64))


def test_shape_functions_reject_static_problems_while_tracing():
    """With static shapes, graph construction fails early (TensorFlow reports these as ValueError)."""
    with pytest.raises(ValueError, match="does not fit"):
        tf.function(lambda x: fc.ops.rfft2d(x, 8)).get_concrete_function(tf.TensorSpec([1, 1, 9, 9]))
    with pytest.raises(ValueError, match="more than 2147483647 elements"):
        tf.function(lambda s: fc.ops.irfft2d(s, 128, 128, 128)).get_concrete_function(
            tf.TensorSpec([128 * 65, 4096, 4096], tf.complex64))
    # The spectrum fits, the output it would give does not: the message names the output.
    with pytest.raises(ValueError, match=r"the output \(600000 x 1 x 64 x 64\) would hold more than"):
        tf.function(lambda s: fc.ops.irfft2d(s, 64, 64, 64)).get_concrete_function(
            tf.TensorSpec([64 * 33, 600000, 1], tf.complex64))
    with pytest.raises(ValueError, match="fft_size must be a scalar, got shape \\[2\\]"):
        tf.function(lambda x: fc.ops.rfft2d(x, tf.constant([8, 8]))).get_concrete_function(
            tf.TensorSpec([1, 1, 4, 4]))
    with pytest.raises(ValueError, match="out_w must be a scalar"):
        tf.function(lambda s, w: fc.ops.irfft2d(s, 8, 4, w)).get_concrete_function(
            tf.TensorSpec([40, 1, 1], tf.complex64), tf.TensorSpec([None], tf.int32))
    # Empty tensors with huge dimensions are valid while tracing too.
    tf.function(lambda a, b: fc.ops.spectral_matmul(a, b)).get_concrete_function(
        tf.TensorSpec([1, 2**31, 0], tf.complex64), tf.TensorSpec([1, 0, 0], tf.complex64))
    with pytest.raises(ValueError, match="a has 2 bins but b has 3"):
        tf.function(lambda a, b: fc.ops.spectral_matmul(a, b)).get_concrete_function(
            tf.TensorSpec([2, 3, 3], tf.complex64), tf.TensorSpec([3, 3, 3], tf.complex64))
    # The flags are attributes: refused while tracing whatever the shapes.
    with pytest.raises(ValueError, match="conjugate_b and adjoint_b cannot both be true"):
        tf.function(lambda a, b: fc.ops.spectral_matmul(
            a, b, adjoint_b=True, conjugate_b=True)).get_concrete_function(
                tf.TensorSpec(None, tf.complex64), tf.TensorSpec(None, tf.complex64))

"""The three ops against float64 NumPy references, on fresh random inputs, eager and tf.function."""

import numpy as np
import pytest
import tensorflow as tf

import np_reference as ref
import tf_fftconv as fc
from conftest import rel_error

# Powers of two, 3 * 2^k and 5 * 2^k (a radix-3 or radix-5 stage before the power-of-two ones).
FFT_SIZES = [2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128]


def _tolerance(dtype, fft_size):
    if dtype == np.float64:
        return 1e-12
    return 2e-6 if fft_size <= 64 else 4e-6


def _random_image_case(rng, fft_size, data_format):
    batch, channels = rng.integers(1, 4), rng.integers(1, 5)
    height, width = rng.integers(1, fft_size + 1), rng.integers(1, fft_size + 1)
    offset_h, offset_w = rng.integers(0, fft_size - height + 1), rng.integers(0, fft_size - width + 1)
    shape = (batch, channels, height, width) if data_format == "NCHW" else (batch, height, width, channels)
    return rng.standard_normal(shape), int(offset_h), int(offset_w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("fft_size", FFT_SIZES)
def test_rfft2d_matches_numpy(rng, device, run, fft_size, data_format, dtype):
    for _ in range(3):
        x, offset_h, offset_w = _random_image_case(rng, fft_size, data_format)
        out = run(lambda t: fc.ops.rfft2d(t, fft_size, offset_h, offset_w, data_format),
                  tf.constant(x.astype(dtype)))
        expected = ref.rfft2d(x.astype(dtype), fft_size, offset_h, offset_w, data_format)
        assert out.dtype == (np.complex64 if dtype == np.float32 else np.complex128)
        assert out.shape == expected.shape
        assert rel_error(out, expected) <= _tolerance(dtype, fft_size), (x.shape, offset_h, offset_w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("fft_size", FFT_SIZES)
def test_irfft2d_matches_numpy(rng, device, run, fft_size, data_format, dtype):
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    for _ in range(3):
        batch, channels = rng.integers(1, 4), rng.integers(1, 5)
        out_h, out_w = int(rng.integers(0, fft_size + 1)), int(rng.integers(0, fft_size + 1))
        offset_h, offset_w = int(rng.integers(0, fft_size - out_h + 1)), int(rng.integers(0, fft_size - out_w + 1))
        offset_h, offset_w = min(offset_h, fft_size - 1), min(offset_w, fft_size - 1)
        # Not Hermitian-consistent on purpose: imaginary parts at kx = 0, S/2 must be ignored.
        spectrum = ref.random_complex(rng, (fft_size * (fft_size // 2 + 1), batch, channels))
        spectrum = spectrum.astype(complex_dtype)
        out = run(lambda s: fc.ops.irfft2d(s, fft_size, out_h, out_w, offset_h, offset_w, data_format),
                  tf.constant(spectrum))
        expected = ref.irfft2d(spectrum, fft_size, out_h, out_w, offset_h, offset_w, data_format)
        assert out.dtype == dtype and out.shape == expected.shape
        # Relative to the whole frame's RMS, which sets the size of each value's rounding error:
        # a window of one value can hold a value near 0 (a 1x1 window failed a relative error
        # of 2e-6 in about 1% of draws while its error was 3-5e-8 of the frame's RMS).
        frame = ref.irfft2d(spectrum, fft_size, fft_size, fft_size, 0, 0, data_format)
        rms = np.full(expected.shape, np.sqrt(np.mean(np.square(frame))))
        assert rel_error(out, expected, rms) <= _tolerance(dtype, fft_size)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("mode_a", ref.MATMUL_MODES)
@pytest.mark.parametrize("mode_b", ref.MATMUL_MODES)
def test_spectral_matmul_matches_numpy(rng, device, run, mode_a, mode_b, dtype):
    flags = ref.matmul_flags(mode_a, mode_b)
    for bins, m, k, n in [(1, 1, 1, 1), (5, 3, 4, 2), (17, 33, 9, 20), (544, 8, 6, 16), (3, 70, 65, 67)]:
        a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins, m, k, n)
        a = ref.random_complex(rng, a_shape).astype(dtype)
        b = ref.random_complex(rng, b_shape).astype(dtype)
        out = run(lambda x, y: fc.ops.spectral_matmul(x, y, **flags), tf.constant(a), tf.constant(b))
        expected = ref.spectral_matmul(a, b, **flags)
        assert out.shape == (bins, m, n) and out.dtype == dtype
        assert rel_error(out, expected) <= (1e-6 if dtype == np.complex64 else 1e-13)


@pytest.mark.parametrize("dtype", [tf.complex64, tf.float16])
def test_transpose_with_conjugate_is_the_adjoint(rng, device, dtype):
    """conjugate_x with transpose_x is allowed and is adjoint_x, to the bit (conjugate_x with
    adjoint_x is refused: tests/test_errors.py)."""
    if dtype == tf.float16:
        a, b = (tf.constant(rng.standard_normal((9, 6, 5, 2)), dtype) for _ in range(2))
    else:
        a, b = (tf.constant(ref.random_complex(rng, (9, 6, 5)), dtype) for _ in range(2))
    np.testing.assert_array_equal(fc.ops.spectral_matmul(a, b, transpose_a=True, conjugate_a=True),
                                  fc.ops.spectral_matmul(a, b, adjoint_a=True))
    np.testing.assert_array_equal(fc.ops.spectral_matmul(b, a, transpose_b=True, conjugate_b=True),
                                  fc.ops.spectral_matmul(b, a, adjoint_b=True))


def test_spectral_matmul_empty_inner_dimension_gives_zeros(device):
    out = fc.ops.spectral_matmul(tf.zeros([4, 3, 0], tf.complex64), tf.zeros([4, 0, 2], tf.complex64))
    assert out.shape == (4, 3, 2)
    np.testing.assert_array_equal(out.numpy(), 0)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_empty_batch_gives_empty_results(device, run, data_format):
    shape = (0, 3, 5, 6) if data_format == "NCHW" else (0, 5, 6, 3)
    spectrum = run(lambda t: fc.ops.rfft2d(t, 8, 1, 1, data_format), tf.zeros(shape))
    assert spectrum.shape == (8 * 5, 0, 3)
    y = run(lambda s: fc.ops.irfft2d(s, 8, 5, 6, 1, 1, data_format), tf.constant(spectrum))
    assert y.shape == shape
    product = run(lambda s: fc.ops.spectral_matmul(s, s, adjoint_a=True), tf.constant(spectrum))
    assert product.shape == (40, 3, 3)
    np.testing.assert_array_equal(product, 0)


def test_round_trip_restores_the_input(rng, device):
    x = rng.standard_normal((2, 3, 11, 7))
    spectrum = fc.ops.rfft2d(x, 16, 2, 5)
    np.testing.assert_allclose(fc.ops.irfft2d(spectrum, 16, 11, 7, 2, 5).numpy(), x, atol=1e-12)


def test_static_shapes_are_inferred():
    @tf.function(input_signature=[tf.TensorSpec([None, 7, 9, 4], tf.float32)])
    def chain(x):
        spectrum = fc.ops.rfft2d(x, 16, 0, 0, "NHWC")
        assert spectrum.shape.as_list() == [16 * 9, None, 4]
        product = fc.ops.spectral_matmul(spectrum, tf.zeros([16 * 9, 5, 4], tf.complex64), adjoint_b=True)
        assert product.shape.as_list() == [16 * 9, None, 5]
        y = fc.ops.irfft2d(product, 16, 3, 2, 1, 1, "NHWC")
        assert y.shape.as_list() == [None, 3, 2, 5]
        return y
    assert chain(tf.zeros([2, 7, 9, 4])).shape == (2, 3, 2, 5)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_sizes_as_tensors_unknown_while_tracing(rng, device, data_format):
    """fft_size, out_h and out_w are inputs: in a tf.function whose signature leaves them unknown,
    one trace serves every size, with the results of the static calls."""
    scalar = tf.TensorSpec([], tf.int32)
    rfft = tf.function(lambda x, s: fc.ops.rfft2d(x, s, 1, 2, data_format),
                       input_signature=[tf.TensorSpec(None, tf.float64), scalar])
    irfft = tf.function(lambda y, s, h, w: fc.ops.irfft2d(y, s, h, w, 1, 2, data_format),
                        input_signature=[tf.TensorSpec(None, tf.complex128)] + [scalar] * 3)
    for fft_size in (8, 16, 32):
        x, _, _ = _random_image_case(rng, fft_size - 2, data_format)
        spectrum = rfft(x, tf.constant(fft_size)).numpy()
        expected = ref.rfft2d(x, fft_size, 1, 2, data_format)
        assert spectrum.shape == expected.shape
        assert rel_error(spectrum, expected) <= 1e-12
        out_h, out_w = int(rng.integers(0, fft_size - 1)), int(rng.integers(0, fft_size - 2))
        y = irfft(spectrum, tf.constant(fft_size), tf.constant(out_h), tf.constant(out_w)).numpy()
        expected = ref.irfft2d(spectrum, fft_size, out_h, out_w, 1, 2, data_format)
        assert y.shape == expected.shape
        assert rel_error(y, expected) <= 1e-12
    assert rfft.experimental_get_tracing_count() == 1 and irfft.experimental_get_tracing_count() == 1


def test_shapes_with_sizes_unknown_while_tracing():
    """Dimensions that depend on an unknown size input stay unknown; the others are inferred."""
    @tf.function(input_signature=[tf.TensorSpec([None, 7, 9, 4], tf.float32),
                                  tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)])
    def chain(x, size, out_h):
        spectrum = fc.ops.rfft2d(x, size, 0, 0, "NHWC")
        assert spectrum.shape.as_list() == [None, None, 4]
        y = fc.ops.irfft2d(spectrum, 16, out_h, 3, 1, 1, "NHWC")
        assert y.shape.as_list() == [None, None, 3, 4]
        return y
    assert chain(tf.zeros([2, 7, 9, 4]), tf.constant(16), tf.constant(5)).shape == (2, 5, 3, 4)


def test_numpy_integer_sizes():
    x = tf.ones([1, 2, 3, 3])
    spectrum = fc.ops.rfft2d(x, np.int64(4), np.int32(1), np.int64(0))
    assert spectrum.shape == (12, 1, 2)
    y = fc.ops.irfft2d(spectrum, np.int64(4), np.int64(3), np.uint8(3), np.int64(1))
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-6)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_empty_tensors_with_huge_dimensions(device, data_format):
    """An empty tensor is never refused for its size, as tf.linalg.matmul does."""
    # NHWC [2^31, 1, 1, 0]: no channels, so an empty spectrum [F, 2^31, 0].
    shape = [2**31, 1, 1, 0] if data_format == "NHWC" else [2**31, 0, 1, 1]
    spectrum = fc.ops.rfft2d(tf.zeros(shape), 8, 0, 0, data_format)
    assert spectrum.shape == (40, 2**31, 0)
    y = fc.ops.irfft2d(spectrum, 8, 5, 6, 0, 0, data_format)
    assert y.shape == ((2**31, 5, 6, 0) if data_format == "NHWC" else (2**31, 0, 5, 6))
    product = fc.ops.spectral_matmul(tf.zeros([1, 2**31, 0], tf.complex64),
                                     tf.zeros([1, 0, 0], tf.complex64))
    assert product.shape == (1, 2**31, 0)

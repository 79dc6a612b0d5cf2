"""Every op's gradient against a float64 numerical Jacobian (tf.test.compute_gradient)."""

import numpy as np
import pytest
import tensorflow as tf

import np_reference as ref
import tf_fftconv as fc
from conftest import assert_second_order_gradient_as_conv2d


def _max_jacobian_error(fn, args):
    theoretical, numerical = tf.test.compute_gradient(fn, args, delta=1e-6)
    worst = 0.0
    for t, n in zip(theoretical, numerical):
        scale = max(1.0, np.abs(n).max())
        worst = max(worst, np.abs(t - n).max() / scale)
    return worst


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("fft_size,height,width,offset_h,offset_w", [
    (2, 1, 2, 1, 0), (4, 3, 2, 1, 2), (8, 5, 8, 3, 0), (16, 7, 3, 9, 13),
    (6, 5, 3, 1, 2), (12, 7, 12, 4, 0), (24, 5, 6, 17, 9),
    (10, 5, 7, 2, 3), (20, 6, 4, 13, 16)])
def test_rfft2d_gradient(rng, device, data_format, fft_size, height, width, offset_h, offset_w):
    shape = (2, 3, height, width) if data_format == "NCHW" else (2, height, width, 3)
    x = tf.constant(rng.standard_normal(shape))
    fn = lambda t: fc.ops.rfft2d(t, fft_size, offset_h, offset_w, data_format)
    assert _max_jacobian_error(fn, [x]) < 1e-7


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("fft_size,out_h,out_w,offset_h,offset_w", [
    (2, 2, 1, 0, 1), (4, 2, 3, 1, 0), (8, 8, 5, 0, 2), (16, 4, 9, 11, 6),
    (6, 6, 4, 0, 1), (12, 3, 5, 8, 7), (24, 5, 3, 19, 20),
    (10, 4, 6, 3, 2), (20, 5, 3, 14, 15)])
def test_irfft2d_gradient(rng, device, data_format, fft_size, out_h, out_w, offset_h, offset_w):
    spectrum = tf.constant(ref.random_complex(rng, (fft_size * (fft_size // 2 + 1), 2, 3)))
    fn = lambda s: fc.ops.irfft2d(s, fft_size, out_h, out_w, offset_h, offset_w, data_format)
    assert _max_jacobian_error(fn, [spectrum]) < 1e-7


@pytest.mark.parametrize("mode_a", ref.MATMUL_MODES)
@pytest.mark.parametrize("mode_b", ref.MATMUL_MODES)
def test_spectral_matmul_gradient(rng, device, mode_a, mode_b):
    a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins=3, m=4, k=2, n=5)
    a, b = ref.random_complex(rng, a_shape), ref.random_complex(rng, b_shape)
    fn = lambda x, y: fc.ops.spectral_matmul(x, y, **ref.matmul_flags(mode_a, mode_b))
    assert _max_jacobian_error(fn, [tf.constant(a), tf.constant(b)]) < 1e-7


@pytest.mark.parametrize("mode_a", ref.MATMUL_MODES)
@pytest.mark.parametrize("mode_b", ref.MATMUL_MODES)
def test_spectral_matmul_second_order_gradient(rng, mode_a, mode_b):
    """The gradient's products (other flags, the conjugate ones among them) have gradients too:
    the Jacobian of <grad_a, u> + <grad_b, v> in (a, b, g), against a numerical one."""
    bins, m, k, n = 2, 3, 2, 4
    a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins, m, k, n)
    a, b = (tf.constant(ref.random_complex(rng, shape)) for shape in (a_shape, b_shape))
    g = tf.constant(ref.random_complex(rng, (bins, m, n)))
    flags = ref.matmul_flags(mode_a, mode_b)

    def gradients(a, b, g):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            product = fc.ops.spectral_matmul(a, b, **flags)
        grad_a, grad_b = tape.gradient(product, [a, b], output_gradients=g)
        return tf.concat([tf.reshape(grad_a, [-1]), tf.reshape(grad_b, [-1])], 0)

    assert _max_jacobian_error(gradients, [a, b, g]) < 1e-7


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fft_conv2d_gradient(rng, device, padding, data_format):
    x_shape = (2, 6, 5, 3) if data_format == "NHWC" else (2, 3, 6, 5)
    x = tf.constant(rng.standard_normal(x_shape))
    w = tf.constant(rng.standard_normal((3, 2, 3, 4)))
    fn = lambda a, b: fc.fft_conv2d(a, b, padding, data_format, algorithm="fft")
    assert _max_jacobian_error(fn, [x, w]) < 1e-7


@pytest.mark.parametrize("fft_size", [6, 12, 24, 10, 20, 40])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_fft_conv2d_gradient_in_mixed_radix_frames(rng, device, fft_size, padding):
    """Frames of 3 * 2^k and 5 * 2^k: one frame (12, 24, 20, 40, and 10 for VALID) or tiles (6,
    and 10 for SAME) of the same convolution."""
    x = tf.constant(rng.standard_normal((2, 7 if fft_size % 3 == 0 else 9, 6, 2)))
    w = tf.constant(rng.standard_normal((3, 3, 2, 3)))
    fn = lambda a, b: fc.fft_conv2d(a, b, padding, "NHWC", fft_size=fft_size)
    assert _max_jacobian_error(fn, [x, w]) < 1e-7


@pytest.mark.parametrize("memory_budget", [None, 1], ids=["keep", "recompute"])
def test_second_order_gradient_through_fft_conv2d(rng, memory_budget):
    x = tf.constant(rng.standard_normal((1, 5, 5, 2)))
    w = tf.constant(rng.standard_normal((3, 3, 2, 2)))
    assert_second_order_gradient_as_conv2d(
        lambda a, b: fc.fft_conv2d(a, b, "SAME", algorithm="fft", memory_budget=memory_budget),
        x, w)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_gradients_with_sizes_unknown_while_tracing(rng, device, data_format):
    """fft_size, out_h, out_w and the image height and width known only at run time: the
    gradients are those of the static case (checked numerically above)."""
    fft_size, offset_h, offset_w = 8, 3, 1
    shape = (2, 3, 5, 4) if data_format == "NCHW" else (2, 5, 4, 3)
    x = tf.constant(rng.standard_normal(shape))
    weights = tf.constant(ref.random_complex(rng, (fft_size * (fft_size // 2 + 1), 2, 3)))
    dy = tf.constant(rng.standard_normal(shape))
    spectrum = tf.constant(ref.random_complex(rng, weights.shape))

    def gradients(x, spectrum, size, out_h, out_w):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, spectrum])
            forward = tf.math.real(tf.reduce_sum(
                fc.ops.rfft2d(x, size, offset_h, offset_w, data_format) * weights))
            inverse = tf.reduce_sum(
                fc.ops.irfft2d(spectrum, size, out_h, out_w, offset_h, offset_w, data_format) * dy)
        return tape.gradient(forward, x), tape.gradient(inverse, spectrum)

    height, width = (shape[2], shape[3]) if data_format == "NCHW" else (shape[1], shape[2])
    expected = gradients(x, spectrum, fft_size, height, width)
    scalar = tf.TensorSpec([], tf.int32)
    traced = tf.function(gradients, input_signature=[
        tf.TensorSpec([None] * 4, tf.float64), tf.TensorSpec([None] * 3, tf.complex128),
        scalar, scalar, scalar])
    got = traced(x, spectrum, tf.constant(fft_size), tf.constant(height), tf.constant(width))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


def test_half_spectrum_multiplicity_from_a_tensor_fft_size():
    traced = tf.function(lambda s: fc.ops.half_spectrum_multiplicity(s, tf.float64),
                         input_signature=[tf.TensorSpec([], tf.int32)])
    for fft_size in (2, 8, 32):
        static = fc.ops.half_spectrum_multiplicity(fft_size, tf.float64).numpy()
        kx = np.arange(fft_size * (fft_size // 2 + 1)) % (fft_size // 2 + 1)
        np.testing.assert_array_equal(static.ravel(), np.where((kx == 0) | (kx == fft_size // 2), 1, 2))
        np.testing.assert_array_equal(traced(tf.constant(fft_size)).numpy(), static)


def test_raw_op_gradients_with_int64_sizes():
    """The raw ops take int32 or int64 sizes; their gradients are the same either way."""
    lib = fc.load_library()
    rng = np.random.default_rng()
    x = tf.constant(rng.standard_normal([2, 3, 5, 6]))
    weights = tf.constant(rng.standard_normal([2, 3, 4, 6]))

    def loss_and_gradient(sizes):
        fft_size, out_h, out_w = (tf.constant(v, sizes) for v in (8, 4, 6))
        with tf.GradientTape() as tape:
            tape.watch(x)
            spectrum = lib.fftconv_rfft2d(x=x, fft_size=fft_size, offset_h=1,
                                          Tcomplex=tf.complex128)
            y = lib.fftconv_irfft2d(spectrum=spectrum, fft_size=fft_size, out_h=out_h,
                                    out_w=out_w, offset_h=2, T=tf.float64)
            loss = tf.reduce_sum(y * weights)
        return loss, tape.gradient(loss, x)
    loss, gradient = loss_and_gradient(tf.int64)
    want_loss, want_gradient = loss_and_gradient(tf.int32)
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gradient.numpy(), want_gradient.numpy(), rtol=1e-12, atol=1e-12)

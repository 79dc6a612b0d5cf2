"""tf_fftconv.reference.signal_fft_conv2d against tf.nn.conv2d: forward and gradients, float64."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tf_fftconv.reference import signal_fft_conv2d

# Fresh inputs each run; FFTCONV_TEST_SEED replays a failing run (the seed is in every message).
SEED = int(os.environ.get("FFTCONV_TEST_SEED", np.random.SeedSequence().entropy % 2**31))
CASES_PER_LAYOUT = 16
TOLERANCE_F64 = 1e-10
_PADDINGS_ID = {"VALID": 0, "SAME": 1}
_FORMATS_ID = {"NHWC": 0, "NCHW": 1}


def rel_err(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1e-300))


def conv2d_any_layout(x, w, padding, data_format):
    """tf.nn.conv2d in NHWC (the layout with CPU kernels), transposed in and out for NCHW."""
    if data_format == "NCHW":
        y = tf.nn.conv2d(tf.transpose(x, [0, 2, 3, 1]), w, strides=1, padding=padding)
        return tf.transpose(y, [0, 3, 1, 2])
    return tf.nn.conv2d(x, w, strides=1, padding=padding)


def random_case(rng, padding):
    batch = int(rng.integers(1, 5))
    cin, cout = (int(c) for c in rng.integers(1, 9, size=2))
    h, w = (int(s) for s in rng.integers(1, 41, size=2))
    kh, kw = (int(k) for k in rng.integers(1, 10, size=2))
    if padding == "VALID":  # the kernel must fit in the input
        kh, kw = min(kh, h), min(kw, w)
    return batch, cin, cout, h, w, kh, kw


def make_inputs(rng, batch, cin, cout, h, w, kh, kw, data_format, dtype=np.float64):
    shape = (batch, h, w, cin) if data_format == "NHWC" else (batch, cin, h, w)
    x = tf.constant(rng.standard_normal(shape).astype(dtype))
    kernel = tf.constant(rng.standard_normal((kh, kw, cin, cout)).astype(dtype))
    return x, kernel


def value_and_grads(fn, x, w, dy):
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = fn(x, w)
    dx, dw = tape.gradient(y, [x, w], output_gradients=dy)
    return y, dx, dw


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_matches_conv2d_forward_and_gradients(padding, data_format):
    rng = np.random.default_rng([SEED, _PADDINGS_ID[padding], _FORMATS_ID[data_format]])
    for _ in range(CASES_PER_LAYOUT):
        case = random_case(rng, padding)
        x, w = make_inputs(rng, *case, data_format)
        y_ref = conv2d_any_layout(x, w, padding, data_format)
        dy = tf.constant(rng.standard_normal(y_ref.shape))
        ours = value_and_grads(
            lambda a, b: signal_fft_conv2d(a, b, padding=padding, data_format=data_format),
            x, w, dy)
        ref = value_and_grads(
            lambda a, b: conv2d_any_layout(a, b, padding, data_format), x, w, dy)
        for what, a, b in zip(("y", "dx", "dw"), ours, ref):
            assert a.dtype == tf.float64, what
            err = rel_err(a, b)
            assert err <= TOLERANCE_F64, (
                f"{what}: rel err {err:.3e} for (batch, cin, cout, h, w, kh, kw)={case} "
                f"{padding} {data_format}, FFTCONV_TEST_SEED={SEED}")



@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_gradients_numerically(padding):
    rng = np.random.default_rng([SEED, 7])
    x, w = make_inputs(rng, 2, 2, 3, 6, 5, 3, 2, "NHWC")
    theoretical, numerical = tf.test.compute_gradient(
        lambda a, b: signal_fft_conv2d(a, b, padding=padding), [x, w])
    for t, n in zip(theoretical, numerical):
        assert rel_err(t, n) <= 1e-7, f"FFTCONV_TEST_SEED={SEED}"


def test_float32_forward_and_complex64():
    rng = np.random.default_rng([SEED, 11])
    x, w = make_inputs(rng, 2, 5, 4, 20, 17, 5, 3, "NHWC", dtype=np.float32)
    y = signal_fft_conv2d(x, w, padding="SAME")
    assert y.dtype == tf.float32
    y_ref = conv2d_any_layout(tf.cast(x, tf.float64), tf.cast(w, tf.float64), "SAME", "NHWC")
    assert rel_err(y, y_ref) <= 1e-5, f"FFTCONV_TEST_SEED={SEED}"


def test_explicit_fft_size_gives_same_result():
    rng = np.random.default_rng([SEED, 13])
    x, w = make_inputs(rng, 1, 3, 2, 9, 9, 4, 4, "NCHW")
    y_default = signal_fft_conv2d(x, w, padding="SAME", data_format="NCHW")  # S = 16
    for size in (12, 32):
        y = signal_fft_conv2d(x, w, padding="SAME", data_format="NCHW", fft_size=size)
        assert rel_err(y, y_default) <= TOLERANCE_F64


def test_tf_function_with_dynamic_batch():
    rng = np.random.default_rng([SEED, 17])
    x, w = make_inputs(rng, 3, 2, 4, 10, 10, 3, 3, "NHWC")
    fn = tf.function(
        lambda a, b: signal_fft_conv2d(a, b, padding="VALID"),
        input_signature=[tf.TensorSpec([None, 10, 10, 2], tf.float64),
                         tf.TensorSpec([3, 3, 2, 4], tf.float64)])
    assert rel_err(fn(x, w), conv2d_any_layout(x, w, "VALID", "NHWC")) <= TOLERANCE_F64


def test_empty_tensors():
    w = tf.ones([3, 3, 3, 2], tf.float64)
    assert signal_fft_conv2d(tf.zeros([0, 8, 8, 3], tf.float64), w, "SAME").shape == (0, 8, 8, 2)
    # VALID with the input one row shorter than the kernel: an empty output, not an error.
    assert signal_fft_conv2d(tf.zeros([1, 2, 8, 3], tf.float64), w).shape == (1, 0, 6, 2)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(padding="FULL"), ValueError, "padding"),
    (dict(data_format="NWHC"), ValueError, "data_format"),
    (dict(fft_size=8), tf.errors.InvalidArgumentError, "fft_size 8 is too small"),
])
def test_bad_arguments(kwargs, error, match):
    x = tf.zeros([1, 10, 10, 2])
    w = tf.zeros([3, 3, 2, 1])
    with pytest.raises(error, match=match):
        signal_fft_conv2d(x, w, **kwargs)


def test_bad_inputs():
    w = tf.zeros([3, 3, 2, 1])
    with pytest.raises(ValueError, match="input channels"):
        signal_fft_conv2d(tf.zeros([1, 10, 10, 3]), w)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must not be larger than"):
        signal_fft_conv2d(tf.zeros([1, 1, 10, 2]), w)
    with pytest.raises(ValueError, match="rank 4"):
        signal_fft_conv2d(tf.zeros([10, 10, 2]), w)
    with pytest.raises(TypeError, match="float32 or float64"):
        signal_fft_conv2d(tf.zeros([1, 10, 10, 2], tf.int32), tf.zeros([3, 3, 2, 1], tf.int32))
    with pytest.raises(TypeError, match="dtype of x"):
        signal_fft_conv2d(tf.zeros([1, 10, 10, 2], tf.float64), w)

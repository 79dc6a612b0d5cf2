"""fft_conv2d's FFT path (algorithm="fft") against tf.nn.conv2d in float64: forward, input
gradient and weight gradient. Tiling: test_tiling.py; the choice of algorithm: test_planning.py."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc
from conftest import rel_error

CASES_PER_SETTING = 25


def _random_case(rng, padding):
    batch = int(rng.integers(1, 9))
    c_in, c_out = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    k_h, k_w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    low_h, low_w = (k_h, k_w) if padding == "VALID" else (1, 1)
    high_h, high_w = (65, 65) if padding == "VALID" else (65 - k_h + 1, 65 - k_w + 1)
    height, width = int(rng.integers(low_h, high_h)), int(rng.integers(low_w, high_w))
    return batch, height, width, c_in, c_out, k_h, k_w


def _conv_and_grads(conv, x, w, dy):
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = conv(x, w)
        loss = tf.reduce_sum(y * dy)
    dx, dw = tape.gradient(loss, [x, w])
    return y, dx, dw


def _reference(x_nhwc, w, dy_nhwc, padding):
    return _conv_and_grads(lambda a, b: tf.nn.conv2d(a, b, 1, padding),
                           tf.constant(x_nhwc, tf.float64), tf.constant(w, tf.float64),
                           tf.constant(dy_nhwc, tf.float64))


def _tolerance(tolerance, want, magnitude, terms):
    """tolerance, widened for a draw whose result cancels more than a sum of random terms does.

    Rounding errors grow with the terms' magnitudes (magnitude: the same op on |x|, |w| and |dy|),
    which for a random draw of zero-mean inputs are about sqrt(terms) times the result (terms: the
    most products summed into one output). Where the result is smaller than that (the two values of
    a 128-term weight gradient can both come out near zero), the tolerance is scaled by the ratio;
    never below tolerance.
    """
    want_norm = np.linalg.norm(want)
    if want_norm == 0:
        return tolerance
    cancellation = np.linalg.norm(magnitude) / (want_norm * np.sqrt(terms))
    return tolerance * max(1.0, cancellation)


def _nchw(a):
    return np.transpose(a, (0, 3, 1, 2))


def _nhwc(a):
    return np.transpose(a, (0, 2, 3, 1))


def check_against_conv2d(rng, case, padding, data_format, dtype, tolerance, fft_size=None,
                         wrap=lambda fn: fn, **options):
    """options: algorithm (default "fft"), tile, memory_budget of fft_conv2d."""
    options.setdefault("algorithm", "fft")
    batch, height, width, c_in, c_out, k_h, k_w = case
    x = rng.standard_normal((batch, height, width, c_in)).astype(dtype)
    w = rng.standard_normal((k_h, k_w, c_in, c_out)).astype(dtype)
    out_h, out_w = (height - k_h + 1, width - k_w + 1) if padding == "VALID" else (height, width)
    dy = rng.standard_normal((batch, out_h, out_w, c_out)).astype(dtype)
    expected = _reference(x, w, dy, padding)
    magnitudes = _reference(np.abs(x), np.abs(w), np.abs(dy), padding)
    terms = {"y": k_h * k_w * c_in, "dx": k_h * k_w * c_out, "dw": batch * out_h * out_w}
    to_layout = _nchw if data_format == "NCHW" else (lambda a: a)
    from_layout = _nhwc if data_format == "NCHW" else (lambda a: a)
    conv = wrap(lambda a, b, d: _conv_and_grads(
        lambda p, q: fc.fft_conv2d(p, q, padding, data_format, fft_size, **options), a, b, d))
    y, dx, dw = conv(tf.constant(to_layout(x)), tf.constant(w), tf.constant(to_layout(dy)))
    for name, got, want, magnitude in [("y", from_layout(y.numpy()), expected[0], magnitudes[0]),
                                       ("dx", from_layout(dx.numpy()), expected[1], magnitudes[1]),
                                       ("dw", dw.numpy(), expected[2], magnitudes[2])]:
        assert got.shape == want.shape, (name, case)
        err = rel_error(got, want.numpy())
        bound = _tolerance(tolerance, want.numpy(), magnitude.numpy(), terms[name])
        assert err <= bound, "%s: relative error %.3g (bound %.3g) for case %s" % (name, err, bound, case)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_matches_conv2d_float32(rng, device, padding, data_format):
    for _ in range(CASES_PER_SETTING):
        check_against_conv2d(rng, _random_case(rng, padding), padding, data_format, np.float32, 5e-6)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_matches_conv2d_float64_in_tf_function(rng, device, padding):
    for _ in range(4):
        check_against_conv2d(rng, _random_case(rng, padding), padding, "NHWC", np.float64, 1e-11,
                             wrap=tf.function)


@pytest.mark.parametrize("case", [
    (1, 1, 1, 1, 1, 1, 1), (2, 5, 9, 3, 2, 2, 4), (3, 28, 28, 1, 6, 5, 5), (2, 7, 7, 4, 4, 7, 7),
    (1, 64, 64, 2, 3, 13, 13), (2, 64, 1, 1, 2, 1, 1), (1, 3, 40, 2, 2, 3, 12)])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_edge_shapes(rng, device, case, padding):
    batch, height, width, c_in, c_out, k_h, k_w = case
    if padding == "VALID" and (k_h > height or k_w > width):
        pytest.skip("kernel larger than input")
    check_against_conv2d(rng, case, padding, "NHWC", np.float32, 5e-6)


def test_explicit_larger_fft_size_gives_the_same_result(rng, device):
    check_against_conv2d(rng, (2, 9, 9, 3, 4, 3, 3), "SAME", "NHWC", np.float32, 5e-6, fft_size=32)


def test_empty_batch(device):
    y = fc.fft_conv2d(tf.zeros([0, 8, 8, 3]), tf.ones([3, 3, 3, 2]), "SAME", algorithm="fft")
    assert y.shape == (0, 8, 8, 2)


def conv2d_with_a_zero_channel(x, w, dy, padding, data_format="NHWC"):
    """tf.nn.conv2d's y, dx and dw for x and w with any number of channels, none included: computed
    with one more input channel (x and w) and one more output channel (w), all zeros, which add
    nothing; the extra output channel is cut off y, and the extra channels' gradients off dx and dw
    (TensorFlow's conv2d refuses a filter with no input channels, and oneDNN's CPU kernels one with
    no output channels). NumPy arrays in x's layout."""
    to_nhwc, from_nhwc = ((_nhwc, _nchw) if data_format == "NCHW" else
                          ((lambda a: a), (lambda a: a)))
    x, w, dy = tf.constant(to_nhwc(x)), tf.constant(w), tf.constant(to_nhwc(dy))
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = tf.nn.conv2d(tf.pad(x, [[0, 0], [0, 0], [0, 0], [0, 1]]),
                         tf.pad(w, [[0, 0], [0, 0], [0, 1], [0, 1]]), 1, padding)
        y = y[..., :w.shape[3]]
        loss = tf.reduce_sum(y * dy)
    dx, dw = tape.gradient(loss, [x, w])
    return from_nhwc(y.numpy()), from_nhwc(dx.numpy()), dw.numpy()


def _no_channel_case(rng, c_in, c_out, padding, data_format, dtype=np.float32):
    """x, w and dy (NumPy, x's layout) of a 3x5 kernel over 2 images of 7x9."""
    k_h, k_w, batch, height, width = 3, 5, 2, 7, 9
    out_h, out_w = (height - k_h + 1, width - k_w + 1) if padding == "VALID" else (height, width)
    to_layout = _nchw if data_format == "NCHW" else (lambda a: a)
    return (to_layout(rng.standard_normal((batch, height, width, c_in)).astype(dtype)),
            rng.standard_normal((k_h, k_w, c_in, c_out)).astype(dtype),
            to_layout(rng.standard_normal((batch, out_h, out_w, c_out)).astype(dtype)))


def _assert_same(got, want):
    for name, g, v in zip(("y", "dx", "dw"), got, want):
        g = g.numpy() if tf.is_tensor(g) else g
        assert g.shape == v.shape and g.dtype == v.dtype, (name, g.shape, v.shape, g.dtype)
        assert np.array_equal(g, v), name


@pytest.mark.parametrize("channels", [(0, 3), (2, 0), (0, 0)], ids=["cin0", "cout0", "both0"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("algorithm", ["auto", "fft", "spatial"])
@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
def test_no_input_or_output_channels_give_conv2d_result(rng, channels, data_format, padding,
                                                        algorithm, mode):
    """With no input channels the output is zeros (a sum over no channels), with no output
    channels it is empty; the gradients are zeros or empty: what tf.nn.conv2d gives, exactly."""
    x, w, dy = _no_channel_case(rng, *channels, padding, data_format)
    conv = lambda a, b, d: _conv_and_grads(
        lambda p, q: fc.fft_conv2d(p, q, padding, data_format, algorithm=algorithm), a, b, d)
    if mode != "eager":
        conv = tf.function(conv, jit_compile=mode == "jit")
    with tf.device("/CPU:0"):
        got = conv(tf.constant(x), tf.constant(w), tf.constant(dy))
    _assert_same(got, conv2d_with_a_zero_channel(x, w, dy, padding, data_format))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_no_output_channels_under_xla_equal_conv2d_itself(rng, data_format, padding):
    """Under XLA tf.nn.conv2d itself takes a filter with no output channels (its CPU kernel with
    oneDNN does not): the same empty output, zero input gradient and empty weight gradient."""
    x, w, dy = (tf.constant(a) for a in _no_channel_case(rng, 3, 0, padding, data_format))
    compiled = lambda conv: tf.function(
        lambda a, b, d: _conv_and_grads(conv, a, b, d), jit_compile=True)(x, w, dy)
    with tf.device("/CPU:0"):
        want = compiled(lambda p, q: tf.nn.conv2d(p, q, 1, padding, data_format=data_format))
        got = compiled(lambda p, q: fc.fft_conv2d(p, q, padding, data_format, algorithm="fft"))
    _assert_same(got, [t.numpy() for t in want])


def test_no_input_channels_with_sizes_unknown_while_tracing(rng):
    """Batch, height and width unknown while tracing: the zeros take their shape at run time."""
    x, w, dy = _no_channel_case(rng, 0, 4, "VALID", "NHWC", np.float64)
    conv = tf.function(lambda a, b, d: _conv_and_grads(
        lambda p, q: fc.fft_conv2d(p, q, "VALID", algorithm="fft"), a, b, d), input_signature=[
            tf.TensorSpec([None, None, None, 0], tf.float64), tf.TensorSpec(w.shape, tf.float64),
            tf.TensorSpec([None, None, None, 4], tf.float64)])
    _assert_same(conv(x, w, dy), conv2d_with_a_zero_channel(x, w, dy, "VALID"))


@pytest.mark.parametrize("sizes", [(2, 7, 9), (None, 7, None)], ids=["known", "some_unknown"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_no_output_channels_have_conv2ds_static_shape(sizes, data_format):
    """Traced, the output's static shape is tf.nn.conv2d's, with sizes known or not."""
    batch, height, width = sizes
    x_spec = tf.TensorSpec([batch, height, width, 3] if data_format == "NHWC" else
                           [batch, 3, height, width])

    def traced(conv):
        return tf.function(conv).get_concrete_function(
            x_spec, tf.TensorSpec([3, 5, 3, 0])).structured_outputs.shape.as_list()

    assert traced(lambda x, w: fc.fft_conv2d(x, w, "VALID", data_format)) == traced(
        lambda x, w: tf.nn.conv2d(x, w, 1, "VALID", data_format=data_format))


def test_dynamic_batch_in_tf_function(rng):
    conv = tf.function(lambda x, w: fc.fft_conv2d(x, w, "VALID", algorithm="fft"),
                       input_signature=[tf.TensorSpec([None, 12, 10, 3]), tf.TensorSpec([3, 3, 3, 5])])
    x = rng.standard_normal((4, 12, 10, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    assert rel_error(conv(x, w).numpy(), tf.nn.conv2d(x, w, 1, "VALID").numpy()) < 5e-6


def test_geometry_picks_the_smallest_frame_without_wrap_around():
    assert fc.conv_geometry(28, 28, 5, 5, "VALID") == (24, 24, 0, 0, 32)
    assert fc.conv_geometry(32, 32, 5, 5, "VALID").fft_size == 32
    # The smallest allowed size: 3 * 2^k and 5 * 2^k frames included (36 -> 40, 17 -> 20,
    # 38 -> 40, 33 -> 40, 41 -> 48).
    assert fc.conv_geometry(32, 32, 5, 5, "SAME") == (32, 32, 2, 2, 40)
    assert fc.conv_geometry(14, 14, 4, 4, "SAME") == (14, 14, 1, 1, 20)
    assert fc.conv_geometry(32, 32, 7, 7, "SAME").fft_size == 40
    assert fc.conv_geometry(33, 33, 1, 1, "VALID").fft_size == 40
    assert fc.conv_geometry(41, 41, 1, 1, "VALID").fft_size == 48
    assert fc.conv_geometry(60, 60, 5, 5, "SAME").fft_size == 64
    assert fc.conv_geometry(70, 70, 7, 7, "SAME").fft_size == 80
    assert fc.conv_geometry(90, 90, 7, 7, "VALID").fft_size == 96
    assert fc.conv_geometry(1, 1, 1, 1, "VALID").fft_size == 2
    assert fc.conv_geometry(5, 5, 1, 1, "VALID").fft_size == 6
    assert fc.conv_geometry(9, 9, 1, 1, "VALID").fft_size == 10


@pytest.mark.parametrize("fft_size", [24, 48, 20, 40])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("dtype,tolerance", [(np.float32, 5e-6), (np.float64, 1e-11)],
                         ids=["float32", "float64"])
def test_mixed_radix_frames_match_conv2d_with_both_gradients(rng, device, fft_size, data_format,
                                                             dtype, tolerance):
    """fft_size = 3 * 2^k or 5 * 2^k: one frame (Mathieu's layer's 38 samples fit in 40 or 48, not
    only 64) or tiles."""
    for case, padding in [((2, 20, 17, 3, 4, 5, 5), "SAME"), ((2, 32, 32, 3, 2, 7, 7), "SAME"),
                          ((1, 40, 33, 2, 3, 3, 4), "VALID")]:
        check_against_conv2d(rng, case, padding, data_format, dtype, tolerance, fft_size=fft_size)


@pytest.mark.parametrize("fft_size", [24, 48, 40])
def test_mixed_radix_frames_under_xla_equal_eager(rng, device, fft_size):
    x = tf.constant(rng.standard_normal((2, 32, 30, 3)).astype(np.float32))
    w = tf.constant(rng.standard_normal((7, 7, 3, 4)).astype(np.float32))
    dy = tf.constant(rng.standard_normal((2, 32, 30, 4)).astype(np.float32))
    conv = lambda a, b, d: _conv_and_grads(
        lambda p, q: fc.fft_conv2d(p, q, "SAME", fft_size=fft_size), a, b, d)
    eager = conv(x, w, dy)
    compiled = tf.function(conv, jit_compile=True)(x, w, dy)
    for got, want in zip(compiled, eager):
        assert rel_error(got.numpy(), want.numpy()) <= 1e-6
    assert rel_error(eager[0].numpy(), tf.nn.conv2d(x, w, 1, "SAME").numpy()) <= 5e-6


@pytest.mark.gpu
@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_matches_conv2d_with_tf32_on_the_gpu(rng, padding):
    """With TensorFlow's TF32 switch on, the matmul may use tensor cores: 1e-3 relative."""
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(True)
    try:
        with tf.device("/GPU:0"):
            for _ in range(6):
                check_against_conv2d(rng, _random_case(rng, padding), padding, "NHWC", np.float32, 1e-3)
            check_against_conv2d(rng, (32, 32, 32, 96, 128, 7, 7), padding, "NCHW", np.float32, 1e-3)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)


@pytest.mark.gpu
def test_gpu_and_cpu_kernels_agree(rng):
    """Same results from the CUDA and the CPU kernels, with TF32 off."""
    x = rng.standard_normal((3, 20, 17, 5)).astype(np.float32)
    w = rng.standard_normal((4, 6, 5, 7)).astype(np.float32)
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        results = {}
        for name in ("/CPU:0", "/GPU:0"):
            with tf.device(name):
                results[name] = fc.fft_conv2d(x, w, "SAME", algorithm="fft").numpy()
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    assert rel_error(results["/GPU:0"], results["/CPU:0"]) < 2e-6


def test_max_fft_size_matches_the_ops():
    """conv.py's MAX_FFT_SIZE repeats kMaxFftSize of include/fftconv_params.h; both must say the same."""
    header = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "include", "fftconv_params.h")
    with open(header) as f:
        found = re.findall(r"constexpr int kMaxFftSize = (\d+);", f.read())
    assert found, "kMaxFftSize not found in %s" % header
    assert int(found[0]) == fc.geometry.MAX_FFT_SIZE


def test_fft_sizes_match_the_ops():
    """geometry.FFT_SIZES repeats kFftSizes of include/fftconv_params.h; both must say the same."""
    header = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "include", "fftconv_params.h")
    with open(header) as f:
        text = f.read()
    found = re.findall(r"constexpr int kFftSizes\[\] = \{([\d, ]+)\};", text)
    assert found, "kFftSizes not found in %s" % header
    assert tuple(int(s) for s in found[0].split(",")) == fc.geometry.FFT_SIZES
    listed = re.findall(r'#define FFTCONV_FFT_SIZES_TEXT "([\d, ]+)"', text)
    assert listed and listed[0] == ", ".join(map(str, fc.geometry.FFT_SIZES))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "xla"])
def test_spectral_matmul_allow_tf32_false_keeps_fp32_products(rng, jit):
    """allow_tf32=False: FP32 products even with TensorFlow's TF32 switch on (the float32 spectra
    of half-precision inputs rely on it); on the GPU the default (TF32) is visibly less exact."""
    a = tf.constant((rng.standard_normal((9, 64, 96)) + 1j * rng.standard_normal((9, 64, 96)))
                    .astype(np.complex64))
    b = tf.constant((rng.standard_normal((9, 96, 80)) + 1j * rng.standard_normal((9, 96, 80)))
                    .astype(np.complex64))
    exact = np.matmul(a.numpy().astype(np.complex128), b.numpy().astype(np.complex128))
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(True)
    try:
        devices = ["/CPU:0"] + (["/GPU:0"] if tf.config.list_logical_devices("GPU") else [])
        for name in devices:
            with tf.device(name):
                errors = {}
                for allow in (True, False):
                    product = tf.function(
                        lambda a, b, allow=allow: fc.ops.spectral_matmul(a, b, allow_tf32=allow),
                        jit_compile=jit, autograph=False)
                    errors[allow] = rel_error(product(a, b).numpy(), exact)
            assert errors[False] <= 1e-6, (name, errors)
            if name == "/CPU:0":
                assert errors[True] <= 1e-6, (name, errors)
            elif tf.config.experimental.get_device_details(
                    tf.config.list_physical_devices("GPU")[0]).get("compute_capability",
                                                                    (0, 0)) >= (8, 0):
                assert errors[True] > 1e-5, (name, errors)   # TF32 tensor cores in use
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)


# ---------------------------------------------------------------------------------------------
# The weights in their own layout: no pass copies w or dw only to rearrange them.

def _walk_to(tensor, stop_type, neighbours):
    """The ops met walking the graph from ``tensor`` until ops of ``stop_type``, and those ops.
    ``neighbours(t)`` gives, for a tensor ``t``, the ops one step on and the tensors to go on from
    through each. IdentityN (how tf.custom_gradient passes its inputs through) pairs input i with
    output i only, so that a walk does not wander to the tensors passed with the one it follows."""
    between, stops, seen, pending = set(), set(), set(), [tensor]
    while pending:
        tensor = pending.pop()
        if tensor.ref() in seen:
            continue
        seen.add(tensor.ref())
        for op, following in neighbours(tensor):
            if op.type == stop_type:
                stops.add(op)
                continue
            between.add(op)
            pending.extend(following)
    return between, stops


def _consumers(tensor):
    for op in tensor.consumers():
        if op.type == "IdentityN":
            yield op, [op.outputs[i] for i, t in enumerate(op.inputs) if t is tensor]
        else:
            yield op, list(op.outputs)


def _producer(tensor):
    op = tensor.op
    if op.type == "IdentityN":
        yield op, [op.inputs[list(op.outputs).index(tensor)]]
    else:
        yield op, list(op.inputs)


def _weight_transform_ops(w):
    """The ops between the weights ``w`` (a placeholder) and the FftconvRfft2d ops that transform
    them, and those rfft2d ops: everything computed from ``w`` up to its transform."""
    return _walk_to(w, "FftconvRfft2d", _consumers)


def _weight_gradient_ops(dw):
    """The ops that compute ``dw`` from the FftconvIrfft2d ops that invert its spectrum, and those
    irfft2d ops."""
    return _walk_to(dw, "FftconvIrfft2d", _producer)


# (x shape NHWC, w shape, fft_conv2d options): one frame in each mode and layout, tiles, float16
# (the weight gain) and bfloat16 (float32 spectra between casts), sizes known only at run time.
NO_TRANSPOSE_CASES = {
    "keep": ((2, 12, 12, 3), (5, 5, 3, 4), {}),
    "keep_nchw": ((2, 12, 12, 3), (5, 5, 3, 4), {"data_format": "NCHW"}),
    "recompute": ((4, 12, 12, 3), (5, 5, 3, 4), {"memory_budget": 1}),
    "tiled": ((2, 30, 30, 3), (3, 3, 3, 4), {"fft_size": 16}),
    "float16": ((2, 12, 12, 3), (5, 5, 3, 4), {"dtype": tf.float16, "half_spectra": True}),
    "bfloat16_float32_spectra": ((2, 12, 12, 3), (5, 5, 3, 4),
                                 {"dtype": tf.bfloat16, "half_spectra": False}),
    "run_time_sizes": ((2, None, None, 3), (5, 5, 3, 4), {}),
}


@pytest.mark.parametrize("case", list(NO_TRANSPOSE_CASES))
def test_training_step_transposes_neither_weights_nor_weight_gradient(case):
    """The FFT path transforms w [kh, kw, Cin, Cout] as it lies (one NHWC image of Cin * Cout
    channels) and writes dw in that layout, so a traced training step has no Transpose between w
    and its rfft2d, nor between the irfft2d of dW and dw."""
    x_shape, w_shape, options = NO_TRANSPOSE_CASES[case]
    options = dict(options)
    dtype = options.pop("dtype", tf.float32)
    data_format = options.setdefault("data_format", "NHWC")
    if data_format == "NCHW":
        x_shape = (x_shape[0], x_shape[3], x_shape[1], x_shape[2])

    @tf.function(input_signature=[tf.TensorSpec(x_shape, dtype), tf.TensorSpec(w_shape, dtype)])
    def train_step(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = fc.fft_conv2d(x, w, "SAME", algorithm="fft", **options)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) ** 2)
        return tape.gradient(loss, [x, w])

    graph = train_step.get_concrete_function().graph
    w = graph.inputs[1]
    dw = graph.outputs[1]
    before_transform, transforms = _weight_transform_ops(w)
    after_inverse, inverses = _weight_gradient_ops(dw)
    # Not vacuous: the walks found the weights' transforms (the forward's, and the backward's
    # again in mode recompute) and the inverse that gives dw.
    assert len(transforms) == (2 if "memory_budget" in options else 1)
    assert len(inverses) == 1
    assert [op.name for op in before_transform if op.type == "Transpose"] == []
    assert [op.name for op in after_inverse if op.type == "Transpose"] == []
    # The spectrum of w and the inverse of dW' are NHWC: w and dw in their own layout.
    assert all(op.get_attr("data_format") == b"NHWC" for op in transforms | inverses)

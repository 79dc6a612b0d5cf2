"""A convolution's bias and activation taken into the FFT path (``fft_conv2d(..., bias=,
activation=)``, the layers): the two ops that apply them (``ops.irfft2d_bias_activation``,
``ops.rfft2d_activation_gradient``) against float64 NumPy and numerically differentiated; the
convolution with them against the float64 reference of tests/strided_reference.py, every gradient
(the bias's too) included, in every plan's form (one frame, tiles, pieces, strides, dilations,
groups, depthwise); that on a CPU the graph holds the fused ops and none of TensorFlow's bias and
activation ops, and under XLA the reverse; and the arguments' checks.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import np_reference as ref
import strided_reference as reference
import tf_fftconv as fc
from conftest import rel_error
from test_strided_grouped import spatial_case
from tf_fftconv import cost_model

TOLERANCE = {tf.float32: 2e-5, tf.float64: 1e-11}
FUSED_OPS = {"FftconvIrfft2dBiasActivation", "FftconvRfft2dActivationGradient"}
TF_EPILOGUE_OPS = {"BiasAdd", "BiasAddGrad", "Relu", "ReluGrad"}


# ---------------------------------------------------------------------------------------------
# The two ops.

@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_the_ops_match_numpy(rng, run, data_format, dtype, activation):
    for fft_size in (8, 12, 32):
        batch, channels = int(rng.integers(1, 20)), int(rng.integers(1, 9))
        height, width = int(rng.integers(1, fft_size + 1)), int(rng.integers(1, fft_size + 1))
        offset_h = int(rng.integers(0, fft_size - height + 1))
        offset_w = int(rng.integers(0, fft_size - width + 1))
        shape = ((batch, height, width, channels) if data_format == "NHWC"
                 else (batch, channels, height, width))
        spectrum = ref.random_complex(rng, (fft_size * (fft_size // 2 + 1), batch, channels))
        spectrum = spectrum.astype(np.complex64 if dtype == np.float32 else np.complex128)
        bias = rng.standard_normal(channels).astype(dtype)
        out = run(lambda s, b: fc.ops.irfft2d_bias_activation(
            s, b, fft_size, height, width, offset_h, offset_w, data_format, activation),
            tf.constant(spectrum), tf.constant(bias))
        z = (ref.irfft2d(spectrum, fft_size, height, width, offset_h, offset_w, data_format)
             + (bias if data_format == "NHWC" else bias[:, None, None]))
        expected = np.maximum(z, 0) if activation == "relu" else z
        tolerance = 2e-6 if dtype == np.float32 else 1e-12
        assert out.dtype == dtype and out.shape == expected.shape
        # Relative to z: after a ReLU, to ||relu(z)|| the same error in z can be larger
        # (np_reference.rel_error).
        assert rel_error(out, expected, z) <= tolerance
        dy, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
        out = run(lambda d, a: fc.ops.rfft2d_activation_gradient(
            d, a, fft_size, offset_h, offset_w, data_format, activation),
            tf.constant(dy), tf.constant(y))
        masked = np.where(y > 0, dy, 0) if activation == "relu" else dy
        expected = ref.rfft2d(masked, fft_size, offset_h, offset_w, data_format)
        assert rel_error(out, expected) <= tolerance


@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_the_ops_under_xla_are_the_same_functions(rng, device, activation):
    """XLA has no lowering of the two ops: under jit_compile their wrappers compose the same
    function from the three ops and TensorFlow's (bias_add, relu), which XLA fuses."""
    spectrum = tf.constant(ref.random_complex(rng, (8 * 5, 3, 4)).astype(np.complex64))
    bias = tf.constant(rng.standard_normal(4).astype(np.float32))
    dy = tf.constant(rng.standard_normal((3, 6, 7, 4)).astype(np.float32))

    def both(spectrum, bias, dy):
        y = fc.ops.irfft2d_bias_activation(spectrum, bias, 8, 6, 7, 1, 0, "NHWC", activation)
        return y, fc.ops.rfft2d_activation_gradient(dy, y, 8, 1, 0, "NHWC", activation)

    compiled = tf.function(both, jit_compile=True)
    graph = compiled.get_concrete_function(spectrum, bias, dy).graph
    assert not {op.type for op in graph.get_operations()} & FUSED_OPS
    for got, want in zip(compiled(spectrum, bias, dy), both(spectrum, bias, dy)):
        assert rel_error(got, want) <= 2e-6


def test_relu_keeps_nan_and_its_derivative_drops_it():
    """max(NaN, 0) is NaN, as tf.nn.relu gives it; where the output is NaN the derivative is 0,
    as ReluGrad takes it (y > 0 is false)."""
    spectrum = fc.ops.rfft2d(tf.constant([[[[np.nan]], [[-1.0]]]]), 2, 0, 0, "NCHW")
    y = fc.ops.irfft2d_bias_activation(spectrum, tf.zeros([2]), 2, 1, 1, 0, 0, "NCHW", "relu")
    assert np.isnan(y.numpy()[0, 0, 0, 0]) and y.numpy()[0, 1, 0, 0] == 0
    masked = fc.ops.rfft2d_activation_gradient(tf.ones([1, 2, 1, 1]), y, 2, 0, 0, "NCHW")
    np.testing.assert_array_equal(masked.numpy(), 0)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_the_ops_gradients_are_numerical(rng, data_format, activation):
    batch, height, width, channels, size = 2, 5, 6, 3, 8
    shape = ((batch, height, width, channels) if data_format == "NHWC"
             else (batch, channels, height, width))
    # The inverse's values at least 0.05 from ReLU's kink (|x| >= 0.1, |bias| <= 0.05), so that
    # no difference quotient steps across it.
    x = rng.standard_normal(shape)
    x = np.sign(x) * (0.1 + np.abs(x))
    spectrum = fc.ops.rfft2d(tf.constant(x), size, 1, 2, data_format)
    bias = tf.constant(rng.uniform(-0.05, 0.05, channels))

    def inverse(real, imag, bias):
        return fc.ops.irfft2d_bias_activation(tf.complex(real, imag), bias, size, height, width,
                                              1, 2, data_format, activation)

    theoretical, numerical = tf.test.compute_gradient(
        inverse, [tf.math.real(spectrum), tf.math.imag(spectrum), bias])
    for got, want in zip(theoretical, numerical):
        np.testing.assert_allclose(got, want, atol=1e-8)
    y = inverse(tf.math.real(spectrum), tf.math.imag(spectrum), bias)

    def transform(dy):
        spectrum = fc.ops.rfft2d_activation_gradient(dy, y, size, 1, 2, data_format, activation)
        return tf.concat([tf.math.real(spectrum), tf.math.imag(spectrum)], 0)

    theoretical, numerical = tf.test.compute_gradient(
        transform, [tf.constant(rng.standard_normal(shape))])
    np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-8)


def test_the_ops_refuse_bad_arguments():
    spectrum = fc.ops.rfft2d(tf.zeros([3, 7, 9, 5]), 16, 0, 0, "NHWC")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"bias must be \[channels\] = \[5\].*got shape \[3\]"):
        fc.ops.irfft2d_bias_activation(spectrum, tf.zeros([3]), 16, 7, 9, 0, 0, "NHWC", "relu")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"got shape \[5, 1\]"):
        fc.ops.irfft2d_bias_activation(spectrum, tf.zeros([5, 1]), 16, 7, 9, 0, 0, "NHWC")
    with pytest.raises(tf.errors.InvalidArgumentError, match="activation must be .*got 'gelu'"):
        fc.ops.irfft2d_bias_activation(spectrum, tf.zeros([5]), 16, 7, 9, 0, 0, "NHWC", "gelu")
    with pytest.raises(tf.errors.InvalidArgumentError, match="activation must be .*got 'tanh'"):
        fc.ops.rfft2d_activation_gradient(tf.zeros([3, 7, 9, 5]), tf.zeros([3, 7, 9, 5]), 16, 0,
                                          0, "NHWC", "tanh")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"y, the activation's output, must have dy's shape \[3, 7, 9, 5\], "
                             r"got \[3, 7, 9, 4\]"):
        fc.ops.rfft2d_activation_gradient(tf.zeros([3, 7, 9, 5]), tf.zeros([3, 7, 9, 4]), 16)
    # The op's own checks (the attribute as the kernel reads it), past the wrapper's.
    library = fc.load_library()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='activation must be "linear" or "relu", got "elu"'):
        library.fftconv_irfft2d_bias_activation(
            spectrum=spectrum, fft_size=16, out_h=7, out_w=9, bias=tf.zeros([5]),
            data_format="NHWC", activation="elu")
    # The shape function's, while tracing (TensorFlow reports it as a ValueError).
    with pytest.raises(ValueError, match=r"bias must be \[channels\] = \[5\]"):
        tf.function(lambda b: library.fftconv_irfft2d_bias_activation(
            spectrum=spectrum, fft_size=16, out_h=7, out_w=9, bias=b, data_format="NHWC"))(
                tf.zeros([2]))


# ---------------------------------------------------------------------------------------------
# The convolution with a bias and an activation.

def _check(case, rng, activation, dtype=tf.float32, jit=False, **options):
    """``fft_conv2d(x, w, bias=b, activation=...)`` and its three gradients against the float64
    reference: ``activation(conv(x, w) + b)``; the gradients through the activation taken where
    its derivative is what our output says (a value within rounding of ReLU's kink may fall on
    either side, both valid subgradients), that output checked against the reference first."""
    depthwise = case.get("depthwise", False)
    k_h, k_w, _, multiplier = case["w_shape"]
    out_channels = case["x_shape"][3] * multiplier if depthwise else multiplier
    x = rng.standard_normal(case["x_shape"])
    w = rng.standard_normal(case["w_shape"])
    bias = rng.standard_normal(out_channels)
    dy = rng.standard_normal(reference.output_shape(
        case["x_shape"], k_h, k_w, out_channels, case["strides"], case["padding"],
        case["dilations"]))

    def expected(x, w, dy):
        return reference.of_case(case, x, w, dy)

    nchw = case["data_format"] == "NCHW"
    to_layout = (lambda t: np.transpose(t, [0, 3, 1, 2])) if nchw else (lambda t: t)
    from_layout = (lambda t: np.transpose(t, [0, 2, 3, 1])) if nchw else (lambda t: t)
    conv = fc.fft_depthwise_conv2d if depthwise else fc.fft_conv2d
    arguments = dict(padding=case["padding"], data_format=case["data_format"],
                     strides=case["strides"], dilations=case["dilations"])

    def step(x, w, b, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = conv(x, w, bias=b, activation=activation, **arguments, **options)
        return (y,) + tuple(tape.gradient(y, [x, w, b], output_gradients=dy))

    if jit:
        step = tf.function(step, jit_compile=True)
    y, dx, dw, db = (t.numpy().astype(np.float64) for t in step(
        *(tf.constant(t, dtype) for t in (to_layout(x), w, bias, to_layout(dy)))))
    y = from_layout(y)
    z, _, _ = expected(x, w, dy)
    z = z + bias
    scale = np.max(np.abs(expected(np.abs(x), np.abs(w), np.abs(dy))[0]), initial=0) + np.max(
        np.abs(bias))
    want_y = np.maximum(z, 0) if activation == "relu" else z
    assert np.max(np.abs(y - want_y), initial=0) <= TOLERANCE[dtype] * scale, case
    g = np.where(y > 0, dy, 0) if activation == "relu" else dy
    _, want_dx, want_dw = expected(x, w, g)
    for name, got, want in (("dx", from_layout(dx), want_dx), ("dw", dw, want_dw),
                            ("db", db, g.sum(axis=(0, 1, 2)))):
        gradient_scale = max(np.max(np.abs(want), initial=0), np.max(np.abs(g), initial=0))
        assert got.shape == want.shape, (name, case)
        assert np.max(np.abs(got - want), initial=0) <= TOLERANCE[dtype] * max(
            gradient_scale, 1e-30) * 10, (name, case)


@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_matches_reference_in_every_form(rng, device, activation):
    for _ in range(8):
        _check(reference.random_case(rng), rng, activation, algorithm="fft")
    for _ in range(3):
        _check(dict(reference.random_case(rng, depthwise=True), depthwise=True), rng, activation,
               algorithm="fft")
    _check(reference.random_case(rng), rng, activation, tf.float64, algorithm="fft")


@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_tiled_and_recomputed(rng, device, activation):
    """Each tile's inverse takes the bias and activation, and the bias's gradient sums every
    tile's bin 0; in pieces, each piece's."""
    case = dict(x_shape=(3, 30, 27, 4), w_shape=(3, 2, 2, 6), strides=(2, 3), dilations=(3, 2),
                padding="SAME", groups=2, data_format="NHWC")
    _check(case, rng, activation, algorithm="fft", fft_size=16)
    _check(case, rng, activation, algorithm="fft", memory_budget=1)
    _check(dict(case, data_format="NCHW"), rng, activation, algorithm="fft", fft_size=16,
           memory_budget=1)


def test_spatial_auto_and_xla_match_reference(rng, device):
    """Spatial convolution on a case TensorFlow computes here (those it refuses, refused by the
    library: ``spatial_case``); auto and XLA on any case."""
    def spatial(case):
        return lambda x, w: fc.fft_conv2d(
            x, w, case["padding"], case["data_format"], strides=case["strides"],
            dilations=case["dilations"], algorithm="spatial", activation="relu",
            bias=tf.zeros([case["w_shape"][3]]))

    _check(spatial_case(lambda: reference.random_case(rng), spatial), rng, "relu",
           algorithm="spatial")
    _check(reference.random_case(rng), rng, "relu", algorithm="auto")
    _check(reference.random_case(rng), rng, "relu", jit=True, algorithm="fft")


def test_sizes_unknown_while_tracing(rng):
    """One frame sized at run time takes the bias and activation too."""
    x = rng.standard_normal((2, 11, 9, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    conv = tf.function(lambda x: fc.fft_conv2d(x, w, "SAME", algorithm="fft", bias=bias,
                                               activation="relu"),
                       input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32)])
    expected = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME") + bias)
    np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)


def test_second_order_gradients_eagerly(rng):
    """The gradient of a gradient through the fused ReLU (eagerly, where the backward pass is
    derived again from x and w): tf.nn.conv2d's, in float64."""
    x = tf.constant(rng.standard_normal((2, 9, 9, 2)))
    w = tf.constant(rng.standard_normal((3, 3, 2, 3)))
    bias = tf.constant(rng.standard_normal(3))

    def second(conv):
        with tf.GradientTape() as outer:
            outer.watch([x, w])
            with tf.GradientTape() as inner:
                inner.watch([x, w, bias])
                loss = tf.reduce_sum(conv() ** 2)
            dx, dw, db = inner.gradient(loss, [x, w, bias])
            norm = tf.reduce_sum(dx ** 2) + tf.reduce_sum(dw ** 2) + tf.reduce_sum(db ** 2)
        return outer.gradient(norm, [x, w])

    ours = second(lambda: fc.fft_conv2d(x, w, "SAME", algorithm="fft", bias=bias,
                                        activation="relu"))
    theirs = second(lambda: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), bias)))
    for got, want in zip(ours, theirs):
        assert rel_error(got, want) <= 1e-10


# ---------------------------------------------------------------------------------------------
# Which ops run.

def _op_types(function, *args):
    graph = tf.function(function, autograph=False).get_concrete_function(*args).graph
    return {op.type for op in graph.get_operations()}


def _train_step(conv, x, w, bias):
    with tf.GradientTape() as tape:
        tape.watch([x, w, bias])
        loss = tf.reduce_sum(conv(x, w, bias) ** 2)
    return tape.gradient(loss, [x, w, bias])


@pytest.mark.parametrize("memory_budget", [None, 1])
def test_the_cpu_runs_the_fused_ops_and_no_bias_or_relu(memory_budget):
    x, w, bias = tf.zeros([2, 12, 12, 3]), tf.zeros([3, 3, 3, 4]), tf.zeros([4])
    with tf.device("/CPU:0"):
        types = _op_types(lambda x, w, b: _train_step(
            lambda x, w, b: fc.fft_conv2d(x, w, algorithm="fft", bias=b, activation="relu",
                                          memory_budget=memory_budget), x, w, b), x, w, bias)
    assert FUSED_OPS <= types
    assert not types & TF_EPILOGUE_OPS, types & TF_EPILOGUE_OPS
    # The bias alone: the inverse adds it, and dy's transform is the plain one.
    with tf.device("/CPU:0"):
        types = _op_types(lambda x, w, b: _train_step(
            lambda x, w, b: fc.fft_conv2d(x, w, algorithm="fft", bias=b), x, w, b), x, w, bias)
    assert "FftconvIrfft2dBiasActivation" in types
    assert "FftconvRfft2dActivationGradient" not in types
    assert not types & TF_EPILOGUE_OPS


def test_xla_and_the_spatial_path_take_tensorflows_bias_and_relu():
    """Under XLA (which fuses them itself) and on the spatial path (where tf.nn.conv2d fuses
    them), the bias and activation are tf.nn.bias_add and tf.nn.relu."""
    x, w, bias = tf.zeros([2, 12, 12, 3]), tf.zeros([3, 3, 3, 4]), tf.zeros([4])
    for algorithm, jit in (("fft", True), ("spatial", False)):
        def step(x, w, b, algorithm=algorithm):
            return _train_step(lambda x, w, b: fc.fft_conv2d(
                x, w, algorithm=algorithm, bias=b, activation="relu"), x, w, b)
        graph = tf.function(step, jit_compile=jit, autograph=False).get_concrete_function(
            x, w, bias).graph
        types = {op.type for op in graph.get_operations()}
        assert not types & FUSED_OPS, (algorithm, types & FUSED_OPS)
        assert {"BiasAdd", "Relu"} <= types, algorithm


def test_fuses_only_on_a_cpu_outside_xla():
    problem = fc.planning.make_problem([8, 12, 12, 3], [3, 3, 3, 4], device="CPU")
    assert cost_model.fuses_epilogue(problem)
    assert not cost_model.fuses_epilogue(fc.planning.make_problem(
        [8, 12, 12, 3], [3, 3, 3, 4], device="CPU", compiled=True))
    assert not cost_model.fuses_epilogue(fc.planning.make_problem(
        [8, 12, 12, 3], [3, 3, 3, 4], device="GPU"))


@pytest.mark.parametrize("layer_kind", ["conv", "depthwise"])
def test_layers_hand_their_bias_and_relu_to_the_fft_path(rng, layer_kind):
    """FFTConv2D and FFTDepthwiseConv2D with a ReLU, on the CPU: their traced train step holds
    the fused ops and none of TensorFlow's bias and activation ops, and computes what their Keras
    twins compute (outputs and every weight's gradient)."""
    if layer_kind == "conv":
        ours = fc.FFTConv2D(5, 3, activation="relu", algorithm="fft",
                            bias_initializer="random_normal")
        twin = keras.layers.Conv2D(5, 3, activation="relu")
    else:
        ours = fc.FFTDepthwiseConv2D(3, depth_multiplier=2, activation="relu", algorithm="fft",
                                     bias_initializer="random_normal")
        twin = keras.layers.DepthwiseConv2D(3, depth_multiplier=2, activation="relu")
    x = tf.constant(rng.standard_normal((4, 10, 10, 3)).astype(np.float32))
    ours.build(x.shape)
    twin.build(x.shape)
    twin.set_weights(ours.get_weights())

    def step(layer, x):
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, layer.trainable_variables)

    with tf.device("/CPU:0"):
        graph = tf.function(lambda x: step(ours, x)).get_concrete_function(x).graph
        types = {op.type for op in graph.get_operations()}
        assert FUSED_OPS <= types and not types & TF_EPILOGUE_OPS, types & TF_EPILOGUE_OPS
        for got, want in zip(step(ours, x), step(twin, x)):
            assert rel_error(got, want) <= 2e-5


def test_other_activations_follow_the_fused_bias(rng):
    """An activation the ops do not take (tanh) is Keras' own, after the bias the inverse adds."""
    layer = fc.FFTConv2D(4, 3, activation="tanh", algorithm="fft",
                         bias_initializer="random_normal")
    twin = keras.layers.Conv2D(4, 3, activation="tanh")
    x = tf.constant(rng.standard_normal((2, 9, 9, 2)).astype(np.float32))
    layer.build(x.shape)
    twin.build(x.shape)
    twin.set_weights(layer.get_weights())
    with tf.device("/CPU:0"):
        types = _op_types(lambda x: layer(x), x)
        assert "FftconvIrfft2dBiasActivation" in types and "Tanh" in types
        assert rel_error(layer(x), twin(x)) <= 2e-5


def test_fft_conv2d_refuses_bad_bias_and_activation():
    x, w = tf.zeros([2, 8, 8, 3]), tf.zeros([3, 3, 3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"bias must be \[out_channels\] = \[4\], got shape \(3,\)"):
        fc.fft_conv2d(x, w, bias=tf.zeros([3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bias must have x's dtype float32, "
                                                             "got float64"):
        fc.fft_conv2d(x, w, bias=tf.zeros([4], tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="activation must be None, .*got 'elu'"):
        fc.fft_conv2d(x, w, activation="elu")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"bias must be \[out_channels\] = \[6\]"):
        fc.fft_depthwise_conv2d(x, tf.zeros([3, 3, 3, 2]), bias=tf.zeros([3]))

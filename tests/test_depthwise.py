"""fft_depthwise_conv2d and FFTDepthwiseConv2D: tf.nn.depthwise_conv2d (channel multiplier,
strides, dilations) against a float64 NumPy reference written from the definition
(tests/strided_reference.py), gradients included, eagerly and under XLA; the Keras layer against
keras.layers.DepthwiseConv2D with the same weights.

The combinations are drawn afresh each run (the seed is printed), a fixed number per test.
"""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import strided_reference as reference
import tf_fftconv as fc
from test_strided_grouped import (
    check_case, check_drop_in, spatial_case, spatial_refusal)
from tf_fftconv import device as device_facts
from tf_fftconv import planning


def _depthwise(case, rng, **options):
    strides = reference.argument_form(rng, case["strides"], case["data_format"])
    dilations = reference.argument_form(rng, case["dilations"], case["data_format"])
    return lambda x, w: fc.fft_depthwise_conv2d(x, w, strides, case["padding"], dilations,
                                                case["data_format"], **options)


def _case(rng):
    return dict(reference.random_case(rng, depthwise=True), depthwise=True)


def test_fft_path_matches_reference(rng, device):
    for _ in range(16):
        case = _case(rng)
        check_case(case, rng, _depthwise(case, rng, algorithm="fft"))


def test_float64_and_half(rng, device):
    for dtype in (tf.float64, tf.float16):
        case = _case(rng)
        check_case(case, rng, _depthwise(case, rng, algorithm="fft"), dtype)
    _check_bfloat16(_case(rng), rng)


def _check_bfloat16(case, rng):
    """bfloat16 keeps 8 bits: the output against the float32 FFT path's, not the reference, as a
    share of the output's scale (at least its largest input times its largest weight, as
    check_case's: a dilated kernel whose taps all fall in the padding makes an output of zeros,
    and the two paths' rounding noise then differs by more than itself)."""
    x = tf.constant(rng.standard_normal(case["x_shape"]), tf.float32)
    if case["data_format"] == "NCHW":
        x = tf.transpose(x, [0, 3, 1, 2])
    w = tf.constant(rng.standard_normal(case["w_shape"]), tf.float32)
    conv = _depthwise(case, rng, algorithm="fft")
    wide = conv(x, w).numpy()
    narrow = conv(tf.cast(x, tf.bfloat16), tf.cast(w, tf.bfloat16))
    assert narrow.dtype == tf.bfloat16
    scale = max(np.abs(wide).max(), np.abs(x.numpy()).max() * np.abs(w.numpy()).max())
    error = np.max(np.abs(narrow.numpy().astype(np.float64) - wide)) / scale
    assert error < 3e-2, (error, case)


def test_spatial_and_auto_match_reference(rng, device):
    """Spatial convolution on cases TensorFlow computes here (those it refuses, refused by the
    library: ``spatial_case``); auto on any case."""
    for algorithm in ("spatial", "auto") * 3:
        case = _case(rng) if algorithm == "auto" else spatial_case(
            lambda: _case(rng), lambda case: _depthwise(case, rng, algorithm="spatial"))
        check_case(case, rng, _depthwise(case, rng, algorithm=algorithm))


def test_spatial_path_with_unequal_strides(rng, device):
    """tf.nn.depthwise_conv2d's GPU kernel refuses unequal strides; the spatial path takes a
    grouped tf.nn.conv2d there. The CPU's depthwise kernel takes them with oneDNN; without it,
    TensorFlow refuses them, and so does the library, at the call."""
    for strides in ((1, 2), (3, 2)):
        case = dict(x_shape=(2, 13, 11, 3), w_shape=(3, 3, 3, 2), strides=strides,
                    dilations=(1, 1), padding="SAME", groups=3, data_format="NHWC",
                    depthwise=True)
        conv = lambda x, w, strides=strides: fc.fft_depthwise_conv2d(  # noqa: E731
            x, w, strides=list(strides), padding="SAME", algorithm="spatial")
        if spatial_refusal(case) is None:
            check_case(case, rng, conv)
            continue
        assert device == "/CPU:0" and not device_facts.onednn_enabled()
        with pytest.raises(tf.errors.InvalidArgumentError, match=(
                r'algorithm="spatial" cannot compute .*with unequal strides .*"Current '
                r'implementation only supports equal length strides.*Use algorithm="fft"')):
            conv(tf.zeros(case["x_shape"]), tf.zeros(case["w_shape"]))


def test_under_xla(rng, device):
    for algorithm in ("fft", "fft", "fft", "auto"):
        case = _case(rng)
        check_case(case, rng, _depthwise(case, rng, algorithm=algorithm), jit=True)


def test_tiled_large_kernel(rng, device):
    """A 31x31 depthwise kernel on an image the largest frame cannot hold: tiles."""
    case = dict(x_shape=(1, 130, 40, 3), w_shape=(31, 31, 3, 2), strides=(1, 1),
                dilations=(1, 1), padding="SAME", groups=3, data_format="NHWC", depthwise=True)
    check_case(case, rng, lambda x, w: fc.fft_depthwise_conv2d(x, w, algorithm="fft"))


def test_product_is_per_channel_not_matmul():
    """The FFT path's graph has no spectral matmul: each bin's product is elementwise."""
    graph = tf.function(lambda x, w: fc.fft_depthwise_conv2d(x, w, algorithm="fft")
                        ).get_concrete_function(tf.TensorSpec([2, 16, 16, 4]),
                                                tf.TensorSpec([5, 5, 4, 2])).graph
    types = {op.type for op in graph.get_operations()}
    assert "FftconvRfft2d" in types and "FftconvIrfft2d" in types
    assert "FftconvSpectralMatmul" not in types


def test_explain_says_depthwise():
    text = fc.explain([64, 56, 56, 128], [31, 31, 128, 1], padding="SAME", depthwise=True,
                      device="GPU")
    assert text.startswith("fft_depthwise_conv2d: ")
    assert "depthwise (128 channels, multiplier 1): per bin a complex multiply per channel" in text


@pytest.mark.parametrize("arguments, message", [
    (dict(strides=[1, 2, 2]), r"strides must be an integer or a list of 1, 2 or 4 integers, "
                              r"got \[1, 2, 2\]"),
    (dict(dilations=0), "dilations must be >= 1, got 0"),
    (dict(w_shape=(3, 3, 3, 2)), r"x has 4 channels but the depthwise filters are "
                                 r"\[3, 3, 3, 2\]"),
    (dict(padding="FULL"), "padding must be \"VALID\" or \"SAME\", got 'FULL'"),
    (dict(algorithm="direct"), "algorithm must be one of"),
])
def test_invalid_arguments_are_named(arguments, message):
    arguments = dict(arguments)
    w_shape = arguments.pop("w_shape", (3, 3, 4, 2))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fc.fft_depthwise_conv2d(tf.zeros([1, 9, 9, 4]), tf.zeros(w_shape), **arguments)


def test_no_channels():
    """No channels or a multiplier of 0: an empty output, as tf.nn.depthwise_conv2d's shape."""
    y = fc.fft_depthwise_conv2d(tf.zeros([2, 9, 9, 0]), tf.zeros([3, 3, 0, 2]), [1, 2, 2, 1])
    assert y.shape == (2, 5, 5, 0)
    y = fc.fft_depthwise_conv2d(tf.zeros([2, 9, 9, 3]), tf.zeros([3, 3, 3, 0]), 2, "VALID")
    assert y.shape == (2, 4, 4, 0)


@pytest.mark.parametrize("options", [
    dict(), dict(depth_multiplier=3, padding="same"), dict(strides=(2, 3)),
    dict(dilation_rate=(3, 2), padding="same"), dict(strides=2, dilation_rate=2, padding="same"),
    dict(data_format="channels_first", depth_multiplier=2, strides=2)])
def test_layer_is_a_drop_in(rng, options):
    """FFTDepthwiseConv2D against DepthwiseConv2D: the weights move both ways with set_weights,
    the outputs and the kernel's gradients agree, and the config round-trips."""
    channels_first = options.get("data_format") == "channels_first"
    x = tf.constant(rng.standard_normal((2, 5, 21, 18) if channels_first else (2, 21, 18, 5)),
                    tf.float32)
    try:
        theirs = keras.layers.DepthwiseConv2D(5, **options)
    except ValueError as refusal:
        # Keras before 3.14 refuses strides with dilations in DepthwiseConv2D; a drop-in refuses
        # what its base refuses, with the same message.
        with pytest.raises(ValueError, match=re.escape(str(refusal))):
            fc.FFTDepthwiseConv2D(5, algorithm="fft", **options)
        pytest.skip(f"this Keras ({keras.__version__}) refuses {options}: {refusal}")
    ours = fc.FFTDepthwiseConv2D(5, algorithm="fft", **options)
    if _keras_twin_refused(theirs, x, options):
        _check_layer_against_reference(rng, ours, x, options)
        return
    theirs_call = None
    if channels_first:
        # TensorFlow's CPU depthwise convolution takes NHWC only: Keras' layer (its weights are
        # the same in both formats) runs on the transposed input.
        theirs = keras.layers.DepthwiseConv2D(5, **dict(options, data_format="channels_last"))
        theirs.build((2, 21, 18, 5))

        def theirs_call(t):
            return tf.transpose(theirs(tf.transpose(t, [0, 2, 3, 1])), [0, 3, 1, 2])

    check_drop_in(rng, ours, theirs, x, theirs_call)


def _pair(value):
    """A Keras layer's strides or dilation_rate (an int or a pair) as a pair."""
    return (value, value) if isinstance(value, int) else tuple(value)


def _keras_twin_refused(theirs, x, options):
    """Whether TensorFlow refuses Keras' DepthwiseConv2D with ``options`` here: unequal strides
    in tf.nn.depthwise_conv2d on a CPU without oneDNN (``planning.UNEQUAL_STRIDES_REFUSED``),
    checked to raise TensorFlow's error."""
    strides = _pair(options.get("strides", 1))
    if device_facts.onednn_enabled() or strides[0] == strides[1]:
        return False
    with pytest.raises(tf.errors.InvalidArgumentError, match="only supports equal length strides"):
        theirs(x)
    return True


def _check_layer_against_reference(rng, ours, x, options):
    """``ours`` (NHWC) with fresh weights against the float64 reference: the output and the
    kernel's and bias' gradients; the config round-trips."""
    ours.build(x.shape)
    kernel, bias = (rng.standard_normal(v.shape) for v in ours.get_weights())
    ours.set_weights([kernel, bias])
    strides = _pair(options.get("strides", 1))
    dilations = _pair(options.get("dilation_rate", 1))
    padding = options.get("padding", "valid").upper()
    with tf.GradientTape() as tape:
        y = ours(x)
    dy = rng.standard_normal(y.shape)
    dw, db = tape.gradient(y, [ours.kernel, ours.bias], output_gradients=tf.constant(dy, y.dtype))
    want_y, _, want_dw = reference.depthwise_conv2d(x.numpy(), kernel, dy, strides, padding,
                                                    dilations)
    np.testing.assert_allclose(y, want_y + bias, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 1, 2)), rtol=1e-4, atol=1e-4)
    restored = type(ours).from_config(ours.get_config())
    assert restored.get_config() == ours.get_config()


def test_layer_saves_and_loads(tmp_path, rng):
    """Registered for serialization as FFTConv2D is: a saved model loads with the layer."""
    model = keras.Sequential([keras.Input((12, 12, 3)),
                              fc.FFTDepthwiseConv2D(3, depth_multiplier=2, strides=2,
                                                    padding="same")])
    x = rng.standard_normal((2, 12, 12, 3)).astype(np.float32)
    path = str(tmp_path / "depthwise.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.layers[0], fc.FFTDepthwiseConv2D)
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6, atol=1e-6)


def test_layer_mixed_precision(rng):
    """Under mixed_float16 the kernel stays float32 and the output is float16, as
    DepthwiseConv2D's."""
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        ours = fc.FFTDepthwiseConv2D(3, depth_multiplier=2, algorithm="fft", padding="same")
        theirs = keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same")
        x = rng.standard_normal((2, 10, 10, 4)).astype(np.float32)
        theirs.build(x.shape)
        ours.build(x.shape)
        ours.set_weights(theirs.get_weights())
        y_ours, y_theirs = ours(x), theirs(x)
    finally:
        keras.config.set_dtype_policy(policy)
    assert ours.kernel.dtype == "float32" and y_ours.dtype == y_theirs.dtype == tf.float16
    np.testing.assert_allclose(np.asarray(y_ours, np.float32), np.asarray(y_theirs, np.float32),
                               rtol=1e-2, atol=1e-2)


def test_model_trains_as_its_keras_twin_under_xla(rng):
    """A model of a strided grouped FFTConv2D, a dilated FFTDepthwiseConv2D and a strided one,
    compiled with jit_compile=True, takes the same SGD step as its twin of Keras' layers with the
    same weights (the FFT path forced, so the ops are what XLA compiles). tanh, not ReLU: a ReLU
    input within rounding of 0 can take either side in the two models, and the weights are
    compared entry by entry."""
    def model(conv, depthwise, **fft):
        return keras.Sequential([
            keras.Input((20, 20, 4)),
            conv(8, 3, strides=2, groups=2, padding="same", activation="tanh", **fft),
            depthwise(5, dilation_rate=2, depth_multiplier=2, padding="same", **fft),
            depthwise(3, strides=2, padding="valid", **fft),
            keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3)])

    ours = model(fc.FFTConv2D, fc.FFTDepthwiseConv2D, algorithm="fft")
    theirs = model(keras.layers.Conv2D, keras.layers.DepthwiseConv2D)
    theirs.set_weights([rng.standard_normal(w.shape) * 0.3 for w in theirs.get_weights()])
    ours.set_weights(theirs.get_weights())
    x = rng.standard_normal((6, 20, 20, 4)).astype(np.float32)
    y = rng.integers(0, 3, 6)
    losses = []
    for net, jit in ((ours, True), (theirs, False)):
        net.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(
            from_logits=True), jit_compile=jit)
        losses.append(net.train_on_batch(x, y))
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

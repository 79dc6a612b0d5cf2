"""FFTConv2D against its keras.layers.Conv2D twin holding the same weights."""

import json

import keras
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv
from conftest import assert_ran, followed_plans, rel_error
from tf_fftconv.layers import FFTConv2D


# Relative error of a float64 layer against its Conv2D twin: float64 rounding (about 1e-16) times
# the transforms' few hundred operations per value, with room; a float32 computation inside
# would give about 1e-7.
FLOAT64 = 1e-11


def _twins(rng, padding, data_format, kernel_size, in_channels, filters, dtype="float64",
           fft_size=None, algorithm="fft", **kwargs):
    """An FFTConv2D (the FFT path unless told) and a channels_last Conv2D (TF's CPU conv is NHWC
    only) with equal weights."""
    fft = FFTConv2D(filters, kernel_size, padding=padding, data_format=data_format, dtype=dtype,
                    fft_size=fft_size, algorithm=algorithm, **kwargs)
    spatial = keras.layers.Conv2D(filters, kernel_size, padding=padding,
                                  data_format="channels_last", dtype=dtype, **kwargs)
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    fft_shape = (None, in_channels, 11, 11) if data_format == "channels_first" else (
        None, 11, 11, in_channels)
    fft.build(fft_shape)
    spatial.build((None, 11, 11, in_channels))
    weights = [rng.standard_normal((kh, kw, in_channels, filters))]
    if kwargs.get("use_bias", True):
        weights.append(rng.standard_normal(filters))
    spatial.set_weights(weights)
    fft.set_weights(spatial.get_weights())  # same layout: moved unchanged
    return fft, spatial


def _to_nhwc(t, data_format):
    return t if data_format == "channels_last" else np.transpose(t, (0, 2, 3, 1))


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("padding", ["valid", "same"])
@pytest.mark.parametrize("kernel_size,height,width", [(3, 9, 7), ((5, 2), 12, 10), (1, 4, 6)])
def test_matches_conv2d_outputs_and_gradients(rng, run, padding, data_format, kernel_size,
                                              height, width):
    fft, spatial = _twins(rng, padding, data_format, kernel_size, in_channels=3, filters=4)
    x_nhwc = rng.standard_normal((2, height, width, 3))
    x = x_nhwc if data_format == "channels_last" else np.transpose(x_nhwc, (0, 3, 1, 2))
    out_shape = spatial.compute_output_shape(x_nhwc.shape)
    cotangent = rng.standard_normal(out_shape)

    def forward_and_grads(layer, inputs, to_nhwc):
        inputs = tf.convert_to_tensor(inputs)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = layer(inputs)
            loss = tf.reduce_sum(to_nhwc(y) * cotangent)
        return [y] + tape.gradient(loss, [inputs] + layer.trainable_variables)

    to_nhwc = (lambda t: t) if data_format == "channels_last" else (
        lambda t: tf.transpose(t, [0, 2, 3, 1]))
    got = run(lambda t: forward_and_grads(fft, t, to_nhwc), x)
    want = run(lambda t: forward_and_grads(spatial, t, lambda y: y), x_nhwc)
    assert got[0].dtype == np.float64
    assert_ran(fft, "fft")
    assert rel_error(_to_nhwc(got[0], data_format), want[0]) <= FLOAT64  # outputs
    assert rel_error(_to_nhwc(got[1], data_format), want[1]) <= FLOAT64  # d input
    assert rel_error(got[2], want[2]) <= FLOAT64  # d kernel
    assert rel_error(got[3], want[3]) <= FLOAT64  # d bias


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_input_without_channels_gives_the_bias(rng, run, data_format):
    """An input with no channels: the convolution is zeros, so the output is the bias; the input
    and kernel gradients are empty and the bias gradient sums the cotangent, as tf.nn.conv2d gives
    them (computed with a channel of zeros more, which Conv2D's own call cannot do). No output
    channels is Keras' to refuse: Conv2D takes no filters=0, and so neither does FFTConv2D."""
    from test_conv import conv2d_with_a_zero_channel  # noqa: PLC0415

    with pytest.raises(ValueError, match="filters"):
        FFTConv2D(0, 3)

    layer = FFTConv2D(4, 3, padding="same", data_format=data_format, dtype="float64",
                      bias_initializer="random_normal")
    x = rng.standard_normal((2, 6, 5, 0) if data_format == "channels_last" else (2, 0, 6, 5))
    layer.build(x.shape)
    dy = rng.standard_normal(layer.compute_output_shape(x.shape))

    def forward_and_grads(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = layer(inputs)
            loss = tf.reduce_sum(y * dy)
        return [y] + tape.gradient(loss, [inputs, layer.kernel, layer.bias])

    y, dx, d_kernel, d_bias = run(forward_and_grads, tf.constant(x))
    nhwc = data_format == "channels_last"
    conv, want_dx, want_d_kernel = conv2d_with_a_zero_channel(
        x, layer.kernel.numpy(), dy, "SAME", "NHWC" if nhwc else "NCHW")
    bias = layer.bias.numpy().reshape((1, 1, 1, 4) if nhwc else (1, 4, 1, 1))
    for got, want in [(y, conv + bias), (dx, want_dx), (d_kernel, want_d_kernel)]:
        assert got.shape == want.shape and np.array_equal(got, want)
    assert np.allclose(d_bias, dy.sum(axis=(0, 1, 2) if nhwc else (0, 2, 3)), rtol=1e-12)


def test_float32_matches_conv2d(rng):
    fft, spatial = _twins(rng, "same", "channels_last", 5, in_channels=6, filters=16,
                          dtype="float32", activation="relu")
    x = rng.standard_normal((8, 14, 14, 6)).astype(np.float32)
    y = fft(x)
    assert y.dtype == tf.float32
    assert rel_error(y, spatial(x)) <= 1e-5
    assert_ran(fft, "fft")


def test_dynamic_batch_in_function(rng):
    fft, spatial = _twins(rng, "valid", "channels_last", 3, in_channels=2, filters=3)
    fn = tf.function(fft, input_signature=[tf.TensorSpec([None, 8, 8, 2], tf.float64)])
    for batch in (1, 5):
        x = rng.standard_normal((batch, 8, 8, 2))
        assert rel_error(fn(x), spatial(x)) <= FLOAT64
    assert_ran(fft, "fft")


def test_weights_have_conv2d_layout_and_order(rng):
    fft, spatial = _twins(rng, "valid", "channels_last", (3, 5), in_channels=2, filters=7)
    assert [w.shape for w in fft.weights] == [w.shape for w in spatial.weights]
    assert [w.name for w in fft.weights] == ["kernel", "bias"]
    assert fft.kernel.shape == (3, 5, 2, 7)
    for a, b in zip(fft.get_weights(), spatial.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs,match", [
    ({"fft_size": 0}, r"fft_size must be None or a positive integer"),
    ({"fft_size": 32.0}, r"fft_size must be None or a positive integer"),
    ({"fft_size": np.float32(32)}, r"fft_size must be None or a positive integer"),
    ({"fft_size": True}, r"fft_size must be None or a positive integer"),
    ({"fft_size": np.int64(-32)}, r"fft_size must be None or a positive integer"),
    ({"tile": 0}, r"tile must be None or a positive integer"),
    ({"tile": 2.5}, r"tile must be None or a positive integer"),
    ({"algorithm": "winograd"}, r"algorithm must be one of auto, fft, spatial, got 'winograd'"),
    ({"algorithm": "spatial", "fft_size": 16}, r"fft_size and tile set the FFT path"),
    ({"memory_budget": -1}, r"memory_budget must be a positive number of bytes"),
    ({"memory_budget": "lots"}, r"memory_budget must be a number of bytes such as"),
])
def test_refuses_unsupported_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FFTConv2D(4, 3, **kwargs)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_compute_output_shape_matches_conv2d(padding, data_format):
    shape = (None, 3, 13, 9) if data_format == "channels_first" else (None, 13, 9, 3)
    fft = FFTConv2D(5, (4, 3), padding=padding, data_format=data_format)
    spatial = keras.layers.Conv2D(5, (4, 3), padding=padding, data_format=data_format)
    assert fft.compute_output_shape(shape) == spatial.compute_output_shape(shape)
    symbolic = fft(keras.Input(batch_shape=shape))
    assert tuple(symbolic.shape) == spatial.compute_output_shape(shape)


def test_default_data_format_follows_keras_config():
    assert FFTConv2D(2, 3).data_format == keras.config.image_data_format()


def test_config_round_trip():
    layer = FFTConv2D(
        8, (3, 5), padding="same", data_format="channels_first", activation="tanh",
        use_bias=True, kernel_initializer="he_normal", bias_initializer="ones",
        kernel_regularizer=keras.regularizers.L2(0.01), bias_regularizer="l1",
        activity_regularizer=keras.regularizers.L1(0.001),
        kernel_constraint=keras.constraints.MaxNorm(2.0), bias_constraint="non_neg",
        fft_size=32, algorithm="fft", tile=12, memory_budget="512M", name="spectral")
    config = layer.get_config()
    conv2d_keys = set(keras.layers.Conv2D(8, 3).get_config())
    assert conv2d_keys <= set(config)
    assert (config["fft_size"], config["algorithm"], config["tile"], config["memory_budget"]) == (
        32, "fft", 12, "512M")
    json.dumps(config)  # JSON as it is
    clone = FFTConv2D.from_config(config)
    assert clone.get_config() == config
    assert clone.supports_jit

    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "tf_fftconv>FFTConv2D"
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is FFTConv2D
    assert restored.get_config() == config


def test_regularizers_match_conv2d(rng):
    """float32 twins: Keras 3.0 to 3.13 multiply L1's float32 factor into a float64 weight's sum
    without a cast (keras/src/regularizers/regularizers.py, L1.__call__), which fails in Keras
    itself for Conv2D as for FFTConv2D."""
    kwargs = dict(kernel_regularizer=keras.regularizers.L2(0.1), bias_regularizer="l1",
                  activity_regularizer=keras.regularizers.L2(0.01))
    fft, spatial = _twins(rng, "same", "channels_last", 3, in_channels=2, filters=3,
                          dtype="float32", **kwargs)
    x = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)
    fft(x), spatial(x)
    assert_ran(fft, "fft")
    assert len(fft.losses) == len(spatial.losses) == 3
    # Weight penalties, the same weights: equal; the activity penalty, of the outputs: float32.
    np.testing.assert_allclose(sorted(float(l) for l in fft.losses),
                               sorted(float(l) for l in spatial.losses), rtol=1e-6)
    assert all(float(l) > 0 for l in fft.losses)


def test_constraint_applied_by_optimizer(rng):
    layer = FFTConv2D(3, 3, kernel_constraint=keras.constraints.NonNeg(), dtype="float64",
                      algorithm="fft")
    x = tf.constant(rng.standard_normal((2, 6, 6, 2)))
    layer.build(x.shape)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    grads = tape.gradient(loss, layer.trainable_variables)
    keras.optimizers.SGD(10.0).apply(grads, layer.trainable_variables)
    assert_ran(layer, "fft")
    assert np.all(layer.kernel.numpy() >= 0)


@pytest.mark.parametrize("fft_size", [np.int64(32), np.int32(32), np.uint8(32)])
def test_fft_size_accepts_numpy_integers(fft_size, rng):
    layer = FFTConv2D(2, 3, fft_size=fft_size)
    assert layer.fft_size == 32 and type(layer.fft_size) is int
    assert json.loads(json.dumps(layer.get_config()))["fft_size"] == 32
    assert layer(rng.standard_normal((1, 8, 8, 1)).astype(np.float32)).shape == (1, 6, 6, 2)
    assert [p.config.tiles.fft_size for p in followed_plans(layer)] == [32]


def test_fft_size_is_passed_through(rng):
    fft, spatial = _twins(rng, "same", "channels_last", 3, in_channels=2, filters=3,
                          fft_size=64)
    x = rng.standard_normal((2, 10, 10, 2))
    assert rel_error(fft(x), spatial(x)) <= FLOAT64
    assert [p.config.tiles.fft_size for p in followed_plans(fft)] == [64]
    tiled, spatial = _twins(rng, "same", "channels_last", 3, in_channels=2, filters=3,
                            fft_size=8)
    assert rel_error(tiled(x), spatial(x)) <= FLOAT64
    assert [p.config.tiles.fft_size for p in followed_plans(tiled)] == [8]
    assert "2x2 tiles of 5x5 outputs per image, each in a 8x8 frame" in tf_fftconv.explain(tiled)
    too_small = FFTConv2D(3, 9, padding="same", fft_size=8, dtype="float64")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="fft_size 8 is too small for kernel 9x9"):
        too_small(x)


def test_auto_resolves_to_xla_as_for_conv2d(monkeypatch):
    """jit_compile="auto" picks XLA on a GPU for a model holding FFTConv2D, as for Conv2D."""
    def model(conv_layer):
        inputs = keras.Input((8, 8, 1))
        x = conv_layer(2, 3)(inputs)
        return keras.Model(inputs, keras.layers.Flatten()(x))

    fft_model, spatial_model = model(FFTConv2D), model(keras.layers.Conv2D)
    assert FFTConv2D(2, 3).supports_jit
    if not hasattr(fft_model, "_resolve_auto_jit_compile"):
        pytest.skip("this Keras resolves jit_compile='auto' elsewhere")
    # Pretend a GPU is present, which is when "auto" turns XLA on.
    real = tf.config.list_physical_devices
    fake_gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda device_type=None: real(device_type) + (
                            [fake_gpu] if device_type in (None, "GPU") else []))
    assert spatial_model._resolve_auto_jit_compile() is True
    assert fft_model._resolve_auto_jit_compile() is True


def test_fit_with_default_compile(rng):
    """model.compile with Keras' defaults (jit_compile="auto") trains on the CPU."""
    keras.utils.set_random_seed(1)
    inputs = keras.Input((8, 8, 1))
    x = FFTConv2D(4, 3, padding="same", activation="relu", algorithm="fft")(inputs)
    x = FFTConv2D(4, 3, algorithm="fft")(x)
    outputs = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = rng.integers(0, 2, 256)
    images = rng.standard_normal((256, 8, 8, 1)).astype(np.float32) + 2.0 * labels[:, None, None, None]
    history = model.fit(images, labels, epochs=5, batch_size=32, verbose=0)
    assert model.jit_compile is False
    assert_ran(model, "fft")
    losses = history.history["loss"]
    assert losses[-1] < 0.9 * losses[0]
    assert model.predict(images[:5], verbose=0).shape == (5, 2)


@pytest.mark.parametrize("policy,compute_dtype,tolerance", [
    ("mixed_float16", tf.float16, 2e-3), ("mixed_bfloat16", tf.bfloat16, 2e-2)])
def test_mixed_precision(rng, policy, compute_dtype, tolerance):
    """The output and the input and kernel gradients against a float32 Conv2D twin (the same
    weights), within a few of the compute dtype's unit roundoffs; the bias gradient within one
    unit in the last place of the sum it is.

    The bias gradient sums dy over the batch and the pixels, and dy arrives in the compute dtype:
    its error against the float32 twin is mostly dy's own rounding, which no layer can avoid (over
    3000 draws up to 3.8 unit roundoffs in float16, with Keras' Conv2D under the same policy closer
    to the twin than the FFT path in 12 of 3000 bfloat16 draws), so the two layers' errors
    against the twin do not rank them. What the layer adds is the summation's error. On a CPU
    the FFT path takes the bias into its transforms and its gradient from the spectrum of dy in
    float32, one rounding to the compute dtype, so it is within one unit in the last place of that
    sum taken in float64 and rounded (over 1500 draws of each policy it was that sum exactly;
    Keras' Conv2D under the same policy was too in float16, and up to 2452 units off in
    bfloat16)."""
    keras.utils.set_random_seed(int(rng.integers(2 ** 31)))  # the twin's weights replay with rng
    fft = FFTConv2D(4, 3, padding="same", dtype=policy, algorithm="fft")
    x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    fft.build(x.shape)
    assert fft.kernel.dtype == "float32"  # variables stay float32
    reference = keras.layers.Conv2D(4, 3, padding="same", bias_initializer="random_normal")
    reference.build(x.shape)
    fft.set_weights(reference.get_weights())
    cotangent = tf.constant(rng.standard_normal((2, 9, 9, 4)).astype(np.float32))

    def outputs_and_gradients(layer):
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = layer(xt)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * cotangent)
        return [y] + tape.gradient(loss, [xt] + layer.trainable_variables)

    got, want = outputs_and_gradients(fft), outputs_and_gradients(reference)
    assert got[0].dtype == compute_dtype
    assert_ran(fft, "fft")
    assert [t.dtype for t in got[1:]] == [tf.float32] * 3  # d input, d kernel, d bias
    for what, ours, theirs in zip(("y", "d input", "d kernel"), got, want):
        assert rel_error(tf.cast(ours, tf.float32), theirs) <= tolerance, what
    eps = ml_dtypes.finfo(compute_dtype.as_numpy_dtype).eps  # the compute dtype's, 2 unit roundoffs
    dy = tf.cast(tf.cast(cotangent, compute_dtype), tf.float64).numpy()
    exact_sum = tf.cast(tf.cast(dy.sum(axis=(0, 1, 2)), compute_dtype), tf.float64).numpy()
    ours = got[3].numpy().astype(np.float64)
    # One unit in the last place of the larger of the two, in the compute dtype (normal numbers).
    magnitude = np.maximum(np.abs(ours), np.abs(exact_sum))
    ulp = eps * 2.0 ** np.floor(np.log2(magnitude))
    assert np.all(np.abs(ours - exact_sum) <= ulp), (ours, exact_sum)
    # Against the float32 twin: that one unit, plus dy's rounding to the compute dtype (at most
    # its unit roundoff times sum |dy| per channel), plus the twin's float32 sum.
    magnitudes = np.abs(cotangent.numpy().astype(np.float64)).sum(axis=(0, 1, 2))
    bound = ulp + (eps / 2 + 1e-6) * magnitudes
    twin = want[3].numpy().astype(np.float64)
    assert np.all(np.abs(ours - twin) <= bound), (ours, twin, bound)


def test_mixed_float16_model_fits(rng):
    """A learnable task (the class shifts the image's mean): the loss falls."""
    keras.utils.set_random_seed(2)
    inputs = keras.Input((8, 8, 1))
    x = FFTConv2D(4, 3, activation="relu", dtype="mixed_float16", algorithm="fft")(inputs)
    x = keras.layers.GlobalAveragePooling2D(dtype="mixed_float16")(x)
    outputs = keras.layers.Dense(2, dtype="float32")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam()),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = rng.integers(0, 2, 64)
    images = (rng.standard_normal((64, 8, 8, 1)) + 2.0 * labels[:, None, None, None]).astype(
        np.float32)
    history = model.fit(images, labels, epochs=4, batch_size=16, verbose=0)
    assert_ran(model, "fft")
    losses = history.history["loss"]
    assert losses[-1] < 0.9 * losses[0], losses


def test_exported_from_package():
    assert tf_fftconv.FFTConv2D is FFTConv2D


@pytest.mark.gpu
def test_fit_with_default_compile_on_the_gpu(rng):
    """On a GPU Keras' jit_compile="auto" means XLA, for a model holding FFTConv2D too: it trains
    as its Conv2D twin does (same weights, same batches), and learns. TF32 is off for both: the
    five epochs of SGD at 0.1 pass through a steep drop of the loss, where TF32's 10-bit operands
    put the two runs up to 30% apart by the third epoch; in FP32 (the same fit on the CPU, four
    seeds) they stayed within 5e-6."""
    from tf_fftconv.experiments.models import lenet5

    y = rng.integers(0, 10, 256)
    # Learnable: each class lights its own band of rows.
    x = rng.random((256, 32, 32, 1)).astype(np.float32) * 0.5
    for row in range(3):
        x[np.arange(256), 3 * y + row, :, 0] += 1.0
    spatial = lenet5(conv="spatial")
    model = lenet5(conv="fft")
    model.set_weights(spatial.get_weights())
    losses = {}
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        for name, m in (("spatial", spatial), ("fft", model)):
            m.compile(optimizer=keras.optimizers.SGD(0.1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            losses[name] = m.fit(x, y, batch_size=64, epochs=5, verbose=0,
                                 shuffle=False).history["loss"]
            assert m.jit_compile is True
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    assert_ran(model, "fft")
    np.testing.assert_allclose(losses["fft"], losses["spatial"], rtol=1e-3)
    assert losses["fft"][-1] < 0.8 * losses["fft"][0], losses["fft"]

"""tf_fftconv.to_fft and to_keras: keras.applications models, Sequential, functional and nested
models, the options and the messages; and the ways out of the library: TFLite, a SavedModel served
by a process that never imports tf_fftconv, and the error serving an FFT model's SavedModel without
the op library."""

import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv

L = keras.layers
APPLICATIONS = ["ConvNeXtTiny", "EfficientNetB0", "MobileNetV2", "ResNet50"]
IMAGE = (64, 64, 3)
SERVE_SCRIPT = pathlib.Path(__file__).with_name("serve_saved_model.py")


def assert_close(out, ref, tolerance):
    """Every element within ``tolerance`` of the output's scale (its largest magnitude)."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    scale = np.abs(ref).max()
    error = np.abs(out - ref).max()
    assert error <= tolerance * scale, f"error {error:.3g} against scale {scale:.3g}"


def assert_equal_models(model, copy):
    """The same layer types, configs and weights, layer by layer, and no layer object shared."""
    assert len(model.layers) == len(copy.layers)
    for layer, layer_copy in zip(model.layers, copy.layers):
        assert type(layer_copy) is type(layer), layer.name
        assert layer_copy is not layer
        if isinstance(layer, keras.Model):
            assert_equal_models(layer, layer_copy)
            continue
        assert layer_copy.get_config() == layer.get_config(), layer.name
        weights, copied = layer.get_weights(), layer_copy.get_weights()
        assert len(weights) == len(copied), layer.name
        for w, c in zip(weights, copied):
            np.testing.assert_array_equal(c, w, err_msg=layer.name)


def all_layers(model):
    """Every layer of ``model``, those of its nested models included."""
    for layer in model.layers:
        yield layer
        if isinstance(layer, keras.Model):
            yield from all_layers(layer)


def count(model, layer_class, exact=True):
    return sum((type(layer) is layer_class) if exact else isinstance(layer, layer_class)
               for layer in all_layers(model))


@pytest.fixture(autouse=True)
def keras_seeded(rng):
    """Keras' initializers drawn from the test's seed, so that FFTCONV_TEST_SEED replays the
    model's weights along with its inputs."""
    keras.utils.set_random_seed(int(rng.integers(2**31)))


def application(name):
    """That keras.applications model at 64x64 with fresh random weights, without its classifier
    (the output is the last feature map)."""
    return getattr(keras.applications, name)(weights=None, input_shape=IMAGE, include_top=False)


@pytest.mark.parametrize("name", APPLICATIONS)
def test_applications_to_fft_and_back(name, rng):
    """Every Conv2D and DepthwiseConv2D on the FFT path keeps the output within 1e-5 of Keras';
    to_keras gives back the original's layer types, configs and exact weights."""
    model = application(name)
    x = rng.uniform(0.0, 255.0, (2,) + IMAGE).astype(np.float32)
    fft_model = tf_fftconv.to_fft(model, algorithm="fft")
    convolutions = count(model, L.Conv2D) + count(model, L.DepthwiseConv2D)
    assert convolutions > 0
    assert (count(fft_model, tf_fftconv.FFTConv2D)
            + count(fft_model, tf_fftconv.FFTDepthwiseConv2D)) == convolutions
    assert count(fft_model, L.Conv2D) == count(fft_model, L.DepthwiseConv2D) == 0
    reference = model(x, training=False)
    assert_close(fft_model(x, training=False), reference, 1e-5)

    keras_model = tf_fftconv.to_keras(fft_model)
    assert_equal_models(model, keras_model)
    assert not any(type(layer).__module__.startswith("tf_fftconv")
                   for layer in all_layers(keras_model))
    assert_close(keras_model(x, training=False), reference, 1e-5)


def train_step(model, x):
    """One SGD step on the mean square of the output: the loss, after checking it and every
    gradient are finite and the weights moved."""
    before = [w.numpy() for w in model.trainable_weights]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True)))
    gradients = tape.gradient(loss, model.trainable_weights)
    assert np.isfinite(float(loss))
    assert all(g is not None and np.isfinite(tf.convert_to_tensor(g).numpy()).all()
               for g in gradients)
    keras.optimizers.SGD(0.01).apply_gradients(zip(gradients, model.trainable_weights))
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_weights))
    return float(loss)


def test_convnext_trains_after_to_fft_and_to_keras(rng):
    """ConvNeXt's 7x7 depthwise layers are Conv2D(groups=C): on the FFT path and back on Keras'
    layers, a training step has a finite loss and finite gradients."""
    model = application("ConvNeXtTiny")
    x = rng.uniform(0.0, 255.0, (2,) + IMAGE).astype(np.float32)
    fft_model = tf_fftconv.to_fft(model, algorithm="fft")
    keras_model = tf_fftconv.to_keras(fft_model)
    train_step(fft_model, x)
    train_step(keras_model, x)


def test_convnext_with_auto_trains_in_a_graph(rng):
    """With the default algorithm="auto", ConvNeXt's grouped layers train eagerly and in Keras'
    compiled step (no XLA, where TensorFlow's graph optimizer fuses a grouped convolution with its
    bias): on a CPU without oneDNN, TensorFlow's kernels refuse both, so auto must not pick them."""
    model = tf_fftconv.to_fft(application("ConvNeXtTiny"))
    x = rng.uniform(0.0, 255.0, (2,) + IMAGE).astype(np.float32)
    train_step(model, x)
    model.compile(keras.optimizers.SGD(0.01), "mse", jit_compile=False)
    loss = model.fit(x, np.zeros((2,) + tuple(model.output_shape[1:]), np.float32), epochs=1,
                     batch_size=2, verbose=0).history["loss"]
    assert np.isfinite(loss).all()


def small_sequential():
    return keras.Sequential([
        keras.Input((20, 20, 3)),
        L.Conv2D(8, 5, padding="same", activation="relu", name="c5"),
        L.MaxPooling2D(),
        L.DepthwiseConv2D(3, strides=2, depth_multiplier=2, use_bias=False, name="d3"),
        L.Conv2D(4, 1, name="c1"),
        L.GlobalAveragePooling2D(),
        L.Dense(3),
    ], name="small_sequential")


def test_sequential(rng):
    model = small_sequential()
    x = rng.normal(size=(2, 20, 20, 3)).astype(np.float32)
    fft_model = tf_fftconv.to_fft(model, algorithm="fft")
    assert isinstance(fft_model, keras.Sequential)
    assert [type(layer).__name__ for layer in fft_model.layers] == [
        "FFTConv2D", "MaxPooling2D", "FFTDepthwiseConv2D", "FFTConv2D", "GlobalAveragePooling2D",
        "Dense"]
    assert_close(fft_model(x), model(x), 1e-5)
    assert_equal_models(model, tf_fftconv.to_keras(fft_model))


def test_sequential_never_built(capsys):
    """A Sequential model without an input shape has no weights yet: converted all the same, and
    the report says the layers are not built."""
    model = keras.Sequential([L.Conv2D(4, 3), L.DepthwiseConv2D(3)])
    fft_model = tf_fftconv.to_fft(model, verbose=True)
    assert capsys.readouterr().out.count("not built") == 2
    fft_model.build((None, 10, 10, 2))
    assert fft_model.output_shape == (None, 6, 6, 4)
    assert [type(layer) for layer in tf_fftconv.to_keras(fft_model).layers] == [
        L.Conv2D, L.DepthwiseConv2D]


def test_nested_models_and_shared_layers(rng):
    """Sequential and functional models nested in a functional one are converted inside; a layer
    used twice stays one layer; the original model keeps its own layers and weights."""
    inner_inputs = keras.Input((16, 16, 8))
    inner = keras.Model(inner_inputs, L.DepthwiseConv2D(5, padding="same", name="inner_dw")(
        inner_inputs), name="inner_functional")
    stack = keras.Sequential([keras.Input((16, 16, 8)),
                              L.Conv2D(8, 3, padding="same", groups=2, dilation_rate=2,
                                       name="inner_grouped")], name="inner_sequential")
    shared = L.Conv2D(8, 3, padding="same", activation="tanh", name="shared")
    inputs = keras.Input((16, 16, 3))
    x = L.Conv2D(8, 3, padding="same", name="stem")(inputs)
    x = shared(inner(x))
    x = shared(stack(x))
    model = keras.Model(inputs, x, name="outer")
    data = rng.normal(size=(2, 16, 16, 3)).astype(np.float32)

    fft_model = tf_fftconv.to_fft(model, algorithm="fft")
    assert count(fft_model, tf_fftconv.FFTConv2D) == 3
    assert count(fft_model, tf_fftconv.FFTDepthwiseConv2D) == 1
    assert count(fft_model, L.Conv2D) == count(fft_model, L.DepthwiseConv2D) == 0
    assert isinstance(fft_model.get_layer("inner_sequential"), keras.Sequential)
    assert [layer.name for layer in fft_model.layers].count("shared") == 1
    assert_close(fft_model(data), model(data), 1e-5)

    # The copies are new variables: changing them leaves the original as it was.
    reference = model(data).numpy()
    fft_model.get_layer("shared").kernel.assign_add(tf.ones_like(shared.kernel))
    np.testing.assert_array_equal(model(data).numpy(), reference)
    assert count(model, L.Conv2D) == 3

    keras_model = tf_fftconv.to_keras(tf_fftconv.to_fft(model))
    assert_equal_models(model, keras_model)


def kernels_model():
    inputs = keras.Input((24, 24, 4))
    x = L.Conv2D(4, 1, name="k1")(inputs)
    x = L.Conv2D(4, 3, padding="same", name="k3")(x)
    x = L.DepthwiseConv2D((1, 7), padding="same", name="k1x7")(x)
    x = L.Conv2D(4, 9, padding="same", groups=4, name="k9")(x)
    return keras.Model(inputs, x)


def converted_names(model):
    return sorted(layer.name for layer in all_layers(model)
                  if isinstance(layer, (tf_fftconv.FFTConv2D, tf_fftconv.FFTDepthwiseConv2D)))


def test_selection_by_predicate_and_kernel_size(rng, capsys):
    model = kernels_model()
    x = rng.normal(size=(2, 24, 24, 4)).astype(np.float32)
    by_size = tf_fftconv.to_fft(model, min_kernel_size=7, verbose=True)
    assert converted_names(by_size) == ["k1x7", "k9"]
    report = capsys.readouterr().out
    assert "2 convolution(s) converted, 2 not selected" in report
    for name in ("k1", "k3", "k1x7", "k9"):
        assert name in report
    assert report.count("kept: not selected") == 2
    assert_close(by_size(x), model(x), 1e-5)

    dense_only = tf_fftconv.to_fft(model, layers=lambda layer: type(layer) is L.Conv2D)
    assert converted_names(dense_only) == ["k1", "k3", "k9"]
    both = tf_fftconv.to_fft(model, layers=lambda layer: layer.name != "k9", min_kernel_size=3)
    assert converted_names(both) == ["k1x7", "k3"]
    with pytest.warns(UserWarning, match="none of its 4 convertible convolutions was selected"):
        tf_fftconv.to_fft(model, min_kernel_size=10)


def test_fft_options_reach_the_layers():
    model = kernels_model()
    fft_model = tf_fftconv.to_fft(model, algorithm="fft", fft_size=32, memory_budget="64M")
    for layer in all_layers(fft_model):
        if isinstance(layer, (tf_fftconv.FFTConv2D, tf_fftconv.FFTDepthwiseConv2D)):
            assert (layer.algorithm, layer.fft_size, layer.memory_budget) == ("fft", 32, "64M")
    with pytest.raises(ValueError, match="unknown FFT option.*filters"):
        tf_fftconv.to_fft(model, filters=3)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        tf_fftconv.to_fft(model, algorithm="winograd")


def test_every_conv2d_config_field_is_kept():
    """Regularizers, constraints, initializers, activation, bias, data format and dtype policy all
    travel to the FFT layer and back."""
    model = keras.Sequential([
        keras.Input((3, 12, 12)),
        L.Conv2D(6, (3, 5), strides=(1, 2), padding="same", data_format="channels_first",
                 dilation_rate=1, groups=3, activation="swish", use_bias=False,
                 kernel_initializer="he_normal", kernel_regularizer=keras.regularizers.L2(1e-3),
                 activity_regularizer=keras.regularizers.L1(1e-4),
                 kernel_constraint=keras.constraints.MaxNorm(2.0), name="configured"),
        L.DepthwiseConv2D(3, data_format="channels_first", depthwise_constraint="non_neg",
                          bias_regularizer="l2", bias_initializer="ones", dtype="float64",
                          trainable=False, name="configured_dw"),
    ])
    fft_model = tf_fftconv.to_fft(model, tile=4)
    for layer, fft_layer in zip(model.layers, fft_model.layers):
        assert type(layer).get_config(fft_layer) == layer.get_config()
        assert fft_layer.tile == 4
    assert fft_model.layers[1].trainable is False
    assert_equal_models(model, tf_fftconv.to_keras(fft_model))


@keras.saving.register_keras_serializable(package="test_convert")
class ConvBlock(L.Layer):
    """A custom layer holding a convolution, which to_fft does not know."""

    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.conv = L.Conv2D(filters, 3, padding="same", name="block_conv")

    def build(self, input_shape):
        self.conv.build(input_shape)

    def call(self, x):
        return keras.activations.relu(self.conv(x))

    def get_config(self):
        return dict(super().get_config(), filters=self.filters)


@keras.saving.register_keras_serializable(package="test_convert")
class ScaledConv2D(L.Conv2D):
    """A subclass of Conv2D computes what it likes: not converted."""

    def call(self, x):
        return 2.0 * super().call(x)


def test_layers_it_does_not_know_are_kept_and_named(rng):
    inputs = keras.Input((12, 12, 3))
    x = ConvBlock(4, name="my_block")(inputs)
    x = ScaledConv2D(4, 3, name="scaled")(x)
    x = L.Conv1D(4, 3, padding="same", name="temporal")(L.Reshape((10 * 10, 4))(x))
    x = L.Conv2D(2, 1, name="converted")(L.Reshape((10, 10, 4))(x))
    model = keras.Model(inputs, x)
    data = rng.normal(size=(2, 12, 12, 3)).astype(np.float32)

    with pytest.warns(UserWarning) as record:
        fft_model = tf_fftconv.to_fft(model, algorithm="fft")
    message = "\n".join(str(w.message) for w in record)
    for named in ("'my_block' (ConvBlock, holding 'block_conv' (Conv2D))",
                  "'scaled' (ScaledConv2D)", "'temporal' (Conv1D)"):
        assert named in message
    assert "'converted'" not in message
    assert converted_names(fft_model) == ["converted"]
    assert type(fft_model.get_layer("my_block")) is ConvBlock
    assert_close(fft_model(data), model(data), 1e-5)

    # to_keras cannot take an FFT layer out of a layer it copies whole: it says which. Nor does
    # it know a subclass of an FFT layer.
    block = ConvBlock(4, name="fft_block")
    block.conv = tf_fftconv.FFTConv2D(4, 3, padding="same", name="fft_inside")
    inputs = keras.Input((12, 12, 3))
    with pytest.raises(ValueError,
                       match="'fft_block' \\(ConvBlock\\).*'fft_inside' \\(FFTConv2D\\)"):
        tf_fftconv.to_keras(keras.Model(inputs, block(inputs)))
    subclass = type("ScaledFFTConv2D", (tf_fftconv.FFTConv2D,), {})
    with pytest.raises(ValueError, match="'scaled_fft' \\(ScaledFFTConv2D\\), a subclass"):
        tf_fftconv.to_keras(keras.Sequential([inputs, subclass(2, 3, name="scaled_fft")]))


def test_subclassed_model_is_refused_by_name():
    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="my_net")
            self.conv = L.Conv2D(2, 3)

        def call(self, x):
            return self.conv(x)

    net = Net()
    net(np.zeros((1, 8, 8, 1), np.float32))
    with pytest.raises(ValueError, match="model 'my_net' is a Net, a subclassed model"):
        tf_fftconv.to_fft(net)
    with pytest.raises(ValueError, match="model 'my_net' is a Net"):
        tf_fftconv.to_keras(net)


def test_model_without_convolutions(rng):
    model = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="relu"), L.Dense(2)],
                             name="mlp")
    x = rng.normal(size=(3, 5)).astype(np.float32)
    with pytest.warns(UserWarning,
                      match="converted nothing in model 'mlp'.*no keras.layers.Conv2D"):
        copy = tf_fftconv.to_fft(model)
    assert copy is not model
    assert_equal_models(model, copy)
    np.testing.assert_array_equal(copy(x).numpy(), model(x).numpy())


def test_to_keras_without_fft_layers_is_an_equal_copy():
    model = kernels_model()
    copy = tf_fftconv.to_keras(model)
    assert copy is not model
    assert_equal_models(model, copy)


# The ways out: a small model with every kind of convolution the FFT layers run (dense, grouped,
# strided, dilated, depthwise with a multiplier) and a ConvNeXt block (7x7 depthwise as
# Conv2D(groups=C), LayerNormalization, an inverted bottleneck, a residual).

def deployment_model():
    inputs = keras.Input((32, 32, 3))
    x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(inputs)
    x = L.Conv2D(16, 3, padding="same", groups=4)(x)
    x = L.DepthwiseConv2D(5, padding="same", depth_multiplier=2, dilation_rate=2)(x)
    x = L.DepthwiseConv2D(3, strides=2, padding="valid")(x)
    block = L.Conv2D(32, 7, padding="same", groups=32)(x)
    block = L.LayerNormalization(epsilon=1e-6)(block)
    block = L.Dense(64, activation="gelu")(block)
    block = L.Dense(32)(block)
    return keras.Model(inputs, L.Add()([x, block]))


@pytest.fixture
def deployed(rng):
    """(FFT model on the FFT path, its to_keras model, an input)."""
    fft_model = tf_fftconv.to_fft(deployment_model(), algorithm="fft")
    x = rng.normal(size=(2, 32, 32, 3)).astype(np.float32)
    return fft_model, tf_fftconv.to_keras(fft_model), x


# TensorFlow 2.20 and 2.21 ship tf.lite.Interpreter, with a warning that LiteRT's replaces it.
@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
def test_tflite(deployed):
    fft_model, keras_model, x = deployed
    flatbuffer = tf.lite.TFLiteConverter.from_keras_model(keras_model).convert()
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    (input_detail,), (output_detail,) = (interpreter.get_input_details(),
                                         interpreter.get_output_details())
    interpreter.resize_tensor_input(input_detail["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(input_detail["index"], x)
    interpreter.invoke()
    assert_close(interpreter.get_tensor(output_detail["index"]), fft_model(x), 1e-4)


def serve(saved_model, x, tmp_path, op_library=None):
    """Runs tests/serve_saved_model.py in a fresh process (which never imports tf_fftconv)."""
    np.save(tmp_path / "input.npy", x)
    command = [sys.executable, str(SERVE_SCRIPT), str(saved_model), str(tmp_path / "input.npy"),
               str(tmp_path / "output.npy")]
    if op_library:
        command += ["--op-library", op_library]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    output = np.load(tmp_path / "output.npy") if result.returncode == 0 else None
    return result, output


def test_saved_model_of_to_keras_serves_without_the_library(deployed, tmp_path):
    fft_model, keras_model, x = deployed
    keras_model.export(str(tmp_path / "keras_model"), verbose=False)
    result, output = serve(tmp_path / "keras_model", x, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_close(output, fft_model(x), 1e-5)


def test_saved_model_of_an_fft_model_needs_the_op_library(deployed, tmp_path):
    fft_model, _, x = deployed
    fft_model.export(str(tmp_path / "fft_model"), verbose=False)
    result, _ = serve(tmp_path / "fft_model", x, tmp_path)
    assert result.returncode == 1
    assert "Op type not registered 'Fftconv" in result.stderr, result.stderr[-3000:]
    result, output = serve(tmp_path / "fft_model", x, tmp_path,
                           op_library=tf_fftconv.library_path())
    assert result.returncode == 0, result.stderr[-3000:]
    assert_close(output, fft_model(x), 1e-5)

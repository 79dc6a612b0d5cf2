"""The ops under XLA (jit_compile=True): the same kernels through typed-FFI custom calls.

Each op, and fft_conv2d with both gradients, must give the eager result exactly (the same
kernels run on the same inputs), the compiled HLO must hold the custom calls, bad input must get
the kernels' InvalidArgumentError, and loading must not depend on when the package is imported.
"""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import np_reference as ref
import strided_reference
import tf_fftconv as fc
from conftest import assert_ran, rel_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _assert_same_kernels(got, want):
    """Eager and XLA run the same kernels on the same inputs: the same values, bit for bit."""
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# The ops against the float64 reference: float32 and float64 rounding of a transform.
ROUNDING = {np.float32: 2e-6, np.float64: 1e-12}


def _xla_and_eager(fn, *args):
    compiled = tf.function(fn, jit_compile=True, autograph=False)
    eager = tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
    return tf.nest.map_structure(lambda t: t.numpy(), compiled(*args)), eager, compiled


def _hlo(compiled, *args):
    return compiled.experimental_get_compiler_ir(*args)(stage="hlo")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_rfft2d_and_irfft2d_under_xla(rng, device, dtype, data_format):
    fft_size = 16
    shape = (3, 2, 11, 9) if data_format == "NCHW" else (3, 11, 9, 2)
    x = tf.constant(rng.standard_normal(shape).astype(dtype))

    def round_trip(x):
        spectrum = fc.ops.rfft2d(x, fft_size, 2, 5, data_format)
        return spectrum, fc.ops.irfft2d(spectrum, fft_size, 7, 6, 3, 4, data_format)

    (spectrum, window), (spectrum_eager, window_eager), compiled = _xla_and_eager(round_trip, x)
    _assert_same_kernels(spectrum, spectrum_eager)
    _assert_same_kernels(window, window_eager)
    expected = ref.rfft2d(x.numpy(), fft_size, 2, 5, data_format)
    assert rel_error(spectrum, expected) <= ROUNDING[dtype]
    expected = ref.irfft2d(spectrum_eager, fft_size, 7, 6, 3, 4, data_format)
    assert rel_error(window, expected) <= ROUNDING[dtype]
    hlo = _hlo(compiled, x)
    assert 'custom_call_target="tf_fftconv_rfft2d"' in hlo
    assert 'custom_call_target="tf_fftconv_irfft2d"' in hlo


@pytest.mark.parametrize("fft_size", [6, 12, 24, 48, 96, 10, 20, 40, 80])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_mixed_radix_frames_under_xla(rng, device, fft_size, data_format):
    """3 * 2^k and 5 * 2^k frames through the custom calls: the same kernels as eagerly, float64
    exact."""
    height, width = fft_size - 3, fft_size - 1
    shape = (2, 3, height, width) if data_format == "NCHW" else (2, height, width, 3)
    x = tf.constant(rng.standard_normal(shape))

    def round_trip(x):
        spectrum = fc.ops.rfft2d(x, fft_size, 2, 1, data_format)
        return spectrum, fc.ops.irfft2d(spectrum, fft_size, height - 1, width - 2, 3, 1, data_format)

    (spectrum, window), (spectrum_eager, window_eager), compiled = _xla_and_eager(round_trip, x)
    _assert_same_kernels(spectrum, spectrum_eager)
    _assert_same_kernels(window, window_eager)
    assert rel_error(spectrum, ref.rfft2d(x.numpy(), fft_size, 2, 1, data_format)) <= 1e-12
    expected = ref.irfft2d(spectrum_eager, fft_size, height - 1, width - 2, 3, 1, data_format)
    assert rel_error(window, expected) <= 1e-12
    assert 'custom_call_target="tf_fftconv_rfft2d"' in _hlo(compiled, x)


@pytest.mark.parametrize("mode_a,mode_b", [("N", "N"), ("H", "N"), ("N", "T"), ("H", "H"),
                                           ("N", "C"), ("C", "T"), ("T", "C"), ("TC", "N")])
def test_spectral_matmul_under_xla(rng, device, mode_a, mode_b):
    """Every flag reaches the custom call as an attribute: the product is the eager one and the
    float64 reference's."""
    bins, m, k, n = 5, 3, 4, 6
    flags = ref.matmul_flags(mode_a, mode_b)
    a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins, m, k, n)
    a = tf.constant(ref.random_complex(rng, a_shape).astype(np.complex64))
    b = tf.constant(ref.random_complex(rng, b_shape).astype(np.complex64))
    product, eager, compiled = _xla_and_eager(lambda a, b: fc.ops.spectral_matmul(a, b, **flags),
                                              a, b)
    assert product.shape == (bins, m, n)
    _assert_same_kernels(product, eager)
    assert rel_error(product, ref.spectral_matmul(a.numpy(), b.numpy(), **flags)) <= 1e-6
    assert 'custom_call_target="tf_fftconv_spectral_matmul"' in _hlo(compiled, a, b)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fft_conv2d_and_gradients_under_xla(rng, device, padding, data_format):
    shape = (4, 12, 10, 3) if data_format == "NHWC" else (4, 3, 12, 10)
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    w = tf.constant(rng.standard_normal((5, 3, 3, 6)).astype(np.float32))

    def loss_and_grads(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = fc.fft_conv2d(x, w, padding=padding, data_format=data_format, algorithm="fft")
            loss = tf.reduce_sum(y * y)
        return (y,) + tuple(tape.gradient(loss, [x, w]))

    compiled_out, eager_out, compiled = _xla_and_eager(loss_and_grads, x, w)
    for got, want in zip(compiled_out, eager_out):
        _assert_same_kernels(got, want)
    if data_format == "NHWC":  # TF's CPU conv2d takes NHWC only
        expected = tf.nn.conv2d(x, w, 1, padding).numpy()
        assert rel_error(compiled_out[0], expected) <= 1e-5
    hlo = _hlo(compiled, x, w)
    assert hlo.count('custom_call_target="tf_fftconv_rfft2d"') >= 3  # x, w and dy
    assert "convolution(" not in hlo  # no spatial convolution slipped in


# The three functions, each compiled whole, against the float64 reference of tf.nn.conv2d and
# tf.nn.depthwise_conv2d: (conv, w's shape, the reference's case).
COMPILED_CONVOLUTIONS = {
    "fft_conv2d": (lambda x, w: fc.fft_conv2d(x, w, padding="SAME", algorithm="fft"),
                   (3, 5, 4, 6), dict(strides=(1, 1), padding="SAME", dilations=(1, 1),
                                      groups=1)),
    "fft_depthwise_conv2d": (
        lambda x, w: fc.fft_depthwise_conv2d(x, w, padding="SAME", algorithm="fft"),
        (3, 5, 4, 2), dict(strides=(1, 1), padding="SAME", dilations=(1, 1), depthwise=True)),
    "fft_conv2d strided grouped": (
        lambda x, w: fc.fft_conv2d(x, w, padding="SAME", algorithm="fft", strides=2, groups=2),
        (3, 5, 2, 6), dict(strides=(2, 2), padding="SAME", dilations=(1, 1), groups=2)),
}


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("name", sorted(COMPILED_CONVOLUTIONS))
def test_gradients_of_a_compiled_convolution_by_a_tape_outside_it(rng, device, name, persistent):
    # A persistent tape differentiates the compiled function through a backward function of its
    # own, which receives the forward graph's tensors as arguments: the sizes the gradients give
    # the ops must still be constants there, which XLA requires of them.
    conv, w_shape, case = COMPILED_CONVOLUTIONS[name]
    x = tf.constant(rng.standard_normal((2, 13, 11, 4)).astype(np.float32))
    w = tf.constant(rng.standard_normal(w_shape).astype(np.float32))
    compiled = tf.function(conv, jit_compile=True, autograph=False)
    y_shape = conv(x, w).shape
    dy = tf.constant(rng.standard_normal(y_shape).astype(np.float32))
    with tf.GradientTape(persistent=persistent) as tape:
        tape.watch([x, w])
        y = compiled(x, w)
        loss = tf.reduce_sum(y * dy)
    dx, dw = tape.gradient(loss, [x, w])
    expected = strided_reference.of_case(case, x.numpy(), w.numpy(), dy.numpy())
    for got, want in zip((y, dx, dw), expected):
        assert rel_error(got, want) <= 2e-5


def test_xla_errors_are_the_kernels_errors(device):
    # Traced with unknown shapes, so that the shape functions cannot see the problem and the
    # lowering meets it when XLA compiles for the concrete shapes.
    unknown = [tf.TensorSpec(None, tf.float32)]
    x = tf.zeros([1, 1, 4, 4])
    bad_size = tf.function(lambda x: fc.ops.rfft2d(x, tf.shape(x)[2] * 9), jit_compile=True,
                           input_signature=unknown)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="fft_size must be a power of two in \\[2, 128\\], 3 \\* 2\\^k in "
                             "\\[6, 96\\] or 5 \\* 2\\^k in \\[10, 80\\] .*, got 36"):
        bad_size(x)
    no_fit = tf.function(lambda x: fc.ops.rfft2d(x, 4, offset_h=1), jit_compile=True,
                         input_signature=unknown)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="height = 4 at offset_h = 1 does not fit in the frame"):
        no_fit(x)
    mismatch = tf.function(lambda a: fc.ops.spectral_matmul(a, tf.zeros([3, 5, 2], tf.complex64)),
                           jit_compile=True, input_signature=[tf.TensorSpec(None, tf.complex64)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="inner dimensions do not match"):
        mismatch(tf.zeros([3, 2, 2], tf.complex64))


def test_empty_tensors_under_xla(device):
    x = tf.zeros([0, 3, 5, 5])
    spectrum = tf.function(lambda x: fc.ops.rfft2d(x, 8), jit_compile=True)(x)
    assert spectrum.shape == (40, 0, 3)
    window = tf.function(lambda s: fc.ops.irfft2d(s, 8, 5, 5), jit_compile=True)(spectrum)
    assert window.shape == (0, 3, 5, 5)


def test_sizes_computed_in_the_graph_fold_under_xla(rng, device):
    # fft_size and the window come from tf.shape: constants once XLA compiles for a shape.
    x = tf.constant(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))

    def computed(x):
        size = tf.shape(x)[2] + 2
        spectrum = fc.ops.rfft2d(x, size)
        return fc.ops.irfft2d(spectrum, size, tf.shape(x)[2], tf.shape(x)[3])

    got, eager, _ = _xla_and_eager(computed, x)
    assert rel_error(got, x.numpy()) <= 1e-6
    _assert_same_kernels(got, eager)


def _fft_layer(*args, **kwargs):
    return fc.FFTConv2D(*args, algorithm="fft", **kwargs)


def _lenet_like(input_shape, jit_compile, conv=_fft_layer, optimizer="adam", activation="relu"):
    model = keras.Sequential([
        keras.Input(input_shape),
        conv(4, 3, padding="same", activation=activation),
        conv(5, 3, activation=activation),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(3),
    ])
    model.compile(optimizer=optimizer, jit_compile=jit_compile,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_layer_allows_xla():
    assert fc.FFTConv2D(4, 3).supports_jit


def test_keras_fit_with_jit_compile(rng):
    """Trained under XLA from its Conv2D twin's weights on the same batches, the model takes the
    twin's steps. (SGD: Adam's step of a weight whose gradient is rounding noise has the noise's
    sign, so a float32 difference in such a gradient becomes a full step.)"""
    # tanh: a ReLU input within rounding of 0 can take either side in the two models, and that
    # one gradient entry moves a bias (zero at the start, so small) by 1e-3 of its size.
    model = _lenet_like((10, 10, 2), jit_compile=True, optimizer=keras.optimizers.SGD(0.1),
                        activation="tanh")
    twin = _lenet_like((10, 10, 2), jit_compile=True, conv=keras.layers.Conv2D,
                       optimizer=keras.optimizers.SGD(0.1), activation="tanh")
    twin.set_weights(model.get_weights())
    assert model.jit_compile
    x = rng.standard_normal((16, 10, 10, 2)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    losses = [m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
              for m in (model, twin)]
    assert_ran(model, "fft")
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    for got, want in zip(model.get_weights(), twin.get_weights()):
        assert rel_error(got, want) <= 1e-4
    assert rel_error(model.predict(x, verbose=0), twin.predict(x, verbose=0)) <= 1e-4


@pytest.mark.parametrize("jit_compile", [True, False])
def test_any_image_size(rng, jit_compile):
    # Keras retraces with relaxed (None) height and width after a few sizes: the layer must
    # then compute its sizes at run time, and give Conv2D's results.
    model = _lenet_like((None, None, 2), jit_compile=jit_compile)
    twin = _lenet_like((None, None, 2), jit_compile=False, conv=keras.layers.Conv2D)
    twin.set_weights(model.get_weights())
    for size in (9, 12, 16, 7):
        x = rng.standard_normal((6, size, size + 1, 2)).astype(np.float32)
        y = rng.integers(0, 3, 6)
        assert rel_error(model.predict(x, verbose=0), twin.predict(x, verbose=0)) <= 1e-4
        model.fit(x, y, batch_size=3, epochs=1, verbose=0)
        twin.set_weights(model.get_weights())
    assert_ran(model, "fft")


def test_relaxed_shapes_inside_tf_function(rng):
    w = tf.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
    conv = tf.function(lambda x: fc.fft_conv2d(x, w, padding="SAME", algorithm="fft"),
                       input_signature=[tf.TensorSpec([None, None, None, 2], tf.float32)])
    for size in (5, 11):
        x = tf.constant(rng.standard_normal((2, size, size + 3, 2)).astype(np.float32))
        assert rel_error(conv(x), tf.nn.conv2d(x, w, 1, "SAME")) <= 1e-5


def test_saved_model_round_trip_of_a_compiled_function(rng, tmp_path):
    w = tf.Variable(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
    module = tf.Module()
    module.w = w
    module.conv = tf.function(lambda x: fc.fft_conv2d(x, module.w, padding="SAME",
                                                      algorithm="fft"),
                              input_signature=[tf.TensorSpec([2, 8, 8, 2], tf.float32)],
                              jit_compile=True)
    x = tf.constant(rng.standard_normal((2, 8, 8, 2)).astype(np.float32))
    before = module.conv(x).numpy()
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    _assert_same_kernels(loaded.conv(x), before)


def _python(code, **env):
    environment = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                       TF_CPP_MIN_LOG_LEVEL="2", **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=environment, timeout=300)


def test_late_import_still_compiles():
    result = _python("""
        import tensorflow as tf
        x = tf.ones([2, 1, 6, 6]) * 2.0       # eager tensors (and devices) exist first
        import tf_fftconv as fc
        y = tf.function(lambda x: fc.ops.irfft2d(fc.ops.rfft2d(x, 8), 8, 6, 6),
                        jit_compile=True)(x)
        print("max error", float(tf.reduce_max(tf.abs(y - x))))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(result.stdout.split("max error")[1]) < 1e-5


def test_a_second_copy_of_the_library_is_refused_clearly(tmp_path):
    copy = tmp_path / "copy" / os.path.basename(fc.library_path())
    copy.parent.mkdir()
    copy.write_bytes(open(fc.library_path(), "rb").read())
    # The copy first: the package then refuses to load its own, naming both.
    result = _python("""
        import tensorflow as tf
        tf.load_op_library(%r)
        import tf_fftconv as fc
        try:
            fc.ops.rfft2d(tf.ones([1, 1, 2, 2]), 2)
        except ImportError as e:
            print("refused:", e)
    """ % str(copy))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "another copy of the op library is already loaded" in result.stdout
    assert str(copy) in result.stdout
    # The package first, then a copy: no abort, the copy registers nothing, the ops keep working
    # eagerly and under XLA.
    result = _python("""
        import tensorflow as tf, tf_fftconv as fc
        fc.ops.rfft2d(tf.ones([1, 1, 2, 2]), 2)
        tf.load_op_library(%r)
        x = tf.ones([1, 1, 4, 4])
        print("eager", fc.ops.rfft2d(x, 4).shape)
        print("xla", tf.function(lambda x: fc.ops.rfft2d(x, 4), jit_compile=True)(x).shape)
    """ % str(copy))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "eager (12, 1, 1)" in result.stdout and "xla (12, 1, 1)" in result.stdout
    assert "another copy of the op library is already loaded" in result.stderr


def _fit_and_dump(dump_dir, jit_compile):
    """Fits a small FFT model in a fresh process, with XLA's own dump of what it compiled."""
    return _python("""
        import keras, numpy as np, tf_fftconv as fc
        model = keras.Sequential([keras.Input((8, 8, 1)), fc.FFTConv2D(2, 3, algorithm="fft"),
                                  keras.layers.Flatten(), keras.layers.Dense(2)])
        model.compile("sgd", "mse", jit_compile=%r)
        model.fit(np.ones((4, 8, 8, 1), "float32"), np.ones((4, 2), "float32"), verbose=0)
        print("jit", model.jit_compile)
    """ % (jit_compile,), XLA_FLAGS="--xla_dump_to=%s --xla_dump_hlo_as_text" % dump_dir)


def _dumped_custom_calls(dump_dir):
    dumped = "".join(p.read_text() for p in dump_dir.glob("*after_optimizations.txt"))
    return {target for target in ("tf_fftconv_rfft2d", "tf_fftconv_spectral_matmul",
                                  "tf_fftconv_irfft2d")
            if 'custom_call_target="%s"' % target in dumped}


def test_keras_fit_runs_the_custom_calls(tmp_path):
    result = _fit_and_dump(tmp_path, jit_compile=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "jit True" in result.stdout
    assert len(_dumped_custom_calls(tmp_path)) == 3


@pytest.mark.gpu
def test_keras_default_compile_takes_xla_on_gpu(tmp_path):
    # Keras' default jit_compile="auto" picks XLA on a GPU when every layer supports it.
    result = _fit_and_dump(tmp_path, jit_compile="auto")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "jit True" in result.stdout
    assert len(_dumped_custom_calls(tmp_path)) == 3


@pytest.mark.gpu
def test_command_buffers_give_the_same_results(tmp_path):
    # By default XLA may record the CUDA custom calls into its command buffers (CUDA graphs) and
    # replay them; TF_FFTCONV_XLA_COMMAND_BUFFERS=0 keeps them out. A compiled train step, replayed
    # several times on fresh inputs (so also after buffer addresses change), must give what the
    # eager ops give, either way.
    code = """
        import numpy as np, tensorflow as tf, tf_fftconv as fc
        rng = np.random.default_rng(7)
        w = tf.Variable(rng.standard_normal((5, 5, 3, 4)).astype("float32"))

        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(fc.fft_conv2d(x, w, algorithm="fft") ** 2)
            return loss, tape.gradient(loss, w)

        compiled = tf.function(step, jit_compile=True)
        worst = 0.0
        for i in range(6):
            x = tf.constant(rng.standard_normal((4 + i % 2, 16, 16, 3)).astype("float32"))
            for got, want in zip(compiled(x), step(x)):
                want = want.numpy()
                worst = max(worst, float(np.max(np.abs(got.numpy() - want)) / np.max(np.abs(want))))
        print("worst", worst)
    """
    for setting in ("1", "0"):
        result = _python(code, TF_FFTCONV_XLA_COMMAND_BUFFERS=setting)
        assert result.returncode == 0, result.stderr[-3000:]
        assert float(result.stdout.split("worst")[1]) <= 1e-5, (setting, result.stdout)

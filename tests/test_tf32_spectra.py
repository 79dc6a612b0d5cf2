"""Spectra stored rounded to TF32 (rfft2d's round_to_tf32) and TF32 products that take them
unconverted (spectral_matmul's tf32_operands): both default to False, change nothing where TF32
does not apply (CPU, TF32 off), pass through XLA, and on a GPU with TF32 leave fft_conv2d's results
bit for bit as they are without them."""

import inspect

import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc
from tf_fftconv import execute


def _complex(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _tf32_on():
    """A context-free toggle: returns the previous state after switching TF32 on."""
    state = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(True)
    return state


def _round_to_tf32(values):
    """float32 values rounded to TF32 (10 mantissa bits), to nearest with ties to even, the low 13
    bits cleared: the rounding of the TF32 products on sm_90 (cvt.rn.tf32.f32). Finite values."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0xfff + ((bits >> 13) & 1)) & 0xffffe000
    return bits.astype(np.uint32).view(np.float32)


def _float_parts(spectrum):
    """A complex64 spectrum as its float32 (re, im) values."""
    return np.ascontiguousarray(spectrum).view(np.float32)


def _compute_capability():
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return (0, 0)
    return tuple(tf.config.experimental.get_device_details(gpus[0]).get("compute_capability",
                                                                        (0, 0)))


def test_attributes_exist_and_default_to_false():
    assert inspect.signature(fc.ops.rfft2d).parameters["round_to_tf32"].default is False
    assert inspect.signature(fc.ops.spectral_matmul).parameters["tf32_operands"].default is False
    lib = fc.ops.load_library()
    with tf.Graph().as_default():
        spectrum = lib.fftconv_rfft2d(x=tf.zeros([1, 1, 4, 4]), fft_size=8)
        product = lib.fftconv_spectral_matmul(a=spectrum[:, :, :1], b=spectrum[:, :1, :])
        assert spectrum.op.get_attr("round_to_tf32") is False
        assert product.op.get_attr("tf32_operands") is False
        # The wrappers pass them on.
        rounded = fc.ops.rfft2d(tf.zeros([1, 1, 4, 4]), 8, round_to_tf32=True)
        assert rounded.op.get_attr("round_to_tf32") is True
        taken = fc.ops.spectral_matmul(rounded, rounded, adjoint_b=True, tf32_operands=True)
        assert taken.op.get_attr("tf32_operands") is True


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "xla"])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_attributes_change_nothing_on_the_cpu(rng, jit, data_format):
    """TF32 on (as it is by default): the CPU kernels ignore both attributes, eagerly and under XLA
    (whose lowering passes them to the custom call)."""
    shape = (3, 5, 11, 9) if data_format == "NCHW" else (3, 11, 9, 5)
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    a, b = tf.constant(_complex(rng, (7, 6, 9))), tf.constant(_complex(rng, (7, 9, 4)))
    previous = _tf32_on()
    try:
        with tf.device("/CPU:0"):
            spectra = {}
            products = {}
            for flag in (False, True):
                transform = tf.function(
                    lambda x, flag=flag: fc.ops.rfft2d(x, 16, 2, 3, data_format,
                                                       round_to_tf32=flag),
                    jit_compile=jit, autograph=False)
                product = tf.function(
                    lambda a, b, flag=flag: fc.ops.spectral_matmul(a, b, tf32_operands=flag),
                    jit_compile=jit, autograph=False)
                spectra[flag] = transform(x).numpy()
                products[flag] = product(a, b).numpy()
            # float64 and half precision take the attributes too, and ignore them.
            x64 = tf.cast(x, tf.float64)
            assert np.array_equal(fc.ops.rfft2d(x64, 16, data_format=data_format).numpy(),
                                  fc.ops.rfft2d(x64, 16, data_format=data_format,
                                                round_to_tf32=True).numpy())
            x16 = tf.cast(x, tf.float16)
            assert np.array_equal(fc.ops.rfft2d(x16, 16, data_format=data_format).numpy(),
                                  fc.ops.rfft2d(x16, 16, data_format=data_format,
                                                round_to_tf32=True).numpy())
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)
    assert np.array_equal(spectra[False], spectra[True])
    assert np.array_equal(products[False], products[True])
    # Not rounded: some value has low mantissa bits set.
    assert np.any(_float_parts(spectra[True]).view(np.uint32) & 0x1FFF)


def _conv_and_gradients(x, w, data_format, **kwargs):
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = fc.fft_conv2d(x, w, padding="SAME", data_format=data_format, algorithm="fft",
                          **kwargs)
        loss = tf.reduce_sum(y * tf.cos(y))
    dx, dw = tape.gradient(loss, [x, w])
    return y.numpy(), dx.numpy(), dw.numpy()


# The FFT paths of fft_conv2d: one frame with the spectra kept for the backward pass, tiles, and
# the batch in pieces with the spectra recomputed (a memory budget far below the layer's).
_PATHS = {"keep": {}, "tiles": {"tile": 8}, "recompute": {"memory_budget": 1 << 16}}


def _pre_rounding_off(monkeypatch):
    monkeypatch.setattr(execute, "_tf32_spectra", lambda dtype, allow_tf32: False)


@pytest.mark.parametrize("path", sorted(_PATHS))
def test_fft_conv2d_unchanged_on_the_cpu(rng, monkeypatch, path):
    x = tf.constant(rng.standard_normal((4, 14, 14, 6)).astype(np.float32))
    w = tf.constant(rng.standard_normal((3, 3, 6, 8)).astype(np.float32))
    previous = _tf32_on()
    try:
        with tf.device("/CPU:0"):
            rounded = _conv_and_gradients(x, w, "NHWC", **_PATHS[path])
            _pre_rounding_off(monkeypatch)
            plain = _conv_and_gradients(x, w, "NHWC", **_PATHS[path])
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)
    for got, want in zip(rounded, plain):
        assert np.array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("path", sorted(_PATHS))
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fft_conv2d_bit_identical_with_tf32_spectra(rng, monkeypatch, path, data_format):
    """TF32 on: fft_conv2d with its spectra stored rounded to TF32 and products taking them
    unconverted (float32's default) gives y, dx and dw bit for bit as the same composition with
    both attributes False, whose products round the unrounded spectra by the same rule."""
    shape = (16, 20, 20, 12) if data_format == "NHWC" else (16, 12, 20, 20)
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    w = tf.constant(rng.standard_normal((5, 5, 12, 24)).astype(np.float32))
    previous = _tf32_on()
    try:
        with tf.device("/GPU:0"):
            rounded = _conv_and_gradients(x, w, data_format, **_PATHS[path])
            _pre_rounding_off(monkeypatch)
            plain = _conv_and_gradients(x, w, data_format, **_PATHS[path])
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)
    for name, got, want in zip(("y", "dx", "dw"), rounded, plain):
        assert np.array_equal(got, want), (name, np.max(np.abs(got - want)))


@pytest.mark.gpu
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("batch, channels, fft_size", [(2, 3, 8), (2, 3, 32), (64, 48, 16),
                                                       (128, 96, 32), (4, 8, 64)])
def test_rfft2d_round_to_tf32_on_the_gpu(rng, data_format, batch, channels, fft_size):
    """sm_80+ with TF32 on: every stored value is a TF32 value (low 13 bits zero); on sm_90 it is
    exactly the unrounded spectrum rounded to nearest even (NumPy). TF32 off: no rounding."""
    capability = _compute_capability()
    if capability < (8, 0):
        pytest.skip("no TF32 before compute capability 8.0")
    size = fft_size - 3
    shape = ((batch, channels, size, size) if data_format == "NCHW"
             else (batch, size, size, channels))
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    previous = _tf32_on()
    try:
        with tf.device("/GPU:0"):
            plain = fc.ops.rfft2d(x, fft_size, 1, 2, data_format).numpy()
            rounded = fc.ops.rfft2d(x, fft_size, 1, 2, data_format, round_to_tf32=True).numpy()
            compiled = tf.function(
                lambda x: fc.ops.rfft2d(x, fft_size, 1, 2, data_format, round_to_tf32=True),
                jit_compile=True, autograph=False)(x).numpy()
            tf.config.experimental.enable_tensor_float_32_execution(False)
            off = fc.ops.rfft2d(x, fft_size, 1, 2, data_format, round_to_tf32=True).numpy()
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)
    assert np.array_equal(off, plain)
    assert np.array_equal(compiled, rounded)
    rounded_bits = _float_parts(rounded).view(np.uint32)
    assert not np.any(rounded_bits & 0x1FFF)
    if capability != (9, 0):
        pytest.skip("rounding rule checked bit for bit on sm_90 (to nearest even) only")
    expected = _round_to_tf32(_float_parts(plain))
    assert np.array_equal(rounded_bits, expected.view(np.uint32))


@pytest.mark.gpu
def test_spectral_matmul_tf32_operands_on_the_gpu(rng):
    """TF32 on: the product of pre-rounded spectra with tf32_operands is bit for bit the ordinary
    TF32 product, of the rounded spectra and (sm_90, NumPy's rounding) of the unrounded ones."""
    capability = _compute_capability()
    a, b = _complex(rng, (9, 64, 96)), _complex(rng, (9, 96, 80))
    previous = _tf32_on()
    try:
        with tf.device("/GPU:0"):
            x = tf.constant(rng.standard_normal((16, 12, 20, 20)).astype(np.float32))
            spectrum = fc.ops.rfft2d(x, 32, round_to_tf32=True)        # [F, 16, 12]
            plain = fc.ops.spectral_matmul(spectrum, spectrum, adjoint_a=True).numpy()
            taken = fc.ops.spectral_matmul(spectrum, spectrum, adjoint_a=True,
                                           tf32_operands=True).numpy()
            if capability == (9, 0):
                a_tf32 = _round_to_tf32(_float_parts(a)).view(np.complex64)
                b_tf32 = _round_to_tf32(_float_parts(b)).view(np.complex64)
                ordinary = fc.ops.spectral_matmul(a, b).numpy()
                pre_rounded = fc.ops.spectral_matmul(a_tf32, b_tf32, tf32_operands=True).numpy()
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)
    assert np.array_equal(plain, taken)
    if capability == (9, 0):
        assert np.array_equal(ordinary, pre_rounded)

"""Shared fixtures: fresh random inputs, devices (cpu / gpu), eager and tf.function execution."""

import os

import numpy as np
import pytest
import tensorflow as tf

from np_reference import rel_error  # noqa: F401  (tests import it from here)


# Some GPU tests start processes of their own on the same GPU (the out-of-memory test gives its
# process a 2.5 GiB logical GPU). Without memory growth this process's TensorFlow takes nearly all
# of the device's memory at its first GPU op and leaves them too little.
for _gpu in tf.config.list_physical_devices("GPU"):
    tf.config.experimental.set_memory_growth(_gpu, True)


def gpu_available():
    return bool(tf.config.list_physical_devices("GPU"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a GPU (skipped where there is none)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="no GPU visible to TensorFlow")
    if not gpu_available():
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip_gpu)


@pytest.fixture
def rng(request):
    """A generator seeded afresh every run; the seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("FFTCONV_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print("%s: FFTCONV_TEST_SEED=%d" % (request.node.name, seed))
    return np.random.default_rng(seed)


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """Runs the test on the CPU kernels and, where present, on the GPU kernels (TF32 off)."""
    name = "/CPU:0" if request.param == "cpu" else "/GPU:0"
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    with tf.device(name):
        yield name
    tf.config.experimental.enable_tensor_float_32_execution(tf32)


@pytest.fixture(params=["eager", "function"])
def run(request):
    """Calls fn(*args) eagerly or through a tf.function, returning NumPy values."""
    def call(fn, *args):
        if request.param == "function":
            fn = tf.function(fn, autograph=False)
        out = fn(*args)
        return tf.nest.map_structure(lambda t: t.numpy(), out)
    return call


@pytest.fixture
def timed_problems(monkeypatch):
    """A list that receives each problem tuning.tune_problem times during the test (the timing
    still runs)."""
    from tf_fftconv import tuning  # noqa: PLC0415  (the op library loads with it)
    timed = []
    real = tuning.tune_problem

    def tune_problem(problem, *args, **kwargs):
        timed.append(problem)
        return real(problem, *args, **kwargs)

    monkeypatch.setattr(tuning, "tune_problem", tune_problem)
    return timed


def assert_second_order_gradient_as_conv2d(conv, x, w):
    """d/dw of the squared norm of d/dx sum(conv(x, w)^2), a gradient of a gradient through
    ``conv``, equals the same through ``tf.nn.conv2d(x, w, 1, "SAME")`` (float64: to 1e-9)."""
    def gradient_of_gradient(fn):
        with tf.GradientTape() as outer:
            outer.watch(w)
            with tf.GradientTape() as inner:
                inner.watch(x)
                loss = tf.reduce_sum(fn(x, w) ** 2)
            g = inner.gradient(loss, x)
            s = tf.reduce_sum(g * g)
        return outer.gradient(s, w)

    np.testing.assert_allclose(
        gradient_of_gradient(conv).numpy(),
        gradient_of_gradient(lambda a, b: tf.nn.conv2d(a, b, 1, "SAME")).numpy(),
        rtol=1e-9, atol=1e-9)


def followed_plans(layer):
    """The plans an FFTConv2D followed in its traces and eager calls (not a plan made afresh for
    the question, as ``explain`` makes one for a layer that has not run)."""
    return list(layer._plans.entries.values())


def assert_ran(layer_or_model, algorithm):
    """Asserts that every FFTConv2D of a model (or the layer itself) ran, and only ran,
    ``algorithm`` ("fft" or "spatial"), as its recorded plans say."""
    from tf_fftconv.layers import FFTConv2D  # noqa: PLC0415  (the op library loads with it)

    layers = ([layer_or_model] if isinstance(layer_or_model, FFTConv2D) else
              [layer for layer in layer_or_model.layers if isinstance(layer, FFTConv2D)])
    assert layers, "no FFTConv2D in %s" % layer_or_model.name
    for layer in layers:
        plans = followed_plans(layer)
        assert plans, "%s has not run" % layer.name
        assert {plan.algorithm for plan in plans} == {algorithm}, (
            layer.name, [plan.label for plan in plans])

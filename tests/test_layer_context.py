"""What a layer tells the planner about its surroundings: whether training takes the gradient with
respect to its input (not for a model's first layer) and which of its ops tf.nn.conv2d can fuse
(the bias and an activation, on a CPU)."""

import keras
import pytest

import tf_fftconv as fc
from tf_fftconv import cost_model, planning
from tf_fftconv.problem import SPATIAL

LENET_C1 = ((128, 32, 32, 1), (5, 5, 1, 6))


def problem(shape_pair=LENET_C1, device="CPU", **context):
    return planning.make_problem(*shape_pair, "VALID", "NHWC", "float32", device, **context)


def fft_and_spatial(p):
    made = planning.plan(p)
    fft = next(c for c in made.candidates if c.config is not None)
    return fft.estimate.time_s, made.candidate(SPATIAL).estimate.time_s


def test_no_input_gradient_drops_a_pass_on_either_path():
    fft_all, spatial_all = fft_and_spatial(problem())
    fft_two, spatial_two = fft_and_spatial(problem(input_gradient=False))
    assert spatial_two == pytest.approx(spatial_all * 2 / 3)
    assert fft_two < fft_all
    assert problem(input_gradient=False).passes == 2 and problem().passes == 3


def test_epilogue_is_charged_to_the_fft_path_where_the_spatial_one_fuses_it():
    """On a CPU the FFT path takes a bias and ReLU into its transforms (nothing charged) and
    leaves another activation to an op of its own after them (its output read and written);
    compiled by XLA, where the layer's ops are TensorFlow's after the FFT path, all of them."""
    fft, spatial = fft_and_spatial(problem())
    fft_bias, spatial_bias = fft_and_spatial(problem(epilogue="bias"))
    fft_relu, spatial_relu = fft_and_spatial(problem(epilogue="bias+relu"))
    fft_both, spatial_both = fft_and_spatial(problem(epilogue="bias+activation"))
    assert spatial_bias == spatial_relu == spatial_both == spatial
    y_bytes = 4 * 128 * 6 * 28 * 28
    rate = cost_model.DEVICE_COSTS["CPU"].epilogue_bytes_per_s
    assert fft_bias == fft_relu == fft
    assert fft_both - fft == pytest.approx(2 * y_bytes / rate, rel=1e-6)
    for epilogue, passes in (("bias", 3), ("bias+relu", 5), ("bias+activation", 5)):
        unfused = problem(epilogue=epilogue, compiled=True)
        assert not cost_model.fuses_epilogue(unfused)
        assert cost_model.epilogue_bytes(unfused) == passes * y_bytes
    # A GPU: XLA fuses them on either path, and eagerly they cost microseconds.
    assert cost_model.DEVICE_COSTS["GPU"].epilogue_bytes_per_s == 0
    assert fft_and_spatial(problem(device="GPU", epilogue="bias+activation")) == \
        fft_and_spatial(problem(device="GPU"))


def test_context_is_part_of_the_timing_key_and_the_explanation():
    keys = {problem(**c).key() for c in ({}, {"input_gradient": False}, {"epilogue": "bias"})}
    assert len(keys) == 3
    text = str(planning.plan(problem(input_gradient=False, epilogue="bias+activation")))
    assert "no input gradient, then bias+activation" in text
    assert "estimated forward + weight gradient" in text
    with pytest.raises(KeyError):
        problem(epilogue="softmax")


def test_first_layer_of_a_functional_model_takes_no_input_gradient():
    inputs = keras.Input((28, 28, 1))
    x = keras.layers.ZeroPadding2D(2)(inputs)            # no weights: still the data
    first = fc.FFTConv2D(6, 5, activation="relu")
    second = fc.FFTConv2D(16, 5, use_bias=False)
    depthwise = fc.FFTDepthwiseConv2D(3, activation="tanh")
    y = depthwise(second(keras.layers.MaxPooling2D(2)(first(x))))
    keras.Model(inputs, y)
    assert first._input_gradient is False and second._input_gradient is True
    assert depthwise._input_gradient is True
    assert (first._epilogue(), second._epilogue(), depthwise._epilogue()) == (
        "bias+relu", "", "bias+activation")
    assert "no input gradient" in fc.explain(first)


def test_sequential_and_frozen_upstream():
    frozen = keras.layers.Conv2D(4, 3)
    frozen.trainable = False
    after_frozen = fc.FFTConv2D(4, 3, activation="gelu")
    keras.Sequential([keras.Input((12, 12, 2)), frozen, after_frozen])
    assert after_frozen._input_gradient is False and after_frozen._epilogue() == "bias"
    trained = keras.layers.Conv2D(4, 3)
    after_trained = fc.FFTConv2D(4, 3)
    keras.Sequential([keras.Input((12, 12, 2)), trained, after_trained])
    assert after_trained._input_gradient is True


def test_layer_called_on_tensors_assumes_the_input_gradient():
    import numpy as np  # noqa: PLC0415
    layer = fc.FFTConv2D(3, 3)
    layer(np.zeros((1, 8, 8, 2), np.float32))
    assert layer._input_gradient is True

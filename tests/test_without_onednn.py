"""CPUs where TensorFlow runs its Eigen kernels, not oneDNN's (its default on CPUs without AVX-512
VNNI, AVX512-BF16 or AMX; ``TF_ENABLE_ONEDNN_OPTS=0`` anywhere): those refuse the gradients of
dilated and grouped convolutions and depthwise ones with unequal strides
(``planning.spatial_refusal``). ``algorithm="auto"`` takes the FFT path there and trains every
stride, dilation, group count and multiplier, ``explain`` says why, and ``algorithm="spatial"``
is refused at the call.

Each test runs with the fact forced off (so it holds on any CPU) and as TensorFlow runs here (CI
runs the suite with ``TF_ENABLE_ONEDNN_OPTS=0`` and ``=1``, so both kinds of CPU for real).
"""

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import strided_reference as reference
import tf_fftconv as fc
from test_strided_grouped import check_case
from tf_fftconv import device, planning
from tf_fftconv.conv import conv2d_with_plan

PAIRS = list(itertools.product((1, 2, 3), repeat=2))   # every (h, w) of 1-3, unequal ones too


@pytest.fixture(params=["forced off", "as TensorFlow runs"])
def onednn(request, monkeypatch):
    """The oneDNN fact forced off, or as TensorFlow says; plans made under it are forgotten
    before and after."""
    if request.param == "forced off":
        monkeypatch.setattr(device, "onednn_enabled", lambda: False)
    planning.clear()
    yield device.onednn_enabled()
    planning.clear()


def _cases(depthwise):
    """Every stride pair and dilation pair of 1-3, each with a group count (groups 1, 2, 3 of 6
    channels) or a multiplier (1-3) and a padding in turn."""
    for index, (strides, dilations) in enumerate(itertools.product(PAIRS, PAIRS)):
        third = index % 3
        padding = ("SAME", "VALID")[index % 2]
        if depthwise:
            w_shape, groups = (3, 2, 3, third + 1), 3
        else:
            groups = third + 1
            w_shape = (3, 2, 6 // groups, 2 * groups)
        yield dict(x_shape=(2, 9, 10, w_shape[2] if depthwise else 6), w_shape=w_shape,
                   strides=strides, dilations=dilations, padding=padding, groups=groups,
                   data_format="NHWC", depthwise=depthwise)


@pytest.mark.parametrize("depthwise", [False, True], ids=["fft_conv2d", "fft_depthwise_conv2d"])
def test_auto_trains_every_stride_dilation_and_group(onednn, depthwise, rng):
    """Output and both gradients against the float64 reference, on the CPU; where TensorFlow
    refuses the spatial path, auto took the FFT path."""
    for case in _cases(depthwise):
        plans = []

        def conv(x, w, case=case):
            y, plan = conv2d_with_plan(x, w, case["padding"], strides=list(case["strides"]),
                                       dilations=list(case["dilations"]), depthwise=depthwise)
            plans.append(plan)
            return y

        with tf.device("/CPU:0"):
            check_case(case, rng, conv)
        refusal = planning.spatial_refusal(plans[0].problem)
        if refusal is not None:
            assert plans[0].algorithm == "fft", (case, plans[0].label)
        assert (refusal is not None) == (not onednn and (
            case["dilations"] != (1, 1) or case["groups"] > 1 if not depthwise else
            case["strides"][0] != case["strides"][1]
            or (case["strides"] != (1, 1) and case["dilations"] != (1, 1)))), case


def test_keras_layers_train_with_unknown_sizes(onednn, rng):
    """A grouped layer with its bias (which TensorFlow's graph optimizer would fuse), a dilated one
    and a depthwise one with unequal strides, in a model of unknown image size: Keras' fit, in a
    graph, on the CPU."""
    model = keras.Sequential([
        keras.Input((None, None, 4)),
        fc.FFTConv2D(8, 3, groups=2, padding="same"),
        fc.FFTConv2D(8, 3, dilation_rate=2, padding="same", activation="relu"),
        fc.FFTDepthwiseConv2D(3, strides=(1, 2), padding="same"),
        keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(1)])
    model.compile("sgd", "mse", jit_compile=False)
    x = rng.standard_normal((4, 12, 12, 4)).astype(np.float32)
    with tf.device("/CPU:0"):
        history = model.fit(x, np.ones((4, 1), np.float32), epochs=2, batch_size=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    for layer in model.layers[:3]:
        for plan in layer._plans.entries.values():
            assert plan.algorithm == "fft" or planning.spatial_refusal(plan.problem) is None


@pytest.mark.parametrize("options, limitation", [
    (dict(dilations=2), "the gradients of a dilated tf.nn.conv2d"),
    (dict(dilations=[1, 3], strides=2), "the gradients of a dilated tf.nn.conv2d"),
    (dict(groups=2), "the gradients of a grouped tf.nn.conv2d"),
    (dict(depthwise=True, strides=[1, 2]), "tf.nn.depthwise_conv2d with unequal strides"),
    (dict(depthwise=True, strides=2, dilations=2), "the gradients of a dilated tf.nn.conv2d "
                                                   r"\(.*\); and the gradients of a grouped"),
])
def test_spatial_is_refused_at_the_call(monkeypatch, options, limitation):
    """algorithm="spatial" where TensorFlow refuses it: the library's InvalidArgumentError names
    the limitation and the way out at the call, eagerly and in a graph (also where only the
    gradients are refused: a call cannot know whether it will be differentiated); explain says
    why auto took the FFT path. The same call runs on oneDNN's kernels and under XLA."""
    options = dict(options)
    depthwise = options.pop("depthwise", False)
    x = tf.zeros([1, 11, 12, 4])
    w = tf.zeros([3, 3, 4, 1] if depthwise else [3, 3, 4 // options.get("groups", 1), 4])
    conv = fc.fft_depthwise_conv2d if depthwise else fc.fft_conv2d
    message = (r'algorithm="spatial" cannot compute .*without oneDNN, TensorFlow\'s CPU kernels '
               r'refuse %s.*Use algorithm="fft" or "auto"' % limitation)

    monkeypatch.setattr(device, "onednn_enabled", lambda: False)
    planning.clear()
    with tf.device("/CPU:0"):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            conv(x, w, padding="SAME", algorithm="spatial", **options)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            tf.function(lambda x: conv(x, w, padding="SAME", algorithm="spatial", **options))(x)

        def trained(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = conv(x, w, padding="SAME", algorithm="spatial", **options)
            return tape.gradient(y, x)

        assert tf.function(trained, jit_compile=True)(x).shape == x.shape   # XLA's convolution
    explained = fc.explain(x.shape, w.shape, padding="SAME", depthwise=depthwise, device="CPU",
                           **options)
    assert "  chosen: FFT" in explained
    assert re.search("  note: spatial convolution is no candidate: without oneDNN, TensorFlow's "
                     "CPU kernels refuse " + limitation, explained)
    assert "The FFT path computes it" in explained
    assert "spatial" not in [line.split()[0] for line in explained.splitlines()
                             if line.startswith("    ")]   # not among the candidates

    monkeypatch.setattr(device, "onednn_enabled", lambda: True)
    planning.clear()
    with tf.device("/CPU:0"):
        assert "no candidate" not in fc.explain(x.shape, w.shape, padding="SAME",
                                                depthwise=depthwise, device="CPU", **options)
    assert "no candidate" not in fc.explain(x.shape, w.shape, padding="SAME",
                                            depthwise=depthwise, device="GPU", **options)
    planning.clear()


def test_explain_with_sizes_unknown(monkeypatch):
    """Sizes unknown while tracing, where the rule would say spatial: the FFT path in one frame
    sized at run time, and why."""
    monkeypatch.setattr(device, "onednn_enabled", lambda: False)
    planning.clear()
    explained = fc.explain([None, None, None, 4], [3, 3, 2, 4], device="CPU")
    planning.clear()
    assert "  chosen: FFT, one frame per image sized at run time" in explained
    assert "  decided by: the only path TensorFlow runs here" in explained
    assert "refuse the gradients of a grouped tf.nn.conv2d" in explained


def test_onednn_enabled_is_tensorflows_answer(monkeypatch):
    """The fact is TensorFlow's own (``IsMklEnabled``), in this process and in one started with
    the opposite ``TF_ENABLE_ONEDNN_OPTS``; without that function, the switch as set, off
    where unset."""
    from tensorflow.python.util import _pywrap_util_port  # noqa: PLC0415
    assert device.onednn_enabled() == _pywrap_util_port.IsMklEnabled()
    opposite = "0" if device.onednn_enabled() else "1"
    answer = subprocess.run(
        [sys.executable, "-c", "from tf_fftconv import device; "
         "print(device.onednn_enabled())"], capture_output=True, text=True, check=True,
        env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS=opposite, TF_CPP_MIN_LOG_LEVEL="3"),
        cwd=Path(__file__).resolve().parents[1])
    assert answer.stdout.split()[-1] == str(opposite == "1")

    monkeypatch.delattr(_pywrap_util_port, "IsMklEnabled")
    for value, enabled in (("1", True), ("0", False), ("", False)):
        monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", value)
        assert device.onednn_enabled.__wrapped__() is enabled

"""The large-kernel ConvNet (models.largekernel) and its reproduction (--model largekernel): the
FFT model is its DepthwiseConv2D twin's function, trains as it does, and its large depthwise layers
run the FFT path."""

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_fftconv.experiments import models
from tf_fftconv.layers import FFTDepthwiseConv2D

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _depthwise_plans(model):
    return {layer.name: sorted({plan.algorithm for plan in layer.explain_plans()})
            for layer in model.layers if isinstance(layer, FFTDepthwiseConv2D)}


def test_layers_stages_and_kernels():
    model = models.largekernel("fft", widths=(8, 16, 32), kernels=(27, 13, 7))
    depthwise = [layer for layer in model.layers if isinstance(layer, FFTDepthwiseConv2D)]
    assert [layer.kernel_size for layer in depthwise] == [(27, 27), (13, 13), (7, 7)]
    # 28 -> 14 -> 7 pixels: each depthwise layer sees its stage's image.
    assert [layer.input.shape[1] for layer in depthwise] == [28, 14, 7]
    spatial = models.largekernel("spatial", widths=(8, 16, 32))
    assert not any(isinstance(layer, FFTDepthwiseConv2D) for layer in spatial.layers)
    assert [w.shape for w in spatial.get_weights()] == [w.shape for w in model.get_weights()]
    with pytest.raises(ValueError, match="conv must be one of"):
        models.largekernel("winograd")
    with pytest.raises(ValueError, match="as long as each other"):
        models.largekernel("fft", widths=(8, 16), kernels=(27,))


def _twins(rng, activation):
    # Keras' initializers drawn from the test's seed, so that a failure can be replayed.
    keras.utils.set_random_seed(int(rng.integers(2 ** 31)))
    spatial = models.largekernel("spatial", widths=(8, 16, 16), activation=activation)
    fft = models.largekernel("fft", widths=(8, 16, 16), activation=activation)
    fft.set_weights(spatial.get_weights())
    images = rng.random((32, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, 32)
    return spatial, fft, images, labels


def _losses(model, images, labels):
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model.fit(images, labels, epochs=4, batch_size=16, verbose=0,
                     shuffle=False).history["loss"]


def test_fft_model_is_its_twins_function_and_takes_its_gradients(rng):
    """With a smooth activation (tanh), from the same weights on the same batches: the same
    outputs, every weight's gradient and the same losses, to float32 rounding.

    With ReLU the gradients cannot be held to that: ReLU's gradient jumps at 0, and an output that
    is 0 or within rounding of it in one model (Keras' zero biases make whole blank windows exactly
    0 in DepthwiseConv2D and +-1e-10 on the FFT path) takes the other side of the jump in the other.
    Over twelve fresh draws with ReLU the worst depthwise bias gradient differed by 6-49%, and even
    from random biases a single output near 0 moved a 1x1 kernel's gradient by 0.4% (both models'
    subgradients are valid; docs/keras.md). With tanh, over fifteen draws: gradients within 2.1e-6,
    losses within 1.1e-7."""
    spatial, fft, images, labels = _twins(rng, "tanh")
    want, got = spatial(images).numpy(), fft(images).numpy()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    gradients = {}
    for name, model in (("spatial", spatial), ("fft", fft)):
        with tf.GradientTape() as tape:
            value = loss(labels, model(images, training=True))
        gradients[name] = tape.gradient(value, model.trainable_weights)
    for weight, got, want in zip(fft.trainable_weights, gradients["fft"], gradients["spatial"]):
        error = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert error < 1e-4, (weight.path, error)
    np.testing.assert_allclose(_losses(fft, images, labels), _losses(spatial, images, labels),
                               rtol=1e-4)
    assert set(map(tuple, _depthwise_plans(fft).values())) == {("fft",)}


def test_relu_fft_model_is_its_twins_function_and_trains_as_it_does(rng):
    """The default model (ReLU, zero biases): the twin's outputs to float32 rounding, and a loss
    curve that falls as the twin's. The curves are held to 2e-3, not to rounding: the two models
    take different valid subgradients where an output lies on ReLU's kink (above), which moved the
    losses by up to 1.8e-4 in four epochs over fifteen fresh draws."""
    spatial, fft, images, labels = _twins(rng, "relu")
    want, got = spatial(images).numpy(), fft(images).numpy()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
    losses = {"fft": _losses(fft, images, labels), "spatial": _losses(spatial, images, labels)}
    np.testing.assert_allclose(losses["fft"], losses["spatial"], rtol=2e-3)
    assert losses["fft"][-1] < losses["fft"][0]
    assert set(map(tuple, _depthwise_plans(fft).values())) == {("fft",)}


def test_cli_runs_the_large_kernel_convnet(tmp_path):
    """--model largekernel: the same table, its rows named for the model, and the FFT rows' depthwise
    layers on the FFT path."""
    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run(
        [sys.executable, "-m", "tf_fftconv.reproduce", "--model", "largekernel", "--dataset",
         "synthetic", "--epochs", "1", "--batch-size", "32", "--limit-train", "64",
         "--limit-test", "32", "--no-warm-up", "--json", str(out)],
        env=env, capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for row in ("large-kernel ConvNet \\| Baseline", "large-kernel ConvNet, FFT \\| Frequency",
                "large-kernel ConvNet, auto \\| Automatic"):
        assert re.search(r"^\| Synthetic " + row, done.stdout, re.M), row
    result = json.loads(out.read_text())
    assert result["settings"]["model"] == "largekernel"
    assert set(result["auto_choices"]) == {"s0b0_dw27", "s1b0_dw13", "s2b0_dw7"}
    # The FFT row's depthwise layers ran the FFT path; the baseline's ran DepthwiseConv2D; the
    # 3x3 stem and downsampling layers are Conv2D in both.
    for key, depthwise in (("fft", "fft"), ("baseline", "spatial")):
        plans = result["runs"][key]["plans"]
        assert set(plans) == {"stem", "down1", "down2", "s0b0_dw27", "s1b0_dw13", "s2b0_dw7"}
        for name, records in plans.items():
            want = depthwise if "_dw" in name else "spatial"
            assert [r["algorithm"] for r in records] == [want], (key, name, records)

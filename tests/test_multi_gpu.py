"""The FFT LeNet under MirroredStrategy with XLA on every replica, against one GPU."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc

pytestmark = pytest.mark.gpu


def _train(strategy, weights, images, labels, epochs=3):
    with strategy.scope():
        model = fc.models.lenet5(conv="fft", input_shape=(28, 28, 1))
        model.set_weights(weights)
        model.compile(optimizer=keras.optimizers.SGD(0.05), jit_compile=True,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(images, labels, batch_size=64, epochs=epochs, shuffle=False, verbose=0)
    return np.array(history.history["loss"]), model.jit_compile


def test_mirrored_strategy_with_xla_matches_one_gpu(rng):
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    images = rng.random((512, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, 512)
    weights = fc.models.lenet5(conv="fft", input_shape=(28, 28, 1)).get_weights()
    one, one_jit = _train(tf.distribute.OneDeviceStrategy(gpus[0].name), weights, images, labels)
    two, two_jit = _train(tf.distribute.MirroredStrategy([g.name for g in gpus[:2]]), weights,
                          images, labels)
    assert one_jit and two_jit
    assert one[-1] < one[0]  # it trains
    # Gradients summed over two replicas instead of one batch: equal up to float rounding.
    np.testing.assert_allclose(two, one, rtol=2e-3)

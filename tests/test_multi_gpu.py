"""The FFT LeNet under MirroredStrategy with XLA on every replica, against one GPU.

Each replica's forward and backward pass is one XLA program (tf.function(jit_compile=True), run by
strategy.run on both GPUs); the strategy sums the replicas' gradients and SGD applies them. One GPU
runs the same loop on the whole batch, from the same weights on the same batches.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_fftconv as fc

pytestmark = pytest.mark.gpu
BATCH = 64


def _train(strategy, weights, images, labels, steps=12):
    with strategy.scope():
        model = fc.models.lenet5(conv="fft", input_shape=(28, 28, 1))
        model.set_weights(weights)
        optimizer = keras.optimizers.SGD(0.05)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="sum")

    @tf.function(jit_compile=True)
    def gradients(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)) / BATCH  # mean over the global batch
        return loss, tape.gradient(loss, model.trainable_variables)

    @tf.function
    def step(x, y):
        def replica(x, y):
            loss, grads = gradients(x, y)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = strategy.run(replica, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    data = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).repeat()
    batches = iter(strategy.experimental_distribute_dataset(data))
    return np.array([float(step(*next(batches))) for _ in range(steps)])


def test_mirrored_strategy_with_xla_matches_one_gpu(rng):
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    # One batch seen again and again: the loss must fall as the model learns it.
    images = rng.random((BATCH, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, BATCH)
    weights = fc.models.lenet5(conv="fft", input_shape=(28, 28, 1)).get_weights()
    one = _train(tf.distribute.OneDeviceStrategy(gpus[0].name), weights, images, labels)
    two = _train(tf.distribute.MirroredStrategy([g.name for g in gpus[:2]]), weights, images,
                 labels)
    assert one[-4:].mean() < one[:4].mean()  # it trains
    # Gradients summed over two replicas instead of one batch: equal up to float rounding.
    np.testing.assert_allclose(two, one, rtol=2e-3)

"""One worker of a MultiWorkerMirroredStrategy cluster training the FFT LeNet on the CPU kernels
(tests/test_distributed.py starts two, and one alone for the reference).

    TF_CONFIG='{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": I}}' \
        python tests/distributed_worker.py OUT.npz [--steps N] [--global-batch B] [--seed S]

Every worker builds the same model from the same seeded weights. At each step the one global batch
of B images is split between the workers by rows (worker i takes rows [i B/n, (i + 1) B/n)); each takes
its mean-over-the-global-batch loss, the strategy sums the gradients across workers, and SGD applies
them. OUT.npz gets the losses and the final weights.
"""

import argparse
import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # CPU workers, also on a host with a GPU

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_fftconv as fc  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--global-batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG; first, as it must be
    workers = strategy.num_replicas_in_sync  # one replica (the CPU) per worker
    rng = np.random.default_rng(args.seed)
    # One global batch, seen at every step: the loss must fall as the model learns it.
    images = rng.random((args.global_batch, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, args.global_batch).astype(np.int32)

    with strategy.scope():
        model = fc.models.lenet5(conv="fft", input_shape=(28, 28, 1))
        model.set_weights([rng.standard_normal(w.shape).astype(np.float32) * 0.1
                           for w in model.get_weights()])
        optimizer = tf.keras.optimizers.SGD(0.05)

    def shard(context):
        per_worker = context.get_per_replica_batch_size(args.global_batch)
        rows = slice(context.input_pipeline_id * per_worker, (context.input_pipeline_id + 1) * per_worker)
        return tf.data.Dataset.from_tensor_slices((images[rows], labels[rows])).batch(per_worker).repeat()

    batches = iter(strategy.distribute_datasets_from_function(shard))

    @tf.function
    def step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.keras.losses.sparse_categorical_crossentropy(
                    y, model(x, training=True), from_logits=True)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=args.global_batch)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            return loss
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica, args=(x, y)), axis=None)

    losses = [float(step(*next(batches))) for _ in range(args.steps)]
    # The path each convolution followed in the traced step (the plan the layer recorded).
    plans = [plan.algorithm for layer in model.layers if isinstance(layer, fc.FFTConv2D)
             for plan in layer.explain_plans()]
    np.savez(args.out, losses=np.array(losses), workers=workers, plans=np.array(plans),
             **{f"w{i}": w for i, w in enumerate(model.get_weights())})


if __name__ == "__main__":
    main()

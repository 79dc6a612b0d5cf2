"""Half-precision accuracy on trained LeNet activations: fft_conv2d against tf.nn.conv2d.

Trains the reproduction's LeNet-5 (Conv2D layers, float32) on real data, takes one test batch,
and gives both convolutions of the trained network the inputs they see there: the layer's input
activations, its trained weights and the cotangent of the loss with respect to its output (before
bias and activation), scaled by a power of two as a loss scale would (Keras' mixed-precision
optimizer multiplies the loss so that small gradients survive float16). Each half type's forward
result and both gradients, from `tf_fftconv.fft_conv2d` (the FFT path) and from `tf.nn.conv2d` in
the same type on the same rounded inputs, are compared with the float64 convolution of those
rounded inputs.

    python -m tf_fftconv.experiments.half_accuracy [--dataset fashion_mnist] [--epochs 1]
        [--limit-train 60000] [--device /GPU:0] [--json FILE]

Prints one row per (layer, dtype, tensor): both relative errors (max |error| / max |reference|)
and their ratio; exit status 1 when a ratio is above 2 (issue: "no worse than 2x conv2d's error").
"""

import argparse
import contextlib
import json
import sys

import keras
import numpy as np
import tensorflow as tf

import tf_fftconv as fc
from tf_fftconv.experiments import data, models

LAYERS = ("c1", "c3")
DTYPES = (tf.float16, tf.bfloat16)
# The loss scale puts the largest cotangent of a layer at about this magnitude: well inside
# float16's range, as a dynamic loss scale keeps gradients.
COTANGENT_MAX = 2.0 ** 10


def relative_error(value, reference):
    value = tf.cast(value, tf.float64).numpy()
    return float(np.max(np.abs(value - reference)) / max(np.max(np.abs(reference)), 1e-300))


def train_lenet(arrays, epochs, limit_train, seed=0):
    """The Conv2D LeNet-5 trained for `epochs` on `arrays` (float32, XLA off: any device)."""
    keras.utils.set_random_seed(seed)
    train, _, info = data.pipelines(arrays, 128, seed=seed, limit_train=limit_train,
                                    limit_test=128, data_format="channels_last")
    model = models.compile_lenet(models.lenet5("spatial", info.image_shape,
                                               info.num_classes, data_format="channels_last"),
                                 jit_compile=False)
    model.fit(train, epochs=epochs, verbose=0)
    return model, info


def layer_problems(model, images, labels):
    """For c1 and c3 of the trained `model` on one batch: (x, w, dy) in float64, where x is the
    layer's input, w its kernel [kh, kw, Cin, Cout] and dy the loss's cotangent of its output
    before bias and activation. The forward pass is the model's, written out in float64."""
    weights = {layer.name: [tf.cast(v, tf.float64) for v in layer.weights]
               for layer in model.layers if layer.weights}
    x1 = tf.cast(images, tf.float64)
    pool = tf.nn.max_pool2d
    with tf.GradientTape(persistent=True) as tape:
        z1 = tf.nn.conv2d(x1, weights["c1"][0], 1, "VALID")
        tape.watch(z1)
        x3 = pool(tf.nn.relu(z1 + weights["c1"][1]), 2, 2, "VALID")
        z3 = tf.nn.conv2d(x3, weights["c3"][0], 1, "VALID")
        tape.watch(z3)
        h = tf.reshape(pool(tf.nn.relu(z3 + weights["c3"][1]), 2, 2, "VALID"),
                       [tf.shape(x1)[0], -1])
        for name in ("c5", "f6"):
            h = tf.nn.relu(h @ weights[name][0] + weights[name][1])
        logits = h @ weights["logits"][0] + weights["logits"][1]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    check = model(images, training=False)
    assert np.max(np.abs(check.numpy() - logits.numpy())) <= 1e-3 * np.max(np.abs(check.numpy()))
    problems = {}
    for name, x, z in (("c1", x1, z1), ("c3", x3, z3)):
        dy = tape.gradient(loss, z).numpy()
        scale = 2.0 ** np.floor(np.log2(COTANGENT_MAX / np.max(np.abs(dy))))
        problems[name] = (x.numpy(), weights[name][0].numpy(), dy * scale, scale)
    return problems


def conv_errors(x, w, dy, dtype, padding="VALID"):
    """{"fft": [y, dx, dw errors], "conv2d": [...]}: both convolutions on x, w, dy rounded to
    `dtype`, against the float64 convolution of the rounded values."""
    x_half, w_half, dy_half = (tf.cast(tf.constant(v), dtype) for v in (x, w, dy))
    exact = [tf.cast(v, tf.float64) for v in (x_half, w_half, dy_half)]
    with tf.GradientTape() as tape:
        tape.watch(exact[:2])
        y = tf.nn.conv2d(exact[0], exact[1], 1, padding)
    reference = [y.numpy()] + [g.numpy() for g in tape.gradient(
        y, exact[:2], output_gradients=exact[2])]
    errors = {}
    for name, conv in (("fft", lambda a, b: fc.fft_conv2d(a, b, padding, algorithm="fft")),
                       ("conv2d", lambda a, b: tf.nn.conv2d(a, b, 1, padding))):
        with tf.GradientTape() as tape:
            tape.watch([x_half, w_half])
            y = conv(x_half, w_half)
        dx, dw = tape.gradient(y, [x_half, w_half], output_gradients=dy_half)
        errors[name] = [relative_error(t, r) for t, r in zip((y, dx, dw), reference)]
    return errors


def measure(problems):
    """Rows (layer, dtype, tensor, fft error, conv2d error, ratio)."""
    rows = []
    for name in LAYERS:
        x, w, dy, _ = problems[name]
        for dtype in DTYPES:
            errors = conv_errors(x, w, dy, dtype)
            for i, tensor in enumerate(("y", "dx", "dw")):
                ours, theirs = errors["fft"][i], errors["conv2d"][i]
                rows.append((name, dtype.name, tensor, ours, theirs,
                             ours / theirs if theirs else float("inf")))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion_mnist")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit-train", type=int, default=None)
    parser.add_argument("--device", default=None, help="e.g. /GPU:0 (default: TensorFlow's)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    arrays = data.load_arrays(args.dataset, fallback=False)
    with tf.device(args.device) if args.device else contextlib.nullcontext():
        print(f"training LeNet-5 (Conv2D) on {arrays.name}, {args.epochs} epoch(s)", flush=True)
        model, _ = train_lenet(arrays, args.epochs, args.limit_train)
        images, labels = next(iter(data.pipelines(arrays, 128, limit_test=128, shuffle=False,
                                                  data_format="channels_last")[1]))
        problems = layer_problems(model, images, labels)
        rows = measure(problems)
    device = args.device or ("/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0")
    print(f"device {device}; loss scales: "
          + ", ".join(f"{n} 2^{int(np.log2(problems[n][3]))}" for n in LAYERS))
    print(f"{'layer':6s}{'dtype':10s}{'tensor':8s}{'fft_conv2d':>12s}{'tf.nn.conv2d':>14s}"
          f"{'ratio':>8s}")
    for name, dtype, tensor, ours, theirs, ratio in rows:
        print(f"{name:6s}{dtype:10s}{tensor:8s}{ours:12.3e}{theirs:14.3e}{ratio:8.2f}")
    worst = max(row[5] for row in rows)
    print(f"worst ratio {worst:.2f} (at most 2 asked)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "dataset": arrays.name, "epochs": args.epochs,
                       "tensorflow": tf.__version__, "rows": rows}, f, indent=1)
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

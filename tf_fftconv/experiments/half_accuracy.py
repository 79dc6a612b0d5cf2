"""Half-precision accuracy on trained LeNet activations: fft_conv2d against tf.nn.conv2d.

Trains the reproduction's LeNet-5 (Conv2D layers, float32) on real data, takes one test batch,
and gives both convolutions of the trained network the inputs they see there: the layer's input
activations, its trained weights and the cotangent of the loss with respect to its output (before
bias and activation), scaled by a power of two as a loss scale would (Keras' mixed-precision
optimizer multiplies the loss so that small gradients survive float16). Each half type's forward
result and both gradients, from `tf_fftconv.fft_conv2d` (the FFT path, with the spectra its plan
chooses, and again with half-precision spectra forced) and from `tf.nn.conv2d` in the same type on
the same rounded inputs, are compared with the float64 convolution of those rounded inputs.

    python -m tf_fftconv.experiments.half_accuracy [--dataset fashion_mnist] [--epochs 1]
        [--limit-train 60000] [--device /GPU:0] [--json FILE] [--emulate]

Prints one row per (layer, dtype, tensor): the relative errors (max |error| / max |reference|) of
the FFT path as planned and of tf.nn.conv2d, their ratio, the FFT path's error with half spectra
and its ratio, and the plan; exit status 1 when a ratio of the path as planned is above 2 (issue:
"no worse than 2x conv2d's error").

`--emulate` adds where the error comes from: the FFT path written out in float64 NumPy, rounding
only where the kernels store a value (the image, weight and output-gradient spectra, the three
per-bin products, the outputs), once as the half-spectrum kernels store them (`STORAGE["half
spectra"]`) and once for each other storage choice in `STORAGE` ("all float32" is the float32
spectra that small layers' plans take), each against the error of rounding the exact result once
(what a float32-accumulating convolution does).
"""

import argparse
import contextlib
import json
import sys

import keras
import ml_dtypes
import numpy as np
import tensorflow as tf

import tf_fftconv as fc
from tf_fftconv.execute import _weight_gain
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
    """{"fft": [y, dx, dw errors], "fft half spectra": [...], "conv2d": [...], "plan": label}:
    the convolutions on x, w, dy rounded to `dtype`, against the float64 convolution of the
    rounded values."""
    x_half, w_half, dy_half = (tf.cast(tf.constant(v), dtype) for v in (x, w, dy))
    exact = [tf.cast(v, tf.float64) for v in (x_half, w_half, dy_half)]
    with tf.GradientTape() as tape:
        tape.watch(exact[:2])
        y = tf.nn.conv2d(exact[0], exact[1], 1, padding)
    reference = [y.numpy()] + [g.numpy() for g in tape.gradient(
        y, exact[:2], output_gradients=exact[2])]
    problem = fc.planning.make_problem(x.shape, w.shape, padding, "NHWC", dtype)
    errors = {"plan": fc.planning.plan(problem, "fft").label}  # what fft_conv2d below follows
    for name, conv in (("fft", lambda a, b: fc.fft_conv2d(a, b, padding, algorithm="fft")),
                       ("fft half spectra", lambda a, b: fc.fft_conv2d(
                           a, b, padding, algorithm="fft", half_spectra=True)),
                       ("conv2d", lambda a, b: tf.nn.conv2d(a, b, 1, padding))):
        with tf.GradientTape() as tape:
            tape.watch([x_half, w_half])
            y = conv(x_half, w_half)
        dx, dw = tape.gradient(y, [x_half, w_half], output_gradients=dy_half)
        errors[name] = [relative_error(t, r) for t, r in zip((y, dx, dw), reference)]
    return errors


# Where the FFT path rounds, for --emulate: the type each stored value is rounded to, as a name in
# _ROUND ("io": the input / output half type). "spectra": the image, weight and output-gradient
# spectra (rfft2d's outputs); "products": the per-bin products Y, dX, dW (spectral_matmul's).
STORAGE = {
    "half spectra": {"spectra": "io", "products": "io"},
    "products float32": {"spectra": "io", "products": "float32"},
    "spectra float32": {"spectra": "float32", "products": "io"},
    "float16 spectra and products": {"spectra": "float16", "products": "float16"},
    "all float32": {"spectra": "float32", "products": "float32"},
}
_ROUND = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def _rounded(values, type_name):
    """`values` (real or complex float64) rounded to `type_name`, returned as float64."""
    if np.iscomplexobj(values):
        return _rounded(values.real, type_name) + 1j * _rounded(values.imag, type_name)
    return values.astype(_ROUND[type_name]).astype(np.float64)


def emulated_errors(x, w, dy, io, storage, fft_size):
    """[y, dx, dw] relative errors of the FFT path (VALID, NHWC, in one `fft_size` frame) written
    out in float64 with the roundings of `storage` (a STORAGE entry), and the same for rounding
    the exact result once to `io`; x, w, dy already hold `io` values.

    As the kernels: spectra mean-normalised (divided by S^2), float16 weights multiplied by
    execute._weight_gain before their transform, each product scaled by alpha = S^2 (/ gain), the
    inverse of a product spectrum scaled by S^2 (docs/architecture.md, "Half precision")."""
    spectrum_type, product_type = (io if storage[k] == "io" else storage[k]
                                   for k in ("spectra", "products"))
    size = fft_size
    kernel = w.shape[:2]
    gain = _weight_gain(tf.float16, size, kernel) if spectrum_type == "float16" else 1
    out_h, out_w = x.shape[1] - kernel[0] + 1, x.shape[2] - kernel[1] + 1

    def rfft(images):                   # [B, H, W, C] -> [B, S, S/2 + 1, C]
        return np.fft.rfft2(images, s=(size, size), axes=(1, 2))

    def irfft(spectrum, height, width):
        return np.fft.irfft2(spectrum, s=(size, size), axes=(1, 2))[:, :height, :width]

    def products(xs, ws, dys):          # per bin: Y = X W^H, dX = dY W, dW = dY^H X
        return (np.einsum("bijc,oijc->bijo", xs, np.conj(ws)),
                np.einsum("bijo,oijc->bijc", dys, ws),
                np.einsum("bijo,bijc->oijc", np.conj(dys), xs))

    w_images = w.transpose(3, 0, 1, 2)  # [Cout, kh, kw, Cin]: one image per output channel
    exact = (rfft(x), rfft(w_images), rfft(dy))
    stored = [_rounded(s * scale / size ** 2, spectrum_type)
              for s, scale in zip(exact, (1, gain, 1))]
    alphas = (size ** 2 / gain, size ** 2 / gain, size ** 2)
    windows = ((out_h, out_w), x.shape[1:3], kernel)
    ours = [_rounded(irfft(_rounded(p * alpha, product_type) * size ** 2, *hw), io)
            for p, alpha, hw in zip(products(*stored), alphas, windows)]
    references = [irfft(p, *hw) for p, hw in zip(products(*exact), windows)]
    ours[2], references[2] = (t.transpose(1, 2, 3, 0) for t in (ours[2], references[2]))

    def error(value, reference):
        return float(np.max(np.abs(value - reference)) / np.max(np.abs(reference)))
    return ([error(o, r) for o, r in zip(ours, references)],
            [error(_rounded(r, io), r) for r in references])


def emulate(problems):
    """Rows (layer, dtype, storage, [y, dx, dw] emulated errors of the FFT path, [y, dx, dw]
    errors of one rounding)."""
    rows = []
    for name in LAYERS:
        x, w, dy, _ = problems[name]
        size = fc.conv_geometry(x.shape[1], x.shape[2], w.shape[0], w.shape[1],
                                "VALID").fft_size
        for dtype in DTYPES:
            rounded = [_rounded(v, dtype.name) for v in (x, w, dy)]
            for storage_name, storage in STORAGE.items():
                ours, once = emulated_errors(*rounded, dtype.name, storage, size)
                rows.append((name, dtype.name, storage_name, ours, once))
    return rows


def measure(problems):
    """Rows (layer, dtype, tensor, fft error, conv2d error, ratio, fft error with half spectra,
    its ratio, the plan's label)."""
    rows = []
    for name in LAYERS:
        x, w, dy, _ = problems[name]
        for dtype in DTYPES:
            errors = conv_errors(x, w, dy, dtype)
            for i, tensor in enumerate(("y", "dx", "dw")):
                ours, half, theirs = (errors[k][i] for k in ("fft", "fft half spectra",
                                                             "conv2d"))
                rows.append((name, dtype.name, tensor, ours, theirs,
                             ours / theirs if theirs else float("inf"), half,
                             half / theirs if theirs else float("inf"), errors["plan"]))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion_mnist")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit-train", type=int, default=None)
    parser.add_argument("--device", default=None, help="e.g. /GPU:0 (default: TensorFlow's)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--emulate", action="store_true",
                        help="also the float64 emulation of each storage choice (STORAGE)")
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
          f"{'ratio':>8s}{'half spectra':>14s}{'ratio':>8s}  plan")
    for name, dtype, tensor, ours, theirs, ratio, half, half_ratio, label in rows:
        print(f"{name:6s}{dtype:10s}{tensor:8s}{ours:12.3e}{theirs:14.3e}{ratio:8.2f}"
              f"{half:14.3e}{half_ratio:8.2f}  {label}")
    worst = max(row[5] for row in rows)
    print(f"worst ratio {worst:.2f} (at most 2 asked)")
    emulated = emulate(problems) if args.emulate else None
    if emulated:
        print("\nemulated in float64: FFT path error / error of one rounding, y / dx / dw")
        for name, dtype, storage, ours, once in emulated:
            print(f"{name:6s}{dtype:10s}{storage:30s}"
                  + "".join(f"{a / b:7.2f}" for a, b in zip(ours, once)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "dataset": arrays.name, "epochs": args.epochs,
                       "tensorflow": tf.__version__, "rows": rows, "emulated": emulated},
                      f, indent=1)
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

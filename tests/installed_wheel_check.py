"""Checks an installed tf_fftconv wheel from outside the source tree (CI runs it in a fresh venv).

    python tests/installed_wheel_check.py        # from any directory but the checkout's root

The three ops, fft_conv2d and its gradients, FFTConv2D in a fitted model, a SavedModel saved here and
loaded in a new process, and tf.load_op_library(library_path()) in a new process, each against
tf.nn.conv2d. It fails when tf_fftconv is imported from anywhere but an installed package.
"""

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import tempfile
import textwrap

import numpy as np
import tensorflow as tf

import tf_fftconv as fc


def check(name, passed, detail=""):
    print(("ok    " if passed else "FAIL  ") + name + (": " + detail if detail else ""), flush=True)
    if not passed:
        sys.exit(1)


def relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def run_python(code):
    """Runs `code` in a new Python process in a scratch directory; returns its last output line."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=scratch,
                              capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-4000:], sep="\n")
    return done.returncode, (done.stdout.strip().splitlines() or [""])[-1]


def main():
    package = os.path.dirname(os.path.realpath(fc.__file__))
    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    check("imported from the installed package", package.startswith(site + os.sep), package)
    check("library built for this TensorFlow", fc.build_info().get("tensorflow_version") == tf.__version__,
          str(fc.build_info()))

    version = importlib.metadata.version("tf_fftconv")
    requirements = importlib.metadata.requires("tf_fftconv") or []
    check("the version names the TensorFlow it was built against", version.endswith("+tf" + tf.__version__),
          version)
    check("installing it never installs TensorFlow",
          not any(r.lower().startswith(("tensorflow ", "tensorflow>", "tensorflow=", "tensorflow;"))
                  or r.lower() == "tensorflow" for r in requirements), str(requirements))

    # FP32 products on both sides: with TensorFlow's TF32 switch on (its default), a GPU rounds the
    # operands of cuDNN's convolution and of our spectral products to 10 mantissa bits (4e-4 apart).
    tf.config.experimental.enable_tensor_float_32_execution(False)
    rng = np.random.default_rng()
    x = tf.constant(rng.standard_normal([4, 20, 20, 3]), tf.float32)
    w = tf.constant(rng.standard_normal([5, 5, 3, 6]), tf.float32)
    reference = tf.nn.conv2d(x, w, 1, "VALID")

    # The raw ops: x and w in a 24 frame, Y = X W^H, the 16 x 16 window back.
    spectrum_x = fc.ops.rfft2d(x, fft_size=24, data_format="NHWC")
    spectrum_w = fc.ops.rfft2d(tf.transpose(w, [3, 2, 0, 1]), fft_size=24, data_format="NCHW")
    product = fc.ops.spectral_matmul(spectrum_x, spectrum_w, adjoint_b=True)
    y = fc.ops.irfft2d(product, fft_size=24, out_h=16, out_w=16, data_format="NHWC")
    error = relative_error(y, reference)
    check("rfft2d, spectral_matmul, irfft2d against tf.nn.conv2d", error < 1e-5, "%.1e" % error)

    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        ours = fc.fft_conv2d(x, w, padding="SAME", algorithm="fft")
        theirs = tf.nn.conv2d(x, w, 1, "SAME")
        upstream = tf.constant(rng.standard_normal(theirs.shape), tf.float32)
        loss_ours = tf.reduce_sum(ours * upstream)
        loss_theirs = tf.reduce_sum(theirs * upstream)
    errors = [relative_error(ours, theirs)] + [
        relative_error(a, b) for a, b in zip(tape.gradient(loss_ours, [x, w]), tape.gradient(loss_theirs, [x, w]))]
    check("fft_conv2d and its gradients against tf.nn.conv2d", max(errors) < 1e-5,
          "y %.1e, dx %.1e, dw %.1e" % tuple(errors))

    keras = tf.keras
    model = keras.Sequential([keras.Input((20, 20, 3)),
                              fc.FFTConv2D(6, 5, padding="same", activation="relu", algorithm="fft"),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    images = rng.standard_normal([64, 20, 20, 3]).astype(np.float32)
    labels = (images[:, :10].mean(axis=(1, 2, 3)) > 0).astype(np.int32)
    losses = model.fit(images, labels, epochs=8, batch_size=16, verbose=0).history["loss"]
    check("FFTConv2D in a fitted model: the loss falls", losses[-1] < losses[0],
          "%.4f -> %.4f" % (losses[0], losses[-1]))

    with tempfile.TemporaryDirectory() as scratch:
        module = tf.Module()
        module.w = tf.Variable(w)
        module.f = tf.function(lambda x: fc.fft_conv2d(x, module.w, padding="SAME", algorithm="fft"),
                               input_signature=[tf.TensorSpec([None, 20, 20, 3], tf.float32)])
        path = os.path.join(scratch, "saved")
        tf.saved_model.save(module, path)
        np.save(os.path.join(scratch, "x.npy"), x.numpy())
        np.save(os.path.join(scratch, "y.npy"), module.f(x).numpy())
        status, line = run_python(f"""
            import numpy as np, tensorflow as tf
            import tf_fftconv  # registers the ops the SavedModel calls
            tf.config.experimental.enable_tensor_float_32_execution(False)  # as when it was saved
            loaded = tf.saved_model.load({path!r})
            y = loaded.f(tf.constant(np.load({os.path.join(scratch, "x.npy")!r})))
            print(float(np.max(np.abs(y.numpy() - np.load({os.path.join(scratch, "y.npy")!r})))))
        """)
        check("SavedModel loaded in a new process gives the same output", status == 0 and float(line) == 0.0,
              line)

    status, line = run_python("""
        import numpy as np, tensorflow as tf, tf_fftconv
        ops = tf.load_op_library(tf_fftconv.library_path())
        x = tf.constant(np.random.default_rng().standard_normal([2, 3, 8, 8]), tf.float32)
        spectrum = ops.fftconv_rfft2d(x, fft_size=8, offset_h=0, offset_w=0, data_format="NCHW")
        back = ops.fftconv_irfft2d(spectrum, fft_size=8, out_h=8, out_w=8, offset_h=0, offset_w=0,
                                   data_format="NCHW")
        print(float(np.max(np.abs(back.numpy() - x.numpy()))))
    """)
    check("tf.load_op_library(library_path()) in a new process: irfft2d(rfft2d(x)) is x",
          status == 0 and float(line) < 1e-5, line)
    print("installed wheel: all checks passed")


if __name__ == "__main__":
    main()

"""Drives every GPU kernel of the three ops and fft_conv2d once per configuration, eagerly and
through the XLA custom calls, for compute-sanitizer (memcheck, racecheck) on a GPU host:

    TF_GPU_ALLOCATOR=cuda_malloc_async compute-sanitizer --tool memcheck python3 tests/gpu_sanitize_ops.py

(The asynchronous allocator gives each tensor its own allocation, so an out-of-bounds access is not
hidden inside TensorFlow's memory pool.) Results are also checked against the CPU kernels.
"""

import sys

import numpy as np
import tensorflow as tf

import tf_fftconv as fc
from np_reference import rel_error as rel


def on(device, fn, *args):
    with tf.device(device):
        return tf.nest.map_structure(lambda t: t.numpy(), fn(*args))


def main():
    if not tf.config.list_physical_devices("GPU"):
        sys.exit("no GPU")
    rng = np.random.default_rng()
    worst = 0.0
    for tf32 in (False, True):
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
        for size in (2, 4, 8, 16, 32, 64, 128):
            for fmt in ("NCHW", "NHWC"):
                h, w = max(1, size - 3), size
                shape = (3, 5, h, w) if fmt == "NCHW" else (3, h, w, 5)
                x = rng.standard_normal(shape).astype(np.float32)
                fn = lambda t: fc.ops.rfft2d(t, size, min(2, size - h), 0, fmt)
                spectrum = on("/GPU:0", fn, x)
                worst = max(worst, rel(spectrum, on("/CPU:0", fn, x)))
                inv = lambda s: fc.ops.irfft2d(s, size, h, w - 1, size - h, 1, fmt)
                worst = max(worst, rel(on("/GPU:0", inv, spectrum), on("/CPU:0", inv, spectrum)))
        for modes in [(False, False, False, False), (True, False, False, True), (False, True, True, False),
                      (False, False, False, True), (True, False, True, False)]:
            ta, aa, tb, ab = modes
            m, k, n, bins = 37, 19, 45, 7
            a = (rng.standard_normal((bins, k, m) if ta or aa else (bins, m, k)) * (1 + 1j)).astype(np.complex64)
            b = (rng.standard_normal((bins, n, k) if tb or ab else (bins, k, n)) * (1 - 1j)).astype(np.complex64)
            fn = lambda p, q: fc.ops.spectral_matmul(p, q, transpose_a=ta, adjoint_a=aa, transpose_b=tb, adjoint_b=ab)
            err = rel(on("/GPU:0", fn, a, b), on("/CPU:0", fn, a, b))
            worst = max(worst, err if not tf32 else 0.0)
        for padding in ("VALID", "SAME"):
            x = rng.standard_normal((4, 14, 13, 6)).astype(np.float32)
            w = rng.standard_normal((5, 3, 6, 16)).astype(np.float32)

            def fwd_bwd(a, b):
                with tf.GradientTape() as tape:
                    tape.watch([a, b])
                    y = fc.fft_conv2d(a, b, padding, algorithm="fft")
                    loss = tf.reduce_sum(y * y)
                return (y,) + tuple(tape.gradient(loss, [a, b]))
            got = on("/GPU:0", fwd_bwd, tf.constant(x), tf.constant(w))
            want = on("/CPU:0", fwd_bwd, tf.constant(x), tf.constant(w))
            # The same kernels through XLA's custom calls, on XLA's stream.
            compiled = on("/GPU:0", tf.function(fwd_bwd, jit_compile=True), tf.constant(x),
                          tf.constant(w))
            if not tf32:
                worst = max(worst, max(rel(g, c) for g, c in zip(got + compiled, want + want)))
    print("gpu_sanitize_ops: worst relative difference GPU vs CPU (TF32 off) %.3g" % worst)
    if not worst < 1e-5:
        sys.exit("GPU and CPU kernels disagree")


if __name__ == "__main__":
    main()

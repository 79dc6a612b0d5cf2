"""Drives every GPU kernel of the three ops and fft_conv2d once per configuration, eagerly and
through the XLA custom calls, for compute-sanitizer (memcheck, racecheck) on a GPU host:

    TF_GPU_ALLOCATOR=cuda_malloc_async compute-sanitizer --tool memcheck python3 tests/gpu_sanitize_ops.py

(The asynchronous allocator gives each tensor its own allocation, so an out-of-bounds access is not
hidden inside TensorFlow's memory pool.) Results are also checked against the CPU kernels.
"""

import sys

import numpy as np
import tensorflow as tf

import np_reference as ref
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
        for size in fc.geometry.FFT_SIZES:
            for fmt in ("NCHW", "NHWC"):
                h, w = max(1, size - 3), size
                shape = (3, 5, h, w) if fmt == "NCHW" else (3, h, w, 5)
                x = rng.standard_normal(shape).astype(np.float32)
                fn = lambda t: fc.ops.rfft2d(t, size, min(2, size - h), 0, fmt)
                spectrum = on("/GPU:0", fn, x)
                worst = max(worst, rel(spectrum, on("/CPU:0", fn, x)))
                inv = lambda s: fc.ops.irfft2d(s, size, h, w - 1, size - h, 1, fmt)
                worst = max(worst, rel(on("/GPU:0", inv, spectrum), on("/CPU:0", inv, spectrum)))
        for mode_a, mode_b in [("N", "N"), ("T", "H"), ("H", "T"), ("N", "H"), ("T", "T"),
                               ("N", "C"), ("T", "C"), ("C", "T"), ("TC", "N")]:
            flags = ref.matmul_flags(mode_a, mode_b)
            a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins=7, m=37, k=19, n=45)
            a = ref.random_complex(rng, a_shape).astype(np.complex64)
            b = ref.random_complex(rng, b_shape).astype(np.complex64)
            fn = lambda p, q: fc.ops.spectral_matmul(p, q, **flags)
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
    half_worst = half_precision(rng)
    print("gpu_sanitize_ops: float16 / bfloat16, worst relative difference GPU vs CPU, in units of "
          "the type's roundoff %.3g" % half_worst)
    if not worst < 1e-5:
        sys.exit("GPU and CPU kernels disagree")
    if not half_worst < 4:
        sys.exit("GPU and CPU half-precision kernels disagree")


def half_precision(rng):
    """The half-precision kernels (the tensor-core matmul on sm_80+) once per configuration;
    differences from the CPU kernels in units of the type's roundoff."""
    worst = 0.0
    for dtype, unit in ((tf.float16, 2.0 ** -11), (tf.bfloat16, 2.0 ** -8)):
        def half(values):
            return tf.cast(tf.constant(values), dtype)

        def compare(fn, *args):
            got = tf.nest.map_structure(lambda t: tf.cast(t, tf.float64).numpy(), on("/GPU:0", fn, *args))
            want = tf.nest.map_structure(lambda t: tf.cast(t, tf.float64).numpy(), on("/CPU:0", fn, *args))
            return max(rel(g, c) for g, c in zip(tf.nest.flatten(got), tf.nest.flatten(want))) / unit

        for size in (2, 8, 32, 128):
            for fmt in ("NCHW", "NHWC"):
                h, w = max(1, size // 2 + 1), size
                x = half(rng.standard_normal((3, 5, h, w) if fmt == "NCHW" else (3, h, w, 5)))
                round_trip = lambda t: fc.ops.irfft2d(fc.ops.rfft2d(t, size, size - h, 0, fmt),
                                                      size, h, w - 1, size - h, 1, fmt)
                worst = max(worst, compare(round_trip, x))
        for mode_a, mode_b in [("N", "N"), ("T", "H"), ("H", "T"), ("N", "C"), ("T", "C"),
                               ("C", "T")]:
            flags = ref.matmul_flags(mode_a, mode_b)
            a_shape, b_shape = ref.matmul_shapes(mode_a, mode_b, bins=7, m=37, k=19, n=45)
            a = half(rng.standard_normal(a_shape + (2,)))
            b = half(rng.standard_normal(b_shape + (2,)))
            worst = max(worst, compare(lambda p, q: fc.ops.spectral_matmul(
                p, q, alpha=0.5, **flags), a, b))
        x = half(rng.standard_normal((4, 14, 13, 6)))
        w = half(rng.standard_normal((5, 3, 6, 16)) * 0.1)

        def fwd_bwd(a, b):
            with tf.GradientTape() as tape:
                tape.watch([a, b])
                y = fc.fft_conv2d(a, b, "SAME", fft_size=32)   # the same plan on both devices
            return (y,) + tuple(tape.gradient(y, [a, b]))
        worst = max(worst, compare(fwd_bwd, x, w))
        worst = max(worst, compare(tf.function(fwd_bwd, jit_compile=True), x, w))
    return worst


if __name__ == "__main__":
    main()

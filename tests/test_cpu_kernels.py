"""The CPU kernels (cc/cpu_kernels_impl.h) on shapes that reach every path of their lane layout,
against float64 NumPy, for every compiled copy this CPU runs: the one chosen for it, AVX2 where
that is not the one chosen, and the baseline (TF_FFTCONV_CPU_KERNELS=avx2, generic). Each copy runs
in its own process, since the choice is made once.

The kernels compute kLanes images (FFTs) or bins (matmul) side by side, so the cases have many lane
groups and a partial last one, images whose lanes are adjacent in memory, have rows of their own
(transposed in blocks) or neither, odd heights (a row pair with one row), and matrices large enough
to be packed in several blocks. float16 and bfloat16 take the same paths, converted a vector at a
time.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent

CHECK = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import np_reference as ref
    import tf_fftconv as fc

    rng = np.random.default_rng(int(sys.argv[1]))
    errors, outputs = {}, {}

    def record(name, out, expected, tolerance, scale=None):
        # scale: the pre-activation where a ReLU follows (np_reference.rel_error)
        errors[name] = [ref.rel_error(out, expected, scale), tolerance]
        outputs[name] = out

    def fft_cases():
        # (data_format, shape, size, height, width, offset_h, offset_w, batch, channels)
        for data_format in ("NCHW", "NHWC"):
            # (batch, channels): many groups across batch items; one channel; 6 channels; two
            # groups of 16 adjacent channels (AVX-512's float lanes) and a partial one.
            for batch, channels in ((5, 11), (37, 1), (9, 6), (3, 35)):
                for size, (height, width), (offset_h, offset_w) in (
                        (8, (7, 5), (1, 2)), (16, (13, 11), (2, 3)), (32, (32, 32), (0, 0)),
                        (32, (9, 26), (20, 1))):
                    shape = ((batch, channels, height, width) if data_format == "NCHW"
                             else (batch, height, width, channels))
                    yield (data_format, shape, size, height, width, offset_h, offset_w, batch,
                           channels)

    def matmul_cases():
        # ((bins, m, k, n), the modes' label, the op's flags, a's shape, b's shape)
        # (bins, m, k, n): tiles with edges; a long k packed in several blocks of rows and columns.
        for bins, m, k, n in ((35, 19, 7, 13), (13, 3, 700, 5), (40, 64, 1, 6)):
            for mode_a in ref.MATMUL_MODES:
                for mode_b in ref.MATMUL_MODES:
                    yield ((bins, m, k, n), mode_a + "," + mode_b, ref.matmul_flags(mode_a, mode_b),
                           *ref.matmul_shapes(mode_a, mode_b, bins, m, k, n))

    for dtype in (np.float32, np.float64):
        cdtype = np.complex64 if dtype == np.float32 else np.complex128
        fft_tolerance = 2e-6 if dtype == np.float32 else 1e-12  # tests/test_ops.py's
        for (data_format, shape, size, height, width, offset_h, offset_w, batch,
             channels) in fft_cases():
            x = rng.standard_normal(shape).astype(dtype)
            name = f"rfft2d {dtype.__name__} {data_format} {shape} S={size}"
            record(name, fc.ops.rfft2d(x, size, offset_h, offset_w, data_format).numpy(),
                   ref.rfft2d(x, size, offset_h, offset_w, data_format), fft_tolerance)
            spectrum = ref.random_complex(
                rng, (size * (size // 2 + 1), batch, channels)).astype(cdtype)
            name = f"irfft2d {dtype.__name__} {data_format} {shape} S={size}"
            inverse = ref.irfft2d(spectrum, size, height, width, offset_h, offset_w, data_format)
            record(name, fc.ops.irfft2d(spectrum, size, height, width, offset_h, offset_w,
                                        data_format).numpy(), inverse, fft_tolerance)
            # The fused bias and ReLU of the inverse, and ReLU's derivative in the transform
            # (activation output y, about half of it <= 0): every lane's channel and mask.
            bias = rng.standard_normal(channels).astype(dtype)
            lanes_bias = bias if data_format == "NHWC" else bias[:, None, None]
            name = f"irfft2d+bias+relu {dtype.__name__} {data_format} {shape} S={size}"
            record(name, fc.ops.irfft2d_bias_activation(
                       spectrum, bias, size, height, width, offset_h, offset_w, data_format,
                       "relu").numpy(),
                   np.maximum(inverse + lanes_bias, 0), fft_tolerance, inverse + lanes_bias)
            y = rng.standard_normal(shape).astype(dtype)
            name = f"rfft2d of dy relu'(z) {dtype.__name__} {data_format} {shape} S={size}"
            record(name, fc.ops.rfft2d_activation_gradient(x, y, size, offset_h, offset_w,
                                                           data_format, "relu").numpy(),
                   ref.rfft2d(np.where(y > 0, x, 0), size, offset_h, offset_w, data_format),
                   fft_tolerance)
        for dims, modes, flags, a_shape, b_shape in matmul_cases():
            a = ref.random_complex(rng, a_shape).astype(cdtype)
            b = ref.random_complex(rng, b_shape).astype(cdtype)
            name = f"matmul {dtype.__name__} {dims} {modes}"
            # tests/test_ops.py's for k <= 64; a float32 sum's error grows as sqrt(k).
            k = dims[2]
            tolerance = 1e-6 * max(1, (k / 64) ** 0.5) if dtype == np.float32 else 1e-13
            record(name, fc.ops.spectral_matmul(a, b, **flags).numpy(),
                   ref.spectral_matmul(a, b, **flags), tolerance)
    # Half precision: the same shapes, spectra as [.., 2] pairs divided by S^2, float32 inside;
    # references from the exact half values, tolerance the type's unit roundoff.
    for dtype, unit in ((tf.float16, 2.0 ** -11), (tf.bfloat16, 2.0 ** -8)):
        def half(values):
            t = tf.cast(tf.constant(values), dtype)
            return t, tf.cast(t, tf.float64).numpy()
        def pairs(t):
            v = tf.cast(t, tf.float64).numpy()
            return v[..., 0] + 1j * v[..., 1]
        for (data_format, shape, size, height, width, offset_h, offset_w, batch,
             channels) in fft_cases():
            x, exact = half(rng.standard_normal(shape))
            name = f"rfft2d {dtype.name} {data_format} {shape} S={size}"
            record(name, pairs(fc.ops.rfft2d(x, size, offset_h, offset_w, data_format)),
                   ref.rfft2d(exact, size, offset_h, offset_w, data_format) / size ** 2, unit)
            z, z_exact = half(rng.standard_normal((size * (size // 2 + 1), batch, channels, 2)))
            name = f"irfft2d {dtype.name} {data_format} {shape} S={size}"
            out = fc.ops.irfft2d(z, size, height, width, offset_h, offset_w, data_format)
            inverse = ref.irfft2d(size ** 2 * (z_exact[..., 0] + 1j * z_exact[..., 1]), size,
                                  height, width, offset_h, offset_w, data_format)
            record(name, tf.cast(out, tf.float64).numpy(), inverse, unit)
            bias, bias_exact = half(rng.standard_normal(channels))
            lanes_bias = bias_exact if data_format == "NHWC" else bias_exact[:, None, None]
            name = f"irfft2d+bias+relu {dtype.name} {data_format} {shape} S={size}"
            out = fc.ops.irfft2d_bias_activation(z, bias, size, height, width, offset_h,
                                                 offset_w, data_format, "relu")
            record(name, tf.cast(out, tf.float64).numpy(), np.maximum(inverse + lanes_bias, 0),
                   unit, inverse + lanes_bias)
            y, y_exact = half(rng.standard_normal(shape))
            name = f"rfft2d of dy relu'(z) {dtype.name} {data_format} {shape} S={size}"
            record(name, pairs(fc.ops.rfft2d_activation_gradient(x, y, size, offset_h, offset_w,
                                                                 data_format, "relu")),
                   ref.rfft2d(np.where(y_exact > 0, exact, 0), size, offset_h, offset_w,
                              data_format) / size ** 2, unit)
        for dims, modes, flags, a_shape, b_shape in matmul_cases():
            a, a_exact = half(rng.standard_normal(a_shape + (2,)))
            b, b_exact = half(rng.standard_normal(b_shape + (2,)))
            name = f"matmul {dtype.name} {dims} {modes}"
            record(name, pairs(fc.ops.spectral_matmul(a, b, alpha=0.5, **flags)),
                   0.5 * ref.spectral_matmul(a_exact[..., 0] + 1j * a_exact[..., 1],
                                             b_exact[..., 0] + 1j * b_exact[..., 1], **flags),
                   unit)
    np.savez(sys.argv[2], **{name: value for name, value in outputs.items()})
    print(json.dumps(errors))
""")


def run_check(kernels, seed, outputs_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]),
        TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_FFTCONV_CPU_KERNELS", None)
    if kernels != "auto":
        env["TF_FFTCONV_CPU_KERNELS"] = kernels
    done = subprocess.run([sys.executable, "-c", CHECK, str(seed), str(outputs_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cpu_flags():
    try:
        return set(next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split())
    except (OSError, StopIteration):
        return set()


def cpu_has_avx2_fma():
    """What the AVX2 copy needs (cc/cpu_kernels.cc): AVX2, FMA and F16C."""
    return {"avx2", "fma", "f16c"} <= cpu_flags()


def cpu_has_avx512():
    """What the AVX-512 copy needs besides the AVX2 copy's (cc/cpu_kernels.cc)."""
    return cpu_has_avx2_fma() and {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= cpu_flags()


def copies_to_run():
    """TF_FFTCONV_CPU_KERNELS values ("auto": unset) that each run a different copy here, with the
    copy cc/cpu_kernels.cc runs for each: the widest the CPU has, AVX2 below AVX-512, the baseline."""
    if cpu_has_avx512():
        return {"auto": "avx512", "avx2": "avx2", "generic": "generic"}
    return {"auto": "avx2" if cpu_has_avx2_fma() else "generic", "generic": "generic"}


@pytest.mark.slow
def test_every_kernel_copy_matches_numpy(tmp_path):
    seed = int(os.environ.get("FFTCONV_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print("FFTCONV_TEST_SEED=%d" % seed)
    outputs = {}
    for kernels in copies_to_run():
        errors = run_check(kernels, seed, tmp_path / f"{kernels}.npz")
        bad = {name: error for name, (error, tolerance) in errors.items()
               if not error <= tolerance}
        assert not bad, (kernels, bad)
        outputs[kernels] = np.load(tmp_path / f"{kernels}.npz")
    if cpu_has_avx2_fma():
        # The wide copies round their fused multiply-adds once, the baseline copy twice: identical
        # outputs everywhere would mean the variable chose nothing. (Which wide copy ran, the
        # standalone check's test below sees.)
        assert any(not np.array_equal(outputs["auto"][name], outputs["generic"][name])
                   for name in outputs["auto"].files)


@pytest.mark.slow
@pytest.mark.tensorflow_independent
def test_standalone_check_builds_and_passes(tmp_path):
    """make cpu-kernel-check: the same kernels without TensorFlow, every copy this CPU runs, against
    float64."""
    root = TESTS.parent
    build = subprocess.run(["make", "-s", f"BUILD={tmp_path}", "cpu-kernel-check"], cwd=root,
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    for kernels, copy in copies_to_run().items():
        env = dict(os.environ)
        env.pop("TF_FFTCONV_CPU_KERNELS", None)
        if kernels != "auto":
            env["TF_FFTCONV_CPU_KERNELS"] = kernels
        done = subprocess.run([str(tmp_path / "cpu_kernel_check"), "--check"], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and done.stdout.count("PASS") == 6, done.stdout[-3000:]
        # The first line names the copy that ran: the choice follows the CPU and the variable.
        assert done.stdout.startswith(f"cpu kernels: {copy} "), (kernels, done.stdout[:200])

"""The Bazel build of the CPU op library works offline and gives a library that computes the ops."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not installed (Debian: bazel-bootstrap)")
def test_bazel_builds_a_working_library(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name in ("BUILD", "WORKSPACE"):
        shutil.copy(os.path.join(ROOT, name), workspace / name)
    for folder in ("cc", "include", "bazel"):
        shutil.copytree(os.path.join(ROOT, folder), workspace / folder)
    env = dict(os.environ, TF_PYTHON=sys.executable)
    build = subprocess.run(["bazel", "build", "--symlink_prefix=/", "//:tf_fftconv/_fftconv_ops.so"],
                           cwd=workspace, env=env, capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stderr[-4000:]
    bin_dir = subprocess.run(["bazel", "info", "bazel-bin"], cwd=workspace, env=env,
                             capture_output=True, text=True, timeout=600).stdout.strip()
    library = os.path.join(bin_dir, "tf_fftconv", "_fftconv_ops.so")
    check = textwrap.dedent("""
        import sys
        import numpy as np
        import tensorflow as tf
        ops = tf.load_op_library(sys.argv[1])
        x = np.random.default_rng().standard_normal((2, 3, 5, 6))
        spectrum = ops.fftconv_rfft2d(x=x, fft_size=8, offset_h=1, Tcomplex=tf.complex128).numpy()
        frame = np.zeros((2, 3, 8, 8)); frame[:, :, 1:6, :6] = x
        expected = np.fft.rfft2(frame).reshape(2, 3, -1).transpose(2, 0, 1)
        assert np.abs(spectrum - expected).max() < 1e-12
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", check, library], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
    subprocess.run(["bazel", "shutdown"], cwd=workspace, env=env, capture_output=True, timeout=120)

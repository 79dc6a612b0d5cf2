"""The op library is found, loads from a plain script, and refuses a TensorFlow it was not built for."""

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

import tf_fftconv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, pythonpath):
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=pythonpath,
                          capture_output=True, text=True, timeout=300)


def test_build_info_names_the_tensorflow_in_use():
    import tensorflow as tf
    assert os.path.exists(tf_fftconv.library_path())
    assert tf_fftconv.build_info()["tensorflow_version"] == tf.__version__


def test_load_op_library_from_a_script():
    done = _run("""
        import numpy as np, tensorflow as tf, tf_fftconv
        ops = tf.load_op_library(tf_fftconv.library_path())
        x = np.random.default_rng().standard_normal((1, 2, 3, 3))
        y = ops.fftconv_irfft2d(spectrum=ops.fftconv_rfft2d(x=x, fft_size=4, Tcomplex=tf.complex128),
                                fft_size=4, out_h=3, out_w=3, T=tf.float64)
        assert np.abs(y.numpy() - x).max() < 1e-12
        print("ok")
    """, ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def _package_copy(tmp_path, with_library=True, tensorflow_version=None):
    ignore = ["__pycache__"] + ([] if with_library else ["*.so", "_build_info.json"])
    shutil.copytree(os.path.join(ROOT, "tf_fftconv"), tmp_path / "tf_fftconv",
                    ignore=shutil.ignore_patterns(*ignore))
    if tensorflow_version is not None:
        info_path = tmp_path / "tf_fftconv" / "_build_info.json"
        info = json.loads(info_path.read_text())
        info["tensorflow_version"] = tensorflow_version
        info_path.write_text(json.dumps(info))
    return tmp_path


CALL_AN_OP = """
    import tensorflow as tf, tf_fftconv
    try:
        tf_fftconv.ops.rfft2d(tf.zeros([1, 1, 2, 2]), 4)
    except ImportError as e:
        print("ImportError:", e)
"""


def test_other_tensorflow_version_asks_for_a_rebuild(tmp_path):
    done = _run(CALL_AN_OP, _package_copy(tmp_path, tensorflow_version="2.0.0"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "built against TensorFlow 2.0.0" in done.stdout and "rebuild" in done.stdout


def test_missing_library_says_how_to_build(tmp_path):
    done = _run(CALL_AN_OP, _package_copy(tmp_path, with_library=False))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not built" in done.stdout and "make build" in done.stdout


def test_ops_in_a_tf_function_log_no_autograph_warning():
    """AutoGraph leaves the op functions alone (they wrap generated code that has no source:
    converting them logged "AutoGraph could not transform" once per op)."""
    from tf_fftconv._loader import load_library
    ops = load_library()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = tf.get_logger()
    logger.addHandler(handler)
    try:
        x = tf.constant(np.random.default_rng().standard_normal([1, 2, 8, 8]), tf.float32)
        spectrum = tf.function(ops.fftconv_rfft2d)(x, fft_size=8)
        product = tf.function(ops.fftconv_spectral_matmul)(spectrum, spectrum, adjoint_b=True)
        back = tf.function(ops.fftconv_irfft2d)(spectrum, fft_size=8, out_h=8, out_w=8)
    finally:
        logger.removeHandler(handler)
    assert product.shape == (40, 1, 1) and back.shape == x.shape
    assert np.abs(back.numpy() - x.numpy()).max() < 1e-5
    assert not [r for r in records if "AutoGraph" in r.getMessage()], [
        r.getMessage() for r in records]

"""Concurrent eager calls of the raw ops see their own size inputs (tools/concurrency_probe.py) on
the CPU. On a GPU, TensorFlow's eager runtime crosses the host-memory inputs and statuses of
concurrent calls, its own tf.raw_ops.Range's too (on an H200 Range returned 52 elements where 53
were asked): `tools/gpu_session.sh concurrency` runs the probe there to watch it, not as a test."""

import importlib.util
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parent.parent / "tools" / "concurrency_probe.py"


def _probe():
    spec = importlib.util.spec_from_file_location("concurrency_probe", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("host_sizes", [False, True], ids=["python-numbers", "host-tensors"])
def test_concurrent_calls_on_the_cpu_see_their_own_sizes(host_sizes, capsys):
    argv = ["--device", "/CPU:0", "--threads", "4", "--calls", "40"]
    assert _probe().main(argv + (["--host-sizes"] if host_sizes else [])) == 0, (
        capsys.readouterr().out)
    assert "FftconvIrfft2d  0 wrong shapes, 0 refused, of 160" in capsys.readouterr().out


@pytest.mark.parametrize("ops", ["tf", "ours"])
def test_the_control_and_ours_apart_through_functions(ops, capsys):
    """--ops tf is TensorFlow alone (the control), --ops ours the package's ops alone; --function
    makes every call through a tf.function traced once per thread."""
    argv = ["--device", "/CPU:0", "--threads", "4", "--calls", "20", "--ops", ops, "--function"]
    assert _probe().main(argv) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"SUMMARY ops={ops} mode=tf.function sizes=tensors wrong=0 refused=0 calls=160" in out
    assert ("Fill" in out) == (ops == "tf") and ("FftconvRfft2d" in out) == (ops == "ours")

"""Runs tests/fuzz_ops.py in a subprocess per op and device, so that a crash or a hang fails the test.

Each run draws fresh cases (the seed is in the failure message): valid and invalid shapes, sizes and
attributes (sizes and offsets past int32 and int64 among them), empty tensors with huge dimensions,
counts over int32, in eager mode, in tf.functions with everything or nothing known while tracing and
under jit_compile=True, each case called twice, four cases at a time (one on the GPU).
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("op", ["rfft2d", "irfft2d", "spectral_matmul"])
def test_fuzz_op(device, op):
    seed = int.from_bytes(os.urandom(4), "little")
    # One thread on the GPU: TensorFlow's eager runtime crosses the host-memory inputs and the
    # statuses of concurrent calls there, its own tf.raw_ops.Range included (tools/concurrency_probe.py
    # shows it: on an H200 Range returned 52 elements where 53 were asked).
    threads = "1" if "GPU" in device else "4"
    command = [sys.executable, os.path.join(HERE, "fuzz_ops.py"), "--op", op, "--cases", "600",
               "--seed", str(seed), "--device", device, "--threads", threads, "--repeat", "2"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(HERE))
    assert proc.returncode == 0, "fuzzer died (seed %d, rc %d):\n%s" % (seed, proc.returncode, proc.stderr[-3000:])
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["cases"] == 600
    assert summary["valid"] >= 60 and summary["invalid"] >= 150, summary
    assert set(summary["modes"]) >= {"eager", "static", "unknown", "jit"}, summary
    assert summary["n_failures"] == 0, "seed %d: %s" % (seed, json.dumps(summary["failures"], indent=1))

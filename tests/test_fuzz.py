"""Runs tests/fuzz_ops.py in a subprocess per op and device, so that a crash fails the test."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("op", ["rfft2d", "irfft2d", "spectral_matmul"])
def test_fuzz_op(device, op):
    seed = int.from_bytes(os.urandom(4), "little")
    command = [sys.executable, os.path.join(HERE, "fuzz_ops.py"), "--op", op, "--cases", "1200",
               "--seed", str(seed), "--device", device]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900,
                          cwd=os.path.dirname(HERE))
    assert proc.returncode == 0, "fuzzer died (seed %d, rc %d):\n%s" % (seed, proc.returncode, proc.stderr[-3000:])
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["cases"] >= 1000
    assert summary["valid"] >= 200 and summary["invalid"] >= 200, summary
    assert summary["n_failures"] == 0, "seed %d: %s" % (seed, json.dumps(summary["failures"], indent=1))

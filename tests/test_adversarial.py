"""An adversarial run of the raw ops: 360 cases (the three ops in turn) drawn by tests/fuzz_ops.py
with --edge, so that most carry sizes, offsets or dimensions at the edges of int32 and int64
(random and edge values of fft_size, out_h, out_w, offset_h, offset_w, data_format, the dtypes, the
matmul's flags and alpha, and empty tensors whose other dimensions are huge), in the five modes
(eager, tf.function with shapes and sizes known or not, jit_compile=True).

Every case must be refused with an InvalidArgumentError (or the ValueError of a shape function)
if the rules say it is out of range, and otherwise give the reference result. A crash or a hang
(no end within CASE_TIMEOUT seconds) fails that case only: the cases run one after another in a
child process (tests/batch_runner.py), and a new child goes on after the case that stopped one.
"""

import json
import os

import batch_runner

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = 360
CASE_TIMEOUT = 60


def test_adversarial_cases():
    seed = int.from_bytes(os.urandom(4), "little")
    script = os.path.join(HERE, "fuzz_ops.py")

    def command(remaining):
        # The cases left are always the run's last ones.
        return batch_runner.python_command(script, "--op", "all", "--cases", CASES, "--seed", seed,
                                           "--edge", "--stream", "--repeat", "1",
                                           "--first", remaining[0])
    results = batch_runner.run_batch(command, list(range(CASES)), case_timeout=CASE_TIMEOUT,
                                     cwd=os.path.dirname(HERE))
    assert sorted(results) == list(range(CASES))
    stopped = {i: r for i, r in results.items() if "outcome" in r}
    assert not stopped, "seed %d: crashes or hangs: %s" % (seed, json.dumps(stopped, indent=1))
    failures = [r["failure"] for r in results.values() if r["failure"] is not None]
    assert not failures, "seed %d: %s" % (seed, json.dumps(failures[:20], indent=1, default=str))
    valid = sum(r["valid"] for r in results.values())
    modes = {r["mode"] for r in results.values()}
    # Enough of each kind for the run to mean something.
    assert valid >= 25 and CASES - valid >= 150, (valid, CASES - valid)
    assert modes >= {"eager", "static", "unknown", "jit"}, modes

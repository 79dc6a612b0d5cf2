"""Two MultiWorkerMirroredStrategy workers, separate processes on this machine, train the FFT LeNet
on the CPU kernels (tests/distributed_worker.py). Their weights must stay identical to each other and
equal those of one worker that trains on the whole global batch, within float32 rounding."""

import json
import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
TIMEOUT_S = 150  # per run of the workers; the whole test stays well under three minutes


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _start_cluster(tmp_path, ports, name):
    """Starts one worker process per port, a cluster on loopback; returns them and their output
    files."""
    addresses = [f"127.0.0.1:{port}" for port in ports]
    processes, outputs = [], []
    for index in range(len(ports)):
        config = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
        out = tmp_path / f"{name}_{index}.npz"
        env = dict(os.environ, TF_CONFIG=json.dumps(config), TF_CPP_MIN_LOG_LEVEL="2",
                   PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
        log = open(tmp_path / f"{name}_{index}.log", "w")
        processes.append(subprocess.Popen([sys.executable, WORKER, str(out)], env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))
        outputs.append(out)
    return processes, outputs


def _finish(processes, tmp_path):
    """Waits for every process within the time limit; kills each process group left, always."""
    try:
        for p in processes:
            p.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    logs = "\n".join((tmp_path / name).read_text()[-3000:] for name in sorted(os.listdir(tmp_path))
                     if name.endswith(".log"))
    assert all(p.returncode == 0 for p in processes), \
        f"exit codes {[p.returncode for p in processes]}:\n{logs}"


def _weights(path):
    data = np.load(path)
    return [data[f"w{i}"] for i in range(sum(k.startswith("w") and k[1:].isdigit() for k in data.files))]


def test_two_cpu_workers_match_one_worker_on_the_global_batch(tmp_path):
    # The two clusters' ports in one draw: held open together, the three are distinct, where two
    # draws could hand the second cluster a port the first had just been given.
    ports = _free_ports(3)
    pair, pair_outputs = _start_cluster(tmp_path, ports[:2], "pair")
    alone, alone_outputs = _start_cluster(tmp_path, ports[2:], "alone")
    _finish(pair + alone, tmp_path)
    assert not [p for p in pair + alone if p.poll() is None]  # no process left behind

    first, second, reference = (np.load(out) for out in pair_outputs + alone_outputs)
    assert int(first["workers"]) == 2 and int(reference["workers"]) == 1
    # Both convolutions ran the FFT path in every worker.
    for result in (first, second, reference):
        assert list(result["plans"]) == ["fft", "fft"], result["plans"]
    losses = reference["losses"]
    assert losses[-1] < losses[0]  # it trains
    np.testing.assert_allclose(first["losses"], losses, rtol=1e-5)
    # The all-reduce hands both workers the same sums: their weights are the same bits.
    for a, b in zip(_weights(pair_outputs[0]), _weights(pair_outputs[1])):
        np.testing.assert_array_equal(a, b)
    # Two halves' gradients summed instead of one batch's: equal up to float32 rounding.
    for got, want in zip(_weights(pair_outputs[0]), _weights(alone_outputs[0])):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

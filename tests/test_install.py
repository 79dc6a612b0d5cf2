"""The build's choice of CUDA architectures: the GPUs this host shows, `all`, or a list; and what it
prints about that choice. nvidia-smi is a stand-in on PATH that reports the GPUs a test wants."""

import os
import re
import shutil
import stat
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="the architecture list is nvcc's: needs nvcc")


def _nvcc_codes():
    listed = subprocess.run([NVCC, "--list-gpu-code"], capture_output=True, text=True).stdout
    return sorted(int(code) for code in re.findall(r"sm_(\d+)", listed))


def _fake_nvidia_smi(directory, capabilities):
    """An nvidia-smi that lists one GPU per compute capability ("9.0") and answers the query."""
    script = directory / "nvidia-smi"
    gpus = "\n".join(f"GPU {i}: Stand-in (UUID: GPU-{i})" for i in range(len(capabilities)))
    script.write_text("#!/bin/sh\n"
                      'case "$*" in *compute_cap*) printf "%s\\n" ' + " ".join(capabilities)
                      + " ;; *) printf '%s\\n' '" + gpus + "' ;; esac\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return directory


def _built_for(tmp_path, capabilities, *make_args):
    """The architectures and the reason `make info` prints, with those GPUs on the host."""
    env = dict(os.environ, PATH=str(_fake_nvidia_smi(tmp_path, capabilities)) + os.pathsep + os.environ["PATH"])
    env.pop("CUDA_ARCHS", None)
    # TF_FACTS given: `make info` needs only a version, not TensorFlow's flags (seconds to import).
    done = subprocess.run(["make", "-s", "info", "WITH_CUDA=1", "TF_FACTS=TF_VERSION := 0", *make_args],
                          cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.search(r"CUDA kernels for (\S+) \+ PTX (\d+) \(([^;]+);", done.stdout)
    assert match, done.stdout
    archs = [int(a) for a in match[1].replace("sm_", "").split("/")]
    return archs, int(match[2]), match[3]


def test_default_is_the_gpus_of_this_host(tmp_path):
    archs, ptx, reason = _built_for(tmp_path, ["9.0", "7.5", "9.0"])
    assert archs == [75, 90] and ptx == 90
    assert reason == "the GPUs of this host"


def test_all_builds_every_architecture_this_nvcc_can(tmp_path):
    archs, ptx, reason = _built_for(tmp_path, ["9.0"], "CUDA_ARCHS=all")
    wanted = [60, 70, 75, 80, 86, 89, 90, 100, 120]
    assert archs == [a for a in wanted if a in _nvcc_codes()] and ptx == max(archs)
    assert reason == "CUDA_ARCHS=all"


def test_a_list_is_taken_as_given(tmp_path):
    archs, ptx, reason = _built_for(tmp_path, ["9.0"], "CUDA_ARCHS=80 86")
    assert archs == [80, 86] and ptx == 86 and reason == "CUDA_ARCHS"


def test_a_gpu_newer_than_nvcc_gets_the_newest_ptx_below_it(tmp_path):
    newest = max(_nvcc_codes())
    archs, ptx, _ = _built_for(tmp_path, [f"{newest // 10 + 5}.0"])
    assert archs == [newest] and ptx == newest


def test_no_gpu_shown_builds_every_architecture(tmp_path):
    archs, _, reason = _built_for(tmp_path, [])
    assert len(archs) > 3 and reason.startswith("no GPU shown by nvidia-smi")

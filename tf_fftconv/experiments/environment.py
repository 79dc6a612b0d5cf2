"""What a result was measured on: device, software versions and source commit (no host name).

One capture for every tool, so that a benchmark file and a reproduction file describe their machine
with the same fields.
"""

import os
import platform
import re
import subprocess
from pathlib import Path

import numpy as np
import tensorflow as tf

from tf_fftconv.device import onednn_enabled

# The source tree: tf_fftconv/experiments/environment.py -> the repository root.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def resolve_device(text="auto"):
    """`auto` (the first GPU, else the CPU), `cpu`, `gpu` or `/GPU:N` -> a TensorFlow device name.

    Raises ValueError for a name it cannot read or a GPU this machine does not have.
    """
    gpus = tf.config.list_logical_devices("GPU")
    if text in (None, "", "auto"):
        return "/GPU:0" if gpus else "/CPU:0"
    match = re.match(r"^/?(?:device:)?(cpu|gpu)(?::(\d+))?$", text.strip(), re.IGNORECASE)
    if not match:
        raise ValueError(f"bad device {text!r}: use auto, cpu, gpu, or /GPU:N")
    kind, index = match.group(1).upper(), int(match.group(2) or 0)
    if kind == "GPU" and index >= len(gpus):
        raise ValueError(f"device {text}: this machine has {len(gpus)} visible GPU(s)")
    return f"/{kind}:{index}"


def git_commit():
    """(HEAD of the source tree, dirty or not); $TF_FFTCONV_COMMIT names it in a copy without git."""
    if os.environ.get("TF_FFTCONV_COMMIT"):
        return os.environ["TF_FFTCONV_COMMIT"], None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=_SOURCE_ROOT,
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return "unknown", None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=_SOURCE_ROOT, capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return commit.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return "unknown", None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def capture(device="auto"):
    """The environment of a run on `device` (see `resolve_device`), as a JSON-ready dict.

    `description` is the one-line summary printed under tables ("GPU: NVIDIA H200 (compute
    capability 9.0)" or "CPU: <model> (<n> cores)").
    """
    import keras

    device = resolve_device(device)
    build = dict(tf.sysconfig.get_build_info())
    commit, dirty = git_commit()
    env = {
        "device": device,
        "device_kind": device.split(":")[0].strip("/"),
        "description": None,
        "gpu_name": None,
        "compute_capability": None,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "tf_version": tf.__version__,
        "keras_version": keras.__version__,
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "platform": f"{platform.system()}-{platform.machine()}",
        "is_cuda_build": bool(build.get("is_cuda_build", False)),
        "cuda_version": build.get("cuda_version"),
        "cudnn_version": build.get("cudnn_version"),
        "cuda_compute_capabilities": build.get("cuda_compute_capabilities"),
        "tf32_enabled": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
        # TensorFlow's CPU kernels: oneDNN's or Eigen's (TF_ENABLE_ONEDNN_OPTS and the CPU decide).
        "onednn_enabled": onednn_enabled(),
        "git_commit": commit,
        "git_dirty": dirty,
    }
    if env["device_kind"] == "GPU":
        index = int(device.split(":")[1])
        physical = tf.config.list_physical_devices("GPU")[index]
        details = tf.config.experimental.get_device_details(physical)
        env["gpu_name"] = details.get("device_name") or physical.name
        capability = details.get("compute_capability")
        env["compute_capability"] = ".".join(map(str, capability)) if capability else None
        env["description"] = f"GPU: {env['gpu_name']}" + (
            f" (compute capability {env['compute_capability']})" if capability else "")
    else:
        env["description"] = f"CPU: {env['cpu_model']} ({env['cpu_count']} cores)"
    return env

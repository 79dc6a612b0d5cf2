"""Facts of the devices ops run on here: a device's kind and index, its name (the GPU's, or the
CPU's from ``/proc/cpuinfo``), a GPU's compute capability, whether TF32 runs on it, whether XLA
compiles an op made here, and whether TensorFlow runs its oneDNN CPU kernels. Each device's name
and capability are read from TensorFlow once and kept (``_DETAILS``)."""

import functools
import os
import platform

import tensorflow as tf

from tf_fftconv.errors import invalid_argument as _invalid

# The device kinds the cost model has constants for.
KINDS = ("CPU", "GPU")


def device_of(device=None):
    """(kind, name) of the device an op runs on here: ``device`` ("CPU", "GPU", "/GPU:1", ...) if
    given, else the device scope (while tracing) or placement (eager) of a new op; an op with no
    device runs on the first GPU if there is one, else on the CPU."""
    kind, index = kind_and_index(device)
    return kind, device_name(kind, index)


def kind_and_index(device=None):
    """``device_of``'s device as its kind and its index among the devices of that kind."""
    if device is None:
        device = tf.zeros([], name="placement_probe").device
    if not device:
        device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
    if "/" not in device:
        device = "/device:" + device.upper() + ("" if ":" in device else ":0")
    spec = tf.DeviceSpec.from_string(device)
    kind = (spec.device_type or "CPU").upper()
    if kind not in KINDS:
        raise _invalid("device %r: the cost model knows CPU and GPU only" % (device,))
    return kind, spec.device_index or 0


# (kind, index) -> (name, compute capability as (major, minor), or None where unknown).
_DETAILS = {}


def details(kind, index):
    """(name, compute capability) of a device (``_DETAILS``)."""
    if (kind, index) not in _DETAILS:
        name, capability = kind, None
        if kind == "GPU":
            gpus = tf.config.list_physical_devices("GPU")
            if index < len(gpus):
                found = tf.config.experimental.get_device_details(gpus[index])
                name = found.get("device_name") or "GPU"
                capability = found.get("compute_capability")
        else:
            name = cpu_name()
        _DETAILS[(kind, index)] = (name, capability)
    return _DETAILS[(kind, index)]


def device_name(kind, index):
    """What the timing cache is keyed on, e.g. "NVIDIA H200" or "CPU <model name> x<cores>"."""
    return details(kind, index)[0]


def tf32_runs(kind, index):
    """Whether TensorFlow's TF32 switch changes anything on the device: TF32 needs the tensor cores
    of compute capability 8.0 and later (a T4 or a P100 runs cuDNN's and our float32 products in
    FP32 whatever the switch says)."""
    if not tf.config.experimental.tensor_float_32_execution_enabled():
        return False
    capability = details(kind, index)[1] if kind == "GPU" else None
    return capability is None or tuple(capability) >= (8, 0)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU %s x%d" % (line.split(":", 1)[1].strip(), os.cpu_count() or 1)
    except OSError:
        pass
    return "CPU %s x%d" % (platform.processor() or platform.machine(), os.cpu_count() or 1)


def compiled_here():
    """Whether an op made here is compiled by XLA: traced inside ``tf.function(jit_compile=True)``
    or a function it calls (as Keras compiles a model's step on a GPU)."""
    if tf.executing_eagerly():
        return False
    try:
        # TensorFlow's own test of the XLA context; no public API tells it.
        from tensorflow.python.ops import control_flow_util
        return bool(control_flow_util.GraphOrParentsInXlaContext(
            tf.compat.v1.get_default_graph()))
    except (ImportError, AttributeError):
        return False


@functools.lru_cache(maxsize=None)
def onednn_enabled():
    """Whether TensorFlow runs its oneDNN CPU kernels in this process (fixed when TensorFlow
    loads, so learned once). TensorFlow turns them on by default only on CPUs with AVX-512 VNNI,
    AVX512-BF16 or AMX, and ``TF_ENABLE_ONEDNN_OPTS`` forces either way; elsewhere its Eigen
    kernels run, which refuse some convolutions (``spatial_refusal``)."""
    try:
        # TensorFlow's own answer (the CPU's features and the switch); no public API tells it.
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        # A TensorFlow without that function: the switch as set, off where unset. Off is the
        # safe guess: it only keeps ``auto`` off a spatial path that oneDNN could have run.
        return os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip().lower() in ("1", "true")

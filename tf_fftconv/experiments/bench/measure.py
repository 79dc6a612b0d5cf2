"""What the benchmark measures and how: the cases, the timed steps and the one timing class.

Every implementation is timed in the same process on the same inputs. Each step is a tf.function;
after warm-up, a timed sample is a batch of N calls between two device synchronisations
(tf.test.experimental.sync_devices, no copy of the output to the host), rotating over a few input
sets; the samples of one case's implementations are taken in turns; the reported time is the
median per-call time over the samples. See docs/benchmarking.md.
"""

import dataclasses
import math
import re
import statistics
import time

import tensorflow as tf

from tf_fftconv import execute, ops, planning, tuning
from tf_fftconv.conv import fft_conv2d, fft_depthwise_conv2d
from tf_fftconv.geometry import conv_geometry
from tf_fftconv.reference import signal_fft_conv2d

# Also the order in which run_case prepares them, which the columns planned by tf_fftconv depend
# on: each plans eagerly, then traces its step, whose plan is then a constant of its graph.
# "fft" and "model" are traced before any timing of the case exists, so they follow the cost model.
# "auto" then times a close call of the model as FFTConv2D does when it is built (this may record
# timings), and "tuned" times the candidates in any case. Once every step is traced, run_case
# forgets the plans and timings, so that each mode and case starts from the model again, as a
# fresh process would (timings in $TF_FFTCONV_AUTOTUNE_CACHE, when set, are read again).
IMPLS = ("conv2d", "signal", "fft", "model", "auto", "tuned")
# What runs without --impl: "tuned" times candidates before it is timed itself, so it is asked
# for; "model" is "auto" itself wherever the cost model's call is clear, so it is asked for too.
DEFAULT_IMPLS = ("conv2d", "signal", "fft", "auto")
IMPL_LABELS = {
    "conv2d": "tf.nn.conv2d (tf.nn.depthwise_conv2d for depthwise cases)",
    "signal": "tf.signal FFT conv (tf_fftconv.reference.signal_fft_conv2d)",
    "fft": "tf_fftconv.fft_conv2d(algorithm=\"fft\"): the FFT path, frame and tiling by the cost "
           "model",
    "model": "tf_fftconv.fft_conv2d(algorithm=\"auto\") planned inside the tf.function, nothing "
             "timed: FFT or tf.nn.conv2d by the cost model alone (or timings cached by "
             "tf_fftconv.autotune)",
    "auto": "tf_fftconv.fft_conv2d(algorithm=\"auto\") as FFTConv2D plans it when built: FFT or "
            "tf.nn.conv2d by the cost model, a close call of the model (on a GPU) timed once on "
            "the device first (tf_fftconv.tuning.confirm_close_call); auto_plan's source says "
            "which decided",
    "tuned": "tf_fftconv.fft_conv2d(algorithm=\"auto\") after tf_fftconv.autotune timed the "
             "case's candidates on the device: the plan the timings choose",
}
# The implementations that are fft_conv2d(algorithm="auto"), each planned its own way
# (plan_before_tracing); their plans are recorded as "<impl>_plan".
PLANNED_IMPLS = ("model", "auto", "tuned")
# Implementations that need the op library.
LIBRARY_IMPLS = ("fft",) + PLANNED_IMPLS
MODES = ("forward", "train")  # train: forward and the gradients wrt input and weights


@dataclasses.dataclass(frozen=True)
class Case:
    """One convolution layer: square input and kernel, equal strides and dilations on both axes.

    ``groups`` > 1: a grouped convolution (tf.nn.conv2d's groups, in_channels / w's third dim).
    ``depthwise``: tf.nn.depthwise_conv2d's layer, out_channels = in_channels x its multiplier.
    """

    batch: int
    in_channels: int
    out_channels: int
    size: int  # H = W
    kernel: int  # kh = kw
    padding: str  # "VALID" or "SAME"
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    depthwise: bool = False

    @property
    def plain(self):
        """Stride 1, no dilation, no groups: the layer every implementation (tf.signal's and the
        op-by-op breakdown too) computes."""
        return self.stride == self.dilation == self.groups == 1 and not self.depthwise

    @property
    def _suffix(self):
        return "".join(f":{tag}{value}" for tag, value in
                       (("s", self.stride), ("d", self.dilation), ("g", self.groups))
                       if value != 1) + (":dw" if self.depthwise else "")

    @property
    def name(self):
        return (f"{self.batch}x{self.in_channels}->{self.out_channels} "
                f"{self.size}x{self.size} k{self.kernel} {self.padding}"
                + self._suffix.replace(":", " ").replace(" dw", " depthwise"))

    @property
    def spec(self):
        return (f"{self.batch}:{self.in_channels}:{self.out_channels}:{self.size}:"
                f"{self.kernel}:{self.padding.lower()}{self._suffix}")

    @property
    def dilated_kernel(self):
        return (self.kernel - 1) * self.dilation + 1

    @property
    def out_size(self):
        span = self.size if self.padding == "SAME" else self.size - self.dilated_kernel + 1
        return -(-span // self.stride)

    @property
    def group_count(self):
        """The groups the layer computes: in_channels for a depthwise one."""
        return self.in_channels if self.depthwise else self.groups

    @property
    def w_shape(self):
        if self.depthwise:
            return (self.kernel, self.kernel, self.in_channels,
                    self.out_channels // self.in_channels)
        return (self.kernel, self.kernel, self.in_channels // self.groups, self.out_channels)

    def spatial_gflop(self, mode):
        """GFLOP (2 x multiply-adds) of direct convolution; three times that with both gradients."""
        forward = (2 * self.batch * self.in_channels // self.group_count * self.out_channels
                   * self.out_size ** 2 * self.kernel ** 2)
        return forward * (3 if mode == "train" else 1) / 1e9


PRESETS = {
    # Mathieu et al.'s layer over kernel sizes: FFT cost is flat in k, spatial cost grows as k^2.
    "mathieu": [Case(128, 96, 256, 32, k, "VALID") for k in (3, 5, 7, 9, 11, 13)],
    # The two convolutions of LeNet-5 (MNIST padded to 32x32).
    "lenet": [Case(128, 1, 6, 32, 5, "VALID"), Case(128, 6, 16, 14, 5, "VALID")],
    # A SAME layer of a wider network.
    "same": [Case(64, 64, 64, 64, 3, "SAME")],
    # Layers a 2-core CPU measures in a few minutes: 32->64 channels at k = 7 and 13, where FFT
    # convolution should win, and LeNet-5's two convolutions at batch 64.
    "cpu": [Case(16, 32, 64, 32, 7, "VALID"), Case(16, 32, 64, 32, 13, "VALID"),
            Case(64, 1, 6, 32, 5, "VALID"), Case(64, 6, 16, 14, 5, "VALID")],
    # Small shapes for a CPU smoke run; two kernel sizes of one layer so that the plot has a line.
    "quick": [Case(2, 3, 4, 12, 3, "VALID"), Case(2, 3, 4, 12, 5, "VALID"),
              Case(2, 2, 3, 10, 3, "SAME")],
}
PRESETS["all"] = PRESETS["mathieu"] + PRESETS["lenet"] + PRESETS["same"]
# The named cases of issue 10: Mathieu's layer with SAME padding, 64x64 SAME k3, and 224x224
# images with 64 -> 64 channels and k = 7 at a small batch.
PRESETS["issue10"] = [Case(128, 96, 256, 32, 7, "SAME"), Case(64, 64, 64, 64, 3, "SAME"),
                      Case(8, 64, 64, 224, 7, "SAME")]
# Where auto must hold up: batch 1-256, channels 1-512, images 8-256, k 1-31, VALID and SAME,
# plus the cases above and the layers where auto once chose the slower path (few channels at 7x7
# on a 112 image, a batch of one, a 15x15 kernel on a 256 image, which tiles). Sized for a few
# minutes on one H200 (the largest tensors are a few hundred MB); the tf.signal column can be
# left out with --impl conv2d,fft,auto.
PRESETS["grid"] = [
    Case(256, 1, 6, 32, 5, "VALID"), Case(256, 6, 16, 14, 5, "VALID"),
    Case(32, 1, 32, 28, 5, "SAME"), Case(128, 3, 64, 32, 3, "SAME"),
    Case(128, 3, 64, 32, 7, "SAME"), Case(32, 3, 64, 224, 7, "SAME"),
    Case(32, 64, 64, 56, 1, "VALID"), Case(32, 64, 64, 56, 3, "SAME"),
    Case(32, 128, 128, 28, 3, "SAME"), Case(32, 256, 256, 14, 3, "SAME"),
    Case(32, 512, 512, 8, 3, "SAME"), Case(64, 512, 512, 8, 1, "VALID"),
    Case(256, 32, 32, 8, 3, "VALID"), Case(256, 64, 128, 16, 3, "SAME"),
    Case(256, 64, 128, 16, 7, "SAME"), Case(32, 256, 512, 16, 5, "SAME"),
    Case(64, 64, 64, 64, 5, "SAME"), Case(64, 64, 64, 64, 7, "SAME"),
    Case(64, 32, 32, 128, 3, "SAME"), Case(64, 32, 32, 128, 7, "SAME"),
    Case(32, 16, 16, 224, 5, "SAME"), Case(32, 16, 16, 224, 11, "SAME"),
    Case(128, 128, 128, 32, 15, "VALID"),
    Case(32, 8, 16, 112, 7, "SAME"), Case(1, 3, 64, 224, 7, "SAME"),
    Case(1, 64, 64, 56, 3, "SAME"), Case(16, 16, 16, 256, 15, "SAME"),
    Case(16, 32, 32, 64, 31, "SAME"),
] + [Case(128, 96, 256, 32, k, "VALID") for k in (3, 5, 9, 15)] + [
    Case(128, 96, 256, 32, k, "SAME") for k in (3, 5, 11, 15)] + PRESETS["issue10"]
# The depthwise layers of large-kernel ConvNets (RepLKNet's 31 and 27, a 13 late in the network,
# ConvNeXt's 7, SLaK's 51), all SAME.
PRESETS["depthwise"] = [
    Case(64, 128, 128, 56, 31, "SAME", depthwise=True),
    Case(64, 256, 256, 28, 27, "SAME", depthwise=True),
    Case(64, 512, 512, 14, 13, "SAME", depthwise=True),
    Case(64, 128, 128, 56, 7, "SAME", depthwise=True),
    Case(32, 128, 128, 56, 51, "SAME", depthwise=True)]
# Grouped, dilated and strided layers, and depthwise ones with them: where auto must choose well.
PRESETS["strided"] = [
    Case(32, 128, 128, 56, 7, "SAME", groups=4), Case(32, 64, 64, 56, 13, "SAME", groups=2),
    Case(32, 64, 64, 56, 3, "SAME", dilation=2), Case(32, 128, 128, 28, 7, "SAME", dilation=3),
    Case(32, 64, 128, 56, 7, "SAME", stride=2), Case(32, 3, 64, 224, 7, "SAME", stride=2),
    Case(32, 128, 128, 56, 3, "SAME", stride=2),
    Case(64, 128, 128, 56, 5, "SAME", dilation=3, depthwise=True),
    Case(32, 64, 128, 56, 13, "SAME", depthwise=True),
    Case(32, 128, 128, 56, 7, "SAME", stride=2, depthwise=True),
    Case(32, 64, 64, 32, 9, "VALID", stride=2, dilation=2)]
DEFAULT_CASES = "all"

_CASE_RE = re.compile(r"^(\d+):(\d+):(\d+):(\d+):(\d+)(?::(valid|same))?((?::(?:[sdg]\d+|dw))*)$",
                      re.IGNORECASE)
CASE_FORMAT = "BATCH:CIN:COUT:SIZE:K[:valid|same][:sS][:dD][:gG][:dw]"


def parse_cases(text):
    """Comma-separated preset names and case specs `CASE_FORMAT`: sS stride S, dD dilation D, gG
    G groups, dw depthwise (COUT a multiple of CIN: the channel multiplier)."""
    cases = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.lower() in PRESETS:
            cases.extend(PRESETS[item.lower()])
            continue
        match = _CASE_RE.match(item)
        if not match:
            raise ValueError(
                f"bad case {item!r}: expected a preset ({', '.join(sorted(PRESETS))}) or "
                f"{CASE_FORMAT}, e.g. 128:96:256:32:7:valid or 64:128:128:56:31:same:dw")
        batch, cin, cout, size, kernel = (int(g) for g in match.groups()[:5])
        padding = (match.group(6) or "valid").upper()
        options = {"stride": 1, "dilation": 1, "groups": 1, "depthwise": False}
        for tag in filter(None, match.group(7).lower().split(":")):
            if tag == "dw":
                options["depthwise"] = True
            else:
                options[{"s": "stride", "d": "dilation", "g": "groups"}[tag[0]]] = int(tag[1:])
        if min(batch, cin, cout, size, kernel, options["stride"], options["dilation"],
               options["groups"]) < 1:
            raise ValueError(f"bad case {item!r}: sizes must be positive")
        if options["depthwise"] and (options["groups"] != 1 or cout % cin):
            raise ValueError(f"bad case {item!r}: a depthwise case has no groups and COUT a "
                             "multiple of CIN")
        if cin % options["groups"] or cout % options["groups"]:
            raise ValueError(f"bad case {item!r}: groups must divide CIN and COUT")
        case = Case(batch, cin, cout, size, kernel, padding, **options)
        if padding == "VALID" and case.dilated_kernel > size:
            raise ValueError(f"bad case {item!r}: kernel larger than the input with VALID")
        cases.append(case)
    if not cases:
        raise ValueError("no cases given")
    return list(dict.fromkeys(cases))  # keep order, drop repeats



# ---------------------------------------------------------------------------------------------
# Timing: the one implementation every measurement goes through.

def sync_devices():
    """Blocks until every queued op on every device has finished; copies nothing to the host."""
    tf.test.experimental.sync_devices()


class CallTimer:
    """Per-call times of `fn`, taken one sample at a time so that several functions can take
    turns (`in_turns`): the warm-up and the calibration run when it is made, a sample at each
    `sample()`.

    `warmup` calls first (tracing, autotuning, allocation; at least one per input set). Each sample
    then times `calls` calls between two device synchronisations and divides by `calls`; the calls
    rotate over `arg_sets` so that no input stays in cache from the call before. `calls=None`
    calibrates: enough calls for a sample of about `target_sample_s`, a multiple of len(arg_sets),
    so that every sample starts on the first set and ends on the last (and the next function's
    sample, starting on the first, does not begin on the set just read). `steps_per_call`: steps
    that one call of `fn` runs (make_step's); the samples are then seconds per step.
    """

    def __init__(self, fn, arg_sets, *, warmup, calls, target_sample_s=0.02, max_calls=1000,
                 steps_per_call=1):
        self.fn, self.arg_sets, self.steps_per_call = fn, arg_sets, steps_per_call
        sets = len(arg_sets)
        for i in range(max(warmup, sets)):
            fn(*arg_sets[i % sets])
        sync_devices()
        if calls is None:
            start = time.perf_counter()
            for args in arg_sets:
                fn(*args)
            sync_devices()
            calls = tuning.calls_per_sample((time.perf_counter() - start) / sets, sets,
                                            target_sample_s, max_calls)
        self.calls = calls
        self.samples = []       # seconds per step (a call's, divided by its steps), one per sample
        # Seconds per step that the host took to issue the sample's calls (the loop, before the
        # closing sync): the ops enqueue their kernels and return, so where this nears the sample's
        # time the device waited on the host, and the time is the host's, not the kernels'.
        self.dispatch = []
        self._next_call = 0     # the rotation over arg_sets goes on from sample to sample

    def sample(self):
        """Times one sample; returns its seconds per call."""
        sets = len(self.arg_sets)
        sync_devices()
        start = time.perf_counter()
        for _ in range(self.calls):
            self.fn(*self.arg_sets[self._next_call % sets])
            self._next_call += 1
        issued = time.perf_counter()
        sync_devices()
        steps = self.calls * self.steps_per_call
        self.samples.append((time.perf_counter() - start) / steps)
        self.dispatch.append((issued - start) / steps)
        return self.samples[-1]


def time_per_call(fn, arg_sets, *, warmup, repeats, calls, target_sample_s=0.02, max_calls=1000):
    """`repeats` samples of `fn` in a row (`CallTimer`). Returns (samples in seconds, calls per
    sample)."""
    timer = CallTimer(fn, arg_sets, warmup=warmup, calls=calls, target_sample_s=target_sample_s,
                      max_calls=max_calls)
    for _ in range(repeats):
        timer.sample()
    return timer.samples, timer.calls


def in_turns(timers, repeats):
    """The (name, timer) pairs of the dict `timers` in the order their samples are to be taken:
    sample 1 of each, then sample 2 of each, ... `repeats` rounds. Taking them so, every timer sees
    the same drift of clocks and host load, which a block of samples after another block would put
    into the ratios. A timer deleted from `timers` meanwhile (it failed) is passed over."""
    for _ in range(repeats):
        for name in list(timers):
            if name in timers:
                yield name, timers[name]


def summarize(samples, calls, dispatch=None):
    """The statistics of one function's samples (seconds per call); with `dispatch` (CallTimer's,
    seconds per call to issue each sample's calls) also its median, `dispatch_ms`."""
    ms = [s * 1e3 for s in samples]
    median = statistics.median(ms)
    extra = {} if dispatch is None else {"dispatch_ms": 1e3 * statistics.median(dispatch)}
    return {
        "median_ms": median,
        "min_ms": min(ms),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "stdev_ms": statistics.stdev(ms) if len(ms) > 1 else 0.0,
        "spread_pct": 100.0 * (max(ms) - min(ms)) / median if median > 0 else 0.0,
        "calls_per_sample": calls,
        "samples_ms": ms,
        **extra,
    }


# ---------------------------------------------------------------------------------------------
# The implementations and the timed steps.

def conv_function(impl, padding, data_format, fft_size=None, case=None):
    """The timed convolution of `impl`; `fft_size` forces the frame of the "fft" one. `case`: the
    layer's strides, dilations, groups and depthwise (default a plain layer); "conv2d" is then
    tf.nn.conv2d or tf.nn.depthwise_conv2d with the same arguments, the FFT ones fft_conv2d or
    fft_depthwise_conv2d."""
    stride, dilation = (case.stride, case.dilation) if case else (1, 1)
    depthwise = bool(case and case.depthwise)
    if impl == "conv2d":
        if depthwise:
            strides = ([1, 1, stride, stride] if data_format == "NCHW"
                       else [1, stride, stride, 1])
            return lambda x, w: tf.nn.depthwise_conv2d(x, w, strides, padding,
                                                       data_format=data_format,
                                                       dilations=[dilation, dilation])
        return lambda x, w: tf.nn.conv2d(x, w, strides=stride, padding=padding,
                                         data_format=data_format, dilations=dilation)
    if impl == "signal":
        if case and not case.plain:
            raise ValueError("the tf.signal FFT conv has stride 1, no dilation and no groups")
        return lambda x, w: signal_fft_conv2d(x, w, padding=padding, data_format=data_format)
    if impl == "fft" or impl in PLANNED_IMPLS:
        algorithm = "fft" if impl == "fft" else "auto"
        frame = fft_size if impl == "fft" else None
        if depthwise:
            return lambda x, w: fft_depthwise_conv2d(
                x, w, stride, padding, dilation, data_format, algorithm=algorithm,
                fft_size=frame)
        return lambda x, w: fft_conv2d(x, w, padding=padding, data_format=data_format,
                                       algorithm=algorithm, fft_size=frame, strides=stride,
                                       dilations=dilation)
    raise ValueError(impl)


def _problem(case, data_format, dtype, compiled=False):
    """`case` as the planner's problem on the current device (`compiled`: its step compiled by
    XLA, as with --xla)."""
    x_shape = ((case.batch, case.size, case.size, case.in_channels) if data_format == "NHWC"
               else (case.batch, case.in_channels, case.size, case.size))
    return planning.make_problem(
        x_shape, case.w_shape, case.padding, data_format, dtype, strides=case.stride,
        dilations=case.dilation, depthwise=case.depthwise, compiled=compiled)


def plan_before_tracing(impl, problem):
    """What is done eagerly for `impl` (one of PLANNED_IMPLS) before its step is traced; returns
    the plan the trace then follows.

    "model": nothing; the cost model's plan (traced before any timing exists: IMPLS).
    "auto": what FFTConv2D does when it is built (and an eager fft_conv2d call): a close call of
    the cost model timed once (tuning.confirm_close_call). The model alone decides a clear call,
    every call on a CPU (planning.CLOSE_CALL_DEVICES) and every call with TF_FFTCONV_AUTOTUNE=0.
    The problem is the case's, batch included, as in an eager call or a layer built for a known
    batch (a layer built for an unknown batch times at problem.ASSUMED_BATCH images).
    "tuned": the candidates timed in any case, as tf_fftconv.autotune does.
    """
    if impl == "model":
        return planning.plan(problem)
    if impl == "auto":
        return tuning.confirm_close_call(problem)
    return tuning.tune_problem(problem)


def plan_record(made):
    """What the JSON file says about a plan: its label, what decided it (the cost model, or a
    timing on this device), whether it was made for XLA (--xla) and the timings it was decided
    from, if any."""
    record = {"label": made.label, "source": made.source, "compiled": made.problem.compiled}
    if made.timings_ms:
        record["timings_ms"] = dict(made.timings_ms)
    return record


def fft_bytes_moved(case, data_format, dtype=tf.float32, fft_size=None, compiled=False):
    """Bytes the FFT path's train step moves (each op reading its inputs once and writing its
    outputs once: the cost model's count for the plan algorithm="fft" follows on this device,
    in `fft_size` frames when given, compiled by XLA or not)."""
    made = planning.plan(_problem(case, data_format, dtype, compiled), "fft", fft_size)
    return made.candidate(made.label).estimate.bytes_moved


GPU_COPY_BYTES = 2 ** 30   # copy_bandwidth's buffer on a GPU, halved down to MIN_GPU_COPY_BYTES
MIN_GPU_COPY_BYTES = 64 * 2 ** 20


def copy_bandwidth(device, *, warmup, repeats, gpu_bytes=GPU_COPY_BYTES):
    """Bytes read + written per second by an elementwise op over a large buffer on `device`: the
    bandwidth the floors are taken at. On a GPU the buffer is `gpu_bytes` (1 GiB), halved while the
    device has no room for it and its result: a call costs the host about 0.2 ms, so over 256 MB
    the H200's add waited on the host and read 2.2-2.7 TB/s, over 1 GiB 4.0 TB/s, a device copy's
    rate. On a CPU, two buffers of 64 MB taken in turns (one would stay in a
    large last-level cache)."""
    gpu = "GPU" in device.upper()
    size = gpu_bytes if gpu else 64 * 2 ** 20
    step = tf.function(lambda t: t + 1.0)
    while True:
        count = size // 4
        buffers = None   # the last size's buffers go before this size's are made
        try:
            with tf.device(device):
                buffers = [tf.zeros([count]) + i for i in range(1 if gpu else 2)]
                samples, _ = time_per_call(step, [(b,) for b in buffers], warmup=warmup,
                                           repeats=repeats, calls=None)
            return 2 * 4 * count / statistics.median(samples)
        except tf.errors.ResourceExhaustedError:
            if not gpu or size // 2 < MIN_GPU_COPY_BYTES:
                raise
            size //= 2


def add_floor(record, bytes_moved, bandwidth):
    """The FFT path's floor on `record` (train mode): its bytes at `bandwidth`, and the share of
    the floor that the measured time reaches."""
    floor_ms = 1e3 * bytes_moved / bandwidth
    record["fft_floor"] = {"bytes_moved": bytes_moved, "floor_ms": floor_ms,
                           "percent_of_floor": (100 * floor_ms / record["timings"]["fft"]["median_ms"]
                                                if "fft" in record["timings"] else None)}
    return record


def _peak_memory(device):
    """Peak bytes allocated on `device` since the last reset, where TensorFlow tracks it (GPUs)."""
    if "GPU" not in device.upper():
        return None
    return tf.config.experimental.get_memory_info(device.split("device:")[-1].lstrip("/"))["peak"]


def _reset_peak_memory(device):
    if "GPU" in device.upper():
        tf.config.experimental.reset_memory_stats(device.split("device:")[-1].lstrip("/"))


def make_step(conv, mode, jit_compile=False, steps_per_call=1):
    """A tf.function of (x, w, dy) returning (y,), or (y, dx, dw) for the output gradient dy.

    jit_compile=True compiles the whole step with XLA, as Keras does a model's train step: then
    conv2d is XLA's own convolution and fft_conv2d runs through its custom calls.
    steps_per_call = K > 1: the function takes K input sets one after the other and runs the step
    on each (``tuning.chained``), so that one call's host cost is shared by K steps.
    """
    def forward(x, w, dy):
        del dy
        return (conv(x, w),)

    def train(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = conv(x, w)
        dx, dw = tape.gradient(y, [x, w], output_gradients=dy)
        return y, dx, dw

    return tuning.chained(forward if mode == "forward" else train, steps_per_call, jit_compile)


def make_inputs(case, data_format, count, generator, dtype=tf.float32):
    """`count` fresh (x, w, dy) sets, normal random (drawn in float32, then cast to `dtype`), on
    the current device."""
    b, cin, cout, h, k, ho = (case.batch, case.in_channels, case.out_channels, case.size,
                              case.kernel, case.out_size)
    x_shape = (b, h, h, cin) if data_format == "NHWC" else (b, cin, h, h)
    y_shape = (b, ho, ho, cout) if data_format == "NHWC" else (b, cout, ho, ho)
    w_scale = 1.0 / math.sqrt(cin // case.group_count * k * k)
    return [tuple(tf.cast(t, dtype) for t in (
        generator.normal(x_shape, dtype=tf.float32),
        generator.normal(case.w_shape, stddev=w_scale, dtype=tf.float32),
        generator.normal(y_shape, dtype=tf.float32)))
            for _ in range(count)]


def max_rel_diff(outputs, reference):
    """max |a - b| / max |b| per output (y, dx, dw), computed on the device."""
    names = ("y", "dx", "dw")
    diffs = {}
    for name, a, b in zip(names, outputs, reference):
        a, b = tf.cast(a, tf.float32), tf.cast(b, tf.float32)
        scale = tf.reduce_max(tf.abs(b))
        diff = tf.reduce_max(tf.abs(a - b))
        value = float(diff / scale) if float(scale) > 0 else float(diff)
        diffs[name] = value if math.isfinite(value) else str(value)  # JSON has no NaN
    return diffs


# A difference to the reference implementation above this is a note in the report; the bench then
# also measures both against tf.nn.conv2d in float64 on the same inputs, to say which side is off.
DIFF_NOTE_THRESHOLD = 1e-2


def worst_diff(diffs):
    """The largest of one implementation's max_rel_diff values (y, dx, dw)."""
    return max(float(value) for value in diffs.values())


def float64_reference(case, mode, arg_set, data_format):
    """tf.nn.conv2d's step in float64 on `arg_set` cast up, on the current device."""
    wide = [tf.cast(t, tf.float64) for t in arg_set]
    return make_step(conv_function("conv2d", case.padding, data_format, case=case), mode)(*wide)


def first_line(error):
    """`Type: first line of the message`, short enough for a table note."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def run_case(case, mode, impls, *, device, generator, data_format, input_sets, warmup, repeats,
             calls, jit_compile=False, unavailable=None, status=lambda text: None,
             dtype=tf.float32, fft_size=None, steps_per_call=1):
    """Times every implementation on one case and mode; returns the JSON record.

    Every implementation is prepared first (its step traced, checked against the first one's
    outputs, warmed up and calibrated), then their samples are taken in turns (`in_turns`).
    `unavailable` maps an implementation that cannot run here to the reason (recorded as skipped);
    `status` is told what is being measured; `fft_size` forces the "fft" implementation's frame.
    `steps_per_call` > 1: each call runs that many steps (make_step), each on its own input set
    (`input_sets` calls' worth), and the timings are per step; the first step's outputs are checked.
    """
    unavailable = unavailable or {}
    record = {"case": {**dataclasses.asdict(case), "name": case.name, "spec": case.spec,
                       "out_size": case.out_size},
              "mode": mode, "spatial_gflop": case.spatial_gflop(mode), "samples_interleaved": True,
              "timings": {}, "skipped": {}, "max_rel_diff": {}, "peak_memory_bytes": {}}
    with tf.device(device):
        arg_sets = make_inputs(case, data_format, input_sets * steps_per_call, generator, dtype)
        # What each call takes: steps_per_call input sets, flattened (make_step).
        call_sets = [sum(arg_sets[first:first + steps_per_call], ())
                     for first in range(0, len(arg_sets), steps_per_call)]
        reference, reference_impl, reference64 = None, None, None
        # impl -> its CallTimer, and the peak memory of its calls so far. Every traced step stays
        # alive until the samples are taken; the input sets are shared.
        timers, peaks = {}, {}
        try:
            for impl in impls:   # in IMPLS' order, which the planned ones depend on
                status(f"{case.name} {mode}: {impl}")
                if impl in unavailable:
                    record["skipped"][impl] = unavailable[impl]
                    continue
                if impl == "signal" and not case.plain:
                    record["skipped"][impl] = "stride 1, no dilation and no groups only"
                    continue
                step = make_step(conv_function(impl, case.padding, data_format, fft_size, case), mode,
                                 jit_compile, steps_per_call)
                try:
                    if impl in PLANNED_IMPLS:
                        record[f"{impl}_plan"] = plan_record(
                            plan_before_tracing(impl, _problem(case, data_format, dtype,
                                                               jit_compile)))
                    _reset_peak_memory(device)
                    outputs = step(*call_sets[0])
                    outputs = outputs[:len(outputs) // steps_per_call]   # the first step's
                    if reference is None:
                        reference, reference_impl = outputs, impl
                    else:
                        diffs = record["max_rel_diff"][impl] = max_rel_diff(outputs, reference)
                        if not worst_diff(diffs) <= DIFF_NOTE_THRESHOLD:
                            status(f"{case.name} {mode}: {impl} and {reference_impl} against "
                                   "float64")
                            if reference64 is None:
                                reference64 = float64_reference(case, mode, arg_sets[0],
                                                                data_format)
                            record.setdefault("max_rel_diff_float64", {}).update({
                                reference_impl: max_rel_diff(reference, reference64),
                                impl: max_rel_diff(outputs, reference64)})
                            _reset_peak_memory(device)   # the float64 step is not this one's
                    del outputs
                    timers[impl] = CallTimer(step, call_sets, warmup=warmup, calls=calls,
                                             steps_per_call=steps_per_call)
                    # Inputs of every set included, as for every implementation.
                    peaks[impl] = _peak_memory(device)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as error:  # OOM, no kernel for this layout on this device, ...
                    record["skipped"][impl] = first_line(error)
        finally:
            # Every step is traced, and keeps its plan: a plan is a constant of the graph traced
            # with it, and the samples call each step with the signature it was traced for. So
            # the plans and timings can go (IMPLS says why), also before the fft floor's plan.
            planning.clear()
        status(f"{case.name} {mode}: {', '.join(timers)} in turns")
        for impl, timer in in_turns(timers, repeats):
            try:
                _reset_peak_memory(device)
                timer.sample()
                peak = _peak_memory(device)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:
                record["skipped"][impl] = first_line(error)
                del timers[impl]
                continue
            if peak is not None:
                peaks[impl] = max(peaks[impl], peak)
        for impl, timer in timers.items():
            record["timings"][impl] = summarize(timer.samples, timer.calls, timer.dispatch)
            record["peak_memory_bytes"][impl] = peaks[impl]
        record["max_rel_diff_against"] = reference_impl
        del reference, reference64, arg_sets, call_sets, timers
    medians = {impl: t["median_ms"] for impl, t in record["timings"].items()}
    record["ratios"] = {
        f"{a}/{b}": (medians[a] / medians[b] if a in medians and b in medians else None)
        for a, b in (("fft", "conv2d"), ("fft", "signal"), ("signal", "conv2d"))
        + tuple((impl, "conv2d") for impl in PLANNED_IMPLS)}
    # Each way of planning auto against the faster of the two paths measured here
    # (issue 10: auto <= 1.05).
    best = [medians[impl] for impl in ("conv2d", "fft") if impl in medians]
    for impl in PLANNED_IMPLS:
        record["ratios"][f"{impl}/best"] = (medians[impl] / min(best)
                                            if impl in medians and best else None)
    record["fastest"] = min(medians, key=medians.get) if medians else None
    return record


# ---------------------------------------------------------------------------------------------
# The fft train step op by op: where its time goes.

def fft_op_steps(case, data_format, fft_size=None):
    """The ops of fft_conv2d's train step (tf_fftconv/execute.py) in one frame, the smallest that
    holds the padded image or `fft_size` (the path `fft_size=` of that size forces), each alone.
    In float16 and bfloat16 these are the half-spectrum ops (`fft_conv2d(..., half_spectra=True)`);
    a plan with float32 spectra runs the float32 ops between two casts.

    Returns (steps, arguments): `steps` maps each op's name to a tf.function of the tensors it reads;
    `arguments(x, w, dy)` computes every op's arguments from one input set with the same ops.
    tests/test_bench.py checks that composing them gives fft_conv2d's y, dx and dw.
    """
    geometry = conv_geometry(case.size, case.size, case.kernel, case.kernel, case.padding,
                             fft_size)
    size, top, left, k = geometry.fft_size, geometry.pad_top, geometry.pad_left, case.kernel
    # The weight spectrum, the products and the weight gradient as fft_conv2d makes them (for half
    # precision: the float16 weight gain and alpha; for float32 plain rfft2d and spectral_matmul,
    # with the spectra stored rounded to TF32 for the TF32 products, which the ops apply only where
    # TensorFlow's TF32 switch is on: execute._tf32_spectra).
    def tf32(t):
        return execute._tf32_spectra(t.dtype, True)

    steps = {
        "rfft x": lambda x: ops.rfft2d(x, size, top, left, data_format, round_to_tf32=tf32(x)),
        "rfft w": lambda w: execute._weight_spectrum(w, size, (k, k), round_to_tf32=tf32(w)),
        "matmul y = x w^H": lambda xs, ws: execute._forward_product(
            xs, ws, size, (k, k), tf32_operands=xs.dtype == tf.complex64),
        "irfft y": lambda ys: ops.irfft2d(ys, size, geometry.out_h, geometry.out_w, 0, 0,
                                          data_format),
        "rfft dy": lambda dy: ops.rfft2d(dy, size, 0, 0, data_format, round_to_tf32=tf32(dy)),
        "matmul dx = dy w": lambda dys, ws: execute._input_gradient_product(
            dys, ws, size, (k, k), tf32_operands=dys.dtype == tf.complex64),
        "irfft dx": lambda dxs: ops.irfft2d(dxs, size, case.size, case.size, top, left,
                                            data_format),
        "matmul dw = dy^H x": lambda xs, dys: execute._weight_gradient_product(
            xs, dys, size, tf32_operands=xs.dtype == tf.complex64),
        "irfft dw": lambda dws: execute._weight_gradient(dws, size, (k, k)),
    }
    steps = {name: tf.function(fn) for name, fn in steps.items()}

    def arguments(x, w, dy):
        xs, ws, dys = steps["rfft x"](x), steps["rfft w"](w), steps["rfft dy"](dy)
        return {"rfft x": (x,), "rfft w": (w,), "matmul y = x w^H": (xs, ws),
                "irfft y": (steps["matmul y = x w^H"](xs, ws),), "rfft dy": (dy,),
                "matmul dx = dy w": (dys, ws), "irfft dx": (steps["matmul dx = dy w"](dys, ws),),
                "matmul dw = dy^H x": (xs, dys),
                "irfft dw": (steps["matmul dw = dy^H x"](xs, dys),)}
    return steps, arguments


def run_fft_ops(case, *, device, generator, data_format, input_sets, warmup, repeats, calls,
                status=lambda text: None, dtype=tf.float32, fft_size=None):
    """Times each op of the fft train step alone on `case` (in `fft_size` frames when given: one
    frame must then hold the padded image); returns the JSON record."""
    record = {"case": {**dataclasses.asdict(case), "name": case.name, "spec": case.spec,
                       "out_size": case.out_size}, "timings": {}}
    if not case.plain:
        record["skipped"] = "the breakdown is of the stride-1 dense path"
        return record
    try:
        conv_geometry(case.size, case.size, case.kernel, case.kernel, case.padding, fft_size)
    except tf.errors.InvalidArgumentError as error:
        # The breakdown follows the single-frame path; a case that needs tiles has none.
        record["skipped"] = error.message
        return record
    record["samples_interleaved"] = True
    with tf.device(device):
        steps, arguments = fft_op_steps(case, data_format, fft_size)
        per_set = [arguments(*inputs)
                   for inputs in make_inputs(case, data_format, input_sets, generator, dtype)]
        timers = {}
        for name, step in steps.items():
            status(f"{case.name}: {name}")
            timers[name] = CallTimer(step, [args[name] for args in per_set], warmup=warmup,
                                     calls=calls)
        # What a call of a tf.function costs without work, included once in every op's time.
        overhead = CallTimer(tf.function(tf.identity), [args["rfft x"] for args in per_set],
                             warmup=warmup, calls=calls)
        status(f"{case.name}: ops in turns")
        for _, timer in in_turns({**timers, "call overhead": overhead}, repeats):
            timer.sample()
        record["timings"] = {name: summarize(timer.samples, timer.calls, timer.dispatch)
                             for name, timer in timers.items()}
        record["call_overhead"] = summarize(overhead.samples, overhead.calls, overhead.dispatch)
        del per_set, timers
    record["sum_ms"] = sum(t["median_ms"] for t in record["timings"].values())
    return record


# ---------------------------------------------------------------------------------------------
# Whole training steps of a small Keras model whose convolutions dominate the step.

@dataclasses.dataclass(frozen=True)
class ModelCase:
    """A stack of stride-1 SAME convolutions (ReLU, 2x2 max pooling after each) and a classifier."""

    name: str
    batch: int
    size: int  # input H = W
    in_channels: int
    channels: tuple  # output channels of each convolution
    kernel: int
    classes: int = 10
    architecture: str = "convnet"  # or "lenet": models.lenet5 (VALID 5x5 layers, 1 -> 6 -> 16)


MODEL_CASES = {
    # 32x32 images through 32 -> 64 -> 128 channels with 7x7 kernels: the convolutions dominate.
    "convnet7": ModelCase("convnet7", 128, 32, 3, (32, 64, 128), 7),
    # The reproduction's model and batch: LeNet-5 on 32x32 images (batch, size and channels are
    # those of models.lenet5), the step of the user's table.
    "lenet": ModelCase("lenet", 128, 32, 1, (6, 16), 5, architecture="lenet"),
    # A smoke run on a CPU.
    "tiny": ModelCase("tiny", 4, 8, 1, (2,), 3),
}


def build_model(case, conv):
    """The model of `case` with `conv` layers: "conv2d" keras Conv2D, "fft" FFTConv2D with
    algorithm="fft", "auto" FFTConv2D with algorithm="auto"."""
    import keras  # noqa: PLC0415  (only the model steps need Keras)

    from tf_fftconv.layers import FFTConv2D  # noqa: PLC0415

    if case.architecture == "lenet":
        from tf_fftconv.experiments import models  # noqa: PLC0415
        return models.lenet5("spatial" if conv == "conv2d" else conv,
                             input_shape=(case.size, case.size, case.in_channels),
                             num_classes=case.classes)

    def layer(*args, **kwargs):
        if conv == "conv2d":
            return keras.layers.Conv2D(*args, **kwargs)
        return FFTConv2D(*args, algorithm=conv, **kwargs)

    model = keras.Sequential([keras.Input((case.size, case.size, case.in_channels))])
    for channels in case.channels:
        model.add(layer(channels, case.kernel, padding="same", activation="relu"))
        model.add(keras.layers.MaxPooling2D(2))
    model.add(keras.layers.GlobalAveragePooling2D())
    model.add(keras.layers.Dense(case.classes))
    return model


def keras_train_step(model, x, y):
    """A function of no arguments that runs one step of the compiled `model`'s training on the
    batch (x, y), as `fit` does: the model's `train_function` on an endless iterator of that one
    batch (one step per call, Keras' default steps_per_execution). Returns the step's logs."""
    batches = iter(tf.data.Dataset.from_tensors((x, y)).repeat())
    model.make_train_function()
    train_function = model.train_function
    return lambda: train_function(batches)


def run_model_step(case, impls, *, device, jit_compile, warmup, repeats, calls, seed,
                   status=lambda text: None):
    """Times one Keras train step (forward, loss, gradients, Adam update) of `case` per
    implementation, each model compiled with `jit_compile` and starting from the same weights."""
    import keras  # noqa: PLC0415

    record = {"model": dataclasses.asdict(case), "jit_compile": jit_compile, "timings": {},
              "skipped": {}, "compiled_with_xla": {}}
    rng = tf.random.Generator.from_seed(seed)
    with tf.device(device):
        x = rng.normal((case.batch, case.size, case.size, case.in_channels))
        y = rng.uniform((case.batch,), maxval=case.classes, dtype=tf.int32)
        weights = None
        for impl in impls:
            status(f"{case.name} train step: {impl}")
            try:
                model = build_model(case, impl)
                weights = weights or model.get_weights()
                model.set_weights(weights)
                model.compile(optimizer="adam", jit_compile=jit_compile,
                              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                samples, used_calls = time_per_call(keras_train_step(model, x, y), [()],
                                                    warmup=warmup, repeats=repeats, calls=calls)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:
                record["skipped"][impl] = first_line(error)
                continue
            record["timings"][impl] = summarize(samples, used_calls)
            record["compiled_with_xla"][impl] = bool(model.jit_compile)
    medians = {impl: t["median_ms"] for impl, t in record["timings"].items()}
    for impl in ("fft", "auto"):
        record[f"ratio_{impl}_conv2d"] = (medians[impl] / medians["conv2d"]
                                          if impl in medians and "conv2d" in medians else None)
    return record

"""How ``fft_conv2d`` computes a convolution: the choice of algorithm, frame and tiling, the timing
cache, explain.

A *plan* says which algorithm computes one convolution problem (shapes, padding, layout, dtype,
device kind) and, for the FFT path, its frame size, tiling and memory mode. Plans are made in
Python while a function is traced (or at each eager call), so they are constants of the traced
graph and work under XLA. Each plan is kept per problem in the process, so the choice is
deterministic once made.

The candidates are spatial convolution and the FFT configurations of the problem, ranked by the
time of forward + both gradients that the cost model (``cost_model``) estimates for each. A
one-time timing of the best candidates on the device
(``tf_fftconv.autotune``) overrides the model for the problems it timed; its results are kept in
the process and, with ``TF_FFTCONV_AUTOTUNE_CACHE`` set, in a JSON file. ``FFTConv2D`` runs that
timing itself, once, when it is built on a GPU for a problem the model calls close
(``is_close_call``).

Memory: a memory budget (argument ``memory_budget`` or ``TF_FFTCONV_MEMORY_BUDGET``, bytes) removes
the candidates whose workspace (the spectra held at once, ``cost_model``) exceeds it; spatial
convolution's workspace is counted as zero.

Spectra of float16 and bfloat16 problems: stored in the input's half type (half the bytes, four
roundings: the image, weight and product spectra and the output) or in float32 (the inputs cast
to float32, FP32 products, one rounding: the output's, as cuDNN's float32 accumulation). Each FFT
configuration takes half spectra only where the cost model puts its float32 spectra at least
``HALF_SPECTRA_GAIN`` times slower, and never on a CPU (whose kernels convert every half value,
which costs more than the bytes save); elsewhere (small layers, bound by the ops' fixed costs) the
accuracy is worth more than the time. ``fft_conv2d(..., half_spectra=True / False)`` forces either.
"""

import dataclasses
import functools
import json
import math
import os
import platform
import re
import threading

import tensorflow as tf

from tf_fftconv import cost_model, geometry
from tf_fftconv.cost_model import (
    ASSUMED_BATCH, DEVICE_COSTS, Estimate, FftConfig, Problem, device_costs, estimate_fft,
    estimate_spatial)
from tf_fftconv.errors import invalid_argument as _invalid

ALGORITHMS = ("auto", "fft", "spatial")
CHUNK_COUNTS = (1, 2, 4, 8, 16, 32, 64)
# Without timings, "auto" takes the FFT path only when the model puts it this many times faster
# than spatial convolution: the model is within about 20% on the H200 anchors
# (docs/performance.md), and a near tie is better left to cuDNN / oneDNN.
FFT_MARGIN = 1.2
# A close call: the cost model's best FFT estimate and its spatial estimate within this factor of
# each other. The model's error on the H200 grid (RMS of the log ratio 0.23-0.25 per path)
# is enough to flip such a choice, so FFTConv2D confirms it by timing (``is_close_call``).
CLOSE_CALL_FACTOR = 1.6
# On a GPU the constants were not measured on (scaled to its data sheet, or taken as they are:
# ``cost_model.measured_on``), a choice is close within this factor: the model's error there is
# unknown, so more choices are timed.
UNMEASURED_CLOSE_CALL_FACTOR = 3.0
# Where FFTConv2D times close calls by default: on a CPU a timing of a large layer takes long and
# the model's CPU constants were fitted on the machine the tests run on.
CLOSE_CALL_DEVICES = ("GPU",)
HALF_DTYPES = ("float16", "bfloat16")
# A half-precision problem's FFT configuration stores half spectra only where float32 spectra
# would make it at least this many times slower (module docstring).
HALF_SPECTRA_GAIN = 1.1
BUDGET_ENV = "TF_FFTCONV_MEMORY_BUDGET"
CACHE_ENV = "TF_FFTCONV_AUTOTUNE_CACHE"
AUTOTUNE_ENV = "TF_FFTCONV_AUTOTUNE"
CACHE_SCHEMA = "tf_fftconv.autotune/1"
# The label of spatial convolution among the candidates, and a plan's algorithm.
SPATIAL = "spatial"
# The algorithm of a problem with no input or no output channels (``Problem.no_channels``): its
# output is zeros or empty, made without a convolution op (TensorFlow's conv2d refuses a filter
# with no input channels, and oneDNN's CPU kernels one with no output channels).
NO_CHANNELS = "no channels"


# ---------------------------------------------------------------------------------------------
# Candidates and the choice.

@dataclasses.dataclass(frozen=True)
class Candidate:
    label: str
    config: object          # FftConfig, or None for spatial convolution
    estimate: Estimate


@dataclasses.dataclass(frozen=True)
class Plan:
    """What computes one convolution, and why. ``str(plan)`` is ``explain``'s text."""

    problem: Problem
    algorithm: str                  # "fft", "spatial" or "no channels"
    config: object                  # FftConfig, or None (not the FFT path, or sizes unknown)
    source: str                     # what decided: cost model, timing, rule, argument
    requested: str                  # the algorithm argument
    budget: object                  # bytes, or None
    candidates: tuple = ()          # Candidate, fastest first by the model
    timings_ms: dict = dataclasses.field(default_factory=dict)
    notes: tuple = ()

    @property
    def label(self):
        if self.config is not None:
            return self.config.label
        return "fft single (run-time size)" if self.algorithm == "fft" else self.algorithm

    def candidate(self, label):
        return next((c for c in self.candidates if c.label == label), None)

    def __str__(self):
        return explain_plan(self)


def _with_spectra(problem, config):
    """``config`` with the spectrum type of ``problem`` (module docstring): float32 or half for
    a half-precision problem, as forced or as the cost model finds worth it; native otherwise."""
    if problem.dtype not in HALF_DTYPES:
        return config
    half = dataclasses.replace(config, spectra="native")
    wide = dataclasses.replace(config, spectra="float32")
    if problem.elementwise:
        # The depthwise product is TensorFlow's complex multiply, which has no half type.
        return wide
    if problem.half_spectra is not None:
        return half if problem.half_spectra else wide
    costs = device_costs(problem)
    worth_it = costs.half_spectra_pay and (estimate_fft(problem, wide, costs).time_s
                >= HALF_SPECTRA_GAIN * estimate_fft(problem, half, costs).time_s)
    return half if worth_it else wide


def _fft_configs(problem, fft_size=None, tile=None):
    """Every FFT configuration of a problem with static sizes (forced frame or tile honoured),
    each with its spectrum type (``_with_spectra``)."""
    k_h, k_w = problem.dilated_k_h, problem.dilated_k_w   # the stride-1 problem's kernel
    out = geometry.output_geometry(problem.in_h, problem.in_w, k_h, k_w, problem.padding)
    if fft_size is not None:
        sizes = [fft_size]
    elif tile is not None:
        sizes = [geometry.tile_fft_size(tile, k_h, k_w)]
    else:
        # From the smallest tiling frame (or the single frame of a tiny image) to the single frame.
        # Every allowed size, powers of two, 3 * 2^k and 5 * 2^k alike, as single frames and as
        # tiles.
        single = geometry.next_fft_size(max(out.need_h, out.need_w))
        smallest = max(geometry.next_fft_size(max(k_h, k_w, 2)),
                       min(geometry.SMALLEST_TILE_FFT_SIZE, single))
        largest = min(single, geometry.MAX_FFT_SIZE)
        sizes = [s for s in geometry.FFT_SIZES if smallest <= s <= largest]
    configs = []
    for size in sizes:
        tiles = geometry.tile_geometry(problem.in_h, problem.in_w, k_h, k_w, problem.padding,
                                       size, tile)
        frames = None if problem.batch is None else problem.batch * tiles.tiles
        configs.append(FftConfig(tiles))
        for chunks in CHUNK_COUNTS:
            if frames is not None and chunks > max(frames, 1):
                break
            configs.append(FftConfig(tiles, "recompute", chunks))
    return [_with_spectra(problem, config) for config in configs]


def within_budget(found, budget):
    """The candidates whose workspace fits ``budget`` (bytes; None: all), in their order."""
    return [c for c in found if budget is None or c.estimate.workspace_bytes <= budget]


def spatial_op(problem):
    """The TensorFlow op that computes ``problem``'s spatial path: "depthwise_conv2d" for a
    depthwise problem, except with strides and dilations both above 1 and with unequal strides on
    a GPU, where "conv2d" with C groups computes it (``execute._spatial_conv`` says why);
    "conv2d" otherwise."""
    strided_and_dilated = problem.strides != (1, 1) and problem.dilations != (1, 1)
    unequal_strides_on_gpu = problem.device == "GPU" and problem.strides[0] != problem.strides[1]
    return ("depthwise_conv2d" if problem.depthwise and not strided_and_dilated
            and not unequal_strides_on_gpu else "conv2d")


# What TensorFlow's CPU kernels refuse without oneDNN (its Eigen kernels, TensorFlow 2.21; their
# messages quoted). oneDNN's kernels, the GPU's and XLA's compiled convolutions compute and
# differentiate all of these.
DILATED_GRADIENT_REFUSED = (
    'the gradients of a dilated tf.nn.conv2d (Conv2DBackpropInput and Conv2DBackpropFilter: '
    '"Current CPU implementations do not yet support dilation rates larger than 1")')
GROUPED_GRADIENT_REFUSED = (
    'the gradients of a grouped tf.nn.conv2d ("Gradients for grouped convolutions are not '
    'supported on CPU"), and in a graph its forward pass followed by its bias, which the graph '
    'optimizer fuses ("Fused conv implementation does not support grouped convolutions")')
UNEQUAL_STRIDES_REFUSED = (
    'tf.nn.depthwise_conv2d with unequal strides (DepthwiseConv2dNative: "Current '
    'implementation only supports equal length strides in the row and column dimensions")')


def spatial_refusal(problem):
    """What TensorFlow refuses in ``problem``'s spatial path (``spatial_op``) on its device, in
    words, or None where it computes the convolution and both gradients.

    A refusal of the gradients alone counts: a call cannot know whether it will be
    differentiated, and a layer is made to be trained. Where there is one, ``algorithm="auto"``
    takes the FFT path (which computes and differentiates every stride, dilation and group) and
    ``algorithm="spatial"`` is refused (``_make_plan``)."""
    if problem.device != "CPU" or problem.compiled or onednn_enabled():
        return None
    if spatial_op(problem) == "depthwise_conv2d":
        refused = [UNEQUAL_STRIDES_REFUSED] if problem.strides[0] != problem.strides[1] else []
    else:
        refused = ([DILATED_GRADIENT_REFUSED] if problem.dilations != (1, 1) else []) + (
            [GROUPED_GRADIENT_REFUSED] if problem.groups > 1 else [])
    return ("without oneDNN, TensorFlow's CPU kernels refuse " + "; and ".join(refused)
            if refused else None)


def _spatial_refused_note(refusal):
    """``explain``'s line for a problem whose spatial path TensorFlow refuses."""
    return "spatial convolution is no candidate: %s. The FFT path computes it" % refusal


def candidates(problem, algorithm="auto", fft_size=None, tile=None):
    """The candidates ``algorithm`` allows, fastest first by the cost model (spatial convolution
    only where TensorFlow runs it, ``spatial_refusal``)."""
    costs = device_costs(problem)
    found = []
    if (algorithm in ("auto", "spatial") and fft_size is None and tile is None
            and spatial_refusal(problem) is None):
        found.append(Candidate(SPATIAL, None, estimate_spatial(problem, costs)))
    if algorithm in ("auto", "fft"):
        for config in _fft_configs(problem, fft_size, tile):
            found.append(Candidate(config.label, config, estimate_fft(problem, config, costs)))
    return tuple(sorted(found, key=lambda c: c.estimate.time_s))


def unknown_size_rule(problem):
    """FFT where it is likely to win without knowing the image size, else spatial.

    Used when height or width is unknown while tracing: FFT for kernels of 5x5 and more with
    ``Cin * Cout >= 64``, spatial otherwise. On the H200 the FFT path won in those cases with
    VALID padding (Mathieu's layer at k >= 5, LeNet's second layer) and lost below them (k = 3,
    LeNet's first layer); it also lost with SAME padding at Mathieu's size, so for unknown sizes
    this is a guess, which static sizes replace with the cost model. A dilated kernel counts by
    its extent (the FFT path's cost), a grouped one by ``Cin / groups * Cout`` (the w's size).
    """
    return "fft" if (min(problem.dilated_k_h, problem.dilated_k_w) >= 5
                     and problem.in_channels // max(problem.groups, 1) * problem.out_channels
                     >= 64) else SPATIAL


_LOCK = threading.Lock()
_PLANS = {}         # (problem, options) -> Plan: the choice, once made
_TIMINGS = {}       # problem.key() -> {label: median ms}
_DISK = {"path": None}


def clear():
    """Forgets every plan and timing of the process (the disk cache is read again when set)."""
    with _LOCK:
        _PLANS.clear()
        _TIMINGS.clear()
        _DISK["path"] = None


def _load_disk_cache():
    path = os.environ.get(CACHE_ENV) or None
    if path == _DISK["path"]:
        return
    _DISK["path"] = path
    if not path or not os.path.exists(path):
        return
    try:
        with open(path) as f:
            document = json.load(f)
    except (OSError, ValueError) as error:
        raise _invalid("%s=%s cannot be read as a timing cache: %s" % (CACHE_ENV, path, error))
    if document.get("schema") != CACHE_SCHEMA:
        raise _invalid("%s=%s is not a tf_fftconv timing cache (schema %r, expected %r)"
                       % (CACHE_ENV, path, document.get("schema"), CACHE_SCHEMA))
    for key, entry in document.get("entries", {}).items():
        _TIMINGS.setdefault(key, {}).update(entry.get("timings_ms", {}))


def _save_disk_cache():
    path = _DISK["path"]
    if not path:
        return
    document = {"schema": CACHE_SCHEMA, "entries": {}}
    if os.path.exists(path):
        with open(path) as f:
            document = json.load(f)
    for key, timings in _TIMINGS.items():
        document["entries"].setdefault(key, {}).setdefault("timings_ms", {}).update(timings)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
    os.replace(temporary, path)


def record_timings(problem, timings_ms):
    """Stores measured medians (ms per forward + both gradients) for a problem's candidates."""
    with _LOCK:
        _load_disk_cache()
        _TIMINGS.setdefault(problem.key(), {}).update(timings_ms)
        for options in [o for o in _PLANS if o[0] == problem]:
            del _PLANS[options]          # decided again, now with the timings
        _save_disk_cache()


def cached_timings(problem):
    with _LOCK:
        _load_disk_cache()
        return dict(_TIMINGS.get(problem.key(), {}))


_SIZE_SUFFIXES = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def parse_budget(value, what="memory_budget"):
    """Bytes: a positive number, or a string such as "2e9", "512M", "1.5GiB" (binary suffixes)."""
    if value is None:
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([KMGT]?)(?:i?B)?\s*", value, re.IGNORECASE)
        try:
            number = float(match.group(1)) * _SIZE_SUFFIXES[match.group(2).upper()]
        except (AttributeError, ValueError):
            raise _invalid("%s must be a number of bytes such as 2e9 or 512M, got %r"
                           % (what, value)) from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _invalid("%s must be a number of bytes, got %r" % (what, value))
    else:
        number = float(value)
    if not number > 0 or math.isinf(number):
        raise _invalid("%s must be a positive number of bytes, got %r" % (what, value))
    return int(number)


def resolve_budget(memory_budget):
    """The argument, else ``TF_FFTCONV_MEMORY_BUDGET``, else None (no budget)."""
    if memory_budget is not None:
        return parse_budget(memory_budget)
    return parse_budget(os.environ.get(BUDGET_ENV) or None, BUDGET_ENV)


def _autotune_setting():
    """``TF_FFTCONV_AUTOTUNE``: "1" times every problem an eager ``algorithm="auto"`` call
    meets; "0" times nothing unasked; unset, ``FFTConv2D`` times its close calls on a GPU."""
    value = os.environ.get(AUTOTUNE_ENV, "").strip().lower()
    if value == "":
        return "close calls"
    if value in ("0", "off", "false", "no"):
        return "off"
    if value in ("1", "on", "true", "yes"):
        return "all"
    raise _invalid("%s must be 0 or 1, got %r" % (AUTOTUNE_ENV, value))


def autotune_enabled():
    """``TF_FFTCONV_AUTOTUNE=1``: eager calls of ``algorithm="auto"`` time the candidates of a
    problem not timed yet (off by default)."""
    return _autotune_setting() == "all"


def close_call_timing_enabled():
    """Whether ``FFTConv2D`` times its close calls when built (``TF_FFTCONV_AUTOTUNE`` not 0)."""
    return _autotune_setting() != "off"


def is_close_call(plan_made):
    """Whether ``plan_made`` is the cost model's choice between the FFT path and spatial
    convolution with the two best estimates (within the budget) within ``CLOSE_CALL_FACTOR`` of
    each other, and no timings yet."""
    if (plan_made.requested != "auto" or plan_made.timings_ms
            or plan_made.problem.device not in CLOSE_CALL_DEVICES):
        return False
    within = within_budget(plan_made.candidates, plan_made.budget)
    spatial = next((c for c in within if c.config is None), None)
    fft = next((c for c in within if c.config is not None), None)   # fastest first
    if spatial is None or fft is None:
        return False
    ratio = spatial.estimate.time_s / fft.estimate.time_s
    factor = (CLOSE_CALL_FACTOR if cost_model.measured_on(plan_made.problem)
              else UNMEASURED_CLOSE_CALL_FACTOR)
    return 1 / factor <= ratio <= factor


def check_algorithm(algorithm):
    if algorithm not in ALGORITHMS:
        raise _invalid("algorithm must be one of %s, got %r"
                       % (", ".join('"%s"' % a for a in ALGORITHMS), algorithm))
    return algorithm


def plan(problem, algorithm="auto", fft_size=None, tile=None, memory_budget=None):
    """The plan for ``problem``: made once per problem and options, then the same every time.

    Order of precedence: ``algorithm="spatial"``; sizes unknown while tracing (the FFT path in
    one frame sized at run time, or spatial by ``unknown_size_rule``); timings cached for the
    problem (the fastest timed candidate within the budget); the cost model (the fastest
    estimated candidate within the budget; for ``algorithm="fft"`` with nothing within the budget,
    the FFT configuration with the smallest workspace).
    """
    check_algorithm(algorithm)
    budget = resolve_budget(memory_budget)
    options = (problem, algorithm, fft_size, tile, budget)
    with _LOCK:
        made = _PLANS.get(options)
    if made is not None:
        return made
    made = _make_plan(problem, algorithm, fft_size, tile, budget)
    with _LOCK:
        return _PLANS.setdefault(options, made)


def _make_plan(problem, algorithm, fft_size, tile, budget):
    common = dict(problem=problem, requested=algorithm, budget=budget)
    if problem.no_channels:
        return Plan(algorithm=NO_CHANNELS, config=None, source=(
            "no %s channels (w [%d, %d, %d, %d]): the output is %s, whatever the algorithm"
            % ("output" if problem.out_channels == 0 else "input", problem.k_h, problem.k_w,
               problem.in_channels // max(problem.groups, 1), problem.out_channels,
               "empty" if problem.out_channels == 0 else "zeros (a sum over no channels)")),
            **common)
    refusal = spatial_refusal(problem)
    if algorithm == SPATIAL and refusal is not None:
        raise _invalid('algorithm="spatial" cannot compute %s: %s. A call cannot know whether it '
                       'will be differentiated, so the gradients\' refusal counts. Use '
                       'algorithm="fft" or "auto" (which takes the FFT path here)'
                       % (problem.describe(), refusal))
    if algorithm == SPATIAL:
        return Plan(algorithm=SPATIAL, config=None, source='the argument algorithm="spatial"',
                    **common)
    refused = ((_spatial_refused_note(refusal),) if refusal is not None and algorithm == "auto"
               else ())
    if not problem.sizes_known:
        if algorithm == "fft" or unknown_size_rule(problem) == "fft" or refused:
            why = ('the argument algorithm="fft"' if algorithm == "fft" else
                   "the rule for sizes unknown while tracing (kernel >= 5x5 and Cin * Cout >= "
                   "64: FFT)" if unknown_size_rule(problem) == "fft" else
                   "the only path TensorFlow runs here")
            return Plan(algorithm="fft", config=None, source=why, notes=(
                "height or width unknown while tracing: one frame sized at run time (images "
                "needing a frame above %d are refused then); no cost model, tiling or budget"
                % geometry.MAX_FFT_SIZE,) + refused, **common)
        return Plan(algorithm=SPATIAL, config=None, source=(
            "the rule for sizes unknown while tracing (kernel >= 5x5 and Cin * Cout >= 64: "
            "FFT; otherwise spatial)"), notes=("height or width unknown while tracing",),
            **common)
    found = candidates(problem, algorithm, fft_size, tile)
    within = within_budget(found, budget)
    notes = list(refused)
    if problem.batch is None:
        notes.append("batch unknown while tracing: estimates assume %d images" % ASSUMED_BATCH)
    timings = cached_timings(problem)
    if not timings and problem.batch is not None:
        # A layer is timed when built, with its batch unknown: those timings stand for every
        # batch not timed itself.
        timings = cached_timings(dataclasses.replace(problem, batch=None))
        if timings:
            notes.append("timings made for the batch unknown (when the layer was built, or by "
                         "autotune), none at batch %d" % problem.batch)
    timed = [c for c in within if c.label in timings]
    if timed:
        best = min(timed, key=lambda c: timings[c.label])
        source = "timing on this device (%d candidate%s timed)" % (
            len(timed), "" if len(timed) == 1 else "s")
    elif within:
        best = within[0]
        source = "the cost model"
        if algorithm == "fft":
            source += ' among FFT configurations (algorithm="fft")'
        spatial = next((c for c in within if c.config is None), None)
        if (best.config is not None and spatial is not None
                and best.estimate.time_s * FFT_MARGIN > spatial.estimate.time_s):
            notes.append("the best FFT estimate (%s) is less than %.1fx faster than spatial"
                         % (best.label, FFT_MARGIN))
            best = spatial
    else:
        best = min(found, key=lambda c: c.estimate.workspace_bytes)
        source = ('the argument algorithm="fft": nothing fits the memory budget, so the FFT '
                  "configuration with the smallest workspace")
        notes.append("over the memory budget")
    if budget is not None and best is not found[0] and found[0] not in within:
        notes.append("the fastest estimate (%s) is over the memory budget" % found[0].label)
    return Plan(algorithm="fft" if best.config is not None else SPATIAL, config=best.config,
                source=source, candidates=found, timings_ms=timings, notes=tuple(notes),
                **common)


def downgrade(plan_made):
    """The plan after the allocator refused ``plan_made``'s memory: recompute in the most pieces,
    or spatial convolution; kept for the problem for the rest of the process."""
    problem = plan_made.problem
    # The FFT path alone where asked for, or where TensorFlow refuses the spatial one.
    fft_only = plan_made.requested == "fft" or spatial_refusal(problem) is not None
    found = plan_made.candidates or candidates(problem, plan_made.requested)
    smaller = [c for c in found if c.config is not None and plan_made.config is not None
               and c.estimate.workspace_bytes < _workspace(plan_made)]
    if smaller and (fft_only or plan_made.config.memory == "keep"):
        best = min(smaller, key=lambda c: c.estimate.workspace_bytes)
        new = dataclasses.replace(plan_made, config=best.config, source=(
            "the allocator refused %s: the FFT configuration with the smallest workspace"
            % plan_made.label))
    elif not fft_only:
        new = dataclasses.replace(plan_made, algorithm=SPATIAL, config=None, source=(
            "the allocator refused %s: spatial convolution" % plan_made.label))
    else:
        return None
    with _LOCK:
        for options in [o for o in _PLANS if _PLANS[o] is plan_made]:
            _PLANS[options] = new
    return new


def _workspace(plan_made):
    chosen = plan_made.candidate(plan_made.label)
    return chosen.estimate.workspace_bytes if chosen is not None else float("inf")


# ---------------------------------------------------------------------------------------------
# Devices.

def device_of(device=None):
    """(kind, name) of the device an op runs on here: ``device`` ("CPU", "GPU", "/GPU:1", ...) if
    given, else the device scope (while tracing) or placement (eager) of a new op; an op with no
    device runs on the first GPU if there is one, else on the CPU."""
    kind, index = _kind_and_index(device)
    return kind, _device_name(kind, index)


def _kind_and_index(device=None):
    """``device_of``'s device as its kind and its index among the devices of that kind."""
    if device is None:
        device = tf.zeros([], name="placement_probe").device
    if not device:
        device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
    if "/" not in device:
        device = "/device:" + device.upper() + ("" if ":" in device else ":0")
    spec = tf.DeviceSpec.from_string(device)
    kind = (spec.device_type or "CPU").upper()
    if kind not in DEVICE_COSTS:
        raise _invalid("device %r: the cost model knows CPU and GPU only" % (device,))
    return kind, spec.device_index or 0


# (kind, index) -> (name, compute capability as (major, minor), or None where unknown).
_DETAILS = {}


def _device_details(kind, index):
    if (kind, index) not in _DETAILS:
        name, capability = kind, None
        if kind == "GPU":
            gpus = tf.config.list_physical_devices("GPU")
            if index < len(gpus):
                details = tf.config.experimental.get_device_details(gpus[index])
                name = details.get("device_name") or "GPU"
                capability = details.get("compute_capability")
        else:
            name = _cpu_name()
        _DETAILS[(kind, index)] = (name, capability)
    return _DETAILS[(kind, index)]


def _device_name(kind, index):
    return _device_details(kind, index)[0]


def _tf32_runs(kind, index):
    """Whether TensorFlow's TF32 switch changes anything on the device: TF32 needs the tensor cores
    of compute capability 8.0 and later (a T4 or a P100 runs cuDNN's and our float32 products in
    FP32 whatever the switch says)."""
    if not tf.config.experimental.tensor_float_32_execution_enabled():
        return False
    capability = _device_details(kind, index)[1] if kind == "GPU" else None
    return capability is None or tuple(capability) >= (8, 0)


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU %s x%d" % (line.split(":", 1)[1].strip(), os.cpu_count() or 1)
    except OSError:
        pass
    return "CPU %s x%d" % (platform.processor() or platform.machine(), os.cpu_count() or 1)


# The epilogues a layer can name (``Problem.epilogue``); KeyError for any other. "bias+relu" is a
# bias and ReLU, which the FFT path takes into its transforms on a CPU
# (``cost_model.fuses_epilogue``); "bias+activation" a bias and another activation that
# tf.nn.conv2d fuses with it on a CPU.
EPILOGUES = {"": "", None: "", "bias": "bias", "bias+relu": "bias+relu",
             "bias+activation": "bias+activation"}


def epilogue_of(bias, activation):
    """``Problem.epilogue`` of a convolution with a bias (``bias`` true) and ``activation`` (one
    of ``ops.ACTIVATIONS``) after it: "bias+relu", "bias" or "" (with no bias, nothing is
    charged to either path)."""
    if not bias:
        return ""
    return "bias+relu" if activation == "relu" else "bias"


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


def make_problem(x_shape, w_shape, padding="VALID", data_format="NHWC", dtype="float32",
                 device=None, half_spectra=None, strides=1, dilations=1, groups=None,
                 depthwise=False, input_gradient=True, epilogue="", compiled=None):
    """A ``Problem`` from static shapes (None for unknown batch, height or width);
    ``half_spectra`` (float16 and bfloat16 only): None, True or False (``Problem``).
    ``input_gradient`` and ``epilogue`` as ``Problem``'s (the layers set them). ``compiled``:
    whether XLA compiles it (None: whether the caller is being traced for XLA,
    ``compiled_here``).

    ``strides`` and ``dilations`` as ``tf.nn.conv2d`` takes them (``geometry.spatial_pair``);
    ``groups`` None: ``in_channels / w_shape[2]``, as ``tf.nn.conv2d`` infers it, else checked
    against it. ``depthwise``: ``w_shape`` is ``tf.nn.depthwise_conv2d``'s ``[kh, kw, C,
    multiplier]``, taken as the grouped convolution it is (``Problem.depthwise``).
    """
    padding = geometry.check_padding(padding)
    if data_format not in ("NHWC", "NCHW"):
        raise _invalid("data_format must be \"NHWC\" or \"NCHW\", got %r" % (data_format,))
    strides = geometry.spatial_pair(strides, "strides", data_format)
    dilations = geometry.spatial_pair(dilations, "dilations", data_format)
    x_shape, w_shape = list(x_shape), list(w_shape)
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise _invalid("x and w shapes must have 4 dimensions, got %s and %s"
                       % (x_shape, w_shape))
    if data_format == "NHWC":
        batch, in_h, in_w, in_channels = x_shape
    else:
        batch, in_channels, in_h, in_w = x_shape
    k_h, k_w, w_in, w_out = w_shape
    if None in (in_channels, k_h, k_w, w_in, w_out):
        raise _invalid("the channels of x and the shape of w must be known statically, got "
                       "x %s and w %s" % (x_shape, w_shape))
    if depthwise:
        if w_in != in_channels:
            raise _invalid("x has %d channels but the depthwise filters are [%d, %d, %d, %d] "
                           "(dimension 2 must match)" % (in_channels, k_h, k_w, w_in, w_out))
        # [kh, kw, C, multiplier] as the grouped [kh, kw, 1, C * multiplier], C groups.
        groups, w_in, w_out = max(in_channels, 1), min(in_channels, 1), in_channels * w_out
    else:
        groups = _groups(groups, in_channels, w_shape)
    dtype = tf.as_dtype(dtype).name
    if half_spectra is not None and not isinstance(half_spectra, bool):
        raise _invalid("half_spectra must be None, True or False, got %r" % (half_spectra,))
    if half_spectra is not None and dtype not in HALF_DTYPES:
        raise _invalid("half_spectra applies to float16 and bfloat16 only, got %s" % dtype)
    kind, index = _kind_and_index(device)
    problem = Problem(batch, in_h, in_w, int(in_channels), int(w_out), int(k_h), int(k_w),
                      padding, data_format, dtype, kind, _device_name(kind, index),
                      _tf32_runs(kind, index),
                      half_spectra, strides, dilations, int(groups), bool(depthwise),
                      bool(input_gradient), EPILOGUES[epilogue],
                      compiled_here() if compiled is None else bool(compiled))
    if problem.sizes_known:
        geometry.output_geometry(in_h, in_w, problem.dilated_k_h, problem.dilated_k_w,
                                 padding)  # validates
    return problem


def _groups(groups, in_channels, w_shape):
    """``tf.nn.conv2d``'s groups: ``in_channels / w_shape[2]`` (which must divide both the input
    and the output channels); an explicit ``groups`` must be that number."""
    k_h, k_w, w_in, w_out = w_shape
    if groups is not None:
        given = geometry.integer(groups)
        if given is None or given < 1:
            raise _invalid("groups must be None or a positive integer, got %r" % (groups,))
        if given * w_in != in_channels or w_out % given:
            raise _invalid("groups %r does not fit x's %d input channels and w [%d, %d, %d, %d]: "
                           "w must be [kh, kw, in_channels / groups, out_channels] with "
                           "out_channels a multiple of groups"
                           % (groups, in_channels, k_h, k_w, w_in, w_out))
        return given
    if w_in == in_channels:
        return 1
    if w_in == 0 or in_channels % w_in:
        raise _invalid("x has %d input channels but w is [%d, %d, %d, %d] (dimension 2 must "
                       "match, or divide it for groups)" % (in_channels, k_h, k_w, w_in, w_out))
    inferred = in_channels // w_in
    if w_out % inferred:
        raise _invalid("x's %d input channels in groups of w's %d make %d groups, which must "
                       "divide w's %d output channels" % (in_channels, w_in, inferred, w_out))
    return inferred


# ---------------------------------------------------------------------------------------------
# Words.

def _mb(n):
    return "%.1f MB" % (n / 1e6)


def _ms(seconds):
    return "%.3f ms" % (seconds * 1e3)


def _how_computed(problem):
    """How strides, dilations, groups and depthwise are computed on either path, and so
    estimated (``cost_model``), in words."""
    words = []
    if problem.dilations != (1, 1):
        words.append("dilations %dx%d: the FFT path convolves with the %dx%d dilated kernel "
                     "(zeros between the %dx%d taps), so its cost is that of a %dx%d kernel; "
                     "spatial convolution's work is that of the taps"
                     % (problem.dilations + (problem.dilated_k_h, problem.dilated_k_w,
                                             problem.k_h, problem.k_w, problem.dilated_k_h,
                                             problem.dilated_k_w)))
    if problem.strides != (1, 1) and problem.sizes_known:
        rows, cols = problem.strided_axes()
        full = geometry.output_geometry(problem.in_h, problem.in_w, problem.dilated_k_h,
                                        problem.dilated_k_w, problem.padding)
        words.append("strides %dx%d: the FFT path computes the %dx%d stride-1 outputs and keeps "
                     "%dx%d of them (every stride-th, from (%d, %d)); spatial convolution "
                     "computes those alone"
                     % (problem.strides + (full.out_h, full.out_w, rows.out, cols.out,
                                           rows.first, cols.first)))
    elif problem.strides != (1, 1):
        words.append("strides %dx%d: the FFT path computes the stride-1 outputs and keeps "
                     "every stride-th" % problem.strides)
    if problem.elementwise:
        words.append("depthwise (%d channels, multiplier %d): per bin a complex multiply per "
                     "channel, no matmul, in float32 or float64 spectra"
                     % (problem.in_channels, problem.out_channels // problem.groups))
    elif problem.groups > 1:
        words.append("groups %d: the per-bin product is block-diagonal, one %d x %d matmul per "
                     "group (1/%d of the dense work, on either path)"
                     % (problem.groups, problem.in_channels // problem.groups,
                        problem.out_channels // problem.groups, problem.groups))
    return words


def explain_plan(p):
    """The text of ``tf_fftconv.explain`` for one plan."""
    lines = [("fft_depthwise_conv2d: " if p.problem.depthwise else "fft_conv2d: ")
             + p.problem.describe()]
    if p.algorithm == SPATIAL:
        lines.append("  chosen: spatial convolution (tf.nn.%s)"
                     % ("depthwise_conv2d" if p.problem.depthwise else "conv2d"))
    elif p.algorithm == NO_CHANNELS:
        lines.append("  chosen: no convolution op, only the output's fill")
    elif p.config is None:
        lines.append("  chosen: FFT, one frame per image sized at run time")
    else:
        lines.append("  chosen: FFT, " + p.config.describe())
    lines.append("  decided by: " + p.source)
    for note in p.notes:
        lines.append("  note: " + note)
    for how in _how_computed(p.problem):
        lines.append("  how: " + how)
    if p.candidates:
        chosen = p.candidate(p.label)
        spatial = p.candidate(SPATIAL)
        best_fft = next((c for c in p.candidates if c.config is not None), None)
        if chosen is not None:
            passes = ("forward + both gradients" if p.problem.input_gradient
                      else "forward + weight gradient")
            lines.append("  estimated %s: %s" % (passes, _ms(chosen.estimate.time_s))
                         + (" (spatial %s)" % _ms(spatial.estimate.time_s)
                            if spatial is not None and chosen is not spatial else "")
                         + (" (best FFT: %s, %s)" % (best_fft.label,
                                                     _ms(best_fft.estimate.time_s))
                            if best_fft is not None and chosen is spatial else ""))
            if chosen.config is not None:
                lines.append("  workspace: %s of spectra%s at most, %s kept between the passes"
                             % (_mb(chosen.estimate.workspace_bytes),
                                " and tiles" if chosen.config.tiles.tiled else "",
                                _mb(chosen.estimate.kept_bytes)))
        lines.append("  device constants (%s%s): %s" % (
            p.problem.device, ", compiled by XLA" if p.problem.compiled else "",
            device_costs(p.problem).describe()))
        lines.append("  memory budget: %s" % ("none" if p.budget is None else _mb(p.budget)))
        if p.timings_ms:
            lines.append("  timed (ms, median): " + ", ".join(
                "%s %.3f" % (label, ms) for label, ms in sorted(p.timings_ms.items(),
                                                                 key=lambda kv: kv[1])))
        lines.append("  candidates by the cost model (time, workspace):")
        for c in p.candidates[:6]:
            lines.append("    %-44s %10s %12s" % (c.label, _ms(c.estimate.time_s),
                                                  _mb(c.estimate.workspace_bytes)))
        if len(p.candidates) > 6:
            lines.append("    ... %d more" % (len(p.candidates) - 6))
    return "\n".join(lines)


def explain(layer_or_shape, w_shape=None, *, input_shape=None, strides=1, padding="VALID",
            dilations=1, groups=None, depthwise=False, data_format="NHWC", dtype="float32",
            device=None, algorithm="auto", fft_size=None, tile=None, memory_budget=None):
    """What ``fft_conv2d`` does for a layer or a shape, in words, and why.

    ``explain(layer)``: an ``FFTConv2D`` or ``FFTDepthwiseConv2D`` (every input shape it was
    called on, else the shape it was built for, else ``input_shape``). ``explain(x_shape, w_shape,
    padding=..., ...)``: the same arguments as ``fft_conv2d`` with shapes (None for unknown sizes)
    instead of tensors; ``depthwise=True``: those of ``fft_depthwise_conv2d`` (``w_shape``
    ``[kh, kw, C, multiplier]``); ``device`` "CPU" or "GPU" (default: where an op would run
    here). Returns a string.
    """
    if hasattr(layer_or_shape, "explain_plans"):
        return "\n".join(str(p) for p in layer_or_shape.explain_plans(input_shape))
    if w_shape is None:
        raise _invalid("explain needs a layer, or an input shape and a weight shape")
    problem = make_problem(layer_or_shape, w_shape, padding, data_format, dtype, device,
                           strides=strides, dilations=dilations, groups=groups,
                           depthwise=depthwise)
    return str(plan(problem, algorithm, fft_size, tile, memory_budget))

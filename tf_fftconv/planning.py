"""How ``fft_conv2d`` computes a convolution: the choice of algorithm, frame and tiling.

A *plan* (``problem.Plan``) says which algorithm computes one convolution problem (shapes,
padding, layout, dtype, device kind) and, for the FFT path, its frame size, tiling and memory
mode. Plans are made in Python while a function is traced (or at each eager call), so they are
constants of the traced graph and work under XLA. Each plan is kept per problem in the process, so
the choice is deterministic once made.

The candidates are spatial convolution and the FFT configurations of the problem, ranked by the
time of forward + both gradients that the cost model (``cost_model``) estimates for each. A
one-time timing of the best candidates on the device (``tf_fftconv.autotune``) overrides the model
for the problems it timed; its results are kept by ``timing_cache``. ``FFTConv2D`` runs that
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
import math
import os
import re
import threading

import tensorflow as tf

from tf_fftconv import cost_model, geometry, timing_cache
from tf_fftconv import device as _device
from tf_fftconv.cost_model import device_costs, estimate_fft, estimate_spatial
from tf_fftconv.errors import invalid_argument as _invalid
from tf_fftconv.problem import (
    ASSUMED_BATCH, EPILOGUES, HALF_DTYPES, NO_CHANNELS, SPATIAL, Candidate, FftConfig, Plan,
    Problem)

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
# A half-precision problem's FFT configuration stores half spectra only where float32 spectra
# would make it at least this many times slower (module docstring).
HALF_SPECTRA_GAIN = 1.1
BUDGET_ENV = "TF_FFTCONV_MEMORY_BUDGET"


# ---------------------------------------------------------------------------------------------
# Candidates and the choice.

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
    if problem.device != "CPU" or problem.compiled or _device.onednn_enabled():
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


def clear():
    """Forgets every plan and timing of the process (the disk cache is read again when set)."""
    with _LOCK:
        _PLANS.clear()
    timing_cache.forget()


def record_timings(problem, timings_ms):
    """Stores measured medians (ms per forward + both gradients) for a problem's candidates
    (``timing_cache``); its plans are made again, now with the timings."""
    timing_cache.store(problem, timings_ms)
    with _LOCK:
        for options in [o for o in _PLANS if o[0] == problem]:
            del _PLANS[options]


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
    timings = timing_cache.cached_timings(problem)
    if not timings and problem.batch is not None:
        # A layer is timed when built, with its batch unknown: those timings stand for every
        # batch not timed itself.
        timings = timing_cache.cached_timings(dataclasses.replace(problem, batch=None))
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
                costs=device_costs(problem), **common)


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
# Problems.

def make_problem(x_shape, w_shape, padding="VALID", data_format="NHWC", dtype="float32",
                 device=None, half_spectra=None, strides=1, dilations=1, groups=None,
                 depthwise=False, input_gradient=True, epilogue="", compiled=None):
    """A ``Problem`` from static shapes (None for unknown batch, height or width);
    ``half_spectra`` (float16 and bfloat16 only): None, True or False (``Problem``).
    ``input_gradient`` and ``epilogue`` as ``Problem``'s (the layers set them). ``compiled``:
    whether XLA compiles it (None: whether the caller is being traced for XLA,
    ``device.compiled_here``).

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
    kind, index = _device.kind_and_index(device)
    problem = Problem(batch, in_h, in_w, int(in_channels), int(w_out), int(k_h), int(k_w),
                      padding, data_format, dtype, kind, _device.device_name(kind, index),
                      _device.tf32_runs(kind, index),
                      half_spectra, strides, dilations, int(groups), bool(depthwise),
                      bool(input_gradient), EPILOGUES[epilogue],
                      _device.compiled_here() if compiled is None else bool(compiled))
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

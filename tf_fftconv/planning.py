"""How ``fft_conv2d`` computes a convolution: the cost model, the choice, the timing cache, explain.

A *plan* says which algorithm computes one convolution problem (shapes, padding, layout, dtype,
device kind) and, for the FFT path, its frame size, tiling and memory mode. Plans are made in
Python while a function is traced (or at each eager call), so they are constants of the traced
graph and work under XLA. Each plan is kept per problem in the process, so the choice is
deterministic once made.

The cost model estimates the time of forward + both gradients (what training runs) of every
candidate from the bytes each op moves and the arithmetic it does, with per-device-kind constants
(``DEVICE_COSTS``); every op costs at least the per-op overhead. Its numbers and their sources are
in ``benchmarks/NOTES.md`` ("The cost model"). A one-time timing of the best candidates on the device
(``tf_fftconv.autotune``) overrides the model for the problems it timed; its results are kept in
the process and, with ``TF_FFTCONV_AUTOTUNE_CACHE`` set, in a JSON file. ``FFTConv2D`` runs that
timing itself, once, when it is built on a GPU for a problem the model calls close
(``is_close_call``).

Memory: the FFT path's workspace is the complex spectra it holds at once (with tiling, also the
tiled copies of the input and output), layout
``[bins, batch, channels]`` (``batch`` counting tiles): ``X`` ``[F, B*tiles, Cin]``, ``W``
``[F, Cin, Cout]``, ``Y`` and ``dY`` ``[F, B*tiles, Cout]``. Mode "keep" keeps ``X`` and ``W`` from
the forward pass for the backward pass; mode "recompute" keeps nothing between the passes (the
backward pass transforms ``x`` and ``w`` again) and runs the batch in ``chunks`` pieces, one after
the other, so only one piece's spectra are alive at a time. A memory budget (argument
``memory_budget`` or ``TF_FFTCONV_MEMORY_BUDGET``, bytes) removes the candidates whose workspace
exceeds it; spatial convolution's workspace is counted as zero (cuDNN's own scratch is not
modelled).

Spectra of float16 and bfloat16 problems: stored in the input's half type (half the bytes, four
roundings: the image, weight and product spectra and the output) or in float32 (the inputs cast
to float32, FP32 products, one rounding: the output's, as cuDNN's float32 accumulation). Each FFT
configuration takes half spectra only where the cost model puts its float32 spectra at least
``HALF_SPECTRA_GAIN`` times slower, and never on a CPU (whose kernels convert every half value,
which costs more than the bytes save); elsewhere (small layers, bound by the ops' fixed costs) the
accuracy is worth more than the time (benchmarks/NOTES.md, "Half precision: float32 spectra for
small layers"). ``fft_conv2d(..., half_spectra=True / False)`` forces either.
"""

import dataclasses
import json
import math
import os
import platform
import re
import threading

import tensorflow as tf

from tf_fftconv import geometry
from tf_fftconv.errors import invalid_argument as _invalid

ALGORITHMS = ("auto", "fft", "spatial")
MEMORY_MODES = ("keep", "recompute")
CHUNK_COUNTS = (1, 2, 4, 8, 16, 32, 64)
# Batch assumed by the cost model when the batch size is unknown while tracing.
ASSUMED_BATCH = 64
# Without timings, "auto" takes the FFT path only when the model puts it this many times faster
# than spatial convolution: the model is within about 20% on the H200 anchors (NOTES.md), and a
# near tie is better left to cuDNN / oneDNN.
FFT_MARGIN = 1.2
# A close call: the cost model's best FFT estimate and its spatial estimate within this factor of
# each other. The model's error on the H200 grid (RMS of the log ratio 0.23-0.25 per path, NOTES.md)
# is enough to flip such a choice, so FFTConv2D confirms it by timing (``is_close_call``).
CLOSE_CALL_FACTOR = 1.6
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


# ---------------------------------------------------------------------------------------------
# Per-device-kind constants of the cost model.

@dataclasses.dataclass(frozen=True)
class DeviceCosts:
    """Rates of one device kind (float32; float64 halves every rate and doubles every byte;
    float16 and bfloat16 keep the float32 rates and halve the bytes; tf.nn.conv2d's time in them
    is scaled by ``spatial_dtype_factors``).

    Each op costs ``max(op_overhead_s, bytes / bandwidth, flops / rate)``; the FFT path is a
    list of such ops per pass, direct convolution one op per pass.
    """

    op_overhead_s: float           # the least time one of our ops takes (launch and dispatch)
    transform_bytes_per_s: float   # rfft2d / irfft2d: bytes read + written
    transform_flops_per_s: float   # rfft2d / irfft2d arithmetic (``_transform_flops``)
    transform_frame_s: float       # ... plus this much per frame (per-image work of the CPU kernels)
    matmul_flops_per_s: float      # spectral matmul, 8 flops per complex multiply-add, FP32
    matmul_tf32_flops_per_s: float  # the same with TensorFlow's TF32 switch on
    matmul_half_work: float        # per-bin multiply-adds where the TF32 matmul reaches half its
                                   # rate (the FP32 one at as much less work as its peak is lower:
                                   # the time below that work is the same latency for both)
    matmul_bytes_per_s: float
    copy_bytes_per_s: float        # TensorFlow's pad, slice, concat, transpose (tiles)
    spatial_flops_per_s: float     # tf.nn.conv2d's effective rate per unit of sqrt(kh * kw)
    spatial_max_flops_per_s: float  # ... up to this rate
    spatial_half_channels: float   # min(Cin, Cout) at which it reaches half that rate (0: none)
    spatial_bytes_per_s: float
    spatial_overhead_s: float      # the least time one tf.nn.conv2d pass takes
    calibration: str
    # tf.nn.conv2d's time in a half type over its float32 time, where measured ((dtype, factor)
    # pairs; other dtypes 1).
    spatial_dtype_factors: tuple = ()
    # tf.nn.conv2d's time in float32 with TensorFlow's TF32 switch off over its time with it on.
    spatial_no_tf32_factor: float = 1.0
    # The transforms' time in 3 * 2^k and 5 * 2^k frames over the bandwidth model's ((radix,
    # factor) pairs): the GPU's lane FFT does an odd factor with more registers and fewer images
    # per block.
    transform_radix_factors: tuple = ()
    # float16 / bfloat16 problems: whether half spectra can pay here (the cost model then decides
    # per configuration, ``_with_spectra``), and the rate of the casts to and from float32.
    half_spectra_pay: bool = True
    cast_bytes_per_s: float = 1.0e12


DEVICE_COSTS = {
    # Calibrated on one H200 (benchmarks/NOTES.md), TF32 on unless stated. tf.nn.conv2d's rate,
    # channel term and per-pass overhead were fitted to the 35-case grid
    # (h200-2026-11-30-793e01f/grid.json, forward + both gradients; RMS of the log ratio 0.25).
    # cuDNN is far from its rate at few channels (3 -> 64 channels at 224x224: 4.1 ms for
    # 88 GFLOP), hence the channel term. The FFT path's constants were refitted to the pipelined
    # matmul: the TF32 matmul rate, its bytes and the transforms' bandwidth and radix-5 factor to
    # twelve train steps of h200-2026-11-30-ffb53bd (Mathieu's layer VALID k3-13 and SAME in a 40
    # frame, 64x64 SAME k3 in an 80 frame, LeNet's layers, 16x16 SAME layers in 20 and 24 frames;
    # RMS of the log ratio 0.06), then the op overhead, tile-copy bandwidth and both odd-radix
    # factors to the 34-case grid of h200-2026-11-30-803e124. The result: RMS of the log ratio
    # 0.18 over the grid's 29 FFT times whose samples spread under 30% (0.21 before the second
    # step), 0.10 over the twelve; FP32 from the TF32-off run.
    "GPU": DeviceCosts(
        op_overhead_s=20e-6, transform_bytes_per_s=1.8e12, transform_flops_per_s=20e12,
        transform_frame_s=0.0,
        matmul_flops_per_s=40e12, matmul_tf32_flops_per_s=150e12, matmul_half_work=1.2e6,
        matmul_bytes_per_s=3.0e12, copy_bytes_per_s=0.7e12, spatial_flops_per_s=50e12,
        spatial_max_flops_per_s=math.inf, spatial_half_channels=64.0,
        spatial_bytes_per_s=3.0e12, spatial_overhead_s=250e-6,
        calibration="H200 (benchmarks/NOTES.md); other GPUs use the same constants",
        # Mathieu's k = 7 layer, forward + both gradients: 1.950 ms in float16 and 1.808 ms in
        # bfloat16 (cuDNN on tensor cores) against 2.899 ms with TF32 (h200-2026-11-30-d228f3f).
        spatial_dtype_factors=(("float16", 0.67), ("bfloat16", 0.62)),
        # Mathieu's k = 7 layer: 13.37 ms with TF32 off against 2.85 ms with it on (cuDNN's FP32
        # kernels without tensor cores; h200-2026-11-30-ffb53bd).
        spatial_no_tf32_factor=4.7,
        transform_radix_factors=((3, 1.4), (5, 1.5)),
        # Elementwise casts run near copy bandwidth (and fuse into their neighbours under XLA).
        cast_bytes_per_s=2.0e12),
    # Measured on the 2-core development CPU (benchmarks/NOTES.md, "The cost model"): op overhead
    # from a chain of tiny ops in a tf.function; cutting tiles 3-5 GB/s; tf.nn.conv2d (oneDNN)
    # 118-336 GFLOP/s on 32..64 channels, 21 and 88 GFLOP/s on LeNet's layers (1 and 6 input
    # channels). The transform rate, per-frame cost and matmul rate were refitted to the SIMD-lane
    # kernels (benchmarks/NOTES.md, "The CPU cost model refitted"): ten train steps (VALID k7 and
    # k13 at 32 -> 64 channels, LeNet's two layers, SAME k5 and k7 in 40, 48 and 64 frames) within
    # 10% (RMS of the log ratio 0.06; the old constants, fitted to the first kernels, put the FFT
    # path 2.6-6.6x too slow and auto took conv2d where the FFT path was 3.4x faster).
    "CPU": DeviceCosts(
        op_overhead_s=2e-6, transform_bytes_per_s=20e9, transform_flops_per_s=50e9,
        transform_frame_s=0.05e-6,
        matmul_flops_per_s=120e9, matmul_tf32_flops_per_s=120e9, matmul_half_work=6e3,
        matmul_bytes_per_s=10e9, copy_bytes_per_s=4e9, spatial_flops_per_s=50e9,
        spatial_max_flops_per_s=320e9, spatial_half_channels=8.0, spatial_bytes_per_s=10e9,
        spatial_overhead_s=20e-6,
        calibration="2-core development CPU (benchmarks/NOTES.md)",
        # 16, 32->64, 32x32, k7 SAME, forward + both gradients: 336 ms in float16 (TensorFlow's
        # CPU convolution has no fast float16 kernel) and 23.3 ms in bfloat16 against 42.3 ms in
        # float32 (README, "Half precision").
        spatial_dtype_factors=(("float16", 7.9), ("bfloat16", 0.55)),
        # The CPU kernels convert every half value as they load and store it: forward + both
        # gradients took longer with half spectra than with float32 ones (casts included) on
        # LeNet's layers and on (16, 32 -> 64, 32x32, k7): float32 spectra 0.42-0.97x the time
        # (benchmarks/NOTES.md, "Half precision: float32 spectra for small layers").
        half_spectra_pay=False, cast_bytes_per_s=20e9),
}


# ---------------------------------------------------------------------------------------------
# Problems, FFT configurations and estimates.

@dataclasses.dataclass(frozen=True)
class Problem:
    """One convolution as the planner sees it; ``batch``, ``in_h``, ``in_w`` may be None."""

    batch: object
    in_h: object
    in_w: object
    in_channels: int
    out_channels: int
    k_h: int
    k_w: int
    padding: str
    data_format: str
    dtype: str          # "float32", "float64", "float16" or "bfloat16"
    device: str         # "CPU" or "GPU"
    device_name: str    # what the timing cache is keyed on, e.g. "NVIDIA H200"
    tf32: bool
    # float16 / bfloat16 only: None lets the cost model choose each configuration's spectra;
    # True forces half-precision spectra, False float32 ones.
    half_spectra: object = None

    @property
    def sizes_known(self):
        return self.in_h is not None and self.in_w is not None

    @property
    def model_batch(self):
        return self.batch if self.batch is not None else ASSUMED_BATCH

    def key(self):
        """The timing cache's key: everything that changes which candidate is fastest."""
        forced = ("" if self.half_spectra is None else
                  "|%s spectra" % ("half" if self.half_spectra else "float32"))
        return "|".join(str(v) for v in (
            self.device_name, self.dtype, "tf32" if self.tf32 else "fp32", self.padding,
            self.data_format, "B%s" % self.batch, "%sx%s" % (self.in_h, self.in_w),
            "%d->%d" % (self.in_channels, self.out_channels),
            "k%dx%d" % (self.k_h, self.k_w))) + forced

    def describe(self):
        x = ("[%s, %s, %s, %d]" if self.data_format == "NHWC" else "[%s, %d, %s, %s]") % (
            (self.batch, self.in_h, self.in_w, self.in_channels) if self.data_format == "NHWC"
            else (self.batch, self.in_channels, self.in_h, self.in_w))
        return ("x %s %s, kernel %dx%d, %d -> %d channels, %s, %s on %s%s"
                % (x.replace("None", "?"), self.data_format, self.k_h, self.k_w,
                   self.in_channels, self.out_channels, self.padding, self.dtype,
                   self.device_name, ", TF32 on" if self.tf32 and self.device == "GPU" else ""))


@dataclasses.dataclass(frozen=True)
class FftConfig:
    """The FFT path's frame, tiling, memory mode and (half-precision problems) spectrum type."""

    tiles: geometry.TileGeometry
    memory: str = "keep"   # "keep" or "recompute"
    chunks: int = 1        # pieces of the (tiled) batch, one after the other ("recompute")
    # "native": spectra in the complex type of the input's (float32, float64) or in its half type
    # (float16, bfloat16); "float32": a half-precision problem computed with complex64 spectra.
    spectra: str = "native"

    @property
    def label(self):
        t = self.tiles
        where = ("single" if not t.tiled else "tiles %dx%d of %dx%d"
                 % (t.tiles_h, t.tiles_w, t.tile_h, t.tile_w))
        memory = self.memory if self.chunks == 1 else "%s/%d" % (self.memory, self.chunks)
        spectra = " float32-spectra" if self.spectra == "float32" else ""
        return "fft S=%d %s %s%s" % (t.fft_size, where, memory, spectra)

    def describe(self):
        memory = ("X and W spectra kept for the backward pass" if self.memory == "keep" else
                  "spectra recomputed in the backward pass, batch in %d piece%s"
                  % (self.chunks, "" if self.chunks == 1 else "s"))
        spectra = ("; float32 spectra and FP32 products (the half-precision inputs cast, the "
                   "result rounded once)" if self.spectra == "float32" else "")
        return "%s; %s%s" % (self.tiles.describe(), memory, spectra)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Model estimate of forward + both gradients."""

    time_s: float
    workspace_bytes: int   # the most spectrum bytes alive at once
    kept_bytes: int        # spectrum bytes kept from the forward to the backward pass
    flops: float
    bytes_moved: float


SPATIAL = "spatial"


def _element_bytes(dtype):
    """Bytes of one real value: half precision stores 2 (spectra too: pairs of halves)."""
    return {"float64": 8, "float16": 2, "bfloat16": 2}.get(dtype, 4)


def _op_time(costs, bytes_moved=0.0, bytes_per_s=1.0, flops=0.0, flops_per_s=1.0, fixed_s=0.0):
    return max(costs.op_overhead_s, bytes_moved / bytes_per_s,
               (flops / flops_per_s if flops else 0.0) + fixed_s)


def estimate_spatial(problem, costs):
    """tf.nn.conv2d: three passes of ``2 B Cin Cout Ho Wo kh kw`` flops each (in a half type:
    half the bytes, and the device's measured factor on the time, ``spatial_dtype_factors``; in
    float32 with TF32 off, ``spatial_no_tf32_factor``)."""
    real = _element_bytes(problem.dtype)
    slow = ((2.0 if problem.dtype == "float64" else 1.0)
            * dict(costs.spatial_dtype_factors).get(problem.dtype, 1.0)
            * (costs.spatial_no_tf32_factor
               if problem.dtype == "float32" and not problem.tf32 else 1.0))
    out = geometry.output_geometry(problem.in_h, problem.in_w, problem.k_h, problem.k_w,
                                   problem.padding)
    batch = problem.model_batch
    flops = (2.0 * batch * problem.in_channels * problem.out_channels * out.out_h * out.out_w
             * problem.k_h * problem.k_w)
    moved = real * (batch * problem.in_channels * problem.in_h * problem.in_w
                    + problem.k_h * problem.k_w * problem.in_channels * problem.out_channels
                    + batch * problem.out_channels * out.out_h * out.out_w)
    channels = min(problem.in_channels, problem.out_channels)
    rate = (min(costs.spatial_flops_per_s * math.sqrt(problem.k_h * problem.k_w),
                costs.spatial_max_flops_per_s)
            * channels / (channels + costs.spatial_half_channels) / slow)
    per_pass = max(costs.spatial_overhead_s, flops / rate,
                   moved * slow / costs.spatial_bytes_per_s)
    return Estimate(3 * per_pass, 0, 0, 3 * flops, 3 * moved)


def _transform_flops(fft_size, rows):
    """Arithmetic of one frame's rfft2d or irfft2d with ``rows`` image rows (the rest zeros, or
    cropped): ``rows / 2`` row FFTs (two real rows per complex FFT) and ``S/2 + 1`` column FFTs,
    each ``5 S log2 S``, as the CPU kernels do them. Frames of 3 * 2^k and 5 * 2^k, whose radix-3
    or radix-5 stage does more arithmetic per point, are not charged more: on 2 CPU cores their
    layers took the time this count gives (a fit put the factor at 1.0 for both, against 1.25 and
    1.4 assumed before; benchmarks/NOTES.md, "The CPU cost model refitted"), and on the GPU the
    transforms are bound by bandwidth."""
    return (5.0 * fft_size * math.log2(fft_size)
            * (min(rows, fft_size) / 2 + fft_size / 2 + 1))


def estimate_fft(problem, config, costs):
    """The FFT path as its ops: transforms, per-bin matmuls, inverses, and tiling's copies.

    Half precision: every tensor and spectrum has half the bytes of float32, the arithmetic
    (float32 inside) the float32 rates. With float32 spectra: the float32 path without TF32, plus
    the casts of x, w and dy to float32 and of y, dx and dw back, charged for their bytes only
    (elementwise ops, which XLA fuses into their neighbours)."""
    if config.spectra == "float32":
        inner = estimate_fft(dataclasses.replace(problem, dtype="float32", tf32=False),
                             dataclasses.replace(config, spectra="native"), costs)
        out = geometry.output_geometry(problem.in_h, problem.in_w, problem.k_h, problem.k_w,
                                       problem.padding)
        batch = problem.model_batch
        elements = (batch * problem.in_channels * problem.in_h * problem.in_w
                    + batch * problem.out_channels * out.out_h * out.out_w
                    + problem.k_h * problem.k_w * problem.in_channels * problem.out_channels)
        cast_bytes = 2 * (2 + 4) * elements      # each tensor cast once per pass, both ways
        return dataclasses.replace(
            inner, time_s=inner.time_s + cast_bytes / costs.cast_bytes_per_s,
            workspace_bytes=int(inner.workspace_bytes + 4 * elements),
            bytes_moved=inner.bytes_moved + cast_bytes)
    t = config.tiles
    real = _element_bytes(problem.dtype)
    slow = 2.0 if problem.dtype == "float64" else 1.0
    complex_bytes = 2 * real
    batch = problem.model_batch
    frames = batch * t.tiles                    # images of the (tiled) batch
    ci, co, n = problem.in_channels, problem.out_channels, config.chunks
    bins = t.bins
    x_bytes = real * batch * ci * problem.in_h * problem.in_w
    y_bytes = real * batch * co * t.out_h * t.out_w
    w_bytes = real * problem.k_h * problem.k_w * ci * co
    x_tiles = real * frames * ci * t.in_tile_h * t.in_tile_w if t.tiled else x_bytes
    y_tiles = real * frames * co * t.tile_h * t.tile_w if t.tiled else y_bytes
    X = complex_bytes * bins * frames * ci      # [F, B*tiles, Cin]
    W = complex_bytes * bins * ci * co          # [F, Cin, Cout]
    Y = complex_bytes * bins * frames * co      # [F, B*tiles, Cout], also dY
    matmul_flops = 8.0 * bins * frames * ci * co
    work = frames / n * ci * co                 # multiply-adds per bin of one matmul
    peak = costs.matmul_tf32_flops_per_s if problem.tf32 else costs.matmul_flops_per_s
    half_work = costs.matmul_half_work * peak / costs.matmul_tf32_flops_per_s
    matmul_rate = peak * work / (work + half_work) / slow
    transform_rate = costs.transform_bytes_per_s / slow
    for radix, factor in costs.transform_radix_factors:
        if t.fft_size % radix == 0:
            transform_rate /= factor
    fft_rate = costs.transform_flops_per_s / slow

    ops = []  # (bytes, bytes per s, flops, flops per s, fixed seconds)

    def transform(moved, frame_count, rows, times=1):
        flops = frame_count * _transform_flops(t.fft_size, rows)
        fixed = frame_count * costs.transform_frame_s * slow
        ops.extend([(moved, transform_rate, flops, fft_rate, fixed)] * times)

    def matmul(moved, times):
        ops.extend([(moved, costs.matmul_bytes_per_s / slow, matmul_flops / n, matmul_rate)]
                   * times)

    def copy(moved, times=1):
        ops.extend([(moved, costs.copy_bytes_per_s / slow, 0.0, 1.0)] * times)

    recompute = config.memory == "recompute"
    for _ in range(2 if recompute else 1):     # the weight spectrum, again in the backward pass
        transform(w_bytes + W, co * ci, problem.k_h)
    if t.tiled:
        # Cutting (pad, per axis a reshape, m slices and a concat, transpose, reshape) and joining
        # (reshape, transpose, reshape, slice), and their gradients: the bytes go through four
        # copies each way, the other ops cost their overhead.
        blocks = -(-t.in_tile_h // t.tile_h) + -(-t.in_tile_w // t.tile_w)
        copy(x_bytes + x_tiles, 4)
        copy(y_bytes + y_tiles, 4)
        copy(0.0, 2 * (blocks + 7 + 4) - 8)
    if n > 1:
        copy(0.0, 4 * n + 4)                    # the pieces' slices and concats, both passes
    # Per piece: forward rfft x, matmul, irfft; backward rfft dy, dX matmul, irfft dx,
    # [rfft x again], dW matmul.
    in_rows = t.in_tile_h if t.tiled else problem.in_h
    transform((x_tiles + X) / n, frames * ci / n, in_rows, n * (2 if recompute else 1))
    transform((Y + y_tiles) / n, frames * co / n, t.tile_h, 2 * n)
    transform((X + x_tiles) / n, frames * ci / n, in_rows, n)
    matmul(X / n + W + Y / n, 3 * n)
    if n > 1:
        copy(3 * W, n - 1)                      # accumulating the weight-gradient spectrum
    transform(W + w_bytes, co * ci, problem.k_h)  # irfft dw
    time = sum(_op_time(costs, *op) for op in ops)
    flops = sum(op[2] for op in ops)
    moved = sum(op[0] for op in ops)
    if recompute:
        # Forward: W and one piece's X and Y. Backward: W, one piece's dY with dX, then X, and the
        # weight-gradient spectrum (with the running sum when there are several pieces).
        kept = 0
        workspace = (X + Y) / n + W * (3 if n > 1 else 2)
    else:
        # Forward: X, W, Y; backward: X and W kept, dY, then dX or dW.
        kept = X + W
        workspace = X + W + Y + max(X, W)
    if t.tiled:
        # The whole batch's tiles are cut before the pieces run and joined after them: both
        # copies are alive with the spectra (in either mode).
        workspace += x_tiles + y_tiles
    return Estimate(time, int(workspace), int(kept), flops, moved)


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
    algorithm: str                  # "fft" or "spatial"
    config: object                  # FftConfig, or None (spatial, or sizes unknown)
    source: str                     # what decided: cost model, timing, rule, argument
    requested: str                  # the algorithm argument
    budget: object                  # bytes, or None
    candidates: tuple = ()          # Candidate, fastest first by the model
    timings_ms: dict = dataclasses.field(default_factory=dict)
    notes: tuple = ()

    @property
    def label(self):
        return self.config.label if self.config is not None else (
            SPATIAL if self.algorithm == SPATIAL else "fft single (run-time size)")

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
    if problem.half_spectra is not None:
        return half if problem.half_spectra else wide
    costs = DEVICE_COSTS[problem.device]
    worth_it = costs.half_spectra_pay and (estimate_fft(problem, wide, costs).time_s
                >= HALF_SPECTRA_GAIN * estimate_fft(problem, half, costs).time_s)
    return half if worth_it else wide


def _fft_configs(problem, fft_size=None, tile=None):
    """Every FFT configuration of a problem with static sizes (forced frame or tile honoured),
    each with its spectrum type (``_with_spectra``)."""
    out = geometry.output_geometry(problem.in_h, problem.in_w, problem.k_h, problem.k_w,
                                   problem.padding)
    if fft_size is not None:
        sizes = [fft_size]
    elif tile is not None:
        sizes = [geometry.tile_fft_size(tile, problem.k_h, problem.k_w)]
    else:
        # From the smallest tiling frame (or the single frame of a tiny image) to the single frame.
        # Every allowed size, powers of two, 3 * 2^k and 5 * 2^k alike, as single frames and as
        # tiles.
        single = geometry.next_fft_size(max(out.need_h, out.need_w))
        smallest = max(geometry.next_fft_size(max(problem.k_h, problem.k_w, 2)),
                       min(geometry.SMALLEST_TILE_FFT_SIZE, single))
        largest = min(single, geometry.MAX_FFT_SIZE)
        sizes = [s for s in geometry.FFT_SIZES if smallest <= s <= largest]
    configs = []
    for size in sizes:
        tiles = geometry.tile_geometry(problem.in_h, problem.in_w, problem.k_h, problem.k_w,
                                       problem.padding, size, tile)
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


def candidates(problem, algorithm="auto", fft_size=None, tile=None):
    """The candidates ``algorithm`` allows, fastest first by the cost model."""
    costs = DEVICE_COSTS[problem.device]
    found = []
    if algorithm in ("auto", "spatial") and fft_size is None and tile is None:
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
    this is a guess, which static sizes replace with the cost model.
    """
    return "fft" if (min(problem.k_h, problem.k_w) >= 5
                     and problem.in_channels * problem.out_channels >= 64) else SPATIAL


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
    return 1 / CLOSE_CALL_FACTOR <= ratio <= CLOSE_CALL_FACTOR


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
    if algorithm == SPATIAL:
        return Plan(algorithm=SPATIAL, config=None, source='the argument algorithm="spatial"',
                    **common)
    if not problem.sizes_known:
        if algorithm == "fft" or unknown_size_rule(problem) == "fft":
            why = ('the argument algorithm="fft"' if algorithm == "fft" else
                   "the rule for sizes unknown while tracing (kernel >= 5x5 and Cin * Cout >= "
                   "64: FFT)")
            return Plan(algorithm="fft", config=None, source=why, notes=(
                "height or width unknown while tracing: one frame sized at run time (images "
                "needing a frame above %d are refused then); no cost model, tiling or budget"
                % geometry.MAX_FFT_SIZE,), **common)
        return Plan(algorithm=SPATIAL, config=None, source=(
            "the rule for sizes unknown while tracing (kernel >= 5x5 and Cin * Cout >= 64: "
            "FFT; otherwise spatial)"), notes=("height or width unknown while tracing",),
            **common)
    found = candidates(problem, algorithm, fft_size, tile)
    within = within_budget(found, budget)
    notes = []
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
    fft_only = plan_made.requested == "fft"
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
    return kind, _device_name(kind, spec.device_index or 0)


_NAMES = {}


def _device_name(kind, index):
    if (kind, index) not in _NAMES:
        name = kind
        if kind == "GPU":
            gpus = tf.config.list_physical_devices("GPU")
            if index < len(gpus):
                details = tf.config.experimental.get_device_details(gpus[index])
                name = details.get("device_name") or "GPU"
        else:
            name = _cpu_name()
        _NAMES[(kind, index)] = name
    return _NAMES[(kind, index)]


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU %s x%d" % (line.split(":", 1)[1].strip(), os.cpu_count() or 1)
    except OSError:
        pass
    return "CPU %s x%d" % (platform.processor() or platform.machine(), os.cpu_count() or 1)


def make_problem(x_shape, w_shape, padding="VALID", data_format="NHWC", dtype="float32",
                 device=None, half_spectra=None):
    """A ``Problem`` from static shapes (None for unknown batch, height or width);
    ``half_spectra`` (float16 and bfloat16 only): None, True or False (``Problem``)."""
    padding = geometry.check_padding(padding)
    if data_format not in ("NHWC", "NCHW"):
        raise _invalid("data_format must be \"NHWC\" or \"NCHW\", got %r" % (data_format,))
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
    if w_in != in_channels:
        raise _invalid("x has %d input channels but w is [%d, %d, %d, %d] (dimension 2 must "
                       "match)" % (in_channels, k_h, k_w, w_in, w_out))
    dtype = tf.as_dtype(dtype).name
    if half_spectra is not None and not isinstance(half_spectra, bool):
        raise _invalid("half_spectra must be None, True or False, got %r" % (half_spectra,))
    if half_spectra is not None and dtype not in HALF_DTYPES:
        raise _invalid("half_spectra applies to float16 and bfloat16 only, got %s" % dtype)
    kind, name = device_of(device)
    problem = Problem(batch, in_h, in_w, int(in_channels), int(w_out), int(k_h), int(k_w),
                      padding, data_format, dtype, kind, name,
                      bool(tf.config.experimental.tensor_float_32_execution_enabled()),
                      half_spectra)
    if problem.sizes_known:
        geometry.output_geometry(in_h, in_w, problem.k_h, problem.k_w, padding)  # validates
    return problem


# ---------------------------------------------------------------------------------------------
# Words.

def _mb(n):
    return "%.1f MB" % (n / 1e6)


def _ms(seconds):
    return "%.3f ms" % (seconds * 1e3)


def explain_plan(p):
    """The text of ``tf_fftconv.explain`` for one plan."""
    lines = ["fft_conv2d: " + p.problem.describe()]
    if p.algorithm == SPATIAL:
        lines.append("  chosen: spatial convolution (tf.nn.conv2d)")
    elif p.config is None:
        lines.append("  chosen: FFT, one frame per image sized at run time")
    else:
        lines.append("  chosen: FFT, " + p.config.describe())
    lines.append("  decided by: " + p.source)
    for note in p.notes:
        lines.append("  note: " + note)
    if p.candidates:
        chosen = p.candidate(p.label)
        spatial = p.candidate(SPATIAL)
        best_fft = next((c for c in p.candidates if c.config is not None), None)
        if chosen is not None:
            lines.append("  estimated forward + both gradients: %s" % _ms(chosen.estimate.time_s)
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


def explain(layer_or_shape, w_shape=None, *, input_shape=None, padding="VALID",
            data_format="NHWC", dtype="float32", device=None, algorithm="auto", fft_size=None,
            tile=None, memory_budget=None):
    """What ``fft_conv2d`` does for a layer or a shape, in words, and why.

    ``explain(layer)``: an ``FFTConv2D`` (every input shape it was called on, else the shape it was
    built for, else ``input_shape``). ``explain(x_shape, w_shape, padding=..., ...)``: the same
    arguments as ``fft_conv2d`` with shapes (None for unknown sizes) instead of tensors; ``device``
    "CPU" or "GPU" (default: where an op would run here). Returns a string.
    """
    if hasattr(layer_or_shape, "explain_plans"):
        return "\n".join(str(p) for p in layer_or_shape.explain_plans(input_shape))
    if w_shape is None:
        raise _invalid("explain needs a layer, or an input shape and a weight shape")
    problem = make_problem(layer_or_shape, w_shape, padding, data_format, dtype, device)
    return str(plan(problem, algorithm, fft_size, tile, memory_budget))

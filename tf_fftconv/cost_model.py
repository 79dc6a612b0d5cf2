"""The cost model: the time and memory that forward + both gradients (what training runs) of one
convolution take, by spatial convolution (``tf.nn.conv2d``) or by one configuration of the FFT path.

For a ``Problem`` and an ``FftConfig`` (``problem``), ``estimate_spatial`` and ``estimate_fft``
estimate them from the bytes each op moves and the arithmetic it does, with per-device-kind
constants (``DEVICE_COSTS``); every op costs at least the per-op overhead. How the constants were
fitted, and how far the estimates are from measured times, is in ``docs/performance.md``.
``planning`` ranks the candidates of a problem by these estimates.

Memory: the FFT path's workspace is the complex spectra it holds at once (with tiling, also the
tiled copies of the input and output), layout ``[bins, batch, channels]`` (``batch`` counting
tiles): ``X`` ``[F, B*tiles, Cin]``, ``W`` ``[F, Cin, Cout]``, ``Y`` and ``dY``
``[F, B*tiles, Cout]``. Mode "keep" keeps ``X`` and ``W`` from the forward pass for the backward
pass; mode "recompute" keeps nothing between the passes (the backward pass transforms ``x`` and
``w`` again) and runs the batch in ``chunks`` pieces, one after the other, so only one piece's
spectra are alive at a time. Spatial convolution's workspace is
counted as zero (cuDNN's own scratch is not modelled).
"""

import dataclasses
import functools
import math
import re

from tf_fftconv.problem import Estimate


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
    # A layer's bias and activation: TensorFlow fuses them into tf.nn.conv2d here (the CPU's
    # oneDNN convolution with bias and ReLU, its filter gradient with the bias's), while after the
    # FFT path they are elementwise ops of their own at this rate (bytes read + written). 0: not
    # charged (on a GPU XLA fuses them into their neighbours on either path, and eagerly they
    # cost microseconds).
    epilogue_bytes_per_s: float = 0.0
    # Grouped and depthwise layers. tf.nn.depthwise_conv2d's rate per pass (0: the spatial formula
    # at one channel per group); tf.nn.conv2d's time with groups > 1 over the formula's; and the
    # rates of the FFT path's depthwise products (elementwise ops) and of its group-major copies
    # around a grouped product (0: the tile copies' rate).
    depthwise_flops_per_s: float = 0.0
    grouped_spatial_factor: float = 1.0
    elementwise_bytes_per_s: float = 0.0
    group_copy_bytes_per_s: float = 0.0
    # tf.nn.conv2d's least rate whatever the kernel, before the channel term (0: none). XLA's
    # own convolution keeps small kernels near the rate of a 7x7 one.
    spatial_min_flops_per_s: float = 0.0
    # The tiling's pads, reshapes, slices, concats and transposes fused into one copy each way
    # and one for its gradient (XLA), at ``copy_bytes_per_s``, instead of four copies and an
    # overhead per op.
    copies_fused: bool = False

    def describe(self):
        """The constants that set an estimate's size, in words (for ``explain``)."""
        def rate(value, unit):
            for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
                if value >= scale:
                    return "%.3g %s%s/s" % (value / scale, prefix, unit)
            return "%.3g %s/s" % (value, unit)
        spatial_limit = ("" if math.isinf(self.spatial_max_flops_per_s)
                         else " up to %s" % rate(self.spatial_max_flops_per_s, "FLOP"))
        if self.spatial_min_flops_per_s:
            spatial_limit += " (at least %s)" % rate(self.spatial_min_flops_per_s, "FLOP")
        tf32 = ("" if self.matmul_tf32_flops_per_s == self.matmul_flops_per_s
                else " (%s with TF32)" % rate(self.matmul_tf32_flops_per_s, "FLOP"))
        return ("fitted on %s; our ops at least %.3g us each; transforms %s and %s; products %s%s "
                "and %s; tile copies %s%s; tf.nn.conv2d %s per sqrt(kh * kw)%s, half of it "
                "at %g channels, at least %.3g us per pass"
                % (self.calibration, 1e6 * self.op_overhead_s,
                   rate(self.transform_bytes_per_s, "B"), rate(self.transform_flops_per_s, "FLOP"),
                   rate(self.matmul_flops_per_s, "FLOP"), tf32,
                   rate(self.matmul_bytes_per_s, "B"), rate(self.copy_bytes_per_s, "B"),
                   ", one fused copy each way" if self.copies_fused else "",
                   rate(self.spatial_flops_per_s, "FLOP"), spatial_limit,
                   self.spatial_half_channels, 1e6 * self.spatial_overhead_s)
                + ("; a layer's ops after the FFT path that it does not fuse %s" % rate(
                    self.epilogue_bytes_per_s, "B") if self.epilogue_bytes_per_s else "")
                + ("; tf.nn.depthwise_conv2d %s" % rate(self.depthwise_flops_per_s, "FLOP")
                   if self.depthwise_flops_per_s else "")
                + ("; grouped tf.nn.conv2d %gx the formula's time" % self.grouped_spatial_factor
                   if self.grouped_spatial_factor != 1.0 else "")
                + ("; depthwise products %s" % rate(self.elementwise_bytes_per_s, "B")
                   if self.elementwise_bytes_per_s else "")
                + ("; group-major copies %s" % rate(self.group_copy_bytes_per_s, "B")
                   if self.group_copy_bytes_per_s else ""))


DEVICE_COSTS = {
    # Fitted on one H200 with TF32 on (FP32 rates from a run with it off), the grouped and
    # depthwise terms on one H100 (docs/performance.md). cuDNN is far from its rate at few
    # channels, hence the channel term.
    "GPU": DeviceCosts(
        op_overhead_s=20e-6, transform_bytes_per_s=1.8e12, transform_flops_per_s=20e12,
        transform_frame_s=0.0,
        matmul_flops_per_s=40e12, matmul_tf32_flops_per_s=150e12, matmul_half_work=1.2e6,
        matmul_bytes_per_s=3.0e12, copy_bytes_per_s=0.7e12, spatial_flops_per_s=50e12,
        spatial_max_flops_per_s=math.inf, spatial_half_channels=64.0,
        spatial_bytes_per_s=3.0e12, spatial_overhead_s=250e-6,
        calibration=("one H200, the grouped and depthwise terms on one H100 (docs/performance.md)"),
        # cuDNN runs the half types on tensor cores.
        spatial_dtype_factors=(("float16", 0.67), ("bfloat16", 0.62)),
        # Without TF32, cuDNN's FP32 kernels run without tensor cores.
        spatial_no_tf32_factor=4.7,
        transform_radix_factors=((3, 1.4), (5, 1.5)),
        # Elementwise casts run near copy bandwidth (and fuse into their neighbours under XLA).
        cast_bytes_per_s=2.0e12,
        # tf.nn.depthwise_conv2d runs at about the same rate whatever the kernel, and cuDNN's
        # grouped convolutions take a few times the formula's time; the FFT path's group-major
        # transposes run at the copy bandwidth, well above the tile copies'.
        depthwise_flops_per_s=1.5e12, grouped_spatial_factor=2.5, elementwise_bytes_per_s=1.5e12,
        group_copy_bytes_per_s=3.0e12),
    # Fitted on the 2-core development CPUs, an Intel Xeon and an AMD EPYC (docs/performance.md).
    "CPU": DeviceCosts(
        op_overhead_s=2e-6, transform_bytes_per_s=20e9, transform_flops_per_s=50e9,
        transform_frame_s=0.05e-6,
        matmul_flops_per_s=120e9, matmul_tf32_flops_per_s=120e9, matmul_half_work=6e3,
        matmul_bytes_per_s=10e9, copy_bytes_per_s=4e9, spatial_flops_per_s=55e9,
        spatial_max_flops_per_s=400e9, spatial_half_channels=16.0, spatial_bytes_per_s=10e9,
        spatial_overhead_s=20e-6,
        calibration="the 2-core development CPU (docs/performance.md)",
        # TensorFlow's CPU convolution has no fast float16 kernel; oneDNN has a bfloat16 one.
        spatial_dtype_factors=(("float16", 7.9), ("bfloat16", 0.55)),
        # The CPU kernels convert every half value as they load and store it, which costs more
        # than half spectra's bytes save.
        half_spectra_pay=False, cast_bytes_per_s=20e9,
        # oneDNN fuses a bias and activation into its convolution; after the FFT path, which
        # takes a bias and ReLU into its transforms (``fuses_epilogue``), another activation is
        # a pass of its own at this rate (``epilogue_bytes``).
        epilogue_bytes_per_s=7.7e9),
}

# The costs of a problem compiled by XLA, where they differ from the eager ones
# (``device_costs``). XLA picks its own convolution algorithms and fuses the layout changes
# around our custom calls, so fitted apart.
COMPILED_COSTS = {
    # Fitted on one H100 (docs/performance.md), the FFT path's transforms and products as
    # eagerly. XLA fuses the tiling's pads, slices and transposes into one copy each way and one
    # for its gradient, at the copy bandwidth; its convolution keeps small kernels near the rate
    # of a 9x9 one.
    "GPU": dataclasses.replace(
        DEVICE_COSTS["GPU"], copy_bytes_per_s=3.0e12, copies_fused=True,
        spatial_min_flops_per_s=450e12, spatial_half_channels=128.0, spatial_overhead_s=120e-6,
        calibration="one H100, its steps compiled by XLA (docs/performance.md)"),
}


# Data-sheet figures of GPUs: a pattern of the name TensorFlow gives the device, then memory
# bandwidth, FP32 and dense TF32 tensor-core rates (0: no TF32). The GPU constants were fitted on
# an H100 and an H200 (the same SMs), which take them as they are; another GPU listed here takes
# them scaled by its figures over the H100's (``scaled_to_data_sheet``), unmeasured there; one not
# listed takes them as they are.
FITTED_GPUS = re.compile(r"\bH(100|200)\b")
REFERENCE_SHEET = (3.35e12, 67e12, 495e12)    # H100 SXM
GPU_DATA_SHEETS = (
    (r"\bH100\b.*\bPCIe\b", 2.0e12, 51e12, 378e12),
    (r"\bA100\b", 2.0e12, 19.5e12, 156e12),
    (r"\bA10G?\b", 0.6e12, 31.2e12, 62.5e12),
    (r"\bL4\b", 0.3e12, 30.3e12, 60e12),
    (r"\bT4\b", 0.32e12, 8.1e12, 0.0),
    (r"\bV100\b", 0.9e12, 15.7e12, 0.0),
    (r"\bP100\b", 0.732e12, 9.3e12, 0.0),
)


def data_sheet(device_name):
    """(bandwidth, FP32, TF32) of ``device_name`` from ``GPU_DATA_SHEETS``, or None."""
    for pattern, *figures in GPU_DATA_SHEETS:
        if re.search(pattern, device_name):
            return tuple(figures)
    return None


def _fitted_gpu(device_name):
    """An H100 or H200 of the kind the constants were fitted on (the PCIe H100 is slower)."""
    return bool(FITTED_GPUS.search(device_name)) and "PCIe" not in device_name


def measured_on(problem):
    """Whether the constants for ``problem`` were measured on its device kind: the CPU's, and an
    H100's or H200's (not another GPU's, which takes them scaled or as they are)."""
    return problem.device != "GPU" or _fitted_gpu(problem.device_name)


def timed_modes(problem):
    """How a timing of ``problem`` runs when the caller does not know whether XLA will compile
    it: eagerly, and compiled as well where XLA changes the costs (``COMPILED_COSTS``)."""
    return (False, True) if problem.device in COMPILED_COSTS else (False,)


def scaled_to_data_sheet(costs, device_name):
    """``costs`` for a GPU other than the ones they were fitted on: every bandwidth times the
    ratio of its memory bandwidth to the H100's, the transforms' and products' FP32 rates and
    TensorFlow's depthwise convolution by the FP32 ratio, the TF32 products by the TF32 ratio,
    and cuDNN's convolution by the TF32 ratio where the GPU has TF32 (else the FP32 one: there
    the model's FP32 convolution, its TF32 rate over ``spatial_no_tf32_factor``, applies). The
    fixed costs per op and per pass stay: they are the host's and the launch's; so does the
    products' latency at small work (their half-rate work scales with their rate). ``costs`` as
    they are for the fitted GPUs and for GPUs without a data sheet here."""
    if _fitted_gpu(device_name):
        return costs
    sheet = data_sheet(device_name)
    if sheet is None:
        return dataclasses.replace(costs, calibration=costs.calibration + (
            "; taken as they are (no data sheet here for %s)" % device_name))
    bandwidth, fp32, tf32 = (value / reference for value, reference in
                             zip(sheet, REFERENCE_SHEET))
    conv = tf32 if tf32 else fp32
    return dataclasses.replace(
        costs,
        transform_bytes_per_s=costs.transform_bytes_per_s * bandwidth,
        transform_flops_per_s=costs.transform_flops_per_s * fp32,
        matmul_flops_per_s=costs.matmul_flops_per_s * fp32,
        matmul_tf32_flops_per_s=costs.matmul_tf32_flops_per_s * (tf32 or fp32),
        # The products' latency below their half-rate work stays as it is (a fixed cost).
        matmul_half_work=costs.matmul_half_work * (tf32 or fp32),
        matmul_bytes_per_s=costs.matmul_bytes_per_s * bandwidth,
        copy_bytes_per_s=costs.copy_bytes_per_s * bandwidth,
        spatial_flops_per_s=costs.spatial_flops_per_s * conv,
        spatial_max_flops_per_s=costs.spatial_max_flops_per_s * conv,
        spatial_min_flops_per_s=costs.spatial_min_flops_per_s * conv,
        spatial_bytes_per_s=costs.spatial_bytes_per_s * bandwidth,
        cast_bytes_per_s=costs.cast_bytes_per_s * bandwidth,
        depthwise_flops_per_s=costs.depthwise_flops_per_s * fp32,
        elementwise_bytes_per_s=costs.elementwise_bytes_per_s * bandwidth,
        group_copy_bytes_per_s=costs.group_copy_bytes_per_s * bandwidth,
        calibration=costs.calibration + (
            "; scaled to %s by its data sheet (memory %.3g TB/s, FP32 %.3g TFLOP/s, %s), "
            "unmeasured there" % (device_name, sheet[0] / 1e12, sheet[1] / 1e12,
                                  "TF32 %.3g TFLOP/s" % (sheet[2] / 1e12) if sheet[2]
                                  else "no TF32")))


@functools.lru_cache(maxsize=None)
def _gpu_costs(device_name, compiled):
    return scaled_to_data_sheet(COMPILED_COSTS["GPU"] if compiled else DEVICE_COSTS["GPU"],
                                device_name)


def device_costs(problem):
    """The constants for ``problem``: its device kind's, compiled or eager, and on a GPU scaled
    to its data sheet where it is not one they were fitted on (``scaled_to_data_sheet``)."""
    if problem.device == "GPU":
        return _gpu_costs(problem.device_name, problem.compiled)
    if problem.compiled and problem.device in COMPILED_COSTS:
        return COMPILED_COSTS[problem.device]
    return DEVICE_COSTS[problem.device]


# ---------------------------------------------------------------------------------------------
# Estimates.

def _element_bytes(dtype):
    """Bytes of one real value: half precision stores 2 (spectra too: pairs of halves)."""
    return {"float64": 8, "float16": 2, "bfloat16": 2}.get(dtype, 4)


def _op_time(costs, bytes_moved=0.0, bytes_per_s=1.0, flops=0.0, flops_per_s=1.0, fixed_s=0.0):
    return max(costs.op_overhead_s, bytes_moved / bytes_per_s,
               (flops / flops_per_s if flops else 0.0) + fixed_s)


def estimate_spatial(problem, costs):
    """tf.nn.conv2d: three passes of ``2 B (Cin / groups) Cout Ho Wo kh kw`` flops each, ``Ho x
    Wo`` the strided output and ``kh x kw`` the taps, whatever the dilation (in a half type: half
    the bytes, and the device's measured factor on the time, ``spatial_dtype_factors``; in float32
    with TF32 off, ``spatial_no_tf32_factor``). tf.nn.depthwise_conv2d runs at the device's
    ``depthwise_flops_per_s`` where it has one (else the same formula at one channel per group),
    and a grouped tf.nn.conv2d takes ``grouped_spatial_factor`` times the formula's time."""
    real = _element_bytes(problem.dtype)
    slow = ((2.0 if problem.dtype == "float64" else 1.0)
            * dict(costs.spatial_dtype_factors).get(problem.dtype, 1.0)
            * (costs.spatial_no_tf32_factor
               if problem.dtype == "float32" and not problem.tf32 else 1.0))
    out_h, out_w = (axis.out for axis in problem.strided_axes())
    batch = problem.model_batch
    # Each output sums k_h k_w taps (whatever the dilation) of in_channels / groups channels.
    group_in = problem.in_channels // max(problem.groups, 1)
    flops = (2.0 * batch * group_in * problem.out_channels * out_h * out_w
             * problem.k_h * problem.k_w)
    moved = real * (batch * problem.in_channels * problem.in_h * problem.in_w
                    + problem.k_h * problem.k_w * group_in * problem.out_channels
                    + batch * problem.out_channels * out_h * out_w)
    channels = min(group_in, problem.out_channels // max(problem.groups, 1))
    rate = (min(max(costs.spatial_flops_per_s * math.sqrt(problem.k_h * problem.k_w),
                    costs.spatial_min_flops_per_s), costs.spatial_max_flops_per_s)
            * channels / (channels + costs.spatial_half_channels) / slow)
    if problem.depthwise and costs.depthwise_flops_per_s:
        rate = costs.depthwise_flops_per_s / slow
    elif problem.groups > 1 and not problem.depthwise:
        rate /= costs.grouped_spatial_factor
    # No channels: no arithmetic (and a rate of 0), only the output's bytes.
    per_pass = max(costs.spatial_overhead_s, flops / rate if flops else 0.0,
                   moved * slow / costs.spatial_bytes_per_s)
    passes = problem.passes
    return Estimate(passes * per_pass, 0, 0, passes * flops, passes * moved)


def fuses_epilogue(problem):
    """Whether the FFT path takes a layer's bias and ReLU into its transforms
    (``ops.irfft2d_bias_activation``, ``ops.rfft2d_activation_gradient``; ``execute.run_plan``):
    on a CPU, eagerly and in a ``tf.function``, where they would be passes of their own over the
    output and its gradient (docs/performance.md, "Where a CPU model's step goes"). XLA fuses
    them with the inverse itself, and a GPU runs them at its bandwidth, so there they are
    TensorFlow's ops."""
    return problem.device == "CPU" and not problem.compiled


def epilogue_bytes(problem):
    """Bytes the layer's epilogue (``Problem.epilogue``) moves on the FFT path as ops of its own,
    which tf.nn.conv2d fuses: where the FFT path takes the bias and a ReLU into its transforms
    (``fuses_epilogue``), only another activation after them (read and written); elsewhere the
    bias added (its output read and written) and its gradient (dy read), and the activation."""
    if not problem.epilogue or not problem.sizes_known:
        return 0.0
    out_h, out_w = (axis.out for axis in problem.strided_axes())
    y_bytes = (_element_bytes(problem.dtype) * problem.model_batch * problem.out_channels
               * out_h * out_w)
    if fuses_epilogue(problem):
        return y_bytes * (2 if problem.epilogue == "bias+activation" else 0)
    return y_bytes * (3 + (0 if problem.epilogue == "bias" else 2))


def _transform_flops(fft_size, rows):
    """Arithmetic of one frame's rfft2d or irfft2d with ``rows`` image rows (the rest zeros, or
    cropped): ``rows / 2`` row FFTs (two real rows per complex FFT) and ``S/2 + 1`` column FFTs,
    each ``5 S log2 S``, as the CPU kernels do them. Frames of 3 * 2^k and 5 * 2^k, whose radix-3
    or radix-5 stage does more arithmetic per point, are not charged more: on 2 CPU cores their
    layers take the time this count gives, and on the GPU the transforms are bound by bandwidth
    (``DeviceCosts.transform_radix_factors``)."""
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
        out_h, out_w = (axis.out for axis in problem.strided_axes())
        batch = problem.model_batch
        elements = (batch * problem.in_channels * problem.in_h * problem.in_w
                    + batch * problem.out_channels * out_h * out_w
                    + problem.k_h * problem.k_w * problem.in_channels // max(problem.groups, 1)
                    * problem.out_channels)
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
    groups = max(problem.groups, 1)
    gi = ci // groups                            # input channels per group: w's dimension 2
    bins = t.bins
    x_bytes = real * batch * ci * problem.in_h * problem.in_w
    y_bytes = real * batch * co * t.out_h * t.out_w   # the stride-1 output
    w_bytes = real * problem.dilated_k_h * problem.dilated_k_w * gi * co   # the dilated kernel
    x_tiles = real * frames * ci * t.in_tile_h * t.in_tile_w if t.tiled else x_bytes
    y_tiles = real * frames * co * t.tile_h * t.tile_w if t.tiled else y_bytes
    X = complex_bytes * bins * frames * ci      # [F, B*tiles, Cin]
    W = complex_bytes * bins * gi * co          # [F, Cin / groups, Cout]
    Y = complex_bytes * bins * frames * co      # [F, B*tiles, Cout], also dY
    # The per-bin product is block-diagonal: groups matmuls of (Cin / groups) x (Cout / groups).
    matmul_flops = 8.0 * bins * frames * gi * co
    work = frames / n * gi * co / groups        # multiply-adds per bin of one group's matmul
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
        if problem.elementwise:
            # Depthwise: a per-channel complex multiply (TensorFlow's elementwise ops: the
            # operands, the product and a conjugate or broadcast copy), bound by bandwidth.
            copy(2 * moved, times, costs.elementwise_bytes_per_s or costs.copy_bytes_per_s)
            return
        ops.extend([(moved, costs.matmul_bytes_per_s / slow, matmul_flops / n, matmul_rate)]
                   * times)
        if groups > 1:
            # Each product's operands and result moved to and from group-major order.
            copy(2 * moved, times, costs.group_copy_bytes_per_s or costs.copy_bytes_per_s)

    def copy(moved, times=1, rate=costs.copy_bytes_per_s):
        ops.extend([(moved, rate / slow, 0.0, 1.0)] * times)

    recompute = config.memory == "recompute"
    for _ in range(2 if recompute else 1):     # the weight spectrum, again in the backward pass
        transform(w_bytes + W, co * gi, problem.dilated_k_h)
    if problem.dilations != (1, 1):
        copy(w_bytes + real * problem.k_h * problem.k_w * gi * co, 2)   # dilating w, and its grad
    if problem.strides != (1, 1):
        # Every stride-th output kept, and its gradient spread onto the stride grid; the
        # stride-1 output is computed whole (the inverse writing only the kept outputs is the
        # custom kernels' next step).
        out_h, out_w = (axis.out for axis in problem.strided_axes())
        copy(y_bytes + real * batch * co * out_h * out_w, 2)
    if t.tiled:
        # Cutting (pad, per axis a reshape, m slices and a concat, transpose, reshape) and joining
        # (reshape, transpose, reshape, slice), and their gradients: the bytes go through four
        # copies each way, the other ops cost their overhead.
        # Compiled by XLA (``copies_fused``), the ops of each fuse into one copy, and its
        # gradient's into another: two each way, costing nothing else.
        blocks = -(-t.in_tile_h // t.tile_h) + -(-t.in_tile_w // t.tile_w)
        passes = 2 if costs.copies_fused else 4
        copy(x_bytes + x_tiles, passes)
        copy(y_bytes + y_tiles, passes)
        if not costs.copies_fused:
            copy(0.0, 2 * (blocks + 7 + 4) - 8)
    if n > 1 and not costs.copies_fused:
        copy(0.0, 4 * n + 4)                    # the pieces' slices and concats, both passes
    # Per piece: forward rfft x, matmul, irfft; backward rfft dy, dX matmul, irfft dx,
    # [rfft x again], dW matmul.
    in_rows = t.in_tile_h if t.tiled else problem.in_h
    transform((x_tiles + X) / n, frames * ci / n, in_rows, n * (2 if recompute else 1))
    transform((Y + y_tiles) / n, frames * co / n, t.tile_h, 2 * n)
    if problem.input_gradient:
        transform((X + x_tiles) / n, frames * ci / n, in_rows, n)
    matmul(X / n + W + Y / n, problem.passes * n)
    if costs.epilogue_bytes_per_s and epilogue_bytes(problem):
        ops.append((epilogue_bytes(problem), costs.epilogue_bytes_per_s / slow, 0.0, 1.0))
    if n > 1:
        copy(3 * W, n - 1)                      # accumulating the weight-gradient spectrum
    transform(W + w_bytes, co * gi, problem.dilated_k_h)  # irfft dw
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
    if groups > 1:
        # One product's operands and result in group-major order (or the depthwise broadcast).
        workspace += (X + Y) / n + W
    return Estimate(time, int(workspace), int(kept), flops, moved)

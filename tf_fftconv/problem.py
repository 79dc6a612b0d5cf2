"""The types the library's modules share: a convolution problem, the FFT path's configurations,
the cost model's estimates, the candidates of a problem and its plan.

A ``Problem`` is one convolution as the planner sees it (shapes, padding, layout, dtype, device
kind, and what its caller needs around it); an ``FftConfig`` is one way of computing it on the FFT
path (frame, tiling, memory mode, spectrum type); an ``Estimate`` is the cost model's time and
memory of one of them (``cost_model``); a ``Plan`` says what computes the problem, and why
(``planning`` makes it; ``Plan.describe`` puts it in words, the text of ``tf_fftconv.explain``).
"""

import dataclasses

from tf_fftconv import geometry

MEMORY_MODES = ("keep", "recompute")
# Batch assumed by the cost model when the batch size is unknown while tracing.
ASSUMED_BATCH = 64
# The half-precision dtypes, whose FFT path may keep spectra in their own type or in float32.
HALF_DTYPES = ("float16", "bfloat16")
# The label of spatial convolution among the candidates, and a plan's algorithm.
SPATIAL = "spatial"
# The algorithm of a problem with no input or no output channels (``Problem.no_channels``): its
# output is zeros or empty, made without a convolution op (TensorFlow's conv2d refuses a filter
# with no input channels, and oneDNN's CPU kernels one with no output channels).
NO_CHANNELS = "no channels"

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
    # tf.nn.conv2d's strides and dilations (height, width) and groups: the filters are
    # [k_h, k_w, in_channels / groups, out_channels]. The FFT path computes the stride-1
    # convolution with the dilated kernel (``dilated_k_h`` x ``dilated_k_w``) and keeps every
    # stride-th output (``geometry.strided_axis``).
    strides: tuple = (1, 1)
    dilations: tuple = (1, 1)
    groups: int = 1
    # tf.nn.depthwise_conv2d: groups = in_channels, out_channels = in_channels * multiplier, the
    # filters [k_h, k_w, 1, out_channels] (its [k_h, k_w, in_channels, multiplier] reshaped).
    depthwise: bool = False
    # What the convolution's caller needs around it. ``input_gradient`` False: no gradient with
    # respect to x is ever taken (a model's first layer: TensorFlow prunes that pass on either
    # path). ``epilogue``: the layer's ops after the convolution that tf.nn.conv2d can fuse
    # ("bias", "bias+activation"; ``DeviceCosts.epilogue_bytes_per_s``).
    input_gradient: bool = True
    epilogue: str = ""
    # Compiled by XLA (traced inside ``tf.function(jit_compile=True)``, as Keras compiles a
    # model on a GPU): the costs of ``cost_model.COMPILED_COSTS`` apply, and plans and timings
    # are kept apart from the eager ones.
    compiled: bool = False

    @property
    def sizes_known(self):
        return self.in_h is not None and self.in_w is not None

    @property
    def no_channels(self):
        """No input or no output channels: the output is zeros (a sum over no input channels) or
        empty, and there is nothing to compute."""
        return self.in_channels == 0 or self.out_channels == 0

    @property
    def dilated_k_h(self):
        return geometry.dilated_size(self.k_h, self.dilations[0])

    @property
    def dilated_k_w(self):
        return geometry.dilated_size(self.k_w, self.dilations[1])

    @property
    def elementwise(self):
        """One input channel per group (depthwise): each bin's product is a per-channel complex
        multiply instead of a matmul."""
        return self.groups > 1 and self.in_channels == self.groups

    def strided_axes(self):
        """``geometry.StridedAxis`` of height and width (sizes known)."""
        return (geometry.strided_axis(self.in_h, self.dilated_k_h, self.strides[0], self.padding),
                geometry.strided_axis(self.in_w, self.dilated_k_w, self.strides[1], self.padding))

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
            "k%dx%d" % (self.k_h, self.k_w))) + forced + self._options()

    def _options(self):
        """Strides, dilations, groups and depthwise where they are not tf.nn.conv2d's defaults
        (so the keys and words of a plain convolution stay as they were)."""
        words = []
        if self.strides != (1, 1):
            words.append("strides %dx%d" % self.strides)
        if self.dilations != (1, 1):
            words.append("dilations %dx%d" % self.dilations)
        if self.depthwise:
            words.append("depthwise, multiplier %d" % (self.out_channels // max(self.groups, 1)))
        elif self.groups != 1:
            words.append("groups %d" % self.groups)
        if not self.input_gradient:
            words.append("no input gradient")
        if self.epilogue:
            words.append("then " + self.epilogue)
        if self.compiled:
            words.append("compiled by XLA")
        return "".join(", " + word for word in words)

    @property
    def passes(self):
        """The passes computed: the forward, the input gradient (unless never taken) and the
        weight gradient."""
        return 3 if self.input_gradient else 2

    def describe(self):
        x = ("[%s, %s, %s, %d]" if self.data_format == "NHWC" else "[%s, %d, %s, %s]") % (
            (self.batch, self.in_h, self.in_w, self.in_channels) if self.data_format == "NHWC"
            else (self.batch, self.in_channels, self.in_h, self.in_w))
        return ("x %s %s, kernel %dx%d, %d -> %d channels, %s, %s on %s%s"
                % (x.replace("None", "?"), self.data_format, self.k_h, self.k_w,
                   self.in_channels, self.out_channels, self.padding, self.dtype,
                   self.device_name, ", TF32 on" if self.tf32 and self.device == "GPU" else "")
                + self._options())


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
    costs: object = None            # the cost_model.DeviceCosts of the candidates' estimates

    @property
    def label(self):
        if self.config is not None:
            return self.config.label
        return "fft single (run-time size)" if self.algorithm == "fft" else self.algorithm

    def candidate(self, label):
        return next((c for c in self.candidates if c.label == label), None)

    def describe(self):
        """The text of ``tf_fftconv.explain`` for this plan."""
        lines = [("fft_depthwise_conv2d: " if self.problem.depthwise else "fft_conv2d: ")
                 + self.problem.describe()]
        if self.algorithm == SPATIAL:
            lines.append("  chosen: spatial convolution (tf.nn.%s)"
                         % ("depthwise_conv2d" if self.problem.depthwise else "conv2d"))
        elif self.algorithm == NO_CHANNELS:
            lines.append("  chosen: no convolution op, only the output's fill")
        elif self.config is None:
            lines.append("  chosen: FFT, one frame per image sized at run time")
        else:
            lines.append("  chosen: FFT, " + self.config.describe())
        lines.append("  decided by: " + self.source)
        for note in self.notes:
            lines.append("  note: " + note)
        for how in _how_computed(self.problem):
            lines.append("  how: " + how)
        if self.candidates:
            chosen = self.candidate(self.label)
            spatial = self.candidate(SPATIAL)
            best_fft = next((c for c in self.candidates if c.config is not None), None)
            if chosen is not None:
                passes = ("forward + both gradients" if self.problem.input_gradient
                          else "forward + weight gradient")
                lines.append("  estimated %s: %s" % (passes, _ms(chosen.estimate.time_s))
                             + (" (spatial %s)" % _ms(spatial.estimate.time_s)
                                if spatial is not None and chosen is not spatial else "")
                             + (" (best FFT: %s, %s)" % (best_fft.label,
                                                         _ms(best_fft.estimate.time_s))
                                if best_fft is not None and chosen is spatial else ""))
                if chosen.config is not None:
                    lines.append("  workspace: %s of spectra%s at most, %s kept between the "
                                 "passes" % (_mb(chosen.estimate.workspace_bytes),
                                    " and tiles" if chosen.config.tiles.tiled else "",
                                    _mb(chosen.estimate.kept_bytes)))
            lines.append("  device constants (%s%s): %s" % (
                self.problem.device, ", compiled by XLA" if self.problem.compiled else "",
                self.costs.describe()))
            lines.append("  memory budget: %s"
                         % ("none" if self.budget is None else _mb(self.budget)))
            if self.timings_ms:
                lines.append("  timed (ms, median): " + ", ".join(
                    "%s %.3f" % (label, ms) for label, ms in sorted(self.timings_ms.items(),
                                                                     key=lambda kv: kv[1])))
            lines.append("  candidates by the cost model (time, workspace):")
            for c in self.candidates[:6]:
                lines.append("    %-44s %10s %12s" % (c.label, _ms(c.estimate.time_s),
                                                      _mb(c.estimate.workspace_bytes)))
            if len(self.candidates) > 6:
                lines.append("    ... %d more" % (len(self.candidates) - 6))
        return "\n".join(lines)

    def __str__(self):
        return self.describe()


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

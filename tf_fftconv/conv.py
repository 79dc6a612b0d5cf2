"""``fft_conv2d`` and ``fft_depthwise_conv2d``: ``tf.nn.conv2d`` and ``tf.nn.depthwise_conv2d``
computed in the frequency domain with the three ops, or by TensorFlow's own op where that is
faster.

It checks the arguments, takes the plan for the problem from ``planning`` (eagerly, after a timing
by ``tuning`` where the cost model calls the choice close or ``TF_FFTCONV_AUTOTUNE=1`` asks for
one) and runs it (``execute``); eagerly, an allocation the device refuses gets the plan with less
memory. ``convolve`` is that path from a ``Problem`` already built (the layers build theirs once
per call).
"""

import tensorflow as tf

from tf_fftconv import execute
from tf_fftconv import geometry
from tf_fftconv import ops
from tf_fftconv import planning
from tf_fftconv import timing_cache
from tf_fftconv import tuning
from tf_fftconv.errors import invalid_argument as _invalid
from tf_fftconv.problem import epilogue_of

_DTYPES = (tf.float32, tf.float64, tf.float16, tf.bfloat16)


def static_dims(tensor, what):
    if tensor.shape.rank != 4:
        raise _invalid("%s must have rank 4, got shape %s" % (what, tensor.shape))
    return tensor.shape.as_list()


def _optional_int(value, name, smallest):
    """None, or a Python int >= smallest (NumPy integers too; bools and floats refused)."""
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _invalid("%s must be None or an integer, got %r" % (name, value))
    value = value.__index__()
    if value < smallest:
        raise _invalid("%s must be >= %d, got %d" % (name, smallest, value))
    return value


def fft_conv2d(x, w, padding="VALID", data_format="NHWC", fft_size=None, algorithm="auto",
               tile=None, memory_budget=None, half_spectra=None, name=None, *, strides=1,
               dilations=1, groups=None, bias=None, activation=None):
    """``tf.nn.conv2d`` (cross-correlation), by FFT where that pays.

    Args:
      x: float32, float64, float16 or bfloat16 input, ``[B, H, W, Cin]`` (NHWC) or
        ``[B, Cin, H, W]`` (NCHW). float16 and bfloat16 are transformed and multiplied in
        float32 and stored in their own type; so are their spectra where that saves time,
        otherwise those are float32 (``half_spectra``).
        Cin must be known statically; B, H and W may be dynamic (with static H and W the sizes
        are Python numbers, otherwise they are computed in the graph).
      w: filters ``[kh, kw, Cin / groups, Cout]``, the same dtype as ``x``, with a static shape.
      padding: "VALID" or "SAME" (with strides, TensorFlow's SAME: ``ceil(H / s)`` outputs,
        ``pad_total // 2`` of the padding before the image).
      data_format: "NHWC" or "NCHW".
      fft_size: the FFT frame (a power of two in [2, 128], 3 * 2^k in [6, 96] or 5 * 2^k in
        [10, 80]); an image that does not fit is cut into tiles. Default: chosen by the cost
        model. Needs a static height and width.
      algorithm: "auto" (the cost model, or timings from ``tf_fftconv.autotune``, choose per
        shape, device and dtype; on a GPU an eager call times a close call of the model once,
        as ``FFTConv2D`` does when built), "fft" (always the FFT path) or "spatial"
        (``tf.nn.conv2d`` with the same arguments). ``fft_size`` or ``tile`` given: the FFT path
        with them.
      tile: output tile side (of the stride-1 output) for tiling (the frame is then the smallest
        that holds ``tile + k - 1``, k the dilated kernel's extent, unless ``fft_size`` is
        given). Needs a static height and width.
      memory_budget: bytes of spectra the FFT path may hold at once; default
        ``$TF_FFTCONV_MEMORY_BUDGET``, else none. Above it the FFT path recomputes spectra in
        pieces, or (``algorithm="auto"``) spatial convolution is used.
      half_spectra: float16 and bfloat16 only. None (default): half-precision spectra where the
        cost model puts float32 ones at least ``planning.HALF_SPECTRA_GAIN`` times slower, else
        float32 spectra with FP32 products (one rounding, of the result; small layers); with
        height or width unknown while tracing (no cost model), half spectra. True or False forces
        half or float32 spectra.
      strides (keyword): as ``tf.nn.conv2d``'s: an integer, or a list of 1, 2 or 4 integers (4:
        in ``data_format``'s order, 1 for batch and channels). The FFT path computes the
        stride-1 convolution and keeps every stride-th output.
      dilations (keyword): as ``tf.nn.conv2d``'s, in the same forms as ``strides``. The FFT path
        convolves with the kernel with zeros between its taps; its cost does not depend on them.
      groups (keyword): None (default): ``Cin / w.shape[2]``, as ``tf.nn.conv2d`` infers it;
        else checked against it. Each group of ``Cin / groups`` input channels makes
        ``Cout / groups`` output channels: per frequency bin one matmul per group.
      bias (keyword): None, or ``[Cout]`` of x's dtype, added to every output of its channel.
      activation (keyword): None (or "linear") or "relu", applied after the bias. On a CPU (not
        under XLA) the FFT path applies both as its inverse transform writes the output, and
        the ReLU's derivative as it transforms the output's gradient (``ops.ACTIVATIONS``);
        elsewhere they are ``tf.nn.bias_add`` and ``tf.nn.relu``, which XLA and TensorFlow's
        own convolution fuse. Differentiable in ``bias`` too.
    Returns:
      ``[B, Ho, Wo, Cout]`` (NHWC) or ``[B, Cout, Ho, Wo]`` (NCHW), differentiable in ``x`` and
      ``w``. ``tf_fftconv.explain`` says what was chosen and why.

    ``strides``, ``dilations`` and ``groups`` are keywords so that the positional order of the
    other arguments (``fft_conv2d(x, w, padding, data_format, fft_size)``) stays as it was.
    """
    return conv2d_with_plan(x, w, padding, data_format, fft_size, algorithm, tile, memory_budget,
                            half_spectra, name, strides=strides, dilations=dilations,
                            groups=groups, bias=bias, activation=activation)[0]


def fft_depthwise_conv2d(x, w, strides=1, padding="SAME", dilations=1, data_format="NHWC",
                         algorithm="auto", fft_size=None, tile=None, memory_budget=None,
                         name=None, *, bias=None, activation=None):
    """``tf.nn.depthwise_conv2d``, by FFT where that pays.

    Each of the C input channels is convolved with its own ``multiplier`` filters; output
    channel ``c * multiplier + m`` is input channel c with filter ``w[:, :, c, m]``. On the FFT
    path each frequency bin's product is a complex multiply per channel (no matmul): the
    transforms of ``fft_conv2d`` with C groups of one input channel.

    Args:
      x: ``[B, H, W, C]`` (NHWC) or ``[B, C, H, W]`` (NCHW), float32, float64, float16 or
        bfloat16 (the half types are computed with float32 spectra).
      w: ``[kh, kw, C, multiplier]``, the same dtype as ``x``, with a static shape.
      strides, padding, dilations, data_format, fft_size, tile, memory_budget: as
        ``fft_conv2d``'s.
      algorithm: "auto", "fft" or "spatial" (``tf.nn.depthwise_conv2d``).
      bias, activation (keywords): as ``fft_conv2d``'s, ``bias`` ``[C * multiplier]``.
    Returns:
      ``[B, Ho, Wo, C * multiplier]`` (NHWC) or ``[B, C * multiplier, Ho, Wo]``,
      differentiable in ``x`` and ``w``.
    """
    return conv2d_with_plan(x, w, padding, data_format, fft_size, algorithm, tile, memory_budget,
                            None, name or "fft_depthwise_conv2d", strides=strides,
                            dilations=dilations, depthwise=True, bias=bias,
                            activation=activation)[0]


def conv2d_with_plan(x, w, padding="VALID", data_format="NHWC", fft_size=None, algorithm="auto",
                     tile=None, memory_budget=None, half_spectra=None, name=None, *, strides=1,
                     dilations=1, groups=None, depthwise=False, bias=None, activation=None):
    """``fft_conv2d`` (``depthwise``: ``fft_depthwise_conv2d``) that also returns the
    ``problem.Plan`` it followed."""
    with tf.name_scope(name or "fft_conv2d"):
        x = tf.convert_to_tensor(x)
        w = tf.convert_to_tensor(w)
        if x.dtype not in _DTYPES or w.dtype != x.dtype:
            raise _invalid("x and w must have the same dtype, float32, float64, float16 or "
                           "bfloat16, got %s and %s" % (x.dtype.name, w.dtype.name))
        if data_format not in ("NHWC", "NCHW"):
            raise _invalid("data_format must be \"NHWC\" or \"NCHW\", got %r" % (data_format,))
        planning.check_algorithm(algorithm)
        activation = _activation_name(activation)
        fft_size = _optional_int(fft_size, "fft_size", 1)
        tile = _optional_int(tile, "tile", 1)
        problem = planning.make_problem(static_dims(x, "x"), static_dims(w, "w"), padding,
                                        data_format, x.dtype, half_spectra=half_spectra,
                                        strides=strides, dilations=dilations, groups=groups,
                                        depthwise=depthwise,
                                        epilogue=epilogue_of(bias is not None, activation))
        return convolve(problem, x, w, algorithm, fft_size, tile, memory_budget, bias,
                        activation)


def convolve(problem, x, w, algorithm="auto", fft_size=None, tile=None, memory_budget=None,
             bias=None, activation="linear"):
    """The convolution ``problem`` (``planning.make_problem`` of ``x`` and ``w``, which the
    caller has checked) of ``x`` and ``w`` (``problem.depthwise``: ``tf.nn.depthwise_conv2d``'s
    filters), then ``bias`` and ``activation`` ("linear" or "relu"), by the plan for it; returns
    the output and the ``problem.Plan`` followed. ``fft_size`` and ``tile``: None or positive
    Python ints."""
    bias = _checked_bias(bias, x.dtype, problem.out_channels)
    if problem.depthwise:   # [kh, kw, C, multiplier] -> the grouped [kh, kw, 1, C * multiplier]
        w = tf.reshape(w, [problem.k_h, problem.k_w, problem.in_channels // problem.groups,
                           problem.out_channels])
    k_h, k_w = problem.dilated_k_h, problem.dilated_k_w
    if (fft_size is not None or tile is not None) and not problem.sizes_known:
        raise _invalid("an explicit fft_size or tile needs a static height and width, got "
                       "x %s" % (x.shape,))
    if (fft_size is not None or tile is not None) and algorithm == "spatial":
        raise _invalid("fft_size and tile set the FFT path, but algorithm is \"spatial\"")
    if fft_size is not None and tile is not None and problem.sizes_known:
        geometry.tile_geometry(problem.in_h, problem.in_w, k_h, k_w, problem.padding,
                               fft_size, tile)  # validates the pair
    chosen = planning.plan(problem, algorithm, fft_size, tile, memory_budget)
    if tf.executing_eagerly() and algorithm == "auto" and problem.sizes_known:
        if timing_cache.autotune_enabled() and not chosen.timings_ms:
            chosen = tuning.tune_problem(problem, fft_size, tile, memory_budget)
        elif fft_size is None and tile is None:
            # A close call of the cost model is timed once, as FFTConv2D does when built.
            chosen = tuning.confirm_close_call(problem, memory_budget)
    if not tf.executing_eagerly() or chosen.algorithm == "spatial" or chosen.config is None:
        return execute.run_plan(chosen, x, w, bias, activation), chosen
    # Eager: an allocation the device refuses gets the lower-memory plan (kept from then on).
    while True:
        try:
            return execute.run_plan(chosen, x, w, bias, activation), chosen
        except tf.errors.ResourceExhaustedError:
            lower = planning.downgrade(chosen)
            if lower is None:
                raise
            chosen = lower


def _activation_name(activation):
    """None or "linear" -> "linear"; "relu"; anything else refused (a layer applies other
    activations itself)."""
    activation = "linear" if activation is None else activation
    if activation not in ops.ACTIVATIONS:
        raise _invalid("activation must be None, %s, got %r" % (
            " or ".join('"%s"' % a for a in ops.ACTIVATIONS), activation))
    return activation


def _checked_bias(bias, dtype, out_channels):
    """None, or ``bias`` as a ``[out_channels]`` tensor of the convolution's dtype."""
    if bias is None:
        return None
    bias = tf.convert_to_tensor(bias)
    if bias.dtype != dtype:
        raise _invalid("bias must have x's dtype %s, got %s" % (dtype.name, bias.dtype.name))
    if bias.shape.rank != 1 or bias.shape[0] not in (None, out_channels):
        raise _invalid("bias must be [out_channels] = [%d], got shape %s"
                       % (out_channels, bias.shape))
    return bias

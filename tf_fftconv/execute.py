"""Runs a ``problem.Plan``: ``tf.nn.conv2d``, or the stride-1 convolution computed in the frequency
domain with the three ops, on the image or on its tiles (``run_plan``, which ``conv.fft_conv2d`` and
the timings of ``tuning`` call).

Per frequency bin (design: "Convolution as three ops"), with ``X = rfft2d(x)``, ``W = rfft2d(w)``
and ``dY = rfft2d(dy)``. The weights ``[kh, kw, Cin, Cout]`` are, as they lie in memory, one NHWC
image of ``Cin * Cout`` channels, so their spectrum is ``W' [F, Cin, Cout]`` (reshapes only), per
bin the transpose of the design's ``W [Cout, Cin]``; the products read ``W'`` and write ``dW'``
through their transpose and conjugate flags, and no pass copies a tensor to rearrange it:

- forward       ``Y   = X · W^H = X · conj(W')``         -> ``y  = irfft2d(Y)``, window at 0
- input grad    ``dX  = dY · W  = dY · W'^T``            -> ``dx = irfft2d(dX)``, window at pad
- weight grad   ``dW' = (dY^H · X)^T = X^T · conj(dY)``  -> ``dw = irfft2d(dW')``, window [0, k),
  ``[F, Cin, Cout]`` inverted as one NHWC image of ``Cin * Cout`` channels: ``dw`` in ``w``'s layout

In mode "keep", ``X`` and ``W'`` from the forward pass are reused by the backward pass and ``dY`` is
transformed once for both gradients. In mode "recompute" nothing is kept: the batch runs in pieces,
one after the other, and the backward pass transforms each piece of ``x`` (and ``w``) again. The
Hermitian weights and ``S^2`` factors of the op-level gradients cancel in this composition, so none
of them is applied here.

float16 and bfloat16 run natively: their spectra are mean-normalised (``rfft2d`` divides by
``S^2``, ``irfft2d`` does not scale), so each per-bin product is taken with ``alpha = S^2``
(``_spectral_product``), which makes it again the mean-normalised spectrum of its output: no
spectrum exceeds the largest magnitude of the tensor it stands for, and none overflows unless that
tensor (the output or a gradient) itself does. The same three passes, in the same dtype. float16
weights are multiplied by a power of two before their transform (``_weight_gain``: a small kernel's
spectrum divided by ``S^2`` would be subnormal), and the products that use them divide alpha by it.
Where the plan says so (``planning``: small layers, where half spectra save little time), a half
input is cast to float32 and takes the float32 passes with FP32 products instead, so that the
result is rounded once, as cuDNN's is.

TF32 (float32 with ``allow_tf32``, TensorFlow's TF32 switch on, a GPU of compute capability 8.0+):
the ``x``, ``w`` and ``dy`` spectra feed nothing but the three products, which round their operands
to TF32. So ``rfft2d`` stores them rounded to TF32 already, by the products' own rule
(``round_to_tf32``), and the products take those values unconverted (``tf32_operands``): the same
results, bit for bit, without a conversion per operand value in every block that loads it. The ops
ignore both flags where TF32 does not apply (CPU, TF32 off), so the results there are unchanged.

Tiles (``geometry``): the padded input is cut into overlapping tiles that join the batch
dimension, each tile is a VALID convolution in a small frame, and the output tiles are put side
by side. Cutting and joining are TensorFlow's pad / reshape / slice / concat / transpose, whose
gradients TensorFlow provides; the weight gradient sums over the tiles in the per-bin matmul.
"""

import dataclasses

import tensorflow as tf

from tf_fftconv import cost_model
from tf_fftconv import ops
from tf_fftconv import planning
from tf_fftconv.geometry import (
    FFT_SIZES, MAX_FFT_SIZE, ConvGeometry, check_padding, strided_axis)


# float16 weights are multiplied by at most this power of two before their transform (below).
_MAX_WEIGHT_GAIN = 2 ** 8


def _weight_gain(dtype, fft_size, kernel_size):
    """The power of two by which float16 weights are multiplied before their transform (1 for the
    other dtypes), for a Python int ``fft_size``.

    A mean-normalised spectrum is divided by ``S^2``, but a ``kh x kw`` kernel's bins are bounded
    by ``kh kw max|w|``: a float16 weight spectrum in a large frame would sit in float16's
    subnormal range (fewer significant bits) for ordinary weights. ``2^floor(log2(S^2 / (kh kw)))``
    keeps every bin of the stored weight spectrum within ``max|w|`` (no overflow unless the
    scaled weights themselves overflow, which the cap of 2^8 leaves to weights above 255); the
    products that use it take ``alpha = S^2 / gain``. bfloat16 has float32's exponent range.
    """
    if tf.as_dtype(dtype) != tf.float16:
        return 1
    area = max(1, kernel_size[0] * kernel_size[1])
    return min(_MAX_WEIGHT_GAIN, 2 ** ((fft_size * fft_size // area).bit_length() - 1))


def _frame_index(fft_size):
    """Index of a run-time ``fft_size`` in ``FFT_SIZES`` (every fft_size of the ops, ascending)."""
    return tf.reduce_sum(tf.cast(tf.constant(FFT_SIZES, tf.int32) < fft_size, tf.int32))


def _static_size(fft_size):
    static = tf.get_static_value(fft_size) if tf.is_tensor(fft_size) else fft_size
    return None if static is None else int(static)


def _reshape_bins(spectrum, dims):
    """``spectrum`` with each bin's matrix reshaped to ``dims`` (a half spectrum keeps its trailing
    pair): the same memory, not a copy."""
    pair = [2] if ops.is_half(spectrum.dtype) else []
    return tf.reshape(spectrum, [-1] + list(dims) + pair)


def _tf32_spectra(dtype, allow_tf32):
    """Whether a convolution in ``dtype`` stores its spectra rounded to TF32 for its products
    (``rfft2d``'s ``round_to_tf32``, ``spectral_matmul``'s ``tf32_operands``; module docstring):
    float32 with TF32 allowed. Half-precision and float64 spectra are never rounded."""
    return bool(allow_tf32) and tf.as_dtype(dtype) == tf.float32


def _weight_spectrum(w, fft_size, kernel_size, round_to_tf32=False):
    """``W' [F, Cin, Cout]``: ``rfft2d`` of ``w * _weight_gain``, ``w [kh, kw, Cin, Cout]`` taken
    as it lies, one NHWC image of ``Cin * Cout`` channels; ``round_to_tf32`` as ``rfft2d``'s."""
    k_h, k_w, in_channels, out_channels = w.shape
    image = tf.reshape(w, [1, k_h, k_w, in_channels * out_channels])
    if w.dtype == tf.float16:
        size = _static_size(fft_size)
        if size is not None:
            gain = tf.constant(_weight_gain(w.dtype, size, kernel_size), w.dtype)
        else:
            gains = [_weight_gain(w.dtype, s, kernel_size) for s in FFT_SIZES]
            gain = tf.gather(tf.constant(gains, w.dtype), _frame_index(fft_size))
        image = image * gain
    spectrum = ops.rfft2d(image, fft_size, data_format="NHWC",
                          round_to_tf32=round_to_tf32)                # [F, 1, Cin * Cout]
    return _reshape_bins(spectrum, [in_channels, out_channels])


def _weight_gradient(dw_spectrum, fft_size, kernel_size):
    """``dw [kh, kw, Cin, Cout]`` from ``dW' [F, Cin, Cout]``, inverted as ``_weight_spectrum``
    transforms: one NHWC image of ``Cin * Cout`` channels, which is ``dw`` in ``w``'s layout."""
    in_channels, out_channels = dw_spectrum.shape[1], dw_spectrum.shape[2]
    # [1, kh, kw, Cin * Cout]
    image = ops.irfft2d(_reshape_bins(dw_spectrum, [1, in_channels * out_channels]), fft_size,
                        kernel_size[0], kernel_size[1], data_format="NHWC")
    return tf.reshape(image, [kernel_size[0], kernel_size[1], in_channels, out_channels])


def _spectral_product(a, b, fft_size, kernel_size=None, **flags):
    """``spectral_matmul(a, b, **flags)`` with the scale the spectra need: for half-precision
    (mean-normalised) spectra ``alpha = S^2``, divided by the weight gain when one operand is the
    weight spectrum (``kernel_size`` given); 1 for complex ones. ``alpha`` is an attribute, so an
    ``fft_size`` known only at run time selects one matmul per possible frame size."""
    if not ops.is_half(a.dtype):
        return ops.spectral_matmul(a, b, **flags)

    def alpha(size):
        gain = 1 if kernel_size is None else _weight_gain(a.dtype, size, kernel_size)
        return float(size * size) / gain

    size = _static_size(fft_size)
    if size is not None:
        return ops.spectral_matmul(a, b, alpha=alpha(size), **flags)
    return tf.switch_case(_frame_index(fft_size), [
        (lambda size=size: ops.spectral_matmul(a, b, alpha=alpha(size), **flags))
        for size in FFT_SIZES])


# Groups: channel c of X [F, B, Cin] belongs to group c // (Cin / groups), output channel o of
# dY [F, B, Cout] to group o // (Cout / groups), and the weights' W' [F, Cin / groups, Cout] hold
# each group's [Cin / groups, Cout / groups] block side by side. Each bin's product is then
# block-diagonal: one matmul per group and bin. ``_to_groups`` moves a spectrum's channel groups
# next to its bins, so that one batched spectral matmul over F * groups "bins" does every group,
# and ``_from_groups`` moves them back (each a TensorFlow transpose, a copy).
# Depthwise (one input channel per group, ``_is_elementwise``): each bin's product is a complex
# multiply per channel, done with TensorFlow's complex ops on the spectra; fusing it into the
# inverse transform's pass is the custom kernels' next step.

def _pair(spectrum):
    """The trailing [2] of a half-precision spectrum's shape, else []."""
    return [2] if ops.is_half(spectrum.dtype) else []


def _to_groups(spectrum, groups):
    """``[F, R, C]`` (half: ``[F, R, C, 2]``) -> ``[F * groups, R, C / groups]``, group ``g`` of
    bin ``f`` at ``f * groups + g``."""
    if groups == 1:
        return spectrum
    pair, shape = _pair(spectrum), tf.shape(spectrum)
    per_group = spectrum.shape[2] // groups
    split = tf.reshape(spectrum, tf.concat([shape[:2], [groups, per_group], pair], 0))
    moved = tf.transpose(split, [0, 2, 1, 3] + [4] * len(pair))    # [F, groups, R, C / groups]
    return tf.reshape(moved, tf.concat([[-1], shape[1:2], [per_group], pair], 0))


def _from_groups(spectrum, groups):
    """``_to_groups``' inverse: ``[F * groups, R, C]`` -> ``[F, R, groups * C]``."""
    if groups == 1:
        return spectrum
    pair, shape = _pair(spectrum), tf.shape(spectrum)
    per_group = spectrum.shape[2]
    split = tf.reshape(spectrum, tf.concat([[-1, groups], shape[1:2], [per_group], pair], 0))
    moved = tf.transpose(split, [0, 2, 1, 3] + [4] * len(pair))    # [F, R, groups, C]
    return tf.reshape(moved, tf.concat([[-1], shape[1:2], [groups * per_group], pair], 0))


def _is_elementwise(w_spectrum, groups):
    """Depthwise: one input channel per group (W' ``[F, 1, Cout]``)."""
    return groups > 1 and w_spectrum.shape[1] == 1


def _by_channel(spectrum, groups):
    """``[F, R, groups * m]`` -> ``[F, R, groups, m]``: each input channel's m outputs."""
    shape = tf.shape(spectrum)
    return tf.reshape(spectrum, tf.concat([shape[:2], [groups, spectrum.shape[2] // groups]], 0))


def _merge_channels(spectrum):
    """``[F, R, groups, m]`` -> ``[F, R, groups * m]``."""
    shape = tf.shape(spectrum)
    return tf.reshape(spectrum, tf.concat([shape[:2], [shape[2] * shape[3]]], 0))


# The three products per bin, on X [F, B, Cin], dY [F, B, Cout] and the weights'
# W' [F, Cin / groups, Cout]. tf32_operands: both spectra were stored rounded to TF32
# (``_tf32_spectra``).

def _forward_product(x_spectrum, w_spectrum, fft_size, kernel_size, allow_tf32=True,
                     tf32_operands=False, groups=1):
    """``Y = X · conj(W')`` ``[F, B, Cout]`` (the design's ``X · W^H``), per group."""
    if _is_elementwise(w_spectrum, groups):     # Y[f, b, c, m] = X[f, b, c] conj(W'[f, 0, c, m])
        return _merge_channels(x_spectrum[..., tf.newaxis]
                               * tf.math.conj(_by_channel(w_spectrum, groups)))
    return _from_groups(_spectral_product(
        _to_groups(x_spectrum, groups), _to_groups(w_spectrum, groups), fft_size, kernel_size,
        conjugate_b=True, allow_tf32=allow_tf32, tf32_operands=tf32_operands), groups)


def _input_gradient_product(dy_spectrum, w_spectrum, fft_size, kernel_size, allow_tf32=True,
                            tf32_operands=False, groups=1):
    """``dX = dY · W'^T`` ``[F, B, Cin]`` (the design's ``dY · W``), per group."""
    if _is_elementwise(w_spectrum, groups):     # dX[f, b, c] = sum_m dY[f, b, c, m] W'[f, 0, c, m]
        return tf.reduce_sum(_by_channel(dy_spectrum, groups) * _by_channel(w_spectrum, groups),
                             axis=-1)
    return _from_groups(_spectral_product(
        _to_groups(dy_spectrum, groups), _to_groups(w_spectrum, groups), fft_size, kernel_size,
        transpose_b=True, allow_tf32=allow_tf32, tf32_operands=tf32_operands), groups)


def _weight_gradient_product(x_spectrum, dy_spectrum, fft_size, allow_tf32=True,
                             tf32_operands=False, groups=1):
    """``dW' = X^T · conj(dY)`` ``[F, Cin / groups, Cout]`` (the transpose of the design's
    ``dY^H · X``), per group: the weight gradient's spectrum in the weights' own layout."""
    if groups > 1 and x_spectrum.shape[2] == groups:
        # Depthwise: dW'[f, 0, c, m] = sum_b X[f, b, c] conj(dY[f, b, c, m]).
        return _merge_channels(tf.reduce_sum(
            x_spectrum[..., tf.newaxis] * tf.math.conj(_by_channel(dy_spectrum, groups)),
            axis=1, keepdims=True))
    return _from_groups(_spectral_product(
        _to_groups(x_spectrum, groups), _to_groups(dy_spectrum, groups), fft_size,
        transpose_a=True, conjugate_b=True, allow_tf32=allow_tf32, tf32_operands=tf32_operands),
        groups)


def _run_time_geometry(x, data_format, k_h, k_w, padding):
    """``conv_geometry`` as int32 tensors, for an input whose height or width is unknown.

    The sizes are computed in the graph from ``tf.shape(x)``; under XLA they fold to constants
    when the program is compiled for a concrete shape, which is all the ops' size inputs need.
    The frame is the smallest allowed size that is large enough (as ``conv_geometry``'s); inputs
    needing more than ``MAX_FFT_SIZE`` get that op's own error for the frame size they would need.
    """
    padding = check_padding(padding)
    shape = tf.shape(x, out_type=tf.int32)
    in_h, in_w = (shape[1], shape[2]) if data_format == "NHWC" else (shape[2], shape[3])
    if padding == "VALID":
        out_h, out_w, pad_top, pad_left = in_h - k_h + 1, in_w - k_w + 1, 0, 0
        need = tf.maximum(tf.maximum(in_h, in_w), max(k_h, k_w))
    else:
        out_h, out_w, pad_top, pad_left = in_h, in_w, (k_h - 1) // 2, (k_w - 1) // 2
        need = tf.maximum(in_h + k_h - 1, in_w + k_w - 1)
    # The allowed sizes and then twice the largest frame: the first one >= need.
    frames = tf.constant(FFT_SIZES + (2 * MAX_FFT_SIZE,), tf.int32)
    fft_size = tf.gather(frames, tf.reduce_sum(tf.cast(frames < need, tf.int32)))
    return ConvGeometry(out_h, out_w, pad_top, pad_left, fft_size), (in_h, in_w)


def run_plan(chosen, x, w, bias=None, activation="linear"):
    """Computes the convolution of ``x`` and ``w`` as ``chosen`` says, then adds ``bias``
    (``[Cout]`` or None) and applies ``activation`` (``ops.ACTIVATIONS``: "linear" or "relu").

    ``w`` is ``[kh, kw, Cin / groups, Cout]`` (a depthwise problem's filters reshaped so,
    ``conv.fft_depthwise_conv2d``). The FFT path computes the stride-1 convolution with the
    dilated kernel (``dilate_kernel``) and keeps every stride-th output (``subsample``); where
    ``cost_model.fuses_epilogue`` says so, its inverse transform adds the bias and applies the
    activation as it writes the output, and the transform of the output's gradient applies the
    activation's derivative as it reads it (bias and activation commute with the subsampling).
    """
    problem = chosen.problem
    if problem.no_channels:   # whatever the plan: nothing to compute
        return apply_epilogue(_without_channels(x, w, problem), bias, activation, problem)
    if chosen.algorithm == "spatial":
        return apply_epilogue(_spatial_conv(x, w, problem), bias, activation, problem)
    if (bias is None and activation == "linear") or not cost_model.fuses_epilogue(problem):
        return apply_epilogue(
            subsample(_stride_one_fft(chosen, x, dilate_kernel(w, problem.dilations)), x,
                      problem), bias, activation, problem)
    if bias is None:   # the op adds a bias: zeros, whose gradient nothing takes
        bias = tf.zeros([problem.out_channels], x.dtype)
    return subsample(_stride_one_fft(chosen, x, dilate_kernel(w, problem.dilations),
                                     Epilogue(bias, activation)), x, problem)


def apply_epilogue(y, bias, activation, problem):
    """``activation(y + bias)`` with TensorFlow's ops (``tf.nn.bias_add`` and ``tf.nn.relu``, the
    pattern TensorFlow fuses into its own convolution); ``bias`` None: none."""
    if bias is not None:
        y = tf.nn.bias_add(y, bias, data_format=problem.data_format)
    if activation == "relu":
        y = tf.nn.relu(y)
    return y


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """A layer's bias ``[Cout]`` and activation (``ops.ACTIVATIONS``), taken into the FFT path's
    transforms (``cost_model.fuses_epilogue``)."""
    bias: object
    activation: str


def _stride_one_fft(chosen, x, w, epilogue=None):
    """The stride-1 convolution of ``x`` with the (dilated) kernel ``w`` on the FFT path, and
    ``epilogue`` (an ``Epilogue`` or None) applied in its transforms."""
    problem = chosen.problem
    activation = None if epilogue is None else epilogue.activation
    bias = () if epilogue is None else (epilogue.bias,)
    kernel_size = (problem.dilated_k_h, problem.dilated_k_w)
    # The depthwise product takes the spectra as they are: none rounded to TF32, and no half
    # precision (TensorFlow's complex multiply has no half type).
    allow_tf32 = not problem.elementwise
    if chosen.config is None:   # sizes unknown while tracing: one frame, sized at run time
        geometry, image_size = _run_time_geometry(x, problem.data_format, kernel_size[0],
                                                  kernel_size[1], problem.padding)

        def run_time_conv(x, w, *bias, allow_tf32=allow_tf32):
            return _frequency_domain_conv(geometry, image_size, kernel_size, problem.data_format,
                                          allow_tf32, problem.groups, activation)(x, w, *bias)

        # No cost model here: float32 spectra only if forced (or depthwise).
        if ops.is_half(x.dtype) and (problem.half_spectra is False or problem.elementwise):
            return _in_float32(run_time_conv, x, w, *bias)
        return run_time_conv(x, w, *bias)
    config = chosen.config
    if config.spectra == "float32":
        wide = dataclasses.replace(config, spectra="native")
        return _in_float32(
            lambda x, w, *bias, allow_tf32: _run_config(wide, problem, x, w, bias, activation,
                                                        allow_tf32), x, w, *bias)
    return _run_config(config, problem, x, w, bias, activation, allow_tf32)


def dilate_kernel(w, dilations):
    """``w [kh, kw, I, O]`` with ``d - 1`` zeros between its taps along each axis: ``[(kh - 1)
    dh + 1, (kw - 1) dw + 1, I, O]``. Made of TensorFlow ops (a stack with zeros, a reshape, a
    slice per axis), whose gradient picks the taps back out of the dilated kernel's."""
    for axis, dilation in enumerate(dilations):
        if dilation == 1:
            continue
        taps = w.shape[axis]
        # [.., k, ..] -> [.., k, d, ..] (tap, then d - 1 zeros) -> [.., k d, ..] -> first (k-1) d + 1
        spaced = tf.stack([w] + [tf.zeros_like(w)] * (dilation - 1), axis=axis + 1)
        dims = w.shape.as_list()
        dims[axis] = taps * dilation
        spaced = tf.reshape(spaced, dims)
        w = spaced[(slice(None),) * axis + (slice(0, (taps - 1) * dilation + 1),)]
    return w


def subsample(y, x, problem):
    """The strided output from ``y``, the stride-1 output of the same padding with the dilated
    kernel: along each axis every stride-th value from ``first`` (``geometry.strided_axis``).
    ``tf.strided_slice``'s gradient spreads dy onto the stride grid, zeros between."""
    if problem.strides == (1, 1):
        return y
    h_axis, w_axis = _spatial_axes(problem.data_format)
    window = [slice(None)] * 4
    for axis, stride, k in ((h_axis, problem.strides[0], problem.dilated_k_h),
                            (w_axis, problem.strides[1], problem.dilated_k_w)):
        in_size = x.shape[axis]
        if in_size is not None:
            out, first, _ = strided_axis(in_size, k, stride, problem.padding)
        else:   # computed in the graph (folds to constants under XLA for a concrete shape)
            in_size = tf.shape(x)[axis]
            if problem.padding == "VALID":
                out, first = (in_size - k + stride) // stride, 0
            else:
                out = (in_size + stride - 1) // stride
                pad_total = tf.maximum((out - 1) * stride + k - in_size, 0)
                first = tf.maximum((k - 1) // 2 - pad_total // 2, 0)
        window[axis] = slice(first, first + (out - 1) * stride + 1, stride)
    return y[tuple(window)]


def _in_float32(conv, x, w, *bias):
    """``conv(x, w, *bias, allow_tf32=False)`` on float32 copies of half-precision ``x``, ``w``
    (and the bias), the result cast back: the float32 passes with FP32 products (TF32 would round
    the spectra to 10 bits again), so y is rounded once, and tf.cast's gradients round dx, dw (and
    the bias's) once. Under XLA the casts fuse into their neighbours."""
    return tf.cast(conv(tf.cast(x, tf.float32), tf.cast(w, tf.float32),
                        *(tf.cast(b, tf.float32) for b in bias), allow_tf32=False), x.dtype)


def _run_config(config, problem, x, w, bias=(), activation=None, allow_tf32=True):
    """The FFT path of ``config`` (sizes known) on ``x`` and the dilated kernel ``w``: the
    stride-1 convolution; with ``activation`` (not None), ``activation(. + bias[0])`` taken into
    its transforms (each tile's: bias and activation act on each output value alone)."""
    tiles, kernel_size = config.tiles, (problem.dilated_k_h, problem.dilated_k_w)
    if not tiles.tiled:
        geometry = ConvGeometry(tiles.out_h, tiles.out_w, tiles.pad_top, tiles.pad_left,
                                tiles.fft_size)
        return _spectral_conv(config, geometry, (problem.in_h, problem.in_w), kernel_size,
                              problem.data_format, allow_tf32, problem.groups,
                              activation)(x, w, *bias)
    # Each tile: a VALID convolution of [in_tile_h, in_tile_w] into [tile_h, tile_w].
    geometry = ConvGeometry(tiles.tile_h, tiles.tile_w, 0, 0, tiles.fft_size)
    y_tiles = _spectral_conv(config, geometry, (tiles.in_tile_h, tiles.in_tile_w), kernel_size,
                             problem.data_format, allow_tf32, problem.groups, activation)(
                                 cut_tiles(x, tiles, problem.data_format), w, *bias)
    return join_tiles(y_tiles, tiles, problem.data_format)


def _without_channels(x, w, problem):
    """The convolution of a problem with no input or no output channels (``Problem.no_channels``):
    zeros of the output's shape (a sum over no input channels) or an empty output, with zeros of
    ``x``'s and ``w``'s shapes as gradients (empty where they have no channels), as the definition
    gives them and ``tf.nn.conv2d`` where it accepts such a filter (TensorFlow's conv2d refuses one
    with no input channels, and oneDNN's CPU kernels one with no output channels).

    The zeros are sums over none of ``x``'s channels (and ``w``'s), so that the gradients follow
    from TensorFlow's, and the output is a computed tensor, never a constant of the graph: a bias
    added to a constant in NCHW (Keras' channels_first) fails in TensorFlow's constant folding.
    """
    def size(t, axis):   # static where known
        return t.shape[axis] if t.shape[axis] is not None else tf.shape(t)[axis]

    channel_axis = 3 if problem.data_format == "NHWC" else 1
    h_axis, w_axis = _spatial_axes(problem.data_format)
    none_of = [slice(None)] * 4
    none_of[channel_axis] = slice(0, 0)
    # The output's window of the input, every stride-th row and column: VALID [0, in - k + 1),
    # SAME [0, in) (k the dilated kernel's extent).
    for axis, k, stride in ((h_axis, problem.dilated_k_h, problem.strides[0]),
                            (w_axis, problem.dilated_k_w, problem.strides[1])):
        end = size(x, axis) - k + 1 if problem.padding == "VALID" else size(x, axis)
        none_of[axis] = slice(0, end, stride)
    # [B, Ho, Wo, 1] (NCHW: [B, 1, Ho, Wo]) zeros, plus w's sum over no channels (a scalar 0)
    zeros = (tf.reduce_sum(x[tuple(none_of)], axis=channel_axis, keepdims=True)
             + tf.reduce_sum(w[:, :, :0, :0]))
    shape = [size(zeros, axis) for axis in range(4)]
    shape[channel_axis] = problem.out_channels
    y = tf.broadcast_to(zeros, shape)
    # The static sizes of tf.nn.conv2d's output (those the slice above, with a size known only at
    # run time among its bounds, leaves unknown).
    static = x.shape.as_list()
    static[channel_axis] = problem.out_channels
    for axis, k, stride in ((h_axis, problem.dilated_k_h, problem.strides[0]),
                            (w_axis, problem.dilated_k_w, problem.strides[1])):
        if static[axis] is not None:
            static[axis] = strided_axis(static[axis], k, stride, problem.padding).out
    y.set_shape(static)
    return y


def _spatial_conv(x, w, problem):
    """``tf.nn.conv2d`` with the problem's strides, dilations and groups (implied by ``w``'s
    shape), or ``tf.nn.depthwise_conv2d`` for a depthwise problem."""
    data_format = problem.data_format
    if data_format == "NCHW" and problem.device == "CPU":
        # TensorFlow's CPU convolutions take NHWC only.
        x = tf.transpose(x, [0, 2, 3, 1])
        data_format = "NHWC"
    strides = [1, problem.strides[0], problem.strides[1], 1]
    if data_format == "NCHW":
        strides = [1, 1, problem.strides[0], problem.strides[1]]
    if planning.spatial_op(problem) == "depthwise_conv2d":
        # tf.nn.depthwise_conv2d's filters [kh, kw, C, multiplier] (w is [kh, kw, 1, C * m]).
        # With strides and dilations both above 1 it only warns, and its values are not the
        # convolution's (TensorFlow 2.21: off by the size of the outputs), and its GPU kernel
        # refuses unequal strides ("only supports equal length strides"), so tf.nn.conv2d with C
        # groups computes those (TensorFlow's CPU kernels have no gradient of a grouped
        # convolution without oneDNN, so on a CPU unequal strides stay with
        # tf.nn.depthwise_conv2d, which takes them with oneDNN; without it neither op does,
        # ``planning.spatial_refusal``).
        filters = tf.reshape(w, [problem.k_h, problem.k_w, problem.in_channels,
                                 problem.out_channels // problem.in_channels])
        y = tf.nn.depthwise_conv2d(x, filters, strides, problem.padding,
                                   data_format=data_format, dilations=problem.dilations)
    else:
        y = tf.nn.conv2d(x, w, strides, problem.padding, data_format=data_format,
                         dilations=list(problem.dilations))
    if data_format != problem.data_format:
        y = tf.transpose(y, [0, 3, 1, 2])
    return y


# ---------------------------------------------------------------------------------------------
# Tiles.

def _spatial_axes(data_format):
    return (1, 2) if data_format == "NHWC" else (2, 3)


def _reshape(x, dims):
    """``tf.reshape`` to ``dims`` with the batch (dims[0], maybe None) left to TensorFlow."""
    return tf.reshape(x, [-1] + [int(d) for d in dims[1:]])


def _overlapping_windows(x, axis, count, step, length):
    """Splits ``axis`` into ``count`` windows of ``length`` samples at stride ``step``.

    ``x``'s ``axis`` holds ``(count + blocks - 1) * step`` samples, ``blocks = ceil(length /
    step)``; it becomes two axes ``[count, length]``. Window ``i`` is the concatenation of block
    ``i`` with the start of the blocks after it.
    """
    dims = x.shape.as_list()
    blocks = -(-length // step)
    x = _reshape(x, dims[:axis] + [count + blocks - 1, step] + dims[axis + 1:])
    parts = []
    for j in range(blocks):
        take = min(step, length - j * step)
        parts.append(x[(slice(None),) * axis + (slice(j, j + count), slice(0, take))])
    return parts[0] if blocks == 1 else tf.concat(parts, axis + 1)


def cut_tiles(x, tiles, data_format):
    """Input ``[B, H, W, C]`` (NCHW: ``[B, C, H, W]``) -> overlapping input tiles
    ``[B * tiles_h * tiles_w, in_tile_h, in_tile_w, C]`` (NCHW: ``[.., C, in_tile_h, in_tile_w]``),
    tile ``(i, j)`` of image ``b`` at ``(b * tiles_h + i) * tiles_w + j``."""
    h_axis, w_axis = _spatial_axes(data_format)
    in_h, in_w = x.shape[h_axis], x.shape[w_axis]
    padded_h = (tiles.tiles_h - 1 + -(-tiles.in_tile_h // tiles.tile_h)) * tiles.tile_h
    padded_w = (tiles.tiles_w - 1 + -(-tiles.in_tile_w // tiles.tile_w)) * tiles.tile_w
    paddings = [[0, 0]] * 4
    paddings[h_axis] = [tiles.pad_top, padded_h - in_h - tiles.pad_top]
    paddings[w_axis] = [tiles.pad_left, padded_w - in_w - tiles.pad_left]
    x = tf.pad(x, paddings)
    x = _overlapping_windows(x, h_axis, tiles.tiles_h, tiles.tile_h, tiles.in_tile_h)
    x = _overlapping_windows(x, w_axis + 1, tiles.tiles_w, tiles.tile_w, tiles.in_tile_w)
    # NHWC [B, th, ith, tw, itw, C] -> [B, th, tw, ith, itw, C];
    # NCHW [B, C, th, ith, tw, itw] -> [B, th, tw, C, ith, itw].
    x = tf.transpose(x, [0, 1, 3, 2, 4, 5] if data_format == "NHWC" else [0, 2, 4, 1, 3, 5])
    return _reshape(x, [None] + x.shape.as_list()[3:])


def join_tiles(y, tiles, data_format):
    """Output tiles ``[B * tiles, tile_h, tile_w, C]`` (NCHW: ``[B * tiles, C, tile_h, tile_w]``),
    ordered as ``cut_tiles`` orders them -> the output ``[B, out_h, out_w, C]`` (or NCHW)."""
    channels = y.shape[3] if data_format == "NHWC" else y.shape[1]
    if data_format == "NHWC":
        y = _reshape(y, [None, tiles.tiles_h, tiles.tiles_w, tiles.tile_h, tiles.tile_w, channels])
        y = tf.transpose(y, [0, 1, 3, 2, 4, 5])     # [B, th, tile_h, tw, tile_w, C]
        y = _reshape(y, [None, tiles.tiles_h * tiles.tile_h, tiles.tiles_w * tiles.tile_w,
                         channels])
        return y[:, :tiles.out_h, :tiles.out_w, :]
    y = _reshape(y, [None, tiles.tiles_h, tiles.tiles_w, channels, tiles.tile_h, tiles.tile_w])
    y = tf.transpose(y, [0, 3, 1, 4, 2, 5])         # [B, C, th, tile_h, tw, tile_w]
    y = _reshape(y, [None, channels, tiles.tiles_h * tiles.tile_h, tiles.tiles_w * tiles.tile_w])
    return y[:, :, :tiles.out_h, :tiles.out_w]


# ---------------------------------------------------------------------------------------------
# The three passes.

def _unrecorded(*tensors):
    """``tensors`` as tensors that an active GradientTape does not watch.

    Eagerly, ``tf.custom_gradient`` runs the forward function with the caller's tapes still
    recording, so every op inside it is recorded too, and each tape keeps the spectra those ops
    made until it is done: in mode "recompute" every piece's, and in both modes those of an
    attempt that the allocator refused half-way (the eager fallback could then not free them).
    So the forward's ops work on unwatched copies (`tf.stop_gradient`). What a tape needs from
    them is given explicitly: the custom gradient of the whole convolution, and in mode "keep" a
    second-order gradient that derives the backward pass again from x and w
    (``_first_order_from_kept``). Inside a tf.function nothing is held, and the copies are left
    out.
    """
    if tf.executing_eagerly():
        return tuple(tf.stop_gradient(t) for t in tensors)
    return tensors


def _spectral_conv(config, geometry, image_size, kernel_size, data_format, allow_tf32=True,
                   groups=1, activation=None):
    if config.memory == "keep":
        return _frequency_domain_conv(geometry, image_size, kernel_size, data_format, allow_tf32,
                                      groups, activation)
    return _recomputing_conv(geometry, image_size, kernel_size, data_format, config.chunks,
                             allow_tf32, groups, activation)


# A layer's bias and activation in the transforms (``Epilogue``, ``cost_model.fuses_epilogue``):
# with ``activation`` not None, the functions below take ``(x, w, bias)`` and compute
# ``activation(conv(x, w) + bias)``; the inverse transform of the output applies both, the
# transform of its gradient dy the activation's derivative (from the output y), and the bias's
# gradient is bin 0 of that spectrum, each image's sum, summed over the batch.

def _output(y_spectrum, size, out_h, out_w, data_format, activation, bias):
    """``irfft2d`` of the output's spectrum (``[F, B, Cout]``), window at 0; with ``activation``,
    ``activation(. + bias[0])`` as it writes."""
    if activation is None:
        return ops.irfft2d(y_spectrum, size, out_h, out_w, 0, 0, data_format)
    return ops.irfft2d_bias_activation(y_spectrum, bias[0], size, out_h, out_w, 0, 0,
                                       data_format, activation)


def _output_gradient_spectrum(dy, y, size, data_format, activation, round_to_tf32):
    """``[F, B, Cout]``: ``rfft2d`` of dy, or with a ReLU of ``dy * relu'(z)`` (from the output
    ``y``), the gradient of the convolution's own output."""
    if activation in (None, "linear"):
        return ops.rfft2d(dy, size, 0, 0, data_format, round_to_tf32=round_to_tf32)
    return ops.rfft2d_activation_gradient(dy, y, size, 0, 0, data_format, activation)


def _bias_gradient(dy_spectrum, size):
    """``[Cout]``: the sum over images and pixels of the gradient whose spectrum is
    ``dy_spectrum``: bin 0 is each image's sum (a half-precision spectrum's divided by S^2)."""
    dc = dy_spectrum[0]                                        # [B, Cout] (half: [B, Cout, 2])
    if not ops.is_half(dc.dtype):
        return tf.reduce_sum(tf.math.real(dc), axis=0)
    area = tf.cast(size, tf.float32) * tf.cast(size, tf.float32)
    return tf.cast(tf.reduce_sum(tf.cast(dc[..., 0], tf.float32), axis=0) * area, dc.dtype)


def _frequency_domain_conv(geometry, image_size, kernel_size, data_format, allow_tf32=True,
                           groups=1, activation=None):
    """Mode "keep": X and W of the forward pass are kept for the backward pass. ``allow_tf32``
    False: FP32 products (complex spectra) whatever TensorFlow's TF32 switch says. The spectra
    are rounded to TF32 where ``_tf32_spectra`` says (the kept X and W feed only products too).
    ``activation``: see ``_output``."""
    size, pad_top, pad_left = geometry.fft_size, geometry.pad_top, geometry.pad_left

    def forward_spectra(x, w):
        # x_spectrum [F, B, Cin]; w_spectrum [F, Cin, Cout].
        tf32 = _tf32_spectra(x.dtype, allow_tf32)
        return (ops.rfft2d(x, size, pad_top, pad_left, data_format, round_to_tf32=tf32),
                _weight_spectrum(w, size, kernel_size, round_to_tf32=tf32))

    def backward(dy, x_spectrum, w_spectrum, y):
        tf32 = _tf32_spectra(dy.dtype, allow_tf32)
        dy_spectrum = _output_gradient_spectrum(dy, y, size, data_format, activation,
                                                tf32)                          # [F, B, Cout]
        dx_spectrum = _input_gradient_product(dy_spectrum, w_spectrum, size, kernel_size,
                                              allow_tf32, tf32, groups)        # [F, B, Cin]
        dx = ops.irfft2d(dx_spectrum, size, image_size[0], image_size[1], pad_top, pad_left,
                         data_format)
        dw_spectrum = _weight_gradient_product(x_spectrum, dy_spectrum, size,
                                               allow_tf32, tf32, groups)  # [F, Cin / g, Cout]
        dw = _weight_gradient(dw_spectrum, size, kernel_size)
        if activation is None:
            return dx, dw
        return dx, dw, _bias_gradient(dy_spectrum, size)

    @tf.custom_gradient
    def conv(x, w, *bias):
        x_spectrum, w_spectrum = forward_spectra(*_unrecorded(x, w))
        y_spectrum = _forward_product(x_spectrum, w_spectrum, size, kernel_size, allow_tf32,
                                      _tf32_spectra(x.dtype, allow_tf32), groups)  # [F, B, Cout]
        y = _output(y_spectrum, size, geometry.out_h, geometry.out_w, data_format, activation,
                    _unrecorded(*bias))

        def grad(dy):
            if not tf.executing_eagerly():   # the spectra are x's and w's in the graph
                return backward(dy, x_spectrum, w_spectrum, y)
            # The activation's derivative is constant almost everywhere (ReLU's 0 or 1), so a
            # second-order gradient takes y as a constant.
            return _first_order_from_kept(
                lambda dy: backward(dy, x_spectrum, w_spectrum, y),
                lambda dy, x, w: backward(dy, *forward_spectra(x, w), y), dy, x, w)

        return y, grad

    return conv


def _first_order_from_kept(from_kept, from_scratch, dy, x, w):
    """Eagerly: the gradients (``dx``, ``dw`` and, with an epilogue, the bias's) computed by
    ``from_kept(dy)`` from the forward's kept (unrecorded) spectra, as a function of
    ``(dy, x, w)`` for a tape that differentiates them: its gradient derives them again with
    ``from_scratch(dy, x, w)``, every op recorded."""

    @tf.custom_gradient
    def first_order(dy, x, w):
        gradients = from_kept(*_unrecorded(dy))

        def second_order(*output_gradients):
            with tf.GradientTape() as tape:
                tape.watch([dy, x, w])
                again = from_scratch(dy, x, w)
            return tape.gradient(again, [dy, x, w], output_gradients=list(output_gradients),
                                 unconnected_gradients=tf.UnconnectedGradients.ZERO)

        return gradients, second_order

    return first_order(dy, x, w)


def _pieces(t, count):
    """``count`` consecutive slices of ``t``'s batch (the last ones may be empty)."""
    if count == 1:
        return [t]
    batch = t.shape[0]
    if batch is None:
        batch = tf.shape(t)[0]
        step = (batch + count - 1) // count
        return [t[tf.minimum(i * step, batch):tf.minimum((i + 1) * step, batch)]
                for i in range(count)]
    step = -(-batch // count)
    return [t[min(i * step, batch):min((i + 1) * step, batch)] for i in range(count)]


def _recomputing_conv(geometry, image_size, kernel_size, data_format, chunks, allow_tf32=True,
                      groups=1, activation=None):
    """Mode "recompute": no spectrum kept between the passes; the batch in ``chunks`` pieces.

    Each piece's ops are made to wait for the previous piece's result (control dependencies), so
    only one piece's spectra are alive at a time; the weight-gradient spectrum ``[F, Cin, Cout]``
    is summed over the pieces and inverted once (and the bias's gradient over the pieces).
    ``allow_tf32``, the spectra's TF32 rounding and ``activation`` as
    ``_frequency_domain_conv``'s.
    """
    size, pad_top, pad_left = geometry.fft_size, geometry.pad_top, geometry.pad_left

    def weight_spectrum(w):
        return _weight_spectrum(w, size, kernel_size,
                                round_to_tf32=_tf32_spectra(w.dtype, allow_tf32))  # [F, Cin, Cout]

    @tf.custom_gradient
    def conv(x, w, *bias):
        tf32 = _tf32_spectra(x.dtype, allow_tf32)
        # The backward pass transforms the original x and w again, so a tape that differentiates
        # the gradient (higher order) sees them; the forward's own ops need not be recorded.
        x_forward, w_forward = _unrecorded(x, w)
        bias_forward = _unrecorded(*bias)
        w_spectrum = weight_spectrum(w_forward)
        outputs = []
        for piece in _pieces(x_forward, chunks):
            with tf.control_dependencies(outputs[-1:]):
                x_spectrum = ops.rfft2d(piece, size, pad_top, pad_left, data_format,
                                        round_to_tf32=tf32)                    # [F, b, Cin]
            y_spectrum = _forward_product(x_spectrum, w_spectrum, size, kernel_size,
                                          allow_tf32, tf32, groups)            # [F, b, Cout]
            outputs.append(_output(y_spectrum, size, geometry.out_h, geometry.out_w,
                                   data_format, activation, bias_forward))
        y = outputs[0] if chunks == 1 else tf.concat(outputs, 0)

        def grad(dy):
            w_spectrum = weight_spectrum(w)
            dxs, dw_spectrum, bias_gradient = [], None, 0
            for piece, dy_piece, y_piece in zip(_pieces(x, chunks), _pieces(dy, chunks),
                                                _pieces(y, chunks)):
                with tf.control_dependencies([dw_spectrum] if dw_spectrum is not None else []):
                    dy_spectrum = _output_gradient_spectrum(
                        dy_piece, y_piece, size, data_format, activation, tf32)  # [F, b, Cout]
                if activation is not None:
                    bias_gradient += _bias_gradient(dy_spectrum, size)
                dx_spectrum = _input_gradient_product(dy_spectrum, w_spectrum, size,
                                                      kernel_size, allow_tf32, tf32,
                                                      groups)                  # [F, b, Cin]
                dxs.append(ops.irfft2d(dx_spectrum, size, image_size[0], image_size[1], pad_top,
                                       pad_left, data_format))
                with tf.control_dependencies(dxs[-1:]):
                    x_spectrum = ops.rfft2d(piece, size, pad_top, pad_left, data_format,
                                            round_to_tf32=tf32)
                # [F, Cin / groups, Cout], summed over the pieces (the sum of products, not
                # rounded)
                piece_dw = _weight_gradient_product(x_spectrum, dy_spectrum, size, allow_tf32,
                                                    tf32, groups)
                dw_spectrum = piece_dw if dw_spectrum is None else dw_spectrum + piece_dw
            dx = dxs[0] if chunks == 1 else tf.concat(dxs, 0)
            dw = _weight_gradient(dw_spectrum, size, kernel_size)
            return (dx, dw) if activation is None else (dx, dw, bias_gradient)

        return y, grad

    return conv

"""``tf_fftconv.explain``: what ``fft_conv2d`` does for a layer or a shape, and why, in words (the
plan that ``planning`` makes, as ``problem.Plan.describe`` words it)."""

from tf_fftconv.errors import invalid_argument as _invalid
from tf_fftconv.planning import make_problem, plan


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

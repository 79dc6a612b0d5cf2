"""A float64 NumPy reference of tf.nn.conv2d and tf.nn.depthwise_conv2d with strides, dilations
and groups, and of both gradients, written tap by tap from the definition (TensorFlow's SAME
padding: ``ceil(H / s)`` outputs, ``pad_total // 2`` before the image)."""

import numpy as np


def _axis(size, k, stride, dilation, padding):
    """(out, pad_before, pad_after) of one axis."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


def conv2d(x, w, dy, strides, padding, dilations, groups):
    """NHWC ``x [B, H, W, Cin]``, ``w [kh, kw, Cin / groups, Cout]`` and ``dy`` (the output's
    cotangent) -> ``(y, dx, dw)``, all float64."""
    x, w, dy = (np.asarray(t, np.float64) for t in (x, w, dy))
    batch, height, width, in_channels = x.shape
    k_h, k_w, group_in, out_channels = w.shape
    group_out = out_channels // groups
    (out_h, top, bottom), (out_w, left, right) = (
        _axis(height, k_h, strides[0], dilations[0], padding),
        _axis(width, k_w, strides[1], dilations[1], padding))
    padded = np.pad(x, [(0, 0), (top, bottom), (left, right), (0, 0)])
    padded = padded.reshape(padded.shape[:3] + (groups, group_in))
    taps = w.reshape(k_h, k_w, group_in, groups, group_out)
    dy_groups = dy.reshape(batch, out_h, out_w, groups, group_out)
    y = np.zeros((batch, out_h, out_w, groups, group_out))
    dpadded = np.zeros_like(padded)
    dw = np.zeros_like(taps)
    for i in range(k_h):
        for j in range(k_w):
            rows = slice(i * dilations[0], i * dilations[0] + (out_h - 1) * strides[0] + 1,
                         strides[0])
            cols = slice(j * dilations[1], j * dilations[1] + (out_w - 1) * strides[1] + 1,
                         strides[1])
            window = padded[:, rows, cols]                      # [B, Ho, Wo, G, Cin / G]
            y += np.einsum("bhwgc,cgo->bhwgo", window, taps[i, j])
            dpadded[:, rows, cols] += np.einsum("bhwgo,cgo->bhwgc", dy_groups, taps[i, j])
            dw[i, j] += np.einsum("bhwgc,bhwgo->cgo", window, dy_groups)
    dx = dpadded.reshape(dpadded.shape[:3] + (in_channels,))[:, top:top + height,
                                                             left:left + width]
    return (y.reshape(batch, out_h, out_w, out_channels), dx,
            dw.reshape(k_h, k_w, group_in, out_channels))


def depthwise_conv2d(x, w, dy, strides, padding, dilations):
    """``w [kh, kw, C, multiplier]``: output channel ``c * multiplier + m`` (TensorFlow's)."""
    k_h, k_w, channels, multiplier = w.shape
    y, dx, dw = conv2d(x, np.reshape(w, [k_h, k_w, 1, channels * multiplier]), dy, strides,
                       padding, dilations, channels)
    return y, dx, dw.reshape(w.shape)


def of_case(case, x, w, dy):
    """``(y, dx, dw)`` of a ``random_case`` (``case["depthwise"]``: tf.nn.depthwise_conv2d's)."""
    if case.get("depthwise", False):
        return depthwise_conv2d(x, w, dy, case["strides"], case["padding"], case["dilations"])
    return conv2d(x, w, dy, case["strides"], case["padding"], case["dilations"], case["groups"])


def output_shape(x_shape, k_h, k_w, out_channels, strides, padding, dilations):
    batch, height, width, _ = x_shape
    return (batch, _axis(height, k_h, strides[0], dilations[0], padding)[0],
            _axis(width, k_w, strides[1], dilations[1], padding)[0], out_channels)


def random_case(rng, depthwise=False):
    """A convolution drawn from the space the tests cover: stride 1-4 and dilation 1-8 per axis
    (often equal), groups 1, 2 or 4 (or depthwise, with a multiplier 1-3), either padding and
    data format, and the argument forms tf.nn.conv2d takes. Sizes stay small enough for CPU
    tests: the dilated kernel's extent is at most 25, the image at most 36."""
    def pair(low, high):
        first = int(rng.integers(low, high + 1))
        return (first, first) if rng.random() < 0.6 else (first, int(rng.integers(low, high + 1)))

    strides, dilations = pair(1, 4), pair(1, 8)
    k_h, k_w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    # Dilation of a one-tap axis changes nothing; keep the extent within 25.
    dilations = tuple(min(d, 24 // max(k - 1, 1)) for d, k in zip(dilations, (k_h, k_w)))
    span_h, span_w = (k_h - 1) * dilations[0] + 1, (k_w - 1) * dilations[1] + 1
    padding = "SAME" if rng.random() < 0.5 else "VALID"
    low_h, low_w = (1, 1) if padding == "SAME" else (span_h, span_w)
    height = int(rng.integers(low_h, max(low_h, 12) + 12))
    width = int(rng.integers(low_w, max(low_w, 12) + 12))
    groups = int(rng.choice([1, 2, 4]))
    if depthwise:
        channels, multiplier = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        w_shape = (k_h, k_w, channels, multiplier)
    else:
        channels = groups * int(rng.integers(1, 4))
        w_shape = (k_h, k_w, channels // groups, groups * int(rng.integers(1, 4)))
    return dict(x_shape=(int(rng.integers(1, 4)), height, width, channels), w_shape=w_shape,
                strides=strides, dilations=dilations, padding=padding, groups=groups,
                data_format="NHWC" if rng.random() < 0.5 else "NCHW")


def argument_form(rng, pair, data_format):
    """``pair`` (h, w) as one of the forms tf.nn.conv2d takes: an int (equal pair), a list of 1,
    2 or 4 integers."""
    forms = [list(pair)]
    if pair[0] == pair[1]:
        forms += [pair[0], [pair[0]]]
    forms.append([1, pair[0], pair[1], 1] if data_format == "NHWC" else [1, 1, pair[0], pair[1]])
    return forms[int(rng.integers(len(forms)))]

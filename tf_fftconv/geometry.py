"""Sizes of a stride-1 convolution computed in FFT frames: one frame per image, or tiles.

Everything here is plain Python on static sizes; ``conv.py`` turns it into TensorFlow ops.

Single frame: the image sits at ``(pad_top, pad_left)`` in an ``S x S`` frame of zeros, and the
circular correlation with the kernel never wraps around as long as ``S >= H + pad_total`` and
``S >= k`` (``conv_geometry``).

Tiles (overlap-save): the output is cut into ``tiles_h x tiles_w`` tiles of ``tile_h x tile_w``
outputs. Output tile ``(i, j)`` needs input rows ``[i tile_h, i tile_h + tile_h + k_h - 1)`` of the
zero-padded input (SAME's padding before, zeros after) and the same for columns; that input tile is
a VALID convolution of its own, in a frame ``S >= tile + k - 1`` (``TileGeometry``). Input tiles
overlap by ``k - 1``; output tiles do not, so they are put side by side and cropped to the output.
"""

import collections
import dataclasses
import math

from tf_fftconv.errors import invalid_argument as _invalid

# The largest fft_size of the ops: kMaxFftSize in include/fftconv_params.h (tests/test_conv.py checks).
MAX_FFT_SIZE = 128
# Every fft_size the ops take: the powers of two in [2, 128], 3 * 2^k in [6, 96] and 5 * 2^k in
# [10, 80] (kFftSizes in include/fftconv_params.h; tests/test_conv.py checks). A 3 * 2^k or 5 * 2^k frame
# carries one radix-3 or radix-5 stage; it saves bins where a padded image barely overflows a power
# of two (38 samples: 40 * 21 bins instead of 48 * 25 or 64 * 33).
FFT_SIZES = (2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128)
# The smallest frame the cost model tiles with: in smaller ones the k - 1 overlap of the tiles
# outweighs the output (an explicit fft_size may still ask for one).
SMALLEST_TILE_FFT_SIZE = 8

ConvGeometry = collections.namedtuple(
    "ConvGeometry", ["out_h", "out_w", "pad_top", "pad_left", "fft_size"])
OutputGeometry = collections.namedtuple(
    "OutputGeometry", ["out_h", "out_w", "pad_top", "pad_left", "need_h", "need_w"])
# One axis of a strided convolution as a subsample of the stride-1 one (``strided_axis``): ``out``
# outputs, the first at index ``first`` of the stride-1 output, then every ``stride``-th.
StridedAxis = collections.namedtuple("StridedAxis", ["out", "first", "stride"])


def next_power_of_two(n):
    size = 2
    while size < n:
        size *= 2
    return size


def next_fft_size(n):
    """The smallest fft_size >= n; past the largest, the next power of two (for the messages)."""
    return next((s for s in FFT_SIZES if s >= n), next_power_of_two(n))


def check_padding(padding):
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise _invalid("padding must be \"VALID\" or \"SAME\", got %r" % (padding,))
    return padding


def output_geometry(in_h, in_w, k_h, k_w, padding):
    """Output size, the padding before the image, and the frame each axis needs for one frame.

    SAME pads ``(k - 1) // 2`` before and the rest after, as ``tf.nn.conv2d`` does; either way the
    frame must hold ``out + k - 1`` samples per axis (the padded input).
    """
    padding = check_padding(padding)
    if min(k_h, k_w) < 1 or min(in_h, in_w) < 0:
        raise _invalid("kernel sizes must be >= 1 and input sizes >= 0, got input %dx%d and "
                       "kernel %dx%d" % (in_h, in_w, k_h, k_w))
    if padding == "VALID":
        out_h, out_w, pad_top, pad_left = in_h - k_h + 1, in_w - k_w + 1, 0, 0
        if out_h < 0 or out_w < 0:
            raise _invalid("with VALID padding the kernel (%dx%d) must not be larger than the "
                           "input (%dx%d)" % (k_h, k_w, in_h, in_w))
    else:
        out_h, out_w, pad_top, pad_left = in_h, in_w, (k_h - 1) // 2, (k_w - 1) // 2
    return OutputGeometry(out_h, out_w, pad_top, pad_left,
                          max(out_h + k_h - 1, k_h), max(out_w + k_w - 1, k_w))


def integer(value):
    """A Python int from an integer (NumPy's too); None for bools, floats and the rest."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return None
    return value.__index__()


def spatial_pair(value, name, data_format="NHWC"):
    """``(height, width)`` of ``tf.nn.conv2d``'s ``strides`` or ``dilations``: an integer, or a
    list of 1, 2 or 4 integers (4: in ``data_format``'s order, 1 for batch and channels), each
    >= 1."""
    single = integer(value)
    if single is not None:
        values = [single]
    else:
        try:
            values = [integer(v) for v in value]
        except TypeError:
            values = [None]
    if None in values or len(values) not in (1, 2, 4):
        raise _invalid("%s must be an integer or a list of 1, 2 or 4 integers, got %r"
                       % (name, value))
    if len(values) == 4:
        h_axis, w_axis = (1, 2) if data_format == "NHWC" else (2, 3)
        others = [v for axis, v in enumerate(values) if axis not in (h_axis, w_axis)]
        if others != [1, 1]:
            raise _invalid("%s must be 1 in the batch and channel dimensions (%s), got %r"
                           % (name, data_format, value))
        values = [values[h_axis], values[w_axis]]
    if len(values) == 1:
        values = values * 2
    if min(values) < 1:
        raise _invalid("%s must be >= 1, got %r" % (name, value))
    return tuple(values)


def dilated_size(k, dilation):
    """The extent of a ``k``-tap kernel with ``dilation - 1`` zeros between its taps."""
    return (k - 1) * dilation + 1


def strided_axis(in_size, k_dilated, stride, padding):
    """One axis of a convolution with ``stride``, as the stride-1 one of the same padding
    subsampled (``StridedAxis``); ``k_dilated`` is the kernel's extent (``dilated_size``).

    TensorFlow's SAME with a stride outputs ``ceil(H / s)`` values and pads
    ``pad_total = max((ceil(H / s) - 1) s + k - H, 0)``, ``pad_total // 2`` before the image:
    output ``j`` reads the window at input ``j s - pad_total // 2``. The stride-1 SAME output
    ``i`` reads the window at ``i - (k - 1) // 2``, so output ``j`` is the stride-1 output
    ``first + j s`` with ``first = (k - 1) // 2 - pad_total // 2``, which lies in ``[0, H)``
    because ``pad_total <= k - 1``. VALID: ``ceil((H - k + 1) / s)`` outputs from ``first = 0``.
    """
    padding = check_padding(padding)
    if padding == "VALID":
        return StridedAxis(max(-(-(in_size - k_dilated + 1) // stride), 0), 0, stride)
    out = -(-in_size // stride)
    pad_total = max((out - 1) * stride + k_dilated - in_size, 0)
    return StridedAxis(out, max((k_dilated - 1) // 2 - pad_total // 2, 0), stride)


def conv_geometry(in_h, in_w, k_h, k_w, padding, fft_size=None, max_fft_size=MAX_FFT_SIZE):
    """Output size, padding offsets and FFT frame of a stride-1 convolution in one frame.

    The frame ``S`` is the smallest allowed size (``FFT_SIZES``: a power of two, 3 * 2^k or
    5 * 2^k) that holds the padded input and the kernel, so the circular correlation computed by
    the FFT never wraps around: ``S >= H + pad_total`` and ``S >= k``. (The cost model agrees: a
    single frame's every op scales with its bins, and the smaller frame has the fewer, even with
    the radix-3 or radix-5 transform's extra work.) ``max_fft_size=None`` lifts the limit of the
    custom ops and accepts any explicit ``fft_size`` that is large enough (the ``tf.signal``
    reference transforms any length).
    Images needing more than the largest frame are what ``tile_geometry`` is for.
    """
    out = output_geometry(in_h, in_w, k_h, k_w, padding)
    need = max(out.need_h, out.need_w)
    if fft_size is None:
        fft_size = next_fft_size(need)
        if max_fft_size is not None and fft_size > max_fft_size:
            raise _invalid(
                "input %dx%d with kernel %dx%d (%s) needs a single FFT frame of %d > %d, the "
                "largest supported; fft_conv2d tiles such images"
                % (in_h, in_w, k_h, k_w, check_padding(padding), fft_size, max_fft_size))
    else:
        fft_size = int(fft_size)
        check_fft_size(fft_size, max_fft_size)
        if fft_size < need:
            raise _invalid("fft_size %d is too small for input %dx%d with kernel %dx%d (%s) in "
                           "one frame: needs >= %d to avoid wrap-around"
                           % (fft_size, in_h, in_w, k_h, k_w, check_padding(padding), need))
    return ConvGeometry(out.out_h, out.out_w, out.pad_top, out.pad_left, fft_size)


def check_fft_size(fft_size, max_fft_size=MAX_FFT_SIZE):
    """The ops' check (ValidateFftSize in cc/fftconv_shapes.h), with the same message;
    ``max_fft_size=None`` skips it."""
    if max_fft_size is not None and fft_size not in FFT_SIZES:
        threes, fives = ([s for s in FFT_SIZES if s % m == 0] for m in (3, 5))
        raise _invalid("fft_size must be a power of two in [2, %d], 3 * 2^k in [%d, %d] or 5 * 2^k "
                       "in [%d, %d] (one of %s), got %d"
                       % (MAX_FFT_SIZE, threes[0], threes[-1], fives[0], fives[-1],
                          ", ".join(map(str, FFT_SIZES)), fft_size))


@dataclasses.dataclass(frozen=True)
class TileGeometry:
    """How the output is cut into tiles, each computed in its own ``S x S`` frame.

    ``tiles_h * tiles_w == 1`` is the single frame: the image is placed in the frame at the
    padding offsets, with no copy. Otherwise the padded input is cut into overlapping input tiles
    ``[tile_h + k_h - 1, tile_w + k_w - 1]``, which join the batch dimension.
    """

    fft_size: int
    out_h: int
    out_w: int
    pad_top: int
    pad_left: int
    k_h: int
    k_w: int
    tile_h: int      # output rows per tile
    tile_w: int
    tiles_h: int     # tiles per image along each axis
    tiles_w: int

    @property
    def tiles(self):
        return self.tiles_h * self.tiles_w

    @property
    def tiled(self):
        return self.tiles > 1

    @property
    def in_tile_h(self):
        return self.tile_h + self.k_h - 1

    @property
    def in_tile_w(self):
        return self.tile_w + self.k_w - 1

    @property
    def bins(self):
        return self.fft_size * (self.fft_size // 2 + 1)

    def describe(self):
        if not self.tiled:
            return "one %dx%d frame per image" % (self.fft_size, self.fft_size)
        return ("%dx%d tiles of %dx%d outputs per image, each in a %dx%d frame"
                % (self.tiles_h, self.tiles_w, self.tile_h, self.tile_w, self.fft_size,
                   self.fft_size))


def _balanced_tiles(out, largest_tile):
    """Fewest tiles of at most ``largest_tile`` outputs, then the smallest equal tile for them."""
    if out == 0:
        return largest_tile, 1
    count = math.ceil(out / largest_tile)
    return math.ceil(out / count), count


def tile_geometry(in_h, in_w, k_h, k_w, padding, fft_size, tile=None):
    """The tiling of a convolution in ``fft_size`` frames (``tile``: output tile side, or None).

    Without ``tile`` the tiles are as few as the frame allows, then made equal, which keeps the
    copied input small: ``tile = ceil(out / ceil(out / (S - k + 1)))`` per axis. A frame that holds
    the whole padded input gives the single frame.
    """
    out = output_geometry(in_h, in_w, k_h, k_w, padding)
    check_fft_size(fft_size)
    if fft_size < max(k_h, k_w):
        raise _invalid("fft_size %d is too small for kernel %dx%d: a frame must hold the kernel"
                       % (fft_size, k_h, k_w))
    if tile is None:
        if out.need_h <= fft_size and out.need_w <= fft_size:
            return TileGeometry(fft_size, out.out_h, out.out_w, out.pad_top, out.pad_left, k_h,
                                k_w, max(out.out_h, 1), max(out.out_w, 1), 1, 1)
        tile_h, tiles_h = _balanced_tiles(out.out_h, fft_size - k_h + 1)
        tile_w, tiles_w = _balanced_tiles(out.out_w, fft_size - k_w + 1)
    else:
        tile = int(tile)
        if tile < 1:
            raise _invalid("tile must be a positive integer, got %d" % tile)
        if tile + max(k_h, k_w) - 1 > fft_size:
            raise _invalid("tile %d with kernel %dx%d needs a frame of at least %d, but fft_size "
                           "is %d" % (tile, k_h, k_w, tile + max(k_h, k_w) - 1, fft_size))
        tile_h, tile_w = min(tile, max(out.out_h, 1)), min(tile, max(out.out_w, 1))
        tiles_h, tiles_w = (max(math.ceil(out.out_h / tile_h), 1),
                            max(math.ceil(out.out_w / tile_w), 1))
    return TileGeometry(fft_size, out.out_h, out.out_w, out.pad_top, out.pad_left, k_h, k_w,
                        tile_h, tile_w, tiles_h, tiles_w)


def tile_fft_size(tile, k_h, k_w):
    """The smallest frame for an explicit output tile side."""
    size = next_fft_size(tile + max(k_h, k_w) - 1)
    if size > MAX_FFT_SIZE:
        raise _invalid("tile %d with kernel %dx%d needs a frame of %d > %d, the largest supported"
                       % (tile, k_h, k_w, size, MAX_FFT_SIZE))
    return size

"""Float64 NumPy references for the three ops (the test oracle)."""

import numpy as np


def to_nchw(x, data_format):
    return x if data_format == "NCHW" else np.transpose(x, (0, 3, 1, 2))


def from_nchw(x, data_format):
    return x if data_format == "NCHW" else np.transpose(x, (0, 2, 3, 1))


def rfft2d(x, fft_size, offset_h=0, offset_w=0, data_format="NCHW"):
    """Spectrum [bins, B, C] of x placed in an S x S frame of zeros."""
    x = to_nchw(np.asarray(x, np.float64), data_format)
    batch, channels, height, width = x.shape
    frame = np.zeros((batch, channels, fft_size, fft_size))
    frame[:, :, offset_h:offset_h + height, offset_w:offset_w + width] = x
    spectrum = np.fft.rfft2(frame)                       # [B, C, S, S/2 + 1]
    return spectrum.reshape(batch, channels, fft_size * (fft_size // 2 + 1)).transpose(2, 0, 1)


def irfft2d(spectrum, fft_size, out_h, out_w, offset_h=0, offset_w=0, data_format="NCHW"):
    spectrum = np.asarray(spectrum, np.complex128)
    _, batch, channels = spectrum.shape
    grid = spectrum.transpose(1, 2, 0).reshape(batch, channels, fft_size, fft_size // 2 + 1)
    frame = np.fft.irfft2(grid, s=(fft_size, fft_size))
    window = frame[:, :, offset_h:offset_h + out_h, offset_w:offset_w + out_w]
    return from_nchw(window, data_format)


def apply_mode(m, transpose, adjoint, conjugate=False):
    if adjoint:
        return np.conj(np.swapaxes(m, 1, 2))
    if transpose:
        m = np.swapaxes(m, 1, 2)
    return np.conj(m) if conjugate else m


def spectral_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
                    conjugate_a=False, conjugate_b=False):
    a = apply_mode(np.asarray(a, np.complex128), transpose_a, adjoint_a, conjugate_a)
    b = apply_mode(np.asarray(b, np.complex128), transpose_b, adjoint_b, conjugate_b)
    return np.einsum("fmk,fkn->fmn", a, b)


# How a matmul operand enters the product in the tests: N as it is, T transposed, H adjoint,
# C conjugated, TC transposed and conjugated (the adjoint again, by the other two flags).
MATMUL_MODES = ["N", "T", "H", "C", "TC"]


def matmul_flags(mode_a, mode_b):
    """spectral_matmul's flags for the modes of a and b."""
    flags = {}
    for operand, mode in (("a", mode_a), ("b", mode_b)):
        flags.update({"transpose_" + operand: "T" in mode, "adjoint_" + operand: mode == "H",
                      "conjugate_" + operand: "C" in mode})
    return flags


def matmul_shapes(mode_a, mode_b, bins, m, k, n):
    """The shapes of a and b for which op_a(a) is m x k and op_b(b) k x n in each bin."""
    def swapped(mode):
        return "T" in mode or mode == "H"
    return ((bins, k, m) if swapped(mode_a) else (bins, m, k),
            (bins, n, k) if swapped(mode_b) else (bins, k, n))


def random_complex(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def rel_error(out, ref, scale=None):
    """||out - ref|| / ||scale|| (default: ||ref||) in float64 / complex128 (||out - ref|| when
    the scale is all zeros).

    ``scale``: what the error is relative to where that is not ``ref``. A ReLU after a computed
    value z: relu is 1-Lipschitz, so the output's error is at most z's, whose size a float32
    computation sets relative to ||z||; ||relu(z)|| can be far smaller (a negative bias zeroes
    most of z), and an error relative to it grows with no error in the kernel."""
    out = np.asarray(out, dtype=np.complex128 if np.iscomplexobj(out) else np.float64)
    ref = np.asarray(ref)
    denom = np.linalg.norm(np.asarray(ref if scale is None else scale).ravel())
    error = float(np.linalg.norm((out - ref).ravel()))
    return error / denom if denom else error


def conv2d_nhwc(x, w, dy, padding):
    """Stride-1 cross-correlation as tf.nn.conv2d computes it, in float64, with both gradients.

    x [B, H, W, Cin], w [kh, kw, Cin, Cout], dy the output's cotangent ``[B, Ho, Wo, Cout]`` (or
    None). Returns (y, dx, dw); dx and dw are None without dy.
    """
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    k_h, k_w = w.shape[:2]
    if padding == "SAME":
        top, left = (k_h - 1) // 2, (k_w - 1) // 2
        x_pad = np.pad(x, ((0, 0), (top, k_h - 1 - top), (left, k_w - 1 - left), (0, 0)))
    else:
        top = left = 0
        x_pad = x
    out_h, out_w = x_pad.shape[1] - k_h + 1, x_pad.shape[2] - k_w + 1
    y = np.zeros((x.shape[0], out_h, out_w, w.shape[3]))
    for u in range(k_h):
        for v in range(k_w):
            y += np.einsum("bijc,co->bijo", x_pad[:, u:u + out_h, v:v + out_w], w[u, v])
    if dy is None:
        return y, None, None
    dy = np.asarray(dy, np.float64)
    dx_pad = np.zeros_like(x_pad)
    dw = np.zeros_like(w)
    for u in range(k_h):
        for v in range(k_w):
            dx_pad[:, u:u + out_h, v:v + out_w] += np.einsum("bijo,co->bijc", dy, w[u, v])
            dw[u, v] = np.einsum("bijc,bijo->co", x_pad[:, u:u + out_h, v:v + out_w], dy)
    dx = dx_pad[:, top:top + x.shape[1], left:left + x.shape[2]]
    return y, dx, dw


def pairs_to_complex(pairs):
    """A half-precision spectrum [.., 2] (real, imaginary) as complex128."""
    pairs = np.asarray(pairs, np.float64)
    return pairs[..., 0] + 1j * pairs[..., 1]


def complex_to_pairs(z):
    z = np.asarray(z)
    return np.stack([z.real, z.imag], axis=-1)

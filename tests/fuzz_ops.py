"""Fuzzer for the raw ops: random valid and invalid (shape, attr) cases, each either correct
against the NumPy reference or rejected with InvalidArgumentError, as a model of the rules says.

Run as a script (tests/test_fuzz.py runs it in a subprocess, so a crash cannot hide):
    python tests/fuzz_ops.py --op rfft2d --cases 1000 --seed 1 --device /CPU:0
Prints one JSON line: {"op", "cases", "valid", "invalid", "failures": [...]}.
"""

import argparse
import json
import os
import sys

import numpy as np
import tensorflow as tf

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
import np_reference as ref  # noqa: E402
import tf_fftconv as fc  # noqa: E402

INT32_MAX = 2**31 - 1
FFT_SIZE_CHOICES = [2, 4, 8, 16, 32, 64, 128] * 4 + [-4, 0, 1, 3, 6, 12, 256]
REAL = {"float32": (tf.float32, np.float32), "float64": (tf.float64, np.float64)}
COMPLEX = {"complex64": (tf.complex64, np.complex64), "complex128": (tf.complex128, np.complex128)}
PARTNER = {"float32": "complex64", "float64": "complex128"}


def valid_fft_size(s):
    return 2 <= s <= 128 and s & (s - 1) == 0


def window_ok(size, offset, s):
    return size <= 128 and 0 <= offset < s and offset + size <= s


def count_ok(*dims):
    return 0 in dims or int(np.prod(dims, dtype=object)) <= INT32_MAX


def random_shape(rng, rank, dims):
    if rng.random() < 0.08:
        rank = int(rng.choice([2, 3, 5]))
    return [int(d) for d in (dims + [int(rng.integers(0, 3))] * 3)[:rank]]


def case_rfft2d(rng):
    s = int(rng.choice(FFT_SIZE_CHOICES))
    span = max(s, 2)
    fmt = "NCHW" if rng.random() < 0.47 else ("NHWC" if rng.random() < 0.95 else "CHWN")
    real = "float32" if rng.random() < 0.6 else "float64"
    tcomplex = PARTNER[real] if rng.random() < 0.95 else "complex128"
    if rng.random() < 0.03:
        real = "int32"
    b, c = int(rng.integers(0, 4)), int(rng.integers(0, 5))
    h, w = int(rng.integers(0, span + 3)), int(rng.integers(0, span + 3))
    if rng.random() < 0.02:
        b, c, h, w, s = 512, 512, 1, 1, 128      # spectrum of 8256 * 262144 elements: overflow
    if rng.random() < 0.02:
        h = 129 + int(rng.integers(0, 3))
    oh = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    ow = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    shape = random_shape(rng, 4, [b, c, h, w] if fmt != "NHWC" else [b, h, w, c])
    valid = (real in REAL and tcomplex == PARTNER[real] and fmt in ("NCHW", "NHWC")
             and len(shape) == 4 and valid_fft_size(s) and window_ok(h, oh, s)
             and window_ok(w, ow, s) and count_ok(s * (s // 2 + 1), b, c))
    x = rng.standard_normal(shape).astype(REAL[real][1] if real in REAL else np.int32)

    def run():
        return fc.load_library().fftconv_rfft2d(
            x=tf.constant(x), fft_size=s, offset_h=oh, offset_w=ow, data_format=fmt,
            Tcomplex=COMPLEX[tcomplex][0])

    def expected():
        return ref.rfft2d(x, s, oh, ow, fmt)
    return dict(fft_size=s, shape=shape, offsets=(oh, ow), fmt=fmt, dtype=real), valid, run, expected, real


def case_irfft2d(rng):
    s = int(rng.choice(FFT_SIZE_CHOICES))
    span = max(s, 2)
    fmt = "NCHW" if rng.random() < 0.47 else ("NHWC" if rng.random() < 0.95 else "nchw")
    cplx = "complex64" if rng.random() < 0.6 else "complex128"
    treal = {v: k for k, v in PARTNER.items()}[cplx] if rng.random() < 0.95 else "float32"
    bins = span * (span // 2 + 1) if rng.random() < 0.85 else int(rng.integers(0, 80))
    b, c = int(rng.integers(0, 4)), int(rng.integers(0, 4))
    out_h, out_w = int(rng.integers(-1, span + 2)), int(rng.integers(0, span + 2))
    oh = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    ow = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    shape = random_shape(rng, 3, [bins, b, c])
    valid = (treal == {v: k for k, v in PARTNER.items()}[cplx] and fmt in ("NCHW", "NHWC")
             and len(shape) == 3 and valid_fft_size(s) and bins == s * (s // 2 + 1)
             and out_h >= 0 and out_w >= 0 and window_ok(out_h, oh, s) and window_ok(out_w, ow, s))
    spectrum = ref.random_complex(rng, shape).astype(COMPLEX[cplx][1])

    def run():
        return fc.load_library().fftconv_irfft2d(
            spectrum=tf.constant(spectrum), fft_size=s, out_h=out_h, out_w=out_w, offset_h=oh,
            offset_w=ow, data_format=fmt, T=REAL[treal][0])

    def expected():
        return ref.irfft2d(spectrum, s, out_h, out_w, oh, ow, fmt)
    return (dict(fft_size=s, shape=shape, out=(out_h, out_w), offsets=(oh, ow), fmt=fmt),
            valid, run, expected, treal)


def case_matmul(rng):
    cplx = "complex64" if rng.random() < 0.6 else "complex128"
    cplx_b = cplx if rng.random() < 0.97 else "complex64"
    bins, m, k, n = (int(rng.integers(0, 7)) for _ in range(4))
    flags = {name: bool(rng.random() < 0.35) for name in
             ("transpose_a", "adjoint_a", "transpose_b", "adjoint_b")}
    swap_a = flags["transpose_a"] or flags["adjoint_a"]
    swap_b = flags["transpose_b"] or flags["adjoint_b"]
    k_b = k if rng.random() < 0.85 else int(rng.integers(0, 7))
    bins_b = bins if rng.random() < 0.9 else int(rng.integers(0, 7))
    a_shape = random_shape(rng, 3, [bins, k, m] if swap_a else [bins, m, k])
    b_shape = random_shape(rng, 3, [bins_b, n, k_b] if swap_b else [bins_b, k_b, n])
    if rng.random() < 0.02:
        a_shape, b_shape, flags = [1, 65536, 1], [1, 1, 65536], dict.fromkeys(flags, False)
        bins, k, k_b, m, n = 1, 1, 1, 65536, 65536
    valid = (cplx == cplx_b and len(a_shape) == 3 and len(b_shape) == 3
             and not (flags["transpose_a"] and flags["adjoint_a"])
             and not (flags["transpose_b"] and flags["adjoint_b"])
             and a_shape[0] == b_shape[0] and k == k_b and count_ok(bins, m, n))
    a = ref.random_complex(rng, a_shape).astype(COMPLEX[cplx][1])
    b = ref.random_complex(rng, b_shape).astype(COMPLEX[cplx_b][1])

    def run():
        return fc.load_library().fftconv_spectral_matmul(a=tf.constant(a), b=tf.constant(b), **flags)

    def expected():
        return ref.spectral_matmul(a, b, **flags)
    real = "float32" if cplx == "complex64" else "float64"
    return dict(a=a_shape, b=b_shape, dtypes=(cplx, cplx_b), **flags), valid, run, expected, real


CASES = {"rfft2d": case_rfft2d, "irfft2d": case_irfft2d, "spectral_matmul": case_matmul}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", choices=sorted(CASES), required=True)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="/CPU:0")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    counts = {"valid": 0, "invalid": 0}
    failures = []
    tf.config.experimental.enable_tensor_float_32_execution(False)
    with tf.device(args.device):
        for index in range(args.cases):
            description, valid, run, expected, real = CASES[args.op](rng)
            counts["valid" if valid else "invalid"] += 1
            try:
                out = run().numpy()
            except tf.errors.InvalidArgumentError as e:
                if valid:
                    failures.append(dict(case=index, desc=description, error="rejected: " + e.message[:200]))
                continue
            except Exception as e:  # any other error type is a defect
                failures.append(dict(case=index, desc=description, error="%s: %s" % (type(e).__name__, str(e)[:200])))
                continue
            if not valid:
                failures.append(dict(case=index, desc=description, error="accepted an invalid case"))
                continue
            want = expected()
            tolerance = 1e-5 if real == "float32" else 1e-11
            err = ref.rel_error(out, want) if out.shape == want.shape else float("inf")
            if out.shape != want.shape or not err <= tolerance:
                failures.append(dict(case=index, desc=description, error="wrong result: shape %s vs %s, rel err %s" % (out.shape, want.shape, err)))
    print(json.dumps(dict(op=args.op, cases=args.cases, failures=failures[:20], n_failures=len(failures), **counts), default=str))


if __name__ == "__main__":
    main()

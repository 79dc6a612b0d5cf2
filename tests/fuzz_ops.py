"""Fuzzer for the raw ops: random valid and invalid (shape, size, attr) cases, each either correct
against the NumPy reference or rejected with InvalidArgumentError, as a model of the rules says.

Cases include empty tensors with huge dimensions in every position, element counts over int32,
sizes and attributes far out of range (past int32 and int64 too), wrong ranks and dtypes. Each case
runs in one of five modes:
  eager    the op called eagerly
  static   in a tf.function traced with the full shapes and constant sizes (the shape function
           sees everything; it may reject the case while tracing, as a ValueError)
  unknown  in a tf.function whose signature leaves every shape and size unknown (only the kernel
           can check)
  sizes    known shapes, sizes fed as tensors unknown while tracing (int32, or int64 where the
           value needs it)
  jit      as static, under jit_compile=True (the XLA lowering checks, the custom call runs)
and is called --repeat times (the results must not change), from --threads threads at once.
Case i is drawn from its own generator (seed, i), so any case can be drawn again alone.

Run as a script (tests/test_fuzz.py runs it in a subprocess, so a crash or a hang cannot hide):
    python tests/fuzz_ops.py --op rfft2d --cases 1000 --seed 1 --device /CPU:0
Prints one JSON line: {"op", "cases", "valid", "invalid", "modes", "failures": [...]}.
With --stream it runs the cases one after another and prints a line as each starts and ends
instead (tests/batch_runner.py's protocol, for tests/test_adversarial.py); --edge draws the far
sizes, offsets and dimensions much more often.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import sys

import numpy as np
import tensorflow as tf

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
import np_reference as ref  # noqa: E402
import tf_fftconv as fc  # noqa: E402

MAX_FFT_SIZE = fc.geometry.MAX_FFT_SIZE    # kMaxFftSize of include/fftconv_params.h
INT32_MAX = 2**31 - 1
INT32_MIN = -2**31
INT64_MAX = 2**63 - 1
INT64_MIN = -INT64_MAX - 1
FFT_SIZE_CHOICES = ([2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128] * 3
                    + [-4, 0, 1, 3, 5, 9, 15, 18, 30, 36, 160, 192, 256, INT32_MAX, INT32_MIN])
# fft_size values past int32 (some wrap around to allowed sizes in int32: 2^32 + 8 to 8) and past
# int64 (refused before TensorFlow converts them).
FAR_FFT_SIZES = [2**32 + 8, 2**32 + 64, 2**31, 2**62, INT64_MAX, INT64_MIN, 2**63, -2**63 - 8]
# Dimensions far beyond what fits in memory: only ever drawn together with a zero dimension
# (an empty tensor) or where the case is invalid before anything is allocated.
# 2^55 and 2^58 put the product of an empty tensor's other dimensions on either side of
# MAX_DIMENSION_PRODUCT, by the other dimensions and the bins.
HUGE_DIMS = [2**31, 2**31 - 1, 2**32 + 1, 65536, 2**20, 2**40, 2**55, 2**58]
FAR_OFFSETS = [INT32_MAX, 2**31, 2**40, -2**40, INT64_MAX, INT64_MIN, 2**32 + 2, 2**63,
               -2**63 - 1, 2**64 + 1]
FAR_SIZES = [INT32_MAX, INT32_MIN, 129, 200, -2, 2**32 + 4, 2**40, 2**62, INT64_MIN, INT64_MAX,
             2**63, -2**64]
# kMaxDimensionProduct of cc/fftconv_shapes.h: the largest product of an empty tensor's non-zero
# dimensions (a shape's byte count in complex128 must fit in int64).
MAX_DIMENSION_PRODUCT = INT64_MAX // 16
ALPHAS = [0.0, -2.5, 0.5, 3e5, float("nan"), float("inf"), float("-inf")]
MAX_VALID_ELEMENTS = 2**22          # cases are redrawn above this (reference memory and time)
MODES = ["eager", "static", "unknown", "sizes", "jit"]
# How often a size, offset or dimension is drawn far out of range (raised by --edge).
FAR = {"p": 0.04, "huge": 0.3}
REAL = {"float32": (tf.float32, np.float32), "float64": (tf.float64, np.float64)}
COMPLEX = {"complex64": (tf.complex64, np.complex64), "complex128": (tf.complex128, np.complex128)}
PARTNER = {"float32": "complex64", "float64": "complex128"}
REAL_OF = {v: k for k, v in PARTNER.items()}

# One drawn case: the op's tensor inputs (NumPy arrays), its int32 size inputs, its attributes,
# whether the rules say it is valid, the reference result and the real dtype (for the tolerance).
Case = collections.namedtuple("Case", "op tensors sizes attrs valid expected real desc out_shape")


def valid_fft_size(s):
    return s in fc.geometry.FFT_SIZES


def window_ok(size, offset, s):
    return size <= MAX_FFT_SIZE and 0 <= offset < s and offset + size <= s


def count_ok(*dims):
    """An empty tensor holds nothing, but the product of its other dimensions must stay within
    MAX_DIMENSION_PRODUCT; any other tensor must fit in int32 indexing."""
    if 0 in dims:
        return elements(*[d for d in dims if d != 0]) <= MAX_DIMENSION_PRODUCT
    return elements(*dims) <= INT32_MAX


def elements(*dims):
    return int(np.prod(dims, dtype=object))


def creatable(shape):
    """NumPy refuses even an empty array whose other dimensions multiply past its index range."""
    nonzero = [d for d in shape if d != 0]
    return elements(*nonzero) * 16 < 2**62 and elements(*shape) <= MAX_VALID_ELEMENTS


def random_array(rng, shape, dtype):
    if elements(*shape) == 0:
        return np.zeros(shape, dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return ref.random_complex(rng, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def random_shape(rng, rank, dims):
    if rng.random() < 0.08:
        rank = int(rng.choice([2, 3, 5]))
    return [int(d) for d in (dims + [int(rng.integers(0, 3))] * 3)[:rank]]


def huge_empty(rng, dims):
    """Some dimensions replaced by huge ones, and one (any, possibly a huge one's neighbour) by 0."""
    dims = list(dims)
    for i in range(len(dims)):
        if rng.random() < 0.4:
            dims[i] = int(rng.choice(HUGE_DIMS))
    dims[int(rng.integers(0, len(dims)))] = 0
    return dims


def maybe_far(rng, value, choices):
    return int(rng.choice(np.array(choices, dtype=object))) if rng.random() < FAR["p"] else value


def random_frame(rng):
    """An FFT size (now and then a far one) and the span of image sizes drawn around it."""
    s = maybe_far(rng, int(rng.choice(FFT_SIZE_CHOICES)), FAR_FFT_SIZES)
    return s, (max(s, 2) if s <= 128 else 8)


def random_data_format(rng, refused):
    """NCHW or NHWC, now and then ``refused`` (a format the op refuses)."""
    return "NCHW" if rng.random() < 0.47 else ("NHWC" if rng.random() < 0.95 else refused)


def case_rfft2d(rng):
    s, span = random_frame(rng)
    fmt = random_data_format(rng, "CHWN")
    real = "float32" if rng.random() < 0.6 else "float64"
    tcomplex = PARTNER[real] if rng.random() < 0.95 else "complex128"
    if rng.random() < 0.03:
        real = "int32"
    b, c = int(rng.integers(0, 4)), int(rng.integers(0, 5))
    h, w = int(rng.integers(0, span + 3)), int(rng.integers(0, span + 3))
    if rng.random() < 0.02:
        b, c, h, w, s = 512, 512, 1, 1, 128      # spectrum of 8320 * 262144 elements: overflow
    if rng.random() < 0.02:
        h = 129 + int(rng.integers(0, 3))
    if rng.random() < FAR["huge"]:
        b, c, h, w = huge_empty(rng, [b, c, h, w])
    oh = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    ow = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    oh, ow = maybe_far(rng, oh, FAR_OFFSETS), maybe_far(rng, ow, FAR_OFFSETS)
    shape = random_shape(rng, 4, [b, c, h, w] if fmt != "NHWC" else [b, h, w, c])
    spectrum_dims = (s * (s // 2 + 1), b, c)
    valid = (real in REAL and tcomplex == PARTNER[real] and fmt in ("NCHW", "NHWC")
             and len(shape) == 4 and valid_fft_size(s) and window_ok(h, oh, s)
             and window_ok(w, ow, s) and count_ok(b, c, h, w) and count_ok(*spectrum_dims))
    if not creatable(shape):
        return None
    x = random_array(rng, shape, REAL[real][1] if real in REAL else np.int32)
    return Case(
        op=fc.load_library().fftconv_rfft2d, tensors={"x": x}, sizes={"fft_size": s},
        attrs=dict(offset_h=oh, offset_w=ow, data_format=fmt, Tcomplex=COMPLEX[tcomplex][0],
                   round_to_tf32=bool(rng.random() < 0.2)),
        valid=valid, expected=lambda: ref.rfft2d(x, s, oh, ow, fmt), real=real,
        desc=dict(fft_size=s, shape=shape, offsets=(oh, ow), fmt=fmt, dtype=real),
        out_shape=spectrum_dims)


def case_irfft2d(rng):
    s, span = random_frame(rng)
    fmt = random_data_format(rng, "nchw")
    cplx = "complex64" if rng.random() < 0.6 else "complex128"
    treal = REAL_OF[cplx] if rng.random() < 0.95 else "float32"
    bins = span * (span // 2 + 1) if rng.random() < 0.85 else int(rng.integers(0, 80))
    b, c = int(rng.integers(0, 4)), int(rng.integers(0, 4))
    if rng.random() < FAR["huge"]:
        bins, b, c = huge_empty(rng, [bins, b, c])
    out_h, out_w = int(rng.integers(-1, span + 2)), int(rng.integers(0, span + 2))
    out_h, out_w = maybe_far(rng, out_h, FAR_SIZES), maybe_far(rng, out_w, FAR_SIZES)
    oh = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    ow = int(rng.integers(-1, span + 1)) if rng.random() < 0.5 else 0
    oh, ow = maybe_far(rng, oh, FAR_OFFSETS), maybe_far(rng, ow, FAR_OFFSETS)
    shape = random_shape(rng, 3, [bins, b, c])
    valid = (treal == REAL_OF[cplx] and fmt in ("NCHW", "NHWC")
             and len(shape) == 3 and valid_fft_size(s) and bins == s * (s // 2 + 1)
             and out_h >= 0 and out_w >= 0 and window_ok(out_h, oh, s) and window_ok(out_w, ow, s)
             and count_ok(bins, b, c) and count_ok(b, c, out_h, out_w))
    if not creatable(shape):
        return None
    spectrum = random_array(rng, shape, COMPLEX[cplx][1])
    return Case(
        op=fc.load_library().fftconv_irfft2d, tensors={"spectrum": spectrum},
        sizes={"fft_size": s, "out_h": out_h, "out_w": out_w},
        attrs=dict(offset_h=oh, offset_w=ow, data_format=fmt, T=REAL[treal][0]), valid=valid,
        expected=lambda: ref.irfft2d(spectrum, s, out_h, out_w, oh, ow, fmt), real=treal,
        desc=dict(fft_size=s, shape=shape, out=(out_h, out_w), offsets=(oh, ow), fmt=fmt),
        out_shape=(b, c, max(out_h, 0), max(out_w, 0)))


def case_matmul(rng):
    cplx = "complex64" if rng.random() < 0.6 else "complex128"
    cplx_b = cplx if rng.random() < 0.97 else "complex64"
    bins, m, k, n = (int(rng.integers(0, 7)) for _ in range(4))
    if rng.random() < FAR["huge"]:
        bins, m, k, n = huge_empty(rng, [bins, m, k, n])
    flags = {name: bool(rng.random() < 0.35) for name in
             ("transpose_a", "adjoint_a", "conjugate_a", "transpose_b", "adjoint_b", "conjugate_b")}
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
             and not (flags["conjugate_a"] and flags["adjoint_a"])
             and not (flags["conjugate_b"] and flags["adjoint_b"])
             and a_shape[0] == b_shape[0] and k == k_b
             and count_ok(*a_shape) and count_ok(*b_shape) and count_ok(bins, m, n))
    # alpha: finite values scale the product; the others are refused. The TF32 flags change
    # nothing on the CPU but must be accepted.
    alpha = 1.0 if rng.random() < 0.7 else float(rng.choice(ALPHAS))
    valid = valid and np.isfinite(alpha)
    tf32 = dict(allow_tf32=bool(rng.random() < 0.5), tf32_operands=bool(rng.random() < 0.2))
    if not (creatable(a_shape) and creatable(b_shape)):
        return None
    a = random_array(rng, a_shape, COMPLEX[cplx][1])
    b = random_array(rng, b_shape, COMPLEX[cplx_b][1])
    return Case(
        op=fc.load_library().fftconv_spectral_matmul, tensors={"a": a, "b": b}, sizes={},
        attrs=dict(flags, alpha=alpha, **tf32), valid=valid,
        expected=lambda: alpha * ref.spectral_matmul(a, b, **flags),
        real="float32" if cplx == "complex64" else "float64",
        desc=dict(a=a_shape, b=b_shape, dtypes=(cplx, cplx_b), alpha=alpha, **flags, **tf32),
        out_shape=(bins, m, n))


CASES = {"rfft2d": case_rfft2d, "irfft2d": case_irfft2d, "spectral_matmul": case_matmul}


def draw(op, rng):
    """A case whose tensors can be created and whose result (if valid) is small."""
    while True:
        case = CASES[op](rng)
        if case is not None and not (case.valid and not creatable(case.out_shape)):
            return case


def runner(case, mode):
    """A function of no arguments that runs the case in `mode` and returns a NumPy result."""
    names = list(case.tensors)
    tensors = [tf.constant(case.tensors[n]) for n in names]
    if mode == "eager":
        return lambda: case.op(**dict(zip(names, tensors)), **case.sizes, **case.attrs).numpy()
    # Fed as tensors: int32 where the value fits, else int64; a value past int64 has no tensor
    # and stays a Python integer (refused before TensorFlow converts it).
    size_names = [n for n, v in case.sizes.items() if mode in ("unknown", "sizes")
                  and INT64_MIN <= v <= INT64_MAX]
    size_types = [tf.int32 if INT32_MIN <= case.sizes[n] <= INT32_MAX else tf.int64
                  for n in size_names]
    fixed_sizes = {n: v for n, v in case.sizes.items() if n not in size_names}

    def call(*args):
        inputs = dict(zip(names + size_names, args))
        return case.op(**inputs, **fixed_sizes, **case.attrs)
    if mode == "unknown":
        signature = [tf.TensorSpec(None, t.dtype) for t in tensors]
    else:
        signature = [tf.TensorSpec(t.shape, t.dtype) for t in tensors]
    signature += [tf.TensorSpec(None if mode == "unknown" else [], t) for t in size_types]
    function = tf.function(call, input_signature=signature, autograph=False,
                           jit_compile=mode == "jit")
    size_args = [tf.constant(case.sizes[n], t) for n, t in zip(size_names, size_types)]
    return lambda: function(*tensors, *size_args).numpy()


def misquoted(case, message):
    """The first size or offset past int32 that the message names without its value, if any: such
    a value must be reported as given, not as an int32 it wrapped around to."""
    values = dict(case.sizes, **{n: v for n, v in case.attrs.items() if n.startswith("offset_")})
    # While tracing, TensorFlow appends the node, attributes and all: only the op's own words count.
    message = message.split(" for '{{node ")[0]
    for name, value in values.items():
        # Named as the culprit: "fft_size must ...", "out_h = ...", "out_h and out_w must ...".
        if (not INT32_MIN <= value <= INT32_MAX
                and re.search(r"\b%s( =| must| and)" % name, message)
                and not re.search(r"(?<![\d-])%d(?!\d)" % value, message)):
            return "%s = %d" % (name, value)
    return None


def run_case(index, case, mode, repeat, exact):
    """None if the op did what the rules say, else a failure record."""
    def failure(error):
        return dict(case=index, mode=mode, desc=case.desc, error=error)
    # While tracing, the shape function reports a rejection as a ValueError, and TensorFlow's op
    # construction a wrong dtype as a TypeError; eagerly, everything is an InvalidArgumentError.
    rejections = (tf.errors.InvalidArgumentError,) if mode == "eager" else (
        tf.errors.InvalidArgumentError, ValueError, TypeError)
    first = None
    for _ in range(repeat):
        try:
            out = runner(case, mode)()
        except rejections as e:
            message = str(getattr(e, "message", e))
            if case.valid:
                return failure("rejected: " + message[:300])
            unnamed = misquoted(case, message)
            if unnamed:
                return failure("the message names %s but not its value as given: %s"
                               % (unnamed, message[:300]))
            continue
        except Exception as e:  # any other error type is a defect
            return failure("%s: %s" % (type(e).__name__, str(e)[:300]))
        if not case.valid:
            return failure("accepted an invalid case")
        if first is None:
            want = case.expected()
            tolerance = 1e-5 if case.real == "float32" else 1e-11
            err = ref.rel_error(out, want) if out.shape == want.shape else float("inf")
            if out.shape != want.shape or not err <= tolerance:
                return failure("wrong result: shape %s vs %s, rel err %s" % (out.shape, want.shape, err))
            first = out
        elif out.shape != first.shape or (exact and not np.array_equal(out, first, equal_nan=True)):
            return failure("a repeated call gave another result")
    return None


def draw_case(op, seed, index, modes):
    """Case `index` of a run, from its own generator: the same whatever ran before it."""
    rng = np.random.default_rng([seed, index])
    if op == "all":
        op = sorted(CASES)[index % len(CASES)]
    case, mode = draw(op, rng), str(rng.choice(modes))
    return case, "static" if mode == "sizes" and not case.sizes else mode


def stream(args, modes, exact):
    """Runs cases --first .. --cases - 1 one after another, printing batch_runner's lines."""
    import batch_runner
    for index in range(args.first, args.cases):
        batch_runner.start(index)
        case, mode = draw_case(args.op, args.seed, index, modes)
        with tf.device(args.device):
            failure = run_case(index, case, mode, args.repeat, exact)
        # A Python error left pending by an argument's conversion stops the process at the next
        # conversion: here, so that the crash is charged to this case.
        tf.constant([1, 2]) + 1
        batch_runner.report(index, valid=bool(case.valid), mode=mode, failure=failure)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", choices=sorted(CASES) + ["all"], required=True,
                        help="all: the ops in turn, case by case")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="/CPU:0")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated subset of %s, drawn at random per case" % ",".join(MODES))
    parser.add_argument("--repeat", type=int, default=2, help="calls per case")
    parser.add_argument("--threads", type=int, default=4, help="cases run concurrently")
    parser.add_argument("--edge", action="store_true",
                        help="far sizes, offsets and huge empty tensors in most cases")
    parser.add_argument("--stream", action="store_true",
                        help="one case at a time, a JSON line as each starts and ends")
    parser.add_argument("--first", type=int, default=0, help="with --stream: the first case")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error("unknown mode(s) %s" % ",".join(unknown))
    if args.edge:
        FAR.update(p=0.3, huge=0.5)
    tf.config.experimental.enable_tensor_float_32_execution(False)
    exact = "CPU" in args.device.upper()
    if args.stream:
        return stream(args, modes, exact)
    cases = [(index, *draw_case(args.op, args.seed, index, modes)) for index in range(args.cases)]
    counts = collections.Counter("valid" if case.valid else "invalid" for _, case, _ in cases)
    mode_counts = collections.Counter(mode for _, _, mode in cases)

    def work(item):
        with tf.device(args.device):
            return run_case(*item, args.repeat, exact)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.threads)) as pool:
        failures = [f for f in pool.map(work, cases) if f is not None]
    print(json.dumps(dict(op=args.op, cases=args.cases, failures=failures[:20], n_failures=len(failures),
                          valid=counts["valid"], invalid=counts["invalid"], modes=dict(mode_counts)),
                     default=str))


if __name__ == "__main__":
    main()

"""Concurrent eager calls on one device, several threads at once: do the ops see their own size
inputs? Each thread calls tf.raw_ops.Fill (a TensorFlow op whose `dims` input lives in host memory
on a GPU, as fft_size does for our ops), tf.raw_ops.Range with float scalars (three host-memory
scalar inputs on a GPU, as FftconvIrfft2d has) and the raw FftconvRfft2d / FftconvIrfft2d ops with random
power-of-two sizes, and checks every result's shape. Sizes are passed as Python numbers (converted
by TensorFlow on each call) or, with --host-sizes, as int32 tensors made on the host first (what the
package's wrappers do).

--ops tf calls TensorFlow's ops alone (the control), --ops ours ours alone, each best in a process
of its own, so that a cold start of each is measured apart; --function makes every call through a
tf.function per thread (sizes as tensor arguments, traced once per thread) instead of eagerly.

    python3 tools/concurrency_probe.py [--device /GPU:0] [--threads 4] [--calls 600] [--host-sizes]
                                       [--ops tf|ours|both] [--function]

Prints one line per op kind (wrong shapes and refusals of valid calls), the first few wrong calls
and a last line `SUMMARY ops=... mode=... sizes=... wrong=W refused=R calls=N` for scripts that run
it many times; exit status 1 when any call went wrong.
"""

import argparse
import collections
import concurrent.futures
import sys

import numpy as np
import tensorflow as tf


def size(value, host_sizes, dtype=tf.int32):
    if not host_sizes:
        # A Python number (Range infers its type from its inputs: float tensors in the scope).
        return value if dtype == tf.int32 else tf.constant(value, dtype)
    with tf.device("/CPU:0"):
        return tf.constant(value, dtype)


TF_KINDS = ("Fill", "Range")
OUR_KINDS = ("FftconvRfft2d", "FftconvIrfft2d")


def make_calls(library, function):
    """The four calls, each taking its size(s) as arguments: eager, or a tf.function traced for
    any size (the sizes then tensors, as in a graph)."""
    calls = {
        "Fill": lambda n: tf.raw_ops.Fill(dims=tf.stack([n, 3]) if function else [n, 3],
                                          value=1.0),
        "Range": lambda start, limit, delta: tf.raw_ops.Range(start=start, limit=limit,
                                                              delta=delta),
        "FftconvRfft2d": lambda x, s: library.fftconv_rfft2d(x=x, fft_size=s),
        "FftconvIrfft2d": lambda spectrum, s: library.fftconv_irfft2d(
            spectrum=spectrum, fft_size=s, out_h=s, out_w=s),
    }
    if not function:
        return calls
    scalar_i, scalar_f = tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.float32)
    signatures = {
        "Fill": [scalar_i], "Range": [scalar_f] * 3,
        "FftconvRfft2d": [tf.TensorSpec([1, 1, None, None], tf.float32), scalar_i],
        "FftconvIrfft2d": [tf.TensorSpec([None, 1, 1], tf.complex64), scalar_i]}
    return {kind: tf.function(call, input_signature=signatures[kind])
            for kind, call in calls.items()}


def worker(seed, device, calls, host_sizes, kinds, function):
    rng = np.random.default_rng(seed)
    # The control (--ops tf) never imports the package, so its process holds TensorFlow alone.
    library = None
    if "FftconvRfft2d" in kinds:
        import tf_fftconv as fc  # noqa: PLC0415
        library = fc.load_library()
    call = make_calls(library, function)
    # In a tf.function the sizes are arguments, tensors either way.
    host_sizes = host_sizes or function
    wrong = []

    def check(kind, size_asked, run, expected_shape):
        """Runs run(); a wrong shape or a refusal is counted for `kind` (a refusal carrying
        another call's message is how crossed statuses show)."""
        try:
            result = run()
        except tf.errors.InvalidArgumentError as error:
            wrong.append(("refused", kind, size_asked, str(error).splitlines()[0][:200]))
            return None
        if tuple(result.shape) != expected_shape:
            wrong.append((kind, size_asked, tuple(result.shape)))
            return None
        return result

    with tf.device(device):
        for _ in range(calls):
            n = int(rng.integers(1, 64))
            s = int(2 ** rng.integers(1, 6))
            if "Fill" in kinds:
                check("Fill", n, lambda: call["Fill"](size(n, host_sizes)), (n, 3))
                check("Range", n, lambda: call["Range"](
                    size(0.0, host_sizes, tf.float32), size(float(n), host_sizes, tf.float32),
                    size(1.0, host_sizes, tf.float32)), (n,))
            if "FftconvRfft2d" in kinds:
                x = tf.ones([1, 1, s, s])
                spectrum = check("FftconvRfft2d", s, lambda: call["FftconvRfft2d"](
                    x, size(s, host_sizes)), (s * (s // 2 + 1), 1, 1))
                if spectrum is not None:
                    check("FftconvIrfft2d", s, lambda: call["FftconvIrfft2d"](
                        spectrum, size(s, host_sizes)), (1, 1, s, s))
    return wrong


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="/GPU:0")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=600, help="calls of each op per thread")
    parser.add_argument("--host-sizes", action="store_true",
                        help="sizes as int32 tensors made on the host first")
    parser.add_argument("--ops", choices=("tf", "ours", "both"), default="both",
                        help="TensorFlow's Fill and Range, our two ops, or all four")
    parser.add_argument("--function", action="store_true",
                        help="every call through a tf.function per thread instead of eagerly")
    args = parser.parse_args(argv)
    kinds = {"tf": TF_KINDS, "ours": OUR_KINDS, "both": TF_KINDS + OUR_KINDS}[args.ops]
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        results = list(pool.map(lambda seed: worker(seed, args.device, args.calls,
                                                    args.host_sizes, kinds, args.function),
                                range(args.threads)))
    wrong = [entry for result in results for entry in result]
    counts = collections.Counter(entry[0] if entry[0] != "refused" else "refused " + entry[1]
                                 for entry in wrong)
    total = args.threads * args.calls
    mode = "tf.function" if args.function else "eager"
    sizes = ("tensors" if args.function else
             "made on the host" if args.host_sizes else "Python numbers")
    print(f"{args.threads} threads x {args.calls} calls on {args.device}, {mode}, sizes {sizes}:")
    for kind in kinds:
        print(f"  {kind:15s} {counts.get(kind, 0)} wrong shapes, "
              f"{counts.get('refused ' + kind, 0)} refused, of {total}")
    for entry in wrong[:8]:
        print("   ", entry)
    refused = sum(1 for entry in wrong if entry[0] == "refused")
    print(f"SUMMARY ops={args.ops} mode={mode} sizes={sizes.replace(' ', '_')} "
          f"wrong={len(wrong) - refused} refused={refused} calls={total * len(kinds)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

"""Concurrent eager calls on one device, several threads at once: do the ops see their own size
inputs? Each thread calls tf.raw_ops.Fill (a TensorFlow op whose `dims` input lives in host memory
on a GPU, as fft_size does for our ops), tf.raw_ops.Range with float scalars (three host-memory
scalar inputs on a GPU, as FftconvIrfft2d has) and the raw FftconvRfft2d / FftconvIrfft2d ops with random
power-of-two sizes, and checks every result's shape. Sizes are passed as Python numbers (converted
by TensorFlow on each call) or, with --host-sizes, as int32 tensors made on the host first (what the
package's wrappers do).

    python3 tools/concurrency_probe.py [--device /GPU:0] [--threads 4] [--calls 600] [--host-sizes]

Prints one line per op kind (wrong shapes and refusals of valid calls) and the first few wrong
calls; exit status 1 when any call went wrong.
"""

import argparse
import collections
import concurrent.futures
import sys

import numpy as np
import tensorflow as tf

import tf_fftconv as fc


def size(value, host_sizes, dtype=tf.int32):
    if not host_sizes:
        # A Python number (Range infers its type from its inputs: float tensors in the scope).
        return value if dtype == tf.int32 else tf.constant(value, dtype)
    with tf.device("/CPU:0"):
        return tf.constant(value, dtype)


def worker(seed, device, calls, host_sizes):
    rng = np.random.default_rng(seed)
    library = fc.load_library()
    wrong = []

    def check(kind, size_asked, call, expected_shape):
        """Runs call(); a wrong shape or a refusal is counted for `kind` (a refusal carrying
        another call's message is how crossed statuses show)."""
        try:
            result = call()
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
            check("Fill", n, lambda: tf.raw_ops.Fill(dims=[n, 3], value=1.0), (n, 3))
            check("Range", n, lambda: tf.raw_ops.Range(
                start=size(0.0, host_sizes, tf.float32), limit=size(float(n), host_sizes,
                                                                    tf.float32),
                delta=size(1.0, host_sizes, tf.float32)), (n,))
            s = int(2 ** rng.integers(1, 6))
            x = tf.ones([1, 1, s, s])
            spectrum = check("FftconvRfft2d", s, lambda: library.fftconv_rfft2d(
                x=x, fft_size=size(s, host_sizes)), (s * (s // 2 + 1), 1, 1))
            if spectrum is not None:
                check("FftconvIrfft2d", s, lambda: library.fftconv_irfft2d(
                    spectrum=spectrum, fft_size=size(s, host_sizes), out_h=size(s, host_sizes),
                    out_w=size(s, host_sizes)), (1, 1, s, s))
    return wrong


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="/GPU:0")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=600, help="calls of each op per thread")
    parser.add_argument("--host-sizes", action="store_true",
                        help="sizes as int32 tensors made on the host first")
    args = parser.parse_args(argv)
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        results = list(pool.map(lambda seed: worker(seed, args.device, args.calls,
                                                    args.host_sizes), range(args.threads)))
    wrong = [entry for result in results for entry in result]
    counts = collections.Counter(entry[0] if entry[0] != "refused" else "refused " + entry[1]
                                 for entry in wrong)
    total = args.threads * args.calls
    print(f"{args.threads} threads x {args.calls} calls on {args.device}, sizes "
          f"{'made on the host' if args.host_sizes else 'as Python numbers'}:")
    for kind in ("Fill", "Range", "FftconvRfft2d", "FftconvIrfft2d"):
        print(f"  {kind:15s} {counts.get(kind, 0)} wrong shapes, "
              f"{counts.get('refused ' + kind, 0)} refused, of {total}")
    for entry in wrong[:8]:
        print("   ", entry)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

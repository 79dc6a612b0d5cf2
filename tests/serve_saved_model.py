"""Serves a SavedModel the way a process without tf_fftconv does: TensorFlow alone loads it (after
the op library, when --op-library names it) and runs its ``serve`` signature.

    python serve_saved_model.py SAVED_MODEL INPUT.npy OUTPUT.npy [--op-library PATH]

Writes the output to OUTPUT.npy. A SavedModel that holds the FFT ops, loaded without their library,
fails in ``tf.saved_model.load`` with TensorFlow's "Op type not registered" (exit status 1, the
error on stderr). Exits with status 3 if tf_fftconv was imported, which would void the check.
"""

import argparse
import sys

import numpy as np
import tensorflow as tf


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("saved_model")
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--op-library", help="a custom-op library to load first (.so)")
    args = parser.parse_args()
    if args.op_library:
        tf.load_op_library(args.op_library)
    served = tf.saved_model.load(args.saved_model)
    output = served.serve(tf.constant(np.load(args.input)))
    np.save(args.output, output.numpy())
    if "tf_fftconv" in sys.modules:
        print("tf_fftconv was imported while serving", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()

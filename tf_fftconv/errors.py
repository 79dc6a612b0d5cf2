"""The error the Python side raises for bad input: an InvalidArgumentError, as the kernels raise,
its message naming the parameter and the value as given."""

import tensorflow as tf


def invalid_argument(message):
    """The InvalidArgumentError the Python side raises for bad input (the kernels raise the same)."""
    return tf.errors.InvalidArgumentError(None, None, "tf_fftconv: " + message)

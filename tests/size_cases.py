"""Inputs that once stopped the process or were silently changed, each run by the raw ops in one of
three modes: eager, inside a tf.function, and under jit_compile=True (CPU); and the custom calls
given attributes that their lowering would never write, run by XlaCallModule under XLA.

Run as a child of tests/batch_runner.py (tests/test_size_safety.py): the arguments are NAME:MODE
keys, and each case's outcome is printed as a JSON line. After each case the child makes and
converts a tensor, so that a Python error left pending by an argument's conversion (which stops
the process at the next conversion) is charged to the case that left it.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

import batch_runner  # noqa: E402

MODES = ["eager", "function", "jit"]


def _cases(tf, lib):
    """name -> (function of (x tensors) -> output, tensors, the mode-specific note)."""
    image = tf.zeros([1, 1, 4, 4])
    spectrum = tf.zeros([40, 1, 1], tf.complex64)
    # XLA cannot hold a float32 parameter of 2^62 x 0 elements at all (its byte count overflows
    # before the zero), so under jit the empty image has 2^58 rows: still 40 x 2^58 bins too many.
    return {
        "rfft2d_fft_size_2^32+8": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=2**32 + 8), [image]),
        "irfft2d_fft_size_2^32+8": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=2**32 + 8, out_h=4, out_w=4), [spectrum]),
        "irfft2d_out_h_-2^63": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=8, out_h=-2**63, out_w=0), [spectrum]),
        "irfft2d_out_h_2^62": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=8, out_h=2**62, out_w=4), [spectrum]),
        "irfft2d_out_w_2^40": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=8, out_h=4, out_w=2**40), [spectrum]),
        "rfft2d_fft_size_2^62": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=2**62), [image]),
        "rfft2d_offset_h_2^63": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=8, offset_h=2**63),
                                 [image]),
        "irfft2d_offset_w_-2^63-1": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=8, out_h=4, out_w=4, offset_w=-2**63 - 1), [spectrum]),
        "rfft2d_empty_x_2^62": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=8),
                                [tf.zeros([2**62, 0, 1, 1])]),
        "rfft2d_empty_x_2^58": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=8),
                                [tf.zeros([2**58, 0, 1, 1])]),
        "spectral_matmul_empty_2^32": (lambda a, b: lib.fftconv_spectral_matmul(
            a=a, b=b, adjoint_a=True), [tf.zeros([2**32, 0, 2**32], tf.complex64),
                                        tf.zeros([2**32, 0, 0], tf.complex64)]),
        # Valid: an empty tensor whose other dimensions multiply to 40 * 2^40 (within the limit).
        "rfft2d_empty_x_2^40_valid": (lambda x: lib.fftconv_rfft2d(x=x, fft_size=8),
                                      [tf.zeros([2**40, 0, 1, 1])]),
        "irfft2d_int64_sizes_valid": (lambda s: lib.fftconv_irfft2d(
            spectrum=s, fft_size=tf.constant(8, tf.int64), out_h=tf.constant(3, tf.int64),
            out_w=4), [spectrum]),
    }


def _custom_call(target, operand, result, attributes):
    """A StableHLO module that calls `target` on one or two operands with these attributes, as
    the lowering would emit it: for the custom calls' own checks, which the lowering's checks
    otherwise shield (XlaCallModule runs it under XLA)."""
    operands = operand if isinstance(operand, list) else [operand]
    arguments = ", ".join("%%arg%d: tensor<%s>" % (i, t) for i, t in enumerate(operands))
    names = ", ".join("%%arg%d" % i for i in range(len(operands)))
    types = ", ".join("tensor<%s>" % t for t in operands)
    config = ", ".join("%s = %s" % (name, value if isinstance(value, str) else "%d : i64" % value)
                       for name, value in attributes.items())
    return ("module @m {\n  func.func public @main(%s) -> tensor<%s> {\n"
            "    %%0 = stablehlo.custom_call @%s(%s) {api_version = 4 : i32, backend_config = {%s}}"
            " : (%s) -> tensor<%s>\n    return %%0 : tensor<%s>\n  }\n}\n"
            % (arguments, result, target, names, config, types, result, result))


def _custom_call_cases(tf):
    """name -> (function, tensors) for the jit-only custom-call cases."""
    from tensorflow.compiler.tf2xla.ops import gen_xla_ops

    def call(target, operand, result, result_shape, result_type, **attributes):
        module = _custom_call(target, operand, result, attributes)
        return lambda *args: gen_xla_ops.xla_call_module(
            args=list(args), version=9, module=module, Sout=[tf.TensorShape(result_shape)],
            Tout=[result_type], dim_args_spec=[], platforms=["CPU"])[0]
    rfft = dict(fft_size=8, offset_h=0, offset_w=0, nhwc=0, round_to_tf32=0)
    irfft = dict(fft_size=8, out_h=4, out_w=4, offset_h=0, offset_w=0, nhwc=0)
    matmul = dict(transpose_a=0, adjoint_a=0, conjugate_a=0, transpose_b=0, adjoint_b=0,
                  conjugate_b=0, allow_tf32=0, tf32_operands=0, alpha="1.0 : f32")
    image, spectrum = tf.zeros([1, 1, 4, 4]), tf.zeros([40, 1, 1], tf.complex64)
    image_type, spectrum_type = "1x1x4x4xf32", "40x1x1xcomplex<f32>"

    def rfft2d(**changes):
        return (call("tf_fftconv_rfft2d", image_type, spectrum_type, [40, 1, 1], tf.complex64,
                     **dict(rfft, **changes)), [image])

    def irfft2d(**changes):
        return (call("tf_fftconv_irfft2d", spectrum_type, image_type, [1, 1, 4, 4], tf.float32,
                     **dict(irfft, **changes)), [spectrum])
    return {
        "custom_call_rfft2d_valid": rfft2d(),
        "custom_call_rfft2d_nhwc_2": rfft2d(nhwc=2),
        "custom_call_rfft2d_round_to_tf32_-1": rfft2d(round_to_tf32=-1),
        "custom_call_rfft2d_fft_size_2^32+8": rfft2d(fft_size=2**32 + 8),
        "custom_call_rfft2d_offset_h_2^40": rfft2d(offset_h=2**40),
        "custom_call_irfft2d_out_h_-2^63": irfft2d(out_h=-2**63),
        "custom_call_irfft2d_out_w_2^32+4": irfft2d(out_w=2**32 + 4),
        "custom_call_irfft2d_nhwc_-1": irfft2d(nhwc=-1),
        "custom_call_spectral_matmul_transpose_a_3": (
            call("tf_fftconv_spectral_matmul", [spectrum_type] * 2, spectrum_type, [40, 1, 1],
                 tf.complex64, **dict(matmul, transpose_a=3)), [spectrum, spectrum]),
    }


def run(tf, function, tensors, mode):
    if mode == "eager":
        return function(*tensors)
    return tf.function(function, jit_compile=mode == "jit", autograph=False)(*tensors)


def main(keys):
    import tensorflow as tf

    import tf_fftconv as fc
    cases = _cases(tf, fc.load_library())
    cases.update(_custom_call_cases(tf))
    for key in keys:
        name, mode = key.split(":")
        batch_runner.start(key)
        function, tensors = cases[name]
        try:
            out = run(tf, function, tensors, mode)
            result = dict(outcome="accepted", shape=[int(d) for d in out.shape])
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            result = dict(outcome="refused", type=type(e).__name__,
                          message=str(getattr(e, "message", e)))
        except Exception as e:  # any other error type is a defect
            result = dict(outcome="error", type=type(e).__name__, message=str(e)[-2000:])
        # A pending Python error would stop the process here.
        tf.constant([1, 2]) + 1
        batch_runner.report(key, **result)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Sizes past int32 and int64, and empty tensors whose other dimensions multiply past what a shape
can hold, given to the raw ops eagerly, in a tf.function and under jit_compile=True (CPU): each is
refused with a message naming the parameter and the value as given, never crashes the process and
is never narrowed into a valid-looking call.

The cases run in child processes (tests/size_cases.py through tests/batch_runner.py), so that a
crash fails its own test only.
"""

import os
import re

import pytest

import batch_runner
import size_cases

HERE = os.path.dirname(os.path.abspath(__file__))

SPECTRUM_TOO_LARGE = (r"the spectrum \(40 x {} x 0\) is empty, but the product of its other "
                      r"dimensions exceeds 576460752303423487")
# name -> ("refused", message pattern) or ("accepted", output shape)
EXPECTED = {
    "rfft2d_fft_size_2^32+8": ("refused", r"fft_size must be a power of two .*, got 4294967304"),
    "irfft2d_fft_size_2^32+8": ("refused", r"fft_size must be a power of two .*, got 4294967304"),
    "irfft2d_out_h_-2^63": ("refused",
                            r"out_h and out_w must be >= 0, got -9223372036854775808 and 0"),
    "irfft2d_out_h_2^62": ("refused", r"out_h = 4611686018427387904 needs an FFT frame larger"),
    "irfft2d_out_w_2^40": ("refused", r"out_w = 1099511627776 needs an FFT frame larger"),
    "rfft2d_fft_size_2^62": ("refused", r"fft_size must be a power of two .*, got 4611686018427387904"),
    "rfft2d_offset_h_2^63": ("refused", r"offset_h = 9223372036854775808 does not fit in int64"),
    "irfft2d_offset_w_-2^63-1": ("refused",
                                 r"offset_w = -9223372036854775809 does not fit in int64"),
    # x itself is past the limit (XLA could not hold it), before its spectrum is.
    "rfft2d_empty_x_2^62": ("refused", r"the input x \(4611686018427387904 x 0 x 1 x 1\) is empty, "
                                       r"but the product of its other dimensions exceeds"),
    "rfft2d_empty_x_2^58": ("refused", SPECTRUM_TOO_LARGE.format(2**58)),
    # The product (2^32 x 2^32 x 0) stopped the process; a, of the same other dimensions, is
    # refused first.
    "spectral_matmul_empty_2^32": ("refused", r"a \(4294967296 x 0 x 4294967296\) is empty, but "
                                              r"the product of its other dimensions exceeds"),
    "rfft2d_empty_x_2^40_valid": ("accepted", [40, 2**40, 0]),
    "irfft2d_int64_sizes_valid": ("accepted", [1, 1, 3, 4]),
    # The custom calls' handlers check their attributes as the lowering does (jit only).
    "custom_call_rfft2d_valid": ("accepted", [40, 1, 1]),
    "custom_call_rfft2d_nhwc_2": ("refused", r"nhwc must be 0 or 1, got 2"),
    "custom_call_rfft2d_round_to_tf32_-1": ("refused", r"round_to_tf32 must be 0 or 1, got -1"),
    "custom_call_rfft2d_fft_size_2^32+8": ("refused",
                                           r"fft_size must be a power of two .*, got 4294967304"),
    "custom_call_rfft2d_offset_h_2^40": ("refused", r"offset_h = 1099511627776 lies outside"),
    "custom_call_irfft2d_out_h_-2^63": ("refused",
                                        r"out_h and out_w must be >= 0, got -9223372036854775808"),
    "custom_call_irfft2d_out_w_2^32+4": ("refused", r"out_w = 4294967300 needs an FFT frame"),
    "custom_call_irfft2d_nhwc_-1": ("refused", r"nhwc must be 0 or 1, got -1"),
    "custom_call_spectral_matmul_transpose_a_3": ("refused", r"transpose_a must be 0 or 1, got 3"),
}
# XLA itself cannot take a float32 parameter of 2^62 x 0 elements (its byte count overflows
# int64 before the zero is reached; an identity function stops the same way), so that input is
# not given under jit; the 2^58 one is.
KEYS = ["%s:%s" % (name, mode) for name in EXPECTED for mode in size_cases.MODES
        if (name, mode) != ("rfft2d_empty_x_2^62", "jit")
        and (mode == "jit" or not name.startswith("custom_call_"))]


@pytest.fixture(scope="module")
def outcomes():
    script = os.path.join(HERE, "size_cases.py")
    return batch_runner.run_batch(lambda keys: batch_runner.python_command(script, *keys), KEYS,
                                  case_timeout=120, cwd=os.path.dirname(HERE))


@pytest.mark.parametrize("key", KEYS)
def test_size_input(outcomes, key):
    outcome = outcomes[key]
    want, detail = EXPECTED[key.split(":")[0]]
    assert outcome["outcome"] == want, outcome
    if want == "accepted":
        assert outcome["shape"] == detail
    else:
        # Eagerly the kernels refuse (InvalidArgumentError); while tracing, the shape functions
        # (ValueError); under XLA, the lowering (InvalidArgumentError).
        assert outcome["type"] in ("InvalidArgumentError", "ValueError"), outcome
        assert re.search(detail, outcome["message"]), outcome["message"]

"""Writes cuda/twiddle_table.inc: the roots of unity W_N^k = exp(-2*pi*i*k/N), k = 0..N-1, of the
three root bases N = 128, 96 and 80 (kMaxFftSize, kMaxFftSize3, kMaxFftSize5 in
include/fftconv_params.h) that the CUDA FFT kernels read, as X-macro lists of (cos, -sin) pairs.

Each value is computed with 40 significant digits (Python's decimal module: pi by Machin's formula,
cos and sin by their Taylor series on an angle reduced to [0, pi/4]) and then rounded once to the
nearest double; zeros and ones are exact, so that W_N^(N/4) is (0, -1) and W_N^(N/2) is (-1, 0).
The doubles are written as Python's shortest round-trip form, which a C++ compiler reads back to the
same double. tests/test_twiddle_table.py regenerates the file and compares it byte for byte.

    python3 tools/twiddle_table.py            rewrites cuda/twiddle_table.inc
    python3 tools/twiddle_table.py --stdout   prints it
"""

import argparse
import decimal
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "cuda", "twiddle_table.inc")
DIGITS = 40
GUARD = "TF_FFTCONV_CUDA_TWIDDLE_TABLE_INC_"


def _pi():
    """pi = 16 atan(1/5) - 4 atan(1/239) (Machin), at the context's precision."""
    def atan_inverse(n):
        x = decimal.Decimal(1) / n
        x2 = x * x
        total, term, k = decimal.Decimal(0), x, 0
        while term.adjusted() > -2 * DIGITS:
            total += term / (2 * k + 1) if k % 2 == 0 else -term / (2 * k + 1)
            term *= x2
            k += 1
        return total
    return 16 * atan_inverse(5) - 4 * atan_inverse(239)


def _cos_sin(x):
    """cos(x) and sin(x) by their Taylor series, for 0 <= x <= pi/4."""
    x2 = x * x
    cos, sin = decimal.Decimal(0), decimal.Decimal(0)
    term_c, term_s, k = decimal.Decimal(1), x, 0
    while max(term_c.adjusted(), term_s.adjusted()) > -2 * DIGITS:
        cos += term_c
        sin += term_s
        term_c *= -x2 / ((2 * k + 1) * (2 * k + 2))
        term_s *= -x2 / ((2 * k + 2) * (2 * k + 3))
        k += 1
    return cos, sin


def root(k, n, pi):
    """(cos, -sin) of 2*pi*k/n as doubles, each rounded once from DIGITS significant digits."""
    # Reduce to an angle in [0, pi/4] by the symmetries of the circle, so that the series converge
    # fast and the exact zeros and ones come out exact. 8k/n in octants:
    octant, rest = divmod(8 * k, n)   # angle = (octant + rest / n) * pi / 4
    if rest == 0 and octant % 2 == 0:
        c, s = [(1, 0), (0, 1), (-1, 0), (0, -1)][octant // 2]
        return float(c), float(-s)
    # Angle within its quadrant, measured from the quadrant's start.
    quadrant, within = divmod(8 * k, 2 * n)   # within / n * pi / 4, in [0, pi/2)
    if within <= n:
        c0, s0 = _cos_sin(pi * within / (4 * n))
    else:                                     # pi/2 - angle in [0, pi/4)
        s0, c0 = _cos_sin(pi * (2 * n - within) / (4 * n))
    # Rotate by quadrant * pi/2.
    c, s = [(c0, s0), (-s0, c0), (-c0, -s0), (s0, -c0)][quadrant]
    return float(c), float(-s)


def _number(v):
    return repr(v + 0.0)  # no negative zero


def table():
    """The text of cuda/twiddle_table.inc."""
    with decimal.localcontext() as context:
        context.prec = DIGITS
        pi = _pi()
        roots = {n: [root(k, n, pi) for k in range(n)] for n in (128, 96, 80)}

    def block(n, header):
        lines = header + [f"#define FFTCONV_TWIDDLE_{n}(X) \\"]
        pairs = [f"  X({_number(c)}, {_number(s)})" for c, s in roots[n]]
        lines += [p + " \\" for p in pairs[:-1]] + [pairs[-1]]
        return lines

    out = [
        "// W_128^k = exp(-2*pi*i*k/128) for k = 0..127, as (cos, -sin) pairs correctly rounded to double.",
        "// Generated with 40-digit arithmetic; every power-of-two FFT size S <= 128 uses "
        "W_S^e = W_128^(e * 128 / S).",
        f"#ifndef {GUARD}",
        f"#define {GUARD}",
    ]
    out += block(128, [])
    out += block(96, ["",
                      "// W_96^k = exp(-2*pi*i*k/96) for k = 0..95, the same way: every size S = 3 * 2^k <= 96 uses",
                      "// W_S^e = W_96^(e * 96 / S)."])
    out += block(80, ["",
                      "// W_80^k = exp(-2*pi*i*k/80) for k = 0..79, the same way: every size S = 5 * 2^k <= 80 uses",
                      "// W_S^e = W_80^(e * 80 / S)."])
    out.append(f"#endif  // {GUARD}")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdout", action="store_true", help="print the table instead of writing it")
    args = parser.parse_args()
    text = table()
    if args.stdout:
        print(text, end="")
    else:
        with open(TABLE, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()

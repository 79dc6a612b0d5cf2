"""cuda/twiddle_table.inc is what tools/twiddle_table.py writes, byte for byte, and its values are the
roots of unity they claim to be."""

import cmath
import importlib.util
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "cuda", "twiddle_table.inc")


def _generator():
    spec = importlib.util.spec_from_file_location("twiddle_table",
                                                  os.path.join(ROOT, "tools", "twiddle_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lists(text):
    """{N: [(cos, -sin), ...]} of each FFTCONV_TWIDDLE_N list in the text."""
    lists = {}
    for n, body in re.findall(r"#define FFTCONV_TWIDDLE_(\d+)\(X\) \\\n((?:  X\(.*\n)+)", text):
        lists[int(n)] = [(float(c), float(s)) for c, s in re.findall(r"X\(([^,]+), ([^)]+)\)", body)]
    return lists


def test_the_committed_table_is_the_generators_output():
    with open(TABLE) as f:
        committed = f.read()
    assert _generator().table() == committed


def test_the_comparison_sees_a_changed_value():
    generated = _generator().table()
    changed = generated.replace("X(0.9987954562051724, -0.049067674327418015)",
                                "X(0.9987954562051725, -0.049067674327418015)", 1)
    assert changed != generated and _lists(changed)[128][1] != _lists(generated)[128][1]


def test_each_value_is_its_root_of_unity():
    lists = _lists(_generator().table())
    assert sorted(lists) == [80, 96, 128]
    for n, pairs in lists.items():
        assert len(pairs) == n
        for k, (c, s) in enumerate(pairs):
            w = cmath.exp(-2j * cmath.pi * k / n)
            assert abs(c - w.real) <= 1e-15 and abs(s - w.imag) <= 1e-15, (n, k)
        assert pairs[n // 4] == (0.0, -1.0) and pairs[n // 2] == (-1.0, 0.0)

"""The library apart from its experiment tools: `import tf_fftconv` does not import them."""

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fresh_python(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_leaves_the_experiment_tools_out():
    modules = _fresh_python("""
        import json, sys
        import tf_fftconv
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("tf_fftconv"))))
    """)
    assert "tf_fftconv.ops" in modules and "tf_fftconv.layers" in modules
    assert not [m for m in modules if m.startswith("tf_fftconv.experiments")], modules
    for tool in ("data", "models", "bench", "reproduce"):
        assert f"tf_fftconv.{tool}" not in modules, modules


def test_models_and_data_are_imported_on_first_use():
    seen = _fresh_python("""
        import json, sys
        import tf_fftconv as fc
        before = "tf_fftconv.experiments.models" in sys.modules
        model = fc.models.lenet5(conv="spatial")
        from tf_fftconv import data
        print(json.dumps({"before": before, "models": fc.models.__name__, "data": data.__name__,
                          "layers": len(model.layers), "listed": "models" in dir(fc)}))
    """)
    assert seen == {"before": False, "models": "tf_fftconv.experiments.models",
                    "data": "tf_fftconv.experiments.data", "layers": 9, "listed": True}


def test_unknown_attribute_is_an_attribute_error():
    import pytest
    import tf_fftconv

    with pytest.raises(AttributeError, match="has no attribute 'lenet5'"):
        tf_fftconv.lenet5
